package history_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/history/pgtest"
	"github.com/rcamesh/rcamesh/internal/modules"
)

// TestHistoryThroughTheMesh runs every service with each store, investigates
// the demo alert and finds the investigation through the REST API: listed,
// searched by text, filtered, and opened with its record, report, pins and
// critic verdicts.
func TestHistoryThroughTheMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh (and PostgreSQL)")
	}
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"kv", func(*testing.T) []string { return nil }},
		{"postgres", func(t *testing.T) []string {
			c := pgtest.Start(t)
			return []string{"-store=postgres", "-store.dsn=" + c.DSN()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			set, _, err := fixture.FromDir(filepath.Join("..", "..", "scenarios", "demo"), nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := modules.StartLocal(ctx, modules.Options{Backend: set}, t.TempDir(), nil, tc.args(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := l.Stop(); err != nil {
					t.Error(err)
				}
			}()
			raw, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "demo", "alert.json"))
			if err != nil {
				t.Fatal(err)
			}
			var payload structpb.Struct
			if err := payload.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
			sub, err := brainv1.NewBrainServiceClient(l.Conn).SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: &payload, Wait: true})
			if err != nil {
				t.Fatal(err)
			}
			invID := sub.GetInvestigationId()

			get := func(path string, out *historyv1.ListInvestigationsResponse) int {
				t.Helper()
				resp, err := http.Get("http://" + l.HTTPAddr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode == http.StatusOK && out != nil {
					if err := protojson.Unmarshal(b, out); err != nil {
						t.Fatalf("%s: %v\n%s", path, err, b)
					}
				}
				return resp.StatusCode
			}
			// The recorder saves the investigation shortly after it finished.
			var list historyv1.ListInvestigationsResponse
			deadline := time.Now().Add(30 * time.Second)
			for {
				if code := get("/api/v4/history/investigations", &list); code != http.StatusOK {
					t.Fatalf("list: HTTP %d", code)
				}
				if len(list.GetInvestigations()) == 1 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(list.GetInvestigations()) != 1 || list.GetStore() != tc.name {
				t.Fatalf("history: %v", &list)
			}
			s := list.GetInvestigations()[0]
			if s.GetInvestigationId() != invID || s.GetService() != "orders-api" || s.GetNamespace() != "retail" ||
				s.GetCategory() != sub.GetDiagnosis().GetCategory() || s.GetToolCalls() == 0 || s.GetPins() == 0 {
				t.Fatalf("summary %v", s)
			}
			for _, tc := range []struct {
				query string
				want  int
			}{
				{"service=orders-api&namespace=retail", 1},
				{"service=payments", 0},
				{"category=" + s.GetCategory().String(), 1},
				{"category=ROOT_CAUSE_CATEGORY_INFRASTRUCTURE", 0},
				{"query=" + url.QueryEscape("orders-api"), 1},
				{"query=" + url.QueryEscape("kafka partition"), 0},
				{"since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), 0},
			} {
				var l historyv1.ListInvestigationsResponse
				if code := get("/api/v4/history/investigations?"+tc.query, &l); code != http.StatusOK || len(l.GetInvestigations()) != tc.want {
					t.Errorf("?%s: HTTP %d, %d results, want %d", tc.query, code, len(l.GetInvestigations()), tc.want)
				}
			}
			if code := get("/api/v4/history/investigations?page_token=bogus", nil); code != http.StatusBadRequest {
				t.Errorf("bad page token: HTTP %d", code)
			}

			hc := historyv1.NewHistoryServiceClient(l.Conn)
			inv, err := hc.GetInvestigation(ctx, &historyv1.GetInvestigationRequest{InvestigationId: invID})
			if err != nil {
				t.Fatal(err)
			}
			if inv.GetRecord().GetState() != "completed" || inv.GetReport().GetMarkdown() == "" || len(inv.GetPins()) == 0 ||
				len(inv.GetCriticVerdicts()) == 0 {
				b, _ := json.Marshal(inv.GetSummary())
				t.Fatalf("investigation incomplete: state %q, report %d bytes, %d pins, %d verdicts; %s", inv.GetRecord().GetState(),
					len(inv.GetReport().GetMarkdown()), len(inv.GetPins()), len(inv.GetCriticVerdicts()), b)
			}
			for _, p := range inv.GetPins() {
				if p.GetInvestigationId() != invID && p.GetInvestigationId() != "" {
					t.Errorf("pin %s of another investigation %s", p.GetId(), p.GetInvestigationId())
				}
			}
			for id, want := range map[string]codes.Code{"inv-unknown": codes.NotFound, "bad id!": codes.InvalidArgument} {
				if _, err := hc.GetInvestigation(ctx, &historyv1.GetInvestigationRequest{InvestigationId: id}); status.Code(err) != want {
					t.Errorf("%q: %v, want %s", id, err, want)
				}
			}
		})
	}
}

package history

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

var t0 = time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)

type fixture struct {
	id, service, ns string
	cat             investigationv1.RootCauseCategory
	start           time.Duration // after t0
	rootCause, md   string
}

var fixtures = []fixture{
	{"inv-a1", "checkout", "retail", investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT, 0,
		"Release v2.3 of checkout introduced a nil pointer dereference", "## Root cause\nnil pointer in the cart handler"},
	{"inv-a2", "checkout", "retail", investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION, time.Hour,
		"The connection pool of checkout is exhausted", "## Root cause\nconnection pool saturated by slow queries"},
	{"inv-a3", "payments", "billing", investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CONFIGURATION_ERROR, 2 * time.Hour,
		"A ConfigMap change removed the gateway URL", "## Root cause\nmissing PAYMENT_GATEWAY_URL after a config change"},
	{"inv-a4", "payments", "billing", investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE, 3 * time.Hour,
		"The upstream card processor returned 503", "## Root cause\nupstream dependency failing"},
	{"inv-a5", "search", "retail", investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION, 4 * time.Hour,
		"search pods were OOMKilled: memory limit too low", "## Root cause\nmemory limit reached, pods restarted"},
}

func (f fixture) investigation() *Investigation {
	start := t0.Add(f.start)
	rec := &investigationv1.InvestigationRecord{
		InvestigationId: f.id, SessionId: "sess-" + f.id, State: "completed", Loops: 2,
		StartedAt: timestamppb.New(start), FinishedAt: timestamppb.New(start.Add(90 * time.Second)),
		Alert:     &investigationv1.Alert{AlertName: "HighErrorRate", Title: "errors on " + f.service, Service: f.service, Namespace: f.ns},
		ToolCalls: []*investigationv1.ToolCallRecord{{Intent: "get_pod_logs", Success: true}, {Intent: "get_events", Success: true}},
		Reviews: []*investigationv1.CriticReview{
			{Round: 1, Score: 0.6, Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Summary: "evidence thin"},
			{Round: 2, Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Summary: "accepted"},
		},
		Diagnosis: &investigationv1.Diagnosis{RootCause: f.rootCause, Category: f.cat, Confidence: 0.86,
			Status: investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED},
	}
	inv := &Investigation{
		Record:         rec,
		CriticVerdicts: rec.GetReviews(),
		Report: &investigationv1.Report{SessionId: rec.GetSessionId(), InvestigationId: f.id, Markdown: f.md, Confidence: 0.86,
			CreatedAt: timestamppb.New(start.Add(time.Minute))},
		Pins: []*evidencev1.EvidencePin{
			{Id: f.id + "-p1", Claim: "pod logs of " + f.service, SourceTool: "get_pod_logs", InvestigationId: f.id,
				ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED},
			{Id: f.id + "-p2", Claim: "events in " + f.ns, SourceTool: "get_events", InvestigationId: f.id},
		},
	}
	inv.Summary = Summarize(inv)
	return inv
}

// storeCase is one store under the conformance tests.
type storeCase struct {
	name string
	open func(t testing.TB) Store
}

// kvStore opens the KV store on an embedded NATS server.
func kvStore(t testing.TB) Store {
	t.Helper()
	opts := &natsserver.Options{Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := bus.Connect(context.Background(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), DefaultConfig(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// conformance runs the behaviour every store must have.
func conformance(t *testing.T, open func(t testing.TB) Store) {
	ctx := context.Background()
	s := open(t)
	for _, f := range fixtures {
		if err := s.Save(ctx, f.investigation()); err != nil {
			t.Fatal(err)
		}
	}
	// Saving again replaces, never duplicates.
	again := fixtures[0].investigation()
	again.Record.Diagnosis.RootCause += " (re-saved)"
	if err := s.Save(ctx, again); err != nil {
		t.Fatal(err)
	}

	t.Run("get", func(t *testing.T) {
		got, err := s.Get(ctx, "inv-a3")
		if err != nil {
			t.Fatal(err)
		}
		want := fixtures[2].investigation()
		for _, c := range []struct {
			name      string
			got, want proto.Message
		}{
			{"record", got.GetRecord(), want.GetRecord()},
			{"report", got.GetReport(), want.GetReport()},
			{"summary", got.GetSummary(), want.GetSummary()},
		} {
			if !proto.Equal(c.got, c.want) {
				t.Errorf("%s differs:\n got %v\nwant %v", c.name, c.got, c.want)
			}
		}
		if len(got.GetPins()) != 2 || got.GetPins()[0].GetId() != "inv-a3-p1" || len(got.GetCriticVerdicts()) != 2 ||
			got.GetCriticVerdicts()[1].GetAction() != investigationv1.CriticAction_CRITIC_ACTION_ACCEPT {
			t.Errorf("pins %v verdicts %v", got.GetPins(), got.GetCriticVerdicts())
		}
		if _, err := s.Get(ctx, "inv-missing"); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing id: %v", err)
		}
		re, err := s.Get(ctx, "inv-a1")
		if err != nil || re.GetSummary().GetRootCause() != fixtures[0].rootCause+" (re-saved)" {
			t.Errorf("re-save not visible: %v %v", re.GetSummary().GetRootCause(), err)
		}
	})

	ids := func(p Page) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, it.GetInvestigationId())
		}
		return out
	}
	t.Run("filters", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			q    Query
			want []string
		}{
			{"all newest first", Query{}, []string{"inv-a5", "inv-a4", "inv-a3", "inv-a2", "inv-a1"}},
			{"service", Query{Service: "checkout"}, []string{"inv-a2", "inv-a1"}},
			{"namespace", Query{Namespace: "billing"}, []string{"inv-a4", "inv-a3"}},
			{"category", Query{Category: investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION}, []string{"inv-a5", "inv-a2"}},
			{"time range", Query{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, []string{"inv-a3", "inv-a2"}},
			{"text in report", Query{Text: "connection pool"}, []string{"inv-a2"}},
			{"text in root cause", Query{Text: "OOMKilled"}, []string{"inv-a5"}},
			{"text and namespace", Query{Text: "upstream", Namespace: "billing"}, []string{"inv-a4"}},
			{"no match", Query{Text: "kafka"}, nil},
			{"service and category", Query{Service: "payments", Category: investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := s.List(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(p); !slices.Equal(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	})

	t.Run("paging", func(t *testing.T) {
		var all []string
		var after *Cursor
		pages := 0
		for {
			p, err := s.List(ctx, Query{PageSize: 2, After: after})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			all = append(all, ids(p)...)
			if p.Next == nil {
				break
			}
			// Through the token, as a client would.
			if after, err = DecodeCursor(EncodeCursor(p.Next)); err != nil {
				t.Fatal(err)
			}
		}
		if want := []string{"inv-a5", "inv-a4", "inv-a3", "inv-a2", "inv-a1"}; !slices.Equal(all, want) || pages != 3 {
			t.Errorf("pages %d: %v", pages, all)
		}
	})

	t.Run("bad queries", func(t *testing.T) {
		for _, q := range []Query{{PageSize: -1}, {Since: t0, Until: t0}} {
			if _, err := s.List(ctx, q); !errors.Is(err, ErrBadQuery) {
				t.Errorf("%+v: %v", q, err)
			}
		}
	})

	t.Run("retention", func(t *testing.T) {
		// Everything that finished before inv-a3's end goes: a1, a2 (a3 finishes exactly then).
		n, err := s.DeleteFinishedBefore(ctx, t0.Add(2*time.Hour+90*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.List(ctx, Query{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(p); n != 2 || !slices.Equal(got, []string{"inv-a5", "inv-a4", "inv-a3"}) {
			t.Errorf("deleted %d, left %v", n, got)
		}
		if _, err := s.Get(ctx, "inv-a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("expired investigation still readable: %v", err)
		}
	})
}

func TestKVStore(t *testing.T) {
	conformance(t, kvStore)
}

func TestCursorTokens(t *testing.T) {
	for _, tok := range []string{"!!", "e30", fmt.Sprint(EncodeCursor(&Cursor{}))} {
		if _, err := DecodeCursor(tok); !errors.Is(err, ErrBadQuery) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
	c := &Cursor{StartedAt: t0, ID: "inv-1"}
	got, err := DecodeCursor(EncodeCursor(c))
	if err != nil || !got.StartedAt.Equal(t0) || got.ID != "inv-1" {
		t.Errorf("round trip: %v %v", got, err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mut     func(*Config)
		wantErr bool
	}{
		{func(*Config) {}, false},
		{func(c *Config) { c.Store = "mysql" }, true},
		{func(c *Config) { c.Store = StorePostgres }, true},
		{func(c *Config) { c.Store, c.DSN = StorePostgres, "postgres://x@127.0.0.1/db" }, false},
		{func(c *Config) { c.Retention = -time.Hour }, true},
		{func(c *Config) { c.MaxConns = -1 }, true},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

package triage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
	"github.com/rcamesh/rcamesh/internal/modules"
	"github.com/rcamesh/rcamesh/internal/sast/sasttest"
	"github.com/rcamesh/rcamesh/services/triage"
)

func exampleSARIF(t *testing.T) *structpb.Struct {
	t.Helper()
	b, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		t.Fatal(err)
	}
	st := &structpb.Struct{}
	if err := st.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return st
}

func examplesRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestTriageFindings(t *testing.T) {
	cfg := triage.DefaultConfig()
	cfg.CodeRoot = examplesRoot(t)
	if _, err := triage.New(cfg, triage.Deps{}); err == nil {
		t.Error("a triage service without the critic's evaluator was built")
	}
	s, err := triage.New(cfg, triage.Deps{Critic: sasttest.Critic(t, cfg.CodeRoot, nil)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.TriageFindings(context.Background(), &triagev1.TriageFindingsRequest{Repo: "sast-demo", Sarif: exampleSARIF(t)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTruePositives() != 5 || resp.GetFalsePositives() != 5 || resp.GetNeedsReview() != 2 || len(resp.GetResults()) != 12 {
		t.Fatalf("TP %d FP %d NR %d of %d", resp.GetTruePositives(), resp.GetFalsePositives(), resp.GetNeedsReview(), len(resp.GetResults()))
	}
	first := resp.GetResults()[0]
	if first.GetVerdict() != triagev1.Verdict_VERDICT_TRUE_POSITIVE || len(first.GetEvidence()) == 0 || first.GetStopReason() != "evaluator_passed" {
		t.Errorf("first finding %+v", first)
	}
	if resp.GetSarif() == nil {
		t.Error("no annotated SARIF")
	}
	cases := []struct {
		name string
		cfg  func(*triage.Config)
		req  *triagev1.TriageFindingsRequest
		code codes.Code
	}{
		{"no code root", func(c *triage.Config) { c.CodeRoot = "" }, &triagev1.TriageFindingsRequest{Repo: "sast-demo", Sarif: exampleSARIF(t)}, codes.FailedPrecondition},
		{"repo outside the root", nil, &triagev1.TriageFindingsRequest{Repo: "../..", Sarif: exampleSARIF(t)}, codes.PermissionDenied},
		{"no sarif", nil, &triagev1.TriageFindingsRequest{Repo: "sast-demo"}, codes.InvalidArgument},
		{"not sarif", nil, &triagev1.TriageFindingsRequest{Repo: "sast-demo", Sarif: &structpb.Struct{Fields: map[string]*structpb.Value{"version": structpb.NewStringValue("9")}}}, codes.InvalidArgument},
		{"a URL without -triage.allow-clone", nil, &triagev1.TriageFindingsRequest{Repo: "https://example.com/x.git", Sarif: exampleSARIF(t)}, codes.PermissionDenied},
		{"a file URL even with cloning on", func(c *triage.Config) { c.AllowClone = true }, &triagev1.TriageFindingsRequest{Repo: "file:///etc", Sarif: exampleSARIF(t)}, codes.PermissionDenied},
		{"too many findings", func(c *triage.Config) { c.MaxFindings = 3 }, &triagev1.TriageFindingsRequest{Repo: "sast-demo", Sarif: exampleSARIF(t)}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := triage.DefaultConfig()
			c.CodeRoot = examplesRoot(t)
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			s, err := triage.New(c, triage.Deps{Critic: sasttest.Critic(t, examplesRoot(t), nil)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.TriageFindings(context.Background(), tc.req); status.Code(err) != tc.code {
				t.Errorf("err %v, want %s", err, tc.code)
			}
		})
	}
}

// TestFindingsEndpoint posts the example to POST /api/v4/findings of the
// whole mesh in one process (embedded NATS) and reads the pins back.
func TestFindingsEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every service")
	}
	ctx := t.Context()
	l, err := modules.StartLocal(ctx, modules.Options{}, t.TempDir(), nil, []string{"-triage.code-root", examplesRoot(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	doc, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"repo": "sast-demo", "session_id": "sast-demo-1", "sarif": json.RawMessage(doc)})
	resp, err := http.Post("http://"+l.HTTPAddr+"/api/v4/findings", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, rb)
	}
	var out struct {
		SessionID      string `json:"session_id"`
		TruePositives  int    `json:"true_positives"`
		FalsePositives int    `json:"false_positives"`
		NeedsReview    int    `json:"needs_review"`
	}
	if err := json.Unmarshal(rb, &out); err != nil {
		t.Fatal(err)
	}
	if out.SessionID != "sast-demo-1" || out.TruePositives != 5 || out.FalsePositives != 5 || out.NeedsReview != 2 {
		t.Fatalf("%+v %s", out, rb[:min(len(rb), 3000)])
	}
	pins, err := brainv1.NewBrainServiceClient(l.Conn).ListPins(ctx, &brainv1.ListPinsRequest{SessionId: "sast-demo-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pins.GetPins()) != 12 {
		t.Fatalf("%d pins on the stream, want one per finding", len(pins.GetPins()))
	}
	for _, p := range pins.GetPins() {
		if p.GetEvidenceType() != evidencev1.EvidenceType_EVIDENCE_TYPE_CODE || p.GetSourceAgent() != "triage" {
			t.Errorf("pin %s: %v %s", p.GetId(), p.GetEvidenceType(), p.GetSourceAgent())
		}
	}
	bad, err := http.Post("http://"+l.HTTPAddr+"/api/v4/findings", "application/json", bytes.NewReader([]byte(`{"repo":"../..","sarif":{"version":"2.1.0","runs":[]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := io.ReadAll(bad.Body)
	bad.Body.Close()
	if bad.StatusCode != http.StatusForbidden {
		t.Errorf("a repository outside the code root: status %d, want 403 (%s)", bad.StatusCode, bb)
	}
}

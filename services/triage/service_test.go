package triage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
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

// oneFinding is the example's SARIF cut to its first result (the title
// glued into the SQL text of NoteServlet.java:25).
func oneFinding(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	run := doc["runs"].([]any)[0].(map[string]any)
	run["results"] = run["results"].([]any)[:1]
	out, _ := json.Marshal(doc)
	return out
}

// TestModelAgentThroughTheMesh drives the model path of the whole pipeline
// in one process (REST -> triage -> model, code tools -> critic over gRPC)
// against the in-process scripted model server: a verdict that cites no
// code is refused until the critic's rejection limit ends it as
// NEEDS_REVIEW; a verdict backed by the raw code passes.
func TestModelAgentThroughTheMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every service")
	}
	unsupported := llmtest.Text(`{"verdict":"FALSE_POSITIVE","analysis":"the title is checked upstream","claims":[{"id":"source","text":"not from the request","status":"supported","evidence":[]}]}`)
	const file = "src/main/java/com/example/notes/NoteServlet.java"
	backed := llmtest.Text(`{"verdict":"TRUE_POSITIVE","analysis":"the title parameter is glued into the SQL text","claims":[
{"id":"source","text":"request parameter","status":"supported","evidence":[{"file":"` + file + `","startLine":19,"endLine":19}]},
{"id":"path","text":"concatenated into executeQuery's SQL","status":"supported","evidence":[{"file":"` + file + `","startLine":19,"endLine":25}]},
{"id":"sanitiser","text":"no escaping or binding on the way","status":"supported","evidence":[{"file":"` + file + `","startLine":25,"endLine":25}]}]}`)
	srv := llmtest.New(t, unsupported, unsupported, unsupported,
		llmtest.Tools(llmtest.Call{ID: "c1", Name: "search_codebase", Arguments: `{"pattern":"executeQuery","scope":"*.java"}`}), backed)
	ctx := t.Context()
	l, err := modules.StartLocal(ctx, modules.Options{}, t.TempDir(), nil, []string{"-triage.code-root", examplesRoot(t),
		"-llm.provider=openai-compatible", "-llm.base-url=" + srv.BaseURL(), "-llm.model=scripted", "-llm.max-retries=0", "-llm.timeout=5s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop() })
	post := func(session string) *triagev1.FindingVerdict {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"repo": "sast-demo", "session_id": session, "sarif": oneFinding(t)})
		resp, err := http.Post("http://"+l.HTTPAddr+"/api/v4/findings", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, rb)
		}
		var out triagev1.TriageFindingsResponse
		if err := protojson.Unmarshal(rb, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.GetResults()) != 1 {
			t.Fatalf("%d results", len(out.GetResults()))
		}
		return out.GetResults()[0]
	}
	r := post("model-limit")
	if r.GetVerdict() != triagev1.Verdict_VERDICT_NEEDS_REVIEW || r.GetStopReason() != "evaluator_rejections" || r.GetRejections() != 3 {
		t.Fatalf("verdict %s stop %s rejections %d error %q", r.GetVerdict(), r.GetStopReason(), r.GetRejections(), r.GetError())
	}
	if !strings.Contains(strings.Join(r.GetUnknowns(), "|"), "cites no code") {
		t.Errorf("the remaining gaps are not the unknowns: %v", r.GetUnknowns())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model turns, want 3", len(reqs))
	}
	last := reqs[2].Messages()
	if c, _ := last[len(last)-1]["content"].(string); !strings.Contains(c, "Blocking gaps") || !strings.Contains(c, "cites no code") {
		t.Errorf("the critic's rejection did not reach the model: %q", c)
	}
	r = post("model-pass")
	if r.GetVerdict() != triagev1.Verdict_VERDICT_TRUE_POSITIVE || r.GetStopReason() != "evaluator_passed" || len(r.GetEvidence()) == 0 {
		t.Fatalf("verdict %s stop %s evidence %d error %q", r.GetVerdict(), r.GetStopReason(), len(r.GetEvidence()), r.GetError())
	}
	if !strings.Contains(r.GetEvidence()[0].GetSnippet(), "getParameter") {
		t.Errorf("cited code %q", r.GetEvidence()[0].GetSnippet())
	}
}

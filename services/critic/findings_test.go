package critic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	triagev1 "github.com/rcamesh/rcamesh/gen/rcamesh/triage/v1"
)

const findingJava = `class A {
  void f(javax.servlet.http.HttpServletRequest request, java.sql.Statement st) throws Exception {
    String p = request.getParameter("p");
    st.executeQuery("SELECT " + p);
  }
}`

// findingReq is a sound true-positive package over a checkout under root.
func findingReq(t *testing.T) (*Service, *criticv1.EvaluateFindingRequest) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "app", "A.java"), []byte(findingJava), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CodeRoot = root
	s, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(findingJava, "\n")
	return s, &criticv1.EvaluateFindingRequest{Repo: "app", Category: "sqli", Verdict: triagev1.Verdict_VERDICT_TRUE_POSITIVE,
		Evidence: []*triagev1.Citation{
			{Id: "E1", File: "A.java", StartLine: 3, EndLine: 3, Snippet: lines[2]},
			{Id: "E2", File: "A.java", StartLine: 4, EndLine: 4, Snippet: lines[3]},
		},
		Claims: []*triagev1.Claim{
			{Id: "source", Text: "request parameter", Status: "supported", Evidence: []string{"E1"}},
			{Id: "path", Text: "concatenated into the SQL text", Status: "supported", Evidence: []string{"E1", "E2"}},
			{Id: "sanitiser", Text: "none on the way", Status: "supported", Evidence: []string{"E2"}},
		}}
}

func TestEvaluateFinding(t *testing.T) {
	ctx := context.Background()
	s, good := findingReq(t)
	resp, err := s.EvaluateFinding(ctx, good)
	if err != nil || !resp.GetPassed() {
		t.Fatalf("a sound package: %v %v", resp, err)
	}
	cases := []struct {
		name   string
		mutate func(*criticv1.EvaluateFindingRequest)
		gap    string
	}{
		{"forged snippet", func(r *criticv1.EvaluateFindingRequest) { r.Evidence[1].Snippet = "st.executeQuery(\"SELECT 1\");" }, "not the raw code"},
		{"a cited file outside the checkout", func(r *criticv1.EvaluateFindingRequest) { r.Evidence[0].File = "../../etc/passwd" }, "cannot be read"},
		{"a cited file that does not exist", func(r *criticv1.EvaluateFindingRequest) { r.Evidence[0].File = "B.java" }, "cannot be read"},
		{"source claim without a request getter", func(r *criticv1.EvaluateFindingRequest) { r.Claims[0].Evidence = []string{"E2"} }, "attacker-controlled"},
		{"no path claim", func(r *criticv1.EvaluateFindingRequest) { r.Claims = append(r.Claims[:1], r.Claims[2]) }, "feasible path"},
		{"a claim citing evidence that is not there", func(r *criticv1.EvaluateFindingRequest) { r.Claims[2].Evidence = []string{"E9"} }, "missing evidence E9"},
		{"NEEDS_REVIEW is no verdict to accept", func(r *criticv1.EvaluateFindingRequest) { r.Verdict = triagev1.Verdict_VERDICT_NEEDS_REVIEW }, "not a final verdict"},
		{"crypto: the algorithm claim must show the configuration", func(r *criticv1.EvaluateFindingRequest) {
			r.Category = "crypto"
			r.Claims = []*triagev1.Claim{{Id: "algorithm", Text: "DES", Status: "supported", Evidence: []string{"E2"}}}
		}, "read from a file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, req := findingReq(t)
			tc.mutate(req)
			resp, err := s.EvaluateFinding(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetPassed() || resp.GetLimitReached() {
				t.Fatalf("passed %v limit %v", resp.GetPassed(), resp.GetLimitReached())
			}
			if g := strings.Join(resp.GetRejection().GetBlockingGaps(), "|"); !strings.Contains(g, tc.gap) {
				t.Errorf("gaps %q, want one with %q", g, tc.gap)
			}
		})
	}
	t.Run("bad requests", func(t *testing.T) {
		s, req := findingReq(t)
		req.Repo = "../.."
		if _, err := s.EvaluateFinding(ctx, req); status.Code(err) != codes.PermissionDenied {
			t.Errorf("a checkout outside the code root: %v", err)
		}
		req.Repo = ""
		if _, err := s.EvaluateFinding(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("no repo: %v", err)
		}
		s.cfg.CodeRoot = ""
		req.Repo = "app"
		if _, err := s.EvaluateFinding(ctx, req); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("no code root: %v", err)
		}
	})
}

func TestEvaluateFindingRejectionLimit(t *testing.T) {
	rej := func(n int32, gaps ...string) *criticv1.FindingRejection {
		return &criticv1.FindingRejection{BlockingGaps: gaps, EvidenceCount: n}
	}
	cases := []struct {
		name    string
		history []*criticv1.FindingRejection
		limit   bool
	}{
		{"first rejection", nil, false},
		{"second with the same gaps", []*criticv1.FindingRejection{rej(2, "checklist: is it sanitised or replaced on the way? (no sanitiser claim)")}, false},
		{"third with the same gaps", []*criticv1.FindingRejection{rej(2, "checklist: is it sanitised or replaced on the way? (no sanitiser claim)"), rej(2, "checklist: is it sanitised or replaced on the way? (no sanitiser claim)")}, true},
		{"progress each time (other gaps, more code) does not count", []*criticv1.FindingRejection{rej(0, "a"), rej(1, "b")}, false},
		{"other gaps but no new code counts", []*criticv1.FindingRejection{rej(2, "a"), rej(2, "b")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, req := findingReq(t)
			req.Claims = req.Claims[:2] // no sanitiser claim: refused
			req.History = tc.history
			resp, err := s.EvaluateFinding(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetPassed() || resp.GetLimitReached() != tc.limit {
				t.Fatalf("passed %v limit %v, want limit %v (%s)", resp.GetPassed(), resp.GetLimitReached(), tc.limit, resp.GetReason())
			}
			if tc.limit && (len(resp.GetTrips()) != 1 || resp.GetTrips()[0].GetKind() != GuardrailRejectionLimit) {
				t.Errorf("trips %v", resp.GetTrips())
			}
		})
	}
}

package score

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
)

func TestFold(t *testing.T) {
	cases := map[string]string{
		"Exit Code 137":         "exit code 137",
		"payments:v2.1.0-bad":   "payments v2 1 0 bad",
		"  Client:ClientRead  ": "client clientread",
		"write-heavy workload.": "write heavy workload",
		"":                      "",
		"---":                   "",
	}
	for in, want := range cases {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchKeyword(t *testing.T) {
	cases := []struct {
		text, kw string
		want     bool
	}{
		{"Container exit code 137 (OOMKilled)", "exit code 137", true},
		{"image payments:v2.1.0-bad not found", "payments:v2.1.0-bad", true},
		{"storage autoscaling completed", "autoscal", true},                             // phrase = substring of folded text
		{"source of evidence: the primary RDS events", "primary evidence source", true}, // all tokens present
		{"the primary source", "primary evidence source", false},
		{"Liveness-probe failed", "Liveness probe", true},
		{"no failure detected", "No Failure", true},
		{"CPU at 90%", "cpu_saturation", false},
		{"CPU at 90%, saturation", "cpu_saturation", true},
		{"anything", "", true},
		{"two causes at the root", "two root causes", true},
		{"one root cause", "two root causes", false},
	}
	for _, c := range cases {
		if got := MatchKeyword(c.text, c.kw); got != c.want {
			t.Errorf("MatchKeyword(%q, %q) = %v, want %v", c.text, c.kw, got, c.want)
		}
	}
}

// TestScoredTextLeavesOutEngineIDs: a numeric keyword does not match inside
// the hex digits of a pin, investigation or session id; it still matches
// the same digits in the diagnosis's own words.
func TestScoredTextLeavesOutEngineIDs(t *testing.T) {
	cases := []struct {
		report, kw string
		want       bool
	}{
		{"ready — pins: `pin_5900b201602e6da744be`", "201", false},
		{"investigation `inv-f37a1a2786467197`", "2786", false},
		{"session `inc-ac1a41c0002c7a59-lduz`", "0002", false},
		{"POST /orders 201 in 12ms — pins: `pin_5900b201602e6da744be`", "201", true},
		{"upstream answered 503 (pin_ab)", "503", true}, // too short to be a minted id
	}
	for _, c := range cases {
		got := NewMatcher(ScoredText(Result{RootCause: "x", Report: c.report})).Match(c.kw)
		if got != c.want {
			t.Errorf("keyword %q in %q: got %v, want %v", c.kw, c.report, got, c.want)
		}
	}
}

func TestTextUnmarshal(t *testing.T) {
	r, err := ParseResult([]byte(`{
		"scenario_id":"s","root_cause":"rc","root_cause_category":"healthy",
		"validated_claims":["plain", {"claim":"obj claim","pin_ids":["p1"]}],
		"causal_chain":[{"text":"step"}],
		"ruled_out":[{"alternative":"OOM","reason":"no exit code 137"}],
		"tools_called":[{"intent":"list_pods","params":{"namespace":"x"}}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.ValidatedClaims[1]); got != "obj claim" {
		t.Errorf("object claim = %q", got)
	}
	if got := string(r.CausalChain[0]); got != "step" {
		t.Errorf("chain = %q", got)
	}
	if got := string(r.RuledOut[0]); got != "OOM: no exit code 137" {
		t.Errorf("ruled out = %q", got)
	}
	if _, err := ParseResult([]byte(`{"validated_claims":[3]}`)); err == nil {
		t.Error("number claim: want error")
	}
}

func TestParseAnswer(t *testing.T) {
	a, err := ParseAnswer([]byte("root_cause_category: resource_exhaustion\nrequired_keywords:\n  - memory\nmodel_response: |\n  ignored\nunknown_key: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.RootCauseCategory != "resource_exhaustion" || len(a.RequiredKeywords) != 1 {
		t.Fatalf("answer = %+v", a)
	}
	if _, err := ParseAnswer([]byte("required_keywords: [a]\n")); err == nil || !strings.Contains(err.Error(), "root_cause_category") {
		t.Errorf("missing category: err = %v", err)
	}
	if _, err := ParseAnswer(nil); err == nil {
		t.Error("empty answer: want error")
	}
}

func baseAnswer() Answer {
	return Answer{
		RootCauseCategory:       "resource_exhaustion",
		RequiredKeywords:        []string{"exit code 137", "memory"},
		ForbiddenCategories:     []string{"healthy"},
		ForbiddenKeywords:       []string{"two root causes"},
		RequiredEvidenceSources: []string{"eks_pods"},
		OptimalTrajectory:       []string{"list_eks_pods", "get_eks_pod_logs"},
		MaxInvestigationLoops:   3,
		RulingOutKeywords:       []string{"no image pull"},
		RequiredQueries:         []string{"list_eks_pods"},
	}
}

func baseResult() Result {
	return Result{
		ScenarioID:        "s1",
		RootCause:         "Container OOMKilled with exit code 137 after exceeding its memory limit",
		RootCauseCategory: "resource_exhaustion",
		RuledOut:          []Text{"Image pull failure: no image pull errors"},
		EvidenceSources:   []string{"eks_pods", "eks_events"},
		ToolsCalled:       []ToolCall{{Intent: "list_pods"}, {Intent: "fetch_pod_logs"}},
		Loops:             1,
	}
}

func TestScore(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(*Answer, *Result)
		axis1     bool
		traj      bool
		axis2     bool
		failCheck string
		reasonHas string
	}{
		{name: "all pass", mutate: func(*Answer, *Result) {}, axis1: true, traj: true, axis2: true},
		{name: "empty root cause", mutate: func(_ *Answer, r *Result) { r.RootCause = " " }, traj: true, axis2: true, failCheck: "root_cause"},
		{name: "wrong category", mutate: func(_ *Answer, r *Result) { r.RootCauseCategory = "code_defect" }, traj: true, axis2: true, failCheck: "category", reasonHas: "expected resource_exhaustion"},
		{name: "enum style category", mutate: func(_ *Answer, r *Result) { r.RootCauseCategory = "ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION" }, axis1: true, traj: true, axis2: true},
		{name: "missing keyword", mutate: func(_ *Answer, r *Result) { r.RootCause = "exit code 137" }, traj: true, axis2: true, failCheck: "required_keywords", reasonHas: "memory"},
		{name: "keyword found in report", mutate: func(_ *Answer, r *Result) { r.RootCause = "exit code 137"; r.Report = "# Memory" }, axis1: true, traj: true, axis2: true},
		{name: "keyword in ruled out does not count for axis 1", mutate: func(_ *Answer, r *Result) { r.RootCause = "exit code 137"; r.RuledOut = append(r.RuledOut, "memory") }, traj: true, axis2: true, failCheck: "required_keywords"},
		{name: "forbidden category", mutate: func(a *Answer, r *Result) { a.ForbiddenCategories = []string{"resource_exhaustion"} }, traj: true, axis2: true, failCheck: "forbidden", reasonHas: "category resource_exhaustion"},
		{name: "forbidden keyword by tokens", mutate: func(_ *Answer, r *Result) { r.NonValidatedClaims = []Text{"two hypotheses; root causes unclear"} }, traj: true, axis2: true, failCheck: "forbidden", reasonHas: "two root causes"},
		{name: "source not consulted", mutate: func(_ *Answer, r *Result) { r.EvidenceSources = []string{"eks_events"} }, traj: true, axis2: true, failCheck: "evidence_sources", reasonHas: "eks_pods"},
		{name: "trajectory action missing", mutate: func(_ *Answer, r *Result) { r.ToolsCalled = r.ToolsCalled[:1] }, axis1: true, axis2: true, failCheck: "optimal_trajectory", reasonHas: "get_eks_pod_logs"},
		{name: "too many loops", mutate: func(_ *Answer, r *Result) { r.Loops = 4 }, axis1: true, axis2: true, failCheck: "loops", reasonHas: "budget 3"},
		{name: "ruling out missing", mutate: func(_ *Answer, r *Result) { r.RuledOut = nil }, axis1: true, traj: true, failCheck: "ruling_out_keywords", reasonHas: "no image pull"},
		{name: "required query missing", mutate: func(a *Answer, r *Result) { a.RequiredQueries = []string{"get_eks_events"} }, axis1: true, traj: true, failCheck: "required_queries", reasonHas: "get_eks_events"},
		{name: "opensre action name used directly", mutate: func(_ *Answer, r *Result) {
			r.ToolsCalled = []ToolCall{{Intent: "list_eks_pods"}, {Intent: "get_eks_pod_logs"}}
		}, axis1: true, traj: true, axis2: true},
		{name: "describe_resource kind pod", mutate: func(_ *Answer, r *Result) {
			r.ToolsCalled = []ToolCall{{Intent: "describe_resource", Params: map[string]any{"kind": "Pod"}}, {Intent: "fetch_pod_logs"}}
		}, axis1: true, traj: true, axis2: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, r := baseAnswer(), baseResult()
			c.mutate(&a, &r)
			rep := Score(a, r)
			if rep.Axis1.Pass != c.axis1 || rep.Pass != c.axis1 {
				t.Errorf("axis1 = %v, want %v (%v)", rep.Axis1.Pass, c.axis1, rep.Axis1.Failures())
			}
			if rep.Trajectory.Pass != c.traj {
				t.Errorf("trajectory = %v, want %v (%v)", rep.Trajectory.Pass, c.traj, rep.Trajectory.Failures())
			}
			if rep.Axis2.Pass != c.axis2 {
				t.Errorf("axis2 = %v, want %v (%v)", rep.Axis2.Pass, c.axis2, rep.Axis2.Failures())
			}
			if c.failCheck != "" {
				var found bool
				for _, ax := range []Axis{rep.Axis1, rep.Trajectory, rep.Axis2} {
					for _, ch := range ax.Checks {
						if ch.Name == c.failCheck && !ch.Pass {
							found = true
							if !strings.Contains(ch.Reason, c.reasonHas) {
								t.Errorf("reason %q lacks %q", ch.Reason, c.reasonHas)
							}
						}
					}
				}
				if !found {
					t.Errorf("check %s did not fail", c.failCheck)
				}
			}
		})
	}
}

func TestDNSCategoryAllowance(t *testing.T) {
	a := Answer{RootCauseCategory: "configuration_error", FailureMode: "dns_resolution_failure"}
	r := Result{RootCause: "x", RootCauseCategory: "dependency_failure"}
	if !Score(a, r).Axis1.Pass {
		t.Error("DNS failure mode: dependency_failure must be accepted")
	}
	a.FailureMode = "image_pull_backoff"
	if Score(a, r).Axis1.Pass {
		t.Error("non-DNS failure mode: dependency_failure must not be accepted")
	}
	a.FailureMode = "" // unknown failure mode: strict
	if Score(a, r).Axis1.Pass {
		t.Error("no failure mode: strict category")
	}
}

func TestEntityMetrics(t *testing.T) {
	a := Answer{RootCauseCategory: "x", RootCauseEntity: "pod/payments/api-1", AcceptableEntities: []string{"deployment/payments/api"}}
	cases := []struct {
		name     string
		ents     []string
		rank     int
		ac1, ac3 float64
		avg5     float64
		mrr      float64
	}{
		{"first", []string{"pod/payments/api-1", "node/n1"}, 1, 1, 1, 1, 1},
		{"second via acceptable", []string{"node/n1", "deployment/payments/api"}, 2, 0, 1, 0.8, 0.5},
		{"namespace-less kind/name", []string{"node/n1", "db/x", "pod/api-1"}, 3, 0, 1, 0.6, 1.0 / 3},
		{"fifth", []string{"a/1", "a/2", "a/3", "a/4", "pod/payments/api-1"}, 5, 0, 0, 0.2, 0.2},
		{"absent", []string{"node/n1"}, 0, 0, 0, 0, 0},
		{"duplicates collapse", []string{"node/n1", "node/n1", "pod/payments/api-1"}, 2, 0, 1, 0.8, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Result
			for _, e := range c.ents {
				r.Hypotheses = append(r.Hypotheses, Hypothesis{Entity: e})
			}
			es := ScoreEntities(a, r)
			if !es.Applicable || es.Rank != c.rank || es.AC1 != c.ac1 || es.AC3 != c.ac3 || es.Avg5 != c.avg5 || es.MRR != c.mrr {
				t.Errorf("got %+v", es)
			}
			if es.Pass != (c.rank == 1) {
				t.Errorf("pass = %v with rank max 1", es.Pass)
			}
		})
	}
	if es := ScoreEntities(Answer{}, Result{}); es.Applicable {
		t.Error("no entity in answer: not applicable")
	}
	a.RootCauseRankMax = 3
	if es := ScoreEntities(a, Result{Hypotheses: []Hypothesis{{Entity: "x/y"}, {Entity: "pod/api-1"}}}); !es.Pass {
		t.Error("rank 2 within rank max 3 must pass")
	}
	if es := ScoreEntities(a, Result{RootCauseEntity: "pod/payments/api-1"}); es.Rank != 1 {
		t.Errorf("root cause entity used when no hypotheses: %+v", es)
	}
}

func TestFalsePositiveAndSummary(t *testing.T) {
	healthy := Answer{RootCauseCategory: "healthy", RequiredKeywords: []string{"normal"}}
	fp := Score(healthy, Result{ScenarioID: "h1", RootCause: "normal", RootCauseCategory: "infrastructure"})
	if !fp.NoFault || !fp.FalsePositive {
		t.Errorf("fault reported on no-fault case: %+v", fp)
	}
	ok := Score(healthy, Result{ScenarioID: "h2", RootCause: "normal", RootCauseCategory: "healthy"})
	if !ok.NoFault || ok.FalsePositive || !ok.Pass {
		t.Errorf("healthy verdict: %+v", ok)
	}
	ent := Score(Answer{RootCauseCategory: "x", RootCauseEntity: "db/a", RulingOutKeywords: []string{"zzz"}}, Result{ScenarioID: "e", RootCause: "r", RootCauseCategory: "x", Hypotheses: []Hypothesis{{Entity: "db/b"}, {Entity: "db/a"}}})
	s := Summarize([]Report{fp, ok, ent})
	if s.Scenarios != 3 || s.Axis1Passed != 2 || s.NoFault != 2 || s.FalsePositives != 1 {
		t.Errorf("summary = %+v", s)
	}
	if s.Axis2Applicable != 1 || s.Axis2Passed != 0 {
		t.Errorf("axis2 summary = %+v", s)
	}
	if s.EntityScenarios != 1 || s.AC1 != 0 || s.AC3 != 1 || s.MRR != 0.5 {
		t.Errorf("entity summary = %+v", s)
	}
	if len(s.Failed) != 1 || s.Failed[0] != "h1" {
		t.Errorf("failed = %v", s.Failed)
	}
}

// TestRealAnswersParse loads every answer.yml of the opensre suite when the
// benchmark folder is present.
func TestRealAnswersParse(t *testing.T) {
	root := benchdata.Dir(t, "opensre-synthetic")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", "answer.yml"))
	if len(files) == 0 {
		t.Fatalf("no answer.yml under %s", root)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ParseAnswer(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, act := range append(append([]string{}, a.OptimalTrajectory...), a.RequiredQueries...) {
			if !knownAction(act) {
				t.Errorf("%s: action %q is not reachable from any intent", f, act)
			}
		}
	}
}

func knownAction(act string) bool {
	for _, acts := range IntentActions {
		for _, a := range acts {
			if a == act {
				return true
			}
		}
	}
	return false
}

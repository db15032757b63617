package analysis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/services/tools"
)

// opensreDir is the opensre suite: $RCAMESH_OPENSRE_ROOT, else
// opensre-synthetic of the shared benchmarks (skipped when absent, failed
// under CI).
func opensreDir(t testing.TB) string {
	t.Helper()
	if r := os.Getenv("RCAMESH_OPENSRE_ROOT"); r != "" {
		return r
	}
	return benchdata.Dir(t, "opensre-synthetic")
}

// harnessDetectors, when set, replaces the default detectors (to measure
// the evidence-driven fallback alone).
var harnessDetectors func(t *testing.T) []analysis.Detector

// harnessRun is one scenario run through the real tools and the analysis.
type harnessRun struct {
	result score.Result
	diag   *investigationv1.Diagnosis
	res    analysis.Result
}

type call struct {
	intent string
	params map[string]any
}

// runScenario loads a scenario into the fixture backend, runs a fixed
// two-step plan through the tools service in process (survey, then logs of
// the pods that look unhealthy), analyses the pins and diagnoses.
func runScenario(t *testing.T, dir string) harnessRun {
	t.Helper()
	ctx := context.Background()
	set, sc, err := fixture.FromDir(dir, nil)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	alerts, err := intake.Parse(sc.AlertRaw, "")
	if err != nil || len(alerts) == 0 {
		t.Fatalf("intake: %v", err)
	}
	alert := alerts[0]
	svc, err := tools.New(tools.DefaultConfig(), tools.Deps{Backend: set})
	if err != nil {
		t.Fatalf("tools: %v", err)
	}
	rc := &evidencev1.RouterContext{
		ActiveNamespace: alert.GetNamespace(),
		ActiveService:   alert.GetService(),
		ActivePod:       alert.GetPod(),
		TimeWindow:      alert.GetIncidentWindow(),
		SessionId:       "harness",
	}
	var pins []*evidencev1.EvidencePin
	var called []score.ToolCall
	run := func(c call) *evidencev1.EvidencePin {
		ps, err := structpb.NewStruct(c.params)
		if err != nil {
			t.Fatalf("params: %v", err)
		}
		resp, err := svc.ExecuteTool(ctx, &toolsv1.ExecuteToolRequest{SessionId: "harness", Intent: c.intent, Params: ps, Context: rc, SkipPublish: true})
		called = append(called, score.ToolCall{Intent: c.intent, Params: c.params})
		if err != nil {
			t.Logf("%s: %v", c.intent, err)
			return nil
		}
		pins = append(pins, resp.GetPin())
		return resp.GetPin()
	}
	ns := alert.GetNamespace()
	if ns == "" {
		ns = "all"
	}
	plan := []call{
		{"list_pods", map[string]any{"namespace": ns}},
		{"get_events", map[string]any{"namespace": "all"}},
		{"list_deployments", map[string]any{"namespace": ns}},
		{"get_node_health", map[string]any{}},
		{"search_logs", map[string]any{"query": "*"}},
		{"list_monitors", map[string]any{}},
		{"query_db_metrics", map[string]any{}},
		{"get_db_top_queries", map[string]any{}},
		{"get_db_events", map[string]any{"since": "24h"}},
		{"get_deploy_history", map[string]any{}},
		{"get_commits", map[string]any{}},
	}
	if sc.Has("prometheus") {
		plan = append(plan, call{"query_prometheus", map[string]any{"query": `{__name__=~".+"}`}})
	}
	var podPins []*evidencev1.EvidencePin
	for _, c := range plan {
		if p := run(c); p != nil && c.intent == "list_pods" {
			podPins = append(podPins, p)
		}
	}
	loops := 1
	// Step 2: logs of the alerted pod and of pods that are not healthy.
	targets := map[string]bool{}
	if alert.GetPod() != "" {
		targets[alert.GetPod()] = true
	}
	for _, p := range podPins {
		var pods []facts.Pod
		if _, err := facts.Decode(p.GetMetadata(), facts.KeyPods, &pods); err != nil {
			t.Fatalf("decode pods: %v", err)
		}
		for _, pod := range pods {
			if !pod.Ready || pod.Restarts > 0 {
				targets[pod.Name] = true
			}
		}
	}
	var names []string
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 3 {
		names = names[:3]
	}
	if len(names) > 0 {
		loops = 2
	}
	for _, n := range names {
		run(call{"fetch_pod_logs", map[string]any{"namespace": ns, "pod": n}})
	}
	in := analysis.Input{Alert: alert, Pins: pins}
	detectors := analysis.DefaultDetectors()
	if harnessDetectors != nil {
		detectors = harnessDetectors(t)
	}
	res, err := analysis.AnalyzeWith(ctx, in, detectors)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	d := analysis.Diagnose(in, res)
	var sources []string
	seen := map[string]bool{}
	for _, p := range pins {
		if p.GetNoData() {
			continue
		}
		for _, s := range p.GetSources() {
			if !seen[s] {
				seen[s] = true
				sources = append(sources, s)
			}
		}
	}
	r := score.Result{
		ScenarioID:        sc.ID,
		RootCause:         d.GetRootCause(),
		RootCauseCategory: strings.ToLower(strings.TrimPrefix(d.GetCategory().String(), "ROOT_CAUSE_CATEGORY_")),
		RootCauseEntity:   d.GetRootCauseEntity(),
		Confidence:        d.GetConfidence(),
		ToolsCalled:       called,
		EvidenceSources:   sources,
		Loops:             loops,
		Report:            analysis.Markdown(d),
	}
	for _, h := range d.GetHypotheses() {
		r.Hypotheses = append(r.Hypotheses, score.Hypothesis{Statement: h.GetStatement(), Entity: h.GetEntity(), Category: h.GetCategory().String(), Confidence: h.GetConfidence(), PinIDs: h.GetPinIds()})
	}
	for _, c := range d.GetValidatedClaims() {
		r.ValidatedClaims = append(r.ValidatedClaims, score.Text(c.GetClaim()))
	}
	for _, c := range d.GetNonValidatedClaims() {
		r.NonValidatedClaims = append(r.NonValidatedClaims, score.Text(c.GetClaim()))
	}
	for _, c := range d.GetCausalChain() {
		r.CausalChain = append(r.CausalChain, score.Text(c))
	}
	for _, ro := range d.GetRuledOut() {
		r.RuledOut = append(r.RuledOut, score.Text(ro.GetAlternative()+": "+ro.GetReason()))
	}
	for _, s := range d.GetRemediationSteps() {
		r.RemediationSteps = append(r.RemediationSteps, score.Text(s))
	}
	return harnessRun{result: r, diag: d, res: res}
}

func loadAnswer(t *testing.T, dir string) score.Answer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "answer.yml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := score.ParseAnswer(b)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		FailureMode string `json:"failure_mode"`
	}
	if mb, err := os.ReadFile(filepath.Join(dir, "scenario.yml")); err == nil {
		for _, line := range strings.Split(string(mb), "\n") {
			if v, ok := strings.CutPrefix(line, "failure_mode:"); ok {
				meta.FailureMode = strings.TrimSpace(v)
			}
		}
	}
	a.FailureMode = meta.FailureMode
	return a
}

// TestOpenSREHarness scores the rules engine on the opensre synthetic suite.
// RCAMESH_HARNESS_VERBOSE=1 prints each diagnosis.
func TestOpenSREHarness(t *testing.T) {
	root := opensreDir(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "[0-9]*"))
	if len(dirs) == 0 {
		t.Fatalf("no scenario under %s", root)
	}
	sort.Strings(dirs)
	only := os.Getenv("RCAMESH_HARNESS_ONLY")
	verbose := os.Getenv("RCAMESH_HARNESS_VERBOSE") != ""
	var reports []score.Report
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		if only != "" && !strings.Contains(name, only) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			run := runScenario(t, dir)
			ans := loadAnswer(t, dir)
			rep := score.Score(ans, run.result)
			rep.ScenarioID = name
			reports = append(reports, rep)
			status := "PASS"
			if !rep.Axis1.Pass {
				status = "FAIL"
			}
			t.Logf("%s axis1=%s traj=%v axis2=%v cat=%s entity=%s conf=%.2f", status, name, rep.Trajectory.Pass, rep.Axis2.Pass, run.result.RootCauseCategory, run.result.RootCauseEntity, run.result.Confidence)
			for _, f := range append(append(rep.Axis1.Failures(), rep.Trajectory.Failures()...), rep.Axis2.Failures()...) {
				t.Logf("  - %s", f)
			}
			if verbose || !rep.Axis1.Pass || (rep.Axis2Applicable && !rep.Axis2.Pass) {
				t.Logf("  root cause: %s", run.result.RootCause)
				if verbose {
					t.Logf("  report:\n%s", run.result.Report)
				}
			}
		})
	}
	s := score.Summarize(reports)
	b, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("summary: %s", b)
	fmt.Fprintf(os.Stderr, "opensre harness: axis1 %d/%d, trajectory %d/%d, axis2 %d/%d, false positives %d/%d\n",
		s.Axis1Passed, s.Scenarios, s.TrajectoryPassed, s.Scenarios, s.Axis2Passed, s.Axis2Applicable, s.FalsePositives, s.NoFault)
}

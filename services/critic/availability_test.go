package critic

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// fakeTools reports a fixed tool availability.
type fakeTools struct {
	toolsv1.ToolsServiceClient
	avail map[string]bool
	calls int
}

func (f *fakeTools) ListToolDefinitions(context.Context, *toolsv1.ListToolDefinitionsRequest, ...grpc.CallOption) (*toolsv1.ListToolDefinitionsResponse, error) {
	f.calls++
	resp := &toolsv1.ListToolDefinitionsResponse{}
	for in, ok := range f.avail {
		resp.Tools = append(resp.Tools, &evidencev1.ToolDefinition{Intent: in, Available: ok})
	}
	return resp, nil
}

func TestUnavailableToolsDoNotHoldTheLoop(t *testing.T) {
	ft := &fakeTools{avail: map[string]bool{"check_pod_status": true, "get_events": true, "query_prometheus": false, "get_deploy_history": false, "re_investigate_service": true}}
	s := newTestService(t, nil)
	s.tools = ft
	// A code-defect hypothesis with no deploy in evidence: the deploy check
	// cannot be settled where no deploy history is available.
	pins := []*evidencev1.EvidencePin{
		validated(newPin("l1", "fetch_pod_logs", md(t, facts.KeyLogLines, []facts.LogLine{{Level: "ERROR", Service: "api",
			Message: "panic: runtime error: nil pointer dereference", Timestamp: tp(t0)}})), roleRoot),
		validated(newPin("p1", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z")), roleRoot),
	}
	hyp := &investigationv1.Hypothesis{Id: "h", Statement: "api has a nil pointer defect", Category: catCode, Entity: "deployment/shop/api",
		Confidence: 0.8, PinIds: []string{"l1", "p1"}}
	resp, err := s.ReviewHypotheses(context.Background(), &criticv1.ReviewHypothesesRequest{SessionId: "av",
		Hypotheses: &investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{hyp}}, Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	o := objection(resp.GetReview(), CheckRegressionBeforeDeploy)
	if o == nil || !o.GetPassed() || !strings.Contains(o.GetDetail(), "unverifiable here") {
		t.Fatalf("deploy check: %+v", o)
	}
	for _, ob := range resp.GetReview().GetObjections() {
		for _, in := range ob.GetRequestedIntents() {
			if !ft.avail[in] {
				t.Errorf("objection %s requests unavailable %s", ob.GetCheck(), in)
			}
		}
	}

	// AcceptConclusion does not wait for planned tools that cannot run.
	plan := &investigationv1.TaskPlan{Actions: []*investigationv1.PlannedAction{{Intent: "check_pod_status"}, {Intent: "get_deploy_history"}}}
	acc, err := s.AcceptConclusion(context.Background(), &criticv1.AcceptConclusionRequest{SessionId: "av", Plan: plan,
		ExecutedIntents: []string{"check_pod_status"}, Pins: pins,
		Proposed: &investigationv1.Diagnosis{RootCause: "nil pointer defect in api", Category: catCode, RootCauseEntity: "deployment/shop/api", Hypotheses: []*investigationv1.Hypothesis{hyp}}})
	if err != nil {
		t.Fatal(err)
	}
	if !acc.GetAccepted() || len(acc.GetMissingIntents()) != 0 {
		t.Fatalf("accept: %+v", acc)
	}
	if ft.calls != 1 {
		t.Errorf("availability fetched %d times, want 1 (cached)", ft.calls)
	}
}

func TestHealthyHypothesisToleratesHistory(t *testing.T) {
	now := t0
	oldPod := facts.Pod{Namespace: "shop", Name: "api-6c4ab5d9c-old01", Phase: "Running", Restarts: 2,
		Containers: []facts.Container{{Name: "app", State: "waiting", Reason: "CrashLoopBackOff"}}}
	newPods := []facts.Pod{oldPod,
		{Namespace: "shop", Name: "api-7d9f8b6c5-aaaaa", Phase: "Running", Ready: true, Containers: []facts.Container{{Name: "app", Ready: true, State: "running"}}},
		{Namespace: "shop", Name: "api-7d9f8b6c5-bbbbb", Phase: "Running", Ready: true, Containers: []facts.Container{{Name: "app", Ready: true, State: "running"}}}}
	pins := []*evidencev1.EvidencePin{
		validated(newPin("dep", "list_deployments", md(t, facts.KeyDeployments, []facts.Deployment{{Namespace: "shop", Name: "api", Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}}), at(now)), roleInfo),
		validated(newPin("pods", "list_pods", md(t, facts.KeyPods, newPods), at(now.Add(time.Second))), roleRoot),
		validated(newPin("ev", "get_events", md(t, facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "FailedScheduling", InvolvedKind: "Pod", InvolvedName: "api-7d9f8b6c5-aaaaa", Message: "0/2 nodes are available"}}), at(now)), roleRoot),
		validated(newPin("m", "query_prometheus", md(t, facts.KeySeries, []facts.Series{{Name: "free_storage_bytes", Labels: map[string]string{"service": "api"}, Shape: "step", Baseline: 10, Peak: 200, Min: 10, Latest: 200}})), roleInfo),
	}
	hyp := &investigationv1.Hypothesis{Id: "h", Statement: "api is healthy; the old replica set is draining", Category: catHealth, Entity: "deployment/shop/api", Confidence: 0.8, PinIds: []string{"dep", "pods"}}
	s := newTestService(t, nil)
	resp := s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{hyp}}, nil, 1, pins, nil, nil)
	if resp.GetReview().GetAction() != investigationv1.CriticAction_CRITIC_ACTION_ACCEPT {
		t.Fatalf("healthy hypothesis: %s %s", resp.GetReview().GetAction(), resp.GetReview().GetSummary())
	}
	// Without the deployment's word the failing pod is current and objects.
	resp = s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{hyp}}, nil, 1, pins[1:], nil, nil)
	if o := objection(resp.GetReview(), CheckContradictingPins); o == nil || o.GetPassed() {
		t.Fatalf("current failure not raised: %+v", o)
	}
	// A failing pod of the serving replica set is current even when the deployment reports ready.
	cur := newPods[2]
	cur.Ready, cur.Containers = false, []facts.Container{{Name: "app", State: "waiting", Reason: "CrashLoopBackOff"}}
	pins[1] = validated(newPin("pods", "list_pods", md(t, facts.KeyPods, []facts.Pod{newPods[1], cur}), at(now.Add(time.Second))), roleRoot)
	resp = s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{hyp}}, nil, 1, pins, nil, nil)
	if resp.GetReview().GetAction() == investigationv1.CriticAction_CRITIC_ACTION_ACCEPT {
		t.Fatalf("healthy accepted over a failing current pod: %s", resp.GetReview().GetSummary())
	}
	// A not-paged verdict does not claim the system works: the failing pod
	// it reports is no contradiction; the same pod contradicts plain health.
	notPaged := &investigationv1.Hypothesis{Id: "np", Statement: "No production action needed: the alert comes from the preview environment, which is not paged",
		Category: catHealth, Detector: analysis.ModeNotPaged, Entity: "deployment/shop/api", Confidence: 0.9, PinIds: []string{"pods"}}
	resp = s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{notPaged}}, nil, 1, pins, nil, nil)
	if o := objection(resp.GetReview(), CheckContradictingPins); o != nil && !o.GetPassed() {
		t.Fatalf("not-paged verdict contradicted by the failures it reports: %+v", o)
	}
}

func TestGatherMoreWidensBeyondExecutedTools(t *testing.T) {
	ft := &fakeTools{avail: map[string]bool{"get_events": true, "fetch_pod_logs": true, "list_pods": true, "query_prometheus": false}}
	s := newTestService(t, nil)
	s.tools = ft
	pins := []*evidencev1.EvidencePin{validated(newPin("e", "get_events", nil, noData()), roleInfo)}
	resp, err := s.ReviewHypotheses(context.Background(), &criticv1.ReviewHypothesesRequest{SessionId: "w", Pins: pins, Hypotheses: &investigationv1.HypothesisSet{}})
	if err != nil {
		t.Fatal(err)
	}
	requested := func(r *criticv1.ReviewHypothesesResponse) []string {
		var intents []string
		for _, o := range r.GetReview().GetObjections() {
			intents = append(intents, o.GetRequestedIntents()...)
		}
		return intents
	}
	if in := requested(resp); !containsStr(in, "fetch_pod_logs") || containsStr(in, "query_prometheus") {
		t.Fatalf("requested %v", in)
	}
	// Once the suggested tools ran, the critic widens to tools that have not.
	pins = append(pins, validated(newPin("l", "fetch_pod_logs", nil, noData()), roleInfo))
	resp, err = s.ReviewHypotheses(context.Background(), &criticv1.ReviewHypothesesRequest{SessionId: "w", Pins: pins, Hypotheses: &investigationv1.HypothesisSet{}, Round: 2})
	if err != nil {
		t.Fatal(err)
	}
	if in := requested(resp); !containsStr(in, "list_pods") {
		t.Fatalf("requested %v", in)
	}
	// The caller's account decides whether the scope widens further: every
	// request would repeat a call made.
	var asked []string
	for _, o := range resp.GetReview().GetObjections() {
		if !o.GetPassed() {
			asked = append(asked, o.GetRequestedIntents()...)
		}
	}
	for _, tc := range []struct {
		next *criticv1.NextCalls
		want bool
	}{
		{nil, false},
		{&criticv1.NextCalls{RepeatIntents: asked}, true},
		{&criticv1.NextCalls{RepeatIntents: asked[1:], FreshIntents: asked[:1]}, false},
	} {
		resp, err = s.ReviewHypotheses(context.Background(), &criticv1.ReviewHypothesesRequest{SessionId: "w", Pins: pins, Hypotheses: &investigationv1.HypothesisSet{}, Round: 2, NextCalls: tc.next})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetReview().GetWidenScope(); got != tc.want {
			t.Errorf("next %v: widen %v, want %v", tc.next, got, tc.want)
		}
	}
}

// TestWidenScope: the scope widens when no failed objection's request
// reaches new evidence by the caller's account, and a planned action left
// to run counts only when nothing requested can be called.
func TestWidenScope(t *testing.T) {
	obj := func(intents ...string) []*investigationv1.Objection {
		return []*investigationv1.Objection{{Check: "a", Passed: true, RequestedIntents: []string{"get_events"}}, {Check: "b", RequestedIntents: intents}}
	}
	for _, tc := range []struct {
		name string
		objs []*investigationv1.Objection
		next *criticv1.NextCalls
		want bool
	}{
		{"no account", obj("list_pods"), nil, false},
		{"a request is new", obj("list_pods", "get_events"), &criticv1.NextCalls{FreshIntents: []string{"list_pods"}, RepeatIntents: []string{"get_events"}}, false},
		{"every request repeats", obj("list_pods", "get_events"), &criticv1.NextCalls{FreshIntents: []string{"get_commits"}, RepeatIntents: []string{"list_pods", "get_events"}}, true},
		{"a passed objection's request does not count", obj("list_pods"), &criticv1.NextCalls{FreshIntents: []string{"get_events"}, RepeatIntents: []string{"list_pods"}}, true},
		{"nothing callable, planned actions left", obj("fetch_pod_logs"), &criticv1.NextCalls{PlanHasFreshCalls: true}, false},
		{"nothing callable, nothing planned left", obj("fetch_pod_logs"), &criticv1.NextCalls{}, true},
		{"one repeats, planned actions left", obj("fetch_pod_logs", "list_pods"), &criticv1.NextCalls{RepeatIntents: []string{"list_pods"}, PlanHasFreshCalls: true}, true},
	} {
		if got := widenScope(tc.objs, tc.next); got != tc.want {
			t.Errorf("%s: widen %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Healthy means healthy now: more traffic than before is context, not a
// metric of the accused still abnormal; an error series still up is.
func TestHealthyHypothesisTrafficRiseIsNotAbnormal(t *testing.T) {
	now := t0
	traffic := facts.Series{Name: "rate(http_requests_total[5m])", Labels: map[string]string{"service": "api", "code": "200"}, Shape: "creep", Baseline: 1.7, Peak: 2.4, Min: 1.7, Latest: 2.4}
	errs := facts.Series{Name: "rate(http_requests_total[5m])", Labels: map[string]string{"service": "api", "code": "500"}, Shape: "step", Baseline: 0.01, Peak: 3, Min: 0.01, Latest: 3}
	hyp := &investigationv1.Hypothesis{Id: "h", Statement: "api is healthy: its errors ended", Category: catHealth, Entity: "deployment/shop/api", Confidence: 0.8, PinIds: []string{"m"}}
	s := newTestService(t, nil)
	for _, tc := range []struct {
		name     string
		series   []facts.Series
		objected bool
	}{
		{"a traffic rise", []facts.Series{traffic}, false},
		{"errors still up", []facts.Series{traffic, errs}, true},
	} {
		pins := []*evidencev1.EvidencePin{validated(newPin("m", "query_prometheus", md(t, facts.KeySeries, tc.series), at(now)), roleRoot)}
		resp := s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{hyp}}, nil, 1, pins, nil, nil)
		o := objection(resp.GetReview(), CheckAccusedMetricsNormal)
		if got := o != nil && !o.GetPassed() && strings.Contains(o.GetDetail(), "still abnormal"); got != tc.objected {
			t.Errorf("%s: accused_metrics_normal objected=%v, want %v (%+v)", tc.name, got, tc.objected, o)
		}
	}
}

// A reading of load announced ahead expects the service's latency up at
// the end of the window, and a trickle of errors under its floor; errors
// above the floor still count against it, and without the reading's
// signal the latency does too.
func TestExpectedLoadHypothesisLatencyIsExpected(t *testing.T) {
	now := t0
	latency := facts.Series{Name: "http_request_duration_seconds_p95", Labels: map[string]string{"service": "api"}, Shape: "step", Baseline: 0.3, Peak: 0.9, Min: 0.3, Latest: 0.9}
	trickle := facts.Series{Name: "rate(http_requests_total[5m])", Labels: map[string]string{"service": "api", "code": "500"}, Shape: "step", Baseline: 0, Peak: 0.008, Min: 0, Latest: 0.006}
	errs := facts.Series{Name: "rate(http_requests_total[5m])", Labels: map[string]string{"service": "api", "code": "500"}, Shape: "step", Baseline: 0.01, Peak: 3, Min: 0.01, Latest: 3}
	expected := &investigationv1.Hypothesis{Id: "h", Statement: "Expected load on api", Category: catHealth, Entity: "deployment/shop/api", Confidence: 0.7, PinIds: []string{"m"}, Signals: []string{analysis.SignalExpectedLoad}}
	plain := &investigationv1.Hypothesis{Id: "h", Statement: "api is healthy", Category: catHealth, Entity: "deployment/shop/api", Confidence: 0.7, PinIds: []string{"m"}}
	s := newTestService(t, nil)
	for _, tc := range []struct {
		name     string
		hyp      *investigationv1.Hypothesis
		series   []facts.Series
		objected bool
	}{
		{"expected load, latency up", expected, []facts.Series{latency}, false},
		{"expected load, a trickle of errors", expected, []facts.Series{latency, trickle}, false},
		{"expected load, errors up", expected, []facts.Series{latency, errs}, true},
		{"plain health, latency up", plain, []facts.Series{latency}, true},
	} {
		pins := []*evidencev1.EvidencePin{validated(newPin("m", "query_prometheus", md(t, facts.KeySeries, tc.series), at(now)), roleRoot)}
		resp := s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{tc.hyp}}, nil, 1, pins, nil, nil)
		o := objection(resp.GetReview(), CheckAccusedMetricsNormal)
		if got := o != nil && !o.GetPassed() && strings.Contains(o.GetDetail(), "still abnormal"); got != tc.objected {
			t.Errorf("%s: accused_metrics_normal objected=%v, want %v (%+v)", tc.name, got, tc.objected, o)
		}
	}
}

package brain

import (
	"context"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestMatchScope(t *testing.T) {
	pods := []facts.Pod{
		{Namespace: "billing", Name: "invoice-svc-7d9f8b6c4-x7gr9", Workload: "invoice-svc"},
		{Namespace: "billing", Name: "invoice-svc-worker-5c6d7e8f9-abcde", Workload: "invoice-svc-worker"},
		{Namespace: "edge", Name: "gateway-0", Labels: map[string]string{"app": "gateway"}},
		{Namespace: "edge-canary", Name: "gateway-canary-1", Labels: map[string]string{"app": "gateway"}},
		{Namespace: "monitoring", Name: "prometheus-0", Workload: "prometheus"},
	}
	tests := []struct {
		name   string
		names  []string
		wantNS string
		wantWL string
	}{
		{"workload name", []string{"invoice-svc"}, "billing", "invoice-svc"},
		{"pod name", []string{"invoice-svc-worker-5c6d7e8f9-abcde"}, "billing", "invoice-svc-worker"},
		{"app label in two namespaces is ambiguous", []string{"gateway"}, "", ""},
		{"earlier name wins over a later one", []string{"prometheus", "gateway"}, "monitoring", "prometheus"},
		{"a longer sibling name is not a pod of the shorter", []string{"invoice"}, "", ""},
		{"no match", []string{"payments"}, "", ""},
		{"a display name in another case and spelling", []string{"InvoiceSvc"}, "billing", "invoice-svc"},
		{"a short display name folds into too many", []string{"Edge"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, wl, why := matchScope(tc.names, pods)
			if ns != tc.wantNS || wl != tc.wantWL {
				t.Fatalf("matchScope(%v) = %q, %q (%s); want %q, %q", tc.names, ns, wl, why, tc.wantNS, tc.wantWL)
			}
			if why == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestScopeNames(t *testing.T) {
	a := &investigationv1.Alert{AlertName: "HighLatency", Summary: "p99 of checkout-api above 2s", Labels: map[string]string{"severity": "page"}}
	got, fromText := scopeNames(a)
	if !fromText {
		t.Error("names found in the summary must be marked as from text")
	}
	found := false
	for _, n := range got {
		if n == "checkout-api" {
			found = true
		}
	}
	if !found {
		t.Errorf("scopeNames = %v; want the workload-like token of the summary", got)
	}
	a = &investigationv1.Alert{Service: "cart", Labels: map[string]string{"k8s.deployment.name": "cart-v2"}}
	if got, fromText := scopeNames(a); len(got) < 2 || got[0] != "cart-v2" || fromText {
		t.Errorf("scopeNames = %v; want the deployment label first, then the service", got)
	}
}

// A node alert that names a workload by a label is resolved for that
// workload's namespace; a node alert whose only names are words of its
// text stays cluster-scoped (no discovery call).
func TestResolveScopeOfANodeAlert(t *testing.T) {
	h := podListingHarness(t, []facts.Pod{{Namespace: "warehouse", Name: "pick-planner-7d9f-abcde", Workload: "pick-planner"}})
	for _, tc := range []struct {
		name  string
		alert *investigationv1.Alert
		want  string
	}{
		{"node alert naming a service", &investigationv1.Alert{AlertName: "NodeMemoryPressure", ResourceKind: "node", ResourceName: "wh-m5-06", Labels: map[string]string{"node": "wh-m5-06", "service": "pick-planner"}}, "warehouse"},
		{"node alert with words only", &investigationv1.Alert{AlertName: "NodeMemoryPressure", ResourceKind: "node", ResourceName: "wh-m5-06", Summary: "pick-planner pods evicted"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s-" + tc.want, Alert: tc.alert}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			if _, err := h.svc.resolveScope(testCtx(t), st); err != nil {
				t.Fatal(err)
			}
			if got := st.rec.GetAlert().GetNamespace(); got != tc.want {
				t.Errorf("namespace %q, want %q", got, tc.want)
			}
		})
	}
}

// An alert with a namespace whose text names pods of one workload by their
// exact names is about that workload; pods of two workloads, a name that
// is no pod, or a label naming a service leave it alone.
func TestResolveNamedPods(t *testing.T) {
	h := podListingHarness(t, []facts.Pod{
		{Namespace: "knit", Name: "yarn-db-0", Workload: "yarn-db", OwnerKind: "StatefulSet", OwnerName: "yarn-db"},
		{Namespace: "knit", Name: "yarn-db-1", Workload: "yarn-db", OwnerKind: "StatefulSet", OwnerName: "yarn-db"},
		{Namespace: "knit", Name: "pattern-api-6c9d-x2k4p", Workload: "pattern-api"},
	})
	for _, tc := range []struct {
		name  string
		alert *investigationv1.Alert
		want  string
	}{
		{"pods of one workload", &investigationv1.Alert{AlertName: "PrimaryChanged", Namespace: "knit", Summary: "primary moved (yarn-db-0 -> yarn-db-1)"}, "yarn-db"},
		{"pods of two workloads", &investigationv1.Alert{AlertName: "Slow", Namespace: "knit", Summary: "yarn-db-0 slow for pattern-api-6c9d-x2k4p"}, ""},
		{"no such pod", &investigationv1.Alert{AlertName: "PrimaryChanged", Namespace: "knit", Summary: "primary moved (yarn-db-7 -> yarn-db-8)"}, ""},
		{"a label names the service", &investigationv1.Alert{AlertName: "PrimaryChanged", Namespace: "knit", Labels: map[string]string{"service": "pattern-api"}, Summary: "yarn-db-0 lagging"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s-" + tc.name, Alert: tc.alert}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			if _, err := h.svc.resolveScope(testCtx(t), st); err != nil {
				t.Fatal(err)
			}
			if got := st.rec.GetAlert().GetService(); got != tc.want {
				t.Errorf("service %q, want %q", got, tc.want)
			}
		})
	}
}

// An alert whose service names nothing in its namespace, where every pod
// belongs to one workload, is about that workload; a service that exists,
// or a namespace of several workloads, is left alone.
func TestResolveUnknownService(t *testing.T) {
	one := []facts.Pod{
		{Namespace: "birds", Name: "sightings-api-7f-a1", Workload: "sightings-api"},
		{Namespace: "birds", Name: "sightings-api-7f-b2", Workload: "sightings-api"},
	}
	two := append(append([]facts.Pod(nil), one...), facts.Pod{Namespace: "birds", Name: "feeder-5c-x1", Workload: "feeder"})
	for _, tc := range []struct {
		name    string
		pods    []facts.Pod
		service string
		want    string
	}{
		{"one workload, another name", one, "birdcount-api", "sightings-api"},
		{"the service exists", two, "feeder", "feeder"},
		{"several workloads", two, "birdcount-api", "birdcount-api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := podListingHarness(t, tc.pods)
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s-" + tc.name, Alert: &investigationv1.Alert{AlertName: "FeedLatency", Namespace: "birds", Service: tc.service}}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			if _, err := h.svc.resolveScope(testCtx(t), st); err != nil {
				t.Fatal(err)
			}
			if got := st.rec.GetAlert().GetService(); got != tc.want {
				t.Errorf("service %q, want %q", got, tc.want)
			}
		})
	}
}

// An alert whose namespace holds no pod (the alerting tool's own tenancy
// namespace) is resolved cluster-wide: the namespace of the pods its names
// match becomes its namespace; when none match it keeps its own.
func TestResolveScopeOfAnEmptyNamespace(t *testing.T) {
	h := podListingHarness(t, []facts.Pod{
		{Namespace: "vending", Name: "telemetry-aggregator-7c9d-a1b2c", Workload: "telemetry-aggregator"},
		{Namespace: "vending", Name: "machine-gateway-6c7d-x9y8z", Workload: "machine-gateway"},
		{Namespace: "default", Name: "kubernetes-proxy-0", Workload: "kubernetes-proxy"},
	})
	for _, tc := range []struct {
		name   string
		alert  *investigationv1.Alert
		wantNS string
	}{
		{"an empty namespace, the workload elsewhere", &investigationv1.Alert{AlertName: "ConsumerLag", Namespace: "sensu-prod", Service: "telemetry-aggregator"}, "vending"},
		{"an empty namespace, nothing matches", &investigationv1.Alert{AlertName: "ConsumerLag", Namespace: "sensu-prod", Service: "ledger-sync"}, "sensu-prod"},
		{"a namespace with pods", &investigationv1.Alert{AlertName: "ConsumerLag", Namespace: "default", Service: "telemetry-aggregator"}, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s-" + tc.name, Alert: tc.alert}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			if _, err := h.svc.resolveScope(testCtx(t), st); err != nil {
				t.Fatal(err)
			}
			if got := st.rec.GetAlert().GetNamespace(); got != tc.wantNS {
				t.Errorf("namespace %q, want %q", got, tc.wantNS)
			}
		})
	}
}

// podListingHarness is a harness whose tools list pods: every list_pods
// call answers with pods.
func podListingHarness(t *testing.T, pods []facts.Pod) *harness {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentListPods, ParamsSchema: []*evidencev1.ToolParam{{Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	h.tools.exec = func(_ context.Context, req *toolsv1.ExecuteToolRequest, _ int) (*toolsv1.ExecuteToolResponse, error) {
		if req.GetIntent() != intentListPods {
			return nil, nil
		}
		// The pods of the namespace asked for ("all": every one).
		ns := req.GetParams().GetFields()["namespace"].GetStringValue()
		var in []facts.Pod
		for _, p := range pods {
			if ns == "" || ns == "all" || p.Namespace == ns {
				in = append(in, p)
			}
		}
		m, err := facts.Put(nil, facts.KeyPods, in)
		if err != nil {
			return nil, err
		}
		md, err := facts.ToStruct(m)
		if err != nil {
			return nil, err
		}
		return &toolsv1.ExecuteToolResponse{Result: &evidencev1.ToolResult{Success: true, Intent: intentListPods},
			Pin: &evidencev1.EvidencePin{Id: "pin-pods", SourceTool: intentListPods, Success: true, Version: 1, Metadata: md}}, nil
	}
	return h
}

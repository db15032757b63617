package brain

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestInferParamsForRequestedIntents(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs,
		&evidencev1.ToolDefinition{Intent: "get_node_health", ParamsSchema: []*evidencev1.ToolParam{{Name: "name", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}},
		&evidencev1.ToolDefinition{Intent: "search_logs", Category: evidencev1.ToolCategory_TOOL_CATEGORY_LOGS, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING, Required: true}, {Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}},
	)
	cases := []struct {
		name   string
		alert  *investigationv1.Alert
		intent string
		want   map[string]any
		absent []string
	}{
		{"a node tool's name is never the alerted pod", &investigationv1.Alert{Namespace: "shop", Pod: "cart-6d7f8b9c5-ab1cd", Service: "cart"}, "get_node_health", nil, []string{"name"}},
		{"scoped log search reads every line", &investigationv1.Alert{Namespace: "shop", Service: "cart"}, "search_logs", map[string]any{"query": "*", "service": "cart"}, nil},
		{"the alert's error text is the query", &investigationv1.Alert{Namespace: "shop", Service: "cart", ErrorMessage: "deadline exceeded"}, "search_logs", map[string]any{"query": "deadline exceeded"}, nil},
		{"pods of the workload by prefix when none is known", &investigationv1.Alert{Namespace: "shop", Service: "cart"}, "fetch_pod_logs", map[string]any{"pod": "cart-*"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: tc.alert}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil // fresh definitions for each case
			got := h.svc.inferParams(testCtx(t), st, tc.intent)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all %v)", k, got[k], v, got)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s should be unset, got %v", k, got[k])
				}
			}
		})
	}
}

func TestEntityFollowUpsReadTheSuspectsLogs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentPodLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "pod", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	read := func(pod string) *investigationv1.ToolCallRecord {
		p, _ := structpb.NewStruct(map[string]any{"namespace": "shop", "pod": pod})
		return &investigationv1.ToolCallRecord{Intent: intentPodLogs, Params: p, PinId: "pin_1"}
	}
	tests := []struct {
		name  string
		ent   string
		calls []*investigationv1.ToolCallRecord
		want  bool
	}{
		{"a suspect deployment nobody read", "deployment/shop/cart", nil, true},
		{"its pods already read by pattern", "deployment/shop/cart", []*investigationv1.ToolCallRecord{read("cart-*")}, false},
		{"one of its pods already read", "deployment/shop/cart", []*investigationv1.ToolCallRecord{read("cart-6d7f8b9c5-ab1cd")}, false},
		{"another workload's logs do not count", "deployment/shop/cart", []*investigationv1.ToolCallRecord{read("search-*")}, true},
		{"a service is not a workload", "service/shop/cart", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: tc.calls}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			got := false
			for _, c := range h.svc.entityFollowUps(testCtx(t), st, tc.ent) {
				got = got || (c.Intent == intentPodLogs && c.Params["pod"] == "cart-*")
			}
			if got != tc.want {
				t.Errorf("reads cart-* = %v, want %v", got, tc.want)
			}
		})
	}
}

// A suspect workload's change history is read next, unless a call already
// covered it (for it, or for every service).
func TestEntityFollowUpsReadTheSuspectsChanges(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, in := range []string{intentDeploys, intentCommits} {
		h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: in, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	}
	ran := func(in string, params map[string]any) *investigationv1.ToolCallRecord {
		p, _ := structpb.NewStruct(params)
		return &investigationv1.ToolCallRecord{Intent: in, Params: p, PinId: "pin_1"}
	}
	tests := []struct {
		name  string
		ent   string
		calls []*investigationv1.ToolCallRecord
		want  []string
	}{
		{"nothing read yet", "deployment/shop/cart", nil, []string{intentDeploys, intentCommits}},
		{"its deploys read", "deployment/shop/cart", []*investigationv1.ToolCallRecord{ran(intentDeploys, map[string]any{"service": "cart"})}, []string{intentCommits}},
		{"every service's commits read", "deployment/shop/cart", []*investigationv1.ToolCallRecord{ran(intentCommits, map[string]any{})}, []string{intentDeploys}},
		{"another service's read", "deployment/shop/cart", []*investigationv1.ToolCallRecord{ran(intentDeploys, map[string]any{"service": "search"})}, []string{intentDeploys, intentCommits}},
		{"a pod has no history of its own", "pod/shop/cart-1", nil, nil},
		{"a node has none either", "node/ip-10-0-0-1", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: tc.calls}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			var got []string
			for _, c := range h.svc.entityFollowUps(testCtx(t), st, tc.ent) {
				if c.Intent == intentDeploys || c.Intent == intentCommits {
					if c.Params["service"] != "cart" {
						t.Errorf("%s for %v, want service cart", c.Intent, c.Params)
					}
					got = append(got, c.Intent)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("change follow-ups %v, want %v", got, tc.want)
			}
		})
	}
}

// A suspect node: what was logged about it anywhere is read next.
func TestEntityFollowUpsSearchTheSuspectNode(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s"}, rc: &evidencev1.RouterContext{}}
	h.svc.defs = nil
	calls := h.svc.entityFollowUps(testCtx(t), st, "node/ip-10-0-0-1")
	if len(calls) != 1 || calls[0].Intent != intentSearchLogs || calls[0].Params["query"] != `"ip-10-0-0-1"` || calls[0].Params["namespace"] != "all" {
		t.Fatalf("follow-ups %+v, want one cluster-wide search naming the node", calls)
	}
}

// A healthy reading's context: the lines that name the target's workload,
// anywhere, over the days before, and the lines that name the alert
// itself; each once; the alert's service when the reading names no
// workload.
func TestContextSearchOfAHealthyReading(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}}})
	ran := func(params map[string]any) *investigationv1.ToolCallRecord {
		p, _ := structpb.NewStruct(params)
		return &investigationv1.ToolCallRecord{Intent: intentSearchLogs, Params: p, PinId: "pin_1"}
	}
	tests := []struct {
		name  string
		ent   string
		calls []*investigationv1.ToolCallRecord
		want  string // the query, "" for no call
	}{
		{"a workload", "deployment/shop/cart-api", nil, `"cart-api"`},
		{"a node", "node/ip-10-0-0-1", nil, `"ip-10-0-0-1"`},
		{"a pod reads as the alert's service", "pod/shop/cart-api-6d7f-ab1cd", nil, `"checkout"`},
		{"already searched", "deployment/shop/cart-api", []*investigationv1.ToolCallRecord{ran(map[string]any{"namespace": "all", "query": `"cart-api"`, "since_minutes": float64(contextLookback)})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: tc.calls, Alert: &investigationv1.Alert{Service: "checkout", AlertName: "CheckoutLatencyHigh"}}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			cs := h.svc.contextSearches(testCtx(t), st, tc.ent)
			var got []string
			for _, c := range cs {
				if c.Params["namespace"] != "all" || c.Params["since_minutes"] != contextLookback {
					t.Errorf("params %v, want a cluster-wide search over %d minutes", c.Params, contextLookback)
				}
				got = append(got, c.Params["query"].(string))
			}
			want := []string{`"CheckoutLatencyHigh"`}
			if tc.want != "" {
				want = append([]string{tc.want}, want...)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("searches %v, want %v", got, want)
			}
		})
	}
}

// A healthy reading also searches the distinctive words of its workload's
// name, any of them, anywhere: other systems name what they did to the
// workload's objects by those words. A name of one distinctive word, an
// entity that is no workload and a search already run ask nothing.
func TestNameWordSearch(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}}})
	ran := func(q string) *investigationv1.ToolCallRecord {
		p, _ := structpb.NewStruct(map[string]any{"namespace": "all", "query": q, "since_minutes": float64(contextLookback)})
		return &investigationv1.ToolCallRecord{Intent: intentSearchLogs, Params: p, PinId: "pin_1"}
	}
	for _, tc := range []struct {
		name, ent string
		calls     []*investigationv1.ToolCallRecord
		want      string
	}{
		{"two words", "deployment/pilots/pilot-roster", nil, `"pilot" OR "roster"`},
		{"structural words dropped", "statefulset/shop/orders-cache-api", nil, ""},
		{"three words", "deployment/ops/score-ingest-relay", nil, `"score" OR "ingest" OR "relay"`},
		{"no workload", "node/ip-10-0-0-1", nil, ""},
		{"already searched", "deployment/pilots/pilot-roster", []*investigationv1.ToolCallRecord{ran(`"pilot" OR "roster"`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: tc.calls}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			cs := h.svc.nameWordSearch(testCtx(t), st, tc.ent)
			got := ""
			if len(cs) == 1 {
				got = cs[0].Params["query"].(string)
				if cs[0].Params["namespace"] != "all" || cs[0].Params["since_minutes"] != contextLookback {
					t.Errorf("params %v", cs[0].Params)
				}
			} else if len(cs) > 1 {
				t.Fatalf("%d calls", len(cs))
			}
			if got != tc.want {
				t.Errorf("query %q, want %q", got, tc.want)
			}
		})
	}
}

// An error's history is searched by its signature, anywhere, over 30
// days, once; a short or empty signature is not searched.
func TestSignatureSearch(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}}})
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s"}, rc: &evidencev1.RouterContext{}}
	h.svc.defs = nil
	cs := h.svc.signatureSearch(testCtx(t), st, "ClientAbortException")
	if len(cs) != 1 || cs[0].Params["query"] != `"ClientAbortException"` || cs[0].Params["namespace"] != "all" || cs[0].Params["since_minutes"] != signatureLookback {
		t.Fatalf("calls %+v, want one cluster-wide search of the signature over 30 days", cs)
	}
	if cs := h.svc.signatureSearch(testCtx(t), st, "Err"); len(cs) != 0 {
		t.Errorf("a short signature was searched: %+v", cs)
	}
}

// A healthy reading reads the cluster's events once.
func TestClusterEvents(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentEvents, ParamsSchema: []*evidencev1.ToolParam{{Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s"}, rc: &evidencev1.RouterContext{}}
	h.svc.defs = nil
	cs := h.svc.clusterEvents(testCtx(t), st)
	if len(cs) != 1 || cs[0].Params["namespace"] != "all" {
		t.Fatalf("calls %+v, want one cluster-wide event listing", cs)
	}
	p, _ := structpb.NewStruct(map[string]any{"namespace": "all"})
	st.rec.ToolCalls = []*investigationv1.ToolCallRecord{{Intent: intentEvents, Params: p, PinId: "pin_1"}}
	if cs := h.svc.clusterEvents(testCtx(t), st); len(cs) != 0 {
		t.Errorf("listed again after it ran: %+v", cs)
	}
}

// A pod a listing shows Failed (a migration Job's run) has its logs read
// next, unless a call read them; a running pod does not.
func TestFailedPodLogs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentPodLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "pod", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	mds := factsStruct(t, facts.KeyPods, []facts.Pod{
		{Namespace: "rentals", Name: "toy-api-migrate-302-2lq9d", Phase: "Failed"},
		{Namespace: "rentals", Name: "toy-api-8f6b7c4d9-22hnd", Phase: "Running", Ready: true},
	})
	pin := &evidencev1.EvidencePin{Id: "pin_pods", Metadata: mds}
	read, _ := structpb.NewStruct(map[string]any{"namespace": "rentals", "pod": "toy-api-migrate-302-2lq9d"})
	for _, tc := range []struct {
		name  string
		calls []*investigationv1.ToolCallRecord
		want  []string
	}{
		{"unread", nil, []string{"toy-api-migrate-302-2lq9d"}},
		{"already read", []*investigationv1.ToolCallRecord{{Intent: intentPodLogs, Params: read, PinId: "pin_1"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: tc.calls}, rc: &evidencev1.RouterContext{}, pins: []*evidencev1.EvidencePin{pin}}
			h.svc.defs = nil
			var got []string
			for _, c := range h.svc.failedPodLogs(testCtx(t), st) {
				got = append(got, fmt.Sprint(c.Params["pod"]))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("failedPodLogs = %v, want %v", got, tc.want)
			}
		})
	}
}

// A healthy reading of no target reads the logs of the workloads a
// cluster-wide listing found, applications before system pods, at most
// maxUntargetedLogs, a bare pod by its own name, none read twice.
func TestUntargetedLogs(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentPodLogs, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "pod", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	mds := factsStruct(t, facts.KeyPods, []facts.Pod{
		{Namespace: "kube-system", Name: "coredns-6d4b75cb6d-85sd8", Workload: "coredns", Phase: "Running", Ready: true},
		{Namespace: "crew", Name: "roster-5d6c8b9f47-xxrhp", Workload: "roster", Phase: "Running", Ready: true},
		{Namespace: "crew", Name: "roster-5d6c8b9f47-a1b2c", Workload: "roster", Phase: "Running", Ready: true},
		{Namespace: "crew", Name: "debug-shell", Phase: "Running", Ready: true},
		{Namespace: "crew", Name: "pairing-7f8d9c6b5-qx2lk", Workload: "pairing", Phase: "Running", Ready: true},
	})
	read, _ := structpb.NewStruct(map[string]any{"namespace": "crew", "pod": "pairing-*"})
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: []*investigationv1.ToolCallRecord{{Intent: intentPodLogs, Params: read, PinId: "pin_1"}}},
		rc: &evidencev1.RouterContext{}, pins: []*evidencev1.EvidencePin{{Id: "pin_pods", Metadata: mds}}}
	var got []string
	for _, c := range h.svc.untargetedLogs(testCtx(t), st) {
		got = append(got, fmt.Sprint(c.Params["namespace"], "/", c.Params["pod"]))
	}
	if want := "crew/roster-*,crew/debug-shell,kube-system/coredns-*"; strings.Join(got, ",") != want {
		t.Errorf("untargetedLogs = %v, want %s", got, want)
	}
}

// A suspect pod's own log is read next (with the log search for what its
// clients say of it), unless a call read it; a follow-up is never asked of
// an integration that is not configured: it would fail for certain in
// place of one that could answer.
func TestEntityFollowUpsOfAPodAndUnavailableIntegrations(t *testing.T) {
	for _, tc := range []struct {
		name       string
		searchDown bool
		read       bool
		wantLogs   bool
		wantSearch bool
	}{
		{"both integrations serve", false, false, true, true},
		{"log search not configured", true, false, true, false},
		{"its log already read", false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			search := &evidencev1.ToolDefinition{Intent: intentSearchLogs, Available: !tc.searchDown, ParamsSchema: []*evidencev1.ToolParam{
				{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}}
			if tc.searchDown {
				search.UnavailableReason = "integration not configured: logs"
			}
			h.tools.defs = append(h.tools.defs, search, &evidencev1.ToolDefinition{Intent: intentPodLogs, ParamsSchema: []*evidencev1.ToolParam{
				{Name: "pod", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
			var calls []*investigationv1.ToolCallRecord
			if tc.read {
				p, _ := structpb.NewStruct(map[string]any{"namespace": "shop", "pod": "cart-6d7f8b9c5-ab1cd"})
				calls = append(calls, &investigationv1.ToolCallRecord{Intent: intentPodLogs, Params: p, PinId: "pin_1"})
			}
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: calls}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil
			gotLogs, gotSearch := false, false
			for _, c := range h.svc.entityFollowUps(testCtx(t), st, "pod/shop/cart-6d7f8b9c5-ab1cd") {
				gotLogs = gotLogs || (c.Intent == intentPodLogs && c.Params["pod"] == "cart-6d7f8b9c5-ab1cd")
				gotSearch = gotSearch || c.Intent == intentSearchLogs
			}
			if gotLogs != tc.wantLogs || gotSearch != tc.wantSearch {
				t.Errorf("reads its log = %v (want %v), searches = %v (want %v)", gotLogs, tc.wantLogs, gotSearch, tc.wantSearch)
			}
		})
	}
}

// A reading with no hypothesis, in a cluster where no workload was found
// (an alert from outside it, a check's own namespace): every namespace's
// lines and every service's releases are read next; not when workloads
// were found.
func TestNoTargetReadsEverything(t *testing.T) {
	h, defs := searchHarness(t, intentSearchLogs, intentDeploys)
	has := func(cs []pendingCall, in, key, val string) bool {
		for _, c := range cs {
			if c.Intent == in && fmt.Sprint(c.Params[key]) == val {
				return true
			}
		}
		return false
	}
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: &investigationv1.Alert{AlertName: "production-completeness"}}, rc: &evidencev1.RouterContext{}}
	cs := h.svc.followUpsOf(testCtx(t), st, defs, analysis.Result{})
	if !has(cs, intentSearchLogs, "query", "*") || !has(cs, intentDeploys, "service", "*") {
		t.Fatalf("follow-ups %+v, want every namespace's lines and every service's releases", cs)
	}
	mds := factsStruct(t, facts.KeyPods, []facts.Pod{{Namespace: "shop", Name: "cart-8f6b7c4d9-22hnd", Phase: "Running", Ready: true}})
	st.addPin(&evidencev1.EvidencePin{Id: "pin_pods", Metadata: mds})
	cs = h.svc.followUpsOf(testCtx(t), st, defs, analysis.Result{})
	if has(cs, intentSearchLogs, "query", "*") {
		t.Fatalf("follow-ups %+v: workloads were found, their own evidence comes first", cs)
	}
	// Releases are read before a fault is concluded whatever was found,
	// until a call read one.
	if !has(cs, intentDeploys, "service", "*") {
		t.Fatalf("follow-ups %+v, want every service's releases while none was read", cs)
	}
	st.rec.ToolCalls = append(st.rec.ToolCalls, &investigationv1.ToolCallRecord{Intent: intentDeploys, PinId: "pin_deploys"})
	if cs = h.svc.followUpsOf(testCtx(t), st, defs, analysis.Result{}); has(cs, intentDeploys, "service", "*") {
		t.Fatalf("follow-ups %+v: a release was read, not every service's again", cs)
	}
}

// A healthy reading reads what every system logged over the incident
// window, once: the event that set the symptoms off may name nothing of
// the target.
func TestHealthyReadingReadsTheWindow(t *testing.T) {
	h, defs := searchHarness(t, intentSearchLogs)
	window := func(cs []pendingCall) int {
		n := 0
		for _, c := range cs {
			if c.Intent == intentSearchLogs && c.Params["query"] == "*" && c.Params["namespace"] == "all" {
				n++
			}
		}
		return n
	}
	res := analysis.Result{Healthy: true, Hypotheses: []*investigationv1.Hypothesis{{Entity: "deployment/streaming/hls-edge"}}}
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: &investigationv1.Alert{AlertName: "BrokenPipes", Service: "hls-edge"}}, rc: &evidencev1.RouterContext{}}
	if n := window(h.svc.followUpsOf(testCtx(t), st, defs, res)); n != 1 {
		t.Fatalf("%d window searches, want 1", n)
	}
	for _, c := range h.svc.followUpsOf(testCtx(t), st, defs, res) {
		if c.Intent == intentSearchLogs && c.Params["query"] == "*" && fmt.Sprint(c.Params["since_minutes"]) != fmt.Sprint(healthyLookback) {
			t.Fatalf("window search %+v, want the %d minutes before the alert", c.Params, healthyLookback)
		}
	}
	p, _ := structpb.NewStruct(map[string]any{"namespace": "all", "query": "*", "since_minutes": healthyLookback})
	st.rec.ToolCalls = append(st.rec.ToolCalls, &investigationv1.ToolCallRecord{Intent: intentSearchLogs, Params: p, PinId: "pin_w"})
	if n := window(h.svc.followUpsOf(testCtx(t), st, defs, res)); n != 0 {
		t.Fatalf("the window was searched again (%d)", n)
	}
}

// searchHarness is a harness whose tools serve the intents (available,
// taking a query, a namespace, a service and a look-back), and their
// definitions by intent as followUpsOf takes them.
func searchHarness(t *testing.T, intents ...string) (*harness, map[string]*evidencev1.ToolDefinition) {
	h := newHarness(t, harnessOpts{})
	for _, in := range intents {
		h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: in, Available: true, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING},
			{Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}}})
	}
	defs := map[string]*evidencev1.ToolDefinition{}
	for _, d := range h.tools.defs {
		defs[d.GetIntent()] = d
	}
	h.svc.defs = nil
	return h, defs
}

// factsStruct is the metadata Struct of a pin that carries v under key.
func factsStruct(t *testing.T, key string, v any) *structpb.Struct {
	t.Helper()
	md, err := facts.Put(map[string]any{}, key, v)
	if err != nil {
		t.Fatal(err)
	}
	mds, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return mds
}

// The batch runs before the alert are read in their own logs: the Jobs are
// listed first; then the runs that started within the look-back before the
// alert fired, newest first, not one after it or a day and more before,
// and not one whose pods a call already read.
func TestJobRunLogs(t *testing.T) {
	h, _ := searchHarness(t, intentJobs, intentPodLogs)
	fired := time.Date(2027, 8, 1, 5, 20, 0, 0, time.UTC)
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: &investigationv1.Alert{AlertName: "conversion", StartsAt: timestamppb.New(fired)}}, rc: &evidencev1.RouterContext{}}
	cs := h.svc.jobRunLogs(testCtx(t), st)
	if len(cs) != 1 || cs[0].Intent != intentJobs {
		t.Fatalf("calls %+v, want the Jobs listed first", cs)
	}
	at := func(d time.Duration) *time.Time { x := fired.Add(d); return &x }
	jobs := []facts.Resource{
		{Kind: "Job", Namespace: "pricing", Name: "rates-import-1001", CreatedAt: at(-20 * time.Minute)},
		{Kind: "Job", Namespace: "pricing", Name: "rates-import-0999", CreatedAt: at(-30 * time.Hour)},
		{Kind: "Job", Namespace: "pricing", Name: "report-1002", CreatedAt: at(10 * time.Minute)},
		{Kind: "Job", Namespace: "ops", Name: "cleanup-77", CreatedAt: at(-3 * time.Hour)},
		{Kind: "CronJob", Namespace: "pricing", Name: "rates-import"},
	}
	st.addPin(&evidencev1.EvidencePin{Id: "pin_jobs", Metadata: factsStruct(t, facts.KeyResources, jobs)})
	st.rec.ToolCalls = append(st.rec.ToolCalls,
		&investigationv1.ToolCallRecord{Intent: intentJobs, PinId: "pin_jobs"},
		&investigationv1.ToolCallRecord{Intent: intentPodLogs, PinId: "pin_l", Params: mustStruct(t, `{"namespace": "ops", "pod": "cleanup-77-*"}`)})
	var got []string
	for _, c := range h.svc.jobRunLogs(testCtx(t), st) {
		got = append(got, fmt.Sprint(c.Intent, " ", c.Params["namespace"], "/", c.Params["pod"]))
	}
	if want := []string{intentPodLogs + " pricing/rates-import-1001-*"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}

// A fault is not concluded before the suspect's namespace's ConfigMaps were
// read (a memory policy, a cache lifetime in a ConfigMap nothing mounts),
// once; a healthy reading does not list them.
func TestFaultReadsTheNamespaceConfigMaps(t *testing.T) {
	h, defs := searchHarness(t, intentDescribe, intentSearchLogs)
	listing := func(cs []pendingCall) []pendingCall {
		var out []pendingCall
		for _, c := range cs {
			if c.Intent == intentDescribe && c.Params["kind"] == "configmap" && c.Params["name"] == "*" {
				out = append(out, c)
			}
		}
		return out
	}
	fault := analysis.Result{Hypotheses: []*investigationv1.Hypothesis{{Entity: "service/yarn/redis-shared", Confidence: 0.6}}}
	st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: &investigationv1.Alert{AlertName: "CartErrors", Service: "cart", Namespace: "shop"}}, rc: &evidencev1.RouterContext{}}
	got := listing(h.svc.followUpsOf(testCtx(t), st, defs, fault))
	if len(got) != 1 || got[0].Params["namespace"] != "yarn" {
		t.Fatalf("ConfigMap listings %+v, want one of the suspect's namespace yarn", got)
	}
	p, _ := structpb.NewStruct(map[string]any{"kind": "configmap", "name": "*", "namespace": "yarn"})
	st.rec.ToolCalls = append(st.rec.ToolCalls, &investigationv1.ToolCallRecord{Intent: intentDescribe, Params: p, PinId: "pin_cm"})
	if got := listing(h.svc.followUpsOf(testCtx(t), st, defs, fault)); len(got) != 0 {
		t.Fatalf("the namespace's ConfigMaps were listed again: %+v", got)
	}
	healthy := analysis.Result{Healthy: true, Hypotheses: []*investigationv1.Hypothesis{{Entity: "deployment/shop/cart"}}}
	if got := listing(h.svc.followUpsOf(testCtx(t), st, defs, healthy)); len(got) != 0 {
		t.Fatalf("a healthy reading listed ConfigMaps: %+v", got)
	}
}

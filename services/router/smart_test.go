package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/llm"
)

func query(t *testing.T, h *harness, q string, rc *evidencev1.RouterContext) *routerv1.InvestigateResponse {
	t.Helper()
	resp, err := h.client.Investigate(context.Background(), &routerv1.InvestigateRequest{SessionId: "s1",
		Input: &routerv1.InvestigateRequest_Query{Query: q}, Context: rc})
	if err != nil {
		t.Fatalf("Investigate(%q): %v", q, err)
	}
	return resp
}

func TestSmartPathDeterministic(t *testing.T) {
	h := newHarness(t)
	noPods := testContext()
	noPods.PodNames = nil
	tests := []struct {
		q          string
		rc         *evidencev1.RouterContext
		wantIntent string
		want       map[string]any
		contains   map[string]string // param -> substring
		companions []string
	}{
		{q: "get me the auth pod logs", wantIntent: "fetch_pod_logs", want: map[string]any{"pod": "auth-5b6q9", "namespace": "payments"}},
		{q: "get me the auth pod logs", rc: noPods, wantIntent: "fetch_pod_logs", want: map[string]any{"pod": "auth-*", "namespace": "payments"}},
		{q: "show logs of the previous container of payments-api", wantIntent: "fetch_pod_logs",
			want: map[string]any{"pod": "payments-api-6c9f7d-*", "previous": true, "namespace": "payments"}},
		{q: "check DNS in this namespace", wantIntent: "search_logs", want: map[string]any{"namespace": "payments"},
			contains: map[string]string{"query": "no such host"}, companions: []string{"get_events"}},
		{q: "show warning events for the last 30 minutes", wantIntent: "get_events",
			want: map[string]any{"since_minutes": 30.0, "type": "Warning", "namespace": "payments"}},
		{q: "describe deployment checkout", wantIntent: "describe_resource",
			want: map[string]any{"kind": "deployment", "name": "checkout", "namespace": "payments"}},
		{q: "describe the auth pod", wantIntent: "describe_resource", want: map[string]any{"kind": "pod", "name": "auth-5b6q9"}},
		{q: "what's the status of pods in shop", wantIntent: "check_pod_status", want: map[string]any{"namespace": "shop"}},
		{q: "is the auth pod crashing?", wantIntent: "check_pod_status", want: map[string]any{"namespace": "payments"}},
		{q: "cpu of checkout", wantIntent: "query_prometheus",
			contains: map[string]string{"query": `container_cpu_usage_seconds_total{pod=~"checkout-.*"`}},
		{q: "p95 latency of checkout over the last hour", wantIntent: "query_prometheus", want: map[string]any{"range_minutes": 60.0},
			contains: map[string]string{"query": `histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{service="checkout"}`}},
		{q: "error rate of payments-api", wantIntent: "query_prometheus",
			contains: map[string]string{"query": `http_requests_total{service="payments-api",code=~"5.."}`}},
		{q: "any recent deploys?", wantIntent: "get_deploy_history", want: map[string]any{"service": "payments-api"}},
		{q: "what changed in checkout in the last 2 hours", wantIntent: "get_deploy_history", want: map[string]any{"service": "checkout", "since": "120m"}},
		{q: "show the commits of auth", wantIntent: "get_commits", want: map[string]any{"service": "auth"}},
		{q: "search logs for connection refused", wantIntent: "search_logs", want: map[string]any{"query": "connection refused"}},
		{q: `find "upstream connect error" in the logs`, wantIntent: "search_logs", want: map[string]any{"query": "upstream connect error"}},
		{q: "show me the slow queries on the database", wantIntent: "get_db_top_queries"},
		{q: "any failover events on the db?", wantIntent: "get_db_events"},
		{q: "check node health", wantIntent: "get_node_health"},
		{q: "why is checkout slow?", wantIntent: "query_prometheus",
			contains: map[string]string{"query": `http_request_duration_seconds_bucket{service="checkout"}`}},
		{q: "any errors in auth?", wantIntent: "search_logs", want: map[string]any{"service": "auth", "level": "ERROR", "query": "error"}},
	}
	for _, tc := range tests {
		t.Run(tc.q, func(t *testing.T) {
			rc := tc.rc
			if rc == nil {
				rc = testContext()
			}
			resp := query(t, h, tc.q, rc)
			if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING {
				t.Fatalf("status = %v error=%q answer=%q intent=%q params=%v", resp.GetStatus(), resp.GetError(), resp.GetAnswer(), resp.GetIntent(), resp.GetParams().AsMap())
			}
			if resp.GetIntent() != tc.wantIntent || resp.GetPathUsed() != routerv1.PathUsed_PATH_USED_SMART {
				t.Fatalf("intent = %q path %v, want %q; params %v", resp.GetIntent(), resp.GetPathUsed(), tc.wantIntent, resp.GetParams().AsMap())
			}
			got := resp.GetParams().AsMap()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("param %s = %#v, want %#v (all %v)", k, got[k], v, got)
				}
			}
			for k, sub := range tc.contains {
				if s, _ := got[k].(string); !strings.Contains(s, sub) {
					t.Errorf("param %s = %q, want it to contain %q", k, s, sub)
				}
			}
			for _, c := range tc.companions {
				if !strings.Contains(resp.GetAnswer(), "also running /events") || !strings.Contains(resp.GetAnswer(), c) && !strings.Contains(resp.GetAnswer(), "/events") {
					t.Errorf("answer %q does not mention companion %s", resp.GetAnswer(), c)
				}
			}
		})
	}
}

func TestSmartPathUnresolved(t *testing.T) {
	h := newHarness(t)
	for _, q := range []string{"hello there, how are you?", "what is the meaning of life", "make it faster please"} {
		t.Run(q, func(t *testing.T) {
			resp := query(t, h, q, testContext())
			if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED || resp.GetIntent() != "" || resp.GetPinId() != "" {
				t.Fatalf("resp = %v", resp)
			}
			for _, w := range []string{"could not map", "nothing was run", "/logs", "/promql", "/describe"} {
				if !strings.Contains(resp.GetAnswer(), w) {
					t.Errorf("answer does not contain %q:\n%s", w, resp.GetAnswer())
				}
			}
		})
	}
	h.svc.Wait()
	if n := len(h.tools.calls()); n != 0 {
		t.Errorf("unresolved queries dispatched %d calls", n)
	}
}

func TestSmartPathCompanionDispatch(t *testing.T) {
	h := newHarness(t)
	resp := query(t, h, "check DNS in this namespace", testContext())
	h.svc.Wait()
	calls := h.tools.calls()
	if len(calls) != 2 {
		t.Fatalf("dispatched %d calls, want search_logs + get_events", len(calls))
	}
	intents := map[string]bool{}
	for _, c := range calls {
		intents[c.GetIntent()] = true
		if c.GetParams().AsMap()["namespace"] != "payments" {
			t.Errorf("%s namespace = %v", c.GetIntent(), c.GetParams().AsMap()["namespace"])
		}
	}
	if !intents["search_logs"] || !intents["get_events"] || resp.GetIntent() != "search_logs" {
		t.Errorf("intents = %v, primary %q", intents, resp.GetIntent())
	}
}

func msg(content string) llm.Response {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: content}}
}

func TestSmartPathModel(t *testing.T) {
	tests := []struct {
		name       string
		resp       llm.Response
		err        error
		q          string
		wantStatus routerv1.InvestigateStatus
		wantIntent string
		want       map[string]any
		wantNote   bool
	}{
		{name: "valid pairs", q: "pull the crashed auth container logs",
			resp:       msg(`{"intent":"fetch_pod_logs","params":[{"name":"pod","value":"auth-5b6q9"},{"name":"previous","value":"true"},{"name":"tail_lines","value":""}]}`),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "fetch_pod_logs",
			want: map[string]any{"pod": "auth-5b6q9", "previous": true, "namespace": "payments"}},
		{name: "object params", q: "run a promql for up",
			resp:       msg("```json\n{\"intent\":\"query_prometheus\",\"params\":{\"query\":\"up\",\"range_minutes\":15}}\n```"),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "query_prometheus", want: map[string]any{"query": "up", "range_minutes": 15.0}},
		{name: "tool call form", q: "events please",
			resp:       llm.Response{Message: llm.Message{ToolCalls: []llm.ToolCall{{Name: "get_events", Arguments: `{"since_minutes": 10}`}}}},
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "get_events", want: map[string]any{"since_minutes": 10.0}},
		{name: "garbage falls back to the parser", q: "get me the auth pod logs", resp: msg("Sure! You probably want the logs."),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "fetch_pod_logs", want: map[string]any{"pod": "auth-5b6q9"}, wantNote: true},
		{name: "invented tool is never run", q: "reboot the cluster", resp: msg(`{"intent":"kubectl_delete","params":[]}`),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED},
		{name: "invalid params fall back", q: "describe deployment checkout",
			resp:       msg(`{"intent":"describe_resource","params":[{"name":"kind","value":"spaceship"}]}`),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "describe_resource", want: map[string]any{"kind": "deployment"}, wantNote: true},
		{name: "model error falls back", q: "cpu of checkout", err: errors.Join(llm.ErrTimeout, errors.New("deadline")),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, wantIntent: "query_prometheus", wantNote: true},
		{name: "model says none", q: "sing me a song", resp: msg(`{"intent":"none","params":[]}`),
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &scriptedLLM{resps: []llm.Response{tc.resp}, errs: []error{tc.err}}
			h := newHarness(t, withLLM(p))
			resp := query(t, h, tc.q, testContext())
			if resp.GetStatus() != tc.wantStatus || resp.GetIntent() != tc.wantIntent {
				t.Fatalf("status %v intent %q (error %q answer %q), want %v %q", resp.GetStatus(), resp.GetIntent(), resp.GetError(), resp.GetAnswer(), tc.wantStatus, tc.wantIntent)
			}
			got := resp.GetParams().AsMap()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("param %s = %#v, want %#v", k, got[k], v)
				}
			}
			if _, ok := got["tail_lines"]; ok {
				t.Errorf("empty optional value was kept: %v", got)
			}
			if tc.wantNote != strings.Contains(resp.GetAnswer(), "deterministic parser") {
				t.Errorf("answer %q: fallback note expected=%v", resp.GetAnswer(), tc.wantNote)
			}
			if len(p.reqs) != 1 {
				t.Fatalf("model called %d times", len(p.reqs))
			}
			sys := p.reqs[0].Messages[0].Content
			for _, w := range []string{"Active namespace: payments", "Known pods: auth-5b6q9", "fetch_pod_logs (/logs)", "kind: select, required, one of [pod, deployment"} {
				if !strings.Contains(sys, w) {
					t.Errorf("prompt lacks %q", w)
				}
			}
			if p.reqs[0].ResponseSchema == nil || p.reqs[0].Messages[1].Content != tc.q {
				t.Errorf("request = %+v", p.reqs[0])
			}
		})
	}
}

func TestRouteSchemaIsStrictCompatible(t *testing.T) {
	if _, err := llm.NormalizeStrict(routeSchema); err != nil {
		t.Fatalf("route schema rejected by the strict normalizer: %v", err)
	}
}

func TestQueryWithSlashTakesFastPath(t *testing.T) {
	p := &scriptedLLM{}
	h := newHarness(t, withLLM(p))
	resp := query(t, h, " /events since_minutes=15", testContext())
	if resp.GetPathUsed() != routerv1.PathUsed_PATH_USED_FAST || resp.GetIntent() != "get_events" || len(p.reqs) != 0 {
		t.Fatalf("resp = %v, model calls %d", resp, len(p.reqs))
	}
}

func BenchmarkSmartPathParse(b *testing.B) {
	reg := NewRegistry(testRegistry())
	rc := testContext()
	b.ReportAllocs()
	for b.Loop() {
		if p := ParseNatural(reg, "show logs of the previous container of payments-api", rc); p == nil {
			b.Fatal("unresolved")
		}
	}
}

package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in      string
		want    []token
		wantErr string
	}{
		{in: `namespace=payment pod=auth-*`, want: []token{{key: "namespace", val: "payment", hasKey: true}, {key: "pod", val: "auth-*", hasKey: true}}},
		{in: `query="connection refused" level=ERROR`, want: []token{{key: "query", val: "connection refused", hasKey: true, quoted: true}, {key: "level", val: "ERROR", hasKey: true}}},
		{in: `'a b' "c \"d\""`, want: []token{{val: "a b", quoted: true}, {val: `c "d"`, quoted: true}}},
		{in: `rate(http_requests_total{code="5 00"}[5m])`, want: []token{{val: `rate(http_requests_total{code="5 00"}[5m])`}}},
		{in: `up==1 --previous`, want: []token{{val: "up==1"}, {key: "previous", val: "true", hasKey: true}}},
		{in: `x=~"a.*"`, want: []token{{val: `x=~"a.*"`}}},
		{in: `query="unterminated`, wantErr: "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := tokenize(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("token %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestInvestigateCommand(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tests := []struct {
		name       string
		command    string
		rc         *evidencev1.RouterContext
		wantIntent string
		wantParams map[string]any
		wantFilled []string
		wantCode   codes.Code
		wantErr    []string // substrings of the error message
		wantStatus routerv1.InvestigateStatus
	}{
		{name: "seed example", command: "/logs namespace=payment pod=auth-*", wantIntent: "fetch_pod_logs",
			wantParams: map[string]any{"namespace": "payment", "pod": "auth-*"}},
		{name: "quoted value with spaces", command: `/search query="connection refused" level=error since_minutes=30`, wantIntent: "search_logs",
			wantParams: map[string]any{"query": "connection refused", "level": "ERROR", "since_minutes": 30.0, "index": "logs-*"}, wantFilled: []string{"index"}},
		{name: "booleans yes/no and numbers", command: "/logs pod=auth-5b6q9 previous=yes tail_lines=200", wantIntent: "fetch_pod_logs",
			wantParams: map[string]any{"namespace": "payments", "pod": "auth-5b6q9", "previous": true, "tail_lines": 200.0}, wantFilled: []string{"namespace"}},
		{name: "boolean false and bare flag", command: "/logs previous=no tail_lines=50", wantIntent: "fetch_pod_logs",
			wantParams: map[string]any{"namespace": "payments", "pod": "auth-5b6q9", "previous": false, "tail_lines": 50.0},
			rc:         &evidencev1.RouterContext{ActiveNamespace: "payments", ActivePod: "auth-5b6q9"}, wantFilled: []string{"namespace", "pod"}},
		{name: "bare boolean flag", command: "/logs auth-5b6q9 previous", wantIntent: "fetch_pod_logs",
			wantParams: map[string]any{"namespace": "payments", "pod": "auth-5b6q9", "previous": true}},
		{name: "duration for minutes", command: "/events since_minutes=2h", wantIntent: "get_events",
			wantParams: map[string]any{"namespace": "payments", "since_minutes": 120.0}},
		{name: "positional PromQL with quotes and spaces", command: `/promql sum by (code) (rate(http_requests_total{code=~"5.."}[5m]))`, wantIntent: "query_prometheus",
			wantParams: map[string]any{"query": `sum by (code) (rate(http_requests_total{code=~"5.."}[5m]))`}},
		{name: "positional kind and name", command: "/describe deployment checkout", wantIntent: "describe_resource",
			wantParams: map[string]any{"kind": "deployment", "name": "checkout", "namespace": "payments"}},
		{name: "intent as command and alias", command: "/fetch_pod_logs ns=shop pod=checkout-84d5-xyz12", wantIntent: "fetch_pod_logs",
			wantParams: map[string]any{"namespace": "shop", "pod": "checkout-84d5-xyz12"}},
		{name: "unknown command with close match", command: "/lgs pod=x", wantCode: codes.InvalidArgument,
			wantErr: []string{`unknown command "/lgs"`, "did you mean /logs"}},
		{name: "unknown parameter", command: "/logs namespace=payments podname2=x", wantCode: codes.InvalidArgument,
			wantErr: []string{`unknown parameter "podname2"`, "namespace (string, required)", "tail_lines (number)"}},
		{name: "wrong number", command: "/logs tail_lines=lots", wantCode: codes.InvalidArgument,
			wantErr: []string{`"tail_lines"`, "expects a number", `"lots"`}},
		{name: "wrong boolean", command: "/logs previous=maybe", wantCode: codes.InvalidArgument,
			wantErr: []string{`"previous"`, "expects a boolean"}},
		{name: "option not in options", command: "/describe kind=widget name=x", wantCode: codes.InvalidArgument,
			wantErr: []string{`invalid value "widget"`, `"kind"`, "pod, deployment, service"}},
		{name: "duplicate parameter", command: "/logs pod=a pod=b", wantCode: codes.InvalidArgument, wantErr: []string{`"pod" given twice`}},
		{name: "unexpected positional", command: "/monitors everything", wantCode: codes.InvalidArgument, wantErr: []string{`unexpected argument "everything"`}},
		{name: "unterminated quote", command: `/search query="oops`, wantCode: codes.InvalidArgument, wantErr: []string{"unterminated"}},
		{name: "missing context is unresolved", command: "/pods", rc: &evidencev1.RouterContext{},
			wantIntent: "check_pod_status", wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED,
			wantErr: []string{"namespace", "active namespace", "active_namespace"}},
		{name: "missing plain required param", command: "/describe kind=pod", wantIntent: "describe_resource",
			wantStatus: routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED, wantErr: []string{"name (not given)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := tc.rc
			if rc == nil {
				rc = testContext()
			}
			resp, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{
				SessionId: "s1", Input: &routerv1.InvestigateRequest_Command{Command: tc.command}, Context: rc})
			if tc.wantCode != codes.OK {
				if status.Code(err) != tc.wantCode {
					t.Fatalf("code = %v (%v), want %v", status.Code(err), err, tc.wantCode)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(status.Convert(err).Message(), w) {
						t.Errorf("error %q does not contain %q", status.Convert(err).Message(), w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetIntent() != tc.wantIntent {
				t.Fatalf("intent = %q, want %q", resp.GetIntent(), tc.wantIntent)
			}
			wantStatus := tc.wantStatus
			if wantStatus == 0 {
				wantStatus = routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING
			}
			if resp.GetStatus() != wantStatus {
				t.Fatalf("status = %v (%s), want %v", resp.GetStatus(), resp.GetError(), wantStatus)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(resp.GetError(), w) {
					t.Errorf("error %q does not contain %q", resp.GetError(), w)
				}
			}
			if wantStatus == routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING {
				if resp.GetPinId() == "" || resp.GetPathUsed() != routerv1.PathUsed_PATH_USED_FAST {
					t.Errorf("pin_id %q path %v", resp.GetPinId(), resp.GetPathUsed())
				}
				if !strings.HasPrefix(resp.GetCommand(), "/") {
					t.Errorf("command = %q", resp.GetCommand())
				}
			} else if resp.GetPinId() != "" {
				t.Errorf("unresolved request got pin %q", resp.GetPinId())
			}
			if tc.wantParams != nil {
				got := resp.GetParams().AsMap()
				if len(got) != len(tc.wantParams) {
					t.Errorf("params = %v, want %v", got, tc.wantParams)
				}
				for k, v := range tc.wantParams {
					if got[k] != v {
						t.Errorf("param %s = %#v, want %#v", k, got[k], v)
					}
				}
			}
			if tc.wantFilled != nil && strings.Join(resp.GetFilledFromContext(), ",") != strings.Join(tc.wantFilled, ",") {
				t.Errorf("filled = %v, want %v", resp.GetFilledFromContext(), tc.wantFilled)
			}
		})
	}
}

func TestInvestigateDispatch(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	params, _ := structpb.NewStruct(map[string]any{"pod": "auth-5b6q9", "previous": true})
	resp, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1",
		Input:   &routerv1.InvestigateRequest_QuickAction{QuickAction: &routerv1.QuickActionPayload{Intent: "fetch_pod_logs", Params: params}},
		Context: testContext()})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING || resp.GetPinId() == "" {
		t.Fatalf("resp = %v", resp)
	}
	cmd, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1",
		Input: &routerv1.InvestigateRequest_Command{Command: "/pods"}, Context: testContext()})
	if err != nil {
		t.Fatal(err)
	}
	h.svc.Wait()
	calls := h.tools.calls()
	if len(calls) != 2 {
		t.Fatalf("executed %d calls, want 2", len(calls))
	}
	byPin := map[string]int{}
	for i, c := range calls {
		byPin[c.GetPinId()] = i
	}
	for _, c := range calls {
		if !c.GetOmitAnswer() {
			t.Errorf("call %s asks for the whole answer, which the router does not read", c.GetPinId())
		}
	}
	qa := calls[byPin[resp.GetPinId()]]
	if qa.GetTriggeredBy() != evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION || qa.GetIntent() != "fetch_pod_logs" ||
		qa.GetParams().AsMap()["namespace"] != "payments" || qa.GetContext().GetActiveNamespace() != "payments" || qa.GetSessionId() != "s1" {
		t.Errorf("quick action call = %v", qa)
	}
	cc := calls[byPin[cmd.GetPinId()]]
	if cc.GetTriggeredBy() != evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT || cc.GetIntent() != "check_pod_status" || !cc.GetNoCache() {
		t.Errorf("command call = %v", cc)
	}
}

func TestInvestigateQuickActionValidation(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		intent  string
		params  map[string]any
		wantErr []string
	}{
		{"unknown intent", "fetch_pod_log", nil, []string{`unknown intent "fetch_pod_log"`, "fetch_pod_logs"}},
		{"unknown param", "get_events", map[string]any{"severity": "high"}, []string{`unknown parameter "severity"`, "since_minutes"}},
		{"number as text", "get_events", map[string]any{"since_minutes": "soon"}, []string{`"since_minutes"`, "expects a number"}},
		{"bool as number", "fetch_pod_logs", map[string]any{"previous": 7.0}, []string{`"previous"`, "expects a boolean"}},
		{"list value", "search_logs", map[string]any{"query": []any{"a"}}, []string{`"query"`, "got a list"}},
		{"option", "search_logs", map[string]any{"query": "x", "level": "LOUD"}, []string{`invalid value "LOUD"`, "ERROR, WARN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := structpb.NewStruct(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1", Context: testContext(),
				Input: &routerv1.InvestigateRequest_QuickAction{QuickAction: &routerv1.QuickActionPayload{Intent: tc.intent, Params: p}}})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(status.Convert(err).Message(), w) {
					t.Errorf("%q does not contain %q", status.Convert(err).Message(), w)
				}
			}
		})
	}
	if len(h.tools.calls()) != 0 {
		t.Errorf("invalid quick actions dispatched %d calls", len(h.tools.calls()))
	}
}

func TestInvestigateRequestErrors(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tests := []struct {
		name string
		req  *routerv1.InvestigateRequest
		code codes.Code
		want string
	}{
		{"none set", &routerv1.InvestigateRequest{SessionId: "s1"}, codes.InvalidArgument, "one of command, query or quick_action is required"},
		{"empty command", &routerv1.InvestigateRequest{SessionId: "s1", Input: &routerv1.InvestigateRequest_Command{Command: "  "}}, codes.InvalidArgument, "command is empty"},
		{"empty query", &routerv1.InvestigateRequest{SessionId: "s1", Input: &routerv1.InvestigateRequest_Query{Query: ""}}, codes.InvalidArgument, "query is empty"},
		{"no session", &routerv1.InvestigateRequest{Input: &routerv1.InvestigateRequest_Query{Query: "x"}}, codes.InvalidArgument, "session_id is required"},
		{"command too large", &routerv1.InvestigateRequest{SessionId: "s1", Input: &routerv1.InvestigateRequest_Command{Command: "/search " + strings.Repeat("x", 4100)}}, codes.InvalidArgument, "the limit is 4096"},
		{"query too large", &routerv1.InvestigateRequest{SessionId: "s1", Input: &routerv1.InvestigateRequest_Query{Query: strings.Repeat("logs ", 900)}}, codes.InvalidArgument, "the limit is 4096"},
		{"no intent", &routerv1.InvestigateRequest{SessionId: "s1", Input: &routerv1.InvestigateRequest_QuickAction{QuickAction: &routerv1.QuickActionPayload{}}}, codes.InvalidArgument, "quick_action.intent is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.Investigate(ctx, tc.req)
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.want) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.code, tc.want)
			}
		})
	}
}

func TestInvestigateUnavailable(t *testing.T) {
	ctx := context.Background()
	t.Run("tool not configured", func(t *testing.T) {
		h := newHarness(t)
		h.tools.tools[1].Available = false
		h.tools.tools[1].UnavailableReason = "integration not configured: prometheus"
		resp, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1",
			Input: &routerv1.InvestigateRequest_Command{Command: "/promql up"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR || !strings.Contains(resp.GetError(), "prometheus") {
			t.Fatalf("resp = %v", resp)
		}
	})
	t.Run("tools service down", func(t *testing.T) {
		h := newHarness(t)
		h.tools.setDown(true)
		_, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1",
			Input: &routerv1.InvestigateRequest_Command{Command: "/pods"}})
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "tools service unreachable") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("stale registry served while down", func(t *testing.T) {
		h := newHarness(t, withConfig(func(c *Config) { c.RegistryTTL = 1 }))
		if _, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s1"}); err != nil {
			t.Fatal(err)
		}
		h.tools.setDown(true)
		if _, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s1"}); err != nil {
			t.Fatalf("stale registry not served: %v", err)
		}
	})
	t.Run("sync dispatch reports tool failure", func(t *testing.T) {
		h := newHarness(t, withConfig(func(c *Config) { c.SyncDispatch = true }))
		h.tools.execErr = status.Error(codes.Internal, "kube api exploded")
		resp, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1", Context: testContext(),
			Input: &routerv1.InvestigateRequest_Command{Command: "/pods"}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR || !strings.Contains(resp.GetError(), "kube api exploded") {
			t.Fatalf("resp = %v", resp)
		}
	})
}

func TestRegistryCacheTTL(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for range 3 {
		if _, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s1"}); err != nil {
			t.Fatal(err)
		}
	}
	if h.tools.lists != 1 {
		t.Errorf("ListToolDefinitions called %d times within the TTL, want 1", h.tools.lists)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"budget", func(c *Config) { c.ToolBudget = 0 }, "router.tool-budget"},
		{"schemas", func(c *Config) { c.MaxToolSchemas = -1 }, "router.max-tool-schemas"},
		{"reserve above cap", func(c *Config) { c.MaxToolSchemas = 2; c.SecondaryReserve = 3 }, "router.secondary-reserve"},
		{"input", func(c *Config) { c.MaxInputBytes = 0 }, "router.max-input-bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	d := DefaultConfig()
	if d.ToolBudget != 10 || d.MaxToolSchemas != 32 || d.SecondaryReserve != 3 || d.MaxInputBytes != 4096 {
		t.Errorf("defaults = %+v", d)
	}
	if _, err := New(DefaultConfig(), Deps{}); err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "Deps.Tools") {
		t.Errorf("New without tools client: %v", err)
	}
}

func BenchmarkFastPathParse(b *testing.B) {
	reg := NewRegistry(testRegistry())
	rc := testContext()
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCommand(reg, `/logs namespace=payments pod="auth-*" previous=yes tail_lines=200`)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := FillFromContext(c, rc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFailedDispatchPublishesPin(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, withBus(b))
	h.tools.execErr = status.Error(codes.Unavailable, "tools service restarting")
	resp, err := h.client.Investigate(context.Background(), &routerv1.InvestigateRequest{SessionId: "s9", Context: testContext(),
		Input: &routerv1.InvestigateRequest_Command{Command: "/pods"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING {
		t.Fatalf("resp = %v", resp)
	}
	h.svc.Wait()
	evs, err := b.Replay(context.Background(), bus.SessionFilter("s9"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d events, want the failed pin", len(evs))
	}
	pin := evs[0].GetPin().GetPin()
	if pin.GetId() != resp.GetPinId() || pin.GetSuccess() || !strings.Contains(pin.GetError(), "restarting") ||
		pin.GetSource() != evidencev1.Source_SOURCE_MANUAL || pin.GetSourceTool() != "check_pod_status" {
		t.Errorf("pin = %v", pin)
	}
}

func TestInflightLimit(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.MaxInflight = 1 }))
	h.tools.block = make(chan struct{})
	req := &routerv1.InvestigateRequest{SessionId: "s1", Context: testContext(), Input: &routerv1.InvestigateRequest_Command{Command: "/pods"}}
	if _, err := h.client.Investigate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, err := h.client.Investigate(context.Background(), req)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "limit 1") {
		t.Fatalf("second call: %v, want ResourceExhausted", err)
	}
	close(h.tools.block)
	h.svc.Wait()
	if _, err := h.client.Investigate(context.Background(), req); err != nil {
		t.Fatalf("after the first call finished: %v", err)
	}
}

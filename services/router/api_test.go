package router

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/paging"
)

func toolByIntent(ts []*evidencev1.ToolDefinition, intent string) *evidencev1.ToolDefinition {
	for _, t := range ts {
		if t.GetIntent() == intent {
			return t
		}
	}
	return nil
}

func TestListTools(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.tools.tools[1].Available = false // query_prometheus
	h.tools.tools[1].UnavailableReason = ""
	h.tools.tools[1].Integrations = []string{"prometheus"}

	t.Run("no context", func(t *testing.T) {
		resp, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "fresh"})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetTools()) != len(testRegistry()) {
			t.Fatalf("%d tools", len(resp.GetTools()))
		}
		logs := toolByIntent(resp.GetTools(), "fetch_pod_logs")
		if logs.GetAvailable() || !strings.Contains(logs.GetUnavailableReason(), "requires context: namespace") {
			t.Errorf("fetch_pod_logs available=%v reason=%q", logs.GetAvailable(), logs.GetUnavailableReason())
		}
		prom := toolByIntent(resp.GetTools(), "query_prometheus")
		if prom.GetAvailable() || !strings.Contains(prom.GetUnavailableReason(), "integration not configured (prometheus)") {
			t.Errorf("query_prometheus available=%v reason=%q", prom.GetAvailable(), prom.GetUnavailableReason())
		}
		if s := toolByIntent(resp.GetTools(), "search_logs"); !s.GetAvailable() || s.GetUsage() != "/search query=<query>" {
			t.Errorf("search_logs = %v usage %q", s.GetAvailable(), s.GetUsage())
		}
	})
	t.Run("context remembered from a request", func(t *testing.T) {
		if _, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1", Context: testContext(),
			Input: &routerv1.InvestigateRequest_Query{Query: "hello"}}); err != nil {
			t.Fatal(err)
		}
		resp, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		logs := toolByIntent(resp.GetTools(), "fetch_pod_logs")
		if !logs.GetAvailable() {
			t.Fatalf("fetch_pod_logs unavailable: %s", logs.GetUnavailableReason())
		}
		pod := findParam(logs, "pod")
		if !strings.Contains(strings.Join(pod.GetOptions(), ","), "auth-5b6q9") {
			t.Errorf("pod options = %v", pod.GetOptions())
		}
		kind := findParam(toolByIntent(resp.GetTools(), "describe_resource"), "kind")
		if len(kind.GetOptions()) != 7 {
			t.Errorf("static options changed: %v", kind.GetOptions())
		}
		// the cached registry itself is not modified
		if len(findParam(toolByIntent(h.tools.tools, "fetch_pod_logs"), "pod").GetOptions()) != 0 {
			t.Error("session options leaked into the shared registry")
		}
	})
	t.Run("context in metadata and pins", func(t *testing.T) {
		h.brain.pins["s2"] = []*evidencev1.EvidencePin{podPin(t, "p1", "shop", "cart-7d-abc", true, 5)}
		b, _ := protojson.Marshal(&evidencev1.RouterContext{ActiveNamespace: "shop"})
		mctx := metadata.AppendToOutgoingContext(ctx, ContextMetadataKey, string(b))
		resp, err := h.client.ListTools(mctx, &routerv1.ListToolsRequest{SessionId: "s2"})
		if err != nil {
			t.Fatal(err)
		}
		logs := toolByIntent(resp.GetTools(), "fetch_pod_logs")
		if !logs.GetAvailable() || !strings.Contains(strings.Join(findParam(logs, "pod").GetOptions(), ","), "cart-7d-abc") {
			t.Errorf("fetch_pod_logs = %v", logs)
		}
	})
	t.Run("a cluster-wide pin names no namespace", func(t *testing.T) {
		// The session's pins: its pods in shop, and a search across every
		// namespace. Its namespace is still shop, the one it knows.
		h.brain.pins["s4"] = []*evidencev1.EvidencePin{podPin(t, "p1", "shop", "cart-7d-abc", true, 5),
			{Id: "p2", SourceTool: "search_logs", Namespace: "all", Claim: "3 lines match"}}
		resp, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s4"})
		if err != nil {
			t.Fatal(err)
		}
		logs := toolByIntent(resp.GetTools(), "fetch_pod_logs")
		if !logs.GetAvailable() {
			t.Fatalf("fetch_pod_logs unavailable: %s", logs.GetUnavailableReason())
		}
		if opts := findParam(logs, "namespace").GetOptions(); strings.Contains(strings.Join(opts, ","), "all") {
			t.Errorf("namespace options = %v, want no cluster-wide wildcard", opts)
		}
	})
	t.Run("bad metadata", func(t *testing.T) {
		mctx := metadata.AppendToOutgoingContext(ctx, ContextMetadataKey, "{not json")
		_, err := h.client.ListTools(mctx, &routerv1.ListToolsRequest{SessionId: "s3"})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestChat(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.brain.pins["s1"] = []*evidencev1.EvidencePin{
		{Id: "pin-a", Claim: "Pod auth-5b6q9 was OOMKilled 4 times", SourceTool: "check_pod_status", Severity: evidencev1.Severity_SEVERITY_HIGH},
		{Id: "pin-b", Claim: "No errors in checkout logs", SourceTool: "search_logs", Severity: evidencev1.Severity_SEVERITY_INFO},
	}
	tests := []struct {
		name       string
		msg        string
		wantStatus routerv1.InvestigateStatus
		wantPath   routerv1.PathUsed
		wantReply  []string
		wantCited  int
	}{
		{"slash command", "/logs pod=auth-5b6q9 previous=true", routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, routerv1.PathUsed_PATH_USED_FAST,
			[]string{"Running `/logs namespace=payments pod=auth-5b6q9 previous=true` (fetch_pod_logs) as pin pin-", "from your context: namespace"}, 1},
		{"natural language", "check DNS in this namespace", routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING, routerv1.PathUsed_PATH_USED_SMART,
			[]string{"(search_logs)", "Also running `/events namespace=payments`"}, 2},
		{"bad command", "/logs tail_lines=many", routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR, routerv1.PathUsed_PATH_USED_FAST,
			[]string{"That command did not run", "expects a number"}, 0},
		{"question about findings", "what do we know so far?", routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED, routerv1.PathUsed_PATH_USED_SMART,
			[]string{"[pin-a] Pod auth-5b6q9 was OOMKilled 4 times"}, 2},
		{"unmappable", "tell me a joke", routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED, routerv1.PathUsed_PATH_USED_SMART,
			[]string{"could not map"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.client.Chat(ctx, &routerv1.ChatRequest{SessionId: "s1", Message: tc.msg, Context: testContext()})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetAction().GetStatus() != tc.wantStatus || resp.GetAction().GetPathUsed() != tc.wantPath {
				t.Fatalf("action = %v", resp.GetAction())
			}
			for _, w := range tc.wantReply {
				if !strings.Contains(resp.GetReply(), w) {
					t.Errorf("reply %q lacks %q", resp.GetReply(), w)
				}
			}
			if len(resp.GetCitedPinIds()) != tc.wantCited {
				t.Errorf("cited %v, want %d", resp.GetCitedPinIds(), tc.wantCited)
			}
			if tc.wantStatus == routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING && resp.GetCitedPinIds()[0] != resp.GetAction().GetPinId() {
				t.Errorf("first cited pin %q != action pin %q", resp.GetCitedPinIds()[0], resp.GetAction().GetPinId())
			}
		})
	}
	if _, err := h.client.Chat(ctx, &routerv1.ChatRequest{SessionId: "s1"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty message: %v", err)
	}
	off := false
	resp, err := h.client.Chat(ctx, &routerv1.ChatRequest{SessionId: "s1", Message: "what do we know so far?", IncludeRecentPins: &off})
	if err != nil || len(resp.GetCitedPinIds()) != 0 || !strings.Contains(resp.GetReply(), "could not map") {
		t.Errorf("include_recent_pins=false: %v %v", resp, err)
	}
}

func TestChatModelAnswer(t *testing.T) {
	p := &scriptedLLM{resps: []llm.Response{msg(`{"intent":"none","params":[]}`), msg("The OOM kills [pin-a] are the strongest signal.")}}
	h := newHarness(t, withLLM(p))
	h.brain.pins["s1"] = []*evidencev1.EvidencePin{{Id: "pin-a", Claim: "Pod auth was OOMKilled", SourceTool: "check_pod_status"}}
	resp, err := h.client.Chat(context.Background(), &routerv1.ChatRequest{SessionId: "s1", Message: "why is auth unhappy?", Context: testContext()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.GetReply(), "[pin-a]") || len(resp.GetCitedPinIds()) != 1 || resp.GetCitedPinIds()[0] != "pin-a" {
		t.Errorf("reply %q cited %v", resp.GetReply(), resp.GetCitedPinIds())
	}
	if len(p.reqs) != 2 || !strings.Contains(p.reqs[1].Messages[0].Content, "[pin-a] Pod auth was OOMKilled") {
		t.Errorf("model requests = %d", len(p.reqs))
	}
}

func podPin(t testing.TB, id, ns, pod string, oom bool, restarts int32) *evidencev1.EvidencePin {
	t.Helper()
	md, err := facts.Put(nil, facts.KeyPods, []facts.Pod{{Namespace: ns, Name: pod, Restarts: restarts, OOMKilled: oom}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := facts.ToStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &evidencev1.EvidencePin{Id: id, SourceTool: "check_pod_status", Namespace: ns, Metadata: st,
		Claim: "pod status", Severity: evidencev1.Severity_SEVERITY_HIGH}
}

func TestListSuggestions(t *testing.T) {
	ctx := context.Background()
	deployMD, _ := facts.Put(nil, facts.KeyDeploys, []facts.Deploy{{Service: "checkout", Revision: "a1b2c3d"}})
	deploySt, _ := facts.ToStruct(deployMD)
	prevParams, _ := structpb.NewStruct(map[string]any{"namespace": "payments", "pod": "auth-5b6q9", "previous": true})
	tests := []struct {
		name      string
		pins      []*evidencev1.EvidencePin
		wantRules []string
		wantChip  map[string]map[string]any // intent -> params subset (first chip of that intent)
		notIntent []string
		max       int
	}{
		{name: "oom", pins: []*evidencev1.EvidencePin{podPin(t, "p1", "payments", "auth-5b6q9", true, 4)},
			wantRules: []string{"oom_killed"},
			wantChip: map[string]map[string]any{
				"fetch_pod_logs":    {"previous": true, "pod": "auth-5b6q9", "namespace": "payments"},
				"describe_resource": {"kind": "pod", "name": "auth-5b6q9"},
			}},
		{name: "crash loop from text", pins: []*evidencev1.EvidencePin{{Id: "p2", Namespace: "payments", SourceTool: "get_events", Severity: evidencev1.Severity_SEVERITY_HIGH,
			Claim: "Back-off restarting failed container in pod checkout-84d5-xyz12", RawOutput: "Warning BackOff pod/checkout-84d5-xyz12 CrashLoopBackOff"}},
			wantRules: []string{"crash_loop"},
			wantChip:  map[string]map[string]any{"get_events": {"since_minutes": 30.0, "namespace": "payments"}, "describe_resource": {"kind": "pod"}}},
		{name: "5xx", pins: []*evidencev1.EvidencePin{{Id: "p3", Service: "checkout", Namespace: "shop", SourceTool: "query_prometheus",
			Claim: "checkout 5xx error rate rose to 12%", Severity: evidencev1.Severity_SEVERITY_CRITICAL}},
			wantRules: []string{"high_error_rate"},
			wantChip: map[string]map[string]any{"search_logs": {"level": "ERROR", "service": "checkout"},
				"check_pod_status": {"namespace": "shop"}}},
		{name: "deploy facts", pins: []*evidencev1.EvidencePin{{Id: "p4", SourceTool: "get_deploy_history", Claim: "1 deploy in the window", Metadata: deploySt}},
			wantRules: []string{"deploy_near_onset"}, wantChip: map[string]map[string]any{"get_commits": {"service": "checkout"}}},
		{name: "dns", pins: []*evidencev1.EvidencePin{{Id: "p5", Namespace: "payments", SourceTool: "search_logs", Claim: "dial tcp: lookup db.internal: no such host"}},
			wantRules: []string{"dns_errors"}, wantChip: map[string]map[string]any{"search_logs": {"query": dnsQuery}}},
		{name: "already run calls are not suggested", pins: []*evidencev1.EvidencePin{
			podPin(t, "p1", "payments", "auth-5b6q9", true, 4),
			{Id: "p6", SourceTool: "fetch_pod_logs", Params: prevParams, Claim: "logs"}},
			wantRules: []string{"oom_killed"}, notIntent: []string{"fetch_pod_logs"}},
		{name: "capped and deduplicated", max: 5, pins: []*evidencev1.EvidencePin{
			podPin(t, "p1", "payments", "auth-5b6q9", true, 9),
			podPin(t, "p1b", "payments", "auth-5b6q9", true, 9),
			{Id: "p3", Service: "checkout", Namespace: "shop", Claim: "5xx error rate spike", Severity: evidencev1.Severity_SEVERITY_CRITICAL},
			{Id: "p5", Namespace: "payments", Claim: "no such host"}},
			wantRules: []string{"high_error_rate", "oom_killed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.brain.pins["s1"] = tc.pins
			resp, err := h.client.ListSuggestions(ctx, &routerv1.ListSuggestionsRequest{SessionId: "s1"})
			if err != nil {
				t.Fatal(err)
			}
			chips := resp.GetChips()
			if len(chips) == 0 || len(chips) > 5 {
				t.Fatalf("%d chips", len(chips))
			}
			rules := map[string]bool{}
			seen := map[string]bool{}
			for _, c := range chips {
				rules[c.GetRule()] = true
				if c.GetPinId() == "" || c.GetLabel() == "" || c.GetAction().GetIntent() == "" {
					t.Errorf("incomplete chip %v", c)
				}
				b, _ := protojson.Marshal(c.GetAction())
				if seen[string(b)] {
					t.Errorf("duplicate chip %s", b)
				}
				seen[string(b)] = true
				for _, ni := range tc.notIntent {
					if c.GetAction().GetIntent() == ni {
						t.Errorf("suggested %s which already ran", ni)
					}
				}
			}
			for _, r := range tc.wantRules {
				if !rules[r] {
					t.Errorf("rules %v lack %s", rules, r)
				}
			}
			for intent, want := range tc.wantChip {
				var chip *routerv1.SuggestionChip
				for _, c := range chips {
					if c.GetAction().GetIntent() == intent {
						chip = c
						break
					}
				}
				if chip == nil {
					t.Errorf("no %s chip in %v", intent, chips)
					continue
				}
				got := chip.GetAction().GetParams().AsMap()
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s chip param %s = %#v, want %#v", intent, k, got[k], v)
					}
				}
			}
			// every chip is a valid quick action
			for _, c := range chips {
				r, err := h.client.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s1", Context: testContext(),
					Input: &routerv1.InvestigateRequest_QuickAction{QuickAction: c.GetAction()}})
				if err != nil || r.GetStatus() != routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING {
					t.Errorf("chip %v does not run: %v %v", c.GetAction(), r, err)
				}
			}
		})
	}
	t.Run("unknown session", func(t *testing.T) {
		h := newHarness(t)
		resp, err := h.client.ListSuggestions(ctx, &routerv1.ListSuggestionsRequest{SessionId: "nope"})
		if err != nil || len(resp.GetChips()) != 0 {
			t.Fatalf("resp %v err %v", resp, err)
		}
	})
}

func TestSuggestIgnoresEchoAndNoData(t *testing.T) {
	reg := NewRegistry(testRegistry())
	q, _ := structpb.NewStruct(map[string]any{"query": dnsQuery, "namespace": "payments"})
	md, _ := facts.Put(nil, facts.KeyResolvedPod, "auth-5b6q9")
	mdSt, _ := facts.ToStruct(md)
	wild, _ := structpb.NewStruct(map[string]any{"namespace": "payments", "pod": "auth-*", "previous": true})
	pins := []*evidencev1.EvidencePin{
		{Id: "echo", SourceTool: "search_logs", Params: q, Claim: `Log search "` + dnsQuery + `" in namespace payments: 3 hits`},
		{Id: "empty", SourceTool: "search_logs", NoData: true, Claim: "no such host: 0 hits"},
		{Id: "wild", SourceTool: "fetch_pod_logs", Params: wild, Metadata: mdSt, Claim: "logs"},
		podPin(t, "oom", "payments", "auth-5b6q9", true, 3),
	}
	chips := Suggest(reg, pins, testContext(), 5)
	for _, c := range chips {
		if c.GetRule() == "dns_errors" {
			t.Errorf("dns chip from an echoed query or an empty result: %v", c)
		}
		if c.GetAction().GetIntent() == "fetch_pod_logs" {
			t.Errorf("suggested logs the wildcard call already fetched: %v", c)
		}
	}
	if len(chips) == 0 {
		t.Fatal("no chips for the OOM pin")
	}
}

func TestListToolsPages(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	all, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if all.GetNextPageToken() != "" || len(all.GetTools()) != len(testRegistry()) {
		t.Fatalf("default page: %d tools, next %q", len(all.GetTools()), all.GetNextPageToken())
	}
	var want []string
	for _, d := range all.GetTools() {
		want = append(want, d.GetIntent())
	}
	for _, size := range []int32{1, 2, int32(len(want))} {
		var got []string
		token, pages := "", 0
		for {
			r, err := h.client.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "p", PageSize: size, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(r.GetTools()) > int(size) {
				t.Fatalf("page size %d: a page of %d", size, len(r.GetTools()))
			}
			for _, d := range r.GetTools() {
				got = append(got, d.GetIntent())
			}
			if token = r.GetNextPageToken(); token == "" {
				break
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("page size %d: %v, want %v", size, got, want)
		}
		if wantPages := (len(want) + int(size) - 1) / int(size); pages != wantPages {
			t.Errorf("page size %d: %d pages, want %d", size, pages, wantPages)
		}
	}
	for name, req := range map[string]*routerv1.ListToolsRequest{
		"negative size":      {SessionId: "p", PageSize: -1},
		"forged token":       {SessionId: "p", PageToken: "bogus"},
		"another list's one": {SessionId: "p", PageToken: paging.Token("tool-definitions", 1)},
	} {
		if _, err := h.client.ListTools(ctx, req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
}

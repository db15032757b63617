package tools

import (
	"context"
	"errors"
	"flag"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

func TestPinFactory(t *testing.T) {
	ts := newTestSet()
	pub := &fakePublisher{}
	s := newService(t, ts.set, nil, func(d *Deps) { d.Bus = pub })
	exec := func(trig evidencev1.TriggeredBy, pinID string, skip bool) *toolsv1.ExecuteToolResponse {
		resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{
			SessionId: "sess", InvestigationId: "inv", Intent: "check_pod_status", TriggeredBy: trig, PinId: pinID,
			SourceAgent: "k8s_agent", Context: incidentCtx(), SkipPublish: skip, NoCache: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a := exec(evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION, "", false)
	p := a.GetPin()
	if p.GetId() != PinID("sess", "inv", "check_pod_status", `{"namespace":"shop"}`) {
		t.Errorf("pin id %s is not the deterministic hash", p.GetId())
	}
	if p.GetSource() != evidencev1.Source_SOURCE_MANUAL || p.GetValidationStatus() != evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC || p.GetVersion() != 1 {
		t.Errorf("source/status/version = %s %s %d", p.GetSource(), p.GetValidationStatus(), p.GetVersion())
	}
	if p.GetSeverity() != evidencev1.Severity_SEVERITY_CRITICAL || p.GetConfidence() != 100 || p.GetDomain() != evidencev1.Domain_DOMAIN_COMPUTE {
		t.Errorf("severity/confidence/domain = %s %v %s", p.GetSeverity(), p.GetConfidence(), p.GetDomain())
	}
	if p.GetClaim() == "" || strings.Contains(p.GetClaim(), "\n") || !strings.HasSuffix(p.GetClaim(), ".") || !strings.Contains(p.GetClaim(), "cart-5d8f9-aaaaa") {
		t.Errorf("claim = %q", p.GetClaim())
	}
	if p.GetNamespace() != "shop" || p.GetService() != "cart" || p.GetSourceTool() != "check_pod_status" || p.GetSourceAgent() != "k8s_agent" ||
		p.GetSessionId() != "sess" || p.GetInvestigationId() != "inv" || len(p.GetSources()) != 1 || p.GetTimeWindow().GetEnd().AsTime() != t0 {
		t.Errorf("pin context = %v", p)
	}
	if p.GetMetadata().GetFields()["pods"] == nil || p.GetParams().GetFields()["namespace"].GetStringValue() != "shop" {
		t.Errorf("pin lacks metadata or params")
	}
	if pub.count() != 1 || pub.evs[0].GetKind() != evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED || pub.evs[0].GetPin().GetId() != p.GetId() || pub.evs[0].GetSessionId() != "sess" {
		t.Errorf("published = %v", pub.evs)
	}
	// Retried call: same id. Automated trigger: AUTO. Given pin id: honoured. skip_publish: nothing published.
	b := exec(evidencev1.TriggeredBy_TRIGGERED_BY_AUTOMATED_PIPELINE, "", true)
	if b.GetPin().GetId() != p.GetId() || b.GetPin().GetSource() != evidencev1.Source_SOURCE_AUTO {
		t.Errorf("retry: id %s source %s", b.GetPin().GetId(), b.GetPin().GetSource())
	}
	c := exec(evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT, "pin-fixed", true)
	if c.GetPin().GetId() != "pin-fixed" || pub.count() != 1 {
		t.Errorf("pin id %s, publishes %d", c.GetPin().GetId(), pub.count())
	}
}

func TestConfidence(t *testing.T) {
	tests := []struct {
		res  *evidencev1.ToolResult
		want float64
	}{
		{&evidencev1.ToolResult{Success: false}, 0},
		{&evidencev1.ToolResult{Success: true, NoData: true}, 60},
		{&evidencev1.ToolResult{Success: true, Severity: evidencev1.Severity_SEVERITY_CRITICAL}, 100},
		{&evidencev1.ToolResult{Success: true, Severity: evidencev1.Severity_SEVERITY_MEDIUM}, 85},
		{&evidencev1.ToolResult{Success: true, Severity: evidencev1.Severity_SEVERITY_INFO}, 70},
	}
	for _, tc := range tests {
		if got := Confidence(tc.res); got != tc.want {
			t.Errorf("Confidence(%v) = %v, want %v", tc.res, got, tc.want)
		}
	}
	if c := Claim(&evidencev1.ToolResult{Summary: "First sentence. Second one.\nThird"}); c != "First sentence." {
		t.Errorf("claim = %q", c)
	}
}

func TestPublishFailure(t *testing.T) {
	ts := newTestSet()
	pub := &fakePublisher{err: errors.New("nats down")}
	s := newService(t, ts.set, nil, func(d *Deps) { d.Bus = pub })
	req := &toolsv1.ExecuteToolRequest{SessionId: "s", InvestigationId: "i", Intent: "list_monitors", Context: incidentCtx()}
	_, err := s.ExecuteTool(t.Context(), req)
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable {
		t.Fatalf("err = %v, want Unavailable", err)
	}
	pub.err = nil
	resp, err := s.ExecuteTool(t.Context(), req)
	if err != nil || resp.GetReplayed() || pub.count() != 1 {
		t.Errorf("retry after publish failure: err=%v replayed=%v published=%d", err, resp.GetReplayed(), pub.count())
	}
}

func TestGRPC(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	s.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := toolsv1.NewToolsServiceClient(cc)
	defs, err := client.ListToolDefinitions(t.Context(), &toolsv1.ListToolDefinitionsRequest{SessionId: "s"})
	reg, rerr := DefaultRegistry()
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || len(defs.GetTools()) != len(reg.Intents()) || len(defs.GetTools()) < 17 {
		t.Fatalf("ListToolDefinitions: %d tools, err %v", len(defs.GetTools()), err)
	}
	resp, err := client.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "get_node_health", Context: incidentCtx()})
	if err != nil || !resp.GetResult().GetSuccess() || resp.GetPin().GetId() == "" {
		t.Fatalf("ExecuteTool: %v %v", err, resp)
	}
	_, err = client.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{Intent: "get_node_health", Params: mustStruct(t, map[string]any{"nme": "x"})})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("invalid param over gRPC: %v", err)
	}
	ri, err := client.ResolveIntegrations(t.Context(), &toolsv1.ResolveIntegrationsRequest{})
	if err != nil || len(ri.GetIntegrations()) == 0 {
		t.Errorf("ResolveIntegrations: %v", err)
	}
}

func TestConfig(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-tools.timeout=3s", "-tools.max-output-bytes=1024", "-tools.duplicate-ttl=0"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != 3*time.Second || cfg.MaxOutputBytes != 1024 || cfg.DuplicateTTL != 0 {
		t.Errorf("flags not applied: %+v", cfg)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := cfg.Limits()[f.Name]; !ok {
			t.Errorf("flag %s missing from Limits", f.Name)
		}
	})
	bad := DefaultConfig()
	bad.Timeout = 0
	bad.MaxOutputBytes = 1
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "tools.timeout") || !strings.Contains(err.Error(), "tools.max-output-bytes") {
		t.Errorf("Validate = %v", err)
	}
	if _, err := New(bad, Deps{}); err == nil {
		t.Error("New accepted an invalid config")
	}
	// Duplicate detection off: identical calls both run.
	ts := newTestSet()
	s := newService(t, ts.set, func(c *Config) { c.DuplicateTTL = 0 })
	for i := 0; i < 2; i++ {
		r, _ := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{Intent: "query_prometheus", Params: mustStruct(t, map[string]any{"query": "up"})})
		if r.GetReplayed() {
			t.Error("replayed with duplicate detection off")
		}
	}
}

func TestRunStops(t *testing.T) {
	s := newService(t, newTestSet().set, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

package router

import (
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// --- registry fixtures -----------------------------------------------------

func str(name string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_STRING}
}
func num(name string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}
}
func boolean(name string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_BOOLEAN}
}
func sel(name string, opts ...string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_SELECT, Options: opts}
}
func required(p *evidencev1.ToolParam) *evidencev1.ToolParam { p.Required = true; return p }
func fromCtx(p *evidencev1.ToolParam, f string) *evidencev1.ToolParam {
	p.DefaultFromContext = f
	return p
}

// testRegistry is a registry shaped like the one the tools service serves.
func testRegistry() []*evidencev1.ToolDefinition {
	cluster, logs, metrics, code := evidencev1.ToolCategory_TOOL_CATEGORY_CLUSTER, evidencev1.ToolCategory_TOOL_CATEGORY_LOGS,
		evidencev1.ToolCategory_TOOL_CATEGORY_METRICS, evidencev1.ToolCategory_TOOL_CATEGORY_CODE
	def := func(intent, slash string, cat evidencev1.ToolCategory, desc string, integrations []string, reqCtx []string, ps ...*evidencev1.ToolParam) *evidencev1.ToolDefinition {
		return &evidencev1.ToolDefinition{Intent: intent, Label: intent, SlashCommand: slash, Category: cat, Description: desc,
			ParamsSchema: ps, Integrations: integrations, RequiresContext: reqCtx, Available: true}
	}
	return []*evidencev1.ToolDefinition{
		def("fetch_pod_logs", "/logs", logs, "Fetch logs from a running or previously crashed pod", []string{"kubernetes"}, []string{"namespace"},
			required(fromCtx(str("namespace"), "active_namespace")),
			required(fromCtx(sel("pod"), "active_pod")),
			sel("container"), boolean("previous"), num("tail_lines")),
		def("query_prometheus", "/promql", metrics, "Execute a Prometheus query and pin the result", []string{"prometheus"}, nil,
			required(str("query")), num("range_minutes")),
		def("describe_resource", "/describe", cluster, "kubectl describe for any K8s resource", []string{"kubernetes"}, []string{"namespace"},
			required(sel("kind", "pod", "deployment", "service", "node", "configmap", "ingress", "pvc")),
			required(str("name")),
			required(fromCtx(str("namespace"), "active_namespace"))),
		def("get_events", "/events", cluster, "Fetch Kubernetes events filtered by namespace and time", []string{"kubernetes"}, []string{"namespace"},
			required(fromCtx(str("namespace"), "active_namespace")), num("since_minutes"), str("involved_object"), sel("type", "Normal", "Warning")),
		def("search_logs", "/search", logs, "Search logs for patterns across services", []string{"logs"}, nil,
			required(str("query")), fromCtx(str("index"), "elk_index"), sel("level", "ERROR", "WARN", "INFO", "DEBUG"),
			num("since_minutes"), str("namespace"), str("service")),
		def("check_pod_status", "/pods", cluster, "Check pod status, restart counts, and OOM kills", []string{"kubernetes"}, []string{"namespace"},
			required(fromCtx(str("namespace"), "active_namespace")), str("label_selector")),
		def("re_investigate_service", "/investigate", cluster, "Run the full agent pipeline against a different service", []string{"brain"}, []string{"namespace"},
			required(str("service")), required(fromCtx(str("namespace"), "active_namespace"))),
		def("get_deploy_history", "/deploys", code, "Recent deploys and rollbacks of a service", []string{"git"}, nil,
			fromCtx(str("service"), "active_service"), str("namespace"), str("since")),
		def("get_commits", "/commits", code, "Commit summaries in the deployed ranges", []string{"git"}, nil,
			required(fromCtx(str("service"), "active_service")), str("since")),
		def("get_node_health", "/nodes", cluster, "Node conditions, pressure and taints", []string{"kubernetes"}, nil, str("node")),
		def("query_db_metrics", "/dbmetrics", metrics, "Managed database metrics (CloudWatch)", []string{"cloudwatch"}, nil,
			str("instance"), str("metric"), str("since")),
		def("get_db_top_queries", "/dbtop", metrics, "Top database statements by load", []string{"performance_insights"}, nil,
			str("instance"), str("since")),
		def("get_db_events", "/dbevents", metrics, "Managed database events: failover, storage, maintenance", []string{"rds_events"}, nil,
			str("instance"), str("since")),
		def("list_monitors", "/monitors", metrics, "Alert rules and monitors with their state", []string{"datadog"}, nil),
	}
}

// --- fakes -----------------------------------------------------------------

type fakeTools struct {
	toolsv1.UnimplementedToolsServiceServer
	mu       sync.Mutex
	tools    []*evidencev1.ToolDefinition
	down     bool
	lists    int
	executed []*toolsv1.ExecuteToolRequest
	execErr  error
	block    chan struct{} // when set, ExecuteTool waits for it to close
}

func (f *fakeTools) ListToolDefinitions(ctx context.Context, req *toolsv1.ListToolDefinitionsRequest) (*toolsv1.ListToolDefinitionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.down {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return &toolsv1.ListToolDefinitionsResponse{Tools: f.tools}, nil
}

func (f *fakeTools) ExecuteTool(ctx context.Context, req *toolsv1.ExecuteToolRequest) (*toolsv1.ExecuteToolResponse, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.executed = append(f.executed, req)
	if f.execErr != nil {
		return nil, f.execErr
	}
	return &toolsv1.ExecuteToolResponse{
		Result: &evidencev1.ToolResult{Success: true, Intent: req.GetIntent()},
		Pin:    &evidencev1.EvidencePin{Id: req.GetPinId(), SessionId: req.GetSessionId(), SourceTool: req.GetIntent()},
	}, nil
}

func (f *fakeTools) calls() []*toolsv1.ExecuteToolRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*toolsv1.ExecuteToolRequest(nil), f.executed...)
}

func (f *fakeTools) setDown(v bool) {
	f.mu.Lock()
	f.down = v
	f.mu.Unlock()
}

type fakeBrain struct {
	brainv1.UnimplementedBrainServiceServer
	mu   sync.Mutex
	pins map[string][]*evidencev1.EvidencePin
}

func (b *fakeBrain) ListPins(ctx context.Context, req *brainv1.ListPinsRequest) (*brainv1.ListPinsResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps, ok := b.pins[req.GetSessionId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "session %q not found", req.GetSessionId())
	}
	return &brainv1.ListPinsResponse{Pins: ps}, nil
}

// scriptedLLM replays responses in order.
type scriptedLLM struct {
	mu    sync.Mutex
	resps []llm.Response
	errs  []error
	reqs  []llm.Request
}

func (s *scriptedLLM) Name() string  { return "scripted" }
func (s *scriptedLLM) Model() string { return "scripted-1" }
func (s *scriptedLLM) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	i := len(s.reqs) - 1
	if i < len(s.errs) && s.errs[i] != nil {
		return llm.Response{}, s.errs[i]
	}
	if i < len(s.resps) {
		return s.resps[i], nil
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: `{"intent":"none","params":[]}`}}, nil
}

// --- harness ---------------------------------------------------------------

type harness struct {
	svc    *Service
	client routerv1.RouterServiceClient
	tools  *fakeTools
	brain  *fakeBrain
	conn   *grpc.ClientConn
}

type harnessOpt func(*Config, *Deps)

func withBus(b *bus.Bus) harnessOpt { return func(_ *Config, d *Deps) { d.Bus = b } }

func withLLM(p llm.Provider) harnessOpt { return func(_ *Config, d *Deps) { d.LLM = p } }
func withConfig(f func(*Config)) harnessOpt {
	return func(c *Config, _ *Deps) { f(c) }
}

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{tools: &fakeTools{tools: testRegistry()}, brain: &fakeBrain{pins: map[string][]*evidencev1.EvidencePin{}}, conn: conn}
	cfg := DefaultConfig()
	cl := mesh.Shared(conn)
	deps := Deps{Tools: cl.Tools, Brain: cl.Brain}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	h.svc, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	toolsv1.RegisterToolsServiceServer(gs, h.tools)
	brainv1.RegisterBrainServiceServer(gs, h.brain)
	h.svc.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		h.svc.Wait()
		_ = conn.Close()
		gs.Stop()
	})
	h.client = routerv1.NewRouterServiceClient(conn)
	return h
}

func testContext() *evidencev1.RouterContext {
	return &evidencev1.RouterContext{
		ActiveNamespace:      "payments",
		ActiveService:        "payments-api",
		SessionId:            "s1",
		DiscoveredServices:   []string{"payments-api", "auth", "checkout"},
		DiscoveredNamespaces: []string{"payments", "shop"},
		PodNames: []string{"auth-5b6q9", "payments-api-6c9f7d-abcde", "payments-api-6c9f7d-fghij",
			"checkout-84d5-xyz12", "coredns-55c-k2"},
		Extra: map[string]string{"elk_index": "logs-*"},
	}
}

package brain

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// ---- fake tools ----

type fakeTools struct {
	toolsv1.UnimplementedToolsServiceServer
	bus *bus.Bus

	mu    sync.Mutex
	calls []*toolsv1.ExecuteToolRequest
	seen  map[string]*toolsv1.ExecuteToolResponse
	// exec, when set, answers a call (nil response = default behaviour).
	exec func(ctx context.Context, req *toolsv1.ExecuteToolRequest, n int) (*toolsv1.ExecuteToolResponse, error)
	// alwaysReplay answers every call as a replay of an earlier one.
	alwaysReplay bool
	// noData answers every call with no data.
	noData bool
	// rawSize pads raw outputs to this many bytes.
	rawSize int
	defs    []*evidencev1.ToolDefinition
}

func (f *fakeTools) ExecuteTool(ctx context.Context, req *toolsv1.ExecuteToolRequest) (*toolsv1.ExecuteToolResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	n := len(f.calls)
	exec := f.exec
	f.mu.Unlock()
	if exec != nil {
		resp, err := exec(ctx, req, n)
		if resp != nil || err != nil {
			return resp, err
		}
	}
	key := req.GetIntent() + "|" + fmt.Sprint(req.GetParams().AsMap())
	f.mu.Lock()
	if prev, ok := f.seen[key]; ok {
		f.mu.Unlock()
		return &toolsv1.ExecuteToolResponse{Result: prev.Result, Pin: prev.Pin, Replayed: true}, nil
	}
	f.mu.Unlock()
	id := "pin-" + shortHash(req.GetSessionId(), key)
	raw := "output of " + req.GetIntent()
	if f.rawSize > len(raw) {
		raw += strings.Repeat("x", f.rawSize-len(raw))
	}
	res := &evidencev1.ToolResult{Success: true, Intent: req.GetIntent(), RawOutput: raw, Summary: req.GetIntent() + " found something",
		Sources: []string{"src_" + req.GetIntent()}, NoData: f.noData}
	pin := &evidencev1.EvidencePin{
		Id: id, Claim: req.GetIntent() + " found something", SourceTool: req.GetIntent(), TriggeredBy: req.GetTriggeredBy(),
		RawOutput: raw, SessionId: req.GetSessionId(), Params: req.GetParams(), Sources: res.Sources, NoData: f.noData,
		Success: true, Version: 1, InvestigationId: req.GetInvestigationId(), Namespace: req.GetContext().GetActiveNamespace(),
	}
	resp := &toolsv1.ExecuteToolResponse{Result: res, Pin: pin, Replayed: f.alwaysReplay}
	f.mu.Lock()
	f.seen[key] = resp
	f.mu.Unlock()
	if f.bus != nil {
		if _, err := f.bus.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: req.GetSessionId(), Pin: pin}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (f *fakeTools) ListToolDefinitions(context.Context, *toolsv1.ListToolDefinitionsRequest) (*toolsv1.ListToolDefinitionsResponse, error) {
	return &toolsv1.ListToolDefinitionsResponse{Tools: f.defs}, nil
}

func (f *fakeTools) ResolveIntegrations(context.Context, *toolsv1.ResolveIntegrationsRequest) (*toolsv1.ResolveIntegrationsResponse, error) {
	return &toolsv1.ResolveIntegrationsResponse{Integrations: []*toolsv1.IntegrationStatus{
		{Name: "kubernetes", Available: true, Backend: "fixture"},
		{Name: "git", Available: false, Reason: "no repository configured"},
	}}, nil
}

func (f *fakeTools) Calls() []*toolsv1.ExecuteToolRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*toolsv1.ExecuteToolRequest(nil), f.calls...)
}

func (f *fakeTools) intents() []string {
	var out []string
	for _, c := range f.Calls() {
		out = append(out, c.GetIntent())
	}
	return out
}

// ---- fake router ----

type fakeRouter struct {
	routerv1.UnimplementedRouterServiceServer
	plan  []string
	tools []*evidencev1.ToolDefinition
	// down, when set, answers PlanActions with its error (nil = serve).
	down func() error
}

func (f *fakeRouter) PlanActions(_ context.Context, req *routerv1.PlanActionsRequest) (*routerv1.PlanActionsResponse, error) {
	if f.down != nil {
		if err := f.down(); err != nil {
			return nil, err
		}
	}
	plan := &investigationv1.TaskPlan{Rationale: "test plan", ToolBudget: 10}
	for _, in := range f.plan {
		params, _ := structpb.NewStruct(map[string]any{"namespace": req.GetAlert().GetNamespace()})
		plan.Actions = append(plan.Actions, &investigationv1.PlannedAction{Intent: in, Params: params, Score: 1})
	}
	return &routerv1.PlanActionsResponse{Plan: plan, Limits: &investigationv1.Guardrails{ToolBudget: 10}}, nil
}

func (f *fakeRouter) SelectTools(context.Context, *routerv1.SelectToolsRequest) (*routerv1.SelectToolsResponse, error) {
	return &routerv1.SelectToolsResponse{Tools: f.tools, MaxSchemas: 32, SecondaryReserve: 3,
		Limits: &investigationv1.Guardrails{MaxToolSchemas: 32, SecondaryToolReserve: proto.Int32(3)}}, nil
}

// ---- fake critic ----

type fakeCritic struct {
	criticv1.UnimplementedCriticServiceServer
	mu      sync.Mutex
	reviews int
	accepts int
	review  func(round int32, req *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview
	accept  func(n int, req *criticv1.AcceptConclusionRequest) *criticv1.AcceptConclusionResponse
	// down, when set, answers every call with its error (nil = serve).
	down func() error
}

func (f *fakeCritic) ReviewHypotheses(_ context.Context, req *criticv1.ReviewHypothesesRequest) (*criticv1.ReviewHypothesesResponse, error) {
	if f.down != nil {
		if err := f.down(); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.reviews++
	fn := f.review
	f.mu.Unlock()
	r := &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: req.GetRound(), Threshold: 0.8}
	if fn != nil {
		r = fn(req.GetRound(), req)
	}
	return &criticv1.ReviewHypothesesResponse{Review: r, Reranked: req.GetHypotheses()}, nil
}

func (f *fakeCritic) AcceptConclusion(_ context.Context, req *criticv1.AcceptConclusionRequest) (*criticv1.AcceptConclusionResponse, error) {
	if f.down != nil {
		if err := f.down(); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.accepts++
	n := f.accepts
	fn := f.accept
	f.mu.Unlock()
	if fn != nil {
		return fn(n, req), nil
	}
	return &criticv1.AcceptConclusionResponse{Accepted: true, Reason: "ok"}, nil
}

// ---- fake delivery ----

type fakeDelivery struct {
	deliveryv1.UnimplementedDeliveryServiceServer
	mu      sync.Mutex
	records []*investigationv1.InvestigationRecord
	// down, when set, answers with its error (nil = serve).
	down func() error
}

func (f *fakeDelivery) DeliverReport(_ context.Context, req *deliveryv1.DeliverReportRequest) (*deliveryv1.DeliverReportResponse, error) {
	if f.down != nil {
		if err := f.down(); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.records = append(f.records, req.GetRecord())
	f.mu.Unlock()
	d := req.GetRecord().GetDiagnosis()
	md := fmt.Sprintf("# Incident report\n\nRoot cause: %s\n", d.GetRootCause())
	return &deliveryv1.DeliverReportResponse{Report: &investigationv1.Report{
		SessionId: req.GetSessionId(), Markdown: md, Confidence: d.GetConfidence(),
	}}, nil
}

// ---- harness ----

type harness struct {
	t        testing.TB
	svc      *Service
	client   brainv1.BrainServiceClient
	clients  mesh.Clients
	tools    *fakeTools
	router   *fakeRouter
	critic   *fakeCritic
	delivery *fakeDelivery
	bus      *bus.Bus
	addr     string
}

type harnessOpts struct {
	bus   *bus.Bus
	cfg   *Config
	model llm.Provider
	plan  []string
	now   func() time.Time
}

func newFakes(b *bus.Bus, plan []string) (*fakeTools, *fakeRouter, *fakeCritic, *fakeDelivery) {
	defs := []*evidencev1.ToolDefinition{
		{Intent: "check_pod_status", Description: "pod status", ParamsSchema: []*evidencev1.ToolParam{
			{Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING, DefaultFromContext: "active_namespace"},
		}},
		{Intent: "get_events", Description: "events", ParamsSchema: []*evidencev1.ToolParam{
			{Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING},
			{Name: "kind", Type: evidencev1.ParamType_PARAM_TYPE_SELECT, Options: []string{"Pod", "Deployment", "Node"}},
		}},
		{Intent: "fetch_pod_logs", Description: "logs", ParamsSchema: []*evidencev1.ToolParam{
			{Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING, DefaultFromContext: "active_namespace"},
			{Name: "pod", Type: evidencev1.ParamType_PARAM_TYPE_STRING, Required: true},
			{Name: "previous", Type: evidencev1.ParamType_PARAM_TYPE_BOOLEAN},
		}},
		{Intent: "query_prometheus", Description: "metrics", ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING, Required: true},
		}},
	}
	if plan == nil {
		plan = []string{"check_pod_status", "fetch_pod_logs"}
	}
	return &fakeTools{bus: b, seen: map[string]*toolsv1.ExecuteToolResponse{}, defs: defs},
		&fakeRouter{plan: plan, tools: defs}, &fakeCritic{}, &fakeDelivery{}
}

// newHarness serves fakes of the other services and the brain on one
// in-process gRPC server on 127.0.0.1:0.
func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	tools, router, critic, delivery := newFakes(o.bus, o.plan)
	h := &harness{t: t, tools: tools, router: router, critic: critic, delivery: delivery, bus: o.bus}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	toolsv1.RegisterToolsServiceServer(gs, tools)
	routerv1.RegisterRouterServiceServer(gs, router)
	criticv1.RegisterCriticServiceServer(gs, critic)
	deliveryv1.RegisterDeliveryServiceServer(gs, delivery)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h.clients = mesh.Shared(cc)
	h.addr = lis.Addr().String()
	h.svc = h.newService(o)
	h.svc.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		_ = cc.Close()
		gs.Stop()
	})
	h.client = brainv1.NewBrainServiceClient(cc)
	return h
}

// newService builds another brain instance on the same fakes (a restart).
func (h *harness) newService(o harnessOpts) *Service {
	cfg := DefaultConfig()
	if o.cfg != nil {
		cfg = *o.cfg
	}
	cfg.CallTimeout = 20 * time.Second
	svc, err := New(cfg, Deps{Logger: slog.New(slog.DiscardHandler), Bus: o.bus, Router: h.clients.Router, Tools: h.clients.Tools,
		Critic: h.clients.Critic, Delivery: h.clients.Delivery, LLM: o.model, Now: o.now})
	if err != nil {
		h.t.Fatal(err)
	}
	return svc
}

// run starts svc.Run until the test ends (or the returned cancel).
func (h *harness) run(svc *Service) (cancel func()) {
	ctx, c := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := svc.Run(ctx); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}()
	stop := func() { c(); <-done }
	h.t.Cleanup(stop)
	return stop
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustStruct(t *testing.T, js string) *structpb.Struct {
	t.Helper()
	s := &structpb.Struct{}
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return s
}

const crashAlert = `{"version":"4","status":"firing","groupLabels":{"alertname":"KubePodCrashLooping"},
 "commonLabels":{"alertname":"KubePodCrashLooping","namespace":"shop","severity":"critical","cluster":"c1"},
 "commonAnnotations":{"summary":"cart pod crash looping"},
 "alerts":[{"status":"firing","labels":{"pod":"cart-7d9f-abcde","deployment":"cart"},"annotations":{"error":"exit code 137"},
 "startsAt":"2026-01-03T10:05:00Z"}]}`

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hasTrip says whether the record holds a trip of g decided by g's owner.
func hasTrip(rec *investigationv1.InvestigationRecord, g investigationv1.Guardrail) bool {
	for _, tr := range rec.GetGuardrailTrips() {
		if tr.GetKind() == g && tr.GetGuardrail() == guardrail.Name(g) && tr.GetOwner() == guardrail.Owner(g) {
			return true
		}
	}
	return false
}

func stageStatus(rec *investigationv1.InvestigationRecord, name string) string {
	for _, s := range rec.GetStages() {
		if s.GetName() == name {
			return s.GetStatus()
		}
	}
	return ""
}

func lifecycleKinds(t *testing.T, b *bus.Bus, sid string) []string {
	t.Helper()
	evs, err := b.Replay(testCtx(t), bus.LifecycleFilter(sid), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, bus.LifecycleKindToken(ev.GetLifecycle().GetKind()))
	}
	return out
}

func count(list []string, v string) int {
	n := 0
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}

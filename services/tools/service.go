// Package tools is the ToolsService: the ToolExecutor
// that runs tool handlers over the inspected systems (internal/backend) and
// the EvidencePinFactory that turns every result into an evidence pin and
// publishes it. It is the only owner of the tool-call guardrails: parameter
// validation, duplicate-call replay, the per-call timeout, the output size
// cap, read-only enforcement and secret redaction.
package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/paging"
	"github.com/rcamesh/rcamesh/internal/warm"
)

// The guardrails the tools service owns (their owner, flag and record field
// are the contract's, package guardrail).
const (
	TripDuplicateReplayed = investigationv1.Guardrail_GUARDRAIL_DUPLICATE_CALL_REPLAYED
	TripTimeout           = investigationv1.Guardrail_GUARDRAIL_TOOL_TIMEOUT
	TripOutputTruncated   = investigationv1.Guardrail_GUARDRAIL_OUTPUT_TRUNCATED
	TripReadOnly          = investigationv1.Guardrail_GUARDRAIL_READ_ONLY_VIOLATION
	TripRedacted          = investigationv1.Guardrail_GUARDRAIL_SECRET_REDACTED
)

// IntegrationBrain is the pseudo-integration of re_investigate_service.
const IntegrationBrain = "brain"

// Publisher publishes pin events; *bus.Bus satisfies it.
type Publisher interface {
	PublishPin(ctx context.Context, ev *evidencev1.PinEvent) (uint64, error)
}

// PinCounter counts a session's pins (the bus does); with it the tools
// enforce Config.MaxPinsPerSession.
type PinCounter interface {
	SessionPins(ctx context.Context, session string) (uint64, error)
}

// Deps are the service's dependencies.
type Deps struct {
	Logger *slog.Logger
	// Bus publishes pin.added; nil: pins are returned, never published.
	Bus Publisher
	// Brain starts the sub-investigations of re_investigate_service; nil
	// leaves that tool unavailable.
	Brain brainv1.BrainServiceClient
	// Backend is what the tools inspect; nil fields are integrations not configured.
	Backend *backend.Set
}

// Service implements toolsv1.ToolsServiceServer.
type Service struct {
	toolsv1.UnimplementedToolsServiceServer

	cfg   Config
	log   *slog.Logger
	bus   Publisher
	brain brainv1.BrainServiceClient
	// be is the backend with a read-only Kubernetes client.
	be           *backend.Set
	kubeEnforced bool
	reg          *Registry
	cache        *callCache
	pins         PinFactory
	pinCounts    pinCounts
	// now is the wall clock (durations, cache ages, pin timestamps).
	now func() time.Time

	// The last integration health check, reused for healthTTL: every
	// investigation resolves integrations, and health checks are network
	// calls to each integration.
	healthMu sync.Mutex
	healthAt time.Time
	health   map[string]error
}

// healthTTL is how long an integration health check result is reused.
const healthTTL = 30 * time.Second

// integrationHealth runs the backend's health checks, at most once per
// healthTTL.
func (s *Service) integrationHealth(ctx context.Context) map[string]error {
	if s.be.Health == nil {
		return nil
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.health != nil && s.now().Sub(s.healthAt) < healthTTL {
		return s.health
	}
	hctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	s.health, s.healthAt = s.be.Health(hctx), s.now()
	return s.health
}

// New builds the service with the default registry.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tools: config: %w", err)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("service", mesh.Tools)
	be := &backend.Set{Name: "none"}
	if deps.Backend != nil {
		cp := *deps.Backend
		be = &cp
	}
	s := &Service{
		cfg:   cfg,
		log:   log,
		bus:   deps.Bus,
		brain: deps.Brain,
		be:    be,
		cache: newCallCache(cfg.DuplicateTTL, cfg.DuplicateCacheSize, cfg.DuplicateCacheBytes),
		now:   time.Now,
	}
	if isNil(s.bus) {
		s.bus = nil
	}
	if isNil(s.brain) {
		s.brain = nil
	}
	if isNil(be.Kube) {
		be.Kube = nil
	}
	if cfg.ReadOnly && be.Kube != nil {
		be.Kube, s.kubeEnforced = ReadOnlyKube(be.Kube)
		if !s.kubeEnforced {
			log.Warn("kubernetes read-only enforcement unavailable for this client type; tools still only read", "client", fmt.Sprintf("%T", deps.Backend.Kube))
		}
	}
	reg, err := DefaultRegistry()
	if err != nil {
		return nil, err
	}
	s.reg = reg
	s.pins = PinFactory{Now: func() time.Time { return s.now() }}
	return s, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Registry exposes the tool registry (for adding tools before serving).
func (s *Service) Registry() *Registry { return s.reg }

// Register registers the ToolsService on gs.
func (s *Service) Register(gs *grpc.Server) { toolsv1.RegisterToolsServiceServer(gs, s) }

// RegisterGateway is a no-op: the tools service has no HTTP annotations
// (the router serves the public /tools endpoint).
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	return nil
}

// Run sweeps the duplicate-call cache until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	period := s.cfg.DuplicateTTL / 4
	if period <= 0 || period > time.Minute {
		period = time.Minute
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.cache.sweep(s.now())
		}
	}
}

// configured reports whether integration (a backend area or "brain") is usable.
func (s *Service) configured(integration string) bool {
	be := s.be
	switch integration {
	case backend.AreaPods, backend.AreaEvents, backend.AreaDeployments, backend.AreaNodes, backend.AreaResources:
		return be.Kube != nil
	case backend.AreaPodLogs:
		return !isNil(be.PodLogs)
	case backend.AreaLogs:
		return !isNil(be.Logs)
	case backend.AreaMetrics:
		return !isNil(be.Metrics)
	case backend.AreaDeploys, backend.AreaCommits:
		return !isNil(be.Changes)
	case backend.AreaDBMetrics, backend.AreaTopQueries, backend.AreaDBEvents:
		return !isNil(be.Database)
	case backend.AreaMonitors:
		return !isNil(be.Monitors)
	case backend.AreaStatusPage:
		return !isNil(be.Status)
	case IntegrationBrain:
		return s.brain != nil
	case IntegrationCode:
		return s.cfg.CodeRoot != ""
	}
	return false
}

// unavailable returns why t cannot run here, or "".
func (s *Service) unavailable(t *Tool) string {
	var missing []string
	for _, n := range t.Needs {
		if !s.configured(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return backend.ErrNotConfigured.Error() + ": " + strings.Join(missing, ", ")
}

// Page sizes of ListToolDefinitions (and of the router's ListTools).
const (
	DefaultToolPage = 100
	MaxToolPage     = 500
)

// ListToolDefinitions returns the registry with availability.
func (s *Service) ListToolDefinitions(ctx context.Context, req *toolsv1.ListToolDefinitionsRequest) (*toolsv1.ListToolDefinitionsResponse, error) {
	size, err := paging.Size(req.GetPageSize(), 0, DefaultToolPage, MaxToolPage)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	offset, err := paging.Offset("tool-definitions", req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	intents := s.reg.Intents()
	from, to, next := paging.Page("tool-definitions", len(intents), offset, size)
	resp := &toolsv1.ListToolDefinitionsResponse{NextPageToken: next}
	for _, intent := range intents[from:to] {
		t, _ := s.reg.Get(intent)
		def := proto.Clone(t.Def).(*evidencev1.ToolDefinition)
		reason := s.unavailable(t)
		def.Available = reason == ""
		def.UnavailableReason = reason
		resp.Tools = append(resp.Tools, def)
	}
	return resp, nil
}

// integrationOrder lists the integrations ResolveIntegrations reports.
var integrationOrder = []string{
	backend.AreaPods, backend.AreaEvents, backend.AreaDeployments, backend.AreaNodes, backend.AreaResources,
	backend.AreaPodLogs, backend.AreaLogs, backend.AreaMetrics, backend.AreaDeploys, backend.AreaCommits,
	backend.AreaDBMetrics, backend.AreaTopQueries, backend.AreaDBEvents, backend.AreaMonitors, backend.AreaStatusPage, IntegrationBrain,
}

// ResolveIntegrations says which integrations are usable and why others are not.
func (s *Service) ResolveIntegrations(ctx context.Context, req *toolsv1.ResolveIntegrationsRequest) (*toolsv1.ResolveIntegrationsResponse, error) {
	resp := &toolsv1.ResolveIntegrationsResponse{}
	// Live integrations are health-checked on demand (results reused briefly).
	health := s.integrationHealth(ctx)
	for _, name := range integrationOrder {
		st := &toolsv1.IntegrationStatus{Name: name, Available: s.configured(name), Backend: s.be.Name}
		switch {
		case name == IntegrationBrain:
			st.Backend = "mesh"
			if !st.Available {
				st.Reason = backend.ErrNotConfigured.Error() + ": brain client"
			}
		case !st.Available:
			st.Reason = backend.ErrNotConfigured.Error() + ": " + name
		default:
			if src := s.be.Source(name); src != "" {
				st.Backend = s.be.Name + ":" + src
			} else {
				st.Reason = "configured, but no evidence source serves this area"
			}
			if src := s.be.Source(name); src != "" {
				if herr, checked := health[src]; checked && herr != nil {
					st.Reason = strings.TrimPrefix(st.Reason+"; health check failed: "+herr.Error(), "; ")
				}
			}
			if s.isKubeArea(name) && s.cfg.ReadOnly && !s.kubeEnforced {
				st.Reason = strings.TrimPrefix(st.Reason+"; read-only transport not enforced for this client", "; ")
			}
		}
		resp.Integrations = append(resp.Integrations, st)
	}
	return resp, nil
}

func (s *Service) isKubeArea(a string) bool {
	switch a {
	case backend.AreaPods, backend.AreaEvents, backend.AreaDeployments, backend.AreaNodes, backend.AreaResources:
		return true
	}
	return false
}

func (s *Service) trip(g investigationv1.Guardrail, detail string, limit, value float64) *investigationv1.GuardrailTrip {
	return guardrail.Trip(g, detail, limit, value, s.now())
}

// Limits are the tools service's live limits, its fields of the record's
// Guardrails.
func (s *Service) Limits() *investigationv1.Guardrails {
	return &investigationv1.Guardrails{
		ToolTimeoutMs: s.cfg.Timeout.Milliseconds(), MaxOutputBytes: int64(s.cfg.MaxOutputBytes),
		DuplicateTtlMs: s.cfg.DuplicateTTL.Milliseconds(),
		ReadOnly:       proto.Bool(s.cfg.ReadOnly), RedactSecrets: proto.Bool(s.cfg.Redact),
	}
}

// ExecuteTool runs one tool call under the guardrails, builds its pin and
// publishes it; the answer carries the live limits it ran under.
func (s *Service) ExecuteTool(ctx context.Context, req *toolsv1.ExecuteToolRequest) (*toolsv1.ExecuteToolResponse, error) {
	intent := strings.TrimSpace(req.GetIntent())
	t, ok := s.reg.Get(intent)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown tool intent %q (known: %s)", intent, strings.Join(s.reg.Intents(), ", "))
	}
	if reason := s.unavailable(t); reason != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "tool %s: %s", intent, reason)
	}
	params, err := validateParams(t.Def, req.GetParams(), req.GetContext())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	window, err := resolveWindow(intent, params, req.GetContext(), s.be.Clock(), s.cfg.DefaultWindow)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	call := &Call{
		Intent: intent, Params: params, Window: window, Context: req.GetContext(),
		SessionID: req.GetSessionId(), InvestigationID: req.GetInvestigationId(), TriggeredBy: req.GetTriggeredBy(),
	}

	if err := s.checkPinLimit(ctx, req); err != nil {
		return nil, err
	}

	useCache := s.cfg.DuplicateTTL > 0 && !req.GetNoCache()
	key := s.cacheKey(call)
	if useCache {
		for {
			if cached := s.cache.get(key, s.now()); cached != nil {
				metrics.ObserveToolCall(intent, metrics.ToolReplayed, 0)
				return s.answer(req, s.replay(cached)), nil
			}
			wait, claimed := s.cache.begin(key)
			if claimed {
				break
			}
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
	}
	var stored *toolsv1.ExecuteToolResponse
	if useCache {
		defer func() { s.cache.end(key, stored, s.now()) }()
	}

	resp, err := s.execute(ctx, t, call, req, useCache)
	if err != nil {
		return nil, err
	}
	if useCache && resp.GetResult().GetSuccess() {
		stored = resp
	}
	return s.answer(req, resp), nil
}

// answer is the response a caller gets: resp, or with omit_answer (a
// caller that reads only the status) and a published pin, the pin's id and
// the replayed flag. Encoding the whole answer cost the tools service two
// copies of every fact per dispatched call, for a caller that drops them.
func (s *Service) answer(req *toolsv1.ExecuteToolRequest, resp *toolsv1.ExecuteToolResponse) *toolsv1.ExecuteToolResponse {
	if !req.GetOmitAnswer() || req.GetSkipPublish() || s.bus == nil {
		return resp
	}
	return &toolsv1.ExecuteToolResponse{Pin: &evidencev1.EvidencePin{Id: resp.GetPin().GetId()}, Replayed: resp.GetReplayed()}
}

func (s *Service) cacheKey(c *Call) string {
	scope := c.InvestigationID
	if scope == "" {
		scope = "session:" + c.SessionID
	}
	win := ""
	if c.Window.Origin != "default" {
		win = c.Window.Start.UTC().Format(time.RFC3339) + "/" + c.Window.End.UTC().Format(time.RFC3339)
	}
	return scope + "\x00" + c.Intent + "\x00" + c.Params.Canonical() + "\x00" + win
}

func (s *Service) replay(cached *toolsv1.ExecuteToolResponse) *toolsv1.ExecuteToolResponse {
	cached.Replayed = true
	cached.Limits = s.Limits()
	msg := "this call repeats an earlier identical call of this investigation; its result is replayed, not re-run. Do not repeat it: try another tool or different parameters."
	if r := cached.GetResult(); r != nil {
		r.Summary = "[replayed: identical earlier call] " + r.GetSummary()
	}
	cached.Trips = append([]*investigationv1.GuardrailTrip(nil), s.trip(TripDuplicateReplayed, msg, 1, 2))
	s.log.Info("duplicate tool call replayed", "intent", cached.GetResult().GetIntent(), "pin", cached.GetPin().GetId())
	return cached
}

// execute runs the handler with the timeout and turns its result into a response.
func (s *Service) execute(ctx context.Context, t *Tool, call *Call, req *toolsv1.ExecuteToolRequest, cached bool) (*toolsv1.ExecuteToolResponse, error) {
	start := s.now()
	res, runErr, timedOut := s.runHandler(ctx, t, call)
	if !timedOut && runErr != nil && ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	var trips []*investigationv1.GuardrailTrip
	tr := &evidencev1.ToolResult{Intent: call.Intent, DurationMs: s.now().Sub(start).Milliseconds()}
	switch {
	case timedOut:
		tr.Error = fmt.Sprintf("timeout: tool %s did not answer within %s", call.Intent, s.cfg.Timeout)
		tr.Summary = fmt.Sprintf("Tool %s timed out after %s; its backend did not answer.", call.Intent, s.cfg.Timeout)
		trips = append(trips, s.trip(TripTimeout, tr.Error, s.cfg.Timeout.Seconds(), s.now().Sub(start).Seconds()))
	case runErr != nil:
		tr.Error = runErr.Error()
		tr.Summary = fmt.Sprintf("Tool %s failed: %s", call.Intent, runErr.Error())
		if errors.Is(runErr, ErrReadOnly) {
			trips = append(trips, s.trip(TripReadOnly, "a tool tried to change the inspected system and was refused: "+runErr.Error(), 0, 1))
		}
	default:
		tr.Success = true
		tr.Summary = strings.TrimSpace(res.Summary)
		tr.RawOutput = res.Raw.String()
		tr.EvidenceSnippets = res.Snippets
		tr.EvidenceType = res.EvidenceType
		tr.Domain = res.Domain
		tr.Severity = res.Severity
		tr.NoData = res.NoData
		tr.Sources = res.sourceList()
		if res.putErr != nil {
			s.log.Warn("tool facts encoding failed", "intent", call.Intent, "err", res.putErr)
		}
	}
	metrics.ObserveToolCall(call.Intent, toolResult(tr, timedOut), s.now().Sub(start))
	if tr.EvidenceType == evidencev1.EvidenceType_EVIDENCE_TYPE_UNSPECIFIED {
		tr.EvidenceType = t.Type
	}
	if tr.Domain == evidencev1.Domain_DOMAIN_UNSPECIFIED {
		tr.Domain = t.Domain
	}
	if tr.Success && tr.Severity == evidencev1.Severity_SEVERITY_UNSPECIFIED {
		tr.Severity = evidencev1.Severity_SEVERITY_INFO
	}
	md := map[string]any{}
	if tr.Success && res.facts != nil {
		md = res.facts
	}
	md["window_start"] = call.Window.Start.UTC().Format(time.RFC3339)
	md["window_end"] = call.Window.End.UTC().Format(time.RFC3339)
	md["window_origin"] = call.Window.Origin

	if s.cfg.Redact {
		if s.redactResult(tr, md) {
			trips = append(trips, s.trip(TripRedacted, "secrets were redacted from the tool output", 0, 1))
		}
	}
	s.capOutput(tr, &trips)
	// A pin that is published and whose answer nobody reads (omit_answer,
	// not kept for replays) carries its facts encoded straight from md:
	// no Struct is built only to be encoded.
	var encoded []byte
	if req.GetOmitAnswer() && !cached && s.bus != nil && !req.GetSkipPublish() {
		encoded = encodeFacts(md)
	}
	if encoded == nil {
		st, err := facts.ToStruct(md)
		if err != nil {
			s.log.Warn("tool metadata not representable", "intent", call.Intent, "err", err)
			st, _ = facts.ToStruct(nil)
		}
		tr.Metadata = st
	}

	hints := PinHints{}
	if res != nil && tr.Success {
		hints = PinHints{Namespace: res.Namespace, Service: res.Service, ResourceName: res.ResourceName}
	}
	if encoded != nil && strings.TrimSpace(hints.ResourceName) == "" {
		// What FromToolResult reads from the metadata next.
		hints.ResourceName, _ = md[facts.KeyResolvedPod].(string)
	}
	pin := s.pins.FromToolResult(req, tr, call.Params, call.Window, hints)
	if encoded != nil {
		m := pin.ProtoReflect()
		u := m.GetUnknown()
		// The call's params go encoded right before the metadata: a
		// reader that keeps a pin's facts encoded (the critic, the
		// brain's StreamEvents) then keeps them as one part of the
		// message instead of a copy (bus.FactsEncoded); decoded, the pin
		// is the same.
		if params := pin.GetParams(); params != nil {
			if pb, err := proto.Marshal(params); err == nil {
				u = protowire.AppendBytes(protowire.AppendTag(u, pinParamsField, protowire.BytesType), pb)
				pin.Params = nil
			}
		}
		m.SetUnknown(protowire.AppendBytes(protowire.AppendTag(u, pinMetadataField, protowire.BytesType), encoded))
	}
	resp := &toolsv1.ExecuteToolResponse{Result: tr, Pin: pin, Trips: trips, Limits: s.Limits()}

	if s.bus != nil && !req.GetSkipPublish() {
		ev := &evidencev1.PinEvent{
			EventId:   pin.GetId() + ".added.v1",
			Kind:      evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED,
			SessionId: req.GetSessionId(),
			Pin:       pin,
			Time:      timestamppb.New(s.now()),
		}
		if _, err := s.bus.PublishPin(ctx, ev); err != nil {
			s.log.Error("publish pin failed", "intent", call.Intent, "pin", pin.GetId(), "err", err)
			return nil, status.Errorf(codes.Unavailable, "tool %s ran but its pin %s could not be published: %v", call.Intent, pin.GetId(), err)
		}
		s.pinCounts.added(req.GetSessionId())
		metrics.PinsPublished.Inc()
	}
	s.log.Debug("tool executed", "intent", call.Intent, "success", tr.Success, "no_data", tr.NoData, "ms", tr.DurationMs, "pin", pin.GetId())
	return resp, nil
}

// pinMetadataField and pinParamsField are the field numbers of a pin's
// metadata and params.
var (
	pinMetadataField = (&evidencev1.EvidencePin{}).ProtoReflect().Descriptor().Fields().ByName("metadata").Number()
	pinParamsField   = (&evidencev1.EvidencePin{}).ProtoReflect().Descriptor().Fields().ByName("params").Number()
)

// toolResult is the result label of a tool call.
func toolResult(tr *evidencev1.ToolResult, timedOut bool) string {
	switch {
	case timedOut:
		return metrics.ToolTimeout
	case !tr.GetSuccess():
		return metrics.ToolError
	case tr.GetNoData():
		return metrics.ToolNoData
	}
	return metrics.ToolSuccess
}

// handlers run the tool handlers: on goroutines whose stacks have grown
// to a handler's depth already (warm), not a new one per call.
var handlers = warm.New(0)

// runHandler runs the handler under the per-call timeout. A handler whose
// backend ignores cancellation is abandoned: the call still returns in time.

func (s *Service) runHandler(ctx context.Context, t *Tool, call *Call) (res *Result, err error, timedOut bool) {
	hctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	handlers.Go(func() {
		r := &Result{}
		var herr error
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("tool handler panicked", "intent", call.Intent, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				herr = fmt.Errorf("tool %s: internal error: %v", call.Intent, p)
			}
			done <- outcome{r, herr}
		}()
		herr = t.Handler(hctx, s, call, r)
	})
	select {
	case o := <-done:
		if o.err != nil && errors.Is(o.err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, o.err, true
		}
		return o.res, o.err, false
	case <-hctx.Done():
		if ctx.Err() != nil {
			return nil, ctx.Err(), false
		}
		return nil, hctx.Err(), true
	}
}

// redactResult scrubs secrets from every text field; it reports whether anything changed.
func (s *Service) redactResult(tr *evidencev1.ToolResult, md map[string]any) bool {
	changed := false
	red := func(in string) string {
		out := RedactText(in)
		if out != in {
			changed = true
		}
		return out
	}
	tr.RawOutput = red(tr.RawOutput)
	tr.Summary = red(tr.Summary)
	tr.Error = red(tr.Error)
	for i, sn := range tr.EvidenceSnippets {
		tr.EvidenceSnippets[i] = red(sn)
	}
	if _, c := redactValue(md); c {
		changed = true
	}
	return changed
}

// capOutput enforces the raw output and snippet caps.
func (s *Service) capOutput(tr *evidencev1.ToolResult, trips *[]*investigationv1.GuardrailTrip) {
	if n := len(tr.RawOutput); n > s.cfg.MaxOutputBytes {
		marker := fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", n, n)
		keep := s.cfg.MaxOutputBytes - len(marker)
		if keep < 0 {
			keep = 0
		}
		cut := truncUTF8(tr.RawOutput, keep)
		tr.RawOutput = cut + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", len(cut), n)
		tr.RawOutputOriginalBytes = int64(n)
		tr.RawOutputTruncated = true
		*trips = append(*trips, s.trip(TripOutputTruncated, fmt.Sprintf("raw output of %d bytes cut to the %d-byte cap", n, s.cfg.MaxOutputBytes), float64(s.cfg.MaxOutputBytes), float64(n)))
	}
	if len(tr.EvidenceSnippets) > s.cfg.MaxSnippets {
		tr.EvidenceSnippets = tr.EvidenceSnippets[:s.cfg.MaxSnippets]
	}
	for i, sn := range tr.EvidenceSnippets {
		if len(sn) > s.cfg.MaxSnippetBytes {
			tr.EvidenceSnippets[i] = truncUTF8(sn, s.cfg.MaxSnippetBytes-3) + "..."
		}
	}
	if len(tr.Summary) > 4096 {
		tr.Summary = truncUTF8(tr.Summary, 4093) + "..."
	}
}

// truncUTF8 cuts s to at most n bytes without splitting a rune.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// PinID derives a stable pin id from the call's identity.
func PinID(session, investigation, intent, canonicalParams string) string {
	h := sha256.Sum256([]byte(session + "\x00" + investigation + "\x00" + intent + "\x00" + canonicalParams))
	return "pin_" + hex.EncodeToString(h[:10])
}

// factsScratch holds buffers facts are encoded into: the encoding grows
// from nothing by doubling, which allocated twice its size per tool call;
// encoded into a reused buffer, it is copied out once at its size.
var factsScratch = sync.Pool{New: func() any { return new([]byte) }}

// maxFactsScratch bounds a buffer kept for reuse.
const maxFactsScratch = 1 << 20

// encodeFacts is facts.AppendStruct of md in a buffer of its own, nil when
// md cannot be encoded that way.
func encodeFacts(md map[string]any) []byte {
	bp := factsScratch.Get().(*[]byte)
	defer factsScratch.Put(bp)
	b, ok := facts.AppendStruct((*bp)[:0], md)
	if cap(b) <= maxFactsScratch {
		*bp = b[:0]
	}
	if !ok {
		return nil
	}
	return bytes.Clone(b)
}

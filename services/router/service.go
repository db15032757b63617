// Package router is the InvestigationRouter: the fast
// path (slash commands, quick actions), the smart path (natural language,
// through a model when one is configured, else a deterministic parser), the
// tool registry a session sees, suggestion chips, and the guardrails the
// router owns: plan size (PlanActions), schema cap and secondary reserve
// (SelectTools).
package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/textutil"
	"github.com/rcamesh/rcamesh/internal/warm"
)

// The guardrails the router owns (their owner, flag and record field are
// the contract's, package guardrail).
const (
	GuardrailToolBudget       = investigationv1.Guardrail_GUARDRAIL_TOOL_BUDGET
	GuardrailMaxToolSchemas   = investigationv1.Guardrail_GUARDRAIL_MAX_TOOL_SCHEMAS
	GuardrailSecondaryReserve = investigationv1.Guardrail_GUARDRAIL_SECONDARY_TOOL_RESERVE
)

// Deps are the router's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Bus publishes a failed pin when a dispatched tool call cannot reach the
	// tools service; nil disables that (the failure is still logged).
	Bus *bus.Bus
	// Tools runs the dispatched calls and lists the registry (required).
	Tools toolsv1.ToolsServiceClient
	// Brain reads a session's pins for the chat; nil leaves the chat
	// without them.
	Brain brainv1.BrainServiceClient
	// LLM serves the smart path; nil uses the deterministic parser only.
	LLM llm.Provider
}

// Service implements routerv1.RouterServiceServer.
type Service struct {
	routerv1.UnimplementedRouterServiceServer

	cfg   Config
	deps  Deps
	log   *slog.Logger
	cache *registryCache

	ctxMu    sync.Mutex
	contexts map[string]rememberedContext

	inflight chan struct{}
	wg       sync.WaitGroup
	newID    func() string
}

type rememberedContext struct {
	rc *evidencev1.RouterContext
	at time.Time
}

// New builds the router.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("router: invalid config: %w", err)
	}
	if deps.Tools == nil {
		return nil, errors.New("router: Deps.Tools is required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg:      cfg,
		deps:     deps,
		log:      log.With("service", mesh.Router),
		cache:    newRegistryCache(cfg.RegistryTTL, cfg.RegistryMaxStale, cfg.RegistryCacheSize),
		contexts: map[string]rememberedContext{},
		inflight: make(chan struct{}, cfg.MaxInflight),
		newID:    func() string { return "pin-" + uuid.NewString() },
	}, nil
}

// Register registers the RouterService on gs.
func (s *Service) Register(gs *grpc.Server) { routerv1.RegisterRouterServiceServer(gs, s) }

// RegisterGateway registers the REST routes of the RouterService on mux.
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	if err := routerv1.RegisterRouterServiceHandler(ctx, mux, conn); err != nil {
		return fmt.Errorf("router: register gateway: %w", err)
	}
	return nil
}

// Run waits for ctx, then for the dispatched tool calls still running
// (each bounded by ExecuteTimeout). It returns nil.
func (s *Service) Run(ctx context.Context) error {
	<-ctx.Done()
	s.wg.Wait()
	return nil
}

// Wait blocks until every asynchronously dispatched call has returned.
func (s *Service) Wait() { s.wg.Wait() }

// ContextMetadataKey is the gRPC metadata key (HTTP header
// "Grpc-Metadata-X-Rcamesh-Context" through the gateway) that may carry a
// RouterContext as protojson for the GET calls (ListTools, ListSuggestions).
const ContextMetadataKey = "x-rcamesh-context"

func sessionOf(id string, rc *evidencev1.RouterContext) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		id = strings.TrimSpace(rc.GetSessionId())
	}
	if id == "" {
		return "", status.Error(codes.InvalidArgument, "session_id is required")
	}
	return id, nil
}

// sessionContext returns the context to route with: the request's, else the
// last one the session sent, else an empty one; it remembers a sent one.
func (s *Service) sessionContext(session string, rc *evidencev1.RouterContext) *evidencev1.RouterContext {
	now := time.Now()
	s.ctxMu.Lock()
	defer s.ctxMu.Unlock()
	if rc != nil {
		rc = proto.CloneOf(rc)
		if rc.GetSessionId() == "" {
			rc.SessionId = session
		}
		if len(s.contexts) >= s.cfg.SessionContextMax {
			s.evictContextsLocked(now)
		}
		s.contexts[session] = rememberedContext{rc: rc, at: now}
		return rc
	}
	if r, ok := s.contexts[session]; ok && now.Sub(r.at) < s.cfg.SessionContextTTL {
		return proto.CloneOf(r.rc)
	}
	return &evidencev1.RouterContext{SessionId: session}
}

func (s *Service) evictContextsLocked(now time.Time) {
	var oldK string
	var oldT time.Time
	first := true
	for k, r := range s.contexts {
		if now.Sub(r.at) >= s.cfg.SessionContextTTL {
			delete(s.contexts, k)
			continue
		}
		if first || r.at.Before(oldT) {
			oldK, oldT, first = k, r.at, false
		}
	}
	if len(s.contexts) >= s.cfg.SessionContextMax && !first {
		delete(s.contexts, oldK)
	}
}

// Investigate routes exactly one of command, query or quick_action to a tool.
func (s *Service) Investigate(ctx context.Context, req *routerv1.InvestigateRequest) (*routerv1.InvestigateResponse, error) {
	session, err := sessionOf(req.GetSessionId(), req.GetContext())
	if err != nil {
		return nil, err
	}
	res, err := s.investigate(ctx, session, req)
	if err != nil {
		return nil, err
	}
	return res.resp, nil
}

type routed struct {
	resp *routerv1.InvestigateResponse
	// pinIDs are every dispatched pin: the primary first, then companions.
	pinIDs []string
	// companions are the extra calls dispatched with the primary.
	companions []*Call
}

func (s *Service) investigate(ctx context.Context, session string, req *routerv1.InvestigateRequest) (*routed, error) {
	switch in := req.GetInput().(type) {
	case *routerv1.InvestigateRequest_Command:
		if err := s.checkText("command", in.Command); err != nil {
			return nil, err
		}
		rc := s.sessionContext(session, req.GetContext())
		reg, err := s.registry(ctx, session)
		if err != nil {
			return nil, err
		}
		return s.runCommand(ctx, session, reg, in.Command, rc)
	case *routerv1.InvestigateRequest_Query:
		if err := s.checkText("query", in.Query); err != nil {
			return nil, err
		}
		rc := s.sessionContext(session, req.GetContext())
		reg, err := s.registry(ctx, session)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(strings.TrimSpace(in.Query), "/") {
			// A slash command typed into the query box takes the fast path.
			return s.runCommand(ctx, session, reg, in.Query, rc)
		}
		return s.runQuery(ctx, session, reg, in.Query, rc)
	case *routerv1.InvestigateRequest_QuickAction:
		qa := in.QuickAction
		if qa == nil || strings.TrimSpace(qa.GetIntent()) == "" {
			return nil, status.Error(codes.InvalidArgument, "quick_action.intent is required")
		}
		if b, err := protojson.Marshal(qa.GetParams()); err == nil && len(b) > s.cfg.MaxInputBytes {
			return nil, status.Errorf(codes.InvalidArgument, "quick_action.params is %d bytes; the limit is %d", len(b), s.cfg.MaxInputBytes)
		}
		rc := s.sessionContext(session, req.GetContext())
		reg, err := s.registry(ctx, session)
		if err != nil {
			return nil, err
		}
		return s.runQuickAction(ctx, session, reg, qa, rc)
	default:
		return nil, status.Error(codes.InvalidArgument, "one of command, query or quick_action is required")
	}
}

func (s *Service) checkText(field, text string) error {
	if strings.TrimSpace(text) == "" {
		return status.Errorf(codes.InvalidArgument, "%s is empty: one of command, query or quick_action is required", field)
	}
	if len(text) > s.cfg.MaxInputBytes {
		return status.Errorf(codes.InvalidArgument, "%s is %d bytes; the limit is %d", field, len(text), s.cfg.MaxInputBytes)
	}
	return nil
}

func toStatus(err error) error {
	var ie *InputError
	if errors.As(err, &ie) {
		return status.Error(codes.InvalidArgument, ie.Msg)
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

func (s *Service) runCommand(ctx context.Context, session string, reg *Registry, text string, rc *evidencev1.RouterContext) (*routed, error) {
	call, err := ParseCommand(reg, text)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.execute(ctx, session, call, nil, rc, evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT, routerv1.PathUsed_PATH_USED_FAST, "")
}

func (s *Service) runQuickAction(ctx context.Context, session string, reg *Registry, qa *routerv1.QuickActionPayload, rc *evidencev1.RouterContext) (*routed, error) {
	tool, ok := reg.Tool(qa.GetIntent())
	if !ok {
		msg := fmt.Sprintf("unknown intent %q", qa.GetIntent())
		if near := reg.closeIntents(qa.GetIntent()); len(near) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(near, " or "))
		}
		return nil, status.Error(codes.InvalidArgument, msg)
	}
	call, err := ValidateParams(tool, qa.GetParams().AsMap())
	if err != nil {
		return nil, toStatus(err)
	}
	return s.execute(ctx, session, call, nil, rc, evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION, routerv1.PathUsed_PATH_USED_FAST, "")
}

func (s *Service) runQuery(ctx context.Context, session string, reg *Registry, text string, rc *evidencev1.RouterContext) (*routed, error) {
	plan, how := s.smartRoute(ctx, reg, text, rc)
	if plan == nil {
		return &routed{resp: &routerv1.InvestigateResponse{
			PathUsed: routerv1.PathUsed_PATH_USED_SMART,
			Status:   routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED,
			Answer:   unresolvedAnswer(reg, text),
		}}, nil
	}
	return s.execute(ctx, session, plan.Primary, plan.Companions, rc, evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT, routerv1.PathUsed_PATH_USED_SMART, how)
}

// unresolvedAnswer says the router could not map a request and what it can do.
func unresolvedAnswer(reg *Registry, text string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I could not map %q to a tool, so nothing was run. I can run these (slash command, or describe what you need):\n", truncate(text, 120))
	for _, t := range reg.Tools {
		fmt.Fprintf(&b, "- %s: %s", usageOf(t), firstNonEmpty(t.GetDescription(), t.GetLabel()))
		if !t.GetAvailable() {
			fmt.Fprintf(&b, " (unavailable: %s)", unavailableReason(t))
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// execute fills the context, checks the tool can run and dispatches the
// primary call (and companions, best effort).
func (s *Service) execute(ctx context.Context, session string, call *Call, companions []*Call, rc *evidencev1.RouterContext,
	by evidencev1.TriggeredBy, path routerv1.PathUsed, note string) (*routed, error) {
	missing, err := FillFromContext(call, rc)
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &routerv1.InvestigateResponse{
		Intent:            call.Tool.GetIntent(),
		PathUsed:          path,
		FilledFromContext: call.Filled,
		Command:           CommandString(call),
	}
	if resp.Params, err = paramsStruct(call.Params); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if len(missing) > 0 {
		msg := missingMessage(call.Tool, missing)
		resp.Status = routerv1.InvestigateStatus_INVESTIGATE_STATUS_UNRESOLVED
		resp.Error = msg
		resp.Answer = "Nothing was run: " + msg
		return &routed{resp: resp}, nil
	}
	if !call.Tool.GetAvailable() {
		resp.Status = routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR
		resp.Error = fmt.Sprintf("tool %s is unavailable: %s", call.Tool.GetIntent(), unavailableReason(call.Tool))
		return &routed{resp: resp}, nil
	}
	pinID, err := s.dispatch(ctx, session, call, rc, by)
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
			return nil, err
		}
		resp.Status = routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR
		resp.Error = fmt.Sprintf("tool %s could not run: %s", call.Tool.GetIntent(), status.Convert(err).Message())
		return &routed{resp: resp}, nil
	}
	resp.PinId = pinID
	resp.Status = routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING
	out := &routed{resp: resp, pinIDs: []string{pinID}}
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	for _, c := range companions {
		if m, err := FillFromContext(c, rc); err != nil || len(m) > 0 || !c.Tool.GetAvailable() {
			continue
		}
		id, err := s.dispatch(ctx, session, c, rc, by)
		if err != nil {
			s.log.WarnContext(ctx, "companion tool call not dispatched", "intent", c.Tool.GetIntent(), "error", err)
			continue
		}
		out.pinIDs = append(out.pinIDs, id)
		out.companions = append(out.companions, c)
		notes = append(notes, fmt.Sprintf("also running %s (pin %s)", CommandString(c), id))
	}
	if len(notes) > 0 {
		resp.Answer = strings.Join(notes, "; ")
	}
	return out, nil
}

// dispatchers run the dispatched tool calls: on goroutines whose stacks
// have grown to a call's depth already (warm), not a new one per call.
var dispatchers = warm.New(0)

// dispatch sends one call to the tools service with a pre-assigned pin id.
// By default it returns as soon as the call is sent; the pin arrives on the
// stream. With SyncDispatch it waits and returns the call's error.
func (s *Service) dispatch(ctx context.Context, session string, call *Call, rc *evidencev1.RouterContext, by evidencev1.TriggeredBy) (string, error) {
	params, err := paramsStruct(call.Params)
	if err != nil {
		return "", err
	}
	pinID := s.newID()
	req := &toolsv1.ExecuteToolRequest{
		SessionId:   session,
		Intent:      call.Tool.GetIntent(),
		Params:      params,
		TriggeredBy: by,
		Context:     rc,
		PinId:       pinID,
		SourceAgent: "router",
		NoCache:     s.cfg.ManualNoCache,
	}
	if s.cfg.SyncDispatch {
		req.OmitAnswer = true // only the pin's id is read
		cctx, cancel := context.WithTimeout(ctx, s.cfg.ExecuteTimeout)
		defer cancel()
		resp, err := s.deps.Tools.ExecuteTool(cctx, req)
		if err != nil {
			return "", err
		}
		if id := resp.GetPin().GetId(); id != "" {
			pinID = id
		}
		return pinID, nil
	}
	// Backpressure: a burst waits briefly for a slot instead of failing;
	// only a sustained overload is refused.
	wait := time.NewTimer(s.cfg.InflightWait)
	defer wait.Stop()
	select {
	case s.inflight <- struct{}{}:
	case <-ctx.Done():
		return "", status.FromContextError(ctx.Err()).Err()
	case <-wait.C:
		return "", status.Errorf(codes.ResourceExhausted, "too many tool calls in flight (limit %d) for %s; retry shortly", s.cfg.MaxInflight, s.cfg.InflightWait)
	}
	req.OmitAnswer = true // the answer's body is not read (skipAnswer)
	s.wg.Add(1)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ExecuteTimeout)
	dispatchers.Go(func() {
		defer s.wg.Done()
		defer func() { <-s.inflight }()
		defer cancel()
		if _, err := s.deps.Tools.ExecuteTool(dctx, req, skipAnswer); err != nil {
			s.log.WarnContext(dctx, "dispatched tool call failed", "session", session, "intent", req.Intent, "pin_id", pinID, "error", err)
			s.publishFailedPin(dctx, req, err)
		}
	})
	return pinID, nil
}

// publishFailedPin tells stream followers that a dispatched call never ran,
// so a pin announced by Investigate does not stay pending forever.
func (s *Service) publishFailedPin(ctx context.Context, req *toolsv1.ExecuteToolRequest, callErr error) {
	if s.deps.Bus == nil {
		return
	}
	code := status.Code(callErr)
	if code == codes.DeadlineExceeded || code == codes.Canceled {
		return // the tool may still have run and published its own pin
	}
	source := evidencev1.Source_SOURCE_MANUAL
	if req.GetTriggeredBy() == evidencev1.TriggeredBy_TRIGGERED_BY_AUTOMATED_PIPELINE {
		source = evidencev1.Source_SOURCE_AUTO
	}
	now := timestamppb.Now()
	pin := &evidencev1.EvidencePin{
		Id:               req.GetPinId(),
		Claim:            fmt.Sprintf("%s could not run: %s", req.GetIntent(), status.Convert(callErr).Message()),
		Source:           source,
		SourceAgent:      "router",
		SourceTool:       req.GetIntent(),
		TriggeredBy:      req.GetTriggeredBy(),
		Severity:         evidencev1.Severity_SEVERITY_INFO,
		Domain:           evidencev1.Domain_DOMAIN_UNKNOWN,
		ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC,
		Namespace:        req.GetContext().GetActiveNamespace(),
		Service:          req.GetContext().GetActiveService(),
		Timestamp:        now,
		TimeWindow:       req.GetContext().GetTimeWindow(),
		SessionId:        req.GetSessionId(),
		Params:           req.GetParams(),
		Success:          false,
		Error:            status.Convert(callErr).Message(),
		Version:          1,
	}
	ev := &evidencev1.PinEvent{
		EventId:   req.GetPinId() + "-failed",
		Kind:      evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED,
		SessionId: req.GetSessionId(),
		Pin:       pin,
		Time:      now,
	}
	if _, err := s.deps.Bus.PublishPin(ctx, ev); err != nil {
		s.log.WarnContext(ctx, "publishing the failed pin", "pin_id", req.GetPinId(), "error", err)
	}
}

// truncate cuts s to at most n bytes plus "…", never inside a character.
func truncate(s string, n int) string { return textutil.TruncateEllipsis(s, n) }

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

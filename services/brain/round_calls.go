package brain

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// A round's calls: the first round's from the plan (planCalls), run one by
// one through the tools service (runPending, execute) under the circuit
// breakers; the next round's from the critic's requests (requestedCalls,
// callsFor), completed by the router's selection when the critic decided
// to widen the scope (alternatives).

// Call origins (ToolCallRecord.origin).
const (
	originSeed   = "seed"
	originPlan   = "plan"
	originModel  = "model"
	originCritic = "critic"
	originExpand = "expand"
)

// planCalls turns the plan's actions into the first round's calls.
func planCalls(plan *investigationv1.TaskPlan) []pendingCall {
	var out []pendingCall
	for _, a := range plan.GetActions() {
		out = append(out, pendingCall{Intent: a.GetIntent(), Params: structMap(a.GetParams()), Origin: originPlan})
	}
	return out
}

// runPending runs the pending calls of the current round one by one,
// checkpointing after each, and returns the round's totals. A breaker stops
// the round (its name is returned); ctx ending returns ctx.Err() with the
// unrun calls still pending.
func (s *Service) runPending(ctx context.Context, st *invState, iteration int, onCall func(pendingCall, callOutcome)) (string, error) {
	for len(st.loop.Pending) > 0 {
		c := st.loop.Pending[0]
		out := s.execute(ctx, st, c, iteration)
		if out.interrupted || ctx.Err() != nil {
			return "", ctx.Err()
		}
		if out.unavailable {
			return "", out.err // the call stays pending for the retry
		}
		if out.capped {
			st.loop.Pending = nil
			return strings.TrimPrefix(out.err.Error(), "circuit breaker "), nil
		}
		st.loop.Pending = st.loop.Pending[1:]
		st.loop.RoundCalls++
		if out.fresh {
			st.loop.RoundFresh++
		}
		if out.newEvid {
			st.loop.RoundNew++
		}
		if onCall != nil {
			onCall(c, out)
		}
		if err := s.checkpoint(ctx, st); err != nil {
			return "", err
		}
	}
	return "", nil
}

// callOutcome is what one tool call produced.
type callOutcome struct {
	rec      *investigationv1.ToolCallRecord
	pin      *evidencev1.EvidencePin
	result   *evidencev1.ToolResult
	replayed bool // served from a cache (tools' or ours): no fresh evidence
	fresh    bool // the tool really ran
	newEvid  bool // a new pin with data
	capped   bool // a circuit breaker stopped the call
	// interrupted: ctx ended during the call; nothing was recorded.
	interrupted bool
	// unavailable: the tools service could not be reached; nothing was
	// recorded and the call stays pending (err is a *dependencyError).
	unavailable bool
	err         error
}

// execute runs one tool call through the tools service and records it.
func (s *Service) execute(ctx context.Context, st *invState, call pendingCall, iteration int) callOutcome {
	if name, tripped := s.breakerTripped(ctx, st); tripped {
		return callOutcome{capped: true, err: fmt.Errorf("circuit breaker %s", name)}
	}
	if call.Params == nil {
		call.Params = map[string]any{}
	}
	key := callKey(call.Intent, call.Params)
	rec := &investigationv1.ToolCallRecord{Intent: call.Intent, Iteration: int32(iteration), Origin: call.Origin}
	if ps, err := structpb.NewStruct(call.Params); err == nil {
		rec.Params = ps
	}
	if call.Intent == intentReinvestigate && st.isSub() {
		rec.Error = "re_investigate_service is not run inside a sub-investigation (no recursion)"
		st.rec.ToolCalls = append(st.rec.ToolCalls, rec)
		return callOutcome{rec: rec, err: fmt.Errorf("%s", rec.Error)}
	}
	if st.executed(key) {
		// Our own duplicate detection: the same call already ran in this investigation.
		rec.Replayed, rec.Success = true, true
		for _, prev := range st.rec.GetToolCalls() {
			if prev.GetIntent() == call.Intent && prev.GetPinId() != "" && callKey(prev.GetIntent(), structMap(prev.GetParams())) == key {
				rec.PinId, rec.NoData = prev.GetPinId(), prev.GetNoData()
			}
		}
		st.rec.ToolCalls = append(st.rec.ToolCalls, rec)
		return callOutcome{rec: rec, pin: st.pin(rec.GetPinId()), replayed: true}
	}
	start := s.now()
	cctx, cancel := s.callCtx(ctx)
	resp, err := s.clients.Tools.ExecuteTool(cctx, &toolsv1.ExecuteToolRequest{
		SessionId:       st.rec.GetSessionId(),
		Intent:          call.Intent,
		Params:          rec.Params,
		TriggeredBy:     evidencev1.TriggeredBy_TRIGGERED_BY_AUTOMATED_PIPELINE,
		Context:         st.rc,
		SourceAgent:     "brain",
		InvestigationId: st.rec.GetInvestigationId(),
	})
	cancel()
	if err != nil && ctx.Err() != nil {
		// Interrupted (shutdown): nothing is recorded; the call reruns on resume.
		return callOutcome{interrupted: true, err: ctx.Err()}
	}
	if isUnavailable(err) {
		return callOutcome{unavailable: true, err: unavailable("tools", fmt.Errorf("tools.ExecuteTool %s: %w", call.Intent, err))}
	}
	rec.DurationMs = max(s.now().Sub(start).Milliseconds(), 1)
	st.loop.Executed = append(st.loop.Executed, key)
	if err != nil {
		rec.Error = fmt.Sprintf("tools.ExecuteTool: %v", err)
		st.rec.ToolCalls = append(st.rec.ToolCalls, rec)
		return callOutcome{rec: rec, fresh: true, err: err}
	}
	s.tripsFrom(ctx, st, resp.GetTrips())
	limitsFrom(st, resp.GetLimits())
	res, pin := resp.GetResult(), resp.GetPin()
	rec.Success = res.GetSuccess()
	rec.NoData = res.GetNoData() || pin.GetNoData()
	rec.Replayed = resp.GetReplayed()
	rec.Error = res.GetError()
	if pin != nil {
		rec.PinId = pin.GetId()
		if pin.GetParams() != nil && len(pin.GetParams().GetFields()) > 0 {
			rec.Params = proto.CloneOf(pin.GetParams())
		}
	}
	st.rec.ToolCalls = append(st.rec.ToolCalls, rec)
	isNew := st.addPin(pin)
	if pin != nil {
		s.copyToParent(ctx, st, pin)
	}
	return callOutcome{
		rec: rec, pin: pin, result: res,
		replayed: resp.GetReplayed(),
		fresh:    !resp.GetReplayed(),
		newEvid:  isNew && !resp.GetReplayed() && rec.GetSuccess() && !rec.GetNoData(),
	}
}

// breakerTripped checks the tool-call and wall-time circuit breakers,
// recording the first trip of each.
func (s *Service) breakerTripped(ctx context.Context, st *invState) (string, bool) {
	if n := len(st.rec.GetToolCalls()); n >= s.cfg.MaxToolCalls {
		if !st.hasTrip(GuardrailMaxToolCalls) {
			s.brainTrip(ctx, st, GuardrailMaxToolCalls, fmt.Sprintf("%d tool calls reached the limit", n), float64(s.cfg.MaxToolCalls), float64(n))
		}
		return guardrail.Name(GuardrailMaxToolCalls), true
	}
	if w := st.wallMs(s.now()); w >= s.cfg.MaxWall.Milliseconds() {
		if !st.hasTrip(GuardrailMaxWall) {
			s.brainTrip(ctx, st, GuardrailMaxWall, fmt.Sprintf("investigation ran %s", time.Duration(w)*time.Millisecond), float64(s.cfg.MaxWall.Milliseconds()), float64(w))
		}
		return guardrail.Name(GuardrailMaxWall), true
	}
	return "", false
}

// hasTrip says whether g has tripped in this investigation (by name, which
// records checkpointed before trips carried their kind also have).
func (st *invState) hasTrip(g investigationv1.Guardrail) bool {
	name := guardrail.Name(g)
	for _, t := range st.rec.GetGuardrailTrips() {
		if t.GetGuardrail() == name {
			return true
		}
	}
	return false
}

// callKey is a call's identity: intent and canonical parameters.
func callKey(intent string, params map[string]any) string {
	b, err := json.Marshal(params) // map keys are sorted
	if err != nil {
		b = []byte(fmt.Sprint(params))
	}
	return intent + "|" + string(b)
}

// copyToParent publishes a sub-investigation's pin into its parent session
// (idempotent: the bus deduplicates on session, pin id, kind and version).
func (s *Service) copyToParent(ctx context.Context, st *invState, pin *evidencev1.EvidencePin) {
	parent := st.rec.GetParentSessionId()
	if s.bus == nil || parent == "" || parent == st.rec.GetSessionId() {
		return
	}
	cp := proto.CloneOf(pin)
	cp.SessionId = parent
	if cp.Version == 0 {
		cp.Version = 1
	}
	md := cp.GetMetadata()
	if md == nil {
		md = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		cp.Metadata = md
	}
	md.Fields["parent_ref"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"session_id":       structpb.NewStringValue(st.rec.GetSessionId()),
		"investigation_id": structpb.NewStringValue(st.rec.GetInvestigationId()),
		"pin_id":           structpb.NewStringValue(pin.GetId()),
	}})
	pctx, cancel := s.callCtx(ctx)
	defer cancel()
	if _, err := s.bus.PublishPin(pctx, &evidencev1.PinEvent{
		Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: parent, Pin: cp,
	}); err != nil {
		s.log.WarnContext(ctx, "copy pin to parent session failed", "pin_id", pin.GetId(), "parent", parent, "err", err)
	}
}

// refreshPins merges the session's pins from the stream (critic verdicts,
// manual pins) into the state: the latest version of each wins.
func (st *invState) refreshPins(ctx context.Context, s *Service) {
	if s.bus == nil {
		return
	}
	evs, err := s.bus.Replay(ctx, pinFilter(st.rec.GetSessionId()), 0)
	if err != nil {
		s.log.WarnContext(ctx, "pin refresh failed; using the pins in hand", "err", err)
		return
	}
	for _, ev := range evs {
		if p := ev.GetPin().GetPin(); p != nil {
			st.addPin(p)
		}
	}
}

// requestedCalls turns the critic's requested intents into calls; without
// requests it falls back to planned actions that have not run.
func (s *Service) requestedCalls(ctx context.Context, st *invState, review *investigationv1.CriticReview) []pendingCall {
	var intents []string
	for _, o := range review.GetObjections() {
		if o.GetPassed() {
			continue
		}
		for _, in := range o.GetRequestedIntents() {
			intents = appendUnique(intents, in)
		}
	}
	calls := s.callsFor(ctx, st, intents, originCritic)
	fresh := calls[:0:0]
	for _, c := range calls {
		if !st.ranEquivalent(c) {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) > 0 {
		return fresh
	}
	// The critic decided to widen the scope and its own tools are used up
	// or repeat calls made: the brain completes the widening with the
	// router's most relevant tools that have not run yet. Otherwise (or
	// when there is none) the repeated calls go ahead and the stagnation
	// breaker ends the loop.
	if review.GetWidenScope() {
		if alt := s.alternatives(ctx, st, 3); len(alt) > 0 {
			return alt
		}
	}
	return calls
}

// callsFor turns intents into the calls the loop makes for them; an intent
// the evidence cannot parameterise stays an unknown. When none of the
// critic's intents can be called, the plan's actions that have not run are
// the calls.
func (s *Service) callsFor(ctx context.Context, st *invState, intents []string, origin string) []pendingCall {
	var out []pendingCall
	for _, in := range intents {
		c, miss := s.callFor(ctx, st, in, origin)
		switch {
		case miss != "":
			// A follow-up the evidence cannot parameterise (logs of a pod
			// when no pod is known) would only fail at the tool: it is
			// not made, and the gap stays an unknown.
			st.loop.Unknowns = appendUnique(st.loop.Unknowns, fmt.Sprintf("%s needs %s, which no evidence names", c.Intent, miss))
		case c.Intent != "":
			out = append(out, c)
		}
	}
	if len(out) == 0 && origin == originCritic {
		out = st.unrunPlanCalls()
	}
	return out
}

// callFor is the call the loop would make for intent now, with no side
// effect: c.Intent is empty when the intent is not run here, and miss names
// the required parameter no evidence supplies (c is then not to be made).
func (s *Service) callFor(ctx context.Context, st *invState, in, origin string) (c pendingCall, miss string) {
	if in == "" || (in == intentReinvestigate && st.isSub()) {
		return pendingCall{}, ""
	}
	// A planned action keeps the router's parameters.
	var params map[string]any
	for _, a := range st.rec.GetPlan().GetActions() {
		if a.GetIntent() == in && !st.executed(callKey(in, structMap(a.GetParams()))) {
			params = structMap(a.GetParams())
			break
		}
	}
	if params == nil {
		params = s.inferParams(ctx, st, in)
		// A metrics request without an expression of its own: discover
		// the scope's metrics instead of guessing a PromQL name.
		if q, _ := params["query"].(string); in == intentPromQL && !looksLikePromQL(q) {
			if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentSurveyMetrics]; ok {
				in = intentSurveyMetrics
				params = s.inferParams(ctx, st, in)
			}
		}
	}
	return pendingCall{Intent: in, Params: params, Origin: origin}, s.missingRequired(ctx, st, in, params)
}

// unrunPlanCalls are the plan's actions that have not run.
func (st *invState) unrunPlanCalls() []pendingCall {
	var out []pendingCall
	for _, c := range planCalls(st.rec.GetPlan()) {
		if !st.executed(callKey(c.Intent, c.Params)) {
			c.Origin = originPlan
			out = append(out, c)
		}
	}
	return out
}

// nextCalls is the loop's account, for the critic, of what a call for each
// intent would be now (the registry's intents and every typed intent): new
// evidence, a repeat of a call made, or not callable (left out); and whether
// an unrun planned action would be new. The critic decides scope widening
// from it (CriticReview.widen_scope).
func (s *Service) nextCalls(ctx context.Context, st *invState) *criticv1.NextCalls {
	names := map[string]bool{}
	for _, n := range intent.All {
		names[n.String()] = true
	}
	for n := range s.toolDefs(ctx, st.rec.GetSessionId()) {
		names[n] = true
	}
	next := &criticv1.NextCalls{}
	for _, in := range slices.Sorted(maps.Keys(names)) {
		c, miss := s.callFor(ctx, st, in, originCritic)
		switch {
		case c.Intent == "" || miss != "":
		case st.ranEquivalent(c):
			next.RepeatIntents = append(next.RepeatIntents, in)
		default:
			next.FreshIntents = append(next.FreshIntents, in)
		}
	}
	for _, c := range st.unrunPlanCalls() {
		if !st.ranEquivalent(c) {
			next.PlanHasFreshCalls = true
			break
		}
	}
	return next
}

const (
	intentPromQL        = string(intent.QueryPrometheus)
	intentSurveyMetrics = string(intent.SurveyMetrics)
)

// looksLikePromQL: an expression with a selector, a function or an operator,
// not a bare word such as "error".
func looksLikePromQL(q string) bool {
	return strings.ContainsAny(q, "{}()[]_:")
}

// missingRequired names the first required parameter of intent that
// neither params nor the investigation's context supplies ("" when none).
func (s *Service) missingRequired(ctx context.Context, st *invState, intent string, params map[string]any) string {
	def := s.toolDefs(ctx, st.rec.GetSessionId())[intent]
	if def == nil {
		return ""
	}
	for _, p := range def.GetParamsSchema() {
		if !p.GetRequired() {
			continue
		}
		if v, ok := params[p.GetName()]; ok && fmt.Sprint(v) != "" {
			continue
		}
		if f := p.GetDefaultFromContext(); f != "" && mesh.ContextValue(st.rc, f) != "" {
			continue
		}
		return p.GetName()
	}
	return ""
}

// ranEquivalent reports whether a call of the same intent already ran with
// at least these parameters (the tools fill the rest from the context, so
// asking again adds nothing).
func (st *invState) ranEquivalent(c pendingCall) bool {
	for _, r := range st.rec.GetToolCalls() {
		if r.GetIntent() != c.Intent || (r.GetError() != "" && r.GetPinId() == "") {
			continue
		}
		have := structMap(r.GetParams())
		same := true
		for k, v := range c.Params {
			if fmt.Sprint(have[k]) != fmt.Sprint(v) {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// alternatives are up to n of the router's selected tools for this alert
// whose intent has not run yet, with inferred parameters.
func (s *Service) alternatives(ctx context.Context, st *invState, n int) []pendingCall {
	resp, ok := s.routerSelection(ctx, st)
	if !ok {
		return nil
	}
	ran := map[string]bool{}
	for _, in := range st.executedIntents() {
		ran[in] = true
	}
	var out []pendingCall
	for _, d := range resp.GetTools() {
		in := d.GetIntent()
		if ran[in] || in == intentReinvestigate || d.GetSecondary() || (d.GetUnavailableReason() != "" && !d.GetAvailable()) {
			continue
		}
		params := s.inferParams(ctx, st, in)
		if s.missingRequired(ctx, st, in, params) != "" {
			continue // nothing in the evidence parameterises it yet
		}
		out = append(out, pendingCall{Intent: in, Params: params, Origin: originExpand})
		if len(out) >= n {
			break
		}
	}
	return out
}

// readData reports whether a call of intent ran and returned data (a call
// that found nothing, such as the alerted service's commits when its
// repository is another's, read nothing).
func (st *invState) readData(intent string) bool {
	for _, c := range st.rec.GetToolCalls() {
		if c.GetIntent() == intent && c.GetPinId() != "" && c.GetError() == "" && !c.GetNoData() {
			return true
		}
	}
	return false
}

// executedIntents lists the intents that ran, in order, once each.
func (st *invState) executedIntents() []string {
	var out []string
	for _, c := range st.rec.GetToolCalls() {
		if c.GetError() == "" || c.GetPinId() != "" {
			out = appendUnique(out, c.GetIntent())
		}
	}
	return out
}

func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return map[string]any{}
	}
	return s.AsMap()
}

// routerSelection is the router's ranked tool selection for the alert (a
// failure is recorded as a failed step; ok is then false).
func (s *Service) routerSelection(ctx context.Context, st *invState) (*routerv1.SelectToolsResponse, bool) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Router.SelectTools(cctx, &routerv1.SelectToolsRequest{
		SessionId: st.rec.GetSessionId(), Plan: st.rec.GetPlan(), Alert: st.rec.GetAlert(),
	})
	if err != nil {
		s.subStageFailed(ctx, st, "router.select_tools", err)
		return nil, false
	}
	return resp, true
}

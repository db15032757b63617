package brain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Call origins (ToolCallRecord.origin).
const (
	originSeed   = "seed"
	originPlan   = "plan"
	originModel  = "model"
	originCritic = "critic"
	originExpand = "expand"
)

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

// callKey is a call's identity: intent and canonical parameters.
func callKey(intent string, params map[string]any) string {
	b, err := json.Marshal(params) // map keys are sorted
	if err != nil {
		b = []byte(fmt.Sprint(params))
	}
	return intent + "|" + string(b)
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

func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return map[string]any{}
	}
	return s.AsMap()
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

// ---- parameters ----

// toolDefs returns the tool registry (cached for a minute).
func (s *Service) toolDefs(ctx context.Context, sid string) map[string]*evidencev1.ToolDefinition {
	s.defsMu.Lock()
	if s.defs != nil && s.now().Sub(s.defsAt) < time.Minute {
		d := s.defs
		s.defsMu.Unlock()
		return d
	}
	s.defsMu.Unlock()
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	defs, err := mesh.ToolDefinitions(cctx, s.clients.Tools, sid)
	if err != nil {
		s.log.WarnContext(ctx, "tool definitions unavailable; calls carry only context", "err", err)
		return nil
	}
	m := make(map[string]*evidencev1.ToolDefinition, len(defs))
	for _, d := range defs {
		m[d.GetIntent()] = d
	}
	s.defsMu.Lock()
	s.defs, s.defsAt = m, s.now()
	s.defsMu.Unlock()
	return m
}

// inferParams fills the parameters of a requested intent from the alert and
// the evidence; parameters with a context default are left to the tools
// service, which fills them from the RouterContext.
func (s *Service) inferParams(ctx context.Context, st *invState, intent string) map[string]any {
	params := map[string]any{}
	def := s.toolDefs(ctx, st.rec.GetSessionId())[intent]
	if def == nil {
		return params
	}
	vals := st.candidates()
	for _, p := range def.GetParamsSchema() {
		if f := p.GetDefaultFromContext(); f != "" && contextValue(st.rc, f) != "" {
			continue
		}
		name := strings.ToLower(p.GetName())
		switch p.GetType() {
		case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
			if name == "previous" && vals["_restarted"] == "true" {
				params[p.GetName()] = true
			}
			continue
		case evidencev1.ParamType_PARAM_TYPE_NUMBER:
			continue
		}
		v := vals[name]
		if nodeTool(intent) && (name == "name" || name == "resource_name") {
			// A node tool's "name" is a node: the alert's pod or service
			// name would match nothing; empty lists every node.
			v = vals["node"]
		}
		if v == "" && (name == "query" || name == "pattern" || name == "q") && logTool(def) {
			// A log search scoped to the alert's service or pod: every line,
			// errors first, unless the alert names its error; unscoped, errors.
			switch {
			case vals["_symptom"] != "":
				v = vals["_symptom"]
			case vals["service"] != "" || vals["pod"] != "":
				v = "*"
			case p.GetRequired():
				v = "error"
			}
		}
		if v == "" && p.GetRequired() && (name == "query" || name == "pattern" || name == "q") {
			v = firstNonEmpty(vals["_symptom"], "error")
		}
		if v == "" {
			continue
		}
		if opts := p.GetOptions(); len(opts) > 0 && p.GetType() == evidencev1.ParamType_PARAM_TYPE_SELECT {
			ok := false
			for _, o := range opts {
				if strings.EqualFold(o, v) {
					v, ok = o, true
					break
				}
			}
			if !ok {
				continue
			}
		}
		params[p.GetName()] = v
	}
	return params
}

// nodeTool: the intent inspects Kubernetes nodes.
func nodeTool(intent string) bool { return strings.Contains(intent, "node") }

// logTool: the tool searches logs.
func logTool(def *evidencev1.ToolDefinition) bool {
	return def.GetCategory() == evidencev1.ToolCategory_TOOL_CATEGORY_LOGS
}

func contextValue(rc *evidencev1.RouterContext, field string) string {
	switch field {
	case "active_namespace":
		return rc.GetActiveNamespace()
	case "active_service":
		return rc.GetActiveService()
	case "active_pod":
		return rc.GetActivePod()
	case "session_id":
		return rc.GetSessionId()
	case "incident_id":
		return rc.GetIncidentId()
	}
	return rc.GetExtra()[field]
}

// candidates are parameter values inferred from the alert and the pins.
func (st *invState) candidates() map[string]string {
	a := st.rec.GetAlert()
	v := map[string]string{
		"namespace": a.GetNamespace(), "service": a.GetService(), "app": a.GetService(), "cluster": a.GetCluster(),
	}
	pod, restarted := st.bestPod()
	v["pod"], v["pod_name"] = pod, pod
	if pod == "" && a.GetService() != "" {
		// No pod in evidence yet: the workload's pods by name prefix.
		v["pod"] = strings.TrimSuffix(a.GetService(), "-") + "-*"
	}
	if restarted {
		v["_restarted"] = "true"
	}
	kind, name := a.GetResourceKind(), a.GetResourceName()
	if kind == "" && pod != "" {
		kind, name = "pod", pod
	}
	v["kind"], v["resource_kind"] = kind, kind
	v["name"], v["resource_name"], v["resource"] = name, name, name
	workload := firstNonEmpty(a.GetLabels()["workload_name"], a.GetLabels()["deployment"], a.GetLabels()["kube_deployment"], a.GetService())
	v["deployment"], v["workload"] = workload, workload
	switch kind {
	case "node":
		v["node"], v["node_name"] = name, name
	case "db_instance":
		v["db_instance"], v["instance"], v["db_instance_identifier"], v["db"] = name, name, name, name
	}
	if v["node"] == "" {
		v["node"] = st.podNode(pod)
		v["node_name"] = v["node"]
	}
	v["_symptom"] = firstNonEmpty(a.GetErrorMessage(), "")
	return v
}

// bestPod picks the pod to look at: the alert's, else the unhealthiest pod of
// the alerting service seen in the evidence.
func (st *invState) bestPod() (string, bool) {
	a := st.rec.GetAlert()
	pods := st.pods()
	if a.GetPod() != "" {
		for _, p := range pods {
			if p.Name == a.GetPod() {
				return p.Name, p.Restarts > 0
			}
		}
		return a.GetPod(), false
	}
	type scored struct {
		p     facts.Pod
		score int
	}
	var cands []scored
	for _, p := range pods {
		if a.GetNamespace() != "" && p.Namespace != "" && p.Namespace != a.GetNamespace() {
			continue
		}
		sc := 0
		if !p.Ready {
			sc += 4
		}
		if p.Reason != "" || p.OOMKilled {
			sc += 3
		}
		sc += int(min(p.Restarts, 5))
		if a.GetService() != "" && (p.Workload == a.GetService() || strings.HasPrefix(p.Name, a.GetService())) {
			sc += 2
		}
		if sc > 0 {
			cands = append(cands, scored{p, sc})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	return cands[0].p.Name, cands[0].p.Restarts > 0
}

func (st *invState) podNode(pod string) string {
	if pod == "" {
		return ""
	}
	for _, p := range st.pods() {
		if p.Name == pod {
			return p.Node
		}
	}
	return ""
}

func (st *invState) pods() []facts.Pod {
	var out []facts.Pod
	for _, pin := range st.pins {
		var ps []facts.Pod
		if ok, err := facts.Decode(pin.GetMetadata(), facts.KeyPods, &ps); ok && err == nil {
			out = append(out, ps...)
		}
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

// planCalls turns the plan's actions into the first round's calls.
func planCalls(plan *investigationv1.TaskPlan) []pendingCall {
	var out []pendingCall
	for _, a := range plan.GetActions() {
		out = append(out, pendingCall{Intent: a.GetIntent(), Params: structMap(a.GetParams()), Origin: originPlan})
	}
	return out
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

package brain

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/intent"
)

const (
	dsConcluded   = "DIAGNOSIS_STATUS_CONCLUDED"
	dsNeedsReview = "DIAGNOSIS_STATUS_NEEDS_REVIEW"
	dsEscalated   = "DIAGNOSIS_STATUS_ESCALATED"
)

func (st *invState) stop(status, reason string) {
	st.loop.Done = true
	st.loop.Status = status
	st.loop.StopReason = reason
}

// rulesLoop is the offline supervisor (no model configured): seed calls from
// the plan, synthesis over the pins, the critic's review; GATHER_MORE runs
// the intents the critic asks for and loops. Every round is one loop and is
// checkpointed. It stops on ACCEPT (then the critic's conclusion gate),
// ESCALATE, the loop cap, the stagnation breaker, stalled retrievals, or the
// tool-call and wall-time breakers.
func (s *Service) rulesLoop(ctx context.Context, st *invState) (string, error) {
	if !st.loop.Seeded {
		st.loop.Seeded = true
		st.loop.Pending = planCalls(st.rec.GetPlan())
		for i := range st.loop.Pending {
			st.loop.Pending[i].Origin = originSeed
		}
	}
	for !st.loop.Done {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if !st.loop.InRound {
			if name, tripped := s.breakerTripped(ctx, st); tripped {
				st.stop(dsNeedsReview, "circuit breaker "+name)
				break
			}
			if s.loopCapReached(ctx, st) {
				break
			}
			st.loop.Round++
			st.rec.Loops = int32(st.loop.Round)
			st.loop.InRound = true
			st.loop.RoundCalls, st.loop.RoundFresh, st.loop.RoundNew, st.loop.Breaker = 0, 0, 0, ""
			st.loop.Progressed = false
		}
		breaker, err := s.runPending(ctx, st, st.loop.Round, nil)
		if err != nil {
			return "", err
		}
		if breaker == "" {
			// The leading suspect's own configuration, read in the same round.
			if fu := s.configFollowUps(ctx, st); len(fu) > 0 {
				st.loop.Pending = fu
				if breaker, err = s.runPending(ctx, st, st.loop.Round, nil); err != nil {
					return "", err
				}
			}
		}
		if breaker != "" {
			st.loop.Breaker = breaker
		}
		if !st.loop.Progressed {
			s.updateProgress(ctx, st, st.loop.RoundCalls, st.loop.RoundFresh, st.loop.RoundNew)
			st.loop.Progressed = true
		}
		final, reason := s.forcedFinal(st)
		review, err := s.synthesizeAndReview(ctx, st)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if isDependencyFailure(err) {
			return "", err // the round stays open: the retry resumes at the review
		}
		switch {
		case err != nil:
			st.stop(dsNeedsReview, "hypothesis review failed: "+err.Error())
		case final:
			st.stop(dsNeedsReview, reason)
		case review.GetAction() == investigationv1.CriticAction_CRITIC_ACTION_ACCEPT:
			if err := s.acceptConclusion(ctx, st); err != nil {
				return "", err
			}
		case review.GetAction() == investigationv1.CriticAction_CRITIC_ACTION_ESCALATE:
			st.stop(dsEscalated, "critic escalated: "+firstNonEmpty(review.GetSummary(), "conflicting evidence"))
		default:
			st.loop.Pending = s.requestedCalls(ctx, st, review)
		}
		st.loop.InRound = false
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err := s.checkpoint(ctx, st); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d loops, %d tool calls, %d pins; stop: %s", st.loop.Round, len(st.rec.GetToolCalls()), len(st.pins), st.loop.StopReason), nil
}

// loopCapReached is the loop-length rule of both loops: an investigation
// runs at most -brain.max-loops iterations, a model turn or a rules round
// each. The rules loop also ends when the critic escalates at its
// -critic.max-rounds, so it runs at most the smaller of the two; whichever
// binds records its trip. At the cap the loop stops as NEEDS_REVIEW.
func (s *Service) loopCapReached(ctx context.Context, st *invState) bool {
	if st.loop.Round < s.cfg.MaxLoops {
		return false
	}
	s.brainTrip(ctx, st, GuardrailMaxLoops, fmt.Sprintf("loop cap of %d iterations reached", s.cfg.MaxLoops), float64(s.cfg.MaxLoops), float64(st.loop.Round))
	st.stop(dsNeedsReview, "loop iteration cap reached ("+guardrail.Name(GuardrailMaxLoops)+")")
	return true
}

// updateProgress updates the stagnation and stalled-retrieval counters after
// a round and says whether a breaker forces the final answer.
func (s *Service) updateProgress(ctx context.Context, st *invState, calls, fresh, newEvid int) (bool, string) {
	if calls > 0 && fresh == 0 {
		st.loop.Stagnant++
	} else if fresh > 0 {
		st.loop.Stagnant = 0
	}
	if newEvid == 0 {
		st.loop.Stalled++
	} else {
		st.loop.Stalled = 0
	}
	if st.loop.Stagnant >= s.cfg.MaxStagnantIterations {
		s.brainTrip(ctx, st, GuardrailStagnation, fmt.Sprintf("%d consecutive iterations only replayed earlier calls; tools stripped, final answer forced", st.loop.Stagnant),
			float64(s.cfg.MaxStagnantIterations), float64(st.loop.Stagnant))
		st.loop.Stripped = true
		return true, "stagnation breaker (" + guardrail.Name(GuardrailStagnation) + ")"
	}
	if st.loop.Stalled >= s.cfg.MaxStalledRetrievals {
		s.brainTrip(ctx, st, GuardrailStalledRetrievals, fmt.Sprintf("%d consecutive rounds added no new evidence", st.loop.Stalled),
			float64(s.cfg.MaxStalledRetrievals), float64(st.loop.Stalled))
		st.loop.Stripped = true
		return true, "stalled retrievals (" + guardrail.Name(GuardrailStalledRetrievals) + ")"
	}
	return false, ""
}

// forcedFinal says whether a breaker ends the loop after this round.
func (s *Service) forcedFinal(st *invState) (bool, string) {
	switch {
	case st.loop.Breaker != "":
		return true, "circuit breaker " + st.loop.Breaker
	case st.loop.Stagnant >= s.cfg.MaxStagnantIterations:
		return true, "stagnation breaker (" + guardrail.Name(GuardrailStagnation) + ")"
	case st.loop.Stalled >= s.cfg.MaxStalledRetrievals:
		return true, "stalled retrievals (" + guardrail.Name(GuardrailStalledRetrievals) + ")"
	}
	return false, ""
}

// synthesizeAndReview ranks hypotheses over the pins and has the critic review them.
func (s *Service) synthesizeAndReview(ctx context.Context, st *invState) (*investigationv1.CriticReview, error) {
	st.refreshPins(ctx, s)
	res, err := analysis.Analyze(ctx, analysis.Input{Alert: st.rec.GetAlert(), Pins: st.pins, NonPaged: s.cfg.NonPagedEnvironments})
	if err != nil {
		s.subStageFailed(ctx, st, "synthesize", err)
		return nil, fmt.Errorf("analysis: %w", err)
	}
	st.loop.Unknowns = res.Unknowns
	round := int32(len(st.rec.GetHypothesisRounds()) + 1)
	set := &investigationv1.HypothesisSet{Hypotheses: res.Hypotheses, Round: round}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Critic.ReviewHypotheses(cctx, &criticv1.ReviewHypothesesRequest{
		SessionId: st.rec.GetSessionId(), Hypotheses: set, Alert: st.rec.GetAlert(), Round: round, Pins: st.pins,
	})
	if err != nil {
		if isUnavailable(err) {
			return nil, unavailable("critic", fmt.Errorf("critic.ReviewHypotheses: %w", err))
		}
		st.rec.HypothesisRounds = append(st.rec.HypothesisRounds, set)
		s.subStageFailed(ctx, st, "critic.review_hypotheses", err)
		return nil, fmt.Errorf("critic.ReviewHypotheses: %w", err)
	}
	s.tripsFrom(ctx, st, resp.GetTrips())
	if rr := resp.GetReranked(); rr != nil && len(rr.GetHypotheses()) > 0 {
		set = rr
		set.Round = round
	}
	st.rec.HypothesisRounds = append(st.rec.HypothesisRounds, set)
	review := resp.GetReview()
	if review == nil {
		review = &investigationv1.CriticReview{Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Round: round, Summary: "empty review"}
	}
	st.rec.Reviews = append(st.rec.Reviews, review)
	st.review = review
	limitsFrom(st, resp.GetLimits())
	return review, nil
}

// subStageFailed records a failed step inside a stage (never swallowed).
func (s *Service) subStageFailed(ctx context.Context, st *invState, name string, err error) {
	now := s.now()
	st.rec.Stages = append(st.rec.Stages, &investigationv1.StageRecord{
		Name: stageGather + "/" + name, StartedAt: timestamppb.New(now), Status: "failed", Detail: err.Error(),
	})
	s.log.WarnContext(ctx, "step failed", "step", name, "investigation_id", st.rec.GetInvestigationId(), "err", err)
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
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Router.SelectTools(cctx, &routerv1.SelectToolsRequest{
		SessionId: st.rec.GetSessionId(), Plan: st.rec.GetPlan(), Alert: st.rec.GetAlert(),
	})
	if err != nil {
		s.subStageFailed(ctx, st, "router.select_tools", err)
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

func (s *Service) callsFor(ctx context.Context, st *invState, intents []string, origin string) []pendingCall {
	var out []pendingCall
	for _, in := range intents {
		if in == "" || (in == intentReinvestigate && st.isSub()) {
			continue
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
		if miss := s.missingRequired(ctx, st, in, params); miss != "" {
			// A follow-up the evidence cannot parameterise (logs of a pod
			// when no pod is known) would only fail at the tool: it is
			// not made, and the gap stays an unknown.
			st.loop.Unknowns = appendUnique(st.loop.Unknowns, fmt.Sprintf("%s needs %s, which no evidence names", in, miss))
			continue
		}
		out = append(out, pendingCall{Intent: in, Params: params, Origin: origin})
	}
	if len(out) == 0 && origin == originCritic {
		for _, c := range planCalls(st.rec.GetPlan()) {
			if !st.executed(callKey(c.Intent, c.Params)) {
				c.Origin = originPlan
				out = append(out, c)
			}
		}
	}
	return out
}

// askConclusion asks the critic whether the loop may stop with the proposed
// diagnosis, for both loops: it stops the investigation when the critic
// accepts, fails or has reached its rejection limit (done), and otherwise
// returns the refusal and its reason for the caller to act on. A critic that
// cannot be reached is a dependency failure (err): the stage is retried.
func (s *Service) askConclusion(ctx context.Context, st *invState) (resp *criticv1.AcceptConclusionResponse, reason string, done bool, err error) {
	proposed := s.proposedDiagnosis(ctx, st)
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err = s.clients.Critic.AcceptConclusion(cctx, criticAcceptRequest(st, proposed))
	if err != nil {
		if isUnavailable(err) {
			return nil, "", false, unavailable("critic", fmt.Errorf("critic.AcceptConclusion: %w", err))
		}
		s.subStageFailed(ctx, st, "critic.accept_conclusion", err)
		st.stop(dsNeedsReview, "conclusion gate failed: "+err.Error())
		return nil, "", true, nil
	}
	s.tripsFrom(ctx, st, resp.GetTrips())
	limitsFrom(st, resp.GetLimits())
	// The critic's limit decides, even from a critic that also says
	// "accepted": the loop stops as NEEDS_REVIEW, never CONCLUDED.
	if resp.GetAccepted() && !resp.GetLimitReached() {
		status := dsConcluded
		if resp.GetHandover() {
			// Accepted only to hand over: the critic's status is the outcome.
			status = dsNeedsReview
			if hs := resp.GetHandoverStatus(); hs != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_UNSPECIFIED {
				status = hs.String()
			}
			for _, g := range resp.GetBlockingGaps() {
				st.loop.Unknowns = appendUnique(st.loop.Unknowns, g)
			}
		}
		st.stop(status, "critic accepted the conclusion: "+firstNonEmpty(resp.GetReason(), "evidence sufficient"))
		return resp, "", true, nil
	}
	st.loop.Rejections++
	for _, g := range resp.GetBlockingGaps() {
		st.loop.Unknowns = appendUnique(st.loop.Unknowns, g)
	}
	if resp.GetLimitReached() {
		st.stop(dsNeedsReview, "evaluator rejection limit reached: "+firstNonEmpty(resp.GetReason(), "conclusion refused"))
		return resp, resp.GetReason(), true, nil
	}
	return resp, firstNonEmpty(resp.GetReason(), "conclusion refused"), false, nil
}

// acceptConclusion asks the critic whether the rules loop may stop; a
// refusal with missing intents runs them once more.
func (s *Service) acceptConclusion(ctx context.Context, st *invState) error {
	resp, reason, done, err := s.askConclusion(ctx, st)
	if err != nil || done {
		return err
	}
	if len(resp.GetMissingIntents()) > 0 && !st.loop.RetriedMissing {
		st.loop.RetriedMissing = true
		st.loop.Pending = s.callsFor(ctx, st, resp.GetMissingIntents(), originCritic)
		if len(st.loop.Pending) == 0 {
			st.stop(dsNeedsReview, "conclusion refused: "+reason)
		}
		return nil
	}
	st.stop(dsNeedsReview, "conclusion refused: "+reason)
	return nil
}

// proposedDiagnosis is the rules diagnosis over the current pins.
func (s *Service) proposedDiagnosis(ctx context.Context, st *invState) *investigationv1.Diagnosis {
	in := analysis.Input{Alert: st.rec.GetAlert(), Pins: st.pins, NonPaged: s.cfg.NonPagedEnvironments}
	res, err := analysis.Analyze(ctx, in)
	if err != nil {
		return &investigationv1.Diagnosis{RootCause: "analysis failed: " + err.Error()}
	}
	if rr := st.lastReranked(); len(rr) > 0 {
		res.Hypotheses = rr
	}
	d := analysis.Diagnose(in, res)
	if md := st.modelDiagnosis(); md != nil && d != nil {
		d = mergeModelDiagnosis(d, md)
	}
	return d
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

// maxConfigFollowUps bounds the ConfigMaps read for one suspect;
// maxNamedFollowUps the objects named in failing lines described per round.
const (
	maxConfigFollowUps = 2
	maxNamedFollowUps  = 2
)

// configFollowUps describes the ConfigMaps mounted by the pods of the
// leading hypothesis's workload that no call has read yet: a suspect's
// settings (limits, policies, pool sizes) often are the explanation.
func (s *Service) configFollowUps(ctx context.Context, st *invState) []pendingCall {
	if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentDescribe]; !ok {
		return nil
	}
	res, err := analysis.Analyze(ctx, analysis.Input{Alert: st.rec.GetAlert(), Pins: st.pins, NonPaged: s.cfg.NonPagedEnvironments})
	if err != nil {
		return nil
	}
	// Objects the failing lines name ("PodDisruptionBudget ns/name") are
	// described first: their spec and conditions are the next evidence,
	// whatever the leading hypothesis is.
	var named []pendingCall
	for _, o := range res.NamedObjects() {
		if len(named) >= maxNamedFollowUps {
			break
		}
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": o.Kind, "name": o.Name, "namespace": o.Namespace}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			named = append(named, c)
		}
	}
	if len(named) > 0 {
		return named
	}
	if len(res.Hypotheses) == 0 {
		return nil
	}
	ent := res.Hypotheses[0].GetEntity()
	if res.Hypotheses[0].GetDetector() == "dns_failure" && clusterDNSName(ent) {
		// A cluster-local name that does not resolve: the cluster DNS
		// server's own logs and configuration are the next evidence.
		var out []pendingCall
		for _, c := range []pendingCall{
			{Intent: intentPodLogs, Params: map[string]any{"namespace": dnsNamespace, "pod": dnsWorkload + "-*"}, Origin: originExpand},
			{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": dnsWorkload, "namespace": dnsNamespace}, Origin: originExpand},
		} {
			if !st.ranEquivalent(c) {
				out = append(out, c)
			}
		}
		return out
	}
	if lead := res.Hypotheses[0]; lead.GetDetector() == "dependency_failure" {
		// A dependency that went away may have been taken down on purpose:
		// planned maintenance and change records, cluster-wide.
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"query": "maintenance OR \"change window\""}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentSearchLogs]; ok && !st.ranEquivalent(c) {
			out := []pendingCall{c}
			if droppedConnRe.MatchString(lead.GetStatement()) {
				if ns := firstNonEmpty(st.rec.GetAlert().GetNamespace(), st.rec.GetAlert().GetLabels()["namespace"]); ns != "" {
					out = append(out, pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}, Origin: originExpand})
				}
			}
			return out
		}
	}
	if lead := res.Hypotheses[0]; lead.GetDetector() == "dependency_failure" && droppedConnRe.MatchString(lead.GetStatement()) {
		// Connections to a dependency that time out (not refused) are
		// dropped on the path: the caller namespace's NetworkPolicies are
		// the first suspect.
		if ns := st.rec.GetAlert().GetNamespace(); ns != "" || st.rec.GetAlert().GetLabels()["namespace"] != "" {
			if ns == "" {
				ns = st.rec.GetAlert().GetLabels()["namespace"]
			}
			c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}, Origin: originExpand}
			if !st.ranEquivalent(c) {
				return []pendingCall{c}
			}
		}
	}
	parts := strings.Split(ent, "/")
	if len(parts) < 2 {
		return nil
	}
	var out []pendingCall
	if (parts[0] == "persistentvolumeclaim" || parts[0] == "pod") && len(parts) == 3 {
		// How the rest of the namespace experiences the suspect: its
		// clients' log lines that name it (by its pod, the PVC's owner).
		target := parts[2]
		if parts[0] == "persistentvolumeclaim" {
			if i := strings.Index(target, "-"); i > 0 {
				target = target[i+1:] // data-<pod> → <pod>
			}
		}
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"namespace": parts[1], "query": `"` + target + `"`}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentSearchLogs]; ok && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		if parts[0] == "persistentvolumeclaim" {
			return out
		}
	}
	if len(parts) == 3 && parts[0] == "job" {
		// A batch run is judged by its own output: how it ended.
		c := pendingCall{Intent: intentPodLogs, Params: map[string]any{"namespace": parts[1], "pod": parts[2] + "-*"}, Origin: originExpand}
		if _, ok := s.toolDefs(ctx, st.rec.GetSessionId())[intentPodLogs]; ok && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	if len(parts) == 3 && managedObjectKind(parts[0]) {
		// A Secret, ConfigMap or certificate is rarely wrong on its own:
		// whatever owns or manages it (an ExternalSecret, a Certificate,
		// an operator's custom resource) holds the settings that made it
		// so. Describing it brings its managers along.
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": parts[0], "name": parts[2], "namespace": parts[1]}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "pod", "service":
	default:
		return out
	}
	name := parts[len(parts)-1]
	seen := map[string]bool{}
	for _, p := range st.pods() {
		if p.Name != name && p.Workload != name && !strings.HasPrefix(p.Name, name+"-") {
			continue
		}
		for _, c := range p.Containers {
			for _, cm := range c.ConfigMaps {
				key := p.Namespace + "/" + cm
				if seen[key] || len(out) >= maxConfigFollowUps {
					continue
				}
				seen[key] = true
				call := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": cm, "namespace": p.Namespace}, Origin: originExpand}
				if !st.ranEquivalent(call) {
					out = append(out, call)
				}
			}
		}
	}
	return out
}

const intentDescribe = string(intent.DescribeResource)

// managedObjectKind: kinds of objects that hold configuration or
// credentials and are usually produced by something else (a controller's
// custom resource, an owner).
func managedObjectKind(kind string) bool {
	k := strings.ToLower(kind)
	switch k {
	case "secret", "configmap", "certificate", "certificaterequest":
		return true
	}
	return strings.Contains(k, "secret") || strings.Contains(k, "certificate")
}

const (
	intentSearchLogs = string(intent.SearchLogs)
	intentPodLogs    = string(intent.FetchPodLogs)
	// The cluster DNS server of Kubernetes (CoreDNS, deployed as kube-dns
	// compatible "coredns" in kube-system by kubeadm, EKS, GKE and AKS).
	dnsNamespace = "kube-system"
	dnsWorkload  = "coredns"
)

// clusterDNSName: the hypothesis entity is a Service reached by its cluster
// DNS name (service/<ns>/<name>, from <name>.<ns>.svc...).
func clusterDNSName(ent string) bool {
	return strings.HasPrefix(ent, "service/") && strings.Count(ent, "/") == 2
}

// droppedConnRe: connection errors of dropped packets (a timeout while
// dialing), as opposed to refusals from a listening peer.
var droppedConnRe = regexp.MustCompile(`(?i)(i/o timeout|dial tcp[^']{0,80}timeout|connect(ion)? timed? ?out|etimedout)`)

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
		if f := p.GetDefaultFromContext(); f != "" && contextValue(st.rc, f) != "" {
			continue
		}
		return p.GetName()
	}
	return ""
}

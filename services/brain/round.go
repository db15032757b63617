package brain

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/guardrail"
)

// The loop core: a round's primitives, shared by the rules loop
// (loop_rules.go) and the model loop (loop_model.go), in the order a round
// uses them: seed the first calls (seed), check the loop cap
// (loopCapReached) and the breakers (breakerTripped), run the pending calls
// (runPending and the calls' making in round_calls.go, their parameters in
// round_params.go, follow-ups in round_followups.go), count progress
// (updateProgress, forcedFinal), build the evidence model once per evidence
// state (evidence), have the critic review the hypotheses
// (reviewHypotheses), ask the conclusion gate (askConclusion) and stop
// (stop).

// seed queues the plan's actions as the first round's calls, once.
func (st *invState) seed() {
	if st.loop.Seeded {
		return
	}
	st.loop.Seeded = true
	st.loop.Pending = planCalls(st.rec.GetPlan())
	for i := range st.loop.Pending {
		st.loop.Pending[i].Origin = originSeed
	}
}

// nextRound starts an iteration (a rules round or a model turn): the
// record's loop count is the round number.
func (st *invState) nextRound() {
	st.loop.Round++
	st.rec.Loops = int32(st.loop.Round)
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

// evidenceModel is the analysis of the pins in hand at one pins revision:
// analysis.Analyze decodes every pin and runs every detector, so a round's
// primitives (the follow-ups, the review, the proposed diagnosis, the
// diagnose stage) share one model per evidence state instead of each
// analysing again. A round analyses once, and again only when its
// follow-up calls or the critic's verdicts changed the pins.
type evidenceModel struct {
	rev   uint64
	alert *investigationv1.Alert
	in    analysis.Input
	res   analysis.Result
}

// evidence returns the evidence model of the current pins, built at most
// once per pins revision. The result is the caller's own: its hypotheses,
// claims and lists are copies.
func (s *Service) evidence(ctx context.Context, st *invState) (analysis.Input, analysis.Result, error) {
	if m := st.evidence; m != nil && m.rev == st.pinsRev && m.alert == st.rec.GetAlert() {
		return m.in, m.result(), nil
	}
	in := analysis.Input{Alert: st.rec.GetAlert(), Pins: slices.Clone(st.pins), NonPaged: s.cfg.NonPagedEnvironments, Prior: s.prior}
	s.analyses.Add(1)
	res, err := analysis.Analyze(ctx, in)
	if err != nil {
		return in, res, err // not kept: an interrupted analysis is redone
	}
	st.evidence = &evidenceModel{rev: st.pinsRev, alert: st.rec.GetAlert(), in: in, res: res}
	return in, st.evidence.result(), nil
}

// result is a copy of the model's result that its user may change.
func (m *evidenceModel) result() analysis.Result {
	r := m.res
	r.Hypotheses = cloneAll(r.Hypotheses)
	r.Claims = cloneAll(r.Claims)
	r.RuledOut = cloneAll(r.RuledOut)
	r.Unknowns = slices.Clone(r.Unknowns)
	r.Sources = slices.Clone(r.Sources)
	r.Findings = slices.Clone(r.Findings)
	return r
}

func cloneAll[T proto.Message](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, m := range in {
		out[i] = proto.Clone(m).(T)
	}
	return out
}

// reviewHypotheses ranks hypotheses over the pins and has the critic review
// them. withNext tells the critic what the loop can still fetch (the rules
// loop, which acts on the critic's requests and its scope decision).
func (s *Service) reviewHypotheses(ctx context.Context, st *invState, withNext bool) (*investigationv1.CriticReview, error) {
	st.refreshPins(ctx, s)
	_, res, err := s.evidence(ctx, st)
	if err != nil {
		s.subStageFailed(ctx, st, "synthesize", err)
		return nil, fmt.Errorf("analysis: %w", err)
	}
	st.loop.Unknowns = res.Unknowns
	round := int32(len(st.rec.GetHypothesisRounds()) + 1)
	set := &investigationv1.HypothesisSet{Hypotheses: res.Hypotheses, Round: round}
	req := &criticv1.ReviewHypothesesRequest{
		SessionId: st.rec.GetSessionId(), Hypotheses: set, Alert: st.rec.GetAlert(), Round: round, Pins: st.pins,
	}
	if withNext {
		req.NextCalls = s.nextCalls(ctx, st)
	}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Critic.ReviewHypotheses(cctx, req)
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

// proposedDiagnosis is the rules diagnosis over the current pins.
func (s *Service) proposedDiagnosis(ctx context.Context, st *invState) *investigationv1.Diagnosis {
	in, res, err := s.evidence(ctx, st)
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

func criticAcceptRequest(st *invState, proposed *investigationv1.Diagnosis) *criticv1.AcceptConclusionRequest {
	return &criticv1.AcceptConclusionRequest{
		SessionId: st.rec.GetSessionId(), Plan: st.rec.GetPlan(), ExecutedIntents: st.executedIntents(),
		Proposed: proposed, Pins: st.pins, Rejections: int32(st.loop.Rejections),
	}
}

// modelDiagnosis returns the diagnosis parsed from the model's answer, if any.
func (st *invState) modelDiagnosis() *investigationv1.Diagnosis {
	if len(st.loop.ModelDiagnosis) == 0 {
		return nil
	}
	d := &investigationv1.Diagnosis{}
	if err := pu.Unmarshal(st.loop.ModelDiagnosis, d); err != nil {
		return nil
	}
	return d
}

// stop ends the loop with a DiagnosisStatus name and the reason.
func (st *invState) stop(status, reason string) {
	st.loop.Done = true
	st.loop.Status = status
	st.loop.StopReason = reason
}

// Loop outcomes (DiagnosisStatus names, kept in the checkpoint).
const (
	dsConcluded   = "DIAGNOSIS_STATUS_CONCLUDED"
	dsNeedsReview = "DIAGNOSIS_STATUS_NEEDS_REVIEW"
	dsEscalated   = "DIAGNOSIS_STATUS_ESCALATED"
)

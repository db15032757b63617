package brain

import (
	"context"
	"fmt"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// rulesLoop is the offline supervisor (no model configured): seed calls from
// the plan, synthesis over the pins, the critic's review; GATHER_MORE runs
// the intents the critic asks for and loops. Every round is one loop and is
// checkpointed. It stops on ACCEPT (then the critic's conclusion gate),
// ESCALATE, the loop cap, the stagnation breaker, stalled retrievals, or the
// tool-call and wall-time breakers.
// followUpPasses bounds the passes of follow-ups within one round.
const followUpPasses = 2

func (s *Service) rulesLoop(ctx context.Context, st *invState) (string, error) {
	st.seed()
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
			st.nextRound()
			st.loop.InRound = true
			st.loop.RoundCalls, st.loop.RoundFresh, st.loop.RoundNew, st.loop.Breaker = 0, 0, 0, ""
			st.loop.Progressed = false
		}
		breaker, err := s.runPending(ctx, st, st.loop.Round, nil)
		if err != nil {
			return "", err
		}
		// The follow-ups of this round's evidence, made in the same round;
		// what they return may ask for one more pass (a pod's log names
		// the peer whose record is next), never more than followUpPasses.
		asked := map[string]bool{} // a call that failed is not asked again in the same round
		for pass := 0; pass < followUpPasses && breaker == ""; pass++ {
			var fu []pendingCall
			for _, c := range s.followUps(ctx, st) {
				if k := callKey(c.Intent, c.Params); !asked[k] {
					asked[k] = true
					fu = append(fu, c)
				}
			}
			if len(fu) == 0 {
				break
			}
			st.loop.Pending = fu
			if breaker, err = s.runPending(ctx, st, st.loop.Round, nil); err != nil {
				return "", err
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
		review, err := s.reviewHypotheses(ctx, st, true)
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

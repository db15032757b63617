package brain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// dependencyError is a stage failure caused by another service or NATS being
// unavailable: the stage is retried with backoff, never recorded as a result.
type dependencyError struct {
	dep string
	err error
}

func (e *dependencyError) Error() string { return e.dep + " unavailable: " + e.err.Error() }
func (e *dependencyError) Unwrap() error { return e.err }

// unavailable wraps err as a dependency failure of dep when it says the
// dependency could not be reached (gRPC Unavailable, DeadlineExceeded,
// ResourceExhausted, Aborted; a closed or timed-out NATS connection); any
// other error is returned as it is.
func unavailable(dep string, err error) error {
	if err == nil || !isUnavailable(err) {
		return err
	}
	var de *dependencyError
	if errors.As(err, &de) {
		return err
	}
	return &dependencyError{dep: dep, err: err}
}

// isUnavailable says whether err means "try again later".
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var de *dependencyError
	if errors.As(err, &de) {
		return true
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK && s.Code() != codes.Unknown {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
			return true
		}
		return false
	}
	for _, target := range []error{nats.ErrConnectionClosed, nats.ErrTimeout, nats.ErrNoResponders,
		nats.ErrConnectionDraining, nats.ErrDisconnected, jetstream.ErrNoStreamResponse, context.DeadlineExceeded} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// isDependencyFailure says whether err is a dependency failure already classified by unavailable.
func isDependencyFailure(err error) bool {
	var de *dependencyError
	return errors.As(err, &de)
}

// retryDelay is the backoff before retry number n (1-based): RetryBackoff
// doubled per retry, capped at RetryMaxBackoff.
func (s *Service) retryDelay(n int) time.Duration {
	d := s.cfg.RetryBackoff
	for i := 1; i < n && d < s.cfg.RetryMaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.cfg.RetryMaxBackoff)
}

// runStageWithRetry runs one stage; while it fails because a dependency is
// unavailable it is checkpointed (its progress kept, the stage not marked
// done), retried after a growing delay, up to Config.DependencyAttempts
// attempts over the whole investigation. The returned error is the stage's
// last error; a *dependencyError means the attempts ran out.
func (s *Service) runStageWithRetry(ctx context.Context, name string, st *invState) (string, error) {
	for {
		detail, err := s.runStage(ctx, name, st)
		if err == nil || !isDependencyFailure(err) || ctx.Err() != nil {
			return detail, err
		}
		if int(st.rec.GetDependencyRetries()) >= s.cfg.DependencyAttempts-1 {
			return detail, err
		}
		st.rec.DependencyRetries++
		delay := s.retryDelay(int(st.rec.GetDependencyRetries()))
		now := s.now()
		st.rec.Stages = append(st.rec.Stages, &investigationv1.StageRecord{
			Name: name, StartedAt: timestamppb.New(now), Status: "retrying",
			Detail: fmt.Sprintf("%v; retry %d of %d in %s", err, st.rec.GetDependencyRetries(), s.cfg.DependencyAttempts-1, delay),
		})
		s.log.WarnContext(ctx, "stage dependency unavailable; retrying", "stage", name, "investigation_id", st.rec.GetInvestigationId(),
			"retry", st.rec.GetDependencyRetries(), "retry_in", delay, "err", err)
		s.publishLifecycle(ctx, st.rec.GetSessionId(), st.rec.GetInvestigationId(), evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE, name,
			"retrying: "+err.Error(), map[string]any{"status": "retrying", "retry": st.rec.GetDependencyRetries(), "retry_in_ms": delay.Milliseconds()})
		if cerr := s.checkpoint(ctx, st); cerr != nil {
			return "", cerr
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

// fail ends the investigation visibly: state failed with the reason, a
// FAILED lifecycle event, the session marked failed, the fingerprint's dedup
// shortened to Config.FailedDedupWindow, and (unless delivery is what
// failed) a report of the failure handed to delivery, which pages it when
// it is configured to. Whatever was gathered stays in the record.
func (s *Service) fail(ctx context.Context, st *invState, stage string, cause error) error {
	reason := fmt.Sprintf("%s: %v", stage, cause)
	if isDependencyFailure(cause) {
		reason = fmt.Sprintf("%s: %v (after %d attempts)", stage, cause, st.rec.GetDependencyRetries()+1)
	}
	st.rec.State = stateFailed
	st.rec.FailureReason = reason
	d := st.rec.GetDiagnosis()
	if d == nil {
		d = &investigationv1.Diagnosis{Category: investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN}
		st.rec.Diagnosis = d
	}
	d.StopReason = "investigation failed: " + reason
	d.Unknowns = appendUnique(d.Unknowns, "the investigation failed before it could conclude: "+reason)
	if d.GetRootCause() == "" {
		d.RootCause = "Investigation failed: " + reason
	}
	s.finalizeRecord(ctx, st)
	st.rec.FinishedAt = timestamppb.New(s.now())
	if stage != stageDeliver && !st.done[stageDeliver] {
		s.deliverFailure(ctx, st)
	}
	s.setSessionState(ctx, st, sessFailed)
	s.markFingerprintFailed(ctx, st)
	s.log.ErrorContext(ctx, "investigation failed", "investigation_id", st.rec.GetInvestigationId(), "reason", reason)
	defer s.markClosed(ctx, st.rec.GetInvestigationId())
	s.publishLifecycle(ctx, st.rec.GetSessionId(), st.rec.GetInvestigationId(), evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_FAILED, stage,
		"investigation failed: "+reason, map[string]any{"reason": reason, "retries": st.rec.GetDependencyRetries(), "pins": len(st.pins)})
	return s.checkpoint(ctx, st)
}

// deliverFailure hands the failed record to delivery (one try, no retries:
// the investigation has already waited for its dependencies).
func (s *Service) deliverFailure(ctx context.Context, st *invState) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Delivery.DeliverReport(cctx, &deliveryv1.DeliverReportRequest{
		SessionId: st.rec.GetSessionId(), Record: st.rec, DryRun: s.cfg.DryRunDelivery,
	})
	if err != nil {
		s.log.WarnContext(ctx, "failure report not delivered", "investigation_id", st.rec.GetInvestigationId(), "err", err)
		return
	}
	st.report = resp.GetReport().GetMarkdown()
	st.silent = resp.GetReport().GetSilent()
}

// emptyFailure is the reason an investigation that would complete must fail
// instead: a stage failed and nothing was gathered, so a "completed" result
// would be a silent, evidence-free conclusion.
func emptyFailure(st *invState) (string, error) {
	if st.rec.GetDiagnosis().GetStatus() == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE {
		return "", nil
	}
	for _, p := range st.pins {
		if p.GetSuccess() && !p.GetNoData() {
			return "", nil
		}
	}
	for _, sr := range st.rec.GetStages() {
		if sr.GetStatus() == "failed" {
			return sr.GetName(), fmt.Errorf("stage failed and no evidence was gathered: %s", sr.GetDetail())
		}
	}
	return "", nil
}

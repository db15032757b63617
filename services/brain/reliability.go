package brain

import (
	"context"
	"encoding/json"
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

// markFingerprintFailed shortens the fingerprint's dedup to
// Config.FailedDedupWindow from now, so a re-sent alert soon starts a fresh
// investigation instead of attaching to the failed one.
func (s *Service) markFingerprintFailed(ctx context.Context, st *invState) {
	fp := st.rec.GetAlert().GetFingerprint()
	if fp == "" || st.isSub() {
		return
	}
	store, err := s.store(ctx)
	if err != nil {
		return
	}
	if err := store.markFailed(ctx, fp, st.rec.GetInvestigationId(), s.now()); err != nil {
		s.log.WarnContext(ctx, "fingerprint not marked failed", "investigation_id", st.rec.GetInvestigationId(), "err", err)
	}
}

// freshEntry is the fingerprint entry of a new investigation of fp in
// session sid. A fingerprint whose previous investigation of the same dedup
// window failed gets the next generation, hence a new investigation id.
func (s *Service) freshEntry(sid, fp string, now time.Time, prev *fpEntry) fpEntry {
	win := s.windowIndex(now)
	gen := 0
	if prev != nil && s.windowIndex(prev.FirstSeen) == win {
		gen = prev.Generation + 1
	}
	parts := []string{sid, fp, fmt.Sprint(win)}
	if gen > 0 {
		parts = append(parts, "generation", fmt.Sprint(gen))
	}
	return fpEntry{SessionID: sid, InvestigationID: investigationID(parts...), FirstSeen: now, LastSeen: now, Count: 1, Generation: gen}
}

// openEntry is the index entry of an investigation that is not final yet
// (BucketOpen, key = investigation id).
type openEntry struct {
	SessionID   string    `json:"session_id"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Created     time.Time `json:"created"`
}

// markOpen indexes an investigation before it is saved and queued, so that
// the sweeper finds it whatever step a crash interrupts.
func (s *Service) markOpen(ctx context.Context, store *stateStore, invID, sid, fp string) error {
	b, err := json.Marshal(openEntry{SessionID: sid, Fingerprint: fp, Created: s.now()})
	if err != nil {
		return err
	}
	_, err = store.open.Put(ctx, invID, b)
	return err
}

// markClosed drops a final investigation from the open index (best effort:
// the sweeper drops entries of final investigations too).
func (s *Service) markClosed(ctx context.Context, invID string) {
	store, err := s.store(ctx)
	if err != nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := store.open.Delete(dctx, invID); err != nil {
		s.log.DebugContext(ctx, "open index entry not removed", "investigation_id", invID, "err", err)
	}
}

func (s *Service) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if res, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "orphan sweep failed", "err", err)
		} else if res.Requeued+res.Failed+res.Dropped > 0 {
			s.log.InfoContext(ctx, "orphan sweep", "requeued", res.Requeued, "failed", res.Failed, "dropped", res.Dropped)
		}
	}
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	// Requeued: orphans (saved, not final, no work item left, idle for
	// Config.OrphanAge) put back on the queue.
	Requeued int
	// Failed: orphans re-queued Config.MaxRequeues times already, failed
	// with the reason.
	Failed int
	// Dropped: index entries of investigations that are final, or were never
	// saved (their fingerprint claim is released so a retry starts afresh).
	Dropped int
}

// Sweep looks for orphaned investigations once (the brain runs it every
// Config.SweepInterval): an investigation that was saved but whose work item
// never reached the queue (a crash between the two), or whose item the
// queue gave up on, is re-queued; one that keeps coming back is failed.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	if s.bus == nil {
		return res, nil
	}
	store, err := s.store(ctx)
	if err != nil {
		return res, err
	}
	keys, err := store.open.Keys(ctx)
	if err != nil {
		return res, err
	}
	now := s.now()
	for _, invID := range keys {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		raw, _, err := store.open.Get(ctx, invID)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return res, err
		}
		var oe openEntry
		if err := json.Unmarshal(raw, &oe); err != nil {
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if now.Sub(oe.Created) < s.cfg.OrphanAge {
			continue
		}
		st, err := store.loadState(ctx, invID)
		if errors.Is(err, errNotFound) {
			// Indexed but never saved: release the fingerprint it claimed.
			if oe.Fingerprint != "" {
				if data, _, gerr := store.fingerprints.Get(ctx, oe.Fingerprint); gerr == nil {
					var e fpEntry
					if json.Unmarshal(data, &e) == nil && e.InvestigationID == invID {
						_ = store.fingerprints.Delete(ctx, oe.Fingerprint)
					}
				}
			}
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if err != nil {
			return res, err
		}
		if isFinal(st.rec.GetState()) {
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if !st.savedAt.IsZero() && now.Sub(st.savedAt) < s.cfg.OrphanAge {
			continue // making progress somewhere
		}
		pending, err := s.bus.WorkPending(ctx, invID)
		if err != nil {
			return res, err
		}
		if pending {
			continue
		}
		if int(st.rec.GetRequeues()) >= s.cfg.MaxRequeues {
			cause := fmt.Errorf("the investigation was re-queued %d times and never finished (its work item was lost or given up each time)", st.rec.GetRequeues())
			if err := s.fail(ctx, st, "queue", cause); err != nil {
				return res, err
			}
			res.Failed++
			continue
		}
		st.rec.Requeues++
		if err := s.checkpoint(ctx, st); err != nil {
			return res, err
		}
		if err := s.enqueue(ctx, workItem{SessionID: st.rec.GetSessionId(), InvestigationID: invID}, int(st.rec.GetRequeues())); err != nil {
			return res, err
		}
		s.log.WarnContext(ctx, "orphaned investigation re-queued", "investigation_id", invID, "requeues", st.rec.GetRequeues())
		res.Requeued++
	}
	return res, nil
}

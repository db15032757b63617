package history

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/metrics"
)

// Recorder saves each investigation that finishes (a lifecycle event
// completed, noise or failed) to the store, with its record, report, pins
// and critic verdicts, read from the brain and the delivery service. The
// event is acknowledged only once the store confirmed the write; a failure
// is returned so that the stream redelivers it.
type Recorder struct {
	Store    Store
	Brain    brainv1.BrainServiceClient
	Delivery deliveryv1.DeliveryServiceClient
	Logger   *slog.Logger
	// FinalWait bounds how long to wait for the brain's final checkpoint
	// after the completed event (it is written right after the event).
	FinalWait time.Duration
}

// finishing reports whether a lifecycle kind ends an investigation.
func finishing(k evidencev1.LifecycleEventKind) bool {
	switch k {
	case evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_COMPLETED,
		evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_NOISE,
		evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_FAILED:
		return true
	}
	return false
}

// Handle is the durable consumer's handler.
func (r *Recorder) Handle(ctx context.Context, ev *evidencev1.SessionEvent) error {
	lc := ev.GetLifecycle()
	if lc == nil || !finishing(lc.GetKind()) || lc.GetInvestigationId() == "" {
		return nil
	}
	inv, err := r.Collect(ctx, lc.GetSessionId(), lc.GetInvestigationId(), lc.GetKind() == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_FAILED)
	if err != nil {
		return err
	}
	if inv == nil {
		return nil
	}
	if err := r.Store.Save(ctx, inv); err != nil {
		metrics.HistoryWrites.WithLabelValues(r.Store.Name(), "error").Inc()
		return err
	}
	metrics.HistoryWrites.WithLabelValues(r.Store.Name(), "ok").Inc()
	r.Logger.DebugContext(ctx, "investigation saved to history", "investigation_id", lc.GetInvestigationId(), "store", r.Store.Name())
	return nil
}

func final(state string) bool { return state == "completed" || state == "noise" || state == "failed" }

// Collect reads one investigation from the services. It returns nil (and no
// error) when the brain no longer knows it.
func (r *Recorder) Collect(ctx context.Context, sessionID, invID string, failed bool) (*Investigation, error) {
	wait := r.FinalWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	var rec *investigationv1.InvestigationRecord
	for delay := 20 * time.Millisecond; ; delay = min(delay*2, time.Second) {
		resp, err := r.Brain.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: sessionID, InvestigationId: invID})
		if status.Code(err) == codes.NotFound {
			r.Logger.WarnContext(ctx, "finished investigation unknown to the brain; not saved", "investigation_id", invID)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history: record of %s: %w", invID, err)
		}
		rec = resp.GetRecord()
		if final(rec.GetState()) || failed || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
	if !final(rec.GetState()) && !failed {
		return nil, fmt.Errorf("history: record of %s is still %q", invID, rec.GetState())
	}
	inv := &Investigation{Record: rec, CriticVerdicts: rec.GetReviews()}
	rep, err := r.Delivery.GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: sessionID})
	switch {
	case status.Code(err) == codes.NotFound:
	case err != nil:
		return nil, fmt.Errorf("history: report of %s: %w", invID, err)
	case rep.GetReport().GetInvestigationId() == invID:
		inv.Report = rep.GetReport()
	}
	pins, err := r.Brain.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: sessionID})
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, fmt.Errorf("history: pins of %s: %w", invID, err)
	}
	for _, p := range pins.GetPins() {
		if p.GetInvestigationId() == invID || p.GetInvestigationId() == "" {
			inv.Pins = append(inv.Pins, p)
		}
	}
	inv.Summary = Summarize(inv)
	return inv, nil
}

package brain

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/proto"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// fastRetries is a config whose dependency retries take milliseconds.
func fastRetries(attempts int) *Config {
	c := DefaultConfig()
	c.DependencyAttempts = attempts
	c.RetryBackoff = 5 * time.Millisecond
	c.RetryMaxBackoff = 20 * time.Millisecond
	return &c
}

// submitWait submits the crash alert, waits for its investigation and
// returns the answer and the record.
func submitWait(t *testing.T, h *harness) (*brainv1.SubmitAlertResponse, *investigationv1.InvestigationRecord) {
	t.Helper()
	ctx := testCtx(t)
	resp, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert), Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId(), InvestigationId: resp.GetInvestigationId()})
	if err != nil {
		t.Fatal(err)
	}
	return resp, rr.GetRecord()
}

func unavailableErr() error { return status.Error(codes.Unavailable, "connection refused") }

// TestDependencyOutageRetriedThenCompletes: a tools service and a critic that
// are down for a while make the stage retry (with its progress kept); once
// they are back the investigation completes with evidence.
func TestDependencyOutageRetriedThenCompletes(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: fastRetries(8)})
	var toolsDown, criticDown atomic.Int32
	toolsDown.Store(3)
	criticDown.Store(2)
	h.tools.exec = func(_ context.Context, _ *toolsv1.ExecuteToolRequest, _ int) (*toolsv1.ExecuteToolResponse, error) {
		if toolsDown.Add(-1) >= 0 {
			return nil, unavailableErr()
		}
		return nil, nil
	}
	h.critic.down = func() error {
		if criticDown.Add(-1) >= 0 {
			return unavailableErr()
		}
		return nil
	}
	resp, rec := submitWait(t, h)
	if resp.GetStatus() != statusCompleted {
		t.Fatalf("status %q", resp.GetStatus())
	}
	if rec.GetState() != stateCompleted || rec.GetFailureReason() != "" {
		t.Fatalf("state %q failure %q", rec.GetState(), rec.GetFailureReason())
	}
	if rec.GetDependencyRetries() != 5 {
		t.Errorf("dependency retries = %d, want 5 (3 tools + 2 critic)", rec.GetDependencyRetries())
	}
	retrying := 0
	for _, s := range rec.GetStages() {
		if s.GetStatus() == "retrying" {
			retrying++
		}
		if s.GetStatus() == "failed" {
			t.Errorf("stage %s recorded failed: %s", s.GetName(), s.GetDetail())
		}
	}
	if retrying != 5 {
		t.Errorf("%d retrying stage records, want 5", retrying)
	}
	// Unavailable calls are not recorded as tool calls: each intent ran once.
	if got := strings.Join(h.tools.intents()[3:], ","); got != "check_pod_status,fetch_pod_logs" {
		t.Errorf("tool calls after the outage %v", got)
	}
	if n := len(rec.GetToolCalls()); n != 2 {
		t.Errorf("%d tool call records, want 2: %v", n, rec.GetToolCalls())
	}
}

// TestDependencyDownFailsVisibly: a dependency that stays down fails the
// investigation with its reason (never a "completed" without evidence); the
// failure is handed to delivery; a re-sent alert attaches to the failed
// investigation only for the failed-dedup window, then starts afresh.
func TestDependencyDownFailsVisibly(t *testing.T) {
	cases := []struct {
		name, dep string
		down      func(h *harness)
	}{
		{"tools", "tools unavailable", func(h *harness) {
			h.tools.exec = func(context.Context, *toolsv1.ExecuteToolRequest, int) (*toolsv1.ExecuteToolResponse, error) {
				return nil, unavailableErr()
			}
		}},
		{"router", "router unavailable", func(h *harness) { h.router.down = unavailableErr }},
		{"critic", "critic unavailable", func(h *harness) { h.critic.down = unavailableErr }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).UnixNano())
			now := func() time.Time { return time.Unix(0, clock.Load()) }
			cfg := fastRetries(3)
			cfg.FailedDedupWindow = time.Minute
			h := newHarness(t, harnessOpts{cfg: cfg, now: now})
			tc.down(h)
			ctx := testCtx(t)
			resp, rec := submitWait(t, h)
			if resp.GetStatus() != statusFailed {
				t.Fatalf("status %q, want failed", resp.GetStatus())
			}
			if rec.GetState() != stateFailed || !strings.Contains(rec.GetFailureReason(), tc.dep) || !strings.Contains(rec.GetFailureReason(), "after 3 attempts") {
				t.Fatalf("state %q reason %q", rec.GetState(), rec.GetFailureReason())
			}
			if rec.GetDependencyRetries() != 2 {
				t.Errorf("retries %d, want 2", rec.GetDependencyRetries())
			}
			if !strings.Contains(rec.GetDiagnosis().GetStopReason(), "investigation failed") {
				t.Errorf("stop reason %q", rec.GetDiagnosis().GetStopReason())
			}
			h.delivery.mu.Lock()
			delivered := len(h.delivery.records) == 1 && h.delivery.records[0].GetState() == stateFailed
			h.delivery.mu.Unlock()
			if !delivered {
				t.Errorf("the failure was not handed to delivery once as failed")
			}
			sess, err := h.client.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: resp.GetSessionId()})
			if err != nil {
				t.Fatal(err)
			}
			if sess.GetSession().GetState() != sessFailed {
				t.Errorf("session state %q", sess.GetSession().GetState())
			}

			// Within the failed-dedup window: attached to the failed one.
			again, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert)})
			if err != nil {
				t.Fatal(err)
			}
			if again.GetStatus() != statusAttached || again.GetInvestigationId() != rec.GetInvestigationId() {
				t.Fatalf("re-sent within the window: %q %s", again.GetStatus(), again.GetInvestigationId())
			}
			// After it (still inside the 30-minute dedup window): a fresh investigation that works.
			clock.Add(int64(2 * time.Minute))
			h.tools.exec, h.router.down, h.critic.down = nil, nil, nil
			fresh, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert), Wait: true})
			if err != nil {
				t.Fatal(err)
			}
			if fresh.GetStatus() != statusCompleted || fresh.GetInvestigationId() == rec.GetInvestigationId() {
				t.Fatalf("re-sent after the window: %q %s (failed one %s)", fresh.GetStatus(), fresh.GetInvestigationId(), rec.GetInvestigationId())
			}
		})
	}
}

// TestStageErrorWithoutEvidenceFails: a stage error that is not an outage
// (the router refuses the plan) and leaves no evidence fails the
// investigation instead of delivering an empty "completed".
func TestStageErrorWithoutEvidenceFails(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: fastRetries(3)})
	h.router.down = func() error { return status.Error(codes.Internal, "plan exploded") }
	resp, rec := submitWait(t, h)
	if resp.GetStatus() != statusFailed || rec.GetState() != stateFailed || !strings.Contains(rec.GetFailureReason(), "plan exploded") {
		t.Fatalf("status %q state %q reason %q", resp.GetStatus(), rec.GetState(), rec.GetFailureReason())
	}
	if rec.GetDependencyRetries() != 0 {
		t.Errorf("a non-outage error was retried %d times", rec.GetDependencyRetries())
	}
}

// TestSweeperRequeuesOrphans: an investigation saved but never queued (a
// crash between the two) is re-queued by the sweeper and completes; one
// indexed but never saved releases its fingerprint; one that keeps coming
// back fails with the reason.
func TestSweeperRequeuesOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	b := bustest.New(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	cfg := fastRetries(3)
	cfg.SweepInterval = 0 // swept by hand
	cfg.OrphanAge = time.Minute
	cfg.MaxRequeues = 1
	h := newHarness(t, harnessOpts{bus: b, cfg: cfg, now: now})
	ctx := testCtx(t)
	store, err := h.svc.store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := intake.Parse([]byte(crashAlert), "")
	if err != nil {
		t.Fatal(err)
	}
	alerts := parsed[0]
	// Orphan 1: indexed and saved, never queued.
	st := h.svc.newState(alerts, "orphan-1", "inv-orphan-1", "", nil)
	if err := h.svc.markOpen(ctx, store, "inv-orphan-1", "orphan-1", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.checkpoint(ctx, st); err != nil {
		t.Fatal(err)
	}
	// Orphan 2: indexed and its fingerprint claimed, never saved.
	if _, err := store.claimFingerprint(ctx, "fp-2", now(), time.Hour, time.Minute, func(*fpEntry) fpEntry {
		return fpEntry{SessionID: "orphan-2", InvestigationID: "inv-orphan-2", FirstSeen: now()}
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.markOpen(ctx, store, "inv-orphan-2", "orphan-2", "fp-2"); err != nil {
		t.Fatal(err)
	}
	res, err := h.svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res != (SweepResult{}) {
		t.Fatalf("young entries swept: %+v", res)
	}
	clock.Add(int64(2 * time.Minute))
	res, err = h.svc.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requeued != 1 || res.Dropped != 1 {
		t.Fatalf("sweep %+v, want 1 re-queued and 1 dropped", res)
	}
	if _, _, err := store.fingerprints.Get(ctx, "fp-2"); err == nil {
		t.Errorf("the never-saved orphan still holds its fingerprint")
	}
	// A second sweep while the item waits on the queue does nothing.
	if res, err := h.svc.Sweep(ctx); err != nil || res.Requeued+res.Failed != 0 {
		t.Fatalf("second sweep %+v %v", res, err)
	}
	h.run(h.svc)
	fin, err := h.svc.waitFinal(ctx, "inv-orphan-1")
	if err != nil {
		t.Fatal(err)
	}
	if fin.rec.GetState() != stateCompleted || fin.rec.GetRequeues() != 1 || len(fin.pins) == 0 {
		t.Fatalf("re-queued orphan: state %q requeues %d pins %d stages %v", fin.rec.GetState(), fin.rec.GetRequeues(), len(fin.pins), fin.rec.GetStages())
	}
	// The open index is cleared after the final checkpoint is written:
	// poll for it rather than read it once.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, _, err := store.open.Get(ctx, "inv-orphan-1"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a completed investigation stays in the open index")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Orphan 3: already re-queued MaxRequeues times: failed.
	st3 := h.svc.newState(alerts, "orphan-3", "inv-orphan-3", "", nil)
	st3.rec.Requeues = 1
	if err := h.svc.markOpen(ctx, store, "inv-orphan-3", "orphan-3", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.checkpoint(ctx, st3); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(2 * time.Minute))
	res, err = h.svc.Sweep(ctx)
	if err != nil || res.Failed != 1 {
		t.Fatalf("sweep %+v %v, want 1 failed", res, err)
	}
	got, err := store.loadState(ctx, "inv-orphan-3")
	if err != nil {
		t.Fatal(err)
	}
	if got.rec.GetState() != stateFailed || !strings.Contains(got.rec.GetFailureReason(), "re-queued 1 times") {
		t.Errorf("state %q reason %q", got.rec.GetState(), got.rec.GetFailureReason())
	}
}

// TestListPinsPages: 900 pins of 6 KB (5.4 MB, above the 4 MiB gRPC limit
// that an unpaged answer hit) are read page by page over gRPC, each pin
// once, in arrival order; a bad token is refused.
func TestListPinsPages(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	ctx := testCtx(t)
	const n = 900
	raw := strings.Repeat("x", 6000)
	for i := range n {
		pin := &evidencev1.EvidencePin{Id: fmt.Sprintf("pin-%04d", i), SessionId: "big", Claim: "c", RawOutput: raw, Version: 1, Success: true}
		if _, err := b.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "big", Pin: pin}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	token, pages := "", 0
	for {
		resp, err := h.client.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: "big", PageToken: token, PageSize: 500})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if resp.GetTotal() != n {
			t.Errorf("total %d", resp.GetTotal())
		}
		if sz := proto.Size(resp); sz > maxPinPageBytes+64<<10 {
			t.Errorf("page %d is %d bytes", pages, sz)
		}
		for _, p := range resp.GetPins() {
			got = append(got, p.GetId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(got) != n || got[0] != "pin-0000" || got[n-1] != fmt.Sprintf("pin-%04d", n-1) || pages < 3 {
		t.Fatalf("%d pins in %d pages (first %v)", len(got), pages, got[:min(3, len(got))])
	}
	all, err := mesh.AllPins(ctx, h.client, "big")
	if err != nil || len(all) != n {
		t.Fatalf("AllPins: %d %v", len(all), err)
	}
	if _, err := h.client.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: "big", PageToken: "bogus"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bogus token: %v", err)
	}
}

// TestDeliveryDownFailsVisibly: a delivery service that stays down fails
// the investigation at the deliver stage with its reason, keeping the
// diagnosis it had reached (nothing is handed to the absent delivery).
func TestDeliveryDownFailsVisibly(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: fastRetries(3)})
	h.delivery.down = func() error { return status.Error(codes.DeadlineExceeded, "delivery timed out") }
	_, rec := submitWait(t, h)
	if rec.GetState() != stateFailed || !strings.HasPrefix(rec.GetFailureReason(), "deliver: delivery unavailable") {
		t.Fatalf("state %q reason %q", rec.GetState(), rec.GetFailureReason())
	}
	if stageStatus(rec, stageDiagnose) != "ok" || strings.HasPrefix(rec.GetDiagnosis().GetRootCause(), "Investigation failed") || len(rec.GetToolCalls()) == 0 {
		t.Errorf("the diagnosis reached before delivery failed was not kept: %v", rec.GetDiagnosis())
	}
}

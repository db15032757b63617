package bus_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestSessionsThatUsedToCollideAreIsolated: ids the old escape mapped to one
// subject ("team-a.prod" and "team-a_prod" both became team-a_prod) have
// their own subjects, never read each other's pins, and a pin id and version
// shared by both sessions is stored twice (message ids differ too).
func TestSessionsThatUsedToCollideAreIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	b := bustest.New(t)
	sessions := []string{"team-a.prod", "team-a_prod", "team-a:prod", "team-a-prod"}
	for _, s := range sessions {
		mustPublishPin(t, ctx, b, pinEvent(s, "p1", added, 1))
		mustPublishPin(t, ctx, b, pinEvent(s, "only-"+s, added, 1))
	}
	for _, s := range sessions {
		for _, filter := range []string{bus.SessionFilter(s), bus.PinFilter(s, added)} {
			evs, err := b.Replay(ctx, filter, 0)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ev := range evs {
				if got := ev.GetPin().GetSessionId(); got != s {
					t.Errorf("filter %s of %q delivered a pin of %q", filter, s, got)
				}
				if got, err := bus.SessionOfSubject(ev.GetSubject()); err != nil || got != s {
					t.Errorf("subject %s decodes to %q, %v; want %q", ev.GetSubject(), got, err, s)
				}
				ids = append(ids, ev.GetPin().GetPin().GetId())
			}
			if want := fmt.Sprint([]string{"p1", "only-" + s}); fmt.Sprint(ids) != want {
				t.Errorf("filter %s: pins %v, want %s", filter, ids, want)
			}
		}
	}
}

// TestOverlongSubjectIsRefusedAndTheConnectionSurvives: a 4,000-byte session
// id used to produce a protocol line over NATS's limit, and the server closed
// the connection every module shares. The bus refuses it instead.
func TestOverlongSubjectIsRefusedAndTheConnectionSurvives(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	b := bustest.New(t)
	long := strings.Repeat("a", 4000)
	if _, err := b.PublishPin(ctx, pinEvent(long, "p", added, 1)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("PublishPin with a 4000-byte session = %v, want the subject refused", err)
	}
	if _, err := b.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{SessionId: long, Kind: stage}); err == nil {
		t.Error("PublishLifecycle with a 4000-byte session succeeded")
	}
	if _, err := b.Replay(ctx, bus.SessionFilter(long), 0); err == nil {
		t.Error("Replay of a 4000-byte filter succeeded")
	}
	if err := b.Follow(ctx, bus.SessionFilter(long), 0, func(context.Context, *evidencev1.SessionEvent) error { return nil }); err == nil {
		t.Error("Follow of a 4000-byte filter succeeded")
	}
	if err := b.ConsumeDurable(ctx, "d", bus.SessionFilter(long), func(context.Context, *evidencev1.SessionEvent) error { return nil }); err == nil {
		t.Error("ConsumeDurable of a 4000-byte filter succeeded")
	}
	// The longest valid session id (128 bytes, every byte escaped) fits.
	worst := strings.Repeat(".", 128)
	if n := len(bus.PinSubject(worst, evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED)); n > bus.MaxSubjectBytes {
		t.Errorf("a 128-byte session id makes a %d-byte subject, over the limit", n)
	}
	mustPublishPin(t, ctx, b, pinEvent(worst, "p", added, 1))
	if st := b.Conn().Status(); st != nats.CONNECTED {
		t.Fatalf("connection is %v after the refused publishes", st)
	}
	mustPublishPin(t, ctx, b, pinEvent("after", "p", added, 1))
}

// TestCursorAtTheEndOfUint64DoesNotWrap: from_sequence 2^64-1 used to become
// OptStartSeq 0, which JetStream rejects (or reads as "from the start").
func TestCursorAtTheEndOfUint64DoesNotWrap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	b := bustest.New(t)
	mustPublishPin(t, ctx, b, pinEvent("c", "old", added, 1))
	for _, from := range []uint64{math.MaxUint64, math.MaxUint64 - 1, 1 << 40} {
		evs, err := b.Replay(ctx, bus.SessionFilter("c"), from)
		if err != nil || len(evs) != 0 {
			t.Errorf("Replay(from %d) = %d events, %v; want none", from, len(evs), err)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var ids []string
	done := make(chan error, 1)
	go func() {
		done <- b.Follow(fctx, bus.SessionFilter("c"), math.MaxUint64, func(_ context.Context, ev *evidencev1.SessionEvent) error {
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, ev.GetPin().GetPin().GetId())
			return nil
		})
	}()
	// Publish until the follower (which may still be subscribing) sees one:
	// only new events may arrive, never "old".
	for i := 0; ; i++ {
		mustPublishPin(t, ctx, b, pinEvent("c", fmt.Sprintf("new%d", i), added, 1))
		mu.Lock()
		n := len(ids)
		mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Follow stopped: %v", err)
		case <-ctx.Done():
			t.Fatal("Follow from 2^64-1 delivered nothing")
		default:
		}
		pollFor(200*time.Millisecond, func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) > 0 })
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if id == "old" {
			t.Errorf("Follow from 2^64-1 replayed history: %v", ids)
		}
	}
}

// pollFor polls cond until it holds or d passes.
func pollFor(d time.Duration, cond func() bool) {
	for deadline := time.Now().Add(d); !cond() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPublishRefusesTimestampsNoReaderCouldDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	ctx := testCtx(t)
	b := bustest.New(t)
	tests := []struct {
		name string
		mod  func(*evidencev1.PinEvent)
		ok   bool
	}{
		{"valid", func(ev *evidencev1.PinEvent) { ev.Pin.Timestamp = timestamppb.Now() }, true},
		{"year 10000", func(ev *evidencev1.PinEvent) { ev.Pin.Timestamp = &timestamppb.Timestamp{Seconds: 253402300800} }, false},
		{"window end overflow", func(ev *evidencev1.PinEvent) {
			ev.Pin.TimeWindow = &evidencev1.TimeWindow{Start: timestamppb.Now(), End: &timestamppb.Timestamp{Seconds: math.MaxInt64}}
		}, false},
		{"negative nanos", func(ev *evidencev1.PinEvent) { ev.Time = &timestamppb.Timestamp{Seconds: 1, Nanos: -1} }, false},
	}
	for i, tt := range tests {
		ev := pinEvent("ts", fmt.Sprintf("p%d", i), added, 1)
		tt.mod(ev)
		_, err := b.PublishPin(ctx, ev)
		if (err == nil) != tt.ok {
			t.Errorf("%s: PublishPin = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "timestamp") {
			t.Errorf("%s: error %v does not name the timestamp", tt.name, err)
		}
	}
	if _, err := b.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{SessionId: "ts", Kind: stage, Time: &timestamppb.Timestamp{Seconds: -62135596801}}); err == nil {
		t.Error("lifecycle event before year 1 published")
	}
}

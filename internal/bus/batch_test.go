package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestConsumeDurableBatches: events already pending are handed over in
// batches of at most Max, in stream order; each is acked, redelivered or
// terminated on its own result (one failing event of a batch is delivered
// again, alone; the others are not); events published while a batch
// gathers (within Wait of its first) join it.
func TestConsumeDurableBatches(t *testing.T) {
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.NakDelay = 10 * time.Millisecond
	b := bustest.NewConfig(t, cfg)
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	for _, id := range ids {
		mustPublishPin(t, ctx, b, pinEvent("d", id, added, 1))
	}
	var (
		mu      sync.Mutex
		batches [][]string
		calls   = map[string]int{}
	)
	run := func(ctx context.Context, batching bus.Batching) error {
		return b.ConsumeDurableBatches(ctx, bus.ConsumerCritic, bus.PinAddedFilter, batching, func(_ context.Context, batch []bus.Delivery) []error {
			mu.Lock()
			defer mu.Unlock()
			var got []string
			errs := make([]error, len(batch))
			for i, d := range batch {
				if d.Ctx == nil {
					t.Errorf("event %d has no context", i)
				}
				id := d.Event.GetPin().GetPin().GetId()
				got = append(got, id)
				calls[id]++
				if id == "c" && calls[id] == 1 {
					errs[i] = errors.New("transient")
				}
			}
			batches = append(batches, got)
			return errs
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(cctx, bus.Batching{Max: 3}) }()
	eventually(t, "every event handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if calls[id] < 1 || id == "c" && calls[id] < 2 {
				return false
			}
		}
		return true
	})
	cons, err := b.JetStream().Consumer(ctx, bus.StreamEvents, bus.ConsumerCritic)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "all acked", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ConsumeDurableBatches returned %v after cancel", err)
	}
	mu.Lock()
	var first []string // first deliveries, in order
	sizes := 0
	for _, batch := range batches {
		if len(batch) > 3 {
			t.Errorf("a batch of %d, more than Max 3: %v", len(batch), batch)
		}
		sizes = max(sizes, len(batch))
		for _, id := range batch {
			if !slices.Contains(first, id) {
				first = append(first, id)
			}
		}
	}
	if fmt.Sprint(first) != fmt.Sprint(ids) {
		t.Errorf("first deliveries in order %v, want %v (batches %v)", first, ids, batches)
	}
	if sizes < 2 {
		t.Errorf("pending events came one at a time: %v", batches)
	}
	want := map[string]int{"a": 1, "b": 1, "c": 2, "d": 1, "e": 1, "f": 1, "g": 1}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	batches = nil
	mu.Unlock()

	// Live: the second event is published while the first one's batch
	// gathers (Wait is far longer than a publish).
	cctx, cancel = context.WithCancel(ctx)
	go func() { done <- run(cctx, bus.Batching{Max: 16, Wait: 3 * time.Second}) }()
	mustPublishPin(t, ctx, b, pinEvent("d", "h", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("d", "i", added, 1))
	eventually(t, "live events handled", func() bool { mu.Lock(); defer mu.Unlock(); return calls["i"] == 1 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(batches) != "[[h i]]" {
		t.Errorf("live batches %v, want [[h i]]", batches)
	}
}

// TestPublishPinsTracedContinuesEachTrace: each event of a batch published
// with its own trace context carries that trace to its readers (and its
// own content: each is encoded into a buffer of its own).
func TestPublishPinsTracedContinuesEachTrace(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	var traces []context.Context
	var evs []*evidencev1.PinEvent
	for i := range 3 {
		tid := trace.TraceID{byte(i + 1)}
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
		traces = append(traces, trace.ContextWithSpanContext(ctx, sc))
		evs = append(evs, pinEvent("tr", fmt.Sprint("p", i), added, 1))
	}
	seqs, err := b.PublishPinsTraced(ctx, evs, traces)
	if err != nil || len(seqs) != 3 {
		t.Fatalf("PublishPinsTraced = %v, %v", seqs, err)
	}
	got := map[string]trace.TraceID{}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errDone := errors.New("done")
	err = b.Follow(fctx, bus.SessionFilter("tr"), 0, func(hctx context.Context, ev *evidencev1.SessionEvent) error {
		p := ev.GetPin().GetPin()
		if p.GetClaim() != "claim "+p.GetId() {
			t.Errorf("pin %s stored with claim %q", p.GetId(), p.GetClaim())
		}
		got[p.GetId()] = trace.SpanContextFromContext(hctx).TraceID()
		if len(got) == 3 {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatal(err)
	}
	for i := range 3 {
		if want := (trace.TraceID{byte(i + 1)}); got[fmt.Sprint("p", i)] != want {
			t.Errorf("p%d read in trace %s, want %s", i, got[fmt.Sprint("p", i)], want)
		}
	}
}

package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

const (
	added    = evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED
	updated  = evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED
	rejected = evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED
	stage    = evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE
)

func pinEvent(session, id string, kind evidencev1.PinEventKind, version int64) *evidencev1.PinEvent {
	return &evidencev1.PinEvent{
		Kind:      kind,
		SessionId: session,
		Pin:       &evidencev1.EvidencePin{Id: id, SessionId: session, Version: version, Claim: "claim " + id},
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustPublishPin(t *testing.T, ctx context.Context, b *bus.Bus, ev *evidencev1.PinEvent) uint64 {
	t.Helper()
	seq, err := b.PublishPin(ctx, ev)
	if err != nil {
		t.Fatalf("PublishPin(%s v%d): %v", ev.GetPin().GetId(), ev.GetPin().GetVersion(), err)
	}
	return seq
}

func TestConnectIsIdempotentAndConfiguresStreams(t *testing.T) {
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.EventsMaxAge = 48 * time.Hour
	b := bustest.NewConfig(t, cfg)
	// A second process connecting again must not fail.
	if _, err := bus.ConnectConfig(ctx, b.Conn(), nil, cfg); err != nil {
		t.Fatalf("second Connect: %v", err)
	}
	tests := []struct {
		stream    string
		subjects  string
		retention jetstream.RetentionPolicy
		maxAge    time.Duration
	}{
		{bus.StreamEvents, "rcamesh.v1.session.>", jetstream.LimitsPolicy, 48 * time.Hour},
		{bus.StreamWork, "rcamesh.v1.work.>", jetstream.WorkQueuePolicy, cfg.WorkMaxAge},
	}
	for _, tt := range tests {
		s, err := b.JetStream().Stream(ctx, tt.stream)
		if err != nil {
			t.Fatalf("stream %s: %v", tt.stream, err)
		}
		c := s.CachedInfo().Config
		if c.Subjects[0] != tt.subjects || c.Retention != tt.retention || c.MaxAge != tt.maxAge ||
			c.Storage != jetstream.FileStorage || c.Duplicates != 2*time.Minute {
			t.Errorf("stream %s config = subjects %v retention %v max age %s storage %v dup %s",
				tt.stream, c.Subjects, c.Retention, c.MaxAge, c.Storage, c.Duplicates)
		}
	}
}

func TestPublishValidation(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	pinTests := []struct {
		name string
		ev   *evidencev1.PinEvent
	}{
		{"nil", nil},
		{"no pin", &evidencev1.PinEvent{Kind: added, SessionId: "s"}},
		{"no pin id", &evidencev1.PinEvent{Kind: added, SessionId: "s", Pin: &evidencev1.EvidencePin{}}},
		{"no kind", pinEvent("s", "p", evidencev1.PinEventKind_PIN_EVENT_KIND_UNSPECIFIED, 1)},
		{"unknown kind", pinEvent("s", "p", evidencev1.PinEventKind(42), 1)},
		{"no session", &evidencev1.PinEvent{Kind: added, Pin: &evidencev1.EvidencePin{Id: "p"}}},
	}
	for _, tt := range pinTests {
		if _, err := b.PublishPin(ctx, tt.ev); err == nil {
			t.Errorf("PublishPin(%s) succeeded, want error", tt.name)
		}
	}
	lcTests := []struct {
		name string
		ev   *evidencev1.LifecycleEvent
	}{
		{"nil", nil},
		{"no session", &evidencev1.LifecycleEvent{Kind: stage}},
		{"no kind", &evidencev1.LifecycleEvent{SessionId: "s"}},
	}
	for _, tt := range lcTests {
		if _, err := b.PublishLifecycle(ctx, tt.ev); err == nil {
			t.Errorf("PublishLifecycle(%s) succeeded, want error", tt.name)
		}
	}
	if err := b.Enqueue(ctx, "", []byte("x")); err == nil {
		t.Error("Enqueue without msg id succeeded")
	}
}

func TestPublishPinIsIdempotent(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	first := mustPublishPin(t, ctx, b, pinEvent("s1", "p1", added, 1))
	again := mustPublishPin(t, ctx, b, pinEvent("s1", "p1", added, 1))
	if again != first {
		t.Errorf("republish returned seq %d, want the first copy's %d", again, first)
	}
	// The session id may come from the pin only: same message id.
	ev := pinEvent("s1", "p1", added, 1)
	ev.SessionId = ""
	if seq := mustPublishPin(t, ctx, b, ev); seq != first {
		t.Errorf("republish with session only on the pin returned seq %d, want %d", seq, first)
	}
	// A new version is a new message.
	if seq := mustPublishPin(t, ctx, b, pinEvent("s1", "p1", updated, 2)); seq == first {
		t.Error("version 2 was deduplicated against version 1")
	}
	got, err := b.Replay(ctx, bus.SessionFilter("s1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("replay has %d events, want 2: %v", len(got), got)
	}
	if p := got[0].GetPin(); p.GetEventId() == "" || p.GetTime() == nil || p.GetSessionId() != "s1" {
		t.Errorf("published event not completed: %v", p)
	}
}

func TestPerSessionOrdering(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	const n = 30
	for i := 1; i <= n; i++ {
		kind := updated
		if i == 1 {
			kind = added
		}
		mustPublishPin(t, ctx, b, pinEvent("ord", "p", kind, int64(i)))
		// Interleave another session.
		mustPublishPin(t, ctx, b, pinEvent("other", fmt.Sprintf("o%d", i), added, 1))
	}
	got, err := b.Replay(ctx, bus.SessionFilter("ord"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	var last uint64
	for i, ev := range got {
		if v := ev.GetPin().GetPin().GetVersion(); v != int64(i+1) {
			t.Fatalf("event %d has version %d, want %d", i, v, i+1)
		}
		if ev.GetSequence() <= last {
			t.Fatalf("sequence %d after %d", ev.GetSequence(), last)
		}
		last = ev.GetSequence()
	}
}

func TestFilters(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	mustPublishPin(t, ctx, b, pinEvent("a", "p1", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("a", "p1", rejected, 2))
	mustPublishPin(t, ctx, b, pinEvent("b", "p2", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("a.dotted", "p3", added, 1))
	if _, err := b.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{SessionId: "a", Kind: stage, Stage: "plan"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		filter   string
		subjects []string
	}{
		{"one session", bus.SessionFilter("a"), []string{
			"rcamesh.v1.session.a.pin.added", "rcamesh.v1.session.a.pin.rejected", "rcamesh.v1.session.a.lifecycle.stage"}},
		{"one kind everywhere", bus.PinAddedFilter, []string{
			"rcamesh.v1.session.a.pin.added", "rcamesh.v1.session.b.pin.added", "rcamesh.v1.session.a=2Edotted.pin.added"}},
		{"one session one kind", bus.PinSubject("a", rejected), []string{"rcamesh.v1.session.a.pin.rejected"}},
		{"lifecycle of a session", bus.LifecycleFilter("a"), []string{"rcamesh.v1.session.a.lifecycle.stage"}},
		{"escaped session", bus.SessionFilter("a.dotted"), []string{"rcamesh.v1.session.a=2Edotted.pin.added"}},
		{"everything", "", nil}, // 5 events, checked by count
		{"nothing", bus.SessionFilter("none"), []string{}},
	}
	for _, tt := range tests {
		got, err := b.Replay(ctx, tt.filter, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.subjects == nil {
			if len(got) != 5 {
				t.Errorf("%s: %d events, want 5", tt.name, len(got))
			}
			continue
		}
		var subs []string
		for _, ev := range got {
			subs = append(subs, ev.GetSubject())
		}
		if fmt.Sprint(subs) != fmt.Sprint(tt.subjects) {
			t.Errorf("%s: subjects %v, want %v", tt.name, subs, tt.subjects)
		}
	}
	// Lifecycle payloads decode into the lifecycle arm.
	got, _ := b.Replay(ctx, bus.LifecycleFilter("a"), 0)
	if len(got) != 1 || got[0].GetLifecycle().GetStage() != "plan" || got[0].GetLifecycle().GetEventId() == "" {
		t.Errorf("lifecycle event decoded as %v", got)
	}
}

func TestReplayFromSequence(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	var seqs []uint64
	for i := 1; i <= 5; i++ {
		seqs = append(seqs, mustPublishPin(t, ctx, b, pinEvent("r", fmt.Sprintf("p%d", i), added, 1)))
	}
	tests := []struct {
		from uint64
		want int
	}{
		{0, 5}, {seqs[0], 4}, {seqs[2], 2}, {seqs[4], 0}, {seqs[4] + 100, 0},
	}
	for _, tt := range tests {
		got, err := b.Replay(ctx, bus.SessionFilter("r"), tt.from)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tt.want {
			t.Errorf("Replay(from %d) = %d events, want %d", tt.from, len(got), tt.want)
			continue
		}
		if len(got) > 0 && got[0].GetSequence() != tt.from+1 && tt.from != 0 {
			t.Errorf("Replay(from %d) starts at %d", tt.from, got[0].GetSequence())
		}
	}
}

func TestFollowDeliversHistoryThenLive(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	s1 := mustPublishPin(t, ctx, b, pinEvent("f", "p1", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("f", "p2", added, 1))

	fctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var ids []string
	done := make(chan error, 1)
	go func() {
		done <- b.Follow(fctx, bus.SessionFilter("f"), s1, func(_ context.Context, ev *evidencev1.SessionEvent) error {
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, ev.GetPin().GetPin().GetId())
			return nil
		})
	}()
	seen := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) >= n }
	}
	eventually(t, "history", seen(1))
	mustPublishPin(t, ctx, b, pinEvent("other", "x", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("f", "p3", added, 1))
	eventually(t, "live event", seen(2))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow returned %v after cancel, want nil", err)
	}
	if fmt.Sprint(ids) != "[p2 p3]" {
		t.Errorf("followed %v, want [p2 p3]", ids)
	}

	// A handler error stops Follow and is returned.
	boom := errors.New("boom")
	err := b.Follow(ctx, bus.SessionFilter("f"), 0, func(context.Context, *evidencev1.SessionEvent) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Follow = %v, want wrapped boom", err)
	}
}

func TestConsumeDurableRedeliversAfterError(t *testing.T) {
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.NakDelay = 10 * time.Millisecond
	b := bustest.NewConfig(t, cfg)
	mustPublishPin(t, ctx, b, pinEvent("d", "ok", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("d", "flaky", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("d", "ignored", updated, 2)) // not matched by the filter

	var mu sync.Mutex
	calls := map[string]int{}
	handled := map[string]bool{}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.ConsumeDurable(cctx, bus.ConsumerCritic, bus.PinAddedFilter, func(_ context.Context, ev *evidencev1.SessionEvent) error {
			mu.Lock()
			defer mu.Unlock()
			id := ev.GetPin().GetPin().GetId()
			calls[id]++
			if id == "flaky" && calls[id] < 3 {
				return errors.New("transient")
			}
			handled[id] = true
			return nil
		})
	}()
	eventually(t, "flaky handled", func() bool { mu.Lock(); defer mu.Unlock(); return handled["flaky"] && handled["ok"] })
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
		t.Fatalf("ConsumeDurable returned %v after cancel", err)
	}
	mu.Lock()
	if calls["flaky"] != 3 || calls["ok"] != 1 || calls["ignored"] != 0 {
		t.Errorf("calls = %v, want flaky 3, ok 1, ignored 0", calls)
	}
	mu.Unlock()

	// The durable remembers its position: a restart sees only new events.
	mustPublishPin(t, ctx, b, pinEvent("d", "new", added, 1))
	var after []string
	cctx2, cancel2 := context.WithCancel(ctx)
	go func() {
		done <- b.ConsumeDurable(cctx2, bus.ConsumerCritic, bus.PinAddedFilter, func(_ context.Context, ev *evidencev1.SessionEvent) error {
			mu.Lock()
			defer mu.Unlock()
			after = append(after, ev.GetPin().GetPin().GetId())
			return nil
		})
	}()
	eventually(t, "new event after restart", func() bool { mu.Lock(); defer mu.Unlock(); return len(after) > 0 })
	cancel2()
	<-done
	if fmt.Sprint(after) != "[new]" {
		t.Errorf("after restart got %v, want [new]", after)
	}
}

func TestConsumeDurableGivesUpAfterMaxDeliver(t *testing.T) {
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.NakDelay = 5 * time.Millisecond
	cfg.MaxDeliver = 3
	b := bustest.NewConfig(t, cfg)
	mustPublishPin(t, ctx, b, pinEvent("g", "poison", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("g", "fine", added, 1))
	var calls atomic.Int32
	var fine atomic.Bool
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = b.ConsumeDurable(cctx, "poison-test", bus.SessionFilter("g"), func(_ context.Context, ev *evidencev1.SessionEvent) error {
			if ev.GetPin().GetPin().GetId() == "fine" {
				fine.Store(true)
				return nil
			}
			calls.Add(1)
			return errors.New("always")
		})
	}()
	var cons jetstream.Consumer
	eventually(t, "consumer created", func() bool {
		var err error
		cons, err = b.JetStream().Consumer(ctx, bus.StreamEvents, "poison-test")
		return err == nil
	})
	eventually(t, "poison message given up", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && fine.Load() && info.NumAckPending == 0 && info.NumPending == 0
	})
	if got := calls.Load(); got != 3 {
		t.Errorf("poison message delivered %d times, want MaxDeliver 3", got)
	}
}

// TestConsumeDurableKeepsALongHandlerInProgress: a handler that works for
// several ack waits keeps its message (the consumer tells the server it is
// in progress): the server does not deliver it again meanwhile, and does
// not once it is acknowledged.
func TestConsumeDurableKeepsALongHandlerInProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for several ack waits of at least 1s")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.AckWait = time.Second
	b := bustest.NewConfig(t, cfg)
	mustPublishPin(t, ctx, b, pinEvent("w", "slow", added, 1))
	mustPublishPin(t, ctx, b, pinEvent("w", "next", added, 1))
	var calls atomic.Int32
	var next atomic.Bool
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = b.ConsumeDurable(cctx, "progress-test", bus.SessionFilter("w"), func(hctx context.Context, ev *evidencev1.SessionEvent) error {
			if ev.GetPin().GetPin().GetId() == "next" {
				next.Store(true)
				return nil
			}
			calls.Add(1)
			select { // three and a half ack waits
			case <-time.After(3*cfg.AckWait + cfg.AckWait/2):
			case <-hctx.Done():
			}
			return nil
		})
	}()
	var cons jetstream.Consumer
	eventually(t, "consumer created", func() bool {
		var err error
		cons, err = b.JetStream().Consumer(ctx, bus.StreamEvents, "progress-test")
		return err == nil
	})
	eventually(t, "both handled and acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && next.Load() && info.NumAckPending == 0 && info.NumPending == 0
	})
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 || info.NumRedelivered != 0 {
		t.Errorf("slow message handled %d times, %d redelivered: its handler was not kept in progress", got, info.NumRedelivered)
	}
}

func TestConcurrentPublishesOnOneSessionLoseNone(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.PublishPin(ctx, pinEvent("conc", fmt.Sprintf("p%03d", i), added, 1)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := b.Replay(ctx, bus.SessionFilter("conc"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, ev := range got {
		ids[ev.GetPin().GetPin().GetId()] = true
	}
	if len(got) != n || len(ids) != n {
		t.Fatalf("replayed %d events with %d distinct pins, want %d", len(got), len(ids), n)
	}
}

func TestTraceContextCrossesTheBus(t *testing.T) {
	ctx := testCtx(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg := bus.DefaultConfig()
	cfg.TracerProvider = tp
	b := bustest.NewConfig(t, cfg)

	member, _ := baggage.NewMember("tenant", "blue")
	bag, _ := baggage.New(member)
	pctx, parent := tp.Tracer("test").Start(baggage.ContextWithBaggage(ctx, bag), "investigate")
	mustPublishPin(t, pctx, b, pinEvent("tr", "p1", added, 1))
	parent.End()

	// The raw message carries lower-case W3C headers next to the contract headers.
	raw, err := b.JetStream().Stream(ctx, bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := raw.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"Content-Type": "application/protobuf", "Rcamesh-Event-Kind": "pin", "Rcamesh-Schema": "rcamesh.evidence.v1.PinEvent"} {
		if got := msg.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if msg.Header.Get("traceparent") == "" || msg.Header.Get("baggage") == "" {
		t.Errorf("trace headers missing: %v", msg.Header)
	}

	var gotTrace trace.TraceID
	var gotTenant string
	err = b.Follow(ctx, bus.SessionFilter("tr"), 0, func(hctx context.Context, _ *evidencev1.SessionEvent) error {
		gotTrace = trace.SpanContextFromContext(hctx).TraceID()
		gotTenant = baggage.FromContext(hctx).Member("tenant").Value()
		return errors.New("stop")
	})
	if err == nil {
		t.Fatal("Follow did not return the handler's error")
	}
	if gotTrace != parent.SpanContext().TraceID() {
		t.Errorf("consumer trace %s, want producer trace %s", gotTrace, parent.SpanContext().TraceID())
	}
	if gotTenant != "blue" {
		t.Errorf("baggage tenant = %q, want blue", gotTenant)
	}
	kinds := map[trace.SpanKind]int{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == parent.SpanContext().TraceID() {
			kinds[s.SpanKind()]++
		}
	}
	if kinds[trace.SpanKindProducer] != 1 || kinds[trace.SpanKindConsumer] != 1 {
		t.Errorf("spans in the trace by kind = %v, want one producer and one consumer", kinds)
	}
}

func TestWorkQueue(t *testing.T) {
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.NakDelay = 5 * time.Millisecond
	b := bustest.NewConfig(t, cfg)
	for _, id := range []string{"a1", "a2", "a1"} { // a1 twice: deduplicated
		if err := b.Enqueue(ctx, id, []byte("payload-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]int{}
	failedOnce := false
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	// Two workers share the durable: each item is handled by one of them.
	worker := func(_ context.Context, p []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if string(p) == "payload-a2" && !failedOnce {
			failedOnce = true
			return errors.New("transient")
		}
		got[string(p)]++
		return nil
	}
	go func() { done <- b.ConsumeWork(cctx, worker) }()
	go func() { done <- b.ConsumeWork(cctx, worker) }()
	eventually(t, "work done", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	s, err := b.JetStream().Stream(ctx, bus.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "work queue empty", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got["payload-a1"] != 1 || got["payload-a2"] != 1 {
		t.Errorf("handled %v, want each item once", got)
	}
}

// TestWorkHeldElsewhereIsLeftPending: a handler that says another consumer
// holds its message (bus.ErrHeldElsewhere) settles nothing: the message is
// not acknowledged, so when no holder acknowledges it, it comes back after
// AckWait and is done then.
func TestWorkHeldElsewhereIsLeftPending(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an ack wait of 1s")
	}
	ctx := testCtx(t)
	cfg := bus.DefaultConfig()
	cfg.AckWait = time.Second
	b := bustest.NewConfig(t, cfg)
	if err := b.Enqueue(ctx, "h1", []byte("held")); err != nil {
		t.Fatal(err)
	}
	var calls, done atomic.Int32
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = b.ConsumeWork(cctx, func(context.Context, []byte) error {
			if calls.Add(1) == 1 {
				return bus.ErrHeldElsewhere
			}
			done.Add(1)
			return nil
		})
	}()
	eventually(t, "the held message delivered again and done", func() bool { return done.Load() == 1 })
	s, err := b.JetStream().Stream(ctx, bus.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "work queue empty", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if got := calls.Load(); got != 2 {
		t.Errorf("handled %d times, want 2 (left once, then done)", got)
	}
}

func TestKVCreatedLazily(t *testing.T) {
	ctx := testCtx(t)
	b := bustest.New(t)
	if _, err := b.JetStream().KeyValue(ctx, bus.BucketSessions); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("bucket exists before first use: %v", err)
	}
	kv, err := b.KV(ctx, bus.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "s1", []byte("state")); err != nil {
		t.Fatal(err)
	}
	kv2, err := b.KV(ctx, bus.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv2.Get(ctx, "s1")
	if err != nil || string(e.Value()) != "state" {
		t.Fatalf("Get = %v, %v", e, err)
	}
	if _, err := b.KV(ctx, "bad name!"); err == nil {
		t.Error("KV with an invalid bucket name succeeded")
	}
}

func TestDecodeRejectsUnknownKind(t *testing.T) {
	data, _ := proto.Marshal(&evidencev1.PinEvent{EventId: "e"})
	if _, err := bus.Decode("s", 1, nil, data); err == nil {
		t.Error("Decode without kind header succeeded")
	}
	h := map[string][]string{bus.HeaderEventKind: {"pin"}}
	ev, err := bus.Decode("s", 7, h, data)
	if err != nil || ev.GetSequence() != 7 || ev.GetPin().GetEventId() != "e" {
		t.Errorf("Decode = %v, %v", ev, err)
	}
	if _, err := bus.Decode("s", 1, h, []byte{0xff, 0xff}); err == nil {
		t.Error("Decode of garbage succeeded")
	}
}

// TestWorkPendingAndOldConsumer: an item keyed by its investigation is
// pending until acknowledged; a work consumer created by an older version
// (one filter on the plain subject) is upgraded in place and still takes
// items left on the plain subject.
func TestWorkPendingAndOldConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	ctx := testCtx(t)
	b := bustest.New(t)
	// The durable as an older version made it, with an item on the old subject.
	if _, err := b.JetStream().CreateOrUpdateConsumer(ctx, bus.StreamWork, jetstream.ConsumerConfig{
		Durable: bus.ConsumerWork, FilterSubject: bus.SubjectWorkAlert, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().Publish(ctx, bus.SubjectWorkAlert, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := b.EnqueueKeyed(ctx, "inv-1.x", "work:inv-1.x:0", []byte("new")); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"inv-1.x": true, "inv-2": false} {
		if got, err := b.WorkPending(ctx, key); err != nil || got != want {
			t.Fatalf("WorkPending(%s) = %v, %v; want %v", key, got, err, want)
		}
	}
	var mu sync.Mutex
	var got []string
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.ConsumeWork(cctx, func(_ context.Context, p []byte) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, string(p))
			return nil
		})
	}()
	eventually(t, "both items handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	eventually(t, "the keyed item is acknowledged", func() bool {
		p, err := b.WorkPending(ctx, "inv-1.x")
		return err == nil && !p
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

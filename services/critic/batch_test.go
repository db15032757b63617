package critic

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// batchPins are pins that judge each other: a crash, a second crash, the
// same pod healthy later (contradicting the first), and two without data.
func batchPins(t testing.TB, sess string) []*evidencev1.EvidencePin {
	return []*evidencev1.EvidencePin{
		newPin("crash", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"), session(sess), at(t0)),
		newPin("other", "check_pod_status", crashPod(t, "web-5c6d7f8b9-qa"), session(sess), at(t0.Add(time.Minute))),
		newPin("ok", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-x2x1z"), session(sess), at(t0.Add(5*time.Minute))),
		newPin("empty", "get_events", nil, session(sess), noData()),
		newPin("bare", "get_events", nil, session(sess), claim("")),
	}
}

// sameVerdicts fails unless got holds the verdicts of want (status, role,
// confidence, rationale, version, supports, contradictions) and each
// verdict carries its pin's facts.
func sameVerdicts(t *testing.T, pins []*evidencev1.EvidencePin, got, want map[string]*evidencev1.EvidencePin) {
	t.Helper()
	for _, p := range pins {
		g, w := got[p.GetId()], want[p.GetId()]
		if !judged(g) || g.GetValidationStatus() != w.GetValidationStatus() || g.GetCausalRole() != w.GetCausalRole() || g.GetConfidence() != w.GetConfidence() ||
			g.GetCriticRationale() != w.GetCriticRationale() || g.GetVersion() != w.GetVersion() ||
			!slices.Equal(g.GetContradicts(), w.GetContradicts()) || !slices.Equal(g.GetSupports(), w.GetSupports()) {
			t.Errorf("pin %s: %v %v %v %q v%d %v %v\nwant: %v %v %v %q v%d %v %v", p.GetId(),
				g.GetValidationStatus(), g.GetCausalRole(), g.GetConfidence(), g.GetCriticRationale(), g.GetVersion(), g.GetContradicts(), g.GetSupports(),
				w.GetValidationStatus(), w.GetCausalRole(), w.GetConfidence(), w.GetCriticRationale(), w.GetVersion(), w.GetContradicts(), w.GetSupports())
		}
		if !proto.Equal(g.GetMetadata(), p.GetMetadata()) {
			t.Errorf("pin %s: the verdict's facts %v, want the pin's %v", p.GetId(), g.GetMetadata(), p.GetMetadata())
		}
	}
}

// TestBatchJudgedAsOneAtATime: pins the critic's consumer takes in one
// batch (all pending when it starts) get the verdicts, versions and
// number of verdict events that judging them one at a time gives.
func TestBatchJudgedAsOneAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded NATS servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	gb := bustest.New(t)
	given := newTestService(t, gb)
	for _, p := range batchPins(t, "s") {
		addPin(t, gb, p)
		if _, _, err := given.revalidate(ctx, "s", p.GetId(), p, true); err != nil {
			t.Fatal(err)
		}
	}
	want, wantCounts := latest(t, gb, "s")

	cb := bustest.New(t)
	pins := batchPins(t, "s")
	for _, p := range pins {
		addPin(t, cb, p)
	}
	consumer := newTestService(t, cb, func(c *Config) { c.BatchMax, c.BatchWait = 64, 50*time.Millisecond })
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- consumer.Run(rctx) }()
	defer func() { stop(); <-done }()
	var got map[string]*evidencev1.EvidencePin
	var counts map[string]int
	waitFor(t, "every pin judged", func() bool {
		got, counts = latest(t, cb, "s")
		for _, p := range pins {
			if !judged(got[p.GetId()]) {
				return false
			}
		}
		return maps.Equal(counts, wantCounts)
	})
	sameVerdicts(t, pins, got, want)
	if got["crash"].GetCausalRole() == got["ok"].GetCausalRole() && len(got["crash"].GetContradicts())+len(got["ok"].GetContradicts()) == 0 {
		t.Errorf("the session compares nothing: crash %v, ok %v", got["crash"], got["ok"])
	}
}

// TestBatchNotPublishedIsForgotten: when the verdicts of a batch cannot be
// published (here: the critic's process holds no signing key of the
// critic's), the batch fails
// and the pool forgets the verdicts it had merged; judged again (the
// redelivery), the pins get the verdicts a critic that never failed gives,
// each published once.
func TestBatchNotPublishedIsForgotten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded NATS servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	key := []byte("critic-batch-test-mesh-key-0123456789")
	id, err := auth.IdentityFromMeshKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bus.DefaultConfig()
	cfg.Keys = id
	judge := func(b *bus.Bus, s *Service, pins []*evidencev1.EvidencePin) error {
		batch := make([]toJudge, len(pins))
		for i, p := range pins {
			batch[i] = toJudge{ctx: ctx, pin: p}
		}
		return s.revalidateBatch(ctx, "s", batch)
	}

	// A critic that never fails, the pins in two batches.
	gb := bustest.NewConfig(t, cfg)
	pins := batchPins(t, "s")
	for _, p := range pins {
		addPin(t, gb.As("tools"), p)
	}
	given := newTestService(t, gb.As("critic"))
	if err := judge(gb, given, pins[:2]); err != nil {
		t.Fatal(err)
	}
	if err := judge(gb, given, pins[2:]); err != nil {
		t.Fatal(err)
	}
	want, wantCounts := latest(t, gb, "s")

	b := bustest.NewConfig(t, cfg)
	pins = batchPins(t, "s")
	for _, p := range pins {
		addPin(t, b.As("tools"), p)
	}
	s := newTestService(t, b.As("critic"))
	if err := judge(b, s, pins[:2]); err != nil {
		t.Fatal(err)
	}
	// Credentials issued for the tools only: the critic's signature
	// cannot be made, nothing of the batch is published.
	creds, err := auth.IssueCredentials(key, []string{"tools"}, "tools", []string{"critic"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := auth.WriteCredentials(path, creds); err != nil {
		t.Fatal(err)
	}
	limited := cfg
	if limited.Keys, err = auth.LoadCredentials(path); err != nil {
		t.Fatal(err)
	}
	lb, err := bus.ConnectConfig(ctx, b.Conn(), slog.New(slog.DiscardHandler), limited)
	if err != nil {
		t.Fatal(err)
	}
	s.bus = lb.As("critic")
	if err := judge(b, s, pins[2:]); err == nil {
		t.Fatal("a batch whose verdicts were not published succeeded")
	}
	if sp := s.pool("s"); sp.loaded || len(sp.entries) != 0 {
		t.Fatalf("the pool kept what it could not publish: loaded %v, %d entries", sp.loaded, len(sp.entries))
	}
	s.bus = b.As("critic")
	if err := judge(b, s, pins[2:]); err != nil {
		t.Fatal(err)
	}
	got, counts := latest(t, b, "s")
	sameVerdicts(t, pins, got, want)
	if !maps.Equal(counts, wantCounts) {
		t.Errorf("events per pin and kind %v, want %v", counts, wantCounts)
	}
}

package bus_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// clusterBus starts a three-node cluster and returns a bus on it with R3
// streams and KV, connected to every node.
func clusterBus(t testing.TB) (*bustest.Cluster, *bus.Bus) {
	t.Helper()
	c := bustest.StartCluster(t, 3)
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := bus.DefaultConfig()
	cfg.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bus.ConnectConfig(ctx, nc, slog.New(slog.DiscardHandler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, b
}

// TestClusterLosesNoAcknowledgedEvent: R3 streams on a three-node cluster;
// every pin acknowledged before and after one node is killed is replayed
// once, and a republished batch is deduplicated.
func TestClusterLosesNoAcknowledgedEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster")
	}
	c, b := clusterBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := b.JetStream().Stream(ctx, bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if r := info.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("stream replicas %d, want 3", r)
	}
	kv, err := b.KV(ctx, bus.BucketCritic)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
		t.Fatalf("KV replicas %d, want 3", r)
	}
	batch := func(from, n int) []*evidencev1.PinEvent {
		evs := make([]*evidencev1.PinEvent, n)
		for i := range evs {
			evs[i] = pinEvent("cl", fmt.Sprintf("p%d", from+i), added, 1)
		}
		return evs
	}
	acked := map[uint64]bool{}
	seqs, err := b.PublishPins(ctx, batch(0, 200))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seqs {
		acked[s] = true
	}
	// The node this client is connected to dies while pins are being
	// published one by one and then in batches: requests in flight on that
	// connection are never answered, and the streams' leaders may move.
	// Every publish must still succeed (the bus bounds each attempt and
	// retries under the same message id), with no retry here.
	victim := c.Index(b.Conn().ConnectedUrl())
	if victim < 0 {
		t.Fatalf("connected to %s, which is no node of the cluster", b.Conn().ConnectedUrl())
	}
	published := make(chan uint64, 400)
	errc := make(chan error, 1)
	go func() {
		for i := 200; i < 300; i++ {
			seq, err := b.PublishPin(ctx, pinEvent("cl", fmt.Sprintf("p%d", i), added, 1))
			if err != nil {
				errc <- fmt.Errorf("pin %d: %w", i, err)
				return
			}
			published <- seq
		}
		for i := 300; i < 400; i += 20 {
			seqs, err := b.PublishPins(ctx, batch(i, 20))
			if err != nil {
				errc <- fmt.Errorf("batch from %d: %w", i, err)
				return
			}
			for _, seq := range seqs {
				published <- seq
			}
		}
		close(published)
	}()
	for n := 0; ; n++ {
		if n == 20 {
			c.Kill(victim)
		}
		var seq uint64
		var ok bool
		select {
		case seq, ok = <-published:
		case err := <-errc:
			t.Fatalf("publish after losing the connected node: %v", err)
		}
		if !ok {
			break
		}
		acked[seq] = true
	}
	if again, err := b.PublishPins(ctx, batch(0, 200)); err != nil || again[0] != seqs[0] {
		t.Fatalf("republished batch not deduplicated: %v first seq %d want %d", err, again[0], seqs[0])
	}
	events, err := b.Replay(ctx, bus.SessionFilter("cl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range events {
		seen[ev.GetPin().GetPin().GetId()]++
		delete(acked, ev.GetSequence())
	}
	if len(acked) != 0 || len(seen) != 400 {
		t.Fatalf("lost %d acknowledged events; %d distinct pins, want 400", len(acked), len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("pin %s stored %d times", id, n)
		}
	}
}

// BenchmarkClusterPublishPin: acknowledged pin publishes, one at a time,
// through R3 streams of a three-node cluster on loopback.
func BenchmarkClusterPublishPin(b *testing.B) {
	_, bs := clusterBus(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := bs.PublishPin(ctx, benchPin(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkClusterPublishPins: the same with batches of 256 published
// asynchronously, every acknowledgement checked.
func BenchmarkClusterPublishPins(b *testing.B) {
	_, bs := clusterBus(b)
	benchBatches(b, bs)
}

// BenchmarkPublishPins: batched asynchronous publishing on one embedded
// server (file storage), every acknowledgement checked.
func BenchmarkPublishPins(b *testing.B) {
	benchBatches(b, bustest.New(b))
}

func benchBatches(b *testing.B, bs *bus.Bus) {
	ctx := context.Background()
	const size = 256
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += size {
		n := min(size, b.N-i)
		evs := make([]*evidencev1.PinEvent, n)
		for j := range evs {
			evs[j] = benchPin(i + j)
		}
		if _, err := bs.PublishPins(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// TestIsConflictOnReplicatedKV: compare-and-set races on an R3 bucket are
// recognised (a replicated stream reports them with other error codes than
// a single server).
func TestIsConflictOnReplicatedKV(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster")
	}
	_, b := clusterBus(t)
	ctx := t.Context()
	kv, err := b.KV(ctx, "conflict_test")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "k", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "k", []byte("2")); !bus.IsConflict(err) {
		t.Errorf("second create: %v is not a conflict", err)
	}
	if _, err := kv.Update(ctx, "k", []byte("2"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "k", []byte("3"), rev); !bus.IsConflict(err) {
		t.Errorf("stale update: %v is not a conflict", err)
	}
	if bus.IsConflict(nil) || bus.IsConflict(context.Canceled) {
		t.Error("IsConflict of nil or an unrelated error")
	}
}

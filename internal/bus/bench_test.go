package bus_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

func benchPin(i int) *evidencev1.PinEvent {
	ev := pinEvent("bench", fmt.Sprintf("p%d", i), added, 1)
	ev.Pin.RawOutput = "2026-01-01T00:00:00Z ERROR connection refused to upstream after 3 retries (a typical log line)"
	ev.Pin.SupportingEvidence = []string{"line one of evidence", "line two of evidence"}
	return ev
}

// BenchmarkPublishPin measures acknowledged (stored, file-backed) pin
// publishes through the in-process connection.
func BenchmarkPublishPin(b *testing.B) {
	bs := bustest.New(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := bs.PublishPin(ctx, benchPin(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkPublishPinParallel is BenchmarkPublishPin from many goroutines.
func BenchmarkPublishPinParallel(b *testing.B) {
	bs := bustest.New(b)
	ctx := context.Background()
	b.SetParallelism(8)
	start := time.Now()
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bs.PublishPin(ctx, benchPin(int(seq.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkPublishToSubscriber measures the latency from PublishPin to the
// Follow handler, reported as p50 and p99 in microseconds.
func BenchmarkPublishToSubscriber(b *testing.B) {
	bs := bustest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan time.Time, 1)
	go func() {
		_ = bs.Follow(ctx, bus.SessionFilter("bench"), 0, func(context.Context, *evidencev1.SessionEvent) error {
			got <- time.Now()
			return nil
		})
	}()
	// Warm up: wait until the follower is live.
	if _, err := bs.PublishPin(ctx, benchPin(-1)); err != nil {
		b.Fatal(err)
	}
	<-got
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := bs.PublishPin(ctx, benchPin(i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPublishPinSigned is BenchmarkPublishPin with signatures on (as
// every process of the mesh publishes).
func BenchmarkPublishPinSigned(b *testing.B) {
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(b, testKey)
	bs := bustest.NewConfig(b, cfg).As("tools")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := bs.PublishPin(ctx, benchPin(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkReplayVerified replays 1,000 signed events, each verified.
func BenchmarkReplayVerified(b *testing.B) {
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(b, testKey)
	bs := bustest.NewConfig(b, cfg).As("tools")
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		if _, err := bs.PublishPin(ctx, benchPin(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		evs, err := bs.Replay(ctx, bus.SessionFilter("bench"), 0)
		if err != nil || len(evs) != 1000 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}

// BenchmarkPublishPinsSigned is BenchmarkPublishPins with signatures on:
// batches of 256, signed in groups (one signature a group).
func BenchmarkPublishPinsSigned(b *testing.B) {
	cfg := bus.DefaultConfig()
	cfg.Keys = meshIdentity(b, testKey)
	benchBatches(b, bustest.NewConfig(b, cfg).As("tools"))
}

// BenchmarkReplayVerifiedElsewhere replays 1,000 signed events in a
// process that verified none of them yet (another process of the mesh),
// published one at a time (a signature each) or together (PublishPins:
// one signature a group). It reports the reader's time per event.
func BenchmarkReplayVerifiedElsewhere(b *testing.B) {
	for _, together := range []bool{false, true} {
		b.Run(fmt.Sprintf("together=%v", together), func(b *testing.B) {
			ctx := context.Background()
			cfg := bus.DefaultConfig()
			cfg.Keys = meshIdentity(b, testKey)
			_, nc := bustest.Server(b)
			pub, err := bus.ConnectConfig(ctx, nc, nil, cfg)
			if err != nil {
				b.Fatal(err)
			}
			evs := make([]*evidencev1.PinEvent, 1000)
			for i := range evs {
				evs[i] = benchPin(i)
			}
			if together {
				for i := 0; i < len(evs); i += 256 {
					if _, err := pub.As("tools").PublishPins(ctx, evs[i:min(i+256, len(evs))]); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				for _, ev := range evs {
					if _, err := pub.As("tools").PublishPin(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				reader, err := bus.ConnectConfig(ctx, nc, nil, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err := reader.Replay(ctx, bus.SessionFilter("bench"), 0)
				if err != nil || len(got) != len(evs) {
					b.Fatalf("%d events, %v", len(got), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(evs)), "µs/event")
		})
	}
}

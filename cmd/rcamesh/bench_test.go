package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"sort"
	"testing"
	"time"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// BenchmarkFastPathToSubscriber measures a slash command's trip through the
// mesh: router parse and dispatch, tools execution over the fixture, pin
// publication on JetStream, and delivery to a subscriber of the session's
// public event stream (BrainService.StreamEvents). It reports p50 and p99.
// critic=same-process is the default one-process mesh, whose critic judges
// every new pin on the same cores at the same moment; critic=elsewhere runs
// router, tools, brain and delivery without it, as a split deployment does
// (the critic in its own pods).
func BenchmarkFastPathToSubscriber(b *testing.B) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"critic=same-process", nil},
		// The critic address is never called on the fast path.
		{"critic=elsewhere", []string{"-target=router,tools,brain,delivery", "-critic.addr=127.0.0.1:1"}},
	} {
		b.Run(c.name, func(b *testing.B) { benchFastPath(b, c.args) })
	}
}

func benchFastPath(b *testing.B, args []string) {
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	set, err := fixture.New(sc, logger)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := startMesh(ctx, set, filepath.Join(b.TempDir(), "data"), logger, args)
	if err != nil {
		b.Fatal(err)
	}
	defer m.stop()
	router := routerv1.NewRouterServiceClient(m.conn)
	stream, err := brainv1.NewBrainServiceClient(m.conn).StreamEvents(ctx, &brainv1.StreamEventsRequest{SessionId: "bench", PinsOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	added := make(chan string, 1024)
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if pe := ev.GetEvent().GetPin(); pe.GetKind() == evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED {
				added <- pe.GetPin().GetId()
			}
		}
	}()
	req := &routerv1.InvestigateRequest{SessionId: "bench", Input: &routerv1.InvestigateRequest_Command{Command: "/status namespace=retail"}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := router.Investigate(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		for id := range added {
			if id == resp.GetPinId() {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

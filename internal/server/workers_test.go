package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rcamesh/rcamesh/internal/server"
)

// TestStreamWorkersNeverHoldACall: a server's handlers run on its stream
// workers (server.StreamWorkers), and a call that finds them all busy runs
// on a goroutine of its own: with fewer, as many and more open streams
// than workers (each holding its handler, a health Watch), every stream
// gets its first message and a unary call is still answered.
func TestStreamWorkersNeverHoldACall(t *testing.T) {
	for _, streams := range []int{1, server.StreamWorkers, 2*server.StreamWorkers + 3} {
		gs := server.NewGRPCServer(nil, server.WithHealth(health.NewServer()))
		ip := server.NewInProcess()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		go func() { _ = ip.Serve(ctx, gs) }()
		cc, err := server.NewClientConn(server.InProcessTarget, ip.DialOption())
		if err != nil {
			t.Fatal(err)
		}
		hc := healthpb.NewHealthClient(cc)
		for i := range streams {
			w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatalf("%d streams: watch %d: %v", streams, i, err)
			}
			if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("%d streams: stream %d got %v, %v", streams, i, r, err)
			}
		}
		if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("%d streams open: a unary call got %v, %v", streams, r, err)
		}
		cc.Close()
		gs.Stop()
		cancel()
	}
}

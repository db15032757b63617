package server_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rcamesh/rcamesh/internal/server"
)

// TestClientConnBalancesOverReplicas: a comma list of replicas (and, the
// same way, the addresses a dns:/// name resolves to) gets calls round-robin.
func TestClientConnBalancesOverReplicas(t *testing.T) {
	var counts [3]atomic.Int64
	addrs := ""
	for i := range counts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			counts[i].Add(1)
			return h(ctx, req)
		}))
		healthpb.RegisterHealthServer(gs, health.NewServer())
		go func() { _ = gs.Serve(l) }()
		t.Cleanup(gs.Stop)
		if addrs != "" {
			addrs += ","
		}
		addrs += l.Addr().String()
	}
	cc, err := server.NewClientConn(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	call := func() {
		if _, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
	}
	// Until every replica is connected, calls go to the ready ones.
	deadline := time.Now().Add(10 * time.Second)
	for counts[0].Load() == 0 || counts[1].Load() == 0 || counts[2].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not every replica was called: %d %d %d", counts[0].Load(), counts[1].Load(), counts[2].Load())
		}
		call()
	}
	for i := range counts {
		counts[i].Store(0)
	}
	for range 30 {
		call()
	}
	for i := range counts {
		if n := counts[i].Load(); n != 10 {
			t.Errorf("replica %d got %d of 30 calls, want 10 (round-robin)", i, n)
		}
	}
}

package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rcamesh/rcamesh/internal/server"
)

// TestInProcess: a client connection through the in-process listener
// reaches the server's services through its interceptors; Serve ends
// without an error when the server stops gracefully, or when its context
// ends (then nothing new connects).
func TestInProcess(t *testing.T) {
	for _, stop := range []string{"graceful stop", "context"} {
		t.Run(stop, func(t *testing.T) {
			intercepted := 0
			gs := server.NewGRPCServer(nil, server.WithHealth(health.NewServer()), server.WithAuth(
				func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
					intercepted++
					return h(ctx, req)
				}, nil))
			ip := server.NewInProcess()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- ip.Serve(ctx, gs) }()
			cc, err := server.NewClientConn(server.InProcessTarget, ip.DialOption())
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			cctx, ccancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer ccancel()
			r, err := healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{})
			if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING || intercepted != 1 {
				t.Fatalf("health through the in-process listener: %v, %v, intercepted %d", r, err, intercepted)
			}
			if stop == "context" {
				cancel()
			} else {
				gs.GracefulStop()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve ended with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not end")
			}
			gs.Stop()
			cc2, err := server.NewClientConn(server.InProcessTarget, ip.DialOption())
			if err != nil {
				t.Fatal(err)
			}
			defer cc2.Close()
			sctx, scancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer scancel()
			if _, err := healthpb.NewHealthClient(cc2).Check(sctx, &healthpb.HealthCheckRequest{}); err == nil {
				t.Error("a new connection was served after Serve ended")
			}
		})
	}
}

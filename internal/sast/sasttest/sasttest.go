// Package sasttest runs the critic service for the tests of SAST triage:
// its gRPC API over an in-memory connection (bufconn), so that the triage
// loop reaches the evaluator through gRPC as it does in the mesh.
package sasttest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	"github.com/rcamesh/rcamesh/services/critic"
)

// Critic serves a critic whose evaluator re-reads code under codeRoot and
// returns a client of it; mutate, when set, edits the critic's config.
func Critic(t testing.TB, codeRoot string, mutate func(*critic.Config)) criticv1.CriticServiceClient {
	t.Helper()
	cfg := critic.DefaultConfig()
	cfg.CodeRoot = codeRoot
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := critic.New(cfg, critic.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	svc.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return criticv1.NewCriticServiceClient(cc)
}

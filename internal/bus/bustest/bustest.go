// Package bustest starts an embedded NATS server with JetStream for tests.
package bustest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/rcamesh/rcamesh/internal/bus"
)

// New returns a Bus with default settings on a fresh embedded server (random
// port, store in t.TempDir()); everything is shut down in t.Cleanup.
func New(t testing.TB) *bus.Bus {
	t.Helper()
	return NewConfig(t, bus.DefaultConfig())
}

// NewConfig is New with explicit bus settings.
func NewConfig(t testing.TB, cfg bus.Config) *bus.Bus {
	t.Helper()
	_, nc := Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.ConnectConfig(ctx, nc, slog.New(slog.DiscardHandler), cfg)
	if err != nil {
		t.Fatalf("bustest: connect bus: %v", err)
	}
	return b
}

// Server starts an embedded NATS server with JetStream listening on a random
// 127.0.0.1 port (srv.ClientURL() for other connections) and returns it with
// an in-process connection. Both are closed in t.Cleanup.
func Server(t testing.TB) (*server.Server, *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, nc, err := bus.StartEmbeddedConfig(ctx, bus.EmbeddedConfig{
		StoreDir: t.TempDir(),
		Listen:   "127.0.0.1:0",
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("bustest: start embedded NATS: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv, nc
}

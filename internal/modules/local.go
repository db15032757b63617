package modules

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/server"
)

// Local is every service running in this process (all-in-one, embedded
// NATS) on loopback ports, driven through its gRPC API like any client. The
// CLI's one-shot investigations, the evaluation and the lab tests use it.
type Local struct {
	// Conn is a client connection to the process's gRPC server, with the
	// mesh's service identity (role service).
	Conn *grpc.ClientConn
	// ServiceToken is the bearer token of the service identity.
	ServiceToken       string
	GRPCAddr, HTTPAddr string

	cancel context.CancelFunc
	done   chan error
}

// StartLocal registers the services with opt, parses args as `serve` flags,
// lets mutate have the last word on the process config, starts everything on
// 127.0.0.1 ports with its data under dataDir, and returns once every service
// reports SERVING.
func StartLocal(ctx context.Context, opt Options, dataDir string, logger *slog.Logger, args []string, mutate func(*app.Config)) (*Local, error) {
	reg := app.NewRegistry()
	if err := Register(reg, opt); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := app.DefaultConfig()
	cfg.RegisterFlags(fs)
	reg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	cfg.DataDir = dataDir
	if mutate != nil {
		mutate(&cfg)
	}
	id, err := cfg.Identity()
	if err != nil {
		return nil, err
	}
	dial := []grpc.DialOption{grpc.WithPerRPCCredentials(auth.TokenCredentials(id.ServiceToken(), cfg.Auth.TLS.Enabled()))}
	if cfg.Auth.TLS.Enabled() {
		rl, err := auth.NewReloader(cfg.Auth.TLS)
		if err != nil {
			return nil, err
		}
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(rl.SelfConfig())))
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gl.Close()
		return nil, err
	}
	cfg.GRPCListener, cfg.HTTPListener = gl, hl
	a, err := app.New(cfg, reg, fs, logger)
	if err != nil {
		gl.Close()
		hl.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	l := &Local{GRPCAddr: gl.Addr().String(), HTTPAddr: hl.Addr().String(), ServiceToken: id.ServiceToken(), cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- a.Run(runCtx) }()
	if l.Conn, err = server.NewClientConn(l.GRPCAddr, dial...); err != nil {
		l.Stop()
		return nil, err
	}
	hc := healthpb.NewHealthClient(l.Conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return l, nil
		}
		select {
		case runErr := <-l.done:
			l.done <- runErr
			l.Stop()
			return nil, fmt.Errorf("services stopped before they were ready: %w", runErr)
		default:
		}
		if time.Now().After(deadline) {
			l.Stop()
			return nil, fmt.Errorf("services not ready after 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the services down gracefully and returns how Run ended (nil
// for a clean stop).
func (l *Local) Stop() error {
	if l.Conn != nil {
		l.Conn.Close()
	}
	l.cancel()
	err := <-l.done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

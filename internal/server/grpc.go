// Package server is rcamesh's serving stack: one gRPC server (health,
// reflection, OpenTelemetry, recovery and logging interceptors) and one HTTP
// gateway (grpc-gateway REST with protojson, /healthz, /readyz,
// /openapi.json, and a hook for static files). Callers own the listeners;
// cancelling the context stops gracefully.
package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// Config holds the listener addresses and limits of one process.
type Config struct {
	GRPCAddr     string
	HTTPAddr     string
	MaxBodyBytes int64
	DrainTimeout time.Duration
}

// DefaultConfig listens on loopback only.
func DefaultConfig() Config {
	return Config{
		GRPCAddr:     "127.0.0.1:9090",
		HTTPAddr:     "127.0.0.1:8080",
		MaxBodyBytes: 4 << 20,
		DrainTimeout: 15 * time.Second,
	}
}

// RegisterFlags registers -grpc.addr, -http.addr, -http.max-body-bytes and -server.drain-timeout.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.GRPCAddr, "grpc.addr", c.GRPCAddr, "gRPC listen address")
	fs.StringVar(&c.HTTPAddr, "http.addr", c.HTTPAddr, "HTTP (REST gateway, health, OpenAPI) listen address")
	fs.Int64Var(&c.MaxBodyBytes, "http.max-body-bytes", c.MaxBodyBytes, "largest accepted HTTP request body; larger ones get 413")
	fs.DurationVar(&c.DrainTimeout, "server.drain-timeout", c.DrainTimeout, "how long in-flight requests may finish on shutdown before they are cut")
}

// Validate names the first bad field.
func (c Config) Validate() error {
	for name, addr := range map[string]string{"GRPCAddr (-grpc.addr)": c.GRPCAddr, "HTTPAddr (-http.addr)": c.HTTPAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("server: %s %q is not host:port: %w", name, addr, err)
		}
	}
	if c.MaxBodyBytes < 1 {
		return fmt.Errorf("server: MaxBodyBytes (-http.max-body-bytes) must be positive, got %d", c.MaxBodyBytes)
	}
	if c.DrainTimeout <= 0 {
		return fmt.Errorf("server: DrainTimeout (-server.drain-timeout) must be positive, got %s", c.DrainTimeout)
	}
	return nil
}

// Option configures NewGRPCServer.
type Option func(*grpcOptions)

type grpcOptions struct {
	authUnary  grpc.UnaryServerInterceptor
	authStream grpc.StreamServerInterceptor
	health     *health.Server
	serverOpts []grpc.ServerOption
	otelOpts   []otelgrpc.Option
}

// WithHealth registers h as the health service (so the caller can set
// per-service status); without it a fresh one is registered.
func WithHealth(h *health.Server) Option { return func(o *grpcOptions) { o.health = h } }

// WithAuth runs the authentication interceptors right after logging,
// before any request field is checked or any handler runs (internal/auth).
func WithAuth(unary grpc.UnaryServerInterceptor, stream grpc.StreamServerInterceptor) Option {
	return func(o *grpcOptions) { o.authUnary, o.authStream = unary, stream }
}

// WithServerOptions appends raw gRPC server options.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return func(o *grpcOptions) { o.serverOpts = append(o.serverOpts, opts...) }
}

// WithOTel passes options (e.g. a TracerProvider) to the otelgrpc stats handler.
func WithOTel(opts ...otelgrpc.Option) Option {
	return func(o *grpcOptions) { o.otelOpts = append(o.otelOpts, opts...) }
}

// StreamWorkers is the number of goroutines a server keeps to run its
// calls' handlers (grpc.NumStreamWorkers).
const StreamWorkers = 16

// NewGRPCServer returns a gRPC server with the rcamesh stack: otelgrpc stats
// handler, panic recovery, request logging and id validation (CheckIDs)
// interceptors, the health
// service and server reflection (v1 and v1alpha). Register services on it,
// then serve with ServeGRPC.
func NewGRPCServer(logger *slog.Logger, opts ...Option) *grpc.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "grpc")
	var o grpcOptions
	for _, opt := range opts {
		opt(&o)
	}
	unary := []grpc.UnaryServerInterceptor{unaryLogging(logger)}
	stream := []grpc.StreamServerInterceptor{streamLogging(logger)}
	if o.authUnary != nil {
		unary = append(unary, o.authUnary)
	}
	if o.authStream != nil {
		stream = append(stream, o.authStream)
	}
	sopts := []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(o.otelOpts...)),
		// Recovery is innermost so the logging interceptor sees the Internal
		// status; callers are authenticated (WithAuth), then ids are checked,
		// before any handler runs (CheckIDs).
		grpc.ChainUnaryInterceptor(append(unary, unaryIDs(), unaryRecovery(logger))...),
		grpc.ChainStreamInterceptor(append(stream, streamIDs(), streamRecovery(logger))...),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// Each call's handler runs on one of these long-lived goroutines
		// (a new goroutine only when all are busy) instead of a new one per
		// call, whose stack the runtime grew by copying it, two to four
		// times a call (half of runtime.newstack's 3.5% of the CPU of a
		// slash command's fast path). A long-lived stream holds its worker.
		grpc.NumStreamWorkers(StreamWorkers),
	}
	gs := grpc.NewServer(append(sopts, o.serverOpts...)...)
	h := o.health
	if h == nil {
		h = health.NewServer()
	}
	healthpb.RegisterHealthServer(gs, h)
	reflection.Register(gs) // v1 and v1alpha
	return gs
}

// SetServingStatus sets the health status of every service registered on gs
// (except health and reflection themselves) and of the whole server ("").
func SetServingStatus(h *health.Server, gs *grpc.Server, st healthpb.HealthCheckResponse_ServingStatus) {
	for name := range gs.GetServiceInfo() {
		if name == healthpb.Health_ServiceDesc.ServiceName || strings.HasPrefix(name, "grpc.reflection.") {
			continue
		}
		h.SetServingStatus(name, st)
	}
	h.SetServingStatus("", st)
}

// ServeGRPC serves gs on lis until ctx is cancelled, then stops gracefully:
// in-flight RPCs get drain to finish, after which they are cut. It returns
// nil after a shutdown caused by ctx.
func ServeGRPC(ctx context.Context, gs *grpc.Server, lis net.Listener, drain time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(lis) }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("server: gRPC serve on %s: %w", lis.Addr(), err)
		}
		return nil
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		gs.Stop()
		<-stopped
	}
	<-errc
	return nil
}

// RoundRobinServiceConfig is the default service config of every client
// connection: round_robin over the addresses the target resolves to.
const RoundRobinServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// NewClientConn returns a gRPC client connection to target with the otelgrpc
// client stats handler, without TLS (the mesh runs inside one trust
// boundary; put TLS in front with a service mesh or pass credentials in opts).
//
// target is host:port, any gRPC target (dns:///name:port re-resolves a
// headless Service's replicas), or a comma list of host:port: a fixed set of
// replicas, balanced round-robin.
func NewClientConn(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if !strings.Contains(target, "://") && strings.Contains(target, ",") {
		r := manual.NewBuilderWithScheme("rcamesh-static")
		var st resolver.State
		for _, a := range strings.Split(target, ",") {
			st.Addresses = append(st.Addresses, resolver.Address{Addr: strings.TrimSpace(a)})
		}
		r.InitialState(st)
		opts = append(opts, grpc.WithResolvers(r))
		target = r.Scheme() + ":///replicas"
	}
	all := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		// Client-side load balancing: a "dns:///svc-headless:9090" target
		// resolves to every replica behind a headless Service and calls go
		// round-robin over them (re-resolved when a connection drops).
		grpc.WithDefaultServiceConfig(RoundRobinServiceConfig),
	}, opts...)
	cc, err := grpc.NewClient(target, all...)
	if err != nil {
		return nil, fmt.Errorf("server: gRPC client for %q: %w", target, err)
	}
	return cc, nil
}

func panicError(logger *slog.Logger, ctx context.Context, method string, p any) error {
	logger.ErrorContext(ctx, "panic in gRPC handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "internal error in %s", method)
}

func unaryRecovery(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = panicError(logger, ctx, info.FullMethod, p)
			}
		}()
		return handler(ctx, req)
	}
}

func streamRecovery(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = panicError(logger, ss.Context(), info.FullMethod, p)
			}
		}()
		return handler(srv, ss)
	}
}

func quiet(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.") || strings.HasPrefix(method, "/grpc.reflection.")
}

func logRPC(ctx context.Context, logger *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	level := slog.LevelDebug
	switch code {
	case codes.OK, codes.Canceled, codes.NotFound, codes.InvalidArgument, codes.AlreadyExists, codes.FailedPrecondition:
		if code != codes.OK {
			level = slog.LevelInfo
		}
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented:
		level = slog.LevelError
	default:
		level = slog.LevelWarn
	}
	if quiet(method) && level < slog.LevelWarn {
		return
	}
	attrs := []any{"method", method, "code", code.String(), "duration", time.Since(start)}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		attrs = append(attrs, "trace_id", sc.TraceID().String())
	}
	if err != nil {
		attrs = append(attrs, "err", status.Convert(err).Message())
	}
	logger.Log(ctx, level, "rpc", attrs...)
}

func unaryLogging(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logRPC(ctx, logger, info.FullMethod, start, err)
		return resp, err
	}
}

func streamLogging(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		logRPC(ss.Context(), logger, info.FullMethod, start, err)
		return err
	}
}

// InProcessTarget is the target of a client connection to this process's
// own gRPC server through InProcess.
const InProcessTarget = "passthrough:///in-process"

// inProcessBuffer bounds what one side of an in-process connection holds
// unread (HTTP/2 flow control keeps it far below).
const inProcessBuffer = 1 << 20

// InProcess is an in-memory listener of a gRPC server, for the services
// of one process calling each other: a message is handed from the writing
// goroutine to the reading one without a system call or a wake-up by the
// network poller (on two loaded cores, a loopback hop's wake-up could
// wait for a thread while the garbage collector's workers held both
// processors). Everything above the connection is the server's: HTTP/2,
// credentials, TLS, interceptors.
type InProcess struct{ lis *bufconn.Listener }

// NewInProcess returns an in-memory listener; Serve it, dial it with
// DialOption.
func NewInProcess() *InProcess { return &InProcess{lis: bufconn.Listen(inProcessBuffer)} }

// DialOption makes a client connection (target InProcessTarget) connect
// through the listener.
func (p *InProcess) DialOption() grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return p.lis.DialContext(ctx) })
}

// Serve serves gs on the listener until gs stops (GracefulStop or Stop
// close the listener) or ctx ends (connections already made stay until gs
// stops them).
func (p *InProcess) Serve(ctx context.Context, gs *grpc.Server) error {
	stop := context.AfterFunc(ctx, func() { _ = p.lis.Close() })
	defer stop()
	if err := gs.Serve(p.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) && ctx.Err() == nil {
		return fmt.Errorf("server: gRPC serve in process: %w", err)
	}
	return nil
}

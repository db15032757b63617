package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/rcamesh/rcamesh/api/openapi"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/server"
	"github.com/rcamesh/rcamesh/internal/telemetry"
)

type fakeRouter struct {
	routerv1.UnimplementedRouterServiceServer
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	traceID trace.TraceID
}

func (f *fakeRouter) ListTools(ctx context.Context, req *routerv1.ListToolsRequest) (*routerv1.ListToolsResponse, error) {
	f.mu.Lock()
	f.traceID = trace.SpanContextFromContext(ctx).TraceID()
	f.mu.Unlock()
	return &routerv1.ListToolsResponse{Tools: []*evidencev1.ToolDefinition{
		{Intent: "fetch_pod_logs", SlashCommand: "/logs", Label: "logs for " + req.GetSessionId()},
	}}, nil
}

func (f *fakeRouter) Investigate(ctx context.Context, req *routerv1.InvestigateRequest) (*routerv1.InvestigateResponse, error) {
	switch req.GetCommand() {
	case "panic":
		panic("handler bug")
	case "slow":
		close(f.started)
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &routerv1.InvestigateResponse{PinId: "pin-1", Intent: req.GetCommand()}, nil
}

type stack struct {
	grpcAddr string
	httpURL  string
	gs       *grpc.Server
	gw       *server.Gateway
	health   *health.Server
	router   *fakeRouter
	cancel   context.CancelFunc
	grpcDone chan error
	httpDone chan error
	conn     *grpc.ClientConn
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

func startStack(t *testing.T, drain time.Duration, maxBody int64) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stack{
		health:   health.NewServer(),
		router:   &fakeRouter{started: make(chan struct{}), release: make(chan struct{})},
		cancel:   cancel,
		grpcDone: make(chan error, 1),
		httpDone: make(chan error, 1),
	}
	s.gs = server.NewGRPCServer(nil, server.WithHealth(s.health))
	routerv1.RegisterRouterServiceServer(s.gs, s.router)
	gl, hl := listen(t), listen(t)
	s.grpcAddr, s.httpURL = gl.Addr().String(), "http://"+hl.Addr().String()
	conn, err := server.NewClientConn(s.grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	s.conn = conn
	s.gw = server.NewGateway(nil, server.GatewayConfig{MaxBodyBytes: maxBody, DrainTimeout: drain})
	if err := s.gw.Register(ctx, conn, routerv1.RegisterRouterServiceHandler); err != nil {
		t.Fatal(err)
	}
	go func() { s.grpcDone <- server.ServeGRPC(ctx, s.gs, gl, drain) }()
	go func() { s.httpDone <- s.gw.Serve(ctx, hl) }()
	t.Cleanup(func() {
		cancel()
		<-s.grpcDone
		<-s.httpDone
		conn.Close()
	})
	return s
}

func TestGRPCStack(t *testing.T) {
	s := startStack(t, 5*time.Second, 0)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the stack's cleanup: ends the reflection streams

	// Health: overall and per service.
	hc := healthpb.NewHealthClient(s.conn)
	server.SetServingStatus(s.health, s.gs, healthpb.HealthCheckResponse_NOT_SERVING)
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "rcamesh.router.v1.RouterService"}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("router health = %v, %v; want NOT_SERVING", r, err)
	}
	server.SetServingStatus(s.health, s.gs, healthpb.HealthCheckResponse_SERVING)
	for _, svc := range []string{"", "rcamesh.router.v1.RouterService"} {
		if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health(%q) = %v, %v; want SERVING", svc, r, err)
		}
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "grpc.reflection.v1.ServerReflection"}); status.Code(err) != codes.NotFound {
		t.Errorf("reflection got a health status: %v", err)
	}

	// Reflection v1 and v1alpha list the services (grpcurl works without protos).
	stream, err := reflectionv1.NewServerReflectionClient(s.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "rcamesh.router.v1.RouterService") || !strings.Contains(got, "grpc.health.v1.Health") {
		t.Errorf("reflection v1 lists %s", got)
	}
	alpha, err := reflectionv1alpha.NewServerReflectionClient(s.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := alpha.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if r, err := alpha.Recv(); err != nil || len(r.GetListServicesResponse().GetService()) == 0 {
		t.Errorf("reflection v1alpha = %v, %v", r, err)
	}

	// A panicking handler becomes Internal and the server keeps serving.
	rc := routerv1.NewRouterServiceClient(s.conn)
	if _, err := rc.Investigate(ctx, &routerv1.InvestigateRequest{SessionId: "s", Input: &routerv1.InvestigateRequest_Command{Command: "panic"}}); status.Code(err) != codes.Internal {
		t.Errorf("panic gave %v, want Internal", err)
	}
	if _, err := rc.ListTools(ctx, &routerv1.ListToolsRequest{SessionId: "s"}); err != nil {
		t.Errorf("server broken after panic: %v", err)
	}
}

func httpGet(t *testing.T, url string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func TestGatewayRoutes(t *testing.T) {
	s := startStack(t, 5*time.Second, 1024)
	s.gw.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "web ui") }))
	var natsUp atomic.Bool
	s.gw.AddReadyCheck("nats", func(context.Context) error {
		if !natsUp.Load() {
			return fmt.Errorf("NATS not connected")
		}
		return nil
	})

	tests := []struct {
		name     string
		path     string
		wantCode int
		contains []string
		lacks    []string
	}{
		{"REST with proto names, unpopulated omitted", "/api/v4/session/s1/tools", 200,
			[]string{`"slash_command":"/logs"`, `"label":"logs for s1"`}, []string{"slashCommand", `"available"`}},
		{"healthz", "/healthz", 200, []string{`"ok"`}, nil},
		{"readyz not ready names the check", "/readyz", 503, []string{"nats", "NATS not connected"}, nil},
		{"static hook", "/index.html", 200, []string{"web ui"}, nil},
		{"unknown API path is not the UI", "/api/v4/nothing", 404, nil, []string{"web ui"}},
	}
	for _, tt := range tests {
		code, _, body := httpGet(t, s.httpURL+tt.path, nil)
		if code != tt.wantCode {
			t.Errorf("%s: GET %s = %d %s, want %d", tt.name, tt.path, code, body, tt.wantCode)
		}
		for _, c := range tt.contains {
			if !bytes.Contains(body, []byte(c)) {
				t.Errorf("%s: body %s lacks %s", tt.name, body, c)
			}
		}
		for _, c := range tt.lacks {
			if bytes.Contains(body, []byte(c)) {
				t.Errorf("%s: body %s has %s", tt.name, body, c)
			}
		}
	}
	natsUp.Store(true)
	if code, _, body := httpGet(t, s.httpURL+"/readyz", nil); code != 200 {
		t.Errorf("readyz after ready = %d %s", code, body)
	}
	code, hdr, body := httpGet(t, s.httpURL+"/openapi.json", nil)
	if code != 200 || !bytes.Equal(body, openapi.Spec) || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("openapi.json = %d %s, %d bytes", code, hdr.Get("Content-Type"), len(body))
	}
}

func post(t *testing.T, url string, body io.Reader, contentLength int64) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/json")
	if contentLength >= 0 {
		req.ContentLength = contentLength
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestGatewayBodyLimitAndErrors(t *testing.T) {
	s := startStack(t, 5*time.Second, 64)
	url := s.httpURL + "/api/v4/session/s1/investigate"
	big := `{"command":"` + strings.Repeat("x", 100) + `"}`
	tests := []struct {
		name     string
		body     io.Reader
		length   int64
		wantCode int
		contains string
	}{
		{"fits", strings.NewReader(`{"command":"/logs"}`), -1, 200, `"pin_id":"pin-1"`},
		{"too large with length", strings.NewReader(big), -1, 413, "limit is 64 bytes"},
		{"too large chunked", io.MultiReader(strings.NewReader(big)), 0, 413, "limit is 64 bytes"},
		{"unknown field named", strings.NewReader(`{"comand":"x"}`), -1, 400, "comand"},
	}
	for _, tt := range tests {
		code, body := post(t, url, tt.body, tt.length)
		if code != tt.wantCode || !strings.Contains(string(body), tt.contains) {
			t.Errorf("%s: POST = %d %s, want %d with %q", tt.name, code, body, tt.wantCode, tt.contains)
		}
		if code == 413 {
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Code != int(codes.ResourceExhausted) {
				t.Errorf("%s: 413 body is not a JSON status: %s", tt.name, body)
			}
		}
	}
}

func TestTraceContextFromHTTPReachesGRPC(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := startStack(t, 5*time.Second, 0)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	code, _, body := httpGet(t, s.httpURL+"/api/v4/session/s1/tools",
		map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
	if code != 200 {
		t.Fatalf("GET = %d %s", code, body)
	}
	s.router.mu.Lock()
	defer s.router.mu.Unlock()
	if s.router.traceID.String() != traceID {
		t.Errorf("gRPC handler saw trace %s, want the caller's %s", s.router.traceID, traceID)
	}
}

func TestGracefulStopFinishesInFlightRPC(t *testing.T) {
	s := startStack(t, 10*time.Second, 0)
	rc := routerv1.NewRouterServiceClient(s.conn)
	errc := make(chan error, 1)
	go func() {
		r, err := rc.Investigate(context.Background(), &routerv1.InvestigateRequest{SessionId: "s", Input: &routerv1.InvestigateRequest_Command{Command: "slow"}})
		if err == nil && r.GetPinId() != "pin-1" {
			err = fmt.Errorf("unexpected response %v", r)
		}
		errc <- err
	}()
	<-s.router.started
	s.cancel() // shutdown begins while the RPC is in flight
	select {
	case err := <-s.grpcDone:
		t.Fatalf("gRPC server stopped (%v) before the in-flight RPC finished", err)
	case err := <-errc:
		t.Fatalf("in-flight RPC ended (%v) before it was released", err)
	default:
	}
	close(s.router.release)
	if err := <-errc; err != nil {
		t.Fatalf("in-flight RPC failed during graceful stop: %v", err)
	}
	if err := <-s.grpcDone; err != nil {
		t.Fatal(err)
	}
	s.grpcDone <- nil // for Cleanup
}

func TestDrainTimeoutCutsStuckRPC(t *testing.T) {
	s := startStack(t, 50*time.Millisecond, 0)
	rc := routerv1.NewRouterServiceClient(s.conn)
	errc := make(chan error, 1)
	go func() {
		_, err := rc.Investigate(context.Background(), &routerv1.InvestigateRequest{SessionId: "s", Input: &routerv1.InvestigateRequest_Command{Command: "slow"}})
		errc <- err
	}()
	<-s.router.started
	s.cancel()
	if err := <-s.grpcDone; err != nil {
		t.Fatal(err)
	}
	s.grpcDone <- nil
	if err := <-errc; err == nil {
		t.Error("stuck RPC succeeded; want it cut after the drain timeout")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*server.Config)
		want string
	}{
		{"defaults", func(*server.Config) {}, ""},
		{"bad grpc addr", func(c *server.Config) { c.GRPCAddr = "9090" }, "-grpc.addr"},
		{"bad http addr", func(c *server.Config) { c.HTTPAddr = "" }, "-http.addr"},
		{"body", func(c *server.Config) { c.MaxBodyBytes = 0 }, "-http.max-body-bytes"},
		{"drain", func(c *server.Config) { c.DrainTimeout = 0 }, "-server.drain-timeout"},
	}
	for _, tt := range tests {
		c := server.DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestRegisterErrors(t *testing.T) {
	gw := server.NewGateway(nil, server.GatewayConfig{})
	if err := gw.Register(context.Background(), nil); err == nil {
		t.Error("Register without a conn succeeded")
	}
	conn, err := server.NewClientConn("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := gw.Register(context.Background(), conn, nil); err == nil {
		t.Error("Register with a nil handler succeeded")
	}
	boom := func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error { return fmt.Errorf("boom") }
	if err := gw.Register(context.Background(), conn, routerv1.RegisterRouterServiceHandler, boom); err == nil || !strings.Contains(err.Error(), "handler 1: boom") {
		t.Errorf("Register = %v, want the failing handler named", err)
	}
}

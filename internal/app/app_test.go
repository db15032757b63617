package app_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/server"
)

// fakeTools serves ToolsService; ExecuteTool with intent "slow" blocks until
// released, then publishes a pin and returns it.
type fakeTools struct {
	toolsv1.UnimplementedToolsServiceServer
	env     app.Env
	started chan struct{}
	release chan struct{}
}

func (f *fakeTools) Register(gs *grpc.Server) { toolsv1.RegisterToolsServiceServer(gs, f) }
func (f *fakeTools) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}
func (f *fakeTools) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (f *fakeTools) ListToolDefinitions(context.Context, *toolsv1.ListToolDefinitionsRequest) (*toolsv1.ListToolDefinitionsResponse, error) {
	return &toolsv1.ListToolDefinitionsResponse{Tools: []*evidencev1.ToolDefinition{{Intent: "fetch_pod_logs", SlashCommand: "/logs"}}}, nil
}

func (f *fakeTools) ExecuteTool(ctx context.Context, req *toolsv1.ExecuteToolRequest) (*toolsv1.ExecuteToolResponse, error) {
	if req.GetIntent() == "slow" {
		close(f.started)
		<-f.release
	}
	pin := &evidencev1.EvidencePin{Id: req.GetPinId(), SessionId: req.GetSessionId(), Version: 1}
	if _, err := f.env.Bus.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: pin}); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &toolsv1.ExecuteToolResponse{Pin: pin}, nil
}

// fakeRouter answers ListTools by calling the tools service through mesh.Clients.
type fakeRouter struct {
	routerv1.UnimplementedRouterServiceServer
	env app.Env
}

func (f *fakeRouter) Register(gs *grpc.Server) { routerv1.RegisterRouterServiceServer(gs, f) }
func (f *fakeRouter) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	return routerv1.RegisterRouterServiceHandler(ctx, mux, conn)
}
func (f *fakeRouter) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (f *fakeRouter) ListTools(ctx context.Context, _ *routerv1.ListToolsRequest) (*routerv1.ListToolsResponse, error) {
	r, err := f.env.Clients.Tools.ListToolDefinitions(ctx, &toolsv1.ListToolDefinitionsRequest{})
	if err != nil {
		return nil, err
	}
	return &routerv1.ListToolsResponse{Tools: r.GetTools()}, nil
}

type fixture struct {
	mu        sync.Mutex
	tools     *fakeTools
	routerEnv app.Env
}

func (fx *fixture) registry(t *testing.T) *app.Registry {
	t.Helper()
	reg := app.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Register(mesh.Tools, func(_ context.Context, env app.Env) (app.Module, error) {
		fx.mu.Lock()
		defer fx.mu.Unlock()
		fx.tools = &fakeTools{env: env, started: make(chan struct{}), release: make(chan struct{})}
		return fx.tools, nil
	}, app.OwnNATSConnection()))
	must(reg.Register(mesh.Router, func(_ context.Context, env app.Env) (app.Module, error) {
		fx.mu.Lock()
		defer fx.mu.Unlock()
		fx.routerEnv = env
		return &fakeRouter{env: env}, nil
	}, app.Needs(mesh.Tools)))
	return reg
}

type running struct {
	grpcAddr string
	httpURL  string
	cancel   context.CancelFunc
	done     chan error
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// meshKeyFile writes a mesh key shared by the processes of one test.
func meshKeyFile(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mesh.key")
	if _, _, err := auth.EnsureMeshKey(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// startApp runs an App with flags args and waits until /readyz says ready.
func startApp(t *testing.T, reg *app.Registry, args ...string) *running {
	t.Helper()
	return startAppWith(t, reg, http.DefaultClient, "http", args...)
}

// startAppWith is startApp probing /readyz with client over scheme.
func startAppWith(t *testing.T, reg *app.Registry, client *http.Client, scheme string, args ...string) *running {
	t.Helper()
	cfg := app.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	reg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg.GRPCListener, cfg.HTTPListener = listen(t), listen(t)
	r := &running{grpcAddr: cfg.GRPCListener.Addr().String(), httpURL: scheme + "://" + cfg.HTTPListener.Addr().String(), done: make(chan error, 1)}
	a, err := app.New(cfg, reg, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("app did not stop")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-r.done:
			t.Fatalf("app stopped while starting: %v", err)
		default:
		}
		resp, err := client.Get(r.httpURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("app never became ready: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func getTools(t *testing.T, r *running) string {
	t.Helper()
	resp, err := http.Get(r.httpURL + "/api/v4/session/s1/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET tools = %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func healthOf(t *testing.T, addr, svc string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	cc, err := server.NewClientConn(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	r, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		t.Fatalf("health %s: %v", svc, err)
	}
	return r.GetStatus()
}

func TestAllModeServesThroughTheMeshAndDrainsOnShutdown(t *testing.T) {
	dataDir := t.TempDir()
	fx := &fixture{}
	r := startApp(t, fx.registry(t), "-target=all", "-data.dir="+dataDir)

	// HTTP -> gateway -> router (gRPC) -> tools (gRPC through mesh.Clients).
	if body := getTools(t, r); !strings.Contains(body, `"slash_command":"/logs"`) {
		t.Errorf("tools over REST = %s", body)
	}
	for _, svc := range []string{"", "rcamesh.router.v1.RouterService", "rcamesh.tools.v1.ToolsService"} {
		if st := healthOf(t, r.grpcAddr, svc); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health(%q) = %v", svc, st)
		}
	}

	// A module registered OwnNATSConnection publishes through an
	// in-process connection of its own, the others through the process's.
	fx.mu.Lock()
	if c := fx.tools.env.Bus.Conn(); c.Opts.Name != "rcamesh-tools-inprocess" || !c.IsConnected() {
		t.Errorf("the tools module's NATS connection is %q (connected %v), want its own", c.Opts.Name, c.IsConnected())
	}
	if c := fx.routerEnv.Bus.Conn(); c == fx.tools.env.Bus.Conn() || strings.HasPrefix(c.Opts.Name, "rcamesh-router") || !c.IsConnected() {
		t.Errorf("the router module's NATS connection is %q (connected %v), want the process's", c.Opts.Name, c.IsConnected())
	}
	fx.mu.Unlock()

	// An RPC in flight when shutdown starts finishes, and its pin is stored.
	cc, err := server.NewClientConn(r.grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rpcErr := make(chan error, 1)
	go func() {
		_, err := toolsv1.NewToolsServiceClient(cc).ExecuteTool(context.Background(),
			&toolsv1.ExecuteToolRequest{SessionId: "drain", Intent: "slow", PinId: "pin-in-flight"})
		rpcErr <- err
	}()
	fx.mu.Lock()
	tools := fx.tools
	fx.mu.Unlock()
	<-tools.started
	r.cancel()
	close(tools.release)
	if err := <-rpcErr; err != nil {
		t.Fatalf("in-flight RPC failed during shutdown: %v", err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	r.done <- nil // for Cleanup

	// Restart on the same data dir: the acknowledged pin survived.
	fx2 := &fixture{}
	r2 := startApp(t, fx2.registry(t), "-target=all", "-data.dir="+dataDir)
	_ = r2
	fx2.mu.Lock()
	b := fx2.tools.env.Bus
	fx2.mu.Unlock()
	evs, err := b.Replay(context.Background(), bus.SessionFilter("drain"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].GetPin().GetPin().GetId() != "pin-in-flight" {
		t.Errorf("after restart the stream has %v, want the in-flight pin", evs)
	}
}

func TestSplitModeSharesNATSAndCallsOverTheNetwork(t *testing.T) {
	srv, nc := bustest.Server(t)
	url := srv.ClientURL()
	fxA, fxB := &fixture{}, &fixture{}
	key := meshKeyFile(t)
	a := startApp(t, fxA.registry(t), "-target=tools", "-nats.url="+url, "-mesh.key-file="+key)
	b := startApp(t, fxB.registry(t), "-target=router", "-nats.url="+url, "-tools.addr="+a.grpcAddr, "-mesh.key-file="+key)

	if body := getTools(t, b); !strings.Contains(body, `"intent":"fetch_pod_logs"`) {
		t.Errorf("router in B did not reach tools in A: %s", body)
	}
	// B does not serve tools itself.
	cc, err := server.NewClientConn(b.grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := toolsv1.NewToolsServiceClient(cc).ListToolDefinitions(context.Background(), &toolsv1.ListToolDefinitionsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("tools on B = %v, want Unimplemented", err)
	}
	// A pin published in A is visible on the shared NATS.
	acc, err := server.NewClientConn(a.grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	if _, err := toolsv1.NewToolsServiceClient(acc).ExecuteTool(context.Background(), &toolsv1.ExecuteToolRequest{SessionId: "split", PinId: "p1"}); err != nil {
		t.Fatal(err)
	}
	shared, err := bus.Connect(context.Background(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := shared.Replay(context.Background(), bus.SessionFilter("split"), 0)
	if err != nil || len(evs) != 1 {
		t.Errorf("shared stream has %v, %v; want the pin", evs, err)
	}
}

func TestRunErrors(t *testing.T) {
	fx := &fixture{}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown target", []string{"-target=tools,pager"}, `unknown target "pager"`},
		{"missing needed address", []string{"-target=router", "-nats.url=nats://127.0.0.1:1"}, "router needs tools"},
		{"duplicate target", []string{"-target=tools,tools"}, "listed twice"},
		{"all with others", []string{"-target=all,tools"}, "cannot be combined"},
	}
	for _, tt := range tests {
		cfg := app.DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		a, err := app.New(cfg, fx.registry(t), fs, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = a.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Run = %v, want error containing %q", tt.name, err, tt.want)
		}
	}
}

// flaky is a module that serves DeliveryService and fails on demand.
type flaky struct {
	deliveryv1.UnimplementedDeliveryServiceServer
	fail  chan struct{}
	err   error
	panic bool
}

func (f *flaky) Register(gs *grpc.Server) { deliveryv1.RegisterDeliveryServiceServer(gs, f) }
func (f *flaky) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}
func (f *flaky) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-f.fail:
	}
	if f.panic {
		panic(f.err.Error())
	}
	return f.err
}

func readyz(t *testing.T, r *running) (int, string) {
	t.Helper()
	resp, err := http.Get(r.httpURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestModuleFailureMarksItNotReadyAndTheRestKeepsServing: a module whose Run
// fails (error or panic) makes /readyz 503 naming it and its error, its gRPC
// service and the server NOT_SERVING; the other modules keep serving and the
// process keeps running until it is stopped.
func TestModuleFailureMarksItNotReadyAndTheRestKeepsServing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the app")
	}
	for _, tc := range []struct {
		name  string
		panic bool
	}{{"error", false}, {"panic", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := &fixture{}
			reg := fx.registry(t)
			fl := &flaky{fail: make(chan struct{}), err: errors.New("consumer lost"), panic: tc.panic}
			if err := reg.Register(mesh.Delivery, func(context.Context, app.Env) (app.Module, error) { return fl, nil }); err != nil {
				t.Fatal(err)
			}
			r := startApp(t, reg, "-target=all", "-data.dir="+t.TempDir())
			const deliverySvc = "rcamesh.delivery.v1.DeliveryService"
			if st := healthOf(t, r.grpcAddr, deliverySvc); st != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("delivery health before the failure = %v", st)
			}
			close(fl.fail)
			deadline := time.Now().Add(15 * time.Second)
			for {
				code, body := readyz(t, r)
				if code == http.StatusServiceUnavailable {
					if !strings.Contains(body, "module delivery") || !strings.Contains(body, "consumer lost") {
						t.Errorf("readyz = %s, want the module and its error named", body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("readyz still %d %s after the module failed", code, body)
				}
				time.Sleep(5 * time.Millisecond)
			}
			for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
				deliverySvc:                       healthpb.HealthCheckResponse_NOT_SERVING,
				"":                                healthpb.HealthCheckResponse_NOT_SERVING,
				"rcamesh.router.v1.RouterService": healthpb.HealthCheckResponse_SERVING,
				"rcamesh.tools.v1.ToolsService":   healthpb.HealthCheckResponse_SERVING,
			} {
				if st := healthOf(t, r.grpcAddr, svc); st != want {
					t.Errorf("health(%q) = %v, want %v", svc, st, want)
				}
			}
			// The other modules still serve (REST -> router -> tools).
			if body := getTools(t, r); !strings.Contains(body, "/logs") {
				t.Errorf("tools after the failure = %s", body)
			}
			select {
			case err := <-r.done:
				r.done <- err
				t.Fatalf("the process stopped after a non-fatal module failed: %v", err)
			default:
			}
			r.cancel()
			if err := <-r.done; err != nil {
				t.Errorf("Run after cancel = %v, want nil", err)
			}
			r.done <- nil // for Cleanup
		})
	}
}

// TestFatalPartsStopTheProcess: a module registered Fatal(), and the NATS
// connection closing for good, stop the process with an error naming them.
func TestFatalPartsStopTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the app")
	}
	boom := errors.New("consumer lost")
	tests := []struct {
		name    string
		fatal   bool
		trigger func(fx *fixture, fl *flaky)
		want    string
		wantErr error
	}{
		{"fatal module", true, func(_ *fixture, fl *flaky) { close(fl.fail) }, "module delivery", boom},
		{"NATS connection closed", false, func(fx *fixture, _ *flaky) {
			fx.mu.Lock()
			defer fx.mu.Unlock()
			fx.tools.env.Bus.Conn().Close()
		}, "NATS connection closed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := &fixture{}
			reg := fx.registry(t)
			fl := &flaky{fail: make(chan struct{}), err: boom}
			var opts []app.ModuleOption
			if tt.fatal {
				opts = append(opts, app.Fatal())
			}
			if err := reg.Register(mesh.Delivery, func(context.Context, app.Env) (app.Module, error) { return fl, nil }, opts...); err != nil {
				t.Fatal(err)
			}
			r := startApp(t, reg, "-target=all", "-data.dir="+t.TempDir())
			tt.trigger(fx, fl)
			select {
			case err := <-r.done:
				r.done <- err // for Cleanup
				if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Errorf("Run = %v, want an error naming %q", err, tt.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the process kept running")
			}
		})
	}
}

type failing struct{ err error }

func (failing) Register(*grpc.Server) {}
func (failing) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}
func (f failing) Run(context.Context) error { return f.err }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*app.Config)
		want string
	}{
		{"defaults", func(*app.Config) {}, ""},
		{"empty target", func(c *app.Config) { c.Target = " " }, "-target"},
		{"no data dir for embedded", func(c *app.Config) { c.DataDir = "" }, "-data.dir"},
		{"listen with external", func(c *app.Config) { c.NATSURL = "nats://x:4222"; c.NATSListen = ":4222" }, "-nats.listen"},
		{"bad service addr", func(c *app.Config) { c.ServiceAddrs["tools"] = "tools" }, "-tools.addr"},
		{"replicas by DNS", func(c *app.Config) { c.ServiceAddrs["tools"] = "dns:///rcamesh-tools.ns.svc:9090" }, ""},
		{"replicas by list", func(c *app.Config) { c.ServiceAddrs["tools"] = "10.0.0.1:9090,10.0.0.2:9090" }, ""},
		{"bad replica in list", func(c *app.Config) { c.ServiceAddrs["critic"] = "10.0.0.1:9090,critic" }, "-critic.addr"},
		{"bad grpc addr", func(c *app.Config) { c.Server.GRPCAddr = "x" }, "-grpc.addr"},
		{"bad exporter", func(c *app.Config) { c.Telemetry.Exporter = "zipkin" }, "zipkin"},
	}
	for _, tt := range tests {
		c := app.DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestRegistry(t *testing.T) {
	ctor := func(context.Context, app.Env) (app.Module, error) { return failing{}, nil }
	reg := app.NewRegistry()
	for _, n := range []string{"brain", "tools", "zeta", "critic"} {
		if err := reg.Register(n, ctor); err != nil {
			t.Fatal(err)
		}
	}
	bad := []struct {
		name string
		ctor app.Constructor
	}{
		{"tools", ctor}, {"", ctor}, {"all", ctor}, {"a,b", ctor}, {"Tools", ctor}, {"nil", nil},
	}
	for _, b := range bad {
		if err := reg.Register(b.name, b.ctor); err == nil {
			t.Errorf("Register(%q) succeeded", b.name)
		}
	}
	if got := fmt.Sprint(reg.Names()); got != "[tools critic brain zeta]" {
		t.Errorf("Names = %s, want mesh order then others", got)
	}
	resolve := []struct{ target, want string }{
		{"all", "[tools critic brain zeta]"},
		{"brain, tools", "[tools brain]"},
		{"zeta", "[zeta]"},
	}
	for _, r := range resolve {
		got, err := reg.Resolve(r.target)
		if err != nil || fmt.Sprint(got) != r.want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", r.target, got, err, r.want)
		}
	}
	for _, target := range []string{"", "router", "tools,", "all,brain"} {
		if _, err := reg.Resolve(target); err == nil {
			t.Errorf("Resolve(%q) succeeded", target)
		}
	}
	var flagged bool
	reg2 := app.NewRegistry()
	_ = reg2.Register("tools", ctor, app.WithFlags(func(fs *flag.FlagSet) { flagged = true; fs.Duration("tools.timeout", time.Second, "") }))
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	reg2.RegisterFlags(fs)
	if !flagged || fs.Lookup("tools.timeout") == nil {
		t.Error("module flags not registered")
	}
}

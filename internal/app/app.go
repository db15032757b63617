package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/rcamesh/rcamesh/internal/auth"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/server"
	"github.com/rcamesh/rcamesh/internal/telemetry"
)

// Config is the process configuration of `rcamesh serve`.
type Config struct {
	// Target is "all" or a comma list of module names (-target).
	Target string
	// DataDir holds the embedded NATS store and module data (-data.dir).
	DataDir string
	// NATSURL of an external NATS; "" starts an embedded server (-nats.url).
	NATSURL string
	// NATSListen exposes the embedded server on host:port for other
	// processes and subscribers; "" keeps it in-process (-nats.listen).
	NATSListen string
	// ServiceAddrs maps a service name to the gRPC address of the process
	// that runs it, for services not run here (-<svc>.addr).
	ServiceAddrs map[string]string

	Server    server.Config
	Bus       bus.Config
	Telemetry telemetry.Config
	// Auth is identity and transport security (internal/auth).
	Auth auth.Config

	// GRPCListener and HTTPListener, when set, are used instead of listening
	// on Server.GRPCAddr and Server.HTTPAddr (tests, socket activation).
	// App.Run closes them.
	GRPCListener net.Listener
	HTTPListener net.Listener
	// UI, when set, is served under "/" beside the API (the web UI).
	UI http.Handler
}

// DefaultConfig runs everything in one process with embedded NATS.
func DefaultConfig() Config {
	return Config{
		Target:       TargetAll,
		DataDir:      "./data",
		ServiceAddrs: map[string]string{},
		Server:       server.DefaultConfig(),
		Bus:          bus.DefaultConfig(),
		Telemetry:    telemetry.DefaultConfig(),
		Auth:         auth.DefaultConfig(),
	}
}

// RegisterFlags registers the process flags (not the modules' own flags:
// Registry.RegisterFlags does those).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Target, "target", c.Target, "modules to run: all, or a comma list of router,tools,critic,brain,delivery,gateway (gateway: one REST front door for the services run elsewhere)")
	fs.StringVar(&c.DataDir, "data.dir", c.DataDir, "data directory (embedded NATS store)")
	fs.StringVar(&c.NATSURL, "nats.url", c.NATSURL, "external NATS URL, e.g. nats://nats:4222; empty starts an embedded NATS server with JetStream")
	fs.StringVar(&c.NATSListen, "nats.listen", c.NATSListen, "host:port where the embedded NATS server accepts other clients (users of the mesh only, see -nats.reader-password-file; no host means 127.0.0.1); empty: in-process only")
	if c.ServiceAddrs == nil {
		c.ServiceAddrs = map[string]string{}
	}
	for _, svc := range mesh.All {
		fs.Func(svc+".addr", "gRPC address of the process running "+svc+" (needed when it does not run here): host:port; a comma list of replicas' host:port; or dns:///host:port for every address the name resolves to (a headless Service's replicas); calls go round-robin over the replicas", func(v string) error {
			c.ServiceAddrs[svc] = v
			return nil
		})
	}
	c.Server.RegisterFlags(fs)
	c.Bus.RegisterFlags(fs)
	c.Telemetry.RegisterFlags(fs)
	c.Auth.RegisterFlags(fs)
}

// Validate names the first bad field; it does not know the registry (Run
// checks targets and needed addresses).
func (c Config) Validate() error {
	if strings.TrimSpace(c.Target) == "" {
		return errors.New("app: -target is empty")
	}
	if c.NATSURL == "" && c.DataDir == "" {
		return errors.New("app: -data.dir is empty but embedded NATS needs it (or set -nats.url)")
	}
	if c.NATSURL != "" && c.NATSListen != "" {
		return errors.New("app: -nats.listen applies to the embedded server only; it cannot be combined with -nats.url")
	}
	for svc, addr := range c.ServiceAddrs {
		if !slices.Contains(mesh.All, svc) {
			return fmt.Errorf("app: address given for unknown service %q", svc)
		}
		for _, one := range strings.Split(strings.TrimPrefix(addr, "dns:///"), ",") {
			if _, _, err := net.SplitHostPort(strings.TrimSpace(one)); err != nil {
				return fmt.Errorf("app: -%s.addr %q is not host:port, a comma list of them or dns:///host:port: %w", svc, addr, err)
			}
		}
	}
	if err := c.Server.Validate(); err != nil {
		return err
	}
	if err := c.Bus.Validate(); err != nil {
		return err
	}
	if err := c.Telemetry.Validate(); err != nil {
		return err
	}
	return c.Auth.Validate()
}

// App is one rcamesh process.
type App struct {
	cfg    Config
	reg    *Registry
	flags  *flag.FlagSet
	logger *slog.Logger
}

// New checks cfg and the registry. fs is the parsed flag set handed to modules.
func New(cfg Config, reg *Registry, fs *flag.FlagSet, logger *slog.Logger) (*App, error) {
	if reg == nil {
		return nil, errors.New("app: nil registry")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fs == nil {
		fs = flag.NewFlagSet("rcamesh", flag.ContinueOnError)
	}
	return &App{cfg: cfg, reg: reg, flags: fs, logger: logger}, nil
}

// Check resolves -target against the registry and checks that every service
// a module needs runs here or has an address. Run does it too; Check lets a
// command report configuration mistakes before starting anything.
func (a *App) Check() error {
	_, err := a.plan()
	return err
}

// plan resolves the targets and checks that every needed remote service has an address.
func (a *App) plan() ([]string, error) {
	targets, err := a.reg.Resolve(a.cfg.Target)
	if err != nil {
		return nil, err
	}
	for _, need := range a.reg.needs(targets) {
		if slices.Contains(targets, need) {
			continue
		}
		if a.cfg.ServiceAddrs[need] == "" {
			var by []string
			for _, t := range targets {
				if slices.Contains(a.reg.entries[t].needs, need) {
					by = append(by, t)
				}
			}
			return nil, fmt.Errorf("app: %s needs %s, which does not run in this process: set -%s.addr or add it to -target",
				strings.Join(by, ","), need, need)
		}
	}
	return targets, nil
}

// Run runs the process until ctx is done or a part that is fatal by design
// fails: the gRPC or HTTP server, the NATS connection (closed for good), or a
// module registered with Fatal(). Any other module that fails is marked
// failed (readiness false, its gRPC services NOT_SERVING) while the rest keep
// serving. Shutdown order:
// health NOT_SERVING, gRPC and HTTP drain (in-flight requests finish within
// the drain timeout; their JetStream publishes are acknowledged), module
// loops stop, client connections close, NATS drains, the embedded server
// stops. It returns nil after a shutdown caused by ctx.
func (a *App) Run(ctx context.Context) (err error) {
	defer func() {
		// A shutdown requested while starting is a clean stop.
		if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			err = nil
		}
	}()
	targets, err := a.plan()
	if err != nil {
		a.closeListeners()
		return err
	}
	log := a.logger.With("component", "app")
	log.Info("starting", "targets", strings.Join(targets, ","), "nats", natsMode(a.cfg))

	tcfg := a.cfg.Telemetry
	if tcfg.ServiceName == telemetry.DefaultConfig().ServiceName && a.cfg.Target != TargetAll {
		tcfg.ServiceName += "-" + strings.Join(targets, "+") // tell split-mode processes apart in traces
	}
	shutdownTelemetry, err := telemetry.Setup(ctx, tcfg)
	if err != nil {
		a.closeListeners()
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if terr := shutdownTelemetry(sctx); terr != nil {
			log.Warn("telemetry shutdown", "err", terr)
		}
	}()

	sec, err := a.setupSecurity(ctx, log)
	if err != nil {
		a.closeListeners()
		return err
	}

	nc, ns, ecfg, err := a.connectNATS(ctx, targets, sec)
	if err != nil {
		a.closeListeners()
		return err
	}
	defer a.closeNATS(nc, ns, log)

	bcfg := a.cfg.Bus
	bcfg.Keys = sec.id
	b, err := bus.ConnectConfig(ctx, nc, a.logger, bcfg)
	if err != nil {
		a.closeListeners()
		return err
	}
	// With the embedded server a module registered OwnNATSConnection has an
	// in-process connection of its own; the others share nc.
	var modConns []*nats.Conn
	defer func() { a.closeModuleConns(modConns, log) }()
	modBus := func(mb *bus.Bus, name string) (*bus.Bus, error) {
		if ns == nil || !a.reg.entries[name].ownConn {
			return mb, nil
		}
		mnc, err := bus.ConnectInProcess(ns, ecfg, "rcamesh-"+name+"-inprocess")
		if err != nil {
			return nil, fmt.Errorf("app: module %s: %w", name, err)
		}
		modConns = append(modConns, mnc)
		return mb.OnConn(mnc)
	}

	gl, hl, err := a.listeners()
	if err != nil {
		return err
	}
	hl = sec.httpListener(hl)
	// The services of this process call each other (and the gateway calls
	// them) through an in-memory connection to the same gRPC server: the
	// same interceptors, credentials and TLS as over loopback TCP, without
	// a system call or a network poller wake-up per message.
	inproc := server.NewInProcess()
	self, err := server.NewClientConn(server.InProcessTarget, append(sec.selfDial(), inproc.DialOption())...)
	if err != nil {
		_ = gl.Close()
		_ = hl.Close()
		return err
	}
	conns := map[string]grpc.ClientConnInterface{}
	var remote []*grpc.ClientConn
	defer func() {
		for _, c := range remote {
			_ = c.Close()
		}
		_ = self.Close()
	}()
	for _, svc := range mesh.All {
		switch addr := a.cfg.ServiceAddrs[svc]; {
		case slices.Contains(targets, svc):
			conns[svc] = self
		case addr != "":
			cc, err := server.NewClientConn(addr, sec.remoteDial(addr)...)
			if err != nil {
				_ = gl.Close()
				_ = hl.Close()
				return err
			}
			remote = append(remote, cc)
			conns[svc] = cc
		default:
			conns[svc] = unconfigured(svc)
		}
	}
	clients, err := mesh.NewClients(conns)
	if err != nil {
		_ = gl.Close()
		_ = hl.Close()
		return err
	}

	hs := health.NewServer()
	gs := server.NewGRPCServer(a.logger, append(sec.grpcOptions(), server.WithHealth(hs))...)
	gwc := server.GatewayConfig{MaxBodyBytes: a.cfg.Server.MaxBodyBytes, DrainTimeout: a.cfg.Server.DrainTimeout, BodyMiddleware: intake.ArrayBodies}
	sec.gateway(&gwc)
	gw := server.NewGateway(a.logger, gwc)
	if a.cfg.UI != nil {
		gw.Handle("/", a.cfg.UI)
	}
	gw.AddReadyCheck("nats", func(context.Context) error {
		for _, c := range append([]*nats.Conn{nc}, modConns...) {
			if st := c.Status(); st != nats.CONNECTED {
				return fmt.Errorf("NATS connection %s is %s", c.Opts.Name, st)
			}
		}
		return nil
	})
	natsClosed := make(chan struct{})
	var closeOnce sync.Once
	nc.SetClosedHandler(func(*nats.Conn) { closeOnce.Do(func() { close(natsClosed) }) }) // closeNATS replaces it at shutdown

	hst := &healthState{hs: hs, gs: gs}
	mods := make([]*running, 0, len(targets))
	for _, name := range targets {
		mb, err := modBus(b.As(name), name) // signs what the module publishes
		if err != nil {
			_ = gl.Close()
			_ = hl.Close()
			return err
		}
		if c := mb.Conn(); c != nc {
			c.SetClosedHandler(func(*nats.Conn) { closeOnce.Do(func() { close(natsClosed) }) }) // fatal as nc's; closeModuleConns replaces it
		}
		env := Env{
			Logger:  a.logger.With("component", name),
			Bus:     mb,
			Clients: clients,
			Flags:   a.flags,
			DataDir: a.cfg.DataDir,
			Targets: slices.Clone(targets),
		}
		m, err := a.reg.entries[name].newModule(ctx, env)
		if err == nil && m == nil {
			err = errors.New("constructor returned no module")
		}
		if err != nil {
			_ = gl.Close()
			_ = hl.Close()
			return fmt.Errorf("app: start module %s: %w", name, err)
		}
		before := serviceNames(gs)
		m.Register(gs)
		if err := m.RegisterGateway(ctx, gw.Mux(), self); err != nil {
			_ = gl.Close()
			_ = hl.Close()
			return fmt.Errorf("app: module %s gateway: %w", name, err)
		}
		if hm, ok := m.(HTTPModule); ok {
			for pattern, h := range hm.HTTPHandlers(self) {
				gw.HandleModule(pattern, h)
			}
		}
		r := &running{name: name, m: m, fatal: a.reg.entries[name].fatal}
		for _, svc := range serviceNames(gs) {
			if !slices.Contains(before, svc) {
				r.services = append(r.services, svc)
			}
		}
		gw.AddReadyCheck("module "+name, r.ready)
		mods = append(mods, r)
	}
	hst.set(nil, healthpb.HealthCheckResponse_NOT_SERVING)

	// Fatal by design: the gRPC server, the HTTP server and the NATS
	// connection (closed for good, e.g. the embedded server stopped). A
	// module's failure is fatal only when the module was registered Fatal();
	// otherwise the module is marked failed (/readyz 503, its gRPC services
	// and the server NOT_SERVING), its error is logged, and the rest of the
	// process keeps serving.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return server.ServeGRPC(gctx, gs, gl, a.cfg.Server.DrainTimeout) })
	g.Go(func() error { return inproc.Serve(gctx, gs) })
	g.Go(func() error { return gw.Serve(gctx, hl) })
	g.Go(func() error {
		select {
		case <-gctx.Done():
			return nil
		case <-natsClosed:
			if gctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("app: the NATS connection closed: %v", nc.LastError())
		}
	})
	hst.set(nil, healthpb.HealthCheckResponse_SERVING)
	for _, r := range mods {
		g.Go(func() error {
			r.started.Store(true)
			err := r.run(gctx)
			if err == nil || gctx.Err() != nil {
				return nil
			}
			if r.fatal {
				return fmt.Errorf("app: module %s: %w", r.name, err)
			}
			r.fail(err)
			hst.set(r.services, healthpb.HealthCheckResponse_NOT_SERVING)
			log.Error("module failed; it stays down and the process is not ready, the other modules keep serving",
				"module", r.name, "err", err, "services", strings.Join(r.services, ","))
			return nil
		})
	}
	log.Info("serving", "grpc", gl.Addr().String(), "http", hl.Addr().String(), "targets", strings.Join(targets, ","))
	g.Go(func() error {
		<-gctx.Done()
		hst.shutdown() // every service NOT_SERVING while draining
		log.Info("shutting down")
		return nil
	})
	err = g.Wait()
	if err != nil {
		log.Error("stopped with error", "err", err)
	}
	return err
}

// running is one module of the process.
type running struct {
	name     string
	m        Module
	fatal    bool
	services []string // gRPC services it registered
	started  atomic.Bool
	failed   atomic.Pointer[error]
}

// run runs the module, turning a panic into an error.
func (r *running) run(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return r.m.Run(ctx)
}

func (r *running) fail(err error) { r.failed.Store(&err) }

// ready is the module's readiness check.
func (r *running) ready(context.Context) error {
	if e := r.failed.Load(); e != nil {
		return fmt.Errorf("failed: %w", *e)
	}
	if !r.started.Load() {
		return errors.New("not started")
	}
	return nil
}

// healthState sets gRPC health statuses; services of a failed module stay
// NOT_SERVING (and so does the server as a whole) whatever is set later.
type healthState struct {
	hs   *health.Server
	gs   *grpc.Server
	mu   sync.Mutex
	down map[string]bool
	shut bool
}

// set sets the status of services (nil: every service and the server).
func (h *healthState) set(services []string, st healthpb.HealthCheckResponse_ServingStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return
	}
	if services != nil && st != healthpb.HealthCheckResponse_SERVING {
		if h.down == nil {
			h.down = map[string]bool{}
		}
		for _, svc := range services {
			h.down[svc] = true
		}
	}
	if services == nil {
		server.SetServingStatus(h.hs, h.gs, st)
	} else {
		for _, svc := range services {
			h.hs.SetServingStatus(svc, st)
		}
	}
	for svc := range h.down {
		h.hs.SetServingStatus(svc, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	if len(h.down) > 0 {
		h.hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	}
}

func (h *healthState) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shut = true
	h.hs.Shutdown()
}

// serviceNames lists the services registered on gs.
func serviceNames(gs *grpc.Server) []string {
	var out []string
	for name := range gs.GetServiceInfo() {
		out = append(out, name)
	}
	return out
}

func natsMode(c Config) string {
	if c.NATSURL != "" {
		return "external"
	}
	return "embedded"
}

func (a *App) connectNATS(ctx context.Context, targets []string, sec *security) (*nats.Conn, *natsserver.Server, bus.EmbeddedConfig, error) {
	if a.cfg.NATSURL != "" {
		user, pw, tlsc, err := sec.natsClient(a.cfg.NATSURL, targets)
		if err != nil {
			return nil, nil, bus.EmbeddedConfig{}, err
		}
		nc, err := bus.Dial(ctx, bus.Options{URL: a.cfg.NATSURL, Name: connName(targets), Logger: a.logger, User: user, Password: pw, TLS: tlsc})
		return nc, nil, bus.EmbeddedConfig{}, err
	}
	ecfg, err := sec.natsEmbedded(a.cfg.NATSListen)
	if err != nil {
		return nil, nil, ecfg, err
	}
	ecfg.StoreDir = filepath.Join(a.cfg.DataDir, "nats")
	ecfg.Listen = a.cfg.NATSListen
	ns, nc, err := bus.StartEmbeddedConfig(ctx, ecfg, a.logger)
	return nc, ns, ecfg, err
}

// connName names this process's NATS connection (and so the publisher of its
// events): its targets, host and pid, which tell replicas apart.
func connName(targets []string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("rcamesh-%s@%s:%d", strings.Join(targets, "+"), host, os.Getpid())
}

// closeModuleConns drains the modules' own connections (the embedded
// server's), before closeNATS drains the process's and stops the server.
func (a *App) closeModuleConns(conns []*nats.Conn, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			closed := make(chan struct{})
			c.SetClosedHandler(func(*nats.Conn) { close(closed) })
			if err := c.Drain(); err != nil {
				c.Close()
				return
			}
			select {
			case <-closed:
			case <-time.After(a.cfg.Server.DrainTimeout):
				log.Warn("NATS drain timed out; closing", "connection", c.Opts.Name)
				c.Close()
			}
		})
	}
	wg.Wait()
}

func (a *App) closeNATS(nc *nats.Conn, ns *natsserver.Server, log *slog.Logger) {
	closed := make(chan struct{})
	var once sync.Once
	nc.SetClosedHandler(func(*nats.Conn) { once.Do(func() { close(closed) }) })
	if nc.IsClosed() {
		once.Do(func() { close(closed) }) // already closed: no handler will run
	} else if err := nc.Drain(); err != nil {
		nc.Close()
	}
	select {
	case <-closed:
	case <-time.After(a.cfg.Server.DrainTimeout):
		log.Warn("NATS drain timed out; closing")
		nc.Close()
	}
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

func (a *App) listeners() (net.Listener, net.Listener, error) {
	gl, hl := a.cfg.GRPCListener, a.cfg.HTTPListener
	var err error
	if gl == nil {
		if gl, err = net.Listen("tcp", a.cfg.Server.GRPCAddr); err != nil {
			if hl != nil {
				_ = hl.Close()
			}
			return nil, nil, fmt.Errorf("app: listen on -grpc.addr %s: %w", a.cfg.Server.GRPCAddr, err)
		}
	}
	if hl == nil {
		if hl, err = net.Listen("tcp", a.cfg.Server.HTTPAddr); err != nil {
			_ = gl.Close()
			return nil, nil, fmt.Errorf("app: listen on -http.addr %s: %w", a.cfg.Server.HTTPAddr, err)
		}
	}
	return gl, hl, nil
}

func (a *App) closeListeners() {
	for _, l := range []net.Listener{a.cfg.GRPCListener, a.cfg.HTTPListener} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// unconfigured is the connection of a service that neither runs here nor has an address.
type unconfigured string

func (u unconfigured) err() error {
	return status.Errorf(codes.Unavailable, "service %s does not run in this process and -%s.addr is not set", string(u), string(u))
}

func (u unconfigured) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return u.err()
}

func (u unconfigured) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, u.err()
}

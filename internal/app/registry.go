// Package app runs rcamesh services as modules of one process: -target=all
// runs every registered module against an embedded NATS server; a comma list
// runs some of them against an external NATS, reaching the other services
// through -<svc>.addr. The code path is the same in both modes: services
// always call each other over gRPC through mesh.Clients.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Module is one service of the mesh, as a process runs it.
type Module interface {
	// Register registers the module's gRPC services.
	Register(gs *grpc.Server)
	// RegisterGateway registers its REST handlers against a connection to the
	// process's own gRPC server (no-op for services without HTTP annotations).
	RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error
	// Run runs background loops until ctx is done and then returns nil. An
	// error (or a panic) before that marks the module failed; it stops the
	// process only when the module was registered with Fatal().
	Run(ctx context.Context) error
}

// HTTPModule is a module that also serves plain HTTP beside the REST API
// (the MCP endpoint, for example): its handlers are mounted on the
// process's gateway, with the same listener, tracing and shutdown.
type HTTPModule interface {
	Module
	// HTTPHandlers maps http.ServeMux patterns to handlers; conn reaches the
	// process's own gRPC server.
	HTTPHandlers(conn *grpc.ClientConn) map[string]http.Handler
}

// Env is what a module constructor gets. It is built once per process.
type Env struct {
	Logger *slog.Logger // already carries component=<module name>
	Bus    *bus.Bus
	// Clients reach every service: local ones through the process's own gRPC
	// server, remote ones through -<svc>.addr. Calls to a service that is
	// neither local nor configured fail with codes.Unavailable.
	Clients mesh.Clients
	// Flags is the parsed flag set (every module's flags are registered).
	Flags *flag.FlagSet
	// DataDir is the process's data directory (-data.dir).
	DataDir string
	// Targets are the modules this process runs.
	Targets []string
}

// Constructor builds a module. It must not block; background work goes in Run.
type Constructor func(ctx context.Context, env Env) (Module, error)

type entry struct {
	name          string
	newModule     Constructor
	registerFlags []func(*flag.FlagSet)
	needs         []string
	fatal         bool
	ownConn       bool
}

// ModuleOption adds to a registry entry.
type ModuleOption func(*entry)

// WithFlags registers the module's flags (e.g. cfg.RegisterFlags) on the
// process's flag set before it is parsed, whichever targets run.
func WithFlags(register func(fs *flag.FlagSet)) ModuleOption {
	return func(e *entry) { e.registerFlags = append(e.registerFlags, register) }
}

// Needs declares the services the module calls; in split mode each of them
// must be local or have its -<svc>.addr set.
func Needs(services ...string) ModuleOption {
	return func(e *entry) { e.needs = append(e.needs, services...) }
}

// Fatal declares that the module's failure stops the process. By default a
// module whose Run returns an error (or panics) while the process runs is
// marked failed: /readyz answers 503 naming it, its gRPC services and the
// server report NOT_SERVING, the error is logged, and the other modules keep
// serving. Declare Fatal only for a module the process cannot serve without.
func Fatal() ModuleOption {
	return func(e *entry) { e.fatal = true }
}

// OwnNATSConnection gives the module an in-process NATS connection of its
// own when the process runs the embedded server (the others share the
// process's). For a module that publishes and reads in bulk, such as the
// critic's batches of verdicts: a connection is one writer and one reader
// on each side, on which the pins of a command and their acknowledgements
// would queue behind its traffic. Through an external server the modules
// of a process share its connection.
func OwnNATSConnection() ModuleOption {
	return func(e *entry) { e.ownConn = true }
}

// Registry maps module names to constructors.
type Registry struct {
	entries map[string]*entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]*entry{}} }

// Register adds a module. Names are lower-case words; registering a name
// twice is an error.
func (r *Registry) Register(name string, newModule Constructor, opts ...ModuleOption) error {
	if name == "" || name == TargetAll || strings.ContainsAny(name, ", \t") || strings.ToLower(name) != name {
		return fmt.Errorf("app: invalid module name %q", name)
	}
	if newModule == nil {
		return fmt.Errorf("app: module %q has no constructor", name)
	}
	if _, dup := r.entries[name]; dup {
		return fmt.Errorf("app: module %q registered twice", name)
	}
	e := &entry{name: name, newModule: newModule}
	for _, o := range opts {
		o(e)
	}
	r.entries[name] = e
	return nil
}

// Names lists the registered modules in start order: the services of
// mesh.All first (dependencies first), then any others by name.
func (r *Registry) Names() []string {
	var out []string
	for _, n := range mesh.All {
		if _, ok := r.entries[n]; ok {
			out = append(out, n)
		}
	}
	var rest []string
	for n := range r.entries {
		if !slices.Contains(mesh.All, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// RegisterFlags registers every module's flags on fs.
func (r *Registry) RegisterFlags(fs *flag.FlagSet) {
	for _, n := range r.Names() {
		for _, f := range r.entries[n].registerFlags {
			f(fs)
		}
	}
}

// TargetAll runs every registered module.
const TargetAll = "all"

// Resolve turns a -target value ("all" or a comma list) into module names in
// start order. Unknown or repeated names are errors.
func (r *Registry) Resolve(target string) ([]string, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, errors.New("app: empty -target: use all or a comma list of " + strings.Join(r.Names(), ","))
	}
	if target == TargetAll {
		return r.Names(), nil
	}
	want := map[string]bool{}
	for _, t := range strings.Split(target, ",") {
		t = strings.TrimSpace(t)
		if t == TargetAll {
			return nil, errors.New("app: -target all cannot be combined with other targets")
		}
		if _, ok := r.entries[t]; !ok {
			return nil, fmt.Errorf("app: unknown target %q in -target (known: all,%s)", t, strings.Join(r.Names(), ","))
		}
		if want[t] {
			return nil, fmt.Errorf("app: target %q listed twice in -target", t)
		}
		want[t] = true
	}
	var out []string
	for _, n := range r.Names() {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// Needs lists the services module name declared it calls (nil for an
// unknown module).
func (r *Registry) Needs(name string) []string {
	e, ok := r.entries[name]
	if !ok {
		return nil
	}
	return slices.Clone(e.needs)
}

func (r *Registry) needs(targets []string) []string {
	set := map[string]bool{}
	for _, t := range targets {
		for _, n := range r.entries[t].needs {
			set[n] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

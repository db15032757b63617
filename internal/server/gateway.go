package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/rcamesh/rcamesh/api/openapi"
)

// APIPrefix is where the REST gateway is mounted.
const APIPrefix = "/api/"

// HandlerFunc registers one service's REST handlers, e.g.
// routerv1.RegisterRouterServiceHandler.
type HandlerFunc func(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error

// ReadyCheck reports nil when its part of the process is ready.
type ReadyCheck func(ctx context.Context) error

// GatewayConfig configures NewGateway.
type GatewayConfig struct {
	// MaxBodyBytes caps request bodies under /api/ (413 beyond); 0 means 4 MiB.
	MaxBodyBytes int64
	// DrainTimeout bounds Serve's graceful shutdown; 0 means 15s.
	DrainTimeout time.Duration
	// ServeMuxOptions are extra grpc-gateway options.
	ServeMuxOptions []runtime.ServeMuxOption
	// APIMiddleware, when set, wraps the /api/ handler (authentication,
	// browser rules: internal/auth).
	APIMiddleware func(http.Handler) http.Handler
	// ModuleMiddleware, when set, wraps what modules mount with HandleModule
	// (the MCP endpoint): the same identity as the API, and the role a
	// module's surface needs.
	ModuleMiddleware func(http.Handler) http.Handler
	// BodyMiddleware, when set, wraps the REST mux inside the body limit
	// and APIMiddleware: it sees the body authentication verified (an
	// alert payload's shape rewritten for the mux).
	BodyMiddleware func(http.Handler) http.Handler
}

// Gateway is the HTTP side of a process: REST through grpc-gateway under
// /api/, /healthz, /readyz, /openapi.json and anything added with Handle.
type Gateway struct {
	logger  *slog.Logger
	cfg     GatewayConfig
	mux     *runtime.ServeMux
	http    *http.ServeMux
	handler http.Handler

	mu     sync.Mutex
	checks map[string]ReadyCheck
}

// Marshaler is the JSON mapping of the REST API: protojson with proto field
// names, unpopulated fields omitted; unknown request fields are an error.
func Marshaler() runtime.Marshaler {
	return &runtime.HTTPBodyMarshaler{Marshaler: &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

// NewGateway builds the HTTP handler tree. Register REST handlers with
// Register, readiness checks with AddReadyCheck, then Serve.
func NewGateway(logger *slog.Logger, cfg GatewayConfig) *Gateway {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 15 * time.Second
	}
	g := &Gateway{
		logger: logger.With("component", "gateway"),
		cfg:    cfg,
		http:   http.NewServeMux(),
		checks: map[string]ReadyCheck{},
	}
	g.mux = runtime.NewServeMux(append([]runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, Marshaler()),
		runtime.WithRoutingErrorHandler(routingError),
		runtime.WithErrorHandler(apiError),
	}, cfg.ServeMuxOptions...)...)
	var inner http.Handler = g.mux
	if cfg.BodyMiddleware != nil {
		inner = cfg.BodyMiddleware(inner)
	}
	api := g.checkRequest(g.limitBody(inner))
	if cfg.APIMiddleware != nil {
		api = cfg.APIMiddleware(api)
	}
	g.http.Handle(APIPrefix, api)
	g.http.HandleFunc("GET /healthz", g.healthz)
	g.http.HandleFunc("GET /readyz", g.readyz)
	g.http.HandleFunc("GET /openapi.json", serveOpenAPI)
	// Prometheus metrics of this process: the default registry (internal/metrics,
	// Go runtime and process collectors).
	g.http.Handle("GET /metrics", promhttp.Handler())
	g.handler = otelhttp.NewHandler(g.http, "http",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && r.URL.Path != "/metrics"
		}),
	)
	return g
}

// Mux is the grpc-gateway mux, for handlers registered by hand.
func (g *Gateway) Mux() *runtime.ServeMux { return g.mux }

// Register calls every handler func against conn, a real connection to the
// gRPC server so that interceptors and tracing apply to REST calls too. The
// first error is returned naming the handler's position.
func (g *Gateway) Register(ctx context.Context, conn *grpc.ClientConn, handlers ...HandlerFunc) error {
	if conn == nil {
		return errors.New("server: gateway needs a gRPC client connection")
	}
	for i, h := range handlers {
		if h == nil {
			return fmt.Errorf("server: gateway handler %d is nil", i)
		}
		if err := h(ctx, g.mux, conn); err != nil {
			return fmt.Errorf("server: register gateway handler %d: %w", i, err)
		}
	}
	return nil
}

// Handle adds an HTTP handler beside the API, e.g. the web UI under "/".
// Patterns follow net/http.ServeMux; /api/, /healthz, /readyz and
// /openapi.json are taken.
func (g *Gateway) Handle(pattern string, h http.Handler) { g.http.Handle(pattern, h) }

// HandleModule mounts a module's own HTTP surface behind ModuleMiddleware.
func (g *Gateway) HandleModule(pattern string, h http.Handler) {
	if g.cfg.ModuleMiddleware != nil {
		h = g.cfg.ModuleMiddleware(h)
	}
	g.http.Handle(pattern, h)
}

// AddReadyCheck adds (or replaces) a named readiness check for /readyz.
func (g *Gateway) AddReadyCheck(name string, check ReadyCheck) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks[name] = check
}

// Ready runs every readiness check and returns the failures by name.
func (g *Gateway) Ready(ctx context.Context) map[string]string {
	g.mu.Lock()
	checks := make(map[string]ReadyCheck, len(g.checks))
	for k, v := range g.checks {
		checks[k] = v
	}
	g.mu.Unlock()
	failed := map[string]string{}
	for name, check := range checks {
		if err := check(ctx); err != nil {
			failed[name] = err.Error()
		}
	}
	return failed
}

// Handler is the whole HTTP handler tree (with OpenTelemetry).
func (g *Gateway) Handler() http.Handler { return g.handler }

// Serve serves HTTP on lis until ctx is cancelled, then shuts down
// gracefully within the drain timeout. It returns nil after a shutdown
// caused by ctx.
func (g *Gateway) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("server: HTTP serve on %s: %w", lis.Addr(), err)
		}
		return nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Streaming responses (event feeds) never finish by themselves.
		_ = srv.Close()
	}
	<-errc
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	failed := g.Ready(ctx)
	if len(failed) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
		return
	}
	names := make([]string, 0, len(failed))
	for n := range failed {
		names = append(names, n)
	}
	sort.Strings(names)
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "not_ready": names, "reasons": failed})
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapi.Spec)
}

// errorBody has the shape of grpc-gateway's error responses.
type errorBody struct {
	Code    int32    `json:"code"`
	Message string   `json:"message"`
	Details []string `json:"details"`
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, errorBody{Code: int32(codes.InvalidArgument), Message: msg, Details: []string{}})
}

// checkRequest refuses, with 400, API requests whose path or query is not
// valid UTF-8 (a proto string cannot hold it: the gateway would fail to
// marshal the request and answer 500) or whose query does not parse.
func (g *Gateway) checkRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !utf8.ValidString(r.URL.Path) {
			badRequest(w, "the request path is not valid UTF-8")
			return
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			badRequest(w, "malformed query string: "+err.Error())
			return
		}
		for k, vs := range q {
			if !utf8.ValidString(k) {
				badRequest(w, "a query parameter name is not valid UTF-8")
				return
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					badRequest(w, fmt.Sprintf("query parameter %q is not valid UTF-8", k))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// routingError answers a request no API route takes: 405 with an Allow
// header naming the methods the path has (from the OpenAPI document) when
// the path exists under another method, else grpc-gateway's default (404,
// 400).
func routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if httpStatus != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, httpStatus)
		return
	}
	allowed := AllowedMethods(r.URL.Path)
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
	}
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{
		Code:    int32(codes.Unimplemented),
		Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")),
		Details: []string{},
	})
}

// apiRoute is one path template of the OpenAPI document and its methods.
type apiRoute struct {
	segments []string // "{x}" matches any one non-empty segment
	methods  []string
}

var apiRoutes = sync.OnceValue(func() []apiRoute {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		return nil
	}
	routes := make([]apiRoute, 0, len(doc.Paths))
	for path, ops := range doc.Paths {
		rt := apiRoute{segments: strings.Split(strings.Trim(path, "/"), "/")}
		for m := range ops {
			switch up := strings.ToUpper(m); up {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				rt.methods = append(rt.methods, up)
			}
		}
		routes = append(routes, rt)
	}
	return routes
})

// AllowedMethods lists, sorted, the HTTP methods the REST API serves on path
// (per the OpenAPI document); nil when no route matches.
func AllowedMethods(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	set := map[string]bool{}
	for _, rt := range apiRoutes() {
		if len(rt.segments) != len(segs) {
			continue
		}
		match := true
		for i, s := range rt.segments {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				match = segs[i] != ""
			} else {
				match = s == segs[i]
			}
			if !match {
				break
			}
		}
		if match {
			for _, m := range rt.methods {
				set[m] = true
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// limitBody rejects request bodies above the limit with 413 and a JSON error
// before the gateway decodes them, and bodies that are not exactly one JSON
// value (trailing data after the object, which the gateway's decoder would
// silently ignore) with 400.
func (g *Gateway) limitBody(next http.Handler) http.Handler {
	max := g.cfg.MaxBodyBytes
	tooLarge := func(w http.ResponseWriter) {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{
			Code:    int32(codes.ResourceExhausted),
			Message: fmt.Sprintf("request body too large: the limit is %d bytes", max),
			Details: []string{},
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			tooLarge(w)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
			if err != nil {
				writeJSON(w, http.StatusBadRequest, errorBody{Code: int32(codes.InvalidArgument), Message: "reading request body: " + err.Error(), Details: []string{}})
				return
			}
			if int64(len(body)) > max {
				tooLarge(w)
				return
			}
			if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
				badRequest(w, "the request body must be exactly one JSON value (malformed JSON, or data after it)")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// ReasonTooLarge is the ErrorInfo reason of a request the service refuses
// for its size; the gateway answers it with 413 instead of 429.
const ReasonTooLarge = "REQUEST_TOO_LARGE"

// TooLarge is the gRPC error of a request refused for its size
// (ResourceExhausted with ErrorInfo{reason: ReasonTooLarge}): 413 over REST.
func TooLarge(msg string) error {
	st := status.New(codes.ResourceExhausted, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonTooLarge, Domain: "rcamesh"}); err == nil {
		st = d
	}
	return st.Err()
}

// apiError is grpc-gateway's error handler, except that a TooLarge error
// is answered 413.
func apiError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == ReasonTooLarge {
				writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Code: int32(codes.ResourceExhausted), Message: st.Message(), Details: []string{}})
				return
			}
		}
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}

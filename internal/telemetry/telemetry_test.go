package telemetry_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/rcamesh/rcamesh/internal/telemetry"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*telemetry.Config)
		wantErr string
	}{
		{"defaults", func(*telemetry.Config) {}, ""},
		{"unknown exporter", func(c *telemetry.Config) { c.Exporter = "jaeger" }, `unknown exporter "jaeger"`},
		{"empty exporter", func(c *telemetry.Config) { c.Exporter = "" }, "unknown exporter"},
		{"no service", func(c *telemetry.Config) { c.ServiceName = " " }, "ServiceName"},
		{"ratio", func(c *telemetry.Config) { c.SampleRatio = 1.5 }, "SampleRatio"},
		{"endpoint without otlp", func(c *telemetry.Config) { c.Endpoint = "x:4317" }, "Endpoint"},
		{"otlp", func(c *telemetry.Config) { c.Exporter = "otlp"; c.Endpoint = "x:4317" }, ""},
	}
	for _, tt := range tests {
		c := telemetry.DefaultConfig()
		tt.mod(&c)
		err := c.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Validate() = %v, want error containing %q", tt.name, err, tt.wantErr)
		}
		if tt.wantErr != "" {
			if _, err := telemetry.Setup(context.Background(), c); err == nil {
				t.Errorf("%s: Setup accepted a bad config", tt.name)
			}
		}
	}
}

func TestSetupNoneSetsPropagatorAndRealSpans(t *testing.T) {
	cfg := telemetry.DefaultConfig()
	shutdown, err := telemetry.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	fields := strings.Join(otel.GetTextMapPropagator().Fields(), ",")
	for _, f := range []string{"traceparent", "baggage"} {
		if !strings.Contains(fields, f) {
			t.Errorf("global propagator fields %q lack %s", fields, f)
		}
	}
	_, span := otel.Tracer("t").Start(context.Background(), "op")
	defer span.End()
	if !span.SpanContext().IsValid() {
		t.Error("spans have no ids with the none exporter: trace ids would not correlate")
	}
	if span.IsRecording() || span.SpanContext().IsSampled() {
		t.Error("a new trace is recorded with no exporter to read it")
	}
	_, child := otel.Tracer("t").Start(trace.ContextWithSpan(context.Background(), span), "child")
	defer child.End()
	if child.SpanContext().TraceID() != span.SpanContext().TraceID() || child.IsRecording() {
		t.Error("a child span does not continue its parent's unrecorded trace")
	}

	// A caller's sampled trace stays sampled downstream (and so recorded).
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1},
		SpanID:     trace.SpanID{2},
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})
	_, in := otel.Tracer("t").Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "server")
	defer in.End()
	if !in.SpanContext().IsSampled() || in.SpanContext().TraceID() != remote.TraceID() {
		t.Errorf("a sampled caller's trace is not kept sampled: %v", in.SpanContext())
	}
}

func TestSetupStdout(t *testing.T) {
	var buf bytes.Buffer
	cfg := telemetry.DefaultConfig()
	cfg.Exporter = telemetry.ExporterStdout
	cfg.ServiceName = "rcamesh-test"
	cfg.Writer = &buf
	shutdown, err := telemetry.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(context.Background(), "stdout-op")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "stdout-op") || !strings.Contains(out, "rcamesh-test") {
		t.Errorf("stdout exporter output lacks span or service name:\n%s", out)
	}
}

type fakeCollector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
}

func (f *fakeCollector) Export(_ context.Context, r *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func TestSetupOTLP(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	fc := &fakeCollector{}
	collectortrace.RegisterTraceServiceServer(gs, fc)
	go gs.Serve(lis)
	defer gs.Stop()

	cfg := telemetry.DefaultConfig()
	cfg.Exporter = telemetry.ExporterOTLP
	cfg.Endpoint = lis.Addr().String()
	cfg.Insecure = true
	cfg.ServiceName = "rcamesh-otlp"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdown, err := telemetry.Setup(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("t").Start(ctx, "otlp-op", trace.WithSpanKind(trace.SpanKindServer))
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var names, services []string
	for _, r := range fc.reqs {
		for _, rs := range r.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					services = append(services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	if strings.Join(names, ",") != "otlp-op" || strings.Join(services, ",") != "rcamesh-otlp" {
		t.Errorf("collector got spans %v from services %v, want otlp-op from rcamesh-otlp", names, services)
	}
}

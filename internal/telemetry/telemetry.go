// Package telemetry sets up OpenTelemetry tracing for an rcamesh process: a
// TracerProvider with the service's resource and an exporter (none, stdout or
// OTLP/gRPC), and the global W3C TraceContext + Baggage propagator that the
// gRPC stack and the bus use.
package telemetry

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Exporter names.
const (
	ExporterNone   = "none"
	ExporterStdout = "stdout"
	ExporterOTLP   = "otlp"
)

// Config selects where spans go.
type Config struct {
	// Exporter is "none" (spans are created and propagated with their ids,
	// not recorded unless a caller's trace is sampled, not exported),
	// "stdout" (pretty JSON to Writer) or "otlp" (OTLP over gRPC).
	Exporter string
	// Endpoint is the OTLP collector's host:port; empty uses the
	// OTEL_EXPORTER_OTLP_ENDPOINT environment variable or localhost:4317.
	Endpoint string
	// Insecure disables TLS to the OTLP collector.
	Insecure bool
	// ServiceName is the resource's service.name (required).
	ServiceName string
	// ServiceVersion is the resource's service.version.
	ServiceVersion string
	// SampleRatio is the fraction of new traces sampled (parent-based), 0..1.
	SampleRatio float64
	// Writer receives stdout-exporter output; nil means os.Stderr, so that
	// spans never mix with a command's own output on stdout.
	Writer io.Writer
	// Logger receives OpenTelemetry's internal errors; nil discards them.
	Logger *slog.Logger
	// SpanExporter, when set, also receives every span synchronously (tests
	// use go.opentelemetry.io/otel/sdk/trace/tracetest's in-memory exporter).
	SpanExporter sdktrace.SpanExporter
}

// DefaultConfig returns the defaults: no exporter, every trace sampled.
func DefaultConfig() Config {
	return Config{Exporter: ExporterNone, ServiceName: "rcamesh", SampleRatio: 1}
}

// RegisterFlags registers the -telemetry.* flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Exporter, "telemetry.exporter", c.Exporter, "trace exporter: none, stdout or otlp")
	fs.StringVar(&c.Endpoint, "telemetry.endpoint", c.Endpoint, "OTLP/gRPC collector host:port (default: $OTEL_EXPORTER_OTLP_ENDPOINT or localhost:4317)")
	fs.BoolVar(&c.Insecure, "telemetry.insecure", c.Insecure, "connect to the OTLP collector without TLS")
	fs.StringVar(&c.ServiceName, "telemetry.service-name", c.ServiceName, "service.name of the emitted spans")
	fs.Float64Var(&c.SampleRatio, "telemetry.sample-ratio", c.SampleRatio, "fraction of new traces sampled, 0..1")
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch c.Exporter {
	case ExporterNone, ExporterStdout, ExporterOTLP:
	default:
		return fmt.Errorf("telemetry: unknown exporter %q (-telemetry.exporter): want none, stdout or otlp", c.Exporter)
	}
	if strings.TrimSpace(c.ServiceName) == "" {
		return errors.New("telemetry: ServiceName (-telemetry.service-name) is empty")
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("telemetry: SampleRatio (-telemetry.sample-ratio) must be within 0..1, got %g", c.SampleRatio)
	}
	if c.Exporter != ExporterOTLP && c.Endpoint != "" {
		return fmt.Errorf("telemetry: Endpoint (-telemetry.endpoint) is set but the exporter is %q, not otlp", c.Exporter)
	}
	return nil
}

// Propagator is the W3C TraceContext + Baggage propagator Setup installs.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// sampler is parent-based with the configured ratio for new traces. With
// no exporter a new trace is not recorded: its spans still carry trace and
// span ids (the logs' trace_id, the propagated traceparent) but build no
// attributes, events or timings nobody reads (3-5% of a tool call's CPU
// and its allocations, "Speed at the floor, third round" in the README).
// A trace a caller sampled is still recorded, so that the flag it
// propagates downstream stays as the caller set it.
func sampler(cfg Config) sdktrace.Sampler {
	if cfg.Exporter == ExporterNone && cfg.SpanExporter == nil {
		return sdktrace.ParentBased(sdktrace.NeverSample())
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))
}

// Setup installs the global TracerProvider and propagator. The returned
// shutdown flushes pending spans and stops the exporter; call it once on exit.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	attrs := []resource.Option{
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
		resource.WithProcessPID(),
		resource.WithHost(),
	}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}

	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler(cfg)),
	}
	switch cfg.Exporter {
	case ExporterStdout:
		w := cfg.Writer
		if w == nil {
			w = os.Stderr
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
		if err != nil {
			return nil, fmt.Errorf("telemetry: stdout exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithSyncer(exp))
	case ExporterOTLP:
		var eo []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			eo = append(eo, otlptracegrpc.WithEndpoint(cfg.Endpoint))
		}
		if cfg.Insecure {
			eo = append(eo, otlptracegrpc.WithInsecure())
		}
		exp, err := otlptracegrpc.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter to %q: %w", cfg.Endpoint, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.SpanExporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.SpanExporter))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry error", "component", "telemetry", "err", err)
	}))
	logger.Debug("telemetry set up", "component", "telemetry", "exporter", cfg.Exporter, "service", cfg.ServiceName)
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: shutdown: %w", err)
		}
		return nil
	}, nil
}

package bus

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const instrumentationName = "github.com/rcamesh/rcamesh/internal/bus"

// propagator is fixed (not the global one) so trace context always crosses the
// bus in the W3C format, whatever the process configured.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// headerCarrier adapts nats.Header to propagation.TextMapCarrier. It writes the
// lower-case keys the W3C spec uses (NATS headers are case sensitive) and reads
// case-insensitively.
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// InjectTrace writes ctx's trace context and baggage into h.
func InjectTrace(ctx context.Context, h nats.Header) {
	propagator.Inject(ctx, headerCarrier(h))
}

// ExtractTrace returns ctx with the trace context and baggage found in h.
func ExtractTrace(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return propagator.Extract(ctx, headerCarrier(h))
}

func (b *Bus) tracer() trace.Tracer {
	tp := b.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentationName)
}

func (b *Bus) startProducer(ctx context.Context, subject, msgID string) (context.Context, trace.Span) {
	return b.tracer().Start(ctx, "publish "+subjectTemplate(subject),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", msgID),
		))
}

func (b *Bus) startConsumer(ctx context.Context, subject, consumer string, seq uint64) (context.Context, trace.Span) {
	return b.tracer().Start(ctx, "process "+subjectTemplate(subject),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.consumer.group.name", consumer),
			attribute.Int64("messaging.nats.stream_sequence", int64(seq)),
		))
}

// subjectTemplate replaces the session token so span names have low cardinality.
func subjectTemplate(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) > 3 && parts[2] == "session" {
		parts[3] = "{session}"
	}
	return strings.Join(parts, ".")
}

// Package metrics owns every Prometheus metric rcamesh exports. Each process
// serves them at /metrics on its HTTP gateway from the default registry, which
// also carries the Go runtime and process collectors.
//
// Label values are bounded by construction: tool intents of the registry
// (anything else is "other"), guardrail names and owners, enum values
// (outcomes, categories, critic actions), destination kinds, configured
// providers and models, durable consumer names. No session, investigation,
// pod or alert value is ever a label.
package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

const namespace = "rcamesh"

// Investigation outcomes (label "outcome").
const (
	OutcomeConcluded   = "concluded"
	OutcomeNeedsReview = "needs_review"
	OutcomeEscalated   = "escalated"
	OutcomeDegraded    = "degraded"
	OutcomeNoise       = "noise"
	OutcomeFailed      = "failed"
)

// Tool-call results (label "result").
const (
	ToolSuccess  = "success"
	ToolNoData   = "no_data"
	ToolError    = "error"
	ToolTimeout  = "timeout"
	ToolReplayed = "replayed"
)

// Pin revalidation results (label "result").
const (
	PinValidated = "validated"
	PinRejected  = "rejected"
	PinPending   = "pending"
)

// Other is the label value of anything outside a bounded set.
const Other = "other"

// Buckets of the latency histograms (seconds): 1 ms to about 2 minutes.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2.5, 14)

var (
	// InvestigationsStarted counts investigations whose pipeline started (a
	// resumed checkpoint does not count again).
	InvestigationsStarted = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "investigations_started_total",
		Help: "Investigations started.",
	})
	// InvestigationsFinished counts finished investigations by outcome and root-cause category.
	InvestigationsFinished = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "investigations_finished_total",
		Help: "Investigations finished, by outcome (concluded, needs_review, escalated, degraded, noise, failed) and root-cause category.",
	}, []string{"outcome", "category"})
	// InvestigationDuration is the wall time of finished investigations.
	InvestigationDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "investigation_duration_seconds",
		Help:    "Wall time of finished investigations, by outcome.",
		Buckets: latencyBuckets,
	}, []string{"outcome"})
	// ActiveInvestigations is the number of investigations running in this process.
	ActiveInvestigations = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "investigations_active",
		Help: "Investigations whose pipeline is running in this process.",
	})

	// ToolCalls counts tool executions by tool intent and result.
	ToolCalls = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "tool_calls_total",
		Help: "Tool calls, by tool intent and result (success, no_data, error, timeout, replayed).",
	}, []string{"tool", "result"})
	// ToolCallDuration is the latency of tool executions.
	ToolCallDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "tool_call_duration_seconds",
		Help:    "Latency of tool calls (replays excluded), by tool intent.",
		Buckets: latencyBuckets,
	}, []string{"tool"})

	// GuardrailTrips counts guardrails reaching their limit, by guardrail and owning service.
	GuardrailTrips = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "guardrail_trips_total",
		Help: "Guardrail trips recorded in investigations, by guardrail and owning service.",
	}, []string{"guardrail", "owner"})

	// PinsPublished counts evidence pins the tools service published.
	PinsPublished = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "pins_published_total",
		Help: "Evidence pins published to the stream by the tools service.",
	})
	// PinRevalidations counts the critic's revalidations by verdict.
	PinRevalidations = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "pin_revalidations_total",
		Help: "Pins revalidated by the critic, by result (validated, rejected, pending).",
	}, []string{"result"})

	// CriticVerdicts counts hypothesis reviews by the action the critic recommended.
	CriticVerdicts = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "critic_verdicts_total",
		Help: "Critic reviews of hypothesis sets, by recommended action (accept, gather_more, escalate).",
	}, []string{"action"})
	// CriticRounds is the Loop-of-Truth round each review belonged to.
	CriticRounds = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "critic_review_round",
		Help:    "Loop-of-Truth round of each critic review (1 = first review).",
		Buckets: []float64{1, 2, 3, 4, 5},
	})
	// CriticScore is the score of each review.
	CriticScore = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "critic_review_score",
		Help:    "Score (0-1) of each critic review.",
		Buckets: prometheus.LinearBuckets(0.1, 0.1, 10),
	})

	// DeliveryAttempts counts report deliveries by destination kind and result.
	DeliveryAttempts = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "delivery_attempts_total",
		Help: "Report deliveries, by destination kind (slack, webhook) and result (ok, failed).",
	}, []string{"target", "result"})
	// DeliveryTries counts HTTP tries (retries included) by destination kind.
	DeliveryTries = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "delivery_tries_total",
		Help: "HTTP requests made to deliver reports (retries included), by destination kind.",
	}, []string{"target"})

	// ModelCalls counts model calls by provider, model and result.
	ModelCalls = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "model_calls_total",
		Help: "Model calls, by provider, model and result (ok, error).",
	}, []string{"provider", "model", "result"})
	// ModelTokens counts tokens by provider, model and type (input, output).
	ModelTokens = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "model_tokens_total",
		Help: "Tokens used by model calls, by provider, model and type (input, output).",
	}, []string{"provider", "model", "type"})
	// ModelCallDuration is the latency of model calls.
	ModelCallDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "model_call_duration_seconds",
		Help:    "Latency of model calls, by provider and model.",
		Buckets: latencyBuckets,
	}, []string{"provider", "model"})

	// NATSPublished counts JetStream publishes by event kind and result.
	NATSPublished = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nats_published_messages_total",
		Help: "Messages published to JetStream, by event kind (pin, lifecycle, work) and result (ok, duplicate, error).",
	}, []string{"kind", "result"})
	// NATSPublishDuration is the latency of JetStream publishes (until the ack).
	NATSPublishDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "nats_publish_duration_seconds",
		Help:    "Latency of JetStream publishes until acknowledged, by event kind.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 3, 12),
	}, []string{"kind"})
	// NATSConsumerPending is the consumer lag: messages not yet delivered to the durable consumer.
	NATSConsumerPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "nats_consumer_pending_messages",
		Help: "Messages of the stream not yet delivered to the durable consumer (its lag), as of its last delivery.",
	}, []string{"consumer"})
	// NATSConsumed counts messages handled by durable consumers by result.
	NATSConsumed = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nats_consumed_messages_total",
		Help: "Messages handled by durable consumers, by consumer and result (ack, nak, term).",
	}, []string{"consumer", "result"})

	// HistoryWrites counts investigation-history writes by store and result.
	HistoryWrites = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "history_writes_total",
		Help: "Investigations written to the history store, by store (kv, postgres) and result (ok, error).",
	}, []string{"store", "result"})
)

// Label turns s into a bounded label value: s when allowed reports it is
// one of a known set, else Other.
func Label(s string, allowed func(string) bool) string {
	if s == "" {
		return "none"
	}
	if allowed != nil && allowed(s) {
		return s
	}
	return Other
}

// EnumLabel turns a protobuf enum name such as DIAGNOSIS_STATUS_CONCLUDED
// into its lower-case value without the prefix (concluded).
func EnumLabel(name, prefix string) string {
	v := strings.TrimPrefix(name, prefix)
	if v == "" || v == "UNSPECIFIED" {
		return "unspecified"
	}
	return strings.ToLower(v)
}

// ObserveToolCall records one tool call.
func ObserveToolCall(tool, result string, d time.Duration) {
	ToolCalls.WithLabelValues(tool, result).Inc()
	if result != ToolReplayed {
		ToolCallDuration.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// ObserveModelCall records one model call.
func ObserveModelCall(provider, model string, inputTokens, outputTokens int64, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	ModelCalls.WithLabelValues(provider, model, result).Inc()
	ModelCallDuration.WithLabelValues(provider, model).Observe(d.Seconds())
	if inputTokens > 0 {
		ModelTokens.WithLabelValues(provider, model, "input").Add(float64(inputTokens))
	}
	if outputTokens > 0 {
		ModelTokens.WithLabelValues(provider, model, "output").Add(float64(outputTokens))
	}
}

// ObserveInvestigation records one finished investigation.
func ObserveInvestigation(outcome, category string, wall time.Duration) {
	InvestigationsFinished.WithLabelValues(outcome, category).Inc()
	InvestigationDuration.WithLabelValues(outcome).Observe(wall.Seconds())
}

// Identifier reports whether s looks like a name the code declares as a
// constant (a lower-case snake_case word of at most 48 bytes): guardrail
// names, tool intents, consumer names. Free text (details, ids with digits
// and dashes) does not pass, so it never becomes a label value.
func Identifier(s string) bool {
	if s == "" || len(s) > 48 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

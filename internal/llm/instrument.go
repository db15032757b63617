package llm

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/redact"
)

// instrumentationName names the tracer of model-call spans.
const instrumentationName = "github.com/rcamesh/rcamesh/internal/llm"

// AttrPurpose is rcamesh's own attribute naming why a model was called
// (route, react, diagnose, ...).
const AttrPurpose = attribute.Key("rcamesh.llm.purpose")

// maxContentBytes bounds captured prompt and completion content per span.
const maxContentBytes = 16 << 10

// instrumented wraps a provider with OpenTelemetry GenAI spans (semantic
// conventions for generative AI: one "chat <model>" client span per
// completion) and the model metrics of internal/metrics. Content (messages
// and completions) is recorded only when captureContent is set, and then
// redacted.
type instrumented struct {
	p              Provider
	captureContent bool
}

// Instrument wraps p; New does it for every provider it builds. A nil p stays nil.
func Instrument(p Provider, captureContent bool) Provider {
	if p == nil {
		return nil
	}
	if i, ok := p.(*instrumented); ok {
		return &instrumented{p: i.p, captureContent: captureContent}
	}
	return &instrumented{p: p, captureContent: captureContent}
}

// CapturesContent reports whether p records prompt and completion content in spans.
func CapturesContent(p Provider) bool {
	i, ok := p.(*instrumented)
	return ok && i.captureContent
}

func (i *instrumented) Name() string  { return i.p.Name() }
func (i *instrumented) Model() string { return i.p.Model() }

// base reaches the adapter's shared core (contract tests tune retries through it).
func (i *instrumented) base() *core {
	if b, ok := i.p.(interface{ base() *core }); ok {
		return b.base()
	}
	return nil
}

func tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(instrumentationName) }

// providerAttr is gen_ai.provider.name: the well-known "openai" for both
// adapters' wire protocol when it is OpenAI's, else the configured name.
func providerAttr(name string) attribute.KeyValue {
	if name == ProviderOpenAI {
		return semconv.GenAIProviderNameOpenAI
	}
	return semconv.GenAIProviderNameKey.String(name)
}

// Complete runs one completion inside a GenAI client span.
func (i *instrumented) Complete(ctx context.Context, req Request) (Response, error) {
	model := i.p.Model()
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		providerAttr(i.p.Name()),
		semconv.GenAIRequestModel(model),
		AttrPurpose.String(req.Purpose),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.ResponseSchema != nil {
		attrs = append(attrs, semconv.GenAIOutputTypeJSON)
	}
	ctx, span := tracer().Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	if i.captureContent {
		span.SetAttributes(semconv.GenAIInputMessagesKey.String(contentJSON(inputMessages(req.Messages))))
		if defs := toolDefinitions(req.Tools); len(defs) > 0 {
			span.SetAttributes(semconv.GenAIToolDefinitionsKey.String(contentJSON(defs)))
		}
	}

	start := time.Now()
	resp, err := i.p.Complete(ctx, req)
	metrics.ObserveModelCall(i.p.Name(), model, resp.Usage.PromptTokens, resp.Usage.CompletionTokens, time.Since(start), err)

	if resp.Model != "" {
		span.SetAttributes(semconv.GenAIResponseModel(resp.Model))
	}
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(int(resp.Usage.PromptTokens)),
		semconv.GenAIUsageOutputTokens(int(resp.Usage.CompletionTokens)),
	)
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(resp.FinishReason))
	}
	if i.captureContent && err == nil {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(contentJSON([]genAIMessage{outputMessage(resp)})))
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, errorType(err))
	}
	return resp, err
}

// errorType is error.type: the class of a model-call failure, never its text
// (which may quote the request).
func errorType(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{ErrRateLimited, "rate_limited"}, {ErrServer, "server_error"}, {ErrTimeout, "timeout"},
		{ErrBadResponse, "bad_response"}, {ErrUnknownTool, "unknown_tool"}, {ErrBadRequest, "bad_request"}, {ErrAuth, "auth"},
		{context.Canceled, "canceled"}, {context.DeadlineExceeded, "timeout"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "_OTHER"
}

// StartToolSpan starts the GenAI "execute_tool <name>" span of one tool call
// a model asked for. With captureContent the (redacted) arguments are
// recorded; end records the (redacted) result the model is given.
func StartToolSpan(ctx context.Context, tc ToolCall, captureContent bool) (context.Context, func(result string, err error)) {
	ctx, span := tracer().Start(ctx, "execute_tool "+tc.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(tc.Name),
		semconv.GenAIToolCallID(tc.ID),
		semconv.GenAIToolType("function"),
	))
	if captureContent {
		span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(clip(redact.Text(tc.Arguments))))
	}
	return ctx, func(result string, err error) {
		if captureContent && result != "" {
			span.SetAttributes(semconv.GenAIToolCallResultKey.String(clip(redact.Text(result))))
		}
		if err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
			span.SetStatus(codes.Error, "tool_error")
		}
		span.End()
	}
}

// genAIMessage is the JSON shape of gen_ai.input.messages and
// gen_ai.output.messages (role plus typed parts).
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

type genAIPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

func messageParts(m Message) []genAIPart {
	var parts []genAIPart
	if m.Role == RoleTool {
		return []genAIPart{{Type: "tool_call_response", ID: m.ToolCallID, Response: redact.Text(m.Content)}}
	}
	if m.Content != "" {
		parts = append(parts, genAIPart{Type: "text", Content: redact.Text(m.Content)})
	}
	for _, tc := range m.ToolCalls {
		parts = append(parts, genAIPart{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: redact.Text(tc.Arguments)})
	}
	return parts
}

func inputMessages(msgs []Message) []genAIMessage {
	out := make([]genAIMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, genAIMessage{Role: m.Role, Parts: messageParts(m)})
	}
	return out
}

func outputMessage(resp Response) genAIMessage {
	return genAIMessage{Role: RoleAssistant, Parts: messageParts(resp.Message), FinishReason: resp.FinishReason}
}

func toolDefinitions(tools []ToolSchema) []map[string]string {
	out := make([]map[string]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, map[string]string{"type": "function", "name": t.Name})
	}
	return out
}

// contentJSON encodes captured content, clipped to maxContentBytes.
func contentJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return clip(string(b))
}

func clip(s string) string {
	if len(s) <= maxContentBytes {
		return s
	}
	cut := maxContentBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…[truncated]"
}

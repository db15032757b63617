package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rcamesh/rcamesh/internal/app"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

const genAIFinal = `{"root_cause":"Release v2 of orders-api broke its database query","root_cause_category":"code_defect",` +
	`"root_cause_entity":"deployment/retail/orders-api","confidence":0.82,"causal_chain":["release","errors"],` +
	`"remediation_steps":["roll back orders-api"]}`

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestGenAISpans runs a model-loop investigation of the demo scenario
// against the scripted model server and reads the spans from an in-memory
// exporter: one "chat" span per model call with the OpenTelemetry GenAI
// attributes, one "execute_tool" span per tool the model asked for, all in
// the investigation's trace; content only with -llm.trace-content, and then
// redacted.
func TestGenAISpans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-Sup3rS3cret"
	for _, capture := range []bool{false, true} {
		name := "content off"
		if capture {
			name = "content on"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t,
				llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "c1", Name: "check_pod_status", Arguments: `{"namespace":"retail"}`}},
					PromptTokens: 321, CompletionTokens: 17},
				llmtest.Turn{Text: "password=" + secret + "\n```json\n" + genAIFinal + "\n```", PromptTokens: 654, CompletionTokens: 45},
			)
			set, err := fixture.New(sc, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			exp := tracetest.NewInMemoryExporter()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"-llm.provider=openai-compatible", "-llm.base-url=" + srv.BaseURL(), "-llm.model=scripted",
				"-llm.max-retries=0", "-llm.timeout=5s"}
			if capture {
				args = append(args, "-llm.trace-content")
			}
			m, err := startMeshWith(ctx, set, filepath.Join(t.TempDir(), "data"), slog.New(slog.DiscardHandler), args,
				func(c *app.Config) { c.Telemetry.SpanExporter = exp })
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.investigateAlert(ctx, sc.AlertRaw, sc.ID)
			// Read before stopping: shutting the provider down resets the exporter.
			spans := exp.GetSpans()
			if stopErr := m.stop(); stopErr != nil {
				t.Errorf("stop: %v", stopErr)
			}
			if err != nil {
				t.Fatal(err)
			}
			var chats, tools []tracetest.SpanStub
			var submit *tracetest.SpanStub
			for i, s := range spans {
				a := attrs(s)
				switch a["gen_ai.operation.name"].AsString() {
				case "chat":
					chats = append(chats, s)
				case "execute_tool":
					tools = append(tools, s)
				}
				if s.Name == "rcamesh.brain.v1.BrainService/SubmitAlert" && s.SpanKind == trace.SpanKindServer {
					submit = &spans[i]
				}
			}
			if len(chats) < 2 || len(tools) != 1 || submit == nil {
				var names []string
				for _, s := range spans {
					names = append(names, s.Name)
				}
				t.Fatalf("%d chat spans, %d tool spans, submit %v; spans: %s", len(chats), len(tools), submit != nil, strings.Join(names, ", "))
			}
			var in, out int64
			var finish []string
			for _, c := range chats {
				a := attrs(c)
				if c.Name != "chat scripted" || c.SpanKind != trace.SpanKindClient || a["gen_ai.request.model"].AsString() != "scripted" ||
					a["gen_ai.provider.name"].AsString() != "openai-compatible" {
					t.Errorf("chat span %q kind %v attrs %v", c.Name, c.SpanKind, a)
				}
				in += a["gen_ai.usage.input_tokens"].AsInt64()
				out += a["gen_ai.usage.output_tokens"].AsInt64()
				finish = append(finish, a["gen_ai.response.finish_reasons"].AsStringSlice()...)
				// Joined to the investigation's trace: the alert's submission.
				if c.SpanContext.TraceID() != submit.SpanContext.TraceID() {
					t.Errorf("chat span in trace %s, the investigation is in %s", c.SpanContext.TraceID(), submit.SpanContext.TraceID())
				}
				_, hasIn := a["gen_ai.input.messages"]
				_, hasOut := a["gen_ai.output.messages"]
				failed := c.Status.Code == codes.Error
				if failed && a["error.type"].AsString() == "" {
					t.Errorf("failed chat span without error.type: %v", a)
				}
				if hasIn != capture || hasOut != (capture && !failed) {
					t.Errorf("content recorded %v/%v with capture %v (failed call: %v)", hasIn, hasOut, capture, failed)
				}
				for _, k := range []attribute.Key{"gen_ai.input.messages", "gen_ai.output.messages"} {
					if strings.Contains(a[k].AsString(), secret) {
						t.Errorf("a secret reached %s: %s", k, a[k].AsString())
					}
				}
				if capture && !failed && !strings.Contains(strings.ToLower(a["gen_ai.output.messages"].AsString()), "redacted") &&
					strings.Contains(a["gen_ai.output.messages"].AsString(), "password") {
					t.Errorf("output content not redacted: %s", a["gen_ai.output.messages"].AsString())
				}
			}
			if in < 321+654 || out < 17+45 {
				t.Errorf("tokens in spans: input %d output %d", in, out)
			}
			if strings.Join(finish, ",") != "tool_calls,stop" && !strings.HasPrefix(strings.Join(finish, ","), "tool_calls,stop") {
				t.Errorf("finish reasons %v", finish)
			}
			ta := attrs(tools[0])
			if tools[0].Name != "execute_tool check_pod_status" || ta["gen_ai.tool.name"].AsString() != "check_pod_status" ||
				ta["gen_ai.tool.call.id"].AsString() != "c1" || tools[0].SpanContext.TraceID() != submit.SpanContext.TraceID() {
				t.Errorf("tool span %q attrs %v", tools[0].Name, ta)
			}
			if _, ok := ta["gen_ai.tool.call.arguments"]; ok != capture {
				t.Errorf("tool arguments recorded %v with capture %v", ok, capture)
			}
			// The tool span sits in the model loop beside the chat spans.
			if tools[0].Parent.SpanID() != chats[0].Parent.SpanID() {
				t.Errorf("tool span parent %s, chat spans' parent %s", tools[0].Parent.SpanID(), chats[0].Parent.SpanID())
			}
		})
	}
}

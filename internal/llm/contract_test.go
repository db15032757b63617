package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
)

var adapters = []string{ProviderOpenAI, ProviderOpenAICompatible}

const testKey = "sk-llmtest-SUPERSECRET-0123456789abcdef"

// newTestProvider builds a provider against srv with fast retries.
func newTestProvider(t *testing.T, name string, srv *llmtest.Server, mutate func(*Config), logger *slog.Logger) Provider {
	t.Helper()
	cfg := Config{Provider: name, Model: "test-model", BaseURL: srv.BaseURL(), APIKey: testKey, Timeout: 5 * time.Second, MaxRetries: 2}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := New(cfg, logger)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	c := p.(interface{ base() *core }).base()
	c.policy.baseBackoff = time.Millisecond
	c.policy.maxBackoff = 2 * time.Millisecond
	return p
}

var weatherTool = ToolSchema{
	Name:        "fetch_pod_logs",
	Description: "Fetch logs of a pod",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pod":       map[string]any{"type": "string"},
			"namespace": map[string]any{"type": []any{"string", "null"}},
			"tail":      map[string]any{"type": "integer", "default": 100},
		},
		"required": []any{"pod"},
	},
}

func userReq(tools ...ToolSchema) Request {
	return Request{
		Messages: []Message{{Role: RoleSystem, Content: "You are an SRE."}, {Role: RoleUser, Content: "why is checkout down?"}},
		Tools:    tools,
		Purpose:  "test",
	}
}

func TestContractToolCallRoundTrip(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t,
				llmtest.Turn{ToolCalls: []llmtest.Call{{ID: "call_A", Name: "fetch_pod_logs", Arguments: `{"pod":"web-1","namespace":"","tail":50}`}}, PromptTokens: 123, CompletionTokens: 45},
				llmtest.Turn{Text: "The pod is crash looping.", PromptTokens: 200, CompletionTokens: 20},
			)
			p := newTestProvider(t, name, srv, nil, nil)
			ctx := context.Background()
			req := userReq(weatherTool)
			resp, err := p.Complete(ctx, req)
			if err != nil {
				t.Fatalf("first Complete: %v", err)
			}
			if got := resp.Usage; got.PromptTokens != 123 || got.CompletionTokens != 45 {
				t.Errorf("usage = %+v, want 123/45", got)
			}
			if resp.FinishReason != "tool_calls" || resp.Model != "test-model" {
				t.Errorf("finish=%q model=%q", resp.FinishReason, resp.Model)
			}
			if len(resp.Message.ToolCalls) != 1 {
				t.Fatalf("tool calls = %+v", resp.Message.ToolCalls)
			}
			tc := resp.Message.ToolCalls[0]
			if tc.ID != "call_A" || tc.Name != "fetch_pod_logs" {
				t.Errorf("tool call = %+v", tc)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args["pod"] != "web-1" {
				t.Errorf("arguments %q: %v", tc.Arguments, err)
			}

			req.Messages = append(req.Messages, resp.Message, Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: "OOMKilled"})
			resp2, err := p.Complete(ctx, req)
			if err != nil {
				t.Fatalf("second Complete: %v", err)
			}
			if resp2.Message.Content != "The pod is crash looping." || resp2.Usage.PromptTokens != 200 {
				t.Errorf("second response = %+v", resp2)
			}

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("server saw %d requests", len(reqs))
			}
			if reqs[0].Path != "/v1/chat/completions" {
				t.Errorf("path = %s", reqs[0].Path)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization header not sent as bearer key")
			}
			msgs := reqs[1].Messages()
			if len(msgs) != 4 {
				t.Fatalf("second request has %d messages", len(msgs))
			}
			calls := msgs[2]["tool_calls"].([]any)
			callID := calls[0].(map[string]any)["id"]
			if callID != "call_A" || msgs[3]["tool_call_id"] != "call_A" || msgs[3]["role"] != "tool" {
				t.Errorf("ids not consistent: assistant call %v, tool message %v", callID, msgs[3])
			}
			// The tool schema sent is the adapter's normalized one.
			fn := reqs[0].Tools()[0]["function"].(map[string]any)
			params := fn["parameters"].(map[string]any)
			switch name {
			case ProviderOpenAI:
				if fn["strict"] != true {
					t.Errorf("openai tool not strict: %v", fn)
				}
				if err := ValidateStrict(params); err != nil {
					t.Errorf("sent schema not strict: %v", err)
				}
			case ProviderOpenAICompatible:
				ns := params["properties"].(map[string]any)["namespace"].(map[string]any)
				if ns["type"] != "string" {
					t.Errorf("compatible schema kept type array: %v", ns)
				}
				if req := params["required"].([]any); len(req) != 1 {
					t.Errorf("compatible schema required = %v, want only pod", req)
				}
			}
		})
	}
}

func TestContractErrors(t *testing.T) {
	cases := []struct {
		name      string
		turns     []llmtest.Turn
		mutate    func(*Config)
		wantErr   error
		wantResp  bool // the response is returned alongside the error
		wantReqs  int
		checkResp func(t *testing.T, r Response)
	}{
		{
			name:    "malformed arguments",
			turns:   []llmtest.Turn{llmtest.Tools(llmtest.Call{ID: "c1", Name: "fetch_pod_logs", Arguments: `{"pod": "web-1", `})},
			wantErr: ErrBadResponse, wantResp: true, wantReqs: 1,
		},
		{
			name:     "repairable arguments",
			turns:    []llmtest.Turn{llmtest.Tools(llmtest.Call{ID: "c1", Name: "fetch_pod_logs", Arguments: "```json\n{\"pod\": \"web-1\",}\n```\nI will call it."})},
			wantReqs: 1,
			checkResp: func(t *testing.T, r Response) {
				if got := r.Message.ToolCalls[0].Arguments; got != `{"pod":"web-1"}` {
					t.Errorf("repaired arguments = %s", got)
				}
			},
		},
		{
			name:    "unknown tool",
			turns:   []llmtest.Turn{llmtest.Tools(llmtest.Call{ID: "c1", Name: "rm_rf", Arguments: `{}`})},
			wantErr: ErrUnknownTool, wantResp: true, wantReqs: 1,
			checkResp: func(t *testing.T, r Response) {
				if r.Message.ToolCalls[0].Name != "rm_rf" {
					t.Errorf("unknown call not returned: %+v", r.Message.ToolCalls)
				}
			},
		},
		{
			name:     "missing ids are generated",
			turns:    []llmtest.Turn{llmtest.Tools(llmtest.Call{Name: "fetch_pod_logs", Arguments: `{"pod":"a"}`}, llmtest.Call{Name: "fetch_pod_logs", Arguments: `{"pod":"b"}`})},
			wantReqs: 1,
			checkResp: func(t *testing.T, r Response) {
				a, b := r.Message.ToolCalls[0].ID, r.Message.ToolCalls[1].ID
				if a == "" || b == "" || a == b {
					t.Errorf("generated ids %q %q", a, b)
				}
			},
		},
		{
			name:     "429 then success",
			turns:    []llmtest.Turn{{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfterMs: "1"}, llmtest.Text("ok")},
			wantReqs: 3,
			checkResp: func(t *testing.T, r Response) {
				if r.Message.Content != "ok" {
					t.Errorf("content = %q", r.Message.Content)
				}
			},
		},
		{
			name:    "429 exhausted",
			turns:   []llmtest.Turn{{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}},
			wantErr: ErrRateLimited, wantReqs: 3,
		},
		{
			name:    "429 retry-after beyond bound gives up at once",
			turns:   []llmtest.Turn{{Status: 429, RetryAfter: "3600"}, llmtest.Text("never")},
			wantErr: ErrRateLimited, wantReqs: 1,
		},
		{
			name:    "500 exhausted after max retries",
			turns:   []llmtest.Turn{{Status: 500}, {Status: 502}, {Status: 503}, llmtest.Text("never")},
			wantErr: ErrServer, wantReqs: 3,
		},
		{
			name:     "500 then success",
			turns:    []llmtest.Turn{{Status: 500}, llmtest.Text("recovered")},
			wantReqs: 2,
		},
		{
			name:    "400 not retried",
			turns:   []llmtest.Turn{{Status: 400, ErrorMessage: "invalid tools"}, llmtest.Text("never")},
			wantErr: ErrBadRequest, wantReqs: 1,
		},
		{
			name:    "401 auth",
			turns:   []llmtest.Turn{{Status: 401}},
			wantErr: ErrAuth, wantReqs: 1,
		},
		{
			name:    "timeout",
			turns:   []llmtest.Turn{{Delay: time.Minute, Text: "late"}},
			mutate:  func(c *Config) { c.Timeout = 50 * time.Millisecond },
			wantErr: ErrTimeout, wantReqs: 1,
		},
		{
			name:    "empty choices",
			turns:   []llmtest.Turn{{NoChoices: true}},
			wantErr: ErrBadResponse, wantReqs: 1,
		},
		{
			name:    "malformed body",
			turns:   []llmtest.Turn{{Raw: `{"choices": [ {"message": `}},
			wantErr: ErrBadResponse, wantReqs: 1,
		},
	}
	for _, name := range adapters {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				srv := llmtest.New(t, tc.turns...)
				p := newTestProvider(t, name, srv, tc.mutate, nil)
				resp, err := p.Complete(context.Background(), userReq(weatherTool))
				if tc.wantErr == nil && err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				if tc.wantResp && len(resp.Message.ToolCalls) == 0 {
					t.Errorf("response not returned with the error: %+v", resp)
				}
				if tc.wantReqs > 0 {
					if got := len(srv.Requests()); got != tc.wantReqs {
						t.Errorf("server saw %d requests, want %d", got, tc.wantReqs)
					}
				}
				if tc.checkResp != nil && (err == nil || tc.wantResp) {
					tc.checkResp(t, resp)
				}
			})
		}
	}
}

func TestContractParentContext(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Turn{Delay: time.Minute})
			p := newTestProvider(t, name, srv, nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := p.Complete(ctx, userReq())
				done <- err
			}()
			if !srv.WaitRequests(1, 10*time.Second) {
				t.Fatal("request never arrived")
			}
			cancel()
			err := <-done
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v, want ErrTimeout wrapping context.Canceled", err)
			}
		})
	}
}

func TestContractEndlessToolCaller(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Endless("", `{"pod":"web-1"}`)
			p := newTestProvider(t, name, srv, nil, nil)
			req := userReq(weatherTool)
			const loops = 5
			seen := map[string]bool{}
			for i := range loops {
				resp, err := p.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("loop %d: %v", i, err)
				}
				if len(resp.Message.ToolCalls) != 1 {
					t.Fatalf("loop %d: want one tool call, got %+v", i, resp.Message)
				}
				tc := resp.Message.ToolCalls[0]
				if seen[tc.ID] {
					t.Fatalf("loop %d: id %s repeated", i, tc.ID)
				}
				seen[tc.ID] = true
				req.Messages = append(req.Messages, resp.Message, Message{Role: RoleTool, ToolCallID: tc.ID, Content: "same logs"})
			}
			last := srv.Requests()[loops-1]
			if got := len(last.Messages()); got != 2+2*(loops-1) {
				t.Errorf("last request carried %d messages", got)
			}
		})
	}
}

func TestContractStructuredOutput(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"root_cause": map[string]any{"type": "string"},
			"confidence": map[string]any{"type": "number"},
			"category":   map[string]any{"enum": []any{"resource", "deploy", "dependency"}},
		},
		"required": []any{"root_cause", "confidence", "category"},
	}
	cases := []struct {
		name    string
		answer  string
		wantErr error
		want    string
	}{
		{"clean", `{"root_cause":"OOM","confidence":0.9,"category":"resource"}`, nil, `{"category":"resource","confidence":0.9,"root_cause":"OOM"}`},
		{"fenced with prose", "Here you go:\n```json\n{\"root_cause\":\"OOM\",\"confidence\":0.9,\"category\":\"resource\"}\n```", nil, `{"category":"resource","confidence":0.9,"root_cause":"OOM"}`},
		{"missing field", `{"root_cause":"OOM","category":"resource"}`, ErrBadResponse, ""},
		{"enum violated", `{"root_cause":"OOM","confidence":0.9,"category":"cosmic rays"}`, ErrBadResponse, ""},
		{"not json", `I think it was OOM.`, ErrBadResponse, ""},
	}
	for _, name := range adapters {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				srv := llmtest.New(t, llmtest.Text(tc.answer))
				p := newTestProvider(t, name, srv, nil, nil)
				req := userReq()
				req.ResponseSchema, req.SchemaName = schema, "diagnosis"
				resp, err := p.Complete(context.Background(), req)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("error = %v, want %v", err, tc.wantErr)
					}
				} else if err != nil {
					t.Fatal(err)
				} else if resp.Message.Content != tc.want {
					t.Errorf("content = %s, want %s", resp.Message.Content, tc.want)
				}
				rf := srv.Requests()[0].ResponseFormat()
				switch name {
				case ProviderOpenAI:
					js, _ := rf["json_schema"].(map[string]any)
					if rf["type"] != "json_schema" || js["name"] != "diagnosis" || js["strict"] != true {
						t.Fatalf("response_format = %v", rf)
					}
					if err := ValidateStrict(js["schema"].(map[string]any)); err != nil {
						t.Errorf("sent schema not strict: %v", err)
					}
				case ProviderOpenAICompatible:
					if rf["type"] != "json_object" {
						t.Fatalf("response_format = %v", rf)
					}
					msgs := srv.Requests()[0].Messages()
					found := false
					for _, m := range msgs {
						if c, _ := m["content"].(string); m["role"] == "system" && strings.Contains(c, `"root_cause"`) && strings.Contains(c, "JSON") {
							found = true
						}
					}
					if !found {
						t.Errorf("schema not in a system message: %v", msgs)
					}
				}
			})
		}
	}
}

func TestContractRequestValidation(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t)
			p := newTestProvider(t, name, srv, nil, nil)
			req := userReq(weatherTool)
			req.Messages = append(req.Messages, Message{Role: RoleTool, ToolCallID: "call_nobody", Content: "x"})
			_, err := p.Complete(context.Background(), req)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "call_nobody") {
				t.Fatalf("error = %v, want ErrBadRequest naming call_nobody", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("invalid request was sent (%d requests)", n)
			}
		})
	}
}

// The API key must never reach a log line or an error string, even when the
// server echoes it back.
func TestSecretNeverLogged(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			srv := llmtest.New(t,
				llmtest.Turn{Status: 500, ErrorMessage: "upstream said: Authorization: Bearer " + testKey},
				llmtest.Turn{Status: 401, ErrorMessage: "Incorrect API key provided: " + testKey + "."},
			)
			p := newTestProvider(t, name, srv, nil, logger)
			_, err := p.Complete(context.Background(), userReq(weatherTool))
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("error = %v, want ErrAuth", err)
			}
			all := err.Error() + "\n" + fmt.Sprintf("%v %+v %#v", err, err, err) + "\n" + logs.String()
			if strings.Contains(all, testKey) || strings.Contains(all, "SUPERSECRET") {
				t.Fatalf("secret leaked:\n%s", all)
			}
			if !strings.Contains(logs.String(), "retrying") {
				t.Errorf("expected a retry log line, got:\n%s", logs.String())
			}
			if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("key was not sent to the server")
			}
		})
	}
}

func TestChatCompletionsWithoutV1(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("hi"))
	p, err := New(Config{Provider: ProviderOpenAICompatible, Model: "m", BaseURL: srv.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), userReq()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Path; got != "/chat/completions" {
		t.Errorf("path = %s", got)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); strings.TrimSpace(strings.TrimPrefix(got, "Bearer")) != "" {
		t.Errorf("unexpected Authorization %q without a key", got)
	}
	_ = http.StatusOK
}

func TestContractConcurrentUse(t *testing.T) {
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Endless("fetch_pod_logs", `{"pod":"p"}`)
			p := newTestProvider(t, name, srv, nil, nil)
			const n = 8
			errs := make(chan error, n)
			for range n {
				go func() {
					_, err := p.Complete(context.Background(), userReq(weatherTool))
					errs <- err
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if got := len(srv.Requests()); got != n {
				t.Errorf("server saw %d requests, want %d", got, n)
			}
		})
	}
}

func BenchmarkCompleteRoundTrip(b *testing.B) {
	for _, name := range adapters {
		b.Run(name, func(b *testing.B) {
			srv, err := llmtest.Start()
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			srv.Endless("fetch_pod_logs", `{"pod":"p"}`)
			p, err := New(Config{Provider: name, Model: "m", BaseURL: srv.BaseURL(), APIKey: "k", Timeout: 5 * time.Second}, nil)
			if err != nil {
				b.Fatal(err)
			}
			req := userReq(weatherTool)
			for b.Loop() {
				if _, err := p.Complete(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

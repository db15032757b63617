// Package llmtest is an in-process OpenAI-compatible chat-completions server
// for tests. It listens on 127.0.0.1:0 over real HTTP, serves
// POST /v1/chat/completions and POST /chat/completions, replays a script of
// turns (answers, tool calls, malformed arguments, unknown tools, 429, 5xx,
// delays) and records every request it receives.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Call is a scripted tool call. An empty ID simulates a server that omits ids.
type Call struct {
	ID        string
	Name      string
	Arguments string // sent verbatim, so it may be malformed on purpose
}

// Turn is one scripted reply.
type Turn struct {
	Text      string // assistant content
	ToolCalls []Call
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// PromptTokens/CompletionTokens reported in usage (defaults 10 and 5).
	PromptTokens, CompletionTokens int64
	// Status, when not 0 or 200, answers with an OpenAI-style error body.
	Status       int
	ErrorMessage string
	// RetryAfter is sent as the Retry-After header (e.g. "0", "1", an HTTP date).
	RetryAfter string
	// RetryAfterMs is sent as the retry-after-ms header when not empty.
	RetryAfterMs string
	// Delay holds the reply back; the handler returns early when the client
	// goes away (so a client timeout ends the request).
	Delay time.Duration
	// Raw, when set, is written verbatim as a 200 body (malformed responses).
	Raw string
	// NoChoices answers 200 with an empty choices array.
	NoChoices bool
	// Model overrides the model reported (default: the requested model).
	Model string
}

// Text returns a turn answering with text.
func Text(s string) Turn { return Turn{Text: s} }

// Tools returns a turn asking for tool calls.
func Tools(calls ...Call) Turn { return Turn{ToolCalls: calls} }

// Status returns an error turn, e.g. Status(429, "0").
func Status(code int, retryAfter string) Turn { return Turn{Status: code, RetryAfter: retryAfter} }

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// JSON is the decoded body (nil when it did not decode).
	JSON map[string]any
	// Turn is the index of the scripted turn used to answer (-1: endless or exhausted).
	Turn int
}

// Messages returns the decoded messages of the request.
func (r Request) Messages() []map[string]any { return listOfMaps(r.JSON["messages"]) }

// Tools returns the decoded tool definitions of the request.
func (r Request) Tools() []map[string]any { return listOfMaps(r.JSON["tools"]) }

// ResponseFormat returns the decoded response_format (nil when absent).
func (r Request) ResponseFormat() map[string]any {
	m, _ := r.JSON["response_format"].(map[string]any)
	return m
}

func listOfMaps(v any) []map[string]any {
	l, _ := v.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// Server is the scripted server.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []Turn
	next     int
	requests []Request
	endless  *Call
	callSeq  int
	notify   chan struct{}
}

// Start starts a server on 127.0.0.1:0 with the given script. Call Close.
func Start(turns ...Turn) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen: %w", err)
	}
	s := &Server{script: append([]Turn(nil), turns...), notify: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle)
	mux.HandleFunc("POST /chat/completions", s.handle)
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	s.srv.Start()
	return s, nil
}

// New starts a server and closes it when the test ends.
func New(tb testing.TB, turns ...Turn) *Server {
	tb.Helper()
	s, err := Start(turns...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server root (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the API base with /v1, as clients expect it.
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Endless switches to the endless tool-caller mode once the script is used
// up: every further request is answered with one more call of tool (the
// first offered tool when tool is "") with args (default "{}"), each with a
// fresh id.
func (s *Server) Endless(tool, args string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if args == "" {
		args = "{}"
	}
	s.endless = &Call{Name: tool, Arguments: args}
}

// Requests returns a copy of the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining reports how many scripted turns are unused.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// WaitRequests blocks until at least n requests were received or the timeout
// passes, and reports whether they were.
func (s *Server) WaitRequests(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, ch := len(s.requests), s.notify
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Turn: -1}
	_ = json.Unmarshal(body, &rec.JSON)

	s.mu.Lock()
	var turn Turn
	have := false
	if s.next < len(s.script) {
		turn, rec.Turn, have = s.script[s.next], s.next, true
		s.next++
	} else if s.endless != nil {
		s.callSeq++
		name := s.endless.Name
		if name == "" {
			for _, t := range rec.Tools() {
				if fn, ok := t["function"].(map[string]any); ok {
					name, _ = fn["name"].(string)
					break
				}
			}
		}
		turn = Tools(Call{ID: fmt.Sprintf("call_endless_%d", s.callSeq), Name: name, Arguments: s.endless.Arguments})
		have = true
	}
	s.requests = append(s.requests, rec)
	close(s.notify)
	s.notify = make(chan struct{})
	s.mu.Unlock()

	if !have {
		writeError(w, http.StatusBadRequest, "llmtest: script exhausted (no scripted turn left)", "invalid_request_error")
		return
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if turn.RetryAfter != "" {
		w.Header().Set("Retry-After", turn.RetryAfter)
	}
	if turn.RetryAfterMs != "" {
		w.Header().Set("retry-after-ms", turn.RetryAfterMs)
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		msg := turn.ErrorMessage
		if msg == "" {
			msg = http.StatusText(turn.Status)
		}
		typ := "server_error"
		if turn.Status == http.StatusTooManyRequests {
			typ = "rate_limit_exceeded"
		} else if turn.Status < 500 {
			typ = "invalid_request_error"
		}
		writeError(w, turn.Status, msg, typ)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if turn.Raw != "" {
		_, _ = io.WriteString(w, turn.Raw)
		return
	}
	model := turn.Model
	if model == "" {
		model, _ = rec.JSON["model"].(string)
	}
	_ = json.NewEncoder(w).Encode(completion(turn, model))
}

func writeError(w http.ResponseWriter, status int, msg, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": strconv.Itoa(status)},
	})
}

func completion(t Turn, model string) map[string]any {
	pt, ct := t.PromptTokens, t.CompletionTokens
	if pt == 0 {
		pt = 10
	}
	if ct == 0 {
		ct = 5
	}
	out := map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   model,
		"usage":   map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
		"choices": []any{},
	}
	if t.NoChoices {
		return out
	}
	msg := map[string]any{"role": "assistant", "content": t.Text}
	finish := t.FinishReason
	if len(t.ToolCalls) > 0 {
		if t.Text == "" {
			msg["content"] = nil
		}
		calls := make([]any, 0, len(t.ToolCalls))
		for i, c := range t.ToolCalls {
			call := map[string]any{
				"index":    i,
				"type":     "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			}
			if c.ID != "" {
				call["id"] = c.ID
			}
			calls = append(calls, call)
		}
		msg["tool_calls"] = calls
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	out["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}
	return out
}

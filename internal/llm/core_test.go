package llm

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestValidateRequest(t *testing.T) {
	sys := Message{Role: RoleSystem, Content: "s"}
	user := Message{Role: RoleUser, Content: "u"}
	call := func(ids ...string) Message {
		m := Message{Role: RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "t", Arguments: `{}`})
		}
		return m
	}
	result := func(id string) Message { return Message{Role: RoleTool, ToolCallID: id, Content: "r"} }
	cases := []struct {
		name string
		req  Request
		want string // "" = valid
	}{
		{"valid round trip", Request{Messages: []Message{sys, user, call("a", "b"), result("b"), result("a"), user}}, ""},
		{"no messages", Request{}, "no messages"},
		{"orphan tool result", Request{Messages: []Message{user, result("x")}}, `"x" has no preceding assistant tool call`},
		{"answered twice", Request{Messages: []Message{user, call("a"), result("a"), result("a")}}, "answered twice"},
		{"unanswered before user", Request{Messages: []Message{user, call("a", "b"), result("a"), user}}, "tool call(s) b of messages[1] have no tool result"},
		{"unanswered at end", Request{Messages: []Message{user, call("a")}}, "tool call(s) a"},
		{"empty call id", Request{Messages: []Message{user, call("")}}, "empty id"},
		{"duplicate pending id", Request{Messages: []Message{user, call("a", "a")}}, "duplicate tool call id"},
		{"tool message without id", Request{Messages: []Message{user, {Role: RoleTool}}}, "without tool_call_id"},
		{"bad role", Request{Messages: []Message{{Role: "developer"}}}, `unknown role "developer"`},
		{"bad tool name", Request{Messages: []Message{user}, Tools: []ToolSchema{{Name: "has space"}}}, `name "has space"`},
		{"duplicate tool", Request{Messages: []Message{user}, Tools: []ToolSchema{{Name: "a"}, {Name: "a"}}}, "duplicate tool name"},
		{"bad historical args", Request{Messages: []Message{user, {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "t", Arguments: "{"}}}, result("a")}}, "not a JSON object"},
		{"reused id after answer is fine", Request{Messages: []Message{user, call("a"), result("a"), call("a"), result("a")}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateRequest(tc.req)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadRequest containing %q", err, tc.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{"fractional", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"ms wins", map[string]string{"Retry-After": "2", "retry-after-ms": "150"}, 150 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := parseRetryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %s,%v want %s,%v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffBounded(t *testing.T) {
	p := defaultPolicy(5)
	for n := 1; n <= 40; n++ {
		d := p.backoff(n)
		if d < p.baseBackoff/2 || d > p.maxBackoff {
			t.Fatalf("backoff(%d) = %s outside [%s, %s]", n, d, p.baseBackoff/2, p.maxBackoff)
		}
	}
}

func TestAPIErrorUnwrap(t *testing.T) {
	e := &APIError{Provider: "openai", StatusCode: 429, Attempts: 3, RetryAfter: time.Second, kind: ErrRateLimited, Message: "slow down"}
	if !errors.Is(e, ErrRateLimited) || errors.Is(e, ErrServer) {
		t.Fatal("sentinel mismatch")
	}
	want := "llm: rate limited (provider openai, HTTP 429, 3 attempts, retry after 1s): slow down"
	if e.Error() != want {
		t.Errorf("Error() = %q", e.Error())
	}
	var ae *APIError
	if !errors.As(error(e), &ae) || ae.StatusCode != 429 {
		t.Error("errors.As failed")
	}
}

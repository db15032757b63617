package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp, m
}

func TestScriptReplay(t *testing.T) {
	s := New(t,
		Text("hello"),
		Tools(Call{ID: "c1", Name: "t", Arguments: `{"x":`}, Call{Name: "u", Arguments: `{}`}),
		Turn{Status: 429, RetryAfter: "7"},
		Turn{Status: 503},
	)
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t"}}]}`

	resp, m := post(t, s.BaseURL()+"/chat/completions", body)
	choice := m["choices"].([]any)[0].(map[string]any)
	if resp.StatusCode != 200 || choice["message"].(map[string]any)["content"] != "hello" || m["model"] != "m" {
		t.Fatalf("turn 1: %d %v", resp.StatusCode, m)
	}
	_, m = post(t, s.URL()+"/chat/completions", body)
	calls := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)
	if len(calls) != 2 || calls[0].(map[string]any)["function"].(map[string]any)["arguments"] != `{"x":` {
		t.Fatalf("turn 2 calls: %v", calls)
	}
	if _, has := calls[1].(map[string]any)["id"]; has {
		t.Error("omitted id was sent")
	}
	resp, m = post(t, s.BaseURL()+"/chat/completions", body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || m["error"] == nil {
		t.Fatalf("turn 3: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = post(t, s.BaseURL()+"/chat/completions", body)
	if resp.StatusCode != 503 {
		t.Fatalf("turn 4: %d", resp.StatusCode)
	}
	resp, m = post(t, s.BaseURL()+"/chat/completions", body)
	if resp.StatusCode != 400 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "exhausted") {
		t.Fatalf("exhausted: %d %v", resp.StatusCode, m)
	}
	reqs := s.Requests()
	if len(reqs) != 5 || reqs[1].Path != "/chat/completions" || reqs[0].Messages()[0]["content"] != "hi" || reqs[4].Turn != -1 {
		t.Fatalf("recorded: %+v", reqs)
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining = %d", s.Remaining())
	}
}

func TestEndlessUsesOfferedTool(t *testing.T) {
	s := New(t)
	s.Endless("", "")
	body := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"get_events"}}]}`
	var ids []string
	for range 3 {
		_, m := post(t, s.BaseURL()+"/chat/completions", body)
		call := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
		if call["function"].(map[string]any)["name"] != "get_events" {
			t.Fatalf("call = %v", call)
		}
		ids = append(ids, call["id"].(string))
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("ids repeat: %v", ids)
	}
}

func TestDelayEndsWhenClientLeaves(t *testing.T) {
	s := New(t, Turn{Delay: time.Hour, Text: "late"})
	client := &http.Client{Timeout: 50 * time.Millisecond}
	_, err := client.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("want client timeout")
	}
	if !s.WaitRequests(1, 5*time.Second) {
		t.Fatal("request not recorded")
	}
	// Close (via Cleanup) must not hang on the delayed handler.
}

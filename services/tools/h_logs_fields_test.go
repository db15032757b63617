package tools

import (
	"strings"
	"testing"
)

func TestParseLogLineKeepsStructuredFields(t *testing.T) {
	ll := parseLogLine(`{"level":"warn","ts":"2026-06-15T12:17:05.803Z","msg":"upstream rate limited","upstream":"geoplex","status":429,"retry":true,"caller":"x.go:12","nested":{"a":1}}`)
	if ll.Level != "WARN" || ll.Timestamp == nil {
		t.Fatalf("level/timestamp lost: %+v", ll)
	}
	for _, want := range []string{"upstream rate limited", "status=429", "upstream=geoplex", "retry=true"} {
		if !strings.Contains(ll.Message, want) {
			t.Errorf("message %q lacks %q", ll.Message, want)
		}
	}
	for _, not := range []string{"caller=", "nested", "ts=", "level="} {
		if strings.Contains(ll.Message, not) {
			t.Errorf("message %q carries %q", ll.Message, not)
		}
	}
	long := `{"msg":"m","a":"` + strings.Repeat("x", 5000) + `"}`
	if l := parseLogLine(long); len(l.Message) > 700 {
		t.Errorf("fields unbounded: %d bytes", len(l.Message))
	}
}

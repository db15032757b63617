package critic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// TestRationaleCutsWholeCharacters: the critic quotes a tool's error and a
// pin's claim in its rationale, cut to a length. Cut mid-character, the
// rationale was invalid UTF-8 and the updated pin could never be marshalled
// (so never published). Every cut position around a multi-byte character
// must give a pin that marshals.
func TestRationaleCutsWholeCharacters(t *testing.T) {
	s := newTestService(t, nil)
	ctx := context.Background()
	for pad := 195; pad <= 241; pad++ {
		text := strings.Repeat("x", pad) + "日本語 é 😀 tail"
		for _, tc := range []struct {
			name string
			pin  *evidencev1.EvidencePin
		}{
			{"tool error", newPin(fmt.Sprintf("e%d", pad), "fetch_pod_logs", nil, failedCall(text))},
			{"no-data claim", newPin(fmt.Sprintf("n%d", pad), "search_logs", nil, noData(), claim(text))},
		} {
			out, _, err := s.revalidate(ctx, "s1", tc.pin.GetId(), tc.pin, true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.GetCriticRationale(), "xxx") {
				t.Fatalf("%s: rationale %q does not quote the text", tc.name, out.GetCriticRationale())
			}
			if !utf8.ValidString(out.GetCriticRationale()) {
				t.Fatalf("%s, cut after %d bytes: rationale %q is not valid UTF-8", tc.name, pad, out.GetCriticRationale())
			}
			if _, err := proto.Marshal(out); err != nil {
				t.Fatalf("%s, cut after %d bytes: the pin cannot be marshalled: %v", tc.name, pad, err)
			}
		}
	}
}

// TestSymptomRationaleFromACutLogLine: the profile quotes a log line cut to
// a length (services/critic/profile.go capText cuts bytes); the rationale
// built from it must still be valid UTF-8.
func TestSymptomRationaleFromACutLogLine(t *testing.T) {
	s := newTestService(t, nil)
	ctx := context.Background()
	prefix := "upstream request timed out after 30s "
	for pad := 150 - len(prefix); pad <= 165-len(prefix); pad++ {
		msg := prefix + strings.Repeat("x", pad) + "日本語 é 😀 tail"
		pin := newPin(fmt.Sprintf("l%d", pad), "search_logs", md(t, facts.KeyLogLines, []facts.LogLine{{Level: "ERROR", Service: "api",
			Message: msg, Timestamp: tp(t0)}}))
		out, _, err := s.revalidate(ctx, "s1", pin.GetId(), pin, true)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.GetCriticRationale(), "timed out") {
			t.Fatalf("rationale %q does not quote the log line", out.GetCriticRationale())
		}
		if !utf8.ValidString(out.GetCriticRationale()) {
			t.Fatalf("log line cut after %d bytes: rationale %q is not valid UTF-8", len(prefix)+pad, out.GetCriticRationale())
		}
		if _, err := proto.Marshal(out); err != nil {
			t.Fatalf("log line cut after %d bytes: the pin cannot be marshalled: %v", len(prefix)+pad, err)
		}
	}
}

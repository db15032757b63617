package router

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTruncateKeepsCharactersWhole: pin claims quoted in chat answers are
// cut to a length; a cut inside a character made the answer invalid UTF-8,
// which the gateway cannot marshal (500).
func TestTruncateKeepsCharactersWhole(t *testing.T) {
	s := strings.Repeat("x", 10) + "日本語 é 😀"
	for n := 0; n <= len(s); n++ {
		got := truncate(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("truncate(s, %d) = %q is not valid UTF-8", n, got)
		}
		if n < len(s) && !strings.HasSuffix(got, "…") {
			t.Errorf("truncate(s, %d) = %q lacks the ellipsis", n, got)
		}
	}
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate of a short string = %q", got)
	}
}

package router

import (
	"strings"
	"testing"
	"unicode/utf8"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
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

// TestReadFindingCutsRawOutputWhole: the raw output read for suggestions is
// capped without splitting a character.
func TestReadFindingCutsRawOutputWhole(t *testing.T) {
	for pad := 8188; pad <= 8192; pad++ {
		p := &evidencev1.EvidencePin{Id: "p", RawOutput: strings.Repeat("x", pad) + "日本語"}
		if f := readFinding(p, nil); !utf8.ValidString(f.text) {
			t.Fatalf("raw output cut after %d bytes is not valid UTF-8", pad)
		}
	}
}

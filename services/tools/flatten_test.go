package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFlattenCutsValuesWhole: a long custom-resource field value is capped
// without splitting a character (the pin carrying it must marshal).
func TestFlattenCutsValuesWhole(t *testing.T) {
	for pad := maxFieldValue - 4; pad <= maxFieldValue; pad++ {
		var out []string
		flatten("spec", map[string]any{"note": strings.Repeat("x", pad) + "日本語 é"}, &out)
		if len(out) != 1 || !utf8.ValidString(out[0]) || !strings.HasSuffix(out[0], "...") {
			t.Fatalf("value cut after %d bytes: %q", pad, out)
		}
	}
}

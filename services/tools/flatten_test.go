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

// The notes people wrote on an object are kept, clipped and redacted; a
// tool's bookkeeping, a blob and a credential are not.
func TestNoteAnnotations(t *testing.T) {
	got := noteAnnotations(map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1"}`,
		"description":           "shadow traffic to v2 for comparison; responses are discarded",
		"checksum/config":       "9f86d081884c7d659a2feaa0c55ad015",
		"ops.example/why":       "pinned to 2 replicas until the migration ends (OPS-311)",
		"config.example/blob":   "[1, 2, 3] as json list",
		"api-token":             "abc def ghi jkl mno",
		"team.example/long-one": strings.Repeat("é word ", 200),
	})
	joined := strings.Join(got, "\n")
	if len(got) != 3 || !strings.Contains(joined, "metadata.annotations.description=shadow traffic") || !strings.Contains(joined, "OPS-311") {
		t.Fatalf("notes: %q", got)
	}
	for _, not := range []string{"last-applied", "checksum", "blob", "api-token"} {
		if strings.Contains(joined, not) {
			t.Errorf("notes keep %q: %q", not, got)
		}
	}
	for _, l := range got {
		if !utf8.ValidString(l) || len(l) > maxFieldValue+80 {
			t.Errorf("note not clipped to valid text: %d bytes", len(l))
		}
	}
}

// A name/value pair whose name says it holds a credential (a CronJob's env
// var, a parameter list) is flattened without its value.
func TestFlattenRedactsCredentialPairs(t *testing.T) {
	var out []string
	flatten("spec", map[string]any{"env": []any{
		map[string]any{"name": "DB_PASSWORD", "value": "hunter2"},
		map[string]any{"name": "STRIPE_API_KEY", "value": "sk_live_abc"},
		map[string]any{"name": "TZ", "value": "Pacific/Chatham"},
	}}, &out)
	all := strings.Join(out, "\n")
	for _, leak := range []string{"hunter2", "sk_live_abc"} {
		if strings.Contains(all, leak) {
			t.Errorf("flattened %q: %q leaked", out, leak)
		}
	}
	if !strings.Contains(all, "spec.env[2].value=Pacific/Chatham") || !strings.Contains(all, "spec.env[0].value=<redacted>") {
		t.Errorf("flattened %q: want the plain value kept and the credential redacted", out)
	}
}

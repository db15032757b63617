package textutil_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"},        // é is 2 bytes: not split
		{"héllo", 3, "hé"},       // ends exactly after é
		{"日本語", 4, "日"},          // 3-byte characters
		{"日本語", 5, "日"},          // 3-byte characters
		{"日本語", 6, "日本"},         // 3-byte characters
		{"a😀b", 2, "a"},          // 4-byte emoji
		{"a😀b", 4, "a"},          // 4-byte emoji
		{"a😀b", 5, "a😀"},         // 4-byte emoji
		{"ab\xffcd", 3, "abc"},   // invalid bytes dropped
		{"ab\xe6\x97", 10, "ab"}, // a character cut before
		{"\xff\xfe", 5, ""},
	}
	for _, tt := range tests {
		got := textutil.Truncate(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	if got := textutil.TruncateEllipsis("héllo", 2); got != "h…" {
		t.Errorf("TruncateEllipsis = %q", got)
	}
	if got := textutil.TruncateEllipsis("hi", 2); got != "hi" {
		t.Errorf("TruncateEllipsis of a short string = %q", got)
	}
}

// TestTruncateEveryCut: for valid text, every cut is valid UTF-8, a prefix,
// at most n bytes, and loses less than one character.
func TestTruncateEveryCut(t *testing.T) {
	s := "Ünïcödé 日本語 😀 text ✓"
	for n := 0; n <= len(s)+1; n++ {
		got := textutil.Truncate(s, n)
		if !utf8.ValidString(got) || !strings.HasPrefix(s, got) || len(got) > max(n, 0) || (n <= len(s) && n-len(got) >= utf8.UTFMax) {
			t.Errorf("Truncate(s, %d) = %q", n, got)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"", "hello", "héllo", "日本語", "a😀b", "ab\xffcd", "\xe6\x97", "critic: root cause — memory: 512Mi → OOMKilled"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := textutil.Truncate(s, n)
		valid := strings.ToValidUTF8(s, "")
		if !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
		if !strings.HasPrefix(valid, got) {
			t.Fatalf("Truncate(%q, %d) = %q is not a prefix of the valid text", s, n, got)
		}
		if n <= 0 && got != "" || n > 0 && len(got) > n {
			t.Fatalf("Truncate(%q, %d) = %q is longer than n", s, n, got)
		}
		if len(valid) <= n && got != valid {
			t.Fatalf("Truncate(%q, %d) = %q cut a text that fits", s, n, got)
		}
		if n > 0 && n < len(valid) && n-len(got) >= utf8.UTFMax {
			t.Fatalf("Truncate(%q, %d) = %q cut more than one character", s, n, got)
		}
	})
}

func TestNameWords(t *testing.T) {
	for name, want := range map[string]string{
		"pledge-intake":        "pledge,intake",
		"orders-api":           "orders",
		"api":                  "",
		"session_redis.cache":  "session,redis",
		"tally-consumer-group": "tally",
		"legacy-web-v2":        "",
	} {
		if got := strings.Join(textutil.NameWords(name), ","); got != want {
			t.Errorf("NameWords(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestContainsWord(t *testing.T) {
	tests := []struct {
		s, w string
		want bool
	}{
		{"rdb.keys(ctx)", "keys", true},
		{"monkeys and keyspace", "keys", false},
		{"keys", "keys", true},
		{"a_keys b", "keys", false},
		{"x monkeys keys", "keys", true},
		{"", "keys", false},
	}
	for _, tc := range tests {
		if got := textutil.ContainsWord(tc.s, tc.w); got != tc.want {
			t.Errorf("ContainsWord(%q, %q) = %v, want %v", tc.s, tc.w, got, tc.want)
		}
	}
}

// Package textutil holds small text helpers shared by the services.
package textutil

import (
	"strings"
	"unicode/utf8"
)

// Truncate returns s as valid UTF-8 of at most n bytes: invalid bytes are
// dropped, and a cut that would split a character moves back to the start
// of that character. n <= 0 gives "". A proto string field must be valid
// UTF-8: text cut with s[:n] can make a message that cannot be marshalled
// (a pin that can never be published), and so can text that was already cut
// that way before it reached here.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// TruncateEllipsis is Truncate to n bytes plus "…" when s was cut.
func TruncateEllipsis(s string, n int) string {
	t := Truncate(s, n)
	if len(s) <= n {
		return t
	}
	return t + "…"
}

// ASCIILower lower-cases ASCII letters only, keeping byte offsets (so an
// index found in the result is valid in s); s itself when it has none.
func ASCIILower(s string) string {
	hasUpper := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			hasUpper = true
			break
		}
	}
	if !hasUpper {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// IsWordByte reports whether c is an ASCII letter, digit or underscore.
func IsWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ContainsWord reports whether w occurs in s delimited by non-word bytes
// (IsWordByte) or the ends of s.
func ContainsWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(w)
		if (i == 0 || !IsWordByte(s[i-1])) && (j == len(s) || !IsWordByte(s[j])) {
			return true
		}
		off = i + 1
	}
}

// structuralWords are parts of workload names that say what kind of
// component it is, not which one: a line naming "api" names no service.
var structuralWords = map[string]bool{
	"api": true, "app": true, "web": true, "svc": true, "service": true, "server": true, "worker": true, "workers": true,
	"backend": true, "frontend": true, "prod": true, "production": true, "staging": true, "main": true, "primary": true,
	"internal": true, "public": true, "http": true, "grpc": true, "gateway": true, "proxy": true, "deployment": true,
	"job": true, "cron": true, "daemon": true, "v1": true, "v2": true, "v3": true, "legacy": true, "new": true, "old": true,
	// The kind or role of a component, shared by many names ("group" of
	// tally-group, "controller" of ingress-controller).
	"group": true, "queue": true, "topic": true, "stream": true, "consumer": true, "consumers": true, "producer": true,
	"cache": true, "database": true, "cluster": true, "node": true, "pool": true, "events": true, "batch": true,
	"controller": true, "operator": true, "manager": true, "scheduler": true, "processor": true, "handler": true,
	"agent": true, "exporter": true, "client": true, "engine": true, "core": true, "common": true, "default": true, "system": true,
}

// NameWords are the distinctive words of an object's name: its parts of
// four letters or more (split at dashes, dots, underscores) that are not
// structural ("pledge" and "intake" of "pledge-intake-api").
func NameWords(name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if len(w) >= 4 && !structuralWords[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// FirstLine is the first line of s with content, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// Package textutil holds small text helpers shared by the services.
package textutil

import "unicode/utf8"

// Truncate returns s cut to at most n bytes without splitting a UTF-8
// character: the cut moves back to the start of the character that would be
// split. Invalid bytes in s are kept as they are up to the cut (use
// strings.ToValidUTF8 first when the result must be valid). n <= 0 gives "".
// A proto string field must be valid UTF-8, so text cut with s[:n] can make a
// message that cannot be marshalled (a pin that can never be published).
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	cut := n
	// Back up over continuation bytes to the start of the character at cut,
	// at most utf8.UTFMax-1 bytes (a longer run is invalid bytes, kept).
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	if !utf8.RuneStart(s[cut]) {
		return s[:n]
	}
	// s[cut] starts a character; keep it only if it ends by n.
	if _, size := utf8.DecodeRuneInString(s[cut:]); cut+size <= n {
		cut += size
	}
	return s[:cut]
}

// TruncateEllipsis is Truncate to n bytes plus "…" when s was cut.
func TruncateEllipsis(s string, n int) string {
	t := Truncate(s, n)
	if len(t) == len(s) {
		return s
	}
	return t + "…"
}

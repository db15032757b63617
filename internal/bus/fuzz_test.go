package bus_test

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

// FuzzToken: the subject escape of a session id is injective and reversible
// (ParseToken inverts it, and accepts only what Token produces), stays in the
// token alphabet, leaves simple ids unchanged, and the session is read back
// from the subjects built with it.
func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "s1", "inc-0f3a9c21b7d4e5f6-lds4", "team-a.prod", "team-a_prod", "team:a", "=", "=3D", "a b",
		"a*b>c", "ü", "\xff", "line\nbreak", strings.Repeat(".", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := bus.Token(s)
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '=') {
				t.Fatalf("Token(%q) = %q has byte %q outside the token alphabet", s, tok, c)
			}
		}
		back, err := bus.ParseToken(tok)
		if err != nil || back != s {
			t.Fatalf("ParseToken(Token(%q)) = %q, %v", s, back, err)
		}
		simple := s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
		if simple != (tok == s) {
			t.Fatalf("Token(%q) = %q: simple ids, and only they, stay unchanged", s, tok)
		}
		// ParseToken accepts exactly the tokens Token makes: read s as a token.
		if dec, err := bus.ParseToken(s); err == nil && bus.Token(dec) != s {
			t.Fatalf("ParseToken(%q) = %q, but Token of it is %q", s, dec, bus.Token(dec))
		}
		subject := bus.PinSubject(s, evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED)
		if got, err := bus.SessionOfSubject(subject); err != nil || got != s {
			t.Fatalf("SessionOfSubject(%q) = %q, %v; want %q", subject, got, err, s)
		}
		if strings.Count(subject, ".") != 5 {
			t.Fatalf("subject %q of session %q does not have 6 tokens", subject, s)
		}
	})
}

// FuzzEventsCursor: the events endpoint's query string, as the REST gateway
// decodes it into a StreamEventsRequest, and the start sequence the bus
// derives from the cursor. The gateway accepts exactly the decimal uint64
// cursors; the start sequence is the cursor plus one when the cursor is
// inside the stream, the stream's end plus one when it is beyond, and never
// wraps to 0.
func FuzzEventsCursor(f *testing.F) {
	for _, q := range []string{"", "from_sequence=0", "from_sequence=42", "from_sequence=18446744073709551615",
		"from_sequence=18446744073709551616", "from_sequence=-1", "from_sequence=0x10", "from_sequence=1e3", "from_sequence=%2B5",
		"from_sequence=1&from_sequence=2", "from_sequence=7&no_follow=true&pins_only=1", "no_follow=yes", "session_id=x&from_sequence=3"} {
		f.Add(q, uint64(0))
		f.Add(q, uint64(100))
		f.Add(q, uint64(math.MaxUint64))
	}
	filter := utilities.NewDoubleArray([][]string{{"session_id"}})
	f.Fuzz(func(t *testing.T, rawQuery string, last uint64) {
		values, err := url.ParseQuery(rawQuery)
		if err != nil {
			return // the gateway answers 400
		}
		req := &brainv1.StreamEventsRequest{}
		if err := runtime.PopulateQueryParameters(req, values, filter); err != nil {
			return // 400
		}
		if vs := values["from_sequence"]; len(vs) == 1 {
			want, perr := strconv.ParseUint(vs[0], 10, 64)
			if perr != nil || want != req.GetFromSequence() {
				t.Fatalf("from_sequence=%q became %d (strconv: %d, %v)", vs[0], req.GetFromSequence(), want, perr)
			}
		}
		from := req.GetFromSequence()
		start := bus.StartSequence(from, last)
		switch {
		case start == 0:
			t.Fatalf("StartSequence(%d, %d) wrapped to 0", from, last)
		case from < last && start != from+1:
			t.Fatalf("StartSequence(%d, %d) = %d, want the cursor plus one", from, last, start)
		case from >= last && last < math.MaxUint64 && start != last+1:
			t.Fatalf("StartSequence(%d, %d) = %d, want the end plus one", from, last, start)
		case start < from && from <= last:
			t.Fatalf("StartSequence(%d, %d) = %d goes back", from, last, start)
		}
	})
}

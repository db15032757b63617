package paging

import (
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		req, fallback int32
		want          int
		err           bool
	}{
		{0, 0, 50, false}, {10, 0, 10, false}, {0, 7, 7, false}, {10, 7, 10, false},
		{5000, 0, 1000, false}, {-1, 0, 0, true}, {0, -1, 0, true},
	} {
		got, err := Size(tc.req, tc.fallback, 50, 1000)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("Size(%d, %d) = %d, %v; want %d (err %v)", tc.req, tc.fallback, got, err, tc.want, tc.err)
		}
	}
}

func TestTokenRoundTripAndRefusals(t *testing.T) {
	for _, off := range []int{0, 1, 99, 1 << 30} {
		got, err := Offset("pins", Token("pins", off))
		if err != nil || got != off {
			t.Errorf("round trip of %d: %d, %v", off, got, err)
		}
	}
	for _, bad := range []string{"x", "!!!", Token("sessions", 3), "djE6cGluczotMQ", "djE6cGluczowMQ", "djE6cGluczo"} {
		if _, err := Offset("pins", bad); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
}

func TestPageWalksEveryItemOnce(t *testing.T) {
	for _, n := range []int{0, 1, 99, 100, 101, 250} {
		seen, tok, pages := 0, "", 0
		for {
			off, err := Offset("l", tok)
			if err != nil {
				t.Fatal(err)
			}
			from, to, next := Page("l", n, off, 100)
			if from != seen {
				t.Fatalf("n=%d: page starts at %d after %d items", n, from, seen)
			}
			seen, pages = to, pages+1
			if next == "" {
				break
			}
			tok = next
		}
		if seen != n || pages != max(1, (n+99)/100) {
			t.Errorf("n=%d: %d items in %d pages", n, seen, pages)
		}
	}
	if from, to, next := Page("l", 5, 9, 100); from != 5 || to != 5 || next != "" {
		t.Errorf("offset past the end: %d %d %q", from, to, next)
	}
}

// FuzzOffset: a page token is outside input; decoding never panics, and
// whatever it accepts is a token Token makes.
func FuzzOffset(f *testing.F) {
	for _, s := range []string{"", Token("pins", 0), Token("pins", 12345), Token("sessions", 1), "djE6cGluczotMQ", strings.Repeat("A", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		off, err := Offset("pins", tok)
		if err != nil || tok == "" {
			return
		}
		if off < 0 || Token("pins", off) != tok {
			t.Fatalf("accepted %q as %d, which encodes as %q", tok, off, Token("pins", off))
		}
	})
}

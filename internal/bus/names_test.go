package bus_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

func TestToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "="},
		{"s-123", "s-123"},
		{"inc-0f3a9c_7", "inc-0f3a9c_7"},
		{"a.b", "a=2Eb"},
		{"a_b", "a_b"},
		{"a=b", "a=3Db"},
		{"=2E", "=3D2E"},
		{"team:prod", "team=3Aprod"},
		{"a*b>c", "a=2Ab=3Ec"},
		{"with space\tand\ttab", "with=20space=09and=09tab"},
		{"line\nbreak", "line=0Abreak"},
		{"ü", "=C3=BC"},
		{"\xff", "=FF"},
	}
	for _, tt := range tests {
		got := bus.Token(tt.in)
		if got != tt.want {
			t.Errorf("Token(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := bus.ParseToken(got)
		if err != nil || back != tt.in {
			t.Errorf("ParseToken(%q) = %q, %v; want %q", got, back, err, tt.in)
		}
	}
}

// TestTokenIsInjective: ids the old escape ('.', '*', '>' and space to '_')
// mapped to one subject get distinct tokens, and a token is a single valid
// subject token and a valid KV key.
func TestTokenIsInjective(t *testing.T) {
	groups := [][]string{
		{"team-a.prod", "team-a_prod", "team-a prod", "team-a*prod", "team-a>prod", "team-a=2Eprod", "team-a=prod"},
		{"", "_", "=", "=3D"},
		{"a", "A", "a.", ".a"},
	}
	kvKey := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
	for _, g := range groups {
		seen := map[string]string{}
		for _, id := range g {
			tok := bus.Token(id)
			if prev, dup := seen[tok]; dup {
				t.Errorf("Token(%q) = Token(%q) = %q", id, prev, tok)
			}
			seen[tok] = id
			if strings.ContainsAny(tok, ".*> \t\r\n") || !kvKey.MatchString(tok) {
				t.Errorf("Token(%q) = %q is not one subject token / KV key", id, tok)
			}
		}
	}
}

func TestParseTokenRejectsWhatTokenNeverMakes(t *testing.T) {
	for _, tok := range []string{"", "a.b", "a=2", "a=2e", "a=ZZ", "a=41", "a=5F", "ü", "a b"} {
		if s, err := bus.ParseToken(tok); err == nil {
			t.Errorf("ParseToken(%q) = %q, want an error", tok, s)
		}
	}
}

func TestSessionOfSubject(t *testing.T) {
	tests := []struct {
		subject, want string
		ok            bool
	}{
		{bus.PinSubject("team-a.prod", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED), "team-a.prod", true},
		{bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE), "s1", true},
		{"rcamesh.v1.work.alert", "", false},
		{"rcamesh.v1.session.s1", "", false},
		{"rcamesh.v1.session.a=ZZ.pin.added", "", false},
	}
	for _, tt := range tests {
		got, err := bus.SessionOfSubject(tt.subject)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("SessionOfSubject(%q) = %q, %v; want %q ok=%v", tt.subject, got, err, tt.want, tt.ok)
		}
	}
}

func TestStartSequence(t *testing.T) {
	const max = math.MaxUint64
	tests := []struct{ from, last, want uint64 }{
		{0, 0, 1},
		{0, 10, 1},
		{3, 10, 4},
		{10, 10, 11},
		{11, 10, 11},
		{max, 10, 11},
		{max, 0, 1},
		{max - 1, max, max},
		{max, max, max},
	}
	for _, tt := range tests {
		if got := bus.StartSequence(tt.from, tt.last); got != tt.want {
			t.Errorf("StartSequence(%d, %d) = %d, want %d", tt.from, tt.last, got, tt.want)
		}
	}
}

func TestSubjects(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"pin added", bus.PinSubject("s1", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED), "rcamesh.v1.session.s1.pin.added"},
		{"pin updated", bus.PinSubject("s1", evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED), "rcamesh.v1.session.s1.pin.updated"},
		{"pin rejected escaped", bus.PinSubject("a.b", evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED), "rcamesh.v1.session.a=2Eb.pin.rejected"},
		{"lifecycle stage", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE), "rcamesh.v1.session.s1.lifecycle.stage"},
		{"lifecycle alert received", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED), "rcamesh.v1.session.s1.lifecycle.alert_received"},
		{"lifecycle unknown number", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind(999)), "rcamesh.v1.session.s1.lifecycle.unspecified"},
		{"session filter", bus.SessionFilter("s 1"), "rcamesh.v1.session.s=201.>"},
		{"pin filter all sessions", bus.PinFilter("*", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED), bus.PinAddedFilter},
		{"lifecycle filter", bus.LifecycleFilter("s1"), "rcamesh.v1.session.s1.lifecycle.>"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*bus.Config)
		ok   bool
	}{
		{"defaults", func(*bus.Config) {}, true},
		{"zero max age", func(c *bus.Config) { c.EventsMaxAge = 0 }, false},
		{"zero work max age", func(c *bus.Config) { c.WorkMaxAge = 0 }, false},
		{"window beyond max age", func(c *bus.Config) { c.EventsMaxAge = 1; c.DuplicateWindow = 2 }, false},
		{"tiny ack wait", func(c *bus.Config) { c.AckWait = 1 }, false},
		{"no deliveries", func(c *bus.Config) { c.MaxDeliver = 0 }, false},
		{"nak max below base", func(c *bus.Config) { c.NakMaxDelay = c.NakDelay / 2 }, false},
		{"six replicas", func(c *bus.Config) { c.Replicas = 6 }, false},
	}
	for _, tt := range tests {
		c := bus.DefaultConfig()
		tt.mod(&c)
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

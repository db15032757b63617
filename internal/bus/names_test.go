package bus_test

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

func TestToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "_"},
		{"s-123", "s-123"},
		{"a.b", "a_b"},
		{"a*b>c", "a_b_c"},
		{"with space\tand\ttab", "with_space_and_tab"},
		{"line\nbreak", "line_break"},
		{"ünïcode", "ünïcode"},
	}
	for _, tt := range tests {
		if got := bus.Token(tt.in); got != tt.want {
			t.Errorf("Token(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSubjects(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"pin added", bus.PinSubject("s1", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED), "rcamesh.v1.session.s1.pin.added"},
		{"pin updated", bus.PinSubject("s1", evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED), "rcamesh.v1.session.s1.pin.updated"},
		{"pin rejected escaped", bus.PinSubject("a.b", evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED), "rcamesh.v1.session.a_b.pin.rejected"},
		{"lifecycle stage", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE), "rcamesh.v1.session.s1.lifecycle.stage"},
		{"lifecycle alert received", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED), "rcamesh.v1.session.s1.lifecycle.alert_received"},
		{"lifecycle unknown number", bus.LifecycleSubject("s1", evidencev1.LifecycleEventKind(999)), "rcamesh.v1.session.s1.lifecycle.unspecified"},
		{"session filter", bus.SessionFilter("s 1"), "rcamesh.v1.session.s_1.>"},
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

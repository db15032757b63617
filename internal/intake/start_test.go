package intake

import (
	"testing"
	"time"
)

// A payload whose format gives no start time still dates the alert from
// the fields that say when the condition began, in the written forms
// monitoring tools use; update, notification and end times are not starts.
func TestInferStart(t *testing.T) {
	want := time.Date(2027, 4, 2, 6, 15, 0, 0, time.UTC)
	cases := []struct {
		name string
		obj  map[string]any
		ok   bool
	}{
		{"epoch milliseconds, created before updated", map[string]any{"createdAt": float64(want.UnixMilli()), "updatedAt": float64(want.Add(3 * time.Minute).UnixMilli())}, true},
		{"split date and clock, dotted date", map[string]any{"event_date": "2027.04.02", "event_time": "06:15:00", "event_id": "99120"}, true},
		{"space instead of T, milliseconds, nested", map[string]any{"heartbeat": map[string]any{"time": "2027-04-02 06:15:00.000", "timezone": "UTC"}}, true},
		{"zone name UTC", map[string]any{"LONGDATETIME": "2027-04-02 06:15:00 UTC"}, true},
		{"numeric offset", map[string]any{"long_date_time": "2027-04-02 07:15:00 +0100"}, true},
		{"since beats sent", map[string]any{"alert_sent_at": "2027-04-02T06:20:00Z", "down_since": "2027-04-02T06:15:00Z"}, true},
		{"bare start word", map[string]any{"started": "2027-04-02T06:15:00Z", "resolved_at": "2027-04-02T06:10:00Z"}, true},
		{"a count named like a time is not an epoch", map[string]any{"time": float64(42)}, false},
		{"an end time alone is no start", map[string]any{"resolved_at": "2027-04-02T06:15:00Z"}, false},
		{"an unknown zone name is not trusted", map[string]any{"time": "2027-04-02 06:15:00 PDT"}, false},
		{"nothing", map[string]any{"title": "disk full"}, false},
	}
	for _, c := range cases {
		got, ok := inferStart(c.obj)
		if ok != c.ok || ok && !got.Equal(want) {
			t.Errorf("%s: got %v %v, want %v %v", c.name, got, ok, want, c.ok)
		}
	}
}

// Parse fills the start of an envelope that has it under its own name.
func TestParseInfersStart(t *testing.T) {
	raw := []byte(`{"title": "Checkout p99 above 2s", "state": "alerting", "commonLabels": {"alertname": "CheckoutSlow", "namespace": "shop"}, "down_since": "2027-04-02T06:15:00Z"}`)
	as, err := Parse(raw, "")
	if err != nil || len(as) != 1 {
		t.Fatalf("parse: %v %d", err, len(as))
	}
	if as[0].GetStartsAt() == nil || !as[0].GetStartsAt().AsTime().Equal(time.Date(2027, 4, 2, 6, 15, 0, 0, time.UTC)) {
		t.Errorf("starts_at %v, want the payload's down_since", as[0].GetStartsAt())
	}
}

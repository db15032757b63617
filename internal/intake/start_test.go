package intake

import (
	"errors"
	"strings"
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
		{"US date, 12-hour clock", map[string]any{"TriggerTime": "04/02/2027 06:15:00 AM UTC"}, true},
		{"numeric offset", map[string]any{"long_date_time": "2027-04-02 07:15:00 +0100"}, true},
		{"since beats sent", map[string]any{"alert_sent_at": "2027-04-02T06:20:00Z", "down_since": "2027-04-02T06:15:00Z"}, true},
		{"bare start word", map[string]any{"started": "2027-04-02T06:15:00Z", "resolved_at": "2027-04-02T06:10:00Z"}, true},
		{"a field named start in epoch milliseconds, beside its end", map[string]any{"start": float64(want.UnixMilli()), "end": float64(want.Add(time.Hour).UnixMilli())}, true},
		{"scheduled start beats the record's creation the day before", map[string]any{"created_at": "2027-04-01T06:15:00Z", "scheduled_for": "2027-04-02T06:15:00Z", "scheduled_until": "2027-04-02T06:45:00Z"}, true},
		{"a component's creation years before is its own, not the event's", map[string]any{
			"component_update": map[string]any{"created_at": "2027-04-02T06:15:00Z", "new_status": "major_outage"},
			"component":        map[string]any{"created_at": "2021-02-11T09:00:00Z", "name": "Routing API"}}, true},
		{"a monitor created last week, an event now", map[string]any{"monitor": map[string]any{"created": "2027-03-20T10:00:00Z"}, "event": map[string]any{"created": "2027-04-02T06:15:00Z"}}, true},
		{"a never sentinel beside the event's time", map[string]any{"event_time": "2027-04-02T06:15:00Z", "retention_date": "9999-12-31T23:59:59Z"}, true},
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

// A resolution's window reaches past the end its payload gives (whether
// anything still fails after it is the question); a firing alert's does
// not move, nor does one whose end is not after its start.
func TestResolvedWindowReachesItsEnd(t *testing.T) {
	start := time.Date(2027, 4, 2, 6, 15, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, raw string
		end       time.Time
	}{
		{"maintenance completed", `{"incident": {"name": "Storage migration", "status": "completed", "impact": "maintenance", "created_at": "2027-04-01T06:15:00Z", "scheduled_for": "2027-04-02T06:15:00Z", "scheduled_until": "2027-04-02T06:45:00Z", "resolved_at": "2027-04-02T06:39:00Z"}}`, time.Date(2027, 4, 2, 6, 39, 0, 0, time.UTC).Add(WindowAfter)},
		{"firing", `{"incident": {"name": "Storage migration", "status": "in_progress", "impact": "maintenance", "scheduled_for": "2027-04-02T06:15:00Z", "scheduled_until": "2027-04-02T06:45:00Z"}}`, start.Add(WindowAfter)},
	} {
		as, err := Parse([]byte(tc.raw), "")
		if err != nil || len(as) != 1 {
			t.Fatalf("%s: parse: %v %d", tc.name, err, len(as))
		}
		a := as[0]
		if !a.GetStartsAt().AsTime().Equal(start) {
			t.Errorf("%s: starts at %v, want the scheduled start %v", tc.name, a.GetStartsAt().AsTime(), start)
		}
		if got := a.GetIncidentWindow().GetEnd().AsTime(); !got.Equal(tc.end) {
			t.Errorf("%s: window ends %v, want %v", tc.name, got, tc.end)
		}
	}
}

// Envelopes no table knows, read by the shape of their field names: an
// on-call tool's alert and incident side by side, and a trigger that
// shares a key with a known vendor's webhook but not its required fields.
func TestParseLooseEnvelopes(t *testing.T) {
	cases := []struct {
		name, payload, wantTitle, wantText, wantLabel string
	}{
		{"alert and incident objects",
			`{"alert": {"entity_id": "disk/ledger-db-2", "entity_display_name": "Disk 95% on ledger-db-2", "state_message": "volume /var/lib/pg 95% used", "message_type": "CRITICAL", "monitoring_tool": "telegraf", "timestamp": 1800000000}, "incident": {"INCIDENT_NAME": "ledger disk", "INCIDENT_ID": "88"}}`,
			"Disk 95% on ledger-db-2", "volume /var/lib/pg 95% used", ""},
		{"trigger with an event_type key",
			`{"name": "checkout errors", "event_type": "trigger", "status": "TRIGGERED", "summary": "Triggered: error count > 50", "result_url": "https://ui.example.io/q/1", "result_groups_triggered": [{"Group": {"service.name": "checkout"}, "Result": 212}]}`,
			"", "Triggered: error count > 50", ""},
		{"the alert in a list of records three levels down",
			`{"version": "2", "records": [{"source": "metrics-hub", "body": {"detail": {"alarmName": "queue depth ledger-events", "reason": "Threshold crossed: 1 datapoint 9120 > 5000", "region": "eu-west-3"}}}]}`,
			"queue depth ledger-events", "Threshold crossed", ""},
		{"a condition named in a list of violations",
			`{"account": "4412", "violations": [{"condition_name": "p99 latency over 2s", "policy_name": "checkout SLO", "details": "p99 2.7s on checkout-api"}]}`,
			"p99 latency over 2s", "p99 2.7s", ""},
	}
	for _, c := range cases {
		as, err := Parse([]byte(c.payload), "")
		if err != nil || len(as) != 1 {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := as[0]
		if c.wantTitle != "" && a.GetTitle() != c.wantTitle && a.GetAlertName() != c.wantTitle {
			t.Errorf("%s: title %q / name %q, want %q", c.name, a.GetTitle(), a.GetAlertName(), c.wantTitle)
		}
		if a.GetAlertName() == "" && a.GetTitle() == "" {
			t.Errorf("%s: nothing names the alert", c.name)
		}
		if !strings.Contains(a.GetSummary()+a.GetDescription()+a.GetErrorMessage(), c.wantText) {
			t.Errorf("%s: summary %q description %q, want %q", c.name, a.GetSummary(), a.GetDescription(), c.wantText)
		}
		if strings.Contains(c.payload, "timestamp") && a.GetStartsAt() == nil {
			t.Errorf("%s: no start time", c.name)
		}
	}
	if _, err := Parse([]byte(`{"a": {"b": 1}, "c": {"d": true}}`), ""); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("an envelope with nothing that names or describes an alert: err %v, want unknown format", err)
	}
}

// An uptime monitor's payload carries its monitor as an object: the alert
// is named by that object's name, not by the object printed as JSON.
func TestParseMonitorObjectName(t *testing.T) {
	as, err := Parse([]byte(`{"heartbeat": {"status": 0, "time": "2027-04-02 06:15:00.000", "msg": "timeout"}, "monitor": {"id": 4, "name": "checkout heartbeat", "type": "push"}, "msg": "[checkout heartbeat] [DOWN] timeout"}`), "")
	if err != nil || len(as) != 1 {
		t.Fatalf("parse: %v", err)
	}
	if got := as[0].GetAlertName(); got != "checkout heartbeat" {
		t.Errorf("alert name %q, want the monitor's name", got)
	}
}

// A status page's component update says the component serves again
// ("operational", its prior state "major_outage" set aside), and its start
// is the update's time, not the component's creation years before.
func TestStatusPageComponentRecovered(t *testing.T) {
	raw := []byte(`{"page": {"id": "p1", "status_indicator": "none", "status_description": "All Systems Operational"},
		"component_update": {"created_at": "2027-04-02T06:15:00.000Z", "new_status": "operational", "old_status": "major_outage", "component_id": "c1"},
		"component": {"created_at": "2021-02-11T09:00:00.000Z", "id": "c1", "name": "Routing API (EU)", "status": "operational"}}`)
	alerts, err := Parse(raw, "")
	if err != nil || len(alerts) != 1 {
		t.Fatalf("parse: %v %v", alerts, err)
	}
	a := alerts[0]
	if !a.GetResolved() {
		t.Errorf("state %q: want resolved", a.GetState())
	}
	if got := a.GetStartsAt().AsTime(); !got.Equal(time.Date(2027, 4, 2, 6, 15, 0, 0, time.UTC)) {
		t.Errorf("start %v: want the update's time", got)
	}
	down := []byte(`{"component_update": {"created_at": "2027-04-02T06:15:00.000Z", "new_status": "major_outage", "old_status": "operational"},
		"component": {"created_at": "2021-02-11T09:00:00.000Z", "name": "Routing API (EU)", "status": "major_outage"}}`)
	alerts, err = Parse(down, "")
	if err != nil || len(alerts) != 1 || alerts[0].GetResolved() {
		t.Errorf("an outage update read as resolved: %v %v", alerts, err)
	}
}

// A chat or mail notification prints its start in its text; read when no
// field carries one, never a time that no start word introduces.
func TestTextStart(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // RFC 3339, "" for none
	}{
		{"ledger-sync: 4 restarts in 15m.\nStarted 2026-04-03 09:41 UTC", "2026-04-03T09:41:00Z"},
		{"queue depth high, firing since 2026-03-02T08:15:00Z", "2026-03-02T08:15:00Z"},
		{"Triggered: 2026-07-01 23:59:30", "2026-07-01T23:59:30Z"},
		{"began at 2026-07-01T10:00+02:00 on db-3", "2026-07-01T08:00:00Z"},
		{"report for 2026-07-01 10:00 UTC attached", ""},
		{"started 3 minutes ago", ""},
	} {
		got, ok := textStart(tc.text)
		s := ""
		if ok {
			s = got.Format(time.RFC3339)
		}
		if s != tc.want {
			t.Errorf("textStart(%q) = %q, want %q", tc.text, s, tc.want)
		}
	}
}

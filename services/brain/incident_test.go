package brain

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/intake"
)

func TestGroupIncident(t *testing.T) {
	payload := `{"version":"4","status":"firing","alerts":[
	 {"status":"firing","labels":{"alertname":"HighErrorRate","service":"checkout","severity":"warning"},"annotations":{"summary":"5xx at 12%"},"startsAt":"2026-03-01T10:05:00Z"},
	 {"status":"firing","labels":{"alertname":"KubeNodeNotReady","node":"ip-10-0-1-7","namespace":"shop","severity":"critical"},"annotations":{"summary":"node not ready"},"startsAt":"2026-03-01T10:01:00Z"},
	 {"status":"resolved","labels":{"alertname":"Old","service":"x"},"annotations":{},"startsAt":"2026-03-01T09:00:00Z","endsAt":"2026-03-01T09:10:00Z"}]}`
	alerts, err := intake.Parse([]byte(payload), "")
	if err != nil {
		t.Fatal(err)
	}
	got := groupIncident(alerts)
	firing := 0
	for _, a := range got {
		if !a.GetIsNoise() {
			firing++
		}
	}
	if firing != 1 {
		t.Fatalf("%d firing investigations, want one incident", firing)
	}
	p := got[0]
	if p.GetAlertName() != "HighErrorRate" || p.GetSeverity() != "critical" || p.GetNamespace() != "shop" {
		t.Errorf("primary = %s sev %s ns %s; want the first alert, the highest severity, the namespace of the other", p.GetAlertName(), p.GetSeverity(), p.GetNamespace())
	}
	if r := p.GetAnnotations()["related_alert_1"]; !strings.Contains(r, "KubeNodeNotReady") || !strings.Contains(r, "node=ip-10-0-1-7") {
		t.Errorf("related_alert_1 = %q", r)
	}
	if p.GetAnnotations()["node"] != "ip-10-0-1-7" {
		t.Errorf("the node only the second alert names is not on the incident: %v", p.GetAnnotations())
	}
	if p.GetStartsAt().AsTime().Format("15:04") != "10:01" {
		t.Errorf("starts at %s, want the earliest alert's start", p.GetStartsAt().AsTime())
	}
	if p.GetFingerprint() == alerts[0].GetFingerprint() {
		t.Error("the incident's fingerprint must identify the group, not its first alert")
	}
	// The same group in another order is the same incident.
	again := groupIncident(append(alerts[1:2:2], alerts[0]))
	if again[0].GetFingerprint() != p.GetFingerprint() {
		t.Error("group fingerprint depends on the order of the alerts")
	}
	if single := groupIncident(alerts[:1]); len(single) != 1 || single[0] != alerts[0] {
		t.Error("a single alert must pass unchanged")
	}
}

// Resolutions beside firing alerts are recorded, not investigated apart;
// a payload of resolutions only is one incident, investigated once (why
// it fired, whether anything still fails).
func TestGroupIncidentResolutions(t *testing.T) {
	mixed := `{"version":"4","status":"firing","alerts":[
	 {"status":"firing","labels":{"alertname":"DiskFilling","instance":"db-1","severity":"warning"},"startsAt":"2026-03-01T10:05:00Z"},
	 {"status":"resolved","labels":{"alertname":"DiskFilling","instance":"db-2"},"startsAt":"2026-03-01T09:00:00Z","endsAt":"2026-03-01T09:10:00Z"}]}`
	alerts, err := intake.Parse([]byte(mixed), "")
	if err != nil {
		t.Fatal(err)
	}
	got := groupIncident(alerts)
	var investigated, recorded int
	for _, a := range got {
		if a.GetIsNoise() {
			recorded++
			if !a.GetResolved() || !strings.Contains(a.GetNoiseReason(), "resolved") {
				t.Errorf("recorded alert %s: resolved=%v reason %q", a.GetAlertName(), a.GetResolved(), a.GetNoiseReason())
			}
		} else {
			investigated++
		}
	}
	if investigated != 1 || recorded != 1 {
		t.Fatalf("mixed payload: %d investigated, %d recorded; want the firing one investigated and the resolution recorded", investigated, recorded)
	}
	if alerts[1].GetIsNoise() {
		t.Error("grouping changed the caller's alert in place")
	}
	only := `{"version":"4","status":"resolved","alerts":[
	 {"status":"resolved","labels":{"alertname":"DiskFilling","instance":"db-1"},"startsAt":"2026-03-01T09:00:00Z","endsAt":"2026-03-01T09:10:00Z"},
	 {"status":"resolved","labels":{"alertname":"DiskLatency","instance":"db-1"},"startsAt":"2026-03-01T09:02:00Z","endsAt":"2026-03-01T09:12:00Z"}]}`
	alerts, err = intake.Parse([]byte(only), "")
	if err != nil {
		t.Fatal(err)
	}
	got = groupIncident(alerts)
	if len(got) != 1 || got[0].GetIsNoise() || !got[0].GetResolved() || !strings.Contains(got[0].GetAnnotations()["rcamesh_incident_alerts"], "2 alerts") {
		t.Fatalf("resolutions only: %d alerts, noise=%v, want one resolved incident of both", len(got), len(got) > 0 && got[0].GetIsNoise())
	}
}

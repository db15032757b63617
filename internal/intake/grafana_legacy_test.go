package intake

import "testing"

// Grafana's legacy alerting webhook: the rule's tags and the labels every
// matching series agrees on become the alert's labels (the matched
// series' service names the target); a label the matches disagree on is
// not taken.
func TestParseGrafanaLegacyEvalMatches(t *testing.T) {
	raw := []byte(`{"ruleName": "Ingest errors", "ruleId": 7, "state": "alerting", "title": "[Alerting] Ingest errors",
		"message": "Readings fail to store", "tags": {"team": "water"},
		"evalMatches": [{"value": 37, "metric": "ingest errors", "tags": {"service": "meter-ingest", "pod": "meter-ingest-7d-a1"}},
		                {"value": 12, "metric": "ingest errors", "tags": {"service": "meter-ingest", "pod": "meter-ingest-7d-b2"}}]}`)
	as, err := Parse(raw, "")
	if err != nil || len(as) != 1 {
		t.Fatalf("parse: %v %d", err, len(as))
	}
	a := as[0]
	if a.GetLabels()["service"] != "meter-ingest" || a.GetLabels()["team"] != "water" {
		t.Errorf("labels %v, want the matches' service and the rule's tags", a.GetLabels())
	}
	if _, ok := a.GetLabels()["pod"]; ok {
		t.Errorf("labels %v: the matches disagree on pod, none should be taken", a.GetLabels())
	}
	if a.GetService() != "meter-ingest" {
		t.Errorf("service %q, want meter-ingest", a.GetService())
	}
	if a.GetAnnotations()["eval_matches"] == "" {
		t.Error("the matched values are not kept")
	}
}

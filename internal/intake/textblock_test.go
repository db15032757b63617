package intake

import (
	"encoding/json"
	"testing"
)

func TestTextBlock(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		labels   map[string]string
		annNamed string
	}{
		{
			name:     "alertmanager default pagerduty details",
			text:     "Labels:\n - alertname = RolloutStuck\n - namespace = orders\n - deployment = checkout\nAnnotations:\n - summary = rollout not progressing\nSource: http://prom:9090/graph",
			labels:   map[string]string{"alertname": "RolloutStuck", "namespace": "orders", "deployment": "checkout"},
			annNamed: "summary",
		},
		{
			name:   "colon pairs, bullets, indented",
			text:   "Common Labels:\n  * k8s.namespace.name: billing\n  * service_name: ledger\n\nthe rest is prose: not a label",
			labels: map[string]string{"k8s.namespace.name": "billing", "service_name": "ledger"},
		},
		{
			name:   "no section header: nothing is read",
			text:   "namespace = orders\nservice = checkout",
			labels: map[string]string{},
		},
		{
			name:   "a prose line ends the section",
			text:   "Labels:\n - team = payments\nPlease look at the dashboard and restart = yes",
			labels: map[string]string{"team": "payments"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, a := textBlock(tc.text)
			if len(l) != len(tc.labels) {
				t.Fatalf("labels = %v, want %v", l, tc.labels)
			}
			for k, v := range tc.labels {
				if l[k] != v {
					t.Errorf("label %s = %q, want %q", k, l[k], v)
				}
			}
			if tc.annNamed != "" && a[tc.annNamed] == "" {
				t.Errorf("annotation %s missing: %v", tc.annNamed, a)
			}
		})
	}
}

// A PagerDuty incident that forwards Alertmanager's text: the labels inside
// the text name the workload; the PagerDuty service's display name does not
// become a second one, and the multi-line text is not a label.
func TestPagerDutyLabelsInsideDetailsText(t *testing.T) {
	details := "Labels:\n - alertname = KubeDeploymentRolloutStuck\n - namespace = permits\n - deployment = plan-review\nAnnotations:\n - summary = not progressing\n"
	body, _ := json.Marshal(map[string]any{"event": map[string]any{"event_type": "incident.triggered", "data": map[string]any{
		"title": "[FIRING:1] KubeDeploymentRolloutStuck plan-review", "status": "triggered",
		"service": map[string]any{"summary": "permits-platform"},
		"body":    map[string]any{"details": map[string]any{"firing": details, "num_firing": "1"}},
	}}})
	as, err := Parse(body, "")
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	if a.GetNamespace() != "permits" || a.GetService() != "plan-review" {
		t.Errorf("namespace/service = %q/%q, want permits/plan-review", a.GetNamespace(), a.GetService())
	}
	if _, ok := a.GetLabels()["firing"]; ok {
		t.Error("the multi-line details text stayed a label")
	}
	if a.GetSummary() != "not progressing" {
		t.Errorf("summary %q, want the forwarded summary", a.GetSummary())
	}
	// The same text as the details string: described by its summary, the
	// whole text kept as the details annotation.
	body, _ = json.Marshal(map[string]any{"event": map[string]any{"event_type": "incident.triggered", "data": map[string]any{
		"title": "[FIRING:1] KubeDeploymentRolloutStuck plan-review", "status": "triggered",
		"body": map[string]any{"details": details},
	}}})
	as, err = Parse(body, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := as[0].GetDescription(); d != "not progressing" || as[0].GetAnnotations()["details"] == "" {
		t.Errorf("description %q (details kept: %v), want the forwarded summary and the whole text as details", d, as[0].GetAnnotations()["details"] != "")
	}
	if a.GetLabels()["service"] == "permits-platform" {
		t.Error("the PagerDuty display service became the workload although the labels name one")
	}
}

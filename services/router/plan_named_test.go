package router

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// An alert about a node or a queue has no workload to scope a log search
// by: the search names the object, cluster-wide, whatever the label
// vocabulary calls it.
func TestPlanSearchesLogsForNamedObjects(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"node (kube-state label)", map[string]string{"alertname": "NodeCordonedTooLong", "node": "pool-a-q7vt"}, "pool-a-q7vt"},
		{"node (OpenTelemetry label)", map[string]string{"alertname": "NodeCordonedTooLong", "k8s.node.name": "pool-b-x1"}, "pool-b-x1"},
		{"queue", map[string]string{"alertname": "BacklogGrowing", "namespace": "messaging", "queue": "orders.v2"}, "orders.v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &investigationv1.Alert{Title: tc.labels["alertname"], Labels: tc.labels}
			p := plan(t, h, a, 0).GetPlan()
			s, _ := actionOf(p, "search_logs")
			if s == nil {
				t.Fatalf("no search_logs in %v", intentsOf(p))
			}
			f := s.GetParams().GetFields()
			if q := f["query"].GetStringValue(); !strings.Contains(q, `"`+tc.want+`"`) {
				t.Errorf("query = %q, want the quoted name %q", q, tc.want)
			}
			if ns := f["namespace"].GetStringValue(); ns != "all" {
				t.Errorf("namespace = %q, want all", ns)
			}
		})
	}
}

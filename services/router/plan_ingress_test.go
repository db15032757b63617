package router

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func TestPlanIngressAlertReadsBackendsAndProxyLogs(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name        string
		labels      map[string]string
		wantIngress bool
	}{
		{"ingress 5xx", map[string]string{"alertname": "EdgeHigh5xx", "namespace": "harbourline", "ingress": "quay-web"}, true},
		{"namespace 5xx without ingress", map[string]string{"alertname": "EdgeHigh5xx", "namespace": "harbourline"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &investigationv1.Alert{Title: "quay returns 100% 503 errors", Summary: "HTTP 5xx error rate at 100%", Labels: tc.labels}
			p := plan(t, h, a, 0).GetPlan()
			d, _ := actionOf(p, "describe_resource")
			gotIngress := d != nil && d.GetParams().GetFields()["kind"].GetStringValue() == "ingress" && d.GetParams().GetFields()["name"].GetStringValue() == "quay-web"
			if gotIngress != tc.wantIngress {
				t.Fatalf("describe ingress = %v, want %v (plan %v)", gotIngress, tc.wantIngress, intentsOf(p))
			}
			s, _ := actionOf(p, "search_logs")
			if s == nil {
				t.Fatalf("no search_logs in %v", intentsOf(p))
			}
			f := s.GetParams().GetFields()
			_, scoped := f["namespace"]
			if tc.wantIngress {
				if scoped || !strings.Contains(f["query"].GetStringValue(), "quay-web") {
					t.Errorf("ingress proxy-log search = %v", f)
				}
			} else if !scoped {
				t.Errorf("search without an ingress lost its namespace: %v", f)
			}
		})
	}
}

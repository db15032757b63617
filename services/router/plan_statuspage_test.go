package router

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// The status page joins the plan, low, for an alert about failures that
// names a host outside the cluster, asking for that host's provider; not
// for in-cluster names, nor for an alert that names no failure.
func TestPlanStatusPage(t *testing.T) {
	def := &evidencev1.ToolDefinition{Intent: "get_status_page", Available: true, Category: evidencev1.ToolCategory_TOOL_CATEGORY_LOGS,
		ParamsSchema: []*evidencev1.ToolParam{str("provider")}}
	for _, tc := range []struct {
		name     string
		alert    *investigationv1.Alert
		provider string
	}{
		{"failing calls to an outside URL", &investigationv1.Alert{Title: "Payment errors", Namespace: "shop", Service: "checkout",
			Summary: `5xx from https://eu.api.paynova.example/v1/charges`}, "paynova"},
		{"an outside host label", &investigationv1.Alert{Title: "Upstream error rate high", Labels: map[string]string{"upstream_host": "smtp.mailvolt.example", "namespace": "mail"}}, "mailvolt"},
		{"an in-cluster URL", &investigationv1.Alert{Title: "Error rate high", Summary: "errors from http://ledger.books.svc.cluster.local:8080/api"}, ""},
		{"an outside host but no failure", &investigationv1.Alert{Title: "Certificate renews soon", Summary: "https://api.paynova.example renews its certificate"}, ""},
		{"a link to the monitoring system", &investigationv1.Alert{Title: "Error rate high", Annotations: map[string]string{"runbook_url": "https://wiki.acmecorp.example/runbooks/errors"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scoreTool(def, viewAlert(tc.alert))
			if (s.score > 0) != (tc.provider != "") {
				t.Fatalf("score %.2f (%v), want a score: %v", s.score, s.rationale, tc.provider != "")
			}
			if tc.provider == "" {
				return
			}
			if s.score >= 1 {
				t.Errorf("score %.2f: the status page must stay below specific reasons", s.score)
			}
			if got := s.call.Params["provider"]; got != tc.provider {
				t.Errorf("provider = %v, want %s", got, tc.provider)
			}
		})
	}
}

// A request for a status page is routed to the tool, with the provider it
// names (a host stands for its provider); "status" alone stays pod status.
func TestNaturalStatusPage(t *testing.T) {
	reg := fuzzRegistry(t)
	for _, tc := range []struct{ q, intent, provider string }{
		{"check the status page of paynova", "get_status_page", "paynova"},
		{"is there anything on mailvolt's status page?", "get_status_page", "mailvolt"},
		{"status page for api.mailvolt.example", "get_status_page", "mailvolt"},
		{"show the status pages", "get_status_page", ""},
		{"what's the status of pods in shop", "check_pod_status", ""},
	} {
		t.Run(tc.q, func(t *testing.T) {
			p := ParseNatural(reg, tc.q, testContext())
			if p == nil || p.Primary.Tool.GetIntent() != tc.intent {
				t.Fatalf("plan %+v, want %s", p, tc.intent)
			}
			if got, _ := p.Primary.Params["provider"].(string); got != tc.provider {
				t.Errorf("provider = %q, want %q", got, tc.provider)
			}
		})
	}
}

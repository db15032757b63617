package brain

import (
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestMatchScope(t *testing.T) {
	pods := []facts.Pod{
		{Namespace: "billing", Name: "invoice-svc-7d9f8b6c4-x7gr9", Workload: "invoice-svc"},
		{Namespace: "billing", Name: "invoice-svc-worker-5c6d7e8f9-abcde", Workload: "invoice-svc-worker"},
		{Namespace: "edge", Name: "gateway-0", Labels: map[string]string{"app": "gateway"}},
		{Namespace: "edge-canary", Name: "gateway-canary-1", Labels: map[string]string{"app": "gateway"}},
		{Namespace: "monitoring", Name: "prometheus-0", Workload: "prometheus"},
	}
	tests := []struct {
		name   string
		names  []string
		wantNS string
		wantWL string
	}{
		{"workload name", []string{"invoice-svc"}, "billing", "invoice-svc"},
		{"pod name", []string{"invoice-svc-worker-5c6d7e8f9-abcde"}, "billing", "invoice-svc-worker"},
		{"app label in two namespaces is ambiguous", []string{"gateway"}, "", ""},
		{"earlier name wins over a later one", []string{"prometheus", "gateway"}, "monitoring", "prometheus"},
		{"a longer sibling name is not a pod of the shorter", []string{"invoice"}, "", ""},
		{"no match", []string{"payments"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, wl, why := matchScope(tc.names, pods)
			if ns != tc.wantNS || wl != tc.wantWL {
				t.Fatalf("matchScope(%v) = %q, %q (%s); want %q, %q", tc.names, ns, wl, why, tc.wantNS, tc.wantWL)
			}
			if why == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestScopeNames(t *testing.T) {
	a := &investigationv1.Alert{AlertName: "HighLatency", Summary: "p99 of checkout-api above 2s", Labels: map[string]string{"severity": "page"}}
	got, fromText := scopeNames(a)
	if !fromText {
		t.Error("names found in the summary must be marked as from text")
	}
	found := false
	for _, n := range got {
		if n == "checkout-api" {
			found = true
		}
	}
	if !found {
		t.Errorf("scopeNames = %v; want the workload-like token of the summary", got)
	}
	a = &investigationv1.Alert{Service: "cart", Labels: map[string]string{"k8s.deployment.name": "cart-v2"}}
	if got, fromText := scopeNames(a); len(got) < 2 || got[0] != "cart-v2" || fromText {
		t.Errorf("scopeNames = %v; want the deployment label first, then the service", got)
	}
}

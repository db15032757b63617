package intake

import (
	"strings"
	"testing"
)

func TestTargetResolutionFromText(t *testing.T) {
	tests := []struct {
		name, payload          string
		wantNS, wantSvc, wantP string
		notSvc, notNS          string
	}{
		{
			name:    "pagerduty labels only in the body text",
			payload: `{"event":{"event_type":"incident.triggered","data":{"title":"High error ratio","status":"triggered","body":{"details":"alertname=HighErrorRatio namespace=payments service=ledger-api severity=critical"}}}}`,
			wantNS:  "payments", wantSvc: "ledger-api",
		},
		{
			name:    "alertmanager with otel label spellings",
			payload: `{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"X","k8s_namespace_name":"orders","k8s_pod_name":"orders-api-7d9f8b6c4-x7gr9"},"annotations":{}}]}`,
			wantNS:  "orders", wantP: "orders-api-7d9f8b6c4-x7gr9",
		},
		{
			// An error tracker's issue: its tags are [key, value] pairs,
			// the host that raised it a pod of the emitting workload; the
			// cluster name in the error text is the dependency it called.
			name:    "tags as pairs name the emitting pod",
			payload: `{"action":"triggered","data":{"event":{"title":"ConnectionError: cannot connect to cache.shared-data.svc.cluster.local:6379","level":"error","tags":[["environment","production"],["server_name","checkout-api-5f7c9d8b6-q2wxz"]]}}}`,
			wantP:   "checkout-api-5f7c9d8b6-q2wxz", notSvc: "cache", notNS: "shared-data",
		},
		{
			name:    "tags as key and value objects",
			payload: `{"title":"Timeout calling ledger","tags":[{"key":"namespace","value":"billing"},{"key":"service","value":"invoice-worker"}]}`,
			wantNS:  "billing", wantSvc: "invoice-worker",
		},
		{
			name:    "generic alert whose namespace is in its expression",
			payload: `{"title":"Latency","annotations":{"expr":"histogram_quantile(0.99, rate(x_bucket{namespace=\"geo\",service=\"tiles\"}[5m])) > 1"}}`,
			wantNS:  "geo", wantSvc: "tiles",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := Parse([]byte(tc.payload), "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if tc.wantNS != "" && a.GetNamespace() != tc.wantNS {
				t.Errorf("namespace = %q, want %q", a.GetNamespace(), tc.wantNS)
			}
			if tc.wantSvc != "" && a.GetService() != tc.wantSvc {
				t.Errorf("service = %q, want %q", a.GetService(), tc.wantSvc)
			}
			if tc.wantP != "" && a.GetPod() != tc.wantP {
				t.Errorf("pod = %q, want %q", a.GetPod(), tc.wantP)
			}
			if tc.notSvc != "" && a.GetService() == tc.notSvc || tc.notNS != "" && a.GetNamespace() == tc.notNS {
				t.Errorf("service/namespace = %q/%q: the peer its error names, not the target", a.GetService(), a.GetNamespace())
			}
		})
	}
}

func TestAlertPayloadRedacted(t *testing.T) {
	payload := `{"version":"4","status":"firing","alerts":[{"status":"firing",
	 "labels":{"alertname":"DBDown","service":"billing","db_password":"pw-in-a-label"},
	 "annotations":{"summary":"connect failed with DB_PASS=Sup3rS3cret!","runbook_url":"https://hooks.slack.com/services/T0AAAA/B0BBBB/cccccccccccccccccccccc"}}]}`
	as, err := Parse([]byte(payload), "")
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	all := a.String()
	for _, secret := range []string{"pw-in-a-label", "Sup3rS3cret!", "cccccccccccccccccccccc"} {
		if strings.Contains(all, secret) {
			t.Errorf("secret %q reached the normalized alert: %s", secret, all)
		}
	}
	if a.GetService() != "billing" || a.GetAlertName() != "DBDown" {
		t.Errorf("redaction changed plain fields: %s %s", a.GetService(), a.GetAlertName())
	}
}

package intake

import (
	"testing"
)

// Envelopes no table knows, read by the shape of their fields: a check
// object whose name sits in its metadata names the alert; a chat card's
// markdown gives the title (its first line) and the entity lines in it
// ("**Namespace:** shop") become labels, other lines do not.
func TestLooseShapes(t *testing.T) {
	tests := []struct {
		name, payload             string
		wantName, wantNS, wantSvc string
		wantSummary               string
	}{
		{
			name:     "check object with its name in metadata",
			payload:  `{"entity":{"metadata":{"name":"worker-3"}},"check":{"metadata":{"name":"orders-backlog"},"output":"CRITICAL: backlog 5400 > 1000","status":2},"timestamp":1780000000}`,
			wantName: "orders-backlog", wantSummary: "CRITICAL: backlog 5400 > 1000",
		},
		{
			name:     "a service given as an object",
			payload:  `{"title":"Trip quote latency","service":{"displayName":"Trip quote","name":"trip-quote","project":"coach-prod"},"namespace":"coach"}`,
			wantName: "Trip quote latency", wantNS: "coach", wantSvc: "trip-quote",
		},
		{
			name:     "chat card in markdown",
			payload:  `{"roomId":"Y2lz","markdown":"## **[FIRING:1] CheckoutErrors**\n**Service:** checkout-api\n**Namespace:** shop\n**Runbook:** see the wiki page\nerror ratio 12% over 5m"}`,
			wantName: "[FIRING:1] CheckoutErrors", wantNS: "shop", wantSvc: "checkout-api",
		},
		{
			name:     "an alarm policy's name in a compound object, a cloud metric namespace",
			payload:  `{"sessionId":"x1","alarmStatus":1,"alarmType":"metric","alarmObjInfo":{"region":"sg","namespace":"qce/lb_public","dimensions":{"vip":"203.0.113.45"}},"alarmPolicyInfo":{"policyId":"p-1","policyType":"clb_listener","policyName":"orders-edge-latency","conditions":{"metricName":"rspavg","calcType":">","calcValue":"800"}},"firstOccurTime":"2026-05-09 18:16:00"}`,
			wantName: "orders-edge-latency",
		},
		{
			name:     "an escalation policy's name does not name the alert",
			payload:  `{"incident":{"title":"Disk full on db-1"},"escalation":{"policyName":"Tier 1"}}`,
			wantName: "Disk full on db-1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := Parse([]byte(tc.payload), "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if a.GetAlertName() != tc.wantName || a.GetNamespace() != tc.wantNS || a.GetService() != tc.wantSvc {
				t.Errorf("name %q ns %q svc %q, want %q %q %q", a.GetAlertName(), a.GetNamespace(), a.GetService(), tc.wantName, tc.wantNS, tc.wantSvc)
			}
			if tc.wantSummary != "" && a.GetSummary() != tc.wantSummary {
				t.Errorf("summary %q, want %q", a.GetSummary(), tc.wantSummary)
			}
			if _, ok := a.GetLabels()["runbook"]; ok {
				t.Errorf("a prose line that names no entity became a label: %v", a.GetLabels())
			}
		})
	}
}

func TestProseEntityPair(t *testing.T) {
	tests := []struct {
		line, k, v string
		ok         bool
	}{
		{"**Namespace:** shop", "namespace", "shop", true},
		{"- Cluster: prod-eu", "cluster", "prod-eu", true},
		{"Service: the checkout api", "", "", false}, // prose, not a name
		{"Runbook: wiki", "", "", false},             // not an entity key
		{"Host: https://x.example", "", "", false},   // a link
	}
	for _, tc := range tests {
		k, v, ok := proseEntityPair(tc.line)
		if k != tc.k || v != tc.v || ok != tc.ok {
			t.Errorf("%q: (%q, %q, %v), want (%q, %q, %v)", tc.line, k, v, ok, tc.k, tc.v, tc.ok)
		}
	}
}

// A generic alert keeps the fields its keys do not read (a resource's name,
// an info line, a number) as annotations: nothing the sender said is lost.
func TestGenericKeepsUnreadFields(t *testing.T) {
	as, err := Parse([]byte(`{"alertName":"Virtual machine is powered off","resourceName":"rf-w07","Health":25,"info":"Virtual machine rf-w07 is powered off","nested":{"x":"y"},"list":["a"],"application":"notary-prod"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	ann := as[0].GetAnnotations()
	for k, want := range map[string]string{"resourceName": "rf-w07", "Health": "25", "info": "Virtual machine rf-w07 is powered off"} {
		if ann[k] != want {
			t.Errorf("annotation %s = %q, want %q (all: %v)", k, ann[k], want, ann)
		}
	}
	if _, ok := ann["alertName"]; ok {
		t.Errorf("a read field kept twice: %v", ann)
	}
	if as[0].GetService() != "" || ann["application"] != "" {
		t.Errorf("an entity key the format does not read became a target: service %q, %v", as[0].GetService(), ann)
	}
}

package intake

import (
	"errors"
	"strings"
	"testing"
)

func TestOpsgenieWebhook(t *testing.T) {
	tests := []struct {
		name            string
		raw             string
		wantNS, wantSvc string
		wantSev         string
		wantResolved    bool
	}{
		{
			name: "labels as key:value tags",
			raw: `{"action":"Create","integrationName":"Webhook","alert":{"alertId":"a1","tinyId":"12","message":"Checkout 5xx above 2%",
				"tags":["namespace:shop","service:checkout","env:prod"],"priority":"P2","createdAt":1767261600000}}`,
			wantNS: "shop", wantSvc: "checkout", wantSev: "critical",
		},
		{
			name: "labels only inside the description text",
			raw: `{"action":"Create","alert":{"alertId":"a2","message":"[FIRING:1] QueueLag","priority":"P3",
				"description":"Labels:\n - alertname = QueueLag\n - namespace = billing\n - deployment = invoicer\nAnnotations:\n - summary = lag grows\n"}}`,
			wantNS: "billing", wantSvc: "invoicer", wantSev: "warning",
		},
		{
			name:         "close action resolves",
			raw:          `{"action":"Close","alert":{"alertId":"a3","message":"Disk almost full","tags":["node:worker-3"]}}`,
			wantResolved: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := Parse([]byte(tc.raw), "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if a.GetAlertSource() != "opsgenie" {
				t.Errorf("source = %q, want opsgenie", a.GetAlertSource())
			}
			if a.GetNamespace() != tc.wantNS || a.GetService() != tc.wantSvc {
				t.Errorf("namespace/service = %q/%q, want %q/%q", a.GetNamespace(), a.GetService(), tc.wantNS, tc.wantSvc)
			}
			if tc.wantSev != "" && a.GetSeverity() != tc.wantSev {
				t.Errorf("severity = %q, want %q", a.GetSeverity(), tc.wantSev)
			}
			if a.GetResolved() != tc.wantResolved {
				t.Errorf("resolved = %v, want %v", a.GetResolved(), tc.wantResolved)
			}
		})
	}
}

// An uptime check's payload with no name or title still parses: what it
// probes is the target and its error is the title.
func TestGenericCheckWithoutTitle(t *testing.T) {
	as, err := Parse([]byte(`{"status":"DOWN","error":"HTTP 503 from 2 of 3 regions","url":"http://cart.shop.svc.cluster.local/health","started_at":"2026-03-01T10:00:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	if a.GetTitle() == "" || a.GetNamespace() != "shop" || a.GetService() != "cart" {
		t.Errorf("title %q namespace %q service %q; want a title and shop/cart from the probed URL", a.GetTitle(), a.GetNamespace(), a.GetService())
	}
}

func TestWrappedAlertEnvelopes(t *testing.T) {
	tests := []struct {
		name, payload   string
		wantName        string
		wantSummary     string // substring of summary or description
		wantAnnotations map[string]string
	}{
		{"a search tool: named by the envelope, fields in a nested result",
			`{"search_name":"checkout errors above 50/min","sid":"rt_9f","result":{"service":"checkout","namespace":"shop","count":"412","message":"NullPointerException in PriceCalculator"},"results_link":"https://search.example/r/9f"}`,
			"checkout errors above 50/min", "NullPointerException", map[string]string{"results_link": "https://search.example/r/9f", "sid": "rt_9f"}},
		{"the sender's object beside the alert's",
			`{"action":"critical","actor":{"type":"application","id":"tracker","name":"Tracker"},"data":{"description_text":"1204 events in 5 minutes","metric_alert":{"id":"88","title":"ledger-api error spike","alert_rule":{"name":"ledger-api error spike","aggregate":"count()"}}}}`,
			"ledger-api error spike", "", map[string]string{"action": "critical"}},
		{"a watch: the alert two levels down",
			`{"watch_id":"w-17","trigger":{"triggered_time":"2026-03-01T10:00:00Z"},"payload":{"hits":{"title":"disk almost full on db-2","severity":"critical"}}}`,
			"", "", map[string]string{"watch_id": "w-17"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := Parse([]byte(tc.payload), "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if tc.wantName != "" && a.GetAlertName() != tc.wantName {
				t.Errorf("alert name %q, want %q", a.GetAlertName(), tc.wantName)
			}
			if a.GetAlertName() == "" && a.GetTitle() == "" {
				t.Errorf("neither name nor title: %v", a)
			}
			if tc.wantSummary != "" && !strings.Contains(a.GetSummary()+a.GetDescription(), tc.wantSummary) {
				t.Errorf("summary %q description %q, want %q", a.GetSummary(), a.GetDescription(), tc.wantSummary)
			}
			for k, v := range tc.wantAnnotations {
				if a.GetAnnotations()[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, a.GetAnnotations()[k], v)
				}
			}
		})
	}
	// Objects with no alert anywhere keep the unknown-format error.
	for _, p := range []string{`{"foo":1,"bar":2}`, `{"data":{"x":1},"id":"7"}`} {
		if _, err := Parse([]byte(p), ""); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Parse(%s) = %v, want ErrUnknownFormat", p, err)
		}
	}
}

// Every generic key weighs in the choice of the nested object that is the
// alert.
func TestGenericKeysWeighed(t *testing.T) {
	for _, k := range genericKeys {
		if alertKeyWeights[k] == 0 {
			t.Errorf("generic key %q has no weight", k)
		}
	}
}

// A monitor's event named by its event type (a certificate monitor's
// finding, a registry's scan event) is an alert named so; its other fields
// are kept.
func TestGenericNamedByEvent(t *testing.T) {
	as, err := Parse([]byte(`{"event":"certificate_issued","id":"ev-77","dns_names":["shop.example"],"issuer":"Example CA R3","not_after":"2026-09-01T00:00:00Z","discovered_at":"2026-06-03T04:00:00Z"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if a := as[0]; a.GetAlertName() != "certificate_issued" || a.GetAnnotations()["issuer"] != "Example CA R3" {
		t.Errorf("name %q, annotations %v", a.GetAlertName(), a.GetAnnotations())
	}
}

// An envelope's event type does not hide the alert it wraps (a helpdesk
// ticket created by a monitor): the nested alert is read.
func TestEventTypeDoesNotHideAWrappedAlert(t *testing.T) {
	as, err := Parse([]byte(`{"ticket":{"id":7,"subject":"[Alert] checkout errors above 5%","custom_fields":{"cf_service":"checkout"}},"event":"ticket_create","source":"helpdesk"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if a := as[0]; a.GetAlertName() == "ticket_create" || !strings.Contains(a.GetTitle()+a.GetAlertName()+a.GetSummary(), "checkout errors") {
		t.Errorf("name %q title %q summary %q: the wrapped ticket is the alert", a.GetAlertName(), a.GetTitle(), a.GetSummary())
	}
}

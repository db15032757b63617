package intake

import (
	"testing"
)

func TestParseSlackAttachments(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		wantN     int
		wantName  []string
		wantLabel map[string]string // labels of the first alert
		resolved  bool
	}{
		{
			name: "grafana slack template: two alerts, inline labels",
			raw: `{"username":"Grafana","text":"[FIRING:2] Lighting","attachments":[
			 {"title":"[FIRING] Commands not delivered","text":"many lamps missed it.\nLabels: alertname=CommandsUndelivered, severity=critical, team=ops","ts":1811973240,"color":"#D63232"},
			 {"title":"[FIRING] Broker alarm","text":"alarm on 3 nodes.\nLabels: alertname=BrokerAlarm, cluster=rmq-a","ts":1811973000}]}`,
			wantN: 2, wantName: []string{"CommandsUndelivered", "BrokerAlarm"},
			wantLabel: map[string]string{"severity": "critical", "team": "ops"},
		},
		{
			name: "alertmanager slack_configs: fields carry labels, resolved by colour",
			raw: `{"attachments":[{"fallback":"[RESOLVED] HighLatency","title":"[RESOLVED] HighLatency","color":"good",
			 "fields":[{"title":"namespace","value":"billing","short":true},{"title":"service","value":"invoice-api","short":true}]}]}`,
			wantN: 1, wantName: []string{"HighLatency"},
			wantLabel: map[string]string{"namespace": "billing", "service": "invoice-api"},
			resolved:  true,
		},
		{
			name: "discord embeds: prose labels in the description, fields by name",
			raw: `{"username":"Alerts","content":"**2 alerts firing**","embeds":[
			 {"title":"[FIRING] DNSLatencyHigh","description":"p99 0.7s\ncluster: lab-eu\nseverity: critical","timestamp":"2027-12-07T10:16:00Z","fields":[{"name":"namespace","value":"kube-system"}]},
			 {"title":"[FIRING] IntakeFailures","description":"failures 80/min\nservice: intake","timestamp":"2027-12-07T10:14:00Z"}]}`,
			wantN: 2, wantName: []string{"DNSLatencyHigh", "IntakeFailures"},
			wantLabel: map[string]string{"namespace": "kube-system", "cluster": "lab-eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as, err := Parse([]byte(tt.raw), "")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(as) != tt.wantN {
				t.Fatalf("got %d alerts, want %d", len(as), tt.wantN)
			}
			for i, n := range tt.wantName {
				if as[i].GetAlertName() != n {
					t.Errorf("alert %d name = %q, want %q", i, as[i].GetAlertName(), n)
				}
			}
			for k, v := range tt.wantLabel {
				if got := as[0].GetLabels()[k]; got != v {
					t.Errorf("label %s = %q, want %q", k, got, v)
				}
			}
			if as[0].GetResolved() != tt.resolved {
				t.Errorf("resolved = %v, want %v", as[0].GetResolved(), tt.resolved)
			}
			if as[0].GetStartsAt() == nil && tt.wantN == 2 {
				t.Errorf("no start time from ts")
			}
		})
	}
}

func TestErrorTrackerNestedHostIsPod(t *testing.T) {
	// An error tracker's notice read by its generic "message" key still
	// names the pod in a nested environment.hostname.
	raw := `{"event":"occurred","message":"[Ledger/production] NoMethodError: undefined method",
	 "project":{"id":1,"name":"Ledger"},
	 "notice":{"environment":{"hostname":"ledger-web-6d9f8c7b5-x2k9p"},"request":{"url":"https://ledger.example/entries/1"}}}`
	as, err := Parse([]byte(raw), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := as[0].GetAnnotations()["pod"]; got != "ledger-web-6d9f8c7b5-x2k9p" {
		t.Fatalf("pod annotation = %q (labels %v, annotations %v)", got, as[0].GetLabels(), as[0].GetAnnotations())
	}
}

// A list of names under an entity key (Alerta's service: a platform, then
// the application) names the last, most specific; "key=value" tags are
// labels.
func TestAlertaServiceListAndEqualsTags(t *testing.T) {
	raw := `{"resource":"wk-08","event":"NodeRebooted","severity":"major","service":["Kubernetes","ledger-api"],"tags":["cluster=prod-eu","dc=ams2"],"text":"wk-08 rebooted twice","createTime":"2027-03-17T10:45:00.000Z"}`
	as, err := Parse([]byte(raw), "")
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	if a.GetService() != "ledger-api" {
		t.Errorf("service = %q, want ledger-api", a.GetService())
	}
	if a.GetLabels()["cluster"] != "prod-eu" || a.GetLabels()["dc"] != "ams2" {
		t.Errorf("labels = %v, want cluster and dc from the tags", a.GetLabels())
	}
}

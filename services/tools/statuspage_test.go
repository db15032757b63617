package tools

import (
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// statusPages are two providers' pages; the incident time (the alert's) is
// 2027-03-02T10:00Z.
const statusPages = `[
 {"page":{"name":"Mailvolt Status","url":"https://status.mailvolt.example"},
  "incidents":[
   {"name":"Delayed delivery in EU","status":"identified","impact":"major","created_at":"2027-03-02T09:04:00Z",
    "components":[{"name":"SMTP relay EU","status":"major_outage"}],
    "incident_updates":[{"status":"identified","created_at":"2027-03-02T09:40:00Z","body":"A storage node failed; failing over."}]},
   {"name":"Webhook retries","status":"resolved","impact":"minor","created_at":"2027-02-28T08:00:00Z","resolved_at":"2027-02-28T09:00:00Z"},
   {"name":"API latency","status":"resolved","impact":"minor","created_at":"2027-01-10T08:00:00Z","resolved_at":"2027-01-10T09:00:00Z"}]},
 {"page":{"name":"AuthBox Status","url":"https://status.authbox.example"},
  "incidents":[{"name":"Login outage","status":"investigating","impact":"critical","created_at":"2027-03-02T09:30:00Z"}]},
 {"page":{"name":"Quietly Status","url":"https://status.quietly.example"},
  "incidents":[{"name":"Old outage","status":"resolved","impact":"major","created_at":"2027-01-01T08:00:00Z","resolved_at":"2027-01-01T09:00:00Z"}]},
 {"page":{"name":"Calm Status","url":"https://status.calm.example"},
  "incidents":[{"name":"Short blip","status":"resolved","impact":"minor","created_at":"2027-03-01T08:00:00Z","resolved_at":"2027-03-01T08:20:00Z"}]}
]`

func TestGetStatusPage(t *testing.T) {
	set, err := fixture.New(&scenario.Scenario{ID: "sp", AlertRaw: []byte(`{"alerts":[{"labels":{"alertname":"X"},"startsAt":"2027-03-02T10:00:00Z"}]}`),
		Evidence: map[string][]byte{"statuspage": []byte(statusPages)}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, set, nil)
	tests := []struct {
		provider string
		severity evidencev1.Severity
		noData   bool
		summary  string
		want     []string // incidents kept
	}{
		{"mailvolt", evidencev1.Severity_SEVERITY_HIGH, false, "1 incident open on the status page of mailvolt: Mailvolt Status: Delayed delivery in EU (identified, major impact)",
			[]string{"Delayed delivery in EU", "Webhook retries"}},
		{"authbox", evidencev1.Severity_SEVERITY_CRITICAL, false, "Login outage", []string{"Login outage"}},
		{"", evidencev1.Severity_SEVERITY_CRITICAL, false, "2 incidents open on the configured status pages", []string{"Login outage", "Delayed delivery in EU", "Short blip", "Webhook retries"}},
		{"calm", evidencev1.Severity_SEVERITY_INFO, false, "No open incident on the status page of calm; 1 ended recently", []string{"Short blip"}},
		{"quietly", evidencev1.Severity_SEVERITY_INFO, true, "ended more than 7 days ago", []string{}},
		{"paynorth", evidencev1.Severity_SEVERITY_INFO, true, "No incident or maintenance on the status page of paynorth", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.provider, func(t *testing.T) {
			r := run(t, s, "get_status_page", map[string]any{"provider": tc.provider}).GetResult()
			if !r.GetSuccess() {
				t.Fatalf("failed: %s", r.GetError())
			}
			if r.GetSeverity() != tc.severity || r.GetNoData() != tc.noData || !strings.Contains(r.GetSummary(), tc.summary) {
				t.Errorf("severity %s no_data %v summary %q; want %s %v %q", r.GetSeverity(), r.GetNoData(), r.GetSummary(), tc.severity, tc.noData, tc.summary)
			}
			if wantSrc := !tc.noData; wantSrc != (strings.Join(r.GetSources(), ",") == "statuspage") {
				t.Errorf("sources = %v", r.GetSources())
			}
			got := decode[[]facts.StatusIncident](t, r, facts.KeyStatusIncidents)
			var names []string
			for _, x := range got {
				names = append(names, x.Name)
			}
			if strings.Join(names, "|") != strings.Join(tc.want, "|") {
				t.Errorf("incidents = %v, want %v", names, tc.want)
			}
		})
	}
	r := run(t, s, "get_status_page", map[string]any{"provider": "mailvolt"}).GetResult()
	got := decode[[]facts.StatusIncident](t, r, facts.KeyStatusIncidents)
	if x := got[0]; x.LatestUpdate != "A storage node failed; failing over." || x.PageURL != "https://status.mailvolt.example" || x.CreatedAt == nil ||
		strings.Join(x.Components, ",") != "SMTP relay EU (major_outage)" {
		t.Errorf("incident fact = %+v", x)
	}
	if !strings.Contains(r.GetRawOutput(), "latest update") {
		t.Errorf("raw output lacks the latest update: %q", r.GetRawOutput())
	}
}

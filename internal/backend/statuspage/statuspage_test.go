package statuspage

import (
	"strings"
	"testing"
	"time"
)

// onePage is a page in the shape of /api/v2/summary.json merged with
// incidents.json: an open incident whose components are objects, updates
// listed newest first as the API does, and a resolved one.
const onePage = `{
  "page": {"id": "p1", "name": "Mailvolt Status", "url": "https://status.mailvolt.example"},
  "incidents": [
    {"name": "Delayed delivery in EU", "status": "identified", "impact": "major",
     "created_at": "2027-03-02T10:04:00.000+01:00", "updated_at": "2027-03-02T09:40:00Z",
     "components": [{"name": "SMTP relay EU", "status": "major_outage"}],
     "incident_updates": [
       {"status": "identified", "created_at": "2027-03-02T09:40:00Z", "body": "A storage node of the EU queue failed; we are failing over."},
       {"status": "investigating", "created_at": "2027-03-02T09:10:00Z", "body": "We are investigating delays."}
     ]},
    {"name": "API latency", "status": "resolved", "impact": "minor",
     "created_at": "2027-02-20T08:00:00Z", "resolved_at": "2027-02-20T09:00:00Z",
     "incident_updates": [{"status": "resolved", "created_at": "2027-02-20T09:00:00Z", "body": "Resolved."}]}
  ],
  "components": [{"name": "SMTP relay EU", "status": "major_outage"}, {"name": "Webhooks", "status": "operational"}]
}`

// recorded is a list of pages as an export may record them: components by
// name only (their status from the page's component list), updates oldest
// first, a scheduled maintenance, a failing component no incident names.
const recorded = `[
  {"page": {"name": "AuthBox Status", "url": "https://status.authbox.example"},
   "incidents": [{"name": "Login errors", "status": "investigating", "impact": "critical", "created_at": "2027-03-02T09:00:00Z",
     "components": ["Token API"],
     "incident_updates": [
       {"status": "investigating", "created_at": "2027-03-02T09:01:00Z", "body": "first"},
       {"status": "identified", "created_at": "2027-03-02T09:30:00Z", "body": "second, newest"}]}],
   "scheduled_maintenances": [{"name": "Certificate rotation", "status": "completed", "scheduled_for": "2027-02-25T13:00:00Z",
     "scheduled_until": "2027-02-25T14:00:00Z", "incident_updates": [{"status": "completed", "created_at": "2027-02-25T13:55:00Z", "body": "Done."}]}],
   "components": [{"name": "Token API", "status": "partial_outage"}, {"name": "Admin console", "status": "degraded_performance"}]},
  {"page": {"name": "Paynorth Status", "url": "https://status.paynorth.example"}, "incidents": []}
]`

func TestDecode(t *testing.T) {
	pages, err := Decode([]byte(onePage))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1 || pages[0].Name != "Mailvolt Status" || len(pages[0].Incidents) != 2 {
		t.Fatalf("pages = %+v", pages)
	}
	open := pages[0].Incidents[0]
	if open.Name != "Delayed delivery in EU" || !open.Open() || open.Impact != "major" || open.PageURL != "https://status.mailvolt.example" {
		t.Errorf("open incident = %+v", open)
	}
	if !open.CreatedAt.Equal(time.Date(2027, 3, 2, 9, 4, 0, 0, time.UTC)) {
		t.Errorf("created_at = %v, want 09:04Z (offset applied)", open.CreatedAt)
	}
	if !strings.HasPrefix(open.LatestUpdate, "A storage node") || strings.Join(open.Components, ",") != "SMTP relay EU (major_outage)" {
		t.Errorf("latest update %q components %v", open.LatestUpdate, open.Components)
	}
	if old := pages[0].Incidents[1]; old.Open() || old.ResolvedAt == nil {
		t.Errorf("resolved incident read as open: %+v", old)
	}

	pages, err = Decode([]byte(recorded))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 {
		t.Fatalf("%d pages, want 2", len(pages))
	}
	byName := map[string]int{}
	for i, x := range pages[0].Incidents {
		byName[x.Name] = i
	}
	login := pages[0].Incidents[byName["Login errors"]]
	if login.LatestUpdate != "second, newest" || strings.Join(login.Components, ",") != "Token API (partial_outage)" {
		t.Errorf("login incident = %+v", login)
	}
	mt := pages[0].Incidents[byName["Certificate rotation"]]
	if !mt.Maintenance || mt.Open() || mt.Impact != "maintenance" || mt.ResolvedAt == nil || mt.ResolvedAt.Hour() != 14 {
		t.Errorf("maintenance = %+v", mt)
	}
	// The failing component no open incident names is an incident of its
	// own; the one an incident names is not repeated.
	if i, ok := byName["Admin console is degraded performance"]; !ok || pages[0].Incidents[i].Impact != "minor" {
		t.Errorf("component outage missing: %v", byName)
	}
	if _, dup := byName["Token API is partial outage"]; dup {
		t.Errorf("component named by an open incident repeated as its own incident")
	}
	if len(pages[1].Incidents) != 0 {
		t.Errorf("quiet page has incidents: %+v", pages[1].Incidents)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "  ", "empty document"},
		{"not json", "{", "decode page"},
		{"list not json", "[{]", "decode list of pages"},
		{"no page name", `{"incidents": []}`, "page has no name or url"},
		{"incident without name", `{"page": {"name": "X"}, "incidents": [{"status": "investigating"}]}`, "incident has no name"},
		{"bad time", `{"page": {"name": "X"}, "incidents": [{"name": "a", "created_at": "yesterday"}]}`, `created_at "yesterday" is not an RFC 3339 time`},
		{"second page bad", `[{"page": {"name": "X"}}, {"incidents": []}]`, "page 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestIncidentsFilter(t *testing.T) {
	pages, err := Decode([]byte(recorded))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		provider string
		want     int
	}{
		{"", 3},
		{"AUTHBOX", 3},
		{"status.authbox.example", 3},
		{"paynorth", 0},
		{"mailvolt", 0},
	} {
		if got := Incidents(pages, tc.provider); len(got) != tc.want {
			t.Errorf("Incidents(%q) = %d, want %d", tc.provider, len(got), tc.want)
		}
	}
	all := Incidents(pages, "")
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt != nil && all[i-1].CreatedAt != nil && all[i].CreatedAt.After(*all[i-1].CreatedAt) {
			t.Errorf("not newest first: %v after %v", all[i].CreatedAt, all[i-1].CreatedAt)
		}
	}
}

func TestMerge(t *testing.T) {
	incidents := `{"page": {"name": "Mailvolt Status", "url": "https://status.mailvolt.example"},
	  "incidents": [{"name": "Delayed delivery", "status": "monitoring", "impact": "minor", "created_at": "2027-03-02T09:00:00Z"}]}`
	summary := `{"page": {"name": "Mailvolt Status"}, "components": [{"name": "SMTP", "status": "operational"}],
	  "incidents": [{"name": "Delayed delivery", "status": "monitoring", "impact": "minor", "created_at": "2027-03-02T09:00:00Z"}]}`
	p, err := Merge("status.mailvolt.example", "https://status.mailvolt.example", []byte(incidents), []byte(summary))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Mailvolt Status" || len(p.Incidents) != 1 {
		t.Errorf("merged page = %+v, want one incident reported by both answers", p)
	}
	if _, err := Merge("h", "u", []byte("<html>")); err == nil {
		t.Error("an HTML answer merged without error")
	}
	p, err = Merge("status.example.net", "https://status.example.net", []byte(`{"incidents": []}`))
	if err != nil || p.Name != "status.example.net" {
		t.Errorf("unnamed answer: page %+v err %v, want the host as its name", p, err)
	}
}

// Package statuspage reads the public status pages of outside providers in
// the shape of the Atlassian Statuspage public API (/api/v2/incidents.json,
// /api/v2/summary.json, /api/v2/scheduled-maintenances.json): a page, its
// incidents with their affected components and updates, its scheduled
// maintenances and its components' current status. The fixture backend
// (a recorded statuspage.json) and the live backend (HTTP GETs of the
// configured pages) share this decoding. Everything a page says is the
// provider's own text: data, never instructions.
package statuspage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Page is one provider's status page.
type Page struct {
	Name      string
	URL       string
	Incidents []facts.StatusIncident
}

// component is an Atlassian component, or just its name (some exports list
// an incident's components by name).
type component struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

func (c *component) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		return json.Unmarshal(b, &c.Name)
	}
	type plain component
	return json.Unmarshal(b, (*plain)(c))
}

type update struct {
	Status    string `json:"status"`
	Body      string `json:"body"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type incident struct {
	Name           string      `json:"name"`
	Status         string      `json:"status"`
	Impact         string      `json:"impact"`
	CreatedAt      string      `json:"created_at"`
	UpdatedAt      string      `json:"updated_at"`
	ResolvedAt     string      `json:"resolved_at"`
	StartedAt      string      `json:"started_at"`
	ScheduledFor   string      `json:"scheduled_for"`
	ScheduledUntil string      `json:"scheduled_until"`
	Components     []component `json:"components"`
	Updates        []update    `json:"incident_updates"`
}

// document is any of the API's answers, or a recorded page that merges them.
type document struct {
	Page *struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"page"`
	Incidents             []incident  `json:"incidents"`
	ScheduledMaintenances []incident  `json:"scheduled_maintenances"`
	Components            []component `json:"components"`
}

// Decode reads a status-page document: one page object, or a list of them.
// A page must name itself (page.name or page.url) and every incident must
// have a name; anything else is an error saying what is wrong.
func Decode(b []byte) ([]Page, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, errors.New("empty document")
	}
	var docs []document
	if trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &docs); err != nil {
			return nil, fmt.Errorf("decode list of pages: %w", err)
		}
	} else {
		var d document
		if err := json.Unmarshal(trimmed, &d); err != nil {
			return nil, fmt.Errorf("decode page: %w", err)
		}
		docs = []document{d}
	}
	pages := make([]Page, 0, len(docs))
	for i, d := range docs {
		p, err := d.page("", "")
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", i, err)
		}
		pages = append(pages, p)
	}
	return pages, nil
}

// Merge decodes the answers of one page's API endpoints (incidents.json,
// summary.json, ...) into one page; name and url are used when the answers
// do not name the page. An incident reported by several answers is kept
// once.
func Merge(name, url string, answers ...[]byte) (Page, error) {
	var all document
	for i, b := range answers {
		var d document
		if err := json.Unmarshal(b, &d); err != nil {
			return Page{}, fmt.Errorf("answer %d: %w", i, err)
		}
		if all.Page == nil {
			all.Page = d.Page
		}
		all.Incidents = append(all.Incidents, d.Incidents...)
		all.ScheduledMaintenances = append(all.ScheduledMaintenances, d.ScheduledMaintenances...)
		all.Components = append(all.Components, d.Components...)
	}
	return all.page(name, url)
}

func (d document) page(name, url string) (Page, error) {
	p := Page{Name: name, URL: url}
	if d.Page != nil {
		p.Name = firstNonEmpty(strings.TrimSpace(d.Page.Name), p.Name)
		p.URL = firstNonEmpty(strings.TrimSpace(d.Page.URL), p.URL)
	}
	if p.Name == "" && p.URL == "" {
		return Page{}, errors.New("page has no name or url")
	}
	current := map[string]string{}
	for _, c := range d.Components {
		if c.Name != "" && c.Status != "" {
			current[c.Name] = strings.ToLower(c.Status)
		}
	}
	seen := map[string]bool{}
	covered := map[string]bool{}
	add := func(in incident, maintenance bool) error {
		if strings.TrimSpace(in.Name) == "" {
			return errors.New("incident has no name")
		}
		x, err := in.fact(p, current, maintenance)
		if err != nil {
			return fmt.Errorf("incident %q: %w", in.Name, err)
		}
		key := x.Name + "|" + timeKey(x.CreatedAt)
		if seen[key] {
			return nil
		}
		seen[key] = true
		if x.Open() {
			for _, c := range in.Components {
				covered[c.Name] = true
			}
		}
		p.Incidents = append(p.Incidents, x)
		return nil
	}
	for _, in := range d.Incidents {
		if err := add(in, false); err != nil {
			return Page{}, err
		}
	}
	for _, in := range d.ScheduledMaintenances {
		if err := add(in, true); err != nil {
			return Page{}, err
		}
	}
	// A component the page shows as failing that no open incident names
	// is the page's own statement of an outage.
	names := make([]string, 0, len(current))
	for n := range current {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := current[n]
		if st == "operational" || st == "under_maintenance" || covered[n] {
			continue
		}
		p.Incidents = append(p.Incidents, facts.StatusIncident{Page: p.Name, PageURL: p.URL,
			Name: n + " is " + strings.ReplaceAll(st, "_", " "), Status: "investigating", Impact: componentImpact(st),
			Components: []string{n + " (" + st + ")"}})
	}
	sort.SliceStable(p.Incidents, func(i, j int) bool {
		return timeOf(p.Incidents[i].CreatedAt).After(timeOf(p.Incidents[j].CreatedAt))
	})
	return p, nil
}

func (in incident) fact(p Page, current map[string]string, maintenance bool) (facts.StatusIncident, error) {
	x := facts.StatusIncident{Page: p.Name, PageURL: p.URL, Name: strings.TrimSpace(in.Name),
		Status: strings.ToLower(in.Status), Impact: strings.ToLower(in.Impact), Maintenance: maintenance}
	var err error
	if x.CreatedAt, err = parseTime("created_at", firstNonEmpty(in.CreatedAt, in.StartedAt, in.ScheduledFor)); err != nil {
		return x, err
	}
	if x.UpdatedAt, err = parseTime("updated_at", in.UpdatedAt); err != nil {
		return x, err
	}
	if x.ResolvedAt, err = parseTime("resolved_at", in.ResolvedAt); err != nil {
		return x, err
	}
	if maintenance {
		if x.Impact == "" || x.Impact == "none" {
			x.Impact = "maintenance"
		}
		if x.ResolvedAt == nil && (x.Status == "completed" || x.Status == "verifying") {
			if x.ResolvedAt, err = parseTime("scheduled_until", in.ScheduledUntil); err != nil {
				return x, err
			}
		}
	}
	for _, c := range in.Components {
		if c.Name == "" {
			continue
		}
		st := firstNonEmpty(strings.ToLower(c.Status), current[c.Name])
		if st != "" {
			x.Components = append(x.Components, c.Name+" ("+st+")")
		} else {
			x.Components = append(x.Components, c.Name)
		}
	}
	found := false
	for _, u := range in.Updates {
		t, err := parseTime("incident_updates.created_at", firstNonEmpty(u.CreatedAt, u.UpdatedAt))
		if err != nil {
			return x, err
		}
		if strings.TrimSpace(u.Body) == "" {
			continue
		}
		// The API lists updates newest first; a recorded page may not.
		if !found || (t != nil && t.After(timeOf(x.LatestUpdateAt))) {
			found = true
			x.LatestUpdate, x.LatestUpdateAt = strings.TrimSpace(u.Body), t
		}
	}
	if x.UpdatedAt == nil && x.LatestUpdateAt != nil {
		t := *x.LatestUpdateAt
		x.UpdatedAt = &t
	}
	if x.Impact == "" {
		x.Impact = "none"
	}
	return x, nil
}

// componentImpact is the impact a component's status states.
func componentImpact(status string) string {
	switch status {
	case "major_outage":
		return "major"
	case "partial_outage":
		return "minor"
	case "degraded_performance":
		return "minor"
	}
	return "none"
}

// Matches reports whether the page is the provider's: its name or address
// contains provider (case-insensitive); "" matches every page.
func (p Page) Matches(provider string) bool {
	provider = strings.ToLower(strings.TrimSpace(provider))
	return provider == "" || strings.Contains(strings.ToLower(p.Name), provider) || strings.Contains(strings.ToLower(p.URL), provider)
}

// Incidents are the incidents of the pages that match provider, newest
// first.
func Incidents(pages []Page, provider string) []facts.StatusIncident {
	var out []facts.StatusIncident
	for _, p := range pages {
		if p.Matches(provider) {
			out = append(out, p.Incidents...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return timeOf(out[i].CreatedAt).After(timeOf(out[j].CreatedAt)) })
	return out
}

func parseTime(field, s string) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an RFC 3339 time", field, s)
	}
	t = t.UTC()
	return &t, nil
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func timeKey(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339)
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

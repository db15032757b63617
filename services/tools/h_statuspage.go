package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// statusRecent is how long after it ended a provider's incident is still
// reported: an incident resolved within it may explain errors that began
// before the page said so; older ones are history.
const statusRecent = 7 * 24 * time.Hour

// handleGetStatusPage reads outside providers' public status pages: the
// incidents and maintenances that are open, or ended within statusRecent
// of the backend's clock, one summary line each, the severity from the
// worst open impact.
func handleGetStatusPage(ctx context.Context, s *Service, c *Call, r *Result) error {
	provider := strings.TrimSpace(c.Params.String("provider"))
	all, err := s.be.Status.StatusIncidents(ctx, provider)
	if err != nil {
		return fmt.Errorf("statuspage: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, evidencev1.Domain_DOMAIN_NETWORK
	now := s.be.Clock()
	kept := []facts.StatusIncident{}
	for _, x := range all {
		if x.Open() || recentStatus(x, now) {
			kept = append(kept, x)
		}
	}
	r.Put(facts.KeyStatusIncidents, kept)
	who := "the configured status pages"
	if provider != "" {
		who = "the status page of " + provider
	}
	if len(kept) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		if len(all) == 0 {
			r.Summary = fmt.Sprintf("No incident or maintenance on %s.", who)
		} else {
			r.Summary = fmt.Sprintf("No open or recent incident on %s (%s ended more than %d days ago).", who, plural(len(all), "incident", "incidents"), int(statusRecent.Hours()/24))
		}
		return nil
	}
	r.Source(s.be.Source(backend.AreaStatusPage))
	var open []string
	for _, x := range kept {
		line := statusLine(x)
		r.Rawf("%s", line)
		if x.LatestUpdate != "" {
			r.Rawf("    latest update (%s): %s", fmtTime(x.LatestUpdateAt), x.LatestUpdate)
		}
		if x.Open() && !x.Maintenance {
			open = append(open, fmt.Sprintf("%s: %s (%s, %s impact)", x.Page, x.Name, x.Status, x.Impact))
			r.Snippet(line)
			r.Escalate(impactSeverity(x.Impact))
		} else {
			r.Escalate(evidencev1.Severity_SEVERITY_INFO)
		}
	}
	if len(open) == 0 {
		r.Summary = fmt.Sprintf("No open incident on %s; %d ended recently.", who, len(kept))
		return nil
	}
	r.Summary = fmt.Sprintf("%s open on %s: %s.", plural(len(open), "incident", "incidents"), who, strings.Join(open[:min(3, len(open))], "; "))
	return nil
}

// statusLine is one incident as a line of the raw output.
func statusLine(x facts.StatusIncident) string {
	kind := "incident"
	if x.Maintenance {
		kind = "maintenance"
	}
	line := fmt.Sprintf("[%s] %s %s: %q status=%s impact=%s created=%s", x.Page, kind, first(x.PageURL, "-"), x.Name, first(x.Status, "-"), x.Impact, fmtTime(x.CreatedAt))
	if x.ResolvedAt != nil {
		line += " resolved=" + fmtTime(x.ResolvedAt)
	}
	if len(x.Components) > 0 {
		line += " components=" + strings.Join(x.Components, ", ")
	}
	return line
}

// recentStatus: the incident ended (or, without an end, was last updated
// or created) within statusRecent before now, or after it.
func recentStatus(x facts.StatusIncident, now time.Time) bool {
	for _, t := range []*time.Time{x.ResolvedAt, x.UpdatedAt, x.CreatedAt} {
		if t != nil {
			return t.After(now.Add(-statusRecent))
		}
	}
	return false
}

// impactSeverity is the severity a provider's stated impact carries.
func impactSeverity(impact string) evidencev1.Severity {
	switch strings.ToLower(impact) {
	case "critical":
		return evidencev1.Severity_SEVERITY_CRITICAL
	case "major":
		return evidencev1.Severity_SEVERITY_HIGH
	case "minor":
		return evidencev1.Severity_SEVERITY_MEDIUM
	case "maintenance":
		return evidencev1.Severity_SEVERITY_LOW
	}
	return evidencev1.Severity_SEVERITY_LOW
}

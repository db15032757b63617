package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// An outside provider's public status page (get_status_page) is read the
// way an SRE reads it when a dependency outside the cluster fails: an
// incident of the same provider (its page's name or address, or one of its
// components, names the provider of the failing host, providerName) that
// is open, or was open around the onset, corroborates the failure; one
// that ended well before the onset, or belongs to another provider, is
// context that is ruled out. The provider's words are quoted as untrusted
// data, never read as instructions or as a cause.

// statusSlack is how long before the onset a provider's incident may have
// ended and still be the same outage (a provider declares recovery before
// every client has recovered).
const statusSlack = time.Hour

// statusOfProvider reports whether the incident is the provider's.
func statusOfProvider(x StatusIncident, provider string) bool {
	if provider == "" {
		return false
	}
	if containsFold(x.Page, provider) || containsFold(x.PageURL, provider) {
		return true
	}
	for _, c := range x.Components {
		if containsFold(c, provider) {
			return true
		}
	}
	return false
}

// statusEnd is when the incident ended, nil while it is open.
func statusEnd(x StatusIncident) *time.Time {
	if x.Open() {
		return nil
	}
	if x.ResolvedAt != nil {
		return x.ResolvedAt
	}
	if x.UpdatedAt != nil {
		return x.UpdatedAt
	}
	return x.CreatedAt
}

// statusAround: the incident was open at the onset, or ended at most
// statusSlack before it.
func statusAround(x StatusIncident, onset time.Time) bool {
	end := statusEnd(x)
	return end == nil || onset.IsZero() || !end.Before(onset.Add(-statusSlack))
}

// corroboratingStatus are the provider's incidents (not its finished
// maintenances) that were open around the onset, newest first.
func (ev *Evidence) corroboratingStatus(provider string, onset time.Time) []StatusIncident {
	var out []StatusIncident
	for _, x := range ev.StatusIncidents {
		// A maintenance counts while it runs; an incident while open or
		// around the onset.
		if statusOfProvider(x, provider) && statusAround(x, onset) && (!x.Maintenance || x.Open()) {
			out = append(out, x)
		}
	}
	return out
}

// statusOnset is the onset status-page incidents are judged against: the
// incident's (incidentOnset), else its first error line, else the
// evidence's reference time.
func (ev *Evidence) statusOnset() time.Time {
	if t, ok := ev.incidentOnset(); ok {
		return t
	}
	for _, l := range ev.errorLogs() {
		if l.Timestamp != nil {
			return *l.Timestamp
		}
	}
	return ev.Now
}

// stamp is a time of a status page: the time of day when it is the
// reference's day, else with its date.
func stamp(t *time.Time, ref time.Time) string {
	if t == nil || ref.IsZero() {
		return hhmm(t)
	}
	return hhmmDay(t, ref)
}

// statusClaim is the incident as a claim: its page, name, status, impact,
// components and latest update, the provider's words quoted.
func statusClaim(x StatusIncident, ref time.Time) string {
	kind := "incident"
	if x.Maintenance {
		kind = "maintenance"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Status page %s: %s %s is %s (impact %s", quote(x.Page), kind, quote(x.Name), strings.ReplaceAll(x.Status, "_", " "), x.Impact)
	if x.CreatedAt != nil {
		fmt.Fprintf(&b, ", since %s", stamp(x.CreatedAt, ref))
	}
	if end := statusEnd(x); end != nil {
		fmt.Fprintf(&b, ", ended %s", stamp(end, ref))
	}
	b.WriteString(")")
	if len(x.Components) > 0 {
		comps := x.Components
		if len(comps) > 3 {
			comps = comps[:3]
		}
		fmt.Fprintf(&b, "; components %s", quote(strings.Join(comps, ", ")))
	}
	if x.LatestUpdate != "" && !instructionLike(x.LatestUpdate) {
		fmt.Fprintf(&b, "; latest update: %s", quote(x.LatestUpdate))
	}
	return b.String()
}

// statusPageView adds what the provider of host says on its status page
// to a dependency finding: each of its incidents open around the onset as
// a validated claim, and a modest rise of the score (the provider confirms
// the outage from its side).
func (ev *Evidence) statusPageView(f *Finding, host string, onset time.Time) {
	provider := providerName(host)
	corr := ev.corroboratingStatus(provider, onset)
	if len(corr) == 0 {
		return
	}
	for i, x := range corr {
		if i >= 2 {
			break
		}
		f.validated(statusClaim(x, onset), x.Cite)
	}
	f.Score = min(f.Score+0.1, 0.95)
	f.Sources = appendUnique(f.Sources, corr[0].Cite.Sources...)
	f.inferred(fmt.Sprintf("The provider of %s (%s) reports the outage on its own status page: the failure is on its side, not in the callers", host, provider))
}

// statusPages rules out the status-page incidents the leading explanation
// does not rest on: another provider's, or one that ended well before the
// onset, each with its reason.
func (r *ruler) statusPages(leads []Finding) {
	ev := r.ev
	if len(ev.StatusIncidents) == 0 || leads[0].Healthy {
		return
	}
	host := ""
	if parts := strings.SplitN(leads[0].Entity, "/", 2); len(parts) == 2 && parts[0] == "host" {
		host = parts[1]
	}
	provider := providerName(host)
	onset := ev.statusOnset()
	text := leadText(leads)
	var ended, other []StatusIncident
	for _, x := range ev.StatusIncidents {
		if strings.Contains(text, quote(x.Name)) {
			continue // the lead cites it
		}
		switch end := statusEnd(x); {
		case provider != "" && !statusOfProvider(x, provider):
			other = append(other, x)
		case end != nil && !onset.IsZero() && end.Before(onset.Add(-statusSlack)):
			ended = append(ended, x)
		}
	}
	sort.SliceStable(ended, func(i, j int) bool { return statusEnd(ended[i]).After(*statusEnd(ended[j])) })
	for _, x := range ended {
		r.add("statuspage|"+x.Page+"|"+x.Name, "Outage of the provider behind "+quote(x.Page),
			fmt.Sprintf("%s, %s before the onset (%s): history, not this failure", statusClaim(x, onset), durHuman(onset.Sub(*statusEnd(x))), hhmmT(onset)), x.Cite)
	}
	for _, x := range other {
		r.add("statuspage|"+x.Page+"|"+x.Name, "Outage of the provider behind "+quote(x.Page),
			fmt.Sprintf("%s: another provider than the failing %s (%s)", statusClaim(x, onset), host, provider), x.Cite)
	}
}

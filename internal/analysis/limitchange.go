package analysis

import (
	"fmt"
	"strings"
	"time"
)

// A row of the cause-to-effect table that spans time: a bound (an
// autoscaler's maximum, a pool size, a limit, a quota) that a change set,
// and a capacity failure at that very bound. The load or the growth that
// meets the bound is the trigger; the change that set it is the cause, a
// configuration error, however long before the onset it was made (a cap
// lowered on quiet weeks' data holds until the first peak).
//
// The change is tied to the bound by specificity, not time: an identifier
// of the change (the setting it names: maxReplicas, pool_size) recurs in
// the text of the bound the failure is at. Names of the alert's target do
// not count: every change to a service names the service.

// ModeLimitChange: a capacity failure at a bound a change set.
const ModeLimitChange = "limit_change"

// limitChangeLookback: how long a changed bound waits for its first peak.
const limitChangeLookback = 45 * 24 * time.Hour

// boundTexts are the texts of the bounds the alerted workload is at: its
// abnormal autoscaler and rollout conditions, its autoscalers' signals
// and the measurements at their published limits.
func (ev *Evidence) boundTexts() ([]string, Cite) {
	var out []string
	var c Cite
	for _, a := range ev.activeAbnormal() {
		out = append(out, a.text)
		c.merge(a.cite)
	}
	ent := ev.workloadEntity()
	_, name := splitEntity(ent)
	for _, d := range ev.Deployments {
		if name != "" && d.Name != name {
			continue
		}
		for _, a := range d.Autoscalers {
			for _, s := range a.Signals {
				if strings.Contains(s, "bound") {
					out = append(out, a.Kind+" "+a.Name+": "+s)
					c.merge(d.Cite)
				}
			}
		}
	}
	for _, h := range ev.limitsReached() {
		out = append(out, h.text())
		c.merge(h.usage.Cite)
	}
	return out, c
}

// limitChangeRefs are the ledger's configuration and capacity changes,
// commits of any repository included, before the onset and within the
// look-back.
func (ev *Evidence) limitChangeRefs(onset time.Time) []changeRef {
	var refs []changeRef
	for _, c := range ev.Commits {
		if c.Removed || c.Timestamp == nil {
			continue
		}
		files := make([]string, 0, len(c.Files))
		for _, f := range c.Files {
			files = append(files, f.Path)
		}
		txt := fmt.Sprintf("commit %s of %s (%s) at %s", short(c.SHA), firstNonEmptyStr(c.Service, "the repository"), clip(c.Message, 120), hhmmDay(c.Timestamp, onset))
		if len(files) > 0 {
			txt += ", touching " + strings.Join(files[:min(3, len(files))], ", ")
		}
		refs = append(refs, changeRef{text: txt, at: c.Timestamp, cite: c.Cite, kind: commitKind(c.Commit), service: c.Service, entity: "commit/" + short(c.SHA), commits: []Commit{c}})
	}
	refs = append(refs, ev.objectChanges()...)
	refs = append(refs, ev.announcedChanges()...)
	var out []changeRef
	for _, r := range refs {
		if r.at == nil || r.at.After(onset) || onset.Sub(*r.at) > limitChangeLookback || r.unrelated {
			continue
		}
		if r.kind != changeConfig && r.kind != changeCapacity {
			continue
		}
		out = append(out, r)
	}
	return out
}

// hhmmDay is hhmm, with the date when t is not on ref's day.
func hhmmDay(t *time.Time, ref time.Time) string {
	if t == nil {
		return "?"
	}
	if t.UTC().Format("2006-01-02") != ref.UTC().Format("2006-01-02") {
		return t.UTC().Format("2006-01-02 15:04Z")
	}
	return hhmm(t)
}

// limitChangeFinding: the lead is a capacity failure (resource category)
// at a bound whose setting a change before the onset names. It reports
// false when no change names the bound.
func (ev *Evidence) limitChangeFinding(lead Finding, onset time.Time) (Finding, bool) {
	if lead.Healthy || lead.Category != catResource || onset.IsZero() {
		return Finding{}, false
	}
	bounds, bc := ev.boundTexts()
	if len(bounds) == 0 {
		return Finding{}, false
	}
	names := ev.targetNames()
	var best *changeRef
	var ids []string
	for _, r := range ev.limitChangeRefs(onset) {
		var own []string
		for _, id := range sharedIdentifiers(r.text, bounds) {
			if !namesTarget(id, names) {
				own = append(own, id)
			}
		}
		if len(own) == 0 {
			continue
		}
		if best == nil || r.at.After(*best.at) {
			rr := r
			best, ids = &rr, own
		}
	}
	if best == nil {
		return Finding{}, false
	}
	bound := bounds[0]
	for _, b := range bounds {
		if strings.Contains(b, ids[0]) {
			bound = b
			break
		}
	}
	f := Finding{Mode: ModeLimitChange, Detector: ModeLimitChange, Category: catConfig, Entity: best.entity, Score: min(0.95, lead.Score+0.05)}
	if f.Entity == "" {
		f.Entity = lead.Entity
	}
	gap := durHuman(onset.Sub(*best.at))
	f.Statement = fmt.Sprintf("The %s set the bound %s is now at (%s; it names %s), %s before the onset at %s: the load meets a configured limit, not a fault of capacity. %s",
		best.text, firstNonEmptyStr(strings.TrimPrefix(lead.Entity, "deployment/"), "the workload"), clip(bound, 220), strings.Join(ids, ", "), gap, hhmm(&onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("The change that set the bound: %s", best.text), best.cite)
	for _, c := range best.commits {
		f.validated(commitText(c), c.Cite)
	}
	f.validated("The workload is at that bound: "+bound, bc)
	f.Validated = append(f.Validated, lead.Validated...)
	f.Chain = append([]string{"Change: " + best.text + " sets the bound (" + strings.Join(ids, ", ") + ")", "Demand rises past what the bound allows"}, lead.Chain...)
	f.Remediation = append([]string{fmt.Sprintf("Raise or revert the bound the change set (%s)", strings.Join(ids, ", ")), "Size bounds on peak demand, not on a quiet period's"}, lead.Remediation...)
	f.Signals = append([]string{"limit", "change"}, lead.Signals...)
	f.Sources = append([]string(nil), lead.Sources...)
	f.explains(lead.Mode, "the capacity failure is the bound the change set, met by demand")
	return f, true
}

// boundSetByChange: the strongest fault finding is a capacity failure at a
// bound a change set before the alert (limitChangeFinding).
func (ev *Evidence) boundSetByChange(findings []Finding) (Finding, bool) {
	at := ev.alertTime()
	if at == nil {
		return Finding{}, false
	}
	var lead *Finding
	for i := range findings {
		f := &findings[i]
		if f.Healthy || f.Score < minFaultScore {
			continue
		}
		if lead == nil || f.Score > lead.Score {
			lead = f
		}
	}
	if lead == nil {
		return Finding{}, false
	}
	return ev.limitChangeFinding(*lead, *at)
}

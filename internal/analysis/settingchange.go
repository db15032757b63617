package analysis

import (
	"fmt"
	"strings"
)

// A row of the change table by specificity alone: a change of settings
// (a commit of configuration only, an object's edit, an announced
// setting) up to specificLookback before the onset, whose own identifiers
// (the setting it names: max.poll.interval.ms, retention.ms) recur in the
// lead failure's words, which are not a name of the failing target. A
// consumer kicked out of its group because a batch now outlasts
// max.poll.interval.ms, after a change that raised max.poll.records and
// names that interval, fails on the setting: a configuration error, the
// change its entity, whatever mechanism read the symptoms (a lag, a pool,
// a dependency).

// maxFailingTemplates bounds the failing lines a change is matched on.
const maxFailingTemplates = 40

func (ev *Evidence) settingChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || !sc.hasOnset {
		return Finding{}, false
	}
	switch lead.Category {
	case catResource, catDependency, catInfra, catUnknown:
	default:
		return Finding{}, false
	}
	onset := sc.onset
	// A setting ties the change to the failure, not an object: the names
	// of the alert's target, the lead's entity and every pod, workload,
	// node and described object of the evidence do not count (the pod that
	// announced a reload names itself).
	names := ev.targetNames()
	if _, n := splitEntity(lead.Entity); n != "" {
		names = appendUnique(names, strings.ToLower(n))
	}
	for _, p := range ev.Pods {
		names = appendUnique(names, strings.ToLower(p.Name))
	}
	for _, d := range ev.Deployments {
		names = appendUnique(names, strings.ToLower(d.Name))
	}
	for _, n := range ev.Nodes {
		names = appendUnique(names, strings.ToLower(n.Name))
	}
	for _, r := range ev.Resources {
		if !r.Listed { // a listing's object is read for its settings, not named
			names = appendUnique(names, strings.ToLower(r.Name))
		}
	}
	for _, l := range ev.Logs {
		names = appendUnique(names, strings.ToLower(l.Pod))
	}
	// What failed: the lead's words and every failing line of the
	// evidence (a consumer group's lead is told by its consumers' lines,
	// which need not name the group).
	failure := ev.failureTexts(lead)
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if k := logTemplate(l.Message); !seen[k] && len(seen) < maxFailingTemplates && ev.failingLine(l) {
			seen[k] = true
			failure = append(failure, l.Message)
		}
	}
	var best *changeRef
	var ids []string
	for _, r := range sc.refs {
		if r.kind != changeConfig || r.at == nil || r.at.After(onset) || onset.Sub(*r.at) > specificLookback {
			continue
		}
		text := r.text
		for _, c := range r.commits {
			text += "\n" + c.Summary
		}
		own := specificIDs(text, failure, names)
		if len(own) == 0 || holderMade(text, lead.Entity, ev.targetNames()) {
			continue // a change that made the holder added demand, it set nothing
		}
		if best == nil || r.at.After(*best.at) {
			rr := r
			best, ids = &rr, own
		}
	}
	if best == nil {
		return Finding{}, false
	}
	f := changeFinding(lead, *best, catConfig)
	f.Statement = fmt.Sprintf("The %s, %s before the onset at %s, changed what the failure names (%s): %s",
		best.text, durHuman(onset.Sub(*best.at)), hhmm(&onset), strings.Join(ids, ", "), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("Configuration change %s before the onset (%s), naming %s as the failure does: %s", durHuman(onset.Sub(*best.at)), hhmm(&onset), strings.Join(ids, ", "), best.text), best.cite)
	f.quoteCommits(*best)
	f.adoptLead(lead, []string{"Change: " + best.text, "The failure names what it changed: " + strings.Join(ids, ", ")},
		[]string{"Revert the configuration change (" + best.text + ") and confirm the symptoms stop"},
		[]string{"change", "config"}, "the failure names the setting the change made")
	return f, true
}

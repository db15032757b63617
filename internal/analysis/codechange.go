package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A third row of the change table: a release whose code names the
// mechanism of a capacity or dependency failure. A capacity failure has a
// trigger (load, a slow query, a throttled call); when a code change shipped
// before the onset is about that very mechanism (the commit that removed a
// cache names the calls now throttled; the migration that alters a table
// names the table now locked; the retry loop names the calls it
// multiplies), the release is the cause: a code defect, the commit its
// entity. Specificity ties them, not time: a symbol of the commit's code
// (CamelCase, snake_case, dotted) recurs in the failure's evidence.

// codeChangeLookback bounds how long a release waits for the load that
// exposes it.
const codeChangeLookback = 30 * 24 * time.Hour

// codeSymbol: id is written the way code names things (CamelCase,
// snake_case, dotted), not as a kebab-case object name or a path.
func codeSymbol(id string) bool {
	if strings.ContainsAny(id, "/-") {
		return false
	}
	return strings.ContainsAny(id, "_.") || reCamelSymbol.MatchString(id)
}

// reOwnExhaustion: a process's own memory or file descriptors exhausted.
var reOwnExhaustion = regexp.MustCompile(`(?i)(metaspace|heap|out ?of ?memory|oomkilled|\boom\b|memory (leak|limit)|file descriptors|open files|open_fds|\bfds?\b)`)

var reCamelSymbol = regexp.MustCompile(`[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]`)

// codeRefs are the ledger's code changes before onset within the
// look-back: releases that shipped code (by their rollout's start) and code
// commits of any repository.
func (ev *Evidence) codeRefs(onset time.Time) []changeRef {
	var refs []changeRef
	for _, r := range ev.deployRefs(true) {
		if len(r.commits) > 0 {
			refs = append(refs, r)
		}
	}
	refs = append(refs, ev.commitRefs(onset)...)
	return refsBefore(refs, onset, codeChangeLookback, func(r changeRef) bool { return r.kind == changeCode })
}

// failureTexts are what the lead's failure says in evidence: its statement,
// its claims and the error lines of the alerted workload.
func (ev *Evidence) failureTexts(lead Finding) []string {
	out := []string{lead.Statement}
	for _, c := range lead.Validated {
		out = append(out, c.Text)
	}
	seen := map[string]bool{}
	names := ev.targetNames()
	for _, l := range ev.errorLogs() {
		t := logTemplate(l.Message)
		if seen[t] || len(seen) >= 20 {
			continue
		}
		if len(names) == 0 || ownLine(l, names) || namesTarget(l.Message, names) {
			seen[t] = true
			out = append(out, l.Message)
		}
	}
	return out
}

// codeChange: the lead is a capacity or dependency failure and a code
// change before the onset names its mechanism.
func (ev *Evidence) codeChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || lead.Category != catResource && lead.Category != catDependency || !sc.hasOnset {
		return Finding{}, false
	}
	if reOwnExhaustion.MatchString(lead.Statement) {
		// The process's own memory or descriptors running out is resource
		// exhaustion whatever code filled them (a leak is named as one).
		return Finding{}, false
	}
	refs := ev.codeRefs(sc.onset)
	if len(refs) == 0 {
		return Finding{}, false
	}
	failure := ev.failureTexts(lead)
	names := ev.targetNames()
	common := ev.commonTerms()
	type scored struct {
		r   changeRef
		ids []string
	}
	var best *scored
	for _, r := range refs {
		var text string
		for _, c := range r.commits {
			text += "\n" + c.Message + "\n" + c.Summary
			for _, f := range c.Files {
				text += "\n" + f.Path
			}
		}
		// Only a symbol of code ties a commit to a failure: a CamelCase,
		// snake_case or dotted name (GetRateCard, max_age, kms.Decrypt),
		// not a kebab-case object name or a path, which name where, not
		// what.
		var ids []string
		for _, id := range sharedIdentifiers(text, failure) {
			if codeSymbol(id) && !namesTarget(id, names) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		own := ids
		for _, w := range sharedTerms(text, failure, common) {
			if !namesTarget(w, names) {
				own = appendUnique(own, w)
			}
		}
		if best == nil || len(own) > len(best.ids) || len(own) == len(best.ids) && r.at.After(*best.r.at) {
			best = &scored{r, own}
		}
	}
	if best == nil {
		return Finding{}, false
	}
	ch := best.r
	f := Finding{Mode: ModeLimitChange, Detector: ModeLimitChange, Category: catCode, Entity: ch.entity, Score: min(0.95, lead.Score+0.05)}
	if len(ch.commits) == 1 {
		f.Entity = "commit/" + short(ch.commits[0].SHA)
	}
	if f.Entity == "" {
		f.Entity = lead.Entity
	}
	sort.Strings(best.ids)
	f.Statement = fmt.Sprintf("The %s changed the code behind the failure (it names %s), %s before the onset at %s: %s",
		ch.text, strings.Join(best.ids[:min(4, len(best.ids))], ", "), durHuman(sc.onset.Sub(*ch.at)), hhmm(&sc.onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("The code change that names the failure's mechanism (%s): %s", strings.Join(best.ids[:min(4, len(best.ids))], ", "), ch.text), ch.cite)
	f.quoteCommits(ch)
	f.adoptLead(lead,
		[]string{"Change: " + ch.text + " (" + strings.Join(best.ids[:min(4, len(best.ids))], ", ") + ")", "The new code's demand on the resource or dependency exceeds what it allows"},
		[]string{"Roll back or fix the change (" + ch.text + ")", "Test the change's load on the resource before the next release"},
		[]string{"code", "change"}, "the capacity or dependency failure is what the changed code does under load")
	return f, true
}

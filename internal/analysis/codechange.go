package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
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
	if _, n := splitEntity(lead.Entity); n != "" && len(names) > 0 {
		// The lead's own entity (the caller the failure surfaced in) says
		// what failed too.
		names = append(append([]string(nil), names...), n)
	}
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
	refs := ev.codeRefs(sc.onset)
	if len(refs) == 0 {
		return Finding{}, false
	}
	if lead.Category == catResource {
		if f, ok := ev.unboundedChange(lead, sc, refs); ok {
			return f, true
		}
	}
	if reOwnExhaustion.MatchString(lead.Statement) {
		// The process's own memory or descriptors running out is resource
		// exhaustion whatever code filled them, unless a change says it
		// stopped bounding them (unboundedChange).
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
		for _, m := range bumpedModules(r.commits) {
			// A library the release bumped that the failing lines name (a
			// client's log prefix, its package in a frame): its new
			// behaviour is the code that changed.
			if !namesTarget(m, names) && slices.ContainsFunc(failure, func(t string) bool { return namesPeer(t, []string{m}) }) {
				ids = appendUnique(ids, m)
			}
		}
		if lock := lockWaitIn(failure); lock != "" && shipsMigration(r.commits) {
			// A schema migration takes locks on the tables it alters:
			// sessions that wait on a lock after one shipped wait on it.
			ids = appendUnique(ids, lock)
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
	if len(ch.commits) == 1 {
		ch.entity = "commit/" + short(ch.commits[0].SHA)
	}
	f := changeFinding(lead, ch, catCode)
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

// A fourth row: a capacity exhausted after a code change of the entity
// that exhausts it (or one naming it) which, in its own words, stopped
// bounding what it takes: a handle or connection no longer closed or
// released, writes without an expiry, a client without a timeout, retries
// without backoff, an unbounded collection, a leak. The resource running
// out is the effect; the change that removed the bound is the cause, a
// code defect.

// reUnbounded: a change's words that it takes a resource without bounding
// it (the negation before the bound, or the bound removed after it).
var reUnbounded = regexp.MustCompile(`(?i)\b(?:without|never|missing|skips?|skipping|forgets?)\b[^.\n]{0,40}\b(?:ttl|expir(?:y|ation|es?)|timeouts?|limits?|bounds?|backoff|jitter|close\(?\)?|closes|closing|closed|releases?d?|evict\w*|clean ?up|caps?)\b|\bno (?:\w+ )?(?:ttl|expiry|expiration|timeouts?|limits?|bounds?|backoff|eviction|cap)\b|\b(?:ttl|expiry|timeouts?|limits?|backoff|close\(\)|release)\b[^.\n]{0,60}\b(?:is |are |was |were )?(?:removed|dropped|deleted)\b|\bunbounded\b|\bleak(?:s|ing|ed)?\b`)

// unboundedChange applies the fourth row to a capacity lead: the latest
// code change before the onset, of the lead's entity or naming it, whose
// words say it stopped bounding what it takes.
func (ev *Evidence) unboundedChange(lead Finding, sc changeScan, refs []changeRef) (Finding, bool) {
	_, ent := splitEntity(lead.Entity)
	if ent == "" {
		return Finding{}, false
	}
	ent = strings.ToLower(ent)
	var best *changeRef
	var why string
	for _, r := range refs {
		for _, c := range r.commits {
			text := c.Message + "\n" + c.Summary
			m := reUnbounded.FindString(text)
			if m == "" {
				continue
			}
			mine := strings.EqualFold(c.Service, ent) || strings.Contains(strings.ToLower(text), ent)
			if !mine {
				continue
			}
			if best == nil || r.at.After(*best.at) {
				rr := r
				rr.entity = "commit/" + short(c.SHA) // the commit whose words say it
				best, why = &rr, m
			}
		}
	}
	if best == nil {
		return Finding{}, false
	}
	ch := *best
	f := changeFinding(lead, ch, catCode)
	f.Statement = fmt.Sprintf("The %s stopped bounding what the code takes (%s), %s before the onset at %s: %s",
		ch.text, quote(why), durHuman(sc.onset.Sub(*ch.at)), hhmm(&sc.onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("The code change says it no longer bounds the resource (%s): %s", quote(why), ch.text), ch.cite)
	f.quoteCommits(ch)
	f.adoptLead(lead,
		[]string{"Change: " + ch.text + " (" + why + ")", "What the code takes is no longer bounded or released", "The resource runs out under load"},
		[]string{"Fix or roll back the change (" + ch.text + "): restore the bound (close, expiry, timeout, backoff)", "Then free what was taken (restart, flush the unbounded keys)"},
		[]string{"code", "change", "unbounded"}, "the exhausted resource is what the changed code no longer bounds")
	return f, true
}

// reLockWait: sessions of a database waiting on a lock, in the words of
// MySQL, PostgreSQL and their drivers (not a deadlock, which a retry ends).
var reLockWait = regexp.MustCompile(`(?i)(lock wait timeout|waiting for (?:table )?(?:metadata )?lock|metadata lock|canceling statement due to lock timeout|lock timeout|could not obtain lock|lock not available|locknotavailable)`)

// lockWaitIn is the first lock wait the failure's texts name, lower-cased,
// or "".
func lockWaitIn(texts []string) string {
	for _, t := range texts {
		if m := reLockWait.FindString(t); m != "" {
			return strings.ToLower(m)
		}
	}
	return ""
}

// shipsMigration reports whether one of the commits changes a database
// schema (its change type, or a file under a migrations folder).
func shipsMigration(commits []Commit) bool {
	for _, c := range commits {
		for _, t := range c.ChangeTypes {
			if t == facts.ChangeDBMigration {
				return true
			}
		}
		for _, f := range c.Files {
			if f.ChangeType == facts.ChangeDBMigration || strings.Contains(strings.ToLower(f.Path), "migration") {
				return true
			}
		}
	}
	return false
}

// reBump: a dependency update as bots and people write it ("bump httpkit
// from 2.9.4 to 3.0.1", "update pgx to v5.6", "upgrade lodash 4.17.20 ->
// 4.17.21"): the module's name, its last path element for a path.
var reBump = regexp.MustCompile(`(?i)\b(?:bump|bumps|update|updates|upgrade|upgrades)\s+(?:(?:dependency|module|package|crate|gem)\s+)?([A-Za-z0-9@][A-Za-z0-9@._/-]{2,80})\s+(?:from|to|v?\d)`)

// bumpedModules are the libraries the commits bump, by their messages and
// descriptions; names of four characters or more.
func bumpedModules(commits []Commit) []string {
	var out []string
	for _, c := range commits {
		for _, m := range reBump.FindAllStringSubmatch(c.Message+"\n"+c.Summary, -1) {
			name := strings.ToLower(m[1])
			name = name[strings.LastIndex(name, "/")+1:]
			if len(name) >= 4 && name != "dependency" && name != "dependencies" {
				out = appendUnique(out, name)
			}
		}
	}
	return out
}

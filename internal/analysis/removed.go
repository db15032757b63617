package analysis

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/intent"
)

// A change row of the cause-to-effect table: what the alert watches was
// removed shortly before it fired. A DNS controller that deleted the
// record a check resolves, a pipeline that deregistered the target a load
// balancer served, a cleanup that dropped the bucket a probe reads: the
// line says it removed the very name the alert carries (the verb next to
// the name, not somewhere else in a sentence), nothing in the cluster
// fails, and the check fails because its target is gone. The remover's
// change is a configuration error (an ownership or scope setting that let
// it remove what was not its own); the remover is the entity.

// ModeRemovedTarget: the alert's own target was removed before it fired.
const ModeRemovedTarget = "removed_target"

// ActsAsConfigured reports whether a mode accuses a workload of what it
// did as configured (a controller that removed a record): its own health
// does not clear it.
func ActsAsConfigured(mode string) bool { return mode == ModeRemovedTarget }

// removedLead: a removal this long before the alert still explains it.
const removedLead = 2 * time.Hour

// removalVerbs are the words a controller, a pipeline or an operator logs a
// removal with.
const removalVerbs = `delete[ds]?|deleting|removed?|removing|dropp(?:ed|ing)|purg(?:ed|ing)|destroy(?:ed|ing)|deregister(?:ed|ing)|unregister(?:ed|ing)`

// reRestored: a later line that put the name back (not one that skipped it).
var (
	reRestored    = regexp.MustCompile(`(?i)\b(?:created|added|restored|registered|recreated)\b`)
	reNotRestored = regexp.MustCompile(`(?i)\bskipp(?:ed|ing)\b|no changes|failed|refused|\bnot\b`)
)

// reRetired: a line that retires something on purpose (an environment
// torn down, a pull request's preview closed, a service decommissioned).
var reRetired = regexp.MustCompile(`(?i)tear(?:ing)? ?down|torn down|teardown|decommission|retir(?:e|ed|ing)\b|sunset|deprovision|pull request (?:closed|merged)|\bPR\b[^.]*\b(?:closed|merged)\b|end of life|no longer (?:needed|used)`)

// retiredBefore: a line at most removedLead before the removal retires on
// purpose something the target is named after (its first label's
// distinctive part: "pr-4471" of pr-4471.preview.example): the removal is
// the teardown it started, planned, not a fault.
func (ev *Evidence) retiredBefore(target string, removal LogLine) bool {
	parts := targetParts(target)
	if len(parts) == 0 {
		return false
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Timestamp.After(*removal.Timestamp) || removal.Timestamp.Sub(*l.Timestamp) > removedLead || !reRetired.MatchString(l.Message) {
			continue
		}
		for _, p := range parts {
			if containsFold(l.Message, p) {
				return true
			}
		}
	}
	return false
}

// targetParts are the distinctive parts of a target's first label: words
// of four letters or more and numbers ("pr-4471" gives "4471").
func targetParts(target string) []string {
	first := strings.SplitN(target, ".", 2)[0]
	var parts []string
	for _, w := range strings.FieldsFunc(first, func(r rune) bool { return r == '-' || r == '_' }) {
		if len(w) >= 4 || strings.ContainsAny(w, "0123456789") && len(w) >= 2 {
			parts = append(parts, w)
		}
	}
	return parts
}

// removedFollowUps: what retired the removed target, if anything did (a
// pull request closed, an environment torn down) names it by the parts of
// its first label, anywhere, over the lead.
func removedFollowUps(_ *Evidence, f Finding) ([]FollowUp, bool) {
	if len(f.Signals) < 2 {
		return nil, false
	}
	var qs []string
	for _, p := range targetParts(f.Signals[1]) {
		qs = append(qs, `"`+p+`"`)
	}
	if len(qs) == 0 {
		return nil, false
	}
	return []FollowUp{{Intent: intent.SearchLogs, Params: map[string]any{"namespace": "all", "query": strings.Join(qs, " OR "), "since_minutes": int(removedLead / time.Minute)}}}, false
}

// alertTargets are the names the alert watches that a removal can name: a
// host (a URL's, a hostname label's) or a dotted name among its labels and
// annotations, five characters or more.
func (ev *Evidence) alertTargets() []string {
	if ev.Alert == nil {
		return nil
	}
	var out []string
	add := func(v string) {
		v = strings.ToLower(strings.TrimSpace(v))
		if u, err := url.Parse(v); err == nil && u.Host != "" {
			v = u.Hostname()
		}
		v = strings.TrimSuffix(v, ".")
		if len(v) >= 5 && strings.Contains(v, ".") && !isIPLike(v) && !strings.ContainsAny(v, " /") {
			out = appendUnique(out, v)
		}
	}
	for _, m := range []map[string]string{ev.Alert.GetLabels(), ev.Alert.GetAnnotations()} {
		for _, v := range m {
			add(v)
		}
	}
	add(ev.Alert.GetResourceName())
	return out
}

// detectRemovedTarget: a line, at most removedLead before the alert fired
// and not failing itself, whose removal verb stands next to one of the
// alert's targets, with no later line putting the target back before the
// alert.
func detectRemovedTarget(ev *Evidence) []Finding {
	at := ev.alertTime()
	if at == nil || ev.Alert.GetResolved() {
		return nil
	}
	for _, t := range ev.alertTargets() {
		q := regexp.QuoteMeta(t)
		re := regexp.MustCompile(`(?i)\b(?:` + removalVerbs + `)\b\W+(?:[\w-]+\W+){0,2}?` + q + `\b|\b` + q + `\W+(?:[\w-]+\W+){0,1}?(?:` + removalVerbs + `)\b`)
		var removal *LogLine
		for i := range ev.Logs {
			l := &ev.Logs[i]
			if l.Timestamp == nil || l.Timestamp.After(*at) || at.Sub(*l.Timestamp) > removedLead || ev.failingLine(*l) {
				continue
			}
			if re.MatchString(l.Message) && (removal == nil || l.Timestamp.Before(*removal.Timestamp)) {
				removal = l
			}
		}
		if removal == nil {
			continue
		}
		restored := false
		for _, l := range ev.Logs {
			if l.Timestamp != nil && l.Timestamp.After(*removal.Timestamp) && !l.Timestamp.After(*at) &&
				containsFold(l.Message, t) && reRestored.MatchString(l.Message) && !reNotRestored.MatchString(l.Message) {
				restored = true
			}
		}
		if restored || ev.retiredBefore(t, *removal) {
			continue
		}
		src := ev.logService(*removal)
		ent := "host/" + t
		if src != "" {
			ent = deploymentEntity(firstNonEmptyStr(removal.Namespace, ev.alertNamespace()), src)
		}
		f := Finding{Mode: ModeRemovedTarget, Category: catConfig, Score: 0.82, Entity: ent}
		f.Statement = fmt.Sprintf("%s removed %s at %s, %s before the alert fired: what the alert watches is gone (%s)",
			firstNonEmptyStr(src, logOrigin(*removal)), t, hhmm(removal.Timestamp), at.Sub(*removal.Timestamp).Round(time.Minute), quote(clip(removal.Message, 200)))
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", removal.Cite.Source("logs"), logOrigin(*removal), hhmm(removal.Timestamp), quote(removal.Message)), removal.Cite)
		for _, l := range ev.Logs {
			if l.Timestamp != nil && lineSource(l) == lineSource(*removal) && !l.Timestamp.After(*at) && at.Sub(*l.Timestamp) <= removedLead && l.Message != removal.Message && len(f.Validated) < 6 {
				f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
			}
		}
		f.inferred(fmt.Sprintf("Nothing put %s back before the alert: the check fails because its target no longer exists, not because a service failed", t))
		f.Chain = []string{
			fmt.Sprintf("%s removes %s (a setting let it remove what it does not own)", firstNonEmptyStr(src, "A controller"), t),
			fmt.Sprintf("Clients and the check can no longer reach %s", t),
			"The alert fires",
		}
		f.Remediation = []string{
			fmt.Sprintf("Restore %s and stop %s from removing it again (its ownership, scope or sync policy)", t, firstNonEmptyStr(src, "the remover")),
		}
		f.Signals = []string{"removed", t}
		return []Finding{f}
	}
	return nil
}

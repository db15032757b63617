package analysis

import (
	"fmt"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"regexp"
	"sort"
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
	// A container the kernel killed at its memory limit is at that bound.
	seen := map[string]bool{}
	for _, p := range ev.targetPods() {
		for _, ct := range p.Containers {
			if ct.LimitsMemory == "" || !strings.EqualFold(ct.Reason, "OOMKilled") && !strings.EqualFold(ct.LastReason, "OOMKilled") && !(p.OOMKilled && len(p.Containers) == 1) {
				continue
			}
			t := fmt.Sprintf("container %s OOMKilled at its memory limit resources.limits.memory %s", ct.Name, ct.LimitsMemory)
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
				c.merge(p.Cite)
			}
		}
	}
	return out, c
}

// changeFinding is the finding a change row makes of the change that
// explains lead: category cat, the changed object its entity (the lead's
// when the change names none), scored a little above the lead.
func changeFinding(lead Finding, ch changeRef, cat investigationv1.RootCauseCategory) Finding {
	f := Finding{Mode: ModeLimitChange, Detector: ModeLimitChange, Category: cat, Entity: ch.entity, Score: min(0.95, lead.Score+0.05)}
	if f.Entity == "" {
		f.Entity = lead.Entity
	}
	return f
}

// holderMade: the change made the lead itself, a workload holding the
// bound that is not the alert's target (a CronJob added to pull from a registry whose
// rate limit then refuses the alerted pods): it set no bound, it added
// demand, which is the holder's reading.
func holderMade(text, leadEntity string, targets []string) bool {
	kind, _, _ := strings.Cut(leadEntity, "/")
	switch kind {
	case "cronjob", "job", "deployment", "statefulset", "daemonset", "pod":
		// A workload: it holds the bound, it does not set it (a quota, a
		// database or a pool the lead names is the bound itself).
	default:
		return false
	}
	_, name := splitEntity(leadEntity)
	name = strings.ToLower(name)
	if len(name) < 4 || namesTarget(name, targets) {
		return false
	}
	return strings.Contains(strings.ToLower(text), name)
}

// targetPods are the pods of the alerted workload (all pods of the
// evidence when the alert names none).
func (ev *Evidence) targetPods() []Pod {
	_, name := splitEntity(ev.workloadEntity())
	var out []Pod
	for _, p := range ev.Pods {
		if name == "" || ev.workloadOf(p.Pod) == name {
			out = append(out, p)
		}
	}
	return out
}

// limitChangeRefs are the ledger's configuration and capacity changes,
// commits of any repository included, before the onset and within the
// look-back.
func (ev *Evidence) limitChangeRefs(onset time.Time) []changeRef {
	refs := ev.commitRefs(onset)
	// A commit takes effect when a deploy ships it: a configuration-only
	// release is a configuration change at its rollout's start, the one
	// commit it shipped (or the workload) its entity.
	for _, r := range ev.deployRefs(true) {
		if len(r.commits) == 1 {
			r.entity = "commit/" + short(r.commits[0].SHA)
		}
		refs = append(refs, r)
	}
	refs = append(refs, ev.objectChanges()...)
	refs = append(refs, ev.announcedChanges()...)
	return refsBefore(refs, onset, limitChangeLookback, func(r changeRef) bool {
		return !r.unrelated && (r.kind == changeConfig || r.kind == changeCapacity)
	})
}

// commitRefs are the ledger's commits of any repository, each a change of
// its commit's kind with the files it touches, dated by the commit.
func (ev *Evidence) commitRefs(onset time.Time) []changeRef {
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
	return refs
}

// refsBefore are the refs keep accepts that are dated at or before onset
// and no more than lookback before it.
func refsBefore(refs []changeRef, onset time.Time, lookback time.Duration, keep func(changeRef) bool) []changeRef {
	var out []changeRef
	for _, r := range refs {
		if r.at == nil || r.at.After(onset) || onset.Sub(*r.at) > lookback || !keep(r) {
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
	if onset.IsZero() {
		return Finding{}, false
	}
	return ev.limitChange(lead, ev.scanChanges(onset))
}

// changeScan is what both change rows read, gathered once per analysis:
// the ledger's configuration and capacity changes up to the alert, the
// bounds the alerted workload is at, and the incident's onset.
type changeScan struct {
	at       time.Time
	refs     []changeRef
	bounds   []string
	bc       Cite
	onset    time.Time
	hasOnset bool
}

// scanAtAlert is scanChanges at the alert's time, at (fixed for an
// evidence), made once.
func (ev *Evidence) scanAtAlert(at time.Time) changeScan {
	ev.scanOnce.Do(func() { ev.alertScan = ev.scanChanges(at) })
	return ev.alertScan
}

func (ev *Evidence) scanChanges(at time.Time) changeScan {
	sc := changeScan{at: at, refs: ev.limitChangeRefs(at)}
	sc.bounds, sc.bc = ev.boundTexts()
	sc.onset, sc.hasOnset = ev.incidentOnset()
	return sc
}

func (ev *Evidence) limitChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || (lead.Category != catResource && lead.Category != catDependency) {
		return Finding{}, false
	}
	onset, bounds, bc := sc.at, sc.bounds, sc.bc
	if sc.hasOnset {
		onset = sc.onset // the change must precede the failure, not only the alert
	}
	if len(bounds) == 0 && lead.Category == catResource && capacityFamily.re.MatchString(lead.Statement) {
		// A refusal at a limit (too many clients, a connection limit, a
		// full pool) is at a bound its own words name.
		bounds = []string{lead.Statement}
	}
	if len(bounds) == 0 {
		return Finding{}, false
	}
	names := ev.targetNames()
	var best *changeRef
	var ids []string
	failure := append(append([]string(nil), bounds...), lead.Statement)
	for _, c := range lead.Validated {
		failure = append(failure, c.Text)
	}
	common := ev.commonTerms()
	for _, r := range sc.refs {
		if r.at.After(onset) {
			continue
		}
		text := r.text
		for _, c := range r.commits {
			text += "\n" + c.Summary // what the authors say the commit changes
		}
		var own []string
		for _, id := range sharedIdentifiers(text, bounds) {
			if !namesTarget(id, names) {
				own = append(own, id)
			}
		}
		for _, w := range sharedTerms(text, failure, common) {
			if !namesTarget(w, names) {
				own = appendUnique(own, w)
			}
		}
		if len(own) == 0 || holderMade(text, lead.Entity, names) {
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
	for _, b := range failure {
		if strings.Contains(strings.ToLower(b), strings.ToLower(ids[0])) {
			bound = b
			break
		}
	}
	f := changeFinding(lead, *best, catConfig)
	gap := durHuman(onset.Sub(*best.at))
	f.Statement = fmt.Sprintf("The %s set the bound %s is now at (%s; it names %s), %s before the onset at %s: the load meets a configured limit, not a fault of capacity. %s",
		best.text, firstNonEmptyStr(strings.TrimPrefix(lead.Entity, "deployment/"), "the workload"), clip(bound, 220), strings.Join(ids, ", "), gap, hhmm(&onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("The change that set the bound: %s", best.text), best.cite)
	f.quoteCommits(*best)
	f.validated("The workload is at that bound: "+bound, bc)
	f.adoptLead(lead,
		[]string{"Change: " + best.text + " sets the bound (" + strings.Join(ids, ", ") + ")", "Demand rises past what the bound allows"},
		[]string{fmt.Sprintf("Raise or revert the bound the change set (%s)", strings.Join(ids, ", ")), "Size bounds on peak demand, not on a quiet period's"},
		[]string{"limit", "change"}, "the capacity failure is the bound the change set, met by demand")
	return f, true
}

// quoteCommits adds the change's commits, in their authors' words.
func (f *Finding) quoteCommits(ch changeRef) {
	for _, c := range ch.commits {
		f.validated(commitText(c), c.Cite)
	}
}

// adoptLead makes f, a change's finding, carry its lead's evidence: the
// lead's claims after f's own, and its chain, remediation and signals after
// the given ones; its sources; f explains the lead.
func (f *Finding) adoptLead(lead Finding, chain, remediation, signals []string, why string) {
	f.Validated = append(f.Validated, lead.Validated...)
	f.Chain = append(chain, lead.Chain...)
	f.Remediation = append(remediation, lead.Remediation...)
	f.Signals = append(signals, lead.Signals...)
	f.Sources = append([]string(nil), lead.Sources...)
	f.explains(lead.Mode, why)
}

// boundSetByChange: one of the three strongest fault findings is a
// capacity failure at a bound a change set before the alert
// (limitChangeFinding), or follows a configuration change to its entity
// (nearConfigChangeFinding); the strongest such finding is promoted. The
// ranking decides whether it leads.
func (ev *Evidence) boundSetByChange(findings []Finding) (Finding, bool) {
	at := ev.alertTime()
	if at == nil {
		return Finding{}, false
	}
	var faults []Finding
	for _, f := range findings {
		if !f.Healthy && f.Score >= minFaultScore {
			faults = append(faults, f)
		}
	}
	sc := ev.scanAtAlert(*at)
	if len(faults) == 0 {
		for _, f := range findings {
			if f.Healthy && f.Category == catUnknown {
				return ev.unobservedChange(f, sc)
			}
		}
		return Finding{}, false
	}
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].Score > faults[j].Score })
	for i, lead := range faults[:min(3, len(faults))] {
		if explainedBy(lead, faults[:i]) {
			// A symptom of a stronger finding (a dependency's failures
			// that are the gateway's exhausted ports) is not the failure
			// a change is tied to.
			continue
		}
		if f, ok := ev.changeRows(lead, sc); ok {
			return f, true
		}
	}
	return Finding{}, false
}

// explainedBy: a stronger finding explains lead's mode as its symptom.
func explainedBy(lead Finding, stronger []Finding) bool {
	for _, f := range stronger {
		if _, ok := f.Explains[lead.Mode]; ok && f.Score > lead.Score {
			return true
		}
	}
	return false
}

// changeRows are the change table's rows that span time, in order: a
// bound a change set, a configuration change just before the onset, a
// change of settings the failure names (settingchange.go), a producer's
// commit that changed the symbol a consumer fails on
// (contract.go), a replica cut before a saturation (replicacut.go), a
// release whose code names the failure's mechanism.
func (ev *Evidence) changeRows(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Settled {
		return Finding{}, false
	}
	if f, ok := ev.nodeGroupRow(lead); ok {
		return f, true
	}
	if f, ok := ev.nodeHolder(lead, sc); ok {
		return f, true
	}
	if f, ok := ev.limitChange(lead, sc); ok {
		return f, true
	}
	if f, ok := ev.nearConfigChange(lead, sc); ok {
		return f, true
	}
	if f, ok := ev.settingChange(lead, sc); ok {
		return f, true
	}
	if f, ok := ev.contractChange(lead, sc); ok {
		return f, true
	}
	if f, ok := ev.cutChange(lead, sc); ok {
		return f, true
	}
	return ev.codeChange(lead, sc)
}

// changeOfSummary applies the change rows to the anomaly summary's
// finding, when no detector's finding led.
func (ev *Evidence) changeOfSummary(a Finding) (Finding, bool) {
	at := ev.alertTime()
	if at == nil || a.Healthy {
		return Finding{}, false
	}
	return ev.changeRows(a, ev.scanAtAlert(*at))
}

// reTermWord splits identifiers into words (camelCase, dots,
// underscores, slashes); reKebab finds kebab-case object names.
var (
	reTermWord = regexp.MustCompile(`[A-Z]?[a-z]+|[A-Z]+(?:[a-z]+)?`)
	reKebab    = regexp.MustCompile(`[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+`)
)

// terms are the lower-case words of text of five letters or more, with
// identifiers split into their words (http1MaxPendingRequests: http,
// pending, requests).
func terms(text string) map[string]bool {
	out := map[string]bool{}
	// Kebab-case tokens are object names (route-pg-config, data-pg-0):
	// two objects sharing a word of their names share no mechanism.
	text = reKebab.ReplaceAllString(text, " ")
	for _, w := range reTermWord.FindAllString(text, -1) {
		w = strings.ToLower(w)
		if len(w) >= 5 {
			out[w] = true
		}
	}
	return out
}

// commonTerms are the words of the evidence's log templates that are not
// specific: those in more than one template in five (with at least ten
// templates), and the words of the report's own vocabulary.
func (ev *Evidence) commonTerms() map[string]bool {
	ev.commonOnce.Do(func() {
		counts := map[string]int{}
		seen := map[string]bool{}
		n := 0
		for _, l := range ev.Logs {
			t := logTemplate(l.Message)
			if seen[t] {
				continue
			}
			seen[t] = true
			n++
			for w := range terms(l.Message) {
				counts[w]++
			}
		}
		ev.common = map[string]bool{}
		for w, c := range counts {
			if n >= 10 && c*5 > n {
				ev.common[w] = true
			}
		}
		for w := range terms(strings.Join(reportWords, " ")) {
			ev.common[w] = true
		}
	})
	return ev.common
}

// reportWords are words the analysis writes itself (around quoted
// evidence): they tie no change to a failure.
var reportWords = []string{"error errors failed failure failing change changes changed change announced before after onset",
	"commit commits touching repository workload service deployment pods replicas running ready restarts",
	"limit limits bound bounds since moved creep peak rose from to at its the of and with which while there",
	"logs log lines metrics prometheus events warning source sources evidence condition reports",
	"config configuration setting settings value values update updated level message minutes hours seconds"}

// sharedTerms are the specific words (not in common) of text that occur in
// any of texts.
func sharedTerms(text string, texts []string, common map[string]bool) []string {
	in := map[string]bool{}
	for _, t := range texts {
		for w := range terms(t) {
			in[w] = true
		}
	}
	var out []string
	for w := range terms(text) {
		if in[w] && !common[w] {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// A second row of the same table, by time and topology instead of words:
// a configuration change to the failing entity itself (a commit of its
// repository or one whose files name it, an edit of an object named after
// it, a change record naming it) shortly before the onset. Its effect is
// read by the detectors (a dependency failing, a resource exhausted); the
// change is the cause.

// configChangeNear: how close before the onset a configuration change to
// the failing entity must be to be its cause without words in common.
const configChangeNear = 20 * time.Minute

// incidentOnset is the earliest sign of the incident on the alert's
// target: the first error line, the onset of a series of the target that
// moved abruptly (not its demand), the alert itself; nothing more than six hours before the alert.
func (ev *Evidence) incidentOnset() (time.Time, bool) {
	at := ev.alertTime()
	if at == nil {
		return time.Time{}, false
	}
	onset := *at
	floor := at.Add(-6 * time.Hour)
	consider := func(t *time.Time) {
		if t != nil && t.Before(onset) && t.After(floor) {
			onset = *t
		}
	}
	for _, l := range ev.errorLogs() {
		consider(l.Timestamp)
	}
	// The target's pods: the first Warning event about one, the first
	// abnormal termination of one of their containers.
	pods := map[string]bool{}
	for _, p := range ev.targetPods() {
		pods[p.Name] = true
		for _, ct := range p.Containers {
			if ct.LastReason != "" && ct.LastReason != "Completed" {
				consider(ct.LastFinishedAt)
			}
		}
	}
	for _, e := range ev.Events {
		if strings.EqualFold(e.Type, "Warning") && strings.EqualFold(e.InvolvedKind, "Pod") && pods[e.InvolvedName] {
			consider(e.FirstSeen)
		}
	}
	for _, s := range ev.Series {
		if !ev.targetSeries(s) {
			continue
		}
		// Demand is the trigger, not a sign of the failure: a rise of
		// traffic may precede the change that makes it fail.
		// A creep's start is a fitted hinge, minutes off either way: only
		// abrupt changes date the onset.
		if ch, ok := seriesChangeOf(s); ok && ch.r.onset != nil && seriesKindOf(s.Series) != "traffic" && ch.r.shape != "creep" {
			consider(ch.r.onset)
		}
	}
	return onset, true
}

// touches: the change r is to the entity named name (its repository, a
// file or object named after it, a record naming it).
func (r changeRef) touches(name string) bool {
	if name == "" {
		return false
	}
	name = strings.ToLower(name)
	if strings.EqualFold(r.service, name) {
		return true
	}
	for _, c := range r.commits {
		if c.PathNames(name) {
			return true
		}
	}
	if r.entity != "" && !strings.HasPrefix(r.entity, "commit/") {
		_, obj := splitEntity(r.entity)
		if obj == name || extendsName(obj, name) || strings.HasSuffix(obj, "-"+name) {
			return true
		}
	}
	return r.entity == "" && namesTarget(r.text, []string{name})
}

// nearConfigChangeFinding: a configuration change to the lead's entity (or
// the alert's workload) within configChangeNear before the onset.
func (ev *Evidence) nearConfigChangeFinding(lead Finding) (Finding, bool) {
	at := ev.alertTime()
	if at == nil {
		return Finding{}, false
	}
	return ev.nearConfigChange(lead, ev.scanAtAlert(*at))
}

func (ev *Evidence) nearConfigChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || lead.Category == catConfig || lead.Category == catHealthy || lead.Category == catCode || !sc.hasOnset {
		return Finding{}, false
	}
	onset := sc.onset
	var names []string
	if _, n := splitEntity(lead.Entity); n != "" {
		names = append(names, n)
		if i := strings.IndexByte(n, '.'); i > 0 {
			names = append(names, n[:i]) // a service's host name: its short name
		}
	}
	if _, n := splitEntity(ev.workloadEntity()); n != "" && !strings.HasPrefix(lead.Entity, "node/") {
		// A node's fault is the effect of a change to the node, not of one
		// to a workload that runs on it.
		names = appendUnique(names, n)
	}
	best := latestTouching(sc.refs, names, func(r changeRef) bool {
		return !r.at.After(onset) && onset.Sub(*r.at) <= configChangeNear
	})
	if best == nil {
		return Finding{}, false
	}
	f := changeFinding(lead, *best, catConfig)
	f.Statement = fmt.Sprintf("The %s changed the configuration of %s %s before the onset at %s; what failed next is its effect: %s",
		best.text, firstNonEmptyStr(names...), durHuman(onset.Sub(*best.at)), hhmm(&onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("Configuration change %s before the onset (%s): %s", durHuman(onset.Sub(*best.at)), hhmm(&onset), best.text), best.cite)
	f.quoteCommits(*best)
	f.adoptLead(lead, []string{"Change: " + best.text},
		[]string{"Revert the configuration change (" + best.text + ") and confirm the symptoms stop"},
		[]string{"change", "config"}, "the failure follows a configuration change to the failing entity")
	return f, true
}

// unobservedChange: the alert's own signal is not in the evidence and its
// target looks healthy (a reading of health below the gate, category
// unknown), and a configuration change touched the target within
// changeVoteWindow before the alert: what fails where nothing shows it
// (in front of the target: its route, its ingress, its proxy) most likely
// follows that change. A tentative configuration reading, the changed
// object its entity, not confirmed by the signal.
func (ev *Evidence) unobservedChange(lead Finding, sc changeScan) (Finding, bool) {
	names := ev.targetNames()
	best := latestTouching(sc.refs, names, func(r changeRef) bool {
		return r.kind == changeConfig && !r.unrelated && !r.at.After(sc.at) && sc.at.Sub(*r.at) <= changeVoteWindow
	})
	if best == nil {
		return Finding{}, false
	}
	f := changeFinding(lead, *best, catConfig)
	f.Score = minFaultScore + 0.02 // tentative: the alerted signal is not observed
	f.Statement = fmt.Sprintf("The %s, %s before the alert, is the most likely cause: the alert's own signal is not in the evidence and its target looks healthy, so what fails is in front of it, where that change applies (not confirmed by the alerted signal)",
		best.text, durHuman(sc.at.Sub(*best.at)))
	f.validated(fmt.Sprintf("Configuration change %s before the alert (%s): %s", durHuman(sc.at.Sub(*best.at)), hhmm(&sc.at), best.text), best.cite)
	f.quoteCommits(*best)
	f.Validated = append(f.Validated, lead.Validated...)
	f.inferred("The alert's own signal was not found in the evidence; the target's pods and nodes are healthy, so the failure is not in them")
	f.Chain = []string{"Change: " + best.text, "The path to the target no longer serves what the alert checks", "The alert fires while the target itself looks healthy"}
	f.Remediation = []string{"Review and, if it explains the alert, revert the configuration change (" + best.text + ")", "Check the alerted signal at its source (the probe, the edge)"}
	f.Signals = []string{"change", "config", "unobserved"}
	f.explains(lead.Mode, "a healthy target does not explain an alert whose signal is not observed; the change in front of it may")
	return f, true
}

// latestTouching is the latest of refs that keep accepts and that touches
// one of names; nil when none.
func latestTouching(refs []changeRef, names []string, keep func(changeRef) bool) *changeRef {
	var best *changeRef
	for _, r := range refs {
		if !keep(r) {
			continue
		}
		for _, n := range names {
			if r.touches(n) && (best == nil || r.at.After(*best.at)) {
				rr := r
				best = &rr
			}
		}
	}
	return best
}

package analysis

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// Key evidence: the facts an SRE reads first, quoted from the evidence with
// the pins that carry them, whatever the leading hypothesis says: the most
// frequent distinct error and warning messages, the warning events, the
// pods that are not running as they should, the signals that moved most and
// the changes before the onset. They are observations (supported claims,
// each citing its pins), rendered as quotes of the evidence, never as the
// conclusion's own words. Bounded: a few of each kind, clipped.
const (
	keyLogTemplates    = 9
	keyEvents          = 5
	keyPods            = 3
	keySeries          = 5
	keyChanges         = 4
	keyResourceSignals = 6
	keyLimits          = 3
	keyNormalEvents    = 4
	keyTopQueries      = 3
	keyCommits         = 2
	keySettings        = 4
	keyCrashSites      = 2
	keyRecords         = 4
	keySuspectCommits  = 2
)

// keyEvidence returns the key-evidence claims not already stated by the
// given claims (a message already quoted is not repeated).
func (ev *Evidence) keyEvidence(existing []*investigationv1.Claim) []*investigationv1.Claim {
	known := claimsText(existing)
	var out []*investigationv1.Claim
	add := func(text string, c Cite) {
		out = append(out, &investigationv1.Claim{Claim: "Key evidence: " + text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: c.PinIDs})
	}
	quoted := func(msg string) bool {
		m := strings.ToLower(clip(msg, 60))
		return m != "" && strings.Contains(known, m)
	}
	// Logs: templates ranked by what an SRE reads first: errors and
	// warnings, lines that are new (first seen well after the log of the
	// same origin starts: what changed in the logs), and frequency.
	n := 0
	for _, t := range rankedTemplates(ev.Logs) {
		if n >= keyLogTemplates {
			break
		}
		rep := t.lines[0]
		if quoted(rep.Message) {
			continue
		}
		first, last := t.lines[0], t.lines[len(t.lines)-1]
		when := ""
		if first.Timestamp != nil {
			when = " from " + hhmm(first.Timestamp)
			if last.Timestamp != nil && !last.Timestamp.Equal(*first.Timestamp) {
				when += " to " + hhmm(last.Timestamp)
			}
		}
		lvl := logLevel(rep.LogLine)
		if lvl == "" {
			lvl = "log"
		}
		if t.novel {
			lvl = "new " + lvl
		}
		add(fmt.Sprintf("%s, %s %s x%d%s: %s", SourceName(rep.Cite.Source("logs")), logOrigin(rep), lvl, len(t.lines), when, quote(rep.Message)), citesOfLogs(t.lines))
		n++
	}
	// Warning events, most frequent first, one per reason and object.
	evs := append([]Event(nil), ev.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return eventCount(evs[i].Event) > eventCount(evs[j].Event) })
	seen := map[string]bool{}
	n = 0
	for _, e := range evs {
		if n >= keyEvents || !strings.EqualFold(e.Type, "Warning") {
			continue
		}
		k := e.Reason + "|" + e.InvolvedName
		if seen[k] || quoted(e.Message) {
			continue
		}
		seen[k] = true
		obj := strings.ToLower(e.InvolvedKind) + "/" + e.InvolvedName
		add(fmt.Sprintf("Warning event on %s: %s", strings.Trim(obj, "/"), eventLine(e)), e.Cite)
		n++
	}
	// Normal events of kinds not seen yet: scaling, preemption, kills and
	// rescheduling are Normal events that often carry the mechanism.
	reasons := map[string]bool{}
	for _, e := range evs {
		if strings.EqualFold(e.Type, "Warning") {
			reasons[e.Reason] = true
		}
	}
	n = 0
	for _, e := range evs {
		if n >= keyNormalEvents || strings.EqualFold(e.Type, "Warning") || reasons[e.Reason] || e.Reason == "" || quoted(e.Message) {
			continue
		}
		reasons[e.Reason] = true
		obj := strings.ToLower(e.InvolvedKind) + "/" + e.InvolvedName
		add(fmt.Sprintf("Event on %s: %s", strings.Trim(obj, "/"), eventLine(e)), e.Cite)
		n++
	}
	// Pods not running as they should.
	n = 0
	for _, p := range ev.Pods {
		if n >= keyPods || podHealthy(p.Pod) {
			continue
		}
		if t := strings.TrimSpace(podText(p.Pod)); t != "" && !quoted(t) {
			add(fmt.Sprintf("Pod %s/%s: %s", p.Namespace, p.Name, clip(t, 200)), p.Cite)
			n++
		}
	}
	// Described objects: their key findings (a spec value, a condition, a
	// selector that matches nothing), as the describe tool reported them.
	// Ranked: the lines of an object the diagnosis names, and lines that
	// share an identifier or a specific word with it, first.
	n = 0
	for _, rs := range ev.rankedResourceSignals(existing, known) {
		if n >= keyResourceSignals {
			break
		}
		if quoted(rs.sig) {
			continue
		}
		r := rs.r
		add(fmt.Sprintf("%s %s: %s", r.Kind, strings.Trim(r.Namespace+"/"+r.Name, "/"), clip(rs.sig, 200)), r.Cite)
		n++
	}
	// Resources at their limit (a measurement against the bound published
	// beside it).
	n = 0
	for _, h := range ev.limitsReached() {
		if n >= keyLimits {
			break
		}
		add(fmt.Sprintf("%s: %s", SourceName(h.usage.Cite.Source("metrics")), h.text()), h.usage.Cite)
		n++
	}
	// The heaviest database statements and what they wait on.
	n = 0
	for _, q := range ev.TopQueries {
		if n >= keyTopQueries || strings.TrimSpace(q.Statement) == "" || quoted(q.Statement) {
			continue
		}
		var waits []string
		for _, w := range q.WaitEvents {
			waits = append(waits, fmt.Sprintf("%s %s", w.Name, num(w.Load)))
		}
		text := fmt.Sprintf("top query (load %s): %s", num(q.Load), quote(clip(q.Statement, 160)))
		if len(waits) > 0 {
			text += "; waits: " + strings.Join(waits, ", ")
		}
		add(text, q.Cite)
		n++
	}
	// Signals that moved most.
	var changes []seriesChange
	for _, s := range ev.Series {
		if ch, ok := seriesChangeOf(s); ok {
			changes = append(changes, ch)
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].magnitude > changes[j].magnitude })
	seenName := map[string]bool{}
	n = 0
	for _, ch := range changes {
		if n >= keySeries || seenName[ch.s.Name] || strings.Contains(known, strings.ToLower(ch.s.Name)) {
			continue
		}
		seenName[ch.s.Name] = true
		add(fmt.Sprintf("%s: %s", SourceName(ch.s.Cite.Source("metrics")), ch.text()), ch.s.Cite)
		n++
	}
	// Where the program crashed: the first frame of its own code after a
	// crash header.
	for i, c := range ev.crashSites() {
		if i >= keyCrashSites {
			break
		}
		add(c.text(), c.cite)
	}
	// The settings of the alerted workload's containers that the failure's
	// words name (a flag, an env var, a mount): how it was configured to
	// meet what failed.
	for _, st := range ev.relevantSettings(existing) {
		add(st.text, st.cite)
	}
	// Commits whose identifiers (a class, a function, a setting) recur in
	// the logs: specificity, whichever hypothesis leads.
	var logTexts []string
	for _, l := range ev.Logs {
		logTexts = append(logTexts, l.Message)
	}
	n = 0
	for _, c := range ev.Commits {
		if n >= keyCommits || c.Removed {
			continue
		}
		ids := sharedIdentifiers(strings.Join([]string{c.Message, c.Summary, c.Diff}, "\n"), logTexts)
		if len(ids) == 0 {
			continue
		}
		if len(ids) > 3 {
			ids = ids[:3]
		}
		line := ""
		for _, t := range logTexts {
			if strings.Contains(t, ids[0]) {
				line = t
				break
			}
		}
		add(fmt.Sprintf("Commit %s (%s) names %s, which the logs name too: %s", short(c.SHA), clip(c.Message, 80), strings.Join(ids, ", "), quote(line)), c.Cite)
		n++
	}
	// Changes before the alert: the ledger.
	at := ev.alertTime()
	var ledger []changeRef
	for _, d := range ev.Deploys {
		t := d.FinishedAt
		if t == nil {
			t = d.StartedAt
		}
		if d.Revision != "" && strings.Contains(known, strings.ToLower(d.Revision)) {
			continue // the diagnosis already names this release
		}
		ledger = append(ledger, changeRef{text: fmt.Sprintf("deploy of %s %s -> %s at %s", firstNonEmptyStr(d.Service, "a service"), firstNonEmptyStr(d.PreviousRevision, "?"), d.Revision, hhmm(t)), at: t, cite: d.Cite})
	}
	ledger = append(ledger, ev.announcedChanges()...)
	ledger = append(ledger, ev.objectChanges()...)
	sort.SliceStable(ledger, func(i, j int) bool { return timeOfPtr(ledger[i].at).After(timeOfPtr(ledger[j].at)) })
	n = 0
	seenChange := map[string]bool{}
	for _, c := range ledger {
		if n >= keyChanges || c.at == nil || (at != nil && (c.at.After(at.Add(time.Minute)) || at.Sub(*c.at) > changeLookback)) {
			continue
		}
		// A routine announcement repeated every few minutes ("schedule
		// applied block=..") is one row, its latest.
		if tk := logTemplate(c.text); seenChange[tk] {
			continue
		} else {
			seenChange[tk] = true
		}
		if strings.Contains(known, strings.ToLower(clip(c.text, 60))) {
			continue
		}
		add("Change before the alert: "+c.text, c.cite)
		n++
	}
	// What the suspect commits changed, in their own words and diff lines:
	// the commits the diagnosis names, else the latest before the alert.
	for _, c := range ev.suspectCommits(known, at) {
		add(c.text, c.cite)
	}
	// Records around the alert: what people and other systems wrote down
	// (a change or ticket record, an audit record of a write, planned work,
	// announced demand), whichever object they name.
	if at != nil {
		for _, l := range ev.recordsAround(*at, keyRecords) {
			if quoted(l.Message) {
				continue
			}
			add(fmt.Sprintf("Record around the alert, %s (%s, %s): %s", SourceName(l.Cite.Source("logs")), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
			known += strings.ToLower(l.Message) + "\n"
		}
		var said []string
		for _, c := range existing {
			said = append(said, c.GetClaim())
		}
		keyText := claimsText(out)
		already := func(msg string) bool { // quoted by the diagnosis or above, whole or clipped
			head := strings.ToLower(strings.TrimSuffix(clip(msg, 60), "..."))
			return strings.Contains(known, head) || strings.Contains(keyText, head)
		}
		for _, l := range ev.oneOffLines(*at, keyOneOffLines, said, already) {
			add(fmt.Sprintf("Line written once around the alert, %s (%s, %s): %s", SourceName(l.Cite.Source("logs")), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
	}
	return out
}

// reAuditWrite: an audit record of a write to the cluster or a tool that
// writes to it (an API server audit event's verb, a kubectl command line).
var reAuditWrite = regexp.MustCompile(`(?i)\bverb[=:]\s*"?(?:create|update|patch|delete|deletecollection)\b|\bkubectl (?:create|apply|patch|edit|scale|delete|run|annotate|label|set|rollout|replace|cordon|drain)\b`)

// recordsAround are the non-error log lines that record something done or
// planned around at: a line carrying a record id (a change, ticket or
// incident number), an audit record of a write, planned work or announced
// demand; from contextLookBack before at (noticeLookBack for a notice of
// planned work) to contextAfter after it. Lines with a record id first,
// then the nearest at; one per message template; at most n.
func (ev *Evidence) recordsAround(at time.Time, n int) []LogLine {
	var cs []recordCand
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || strings.TrimSpace(l.Message) == "" {
			continue
		}
		t := *l.Timestamp
		// Announced demand is planned too: it is announced days ahead.
		planned := plannedRe.MatchString(l.Message) || reAnnouncedDemand.MatchString(l.Message)
		if !inRecordWindow(t, at, planned) {
			continue
		}
		record := reRecordID.MatchString(l.Message)
		if !record && !planned && !reAuditWrite.MatchString(l.Message) && !reAnnouncedDemand.MatchString(l.Message) {
			continue
		}
		if !firstOfTemplate(seen, l.Message) {
			continue
		}
		cs = append(cs, recordCand{l: l, record: record, gap: absDur(at.Sub(t))})
	}
	return pickRecords(cs, n)
}

func timeOfPtr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// rankedTemplate is a log template with what makes it worth quoting.
type rankedTemplate struct {
	template
	novel bool
	score float64
}

// noveltyMargin: a template first seen this long after its origin's log
// starts is new in the window.
const noveltyMargin = 5 * time.Minute

// rankedTemplates groups lines into templates and ranks them: error and
// warning templates first, then templates new in the window (an INFO line
// that starts appearing is often the change itself: a replay, a failover, a
// rebalance), each by frequency. Debug lines and templates that run all
// window long at INFO are left out.
func rankedTemplates(lines []LogLine) []rankedTemplate {
	start := map[string]time.Time{}
	for _, l := range lines {
		if l.Timestamp == nil {
			continue
		}
		o := logOrigin(l)
		if t, ok := start[o]; !ok || l.Timestamp.Before(t) {
			start[o] = *l.Timestamp
		}
	}
	var out []rankedTemplate
	for _, t := range templates(lines) {
		rep := t.lines[0]
		lvl := logLevel(rep.LogLine)
		if lvl == "DEBUG" || lvl == "TRACE" {
			continue
		}
		firstAt := (*time.Time)(nil)
		for _, l := range t.lines {
			if l.Timestamp != nil && (firstAt == nil || l.Timestamp.Before(*firstAt)) {
				firstAt = l.Timestamp
			}
		}
		novel := false
		if firstAt != nil {
			if s0, ok := start[logOrigin(rep)]; ok && firstAt.Sub(s0) >= noveltyMargin {
				novel = true
			}
		}
		bad := isErrorLog(rep.LogLine) || lvl == "WARN"
		if !bad && !novel {
			continue
		}
		score := math.Log2(1 + float64(len(t.lines)))
		if bad {
			score += 2
		}
		if novel {
			score += 1.5
		}
		out = append(out, rankedTemplate{template: t, novel: novel, score: score})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return out
}

// ObjectRef is a Kubernetes object named in the evidence's text.
type ObjectRef struct{ Kind, Namespace, Name string }

// reNamedObject: "Kind namespace/name" as controllers and cloud operation
// logs write it ("PodDisruptionBudget docks/dock-state-pdb", "ConfigMap
// shop/limits"): a CamelCase kind, then a namespaced name.
var reNamedObject = regexp.MustCompile(`\b([A-Z][a-z]+(?:[A-Z][a-z]+)*)\s+([a-z0-9][a-z0-9-]{0,62})/([a-z0-9][a-z0-9.-]{0,252})\b`)

// reServiceDNS: a Service's cluster DNS name, name.namespace.svc with or
// without the cluster domain.
var reServiceDNS = regexp.MustCompile(`\b([a-z0-9][a-z0-9-]{0,62})\.([a-z0-9][a-z0-9-]{0,62})\.svc\b`)

// reRefusedConn: a connection the peer refused or reset, or a proxy that
// found nothing to route to.
var reRefusedConn = regexp.MustCompile(`(?i)(connection refused|econnrefused|reset by peer|econnreset|connection reset|no healthy upstream|no endpoints)`)

// NamedObjects are the objects error and warning lines and warning events
// name, most mentioned first: the entity graph's edges from text, for the
// next describe.
func (r Result) NamedObjects() []ObjectRef {
	if r.ev == nil {
		return nil
	}
	count := map[ObjectRef]int{}
	var order []ObjectRef
	add := func(ref ObjectRef) {
		if count[ref] == 0 {
			order = append(order, ref)
		}
		count[ref]++
	}
	see := func(text string) {
		for _, m := range reNamedObject.FindAllStringSubmatch(text, -1) {
			add(ObjectRef{Kind: strings.ToLower(m[1]), Namespace: m[2], Name: m[3]})
		}
		// A cluster DNS name (name.namespace.svc) in a line whose
		// connections are refused or reset names a Service whose routing
		// (endpoints, target port) is the next evidence; a timeout is a
		// path's symptom, not the Service's.
		if reRefusedConn.MatchString(text) {
			for _, m := range reServiceDNS.FindAllStringSubmatch(strings.ToLower(text), -1) {
				add(ObjectRef{Kind: "service", Namespace: m[2], Name: m[1]})
			}
		}
	}
	for _, l := range r.ev.Logs {
		if lvl := logLevel(l.LogLine); isErrorLog(l.LogLine) || lvl == "WARN" {
			see(l.Message)
		}
	}
	for _, e := range r.ev.Events {
		if strings.EqualFold(e.Type, "Warning") {
			see(e.Message)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	return order
}

type settingRef struct {
	text string
	cite Cite
}

// relevantSettings are the container settings (and the QoS class) of the
// workloads the claims are about that share an identifier or a specific
// word with the claims: at most keySettings, identifier matches first.
func (ev *Evidence) relevantSettings(claims []*investigationv1.Claim) []settingRef {
	var texts []string
	for _, c := range claims {
		texts = append(texts, c.GetClaim())
	}
	if len(texts) == 0 {
		return nil
	}
	failure := strings.Join(texts, "\n")
	names := ev.targetNames()
	common := ev.commonTerms()
	type scored struct {
		settingRef
		strong bool
	}
	var out []scored
	seen := map[string]bool{}
	// named: setting st (seen under key once) shares an identifier (strong)
	// or a specific word that names no target with the claims.
	named := func(key, st string) (strong, ok bool) {
		if seen[key] {
			return false, false
		}
		seen[key] = true
		if len(sharedIdentifiers(st, texts)) > 0 {
			return true, true
		}
		for _, w := range sharedTerms(st, texts, common) {
			if !namesTarget(w, names) {
				return false, true
			}
		}
		return false, false
	}
	for _, p := range ev.Pods {
		wl := firstNonEmptyStr(p.Workload, p.Name)
		if !strings.Contains(failure, wl) && !namesTarget(wl, names) {
			continue // a workload the conclusion is not about
		}
		for _, c := range p.Containers {
			for _, st := range c.Settings {
				if strong, ok := named(wl+"|"+st, st); ok {
					out = append(out, scored{settingRef{fmt.Sprintf("%s container %s is configured with %s", wl, c.Name, quote(st)), p.Cite}, strong})
				}
			}
		}
		if p.QOSClass != "" && !seen[wl+"|qos"] && strings.Contains(strings.ToLower(failure), "evict") {
			seen[wl+"|qos"] = true
			out = append(out, scored{settingRef{fmt.Sprintf("%s pods run with QoS class %s (the kubelet evicts BestEffort pods first, then Burstable above their requests)", wl, p.QOSClass), p.Cite}, false})
		}
	}
	// Settings held in the configuration objects in evidence (a ConfigMap's
	// keys, the lines of a config file it holds).
	for _, r := range ev.Resources {
		for _, st := range dataLines(r) {
			if len(st) > 160 {
				continue
			}
			if strong, ok := named(r.Kind+"/"+r.Name+"|"+st, st); ok {
				out = append(out, scored{settingRef{fmt.Sprintf("%s %s/%s sets %s", r.Kind, r.Namespace, r.Name, quote(st)), r.Cite}, strong})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].strong && !out[j].strong })
	var refs []settingRef
	for _, o := range out[:min(keySettings, len(out))] {
		refs = append(refs, o.settingRef)
	}
	return refs
}

// dataLines are the settings a configuration object's data holds, by key:
// "key=value" for a one-line value, else each line of the file it holds,
// trimmed, blank lines and comments left out.
func dataLines(r Resource) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r.Data)) {
		v := r.Data[k]
		if !strings.Contains(v, "\n") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, k+"="+v)
			}
			continue
		}
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out
}

// maxDiffLines bounds the lines quoted of one commit's diff.
const maxDiffLines = 10

// suspectCommits are the commits whose change the report quotes: those the
// known text (the diagnosis's claims) names by their short SHA, else the
// latest commit within changeLookback before at; at most keySuspectCommits.
// Each is quoted by its summary and its changed lines.
func (ev *Evidence) suspectCommits(known string, at *time.Time) []settingRef {
	var named []Commit
	for _, c := range ev.Commits {
		if !c.Removed && len(c.SHA) >= 7 && strings.Contains(known, strings.ToLower(short(c.SHA))) {
			named = append(named, c)
		}
	}
	pick := named
	if len(pick) == 0 {
		if c := ev.latestCommitBefore(at, func(c *Commit) bool { return !c.Removed && len(c.SHA) >= 7 }); c != nil {
			pick = []Commit{*c}
		}
	}
	var out []settingRef
	for _, c := range pick[:min(keySuspectCommits, len(pick))] {
		var parts []string
		if s := strings.TrimSpace(c.Summary); s != "" {
			parts = append(parts, "summary "+quote(clip(s, 300)))
		}
		if d := diffLines(c.Diff, maxDiffLines); d != "" {
			parts = append(parts, "changed lines "+quote(clip(d, 480)))
		}
		if len(parts) == 0 {
			continue
		}
		out = append(out, settingRef{fmt.Sprintf("Commit %s of %s (%s): %s", short(c.SHA), firstNonEmptyStr(c.Service, "the repository"), clip(c.Message, 80), strings.Join(parts, "; ")), c.Cite})
	}
	return out
}

// diffLines are the lines of a unified diff's hunks as a reviewer reads
// them: the added and removed lines, and the unchanged lines the diff shows
// around them (the code the change feeds: the call its new value reaches),
// not its file and hunk headers nor elisions; at most n, joined by " | ".
// Unchanged lines are kept only up to contextAround after a change.
func diffLines(diff string, n int) string {
	const contextAround = 3
	var out []string
	since := contextAround + 1 // lines since the last change
	for _, l := range strings.Split(diff, "\n") {
		if len(out) >= n {
			break
		}
		switch {
		case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "index "):
			continue
		case len(l) >= 2 && (l[0] == '+' || l[0] == '-'):
			out = append(out, strings.TrimSpace(l))
			since = 0
		default:
			t := strings.TrimSpace(l)
			since++
			if t == "" || strings.Trim(t, ".…") == "" || since > contextAround {
				continue
			}
			out = append(out, t)
		}
	}
	return strings.Join(out, " | ")
}

type resourceSignal struct {
	r   Resource
	sig string
}

// rankedResourceSignals are the described objects' key lines, those of an
// object the known text (the diagnosis's claims, lower-cased) names first,
// then those sharing an identifier or a specific word with the claims,
// each group in the order described.
func (ev *Evidence) rankedResourceSignals(claims []*investigationv1.Claim, known string) []resourceSignal {
	var texts []string
	for _, c := range claims {
		texts = append(texts, c.GetClaim())
	}
	common := ev.commonTerms()
	type scored struct {
		resourceSignal
		score int
	}
	var all []scored
	for _, r := range ev.Resources {
		named := len(r.Name) >= 3 && strings.Contains(known, strings.ToLower(r.Name))
		for _, sig := range r.Signals {
			if strings.TrimSpace(sig) == "" {
				continue
			}
			sc := 0
			if named {
				sc += 2
			}
			if len(texts) > 0 && (len(sharedIdentifiers(sig, texts)) > 0 || len(sharedTerms(sig, texts, common)) > 0) {
				sc++
			}
			all = append(all, scored{resourceSignal{r, sig}, sc})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	out := make([]resourceSignal, len(all))
	for i, a := range all {
		out[i] = a.resourceSignal
	}
	return out
}

// keyOneOffLines bounds the one-off lines quoted per reading.
const keyOneOffLines = 5

// oneOffLines are the lines around the alert that were written once (their
// template occurs at most twice in the evidence, one line read from a
// pod's log and from the log store counting once each): a statement about
// the system rather than its steady chatter, such as a note a person or a
// tool wrote down, a setting a process reported at start, a provider's
// notice. Error lines are quoted elsewhere. Ranked by how much they share
// with what the diagnosis says (an identifier, a specific word, a name of
// the alert's target), then by nearness to the alert; at most n, in time
// order. Bounded, as every key-evidence kind is. Lines skip reports as
// quoted already are not candidates.
func (ev *Evidence) oneOffLines(at time.Time, n int, known []string, skip func(string) bool) []LogLine {
	count := map[string]int{}
	for _, l := range ev.Logs {
		count[logTemplate(reLevelPrefix.ReplaceAllString(l.Message, ""))]++
	}
	common := ev.commonTerms()
	names := ev.targetNames()
	type cand struct {
		l   LogLine
		rel int
		gap time.Duration
	}
	var cs []cand
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || strings.TrimSpace(l.Message) == "" {
			continue
		}
		if lvl := logLevel(l.LogLine); lvl == "DEBUG" || lvl == "TRACE" {
			continue
		}
		k := logTemplate(reLevelPrefix.ReplaceAllString(l.Message, ""))
		if count[k] > 2 || !inRecordWindow(*l.Timestamp, at, false) || !firstOfTemplate(seen, l.Message) || skip != nil && skip(l.Message) {
			continue
		}
		rel := len(sharedIdentifiers(l.Message, known)) + len(sharedTerms(l.Message, known, common))
		low := strings.ToLower(l.Message)
		for _, nm := range names {
			if len(nm) >= 4 && strings.Contains(low, nm) {
				rel++
				break
			}
		}
		cs = append(cs, cand{l: l, rel: rel, gap: absDur(at.Sub(*l.Timestamp))})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].rel != cs[j].rel {
			return cs[i].rel > cs[j].rel
		}
		return cs[i].gap < cs[j].gap
	})
	ranked := make([]LogLine, len(cs))
	for i, c := range cs {
		ranked[i] = c.l
	}
	return firstInTimeOrder(ranked, n)
}

package analysis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/target"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// The context of a reading of health: what was planned, announced or done
// to the alert's target around the time it fired. A verdict that the
// system is fine owes the on-call engineer the reason the alert fired
// anyway (a change record in progress, an announced load, a component
// retired on purpose); these are the ledger's non-error lines that name the
// target, quoted as evidence. They explain a healthy reading; they never
// make one (health still needs its own observations).

// contextLookBack: announcements and change records this long before the
// alert still explain it (a surge announced the day before, a decommission
// done an hour before a no-data alert); the change look-back's length.
const contextLookBack = 72 * time.Hour

// noticeLookBack: a notice of planned work (a provider's maintenance
// notice, a change calendar's entry) is sent days ahead, commonly a week;
// one this long before the alert still explains it.
const noticeLookBack = 8 * 24 * time.Hour

// standingLookBack: a standing record about the alert itself (a known
// issue filed against it, its rule found to flap, a threshold under
// review) stays true until it is closed, commonly months; one this long
// before the alert still explains it.
const standingLookBack = 180 * 24 * time.Hour

// contextAfter: lines up to this long after the alert belong to it (the
// record that the work it fired during completed).
const contextAfter = 45 * time.Minute

var (
	// reRecordID: the id of a change, ticket or incident record (CHG-7781,
	// or without a dash as ServiceNow numbers them, CHG0041877,
	// OPS-112, RFC-2024): upper-case letters, a dash, digits.
	reRecordID = regexp.MustCompile(`\b(?:[A-Z][A-Z0-9]{1,9}-\d{2,8}|[A-Z]{2,6}\d{6,10})\b`)
	// reAnnouncedDemand: an announcement of demand to come ("expect 4x
	// traffic", "expected load peak").
	reAnnouncedDemand = regexp.MustCompile(`(?i)\bexpect(?:ed|s|ing)?\b[^\n]{0,40}\b(?:traffic|load|requests|volume|spike|surge|peak|demand)\b`)
	// reStanding: the words of a standing record about an alert, as
	// known-issue trackers and alert-rule reviews write them: a known
	// issue, an alert that flaps, a rule without hysteresis, a noisy or
	// false-positive alert, a rule that fires by design.
	reStanding = regexp.MustCompile(`(?i)\bknown(?:[- ]issue)?\b|\bflap(?:s|ped|ping|py)?\b|\bhysteresis\b|\bnoisy alert|\bfalse[- ]positive|\bby design\b`)
	// reLevelPrefix: the level word a raw log line begins with ("INFO ",
	// "[warn] ", "error: ").
	reLevelPrefix = regexp.MustCompile(`^(?i)\s*\[?(?:trace|debug|info|notice|warn|warning|error|err|fatal)\]?(?::\s*|\s+)`)
	// reNameToken splits a name into its words.
	reNameToken = regexp.MustCompile(`[a-z0-9]+`)
)

// recordWords are the words a record of work done or planned carries,
// whatever system wrote it: approval and announcement, a schedule, planned
// work and upgrades, a campaign (announced demand), an audit record of a
// write, and a remediation (a kill switch, a rollback, a revert, a
// failover: what reRemediation reads). RecordQuery searches the log store
// for them (its query language: quoted phrases, OR).
var recordWords = []string{"approved", "announced", "announcement", "scheduled", "maintenance", "planned", "change window", "upgrade", "migration", "drill", "load test", "campaign", "verb=create", "verb=patch", "verb=update", "verb=delete", "kubectl",
	"kill switch", "rolled back", "rollback", "reverted", "failed over", "turned off", "mitigated"}

// RecordQuery is the log search for records around an alert: recordWords,
// the names the alert's own texts give what it watches, and the machine,
// database, queue or node its labels name (what another system wrote about
// it: a batch that fills its queue, a backup that holds its standby, a page
// that changed the text it checks).
func RecordQuery(a *investigationv1.Alert) string {
	var qs []string
	for _, w := range recordWords {
		qs = append(qs, `"`+w+`"`)
	}
	for _, id := range recordNames(a) {
		qs = append(qs, `"`+id+`"`)
	}
	return strings.Join(qs, " OR ")
}

// standingWords are what StandingQuery searches for: the stems of
// reStanding's words (the log store matches them inside words).
var standingWords = []string{"known", "flap", "hysteresis", "noisy alert", "false positive", "false-positive", "by design"}

// StandingQuery is the log search for standing records about the alert
// (reStanding: a known issue, a flapping rule) that name what it watches:
// one of standingWords and one of the names RecordQuery searches.
// Empty when the alert names nothing.
func StandingQuery(a *investigationv1.Alert) string {
	names := recordNames(a)
	if n := ruleName(a); n != "" {
		// A record about the rule itself ("Watchdog always fires by
		// design", a ticket that raises its threshold) names the rule.
		names = appendUnique(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	var ws, ns []string
	for _, w := range standingWords {
		ws = append(ws, `"`+w+`"`)
	}
	for _, n := range names {
		ns = append(ns, `"`+n+`"`)
	}
	return "(" + strings.Join(ws, " OR ") + ") AND (" + strings.Join(ns, " OR ") + ")"
}

// StandingLookBackMinutes is standingLookBack in minutes (a search's
// since_minutes).
const StandingLookBackMinutes = int(standingLookBack / time.Minute)

// recordNames are the names RecordQuery searches beside its words: the
// alert's identifiers, the machine, database, queue or node its labels
// name, and the service's workload names and their distinctive words;
// quotes removed.
func recordNames(a *investigationv1.Alert) []string {
	var out []string
	if a != nil {
		names := alertIdentifiers(a)
		// The machine, database, queue or node its labels name: other
		// systems (a backup scheduler, a pooler) log records under it.
		for _, k := range []target.Kind{target.Host, target.Database, target.Queue, target.ConsumerGroup, target.Node} {
			if v := alertTarget(a, k); len(v) >= 4 && !(k == target.Host && strings.Contains(v, ".")) {
				names = appendUnique(names, strings.ToLower(v))
			}
		}
		// The distinctive words of the service's own name: another system
		// names what it did to the service by the words of its name (a relay
		// replaying a backlog, a controller renewing "pilots/roster-tls" of
		// pilot-roster).
		for _, k := range []target.Kind{target.Service, target.Deployment, target.StatefulSet} {
			if v := alertTarget(a, k); v != "" {
				names = appendUnique(names, v)
			}
		}
		for _, n := range slices.Clone(names) {
			names = appendUnique(names, textutil.NameWords(n)...)
		}
		for _, id := range names {
			if id = strings.ReplaceAll(id, `"`, ``); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// maxRecordIDs bounds the records whose trail a reading follows.
const maxRecordIDs = 2

// RecordIDs are the ids (reRecordID: a change, a ticket) of the records
// written around the alert that name its target, at most maxRecordIDs:
// the rest of a record's trail (its start, its close, its outcome) is
// logged under its id, in words a search for the target misses.
func (r Result) RecordIDs() []string {
	if r.ev == nil {
		return nil
	}
	at := r.ev.alertTime()
	if at == nil {
		return nil
	}
	var out []string
	for _, l := range r.ev.contextLines(*at) {
		out = appendUnique(out, reRecordID.FindAllString(l.Message, -1)...)
	}
	return out[:min(len(out), maxRecordIDs)]
}

// targetNames are the names the alert gives its target (service,
// workloads, queue, consumer group, host, database, node), and the alerted
// workload's.
func (ev *Evidence) targetNames() []string {
	var out []string
	if ev.Alert != nil {
		for _, k := range []target.Kind{target.Service, target.Deployment, target.StatefulSet, target.DaemonSet, target.CronJob, target.Job, target.Queue, target.ConsumerGroup, target.Host, target.Database, target.Node, target.Ingress} {
			if v := alertTarget(ev.Alert, k); v != "" {
				out = appendUnique(out, strings.ToLower(v))
			}
		}
		out = appendUnique(out, strings.ToLower(ev.Alert.GetService()))
	}
	if ent := ev.workloadEntity(); ent != "" {
		out = appendUnique(out, strings.ToLower(ent[strings.LastIndex(ent, "/")+1:]))
	}
	var names []string
	for _, n := range out {
		if len(n) >= 3 {
			names = append(names, n)
		}
	}
	return names
}

// alertTarget is the alert's entity of kind k: a label under any spelling,
// else what target resolution read from its texts (intake writes it as an
// annotation under the kind's canonical key: the consumer group of a
// selector in its summary).
func alertTarget(a *investigationv1.Alert, k target.Kind) string {
	if v := target.Lookup(a.GetLabels(), k); v != "" {
		return v
	}
	return strings.TrimSpace(a.GetAnnotations()[target.CanonicalKey(k)])
}

// alertIdentifiers are the names the alert's name, title and summary give
// what it watches (target.AlertIdentifiers).
func (ev *Evidence) alertIdentifiers() []string {
	if ev.Alert == nil {
		return nil
	}
	return alertIdentifiers(ev.Alert)
}

// alertIdentifiers are the names a's name, title, summary and
// description give what it watches (target.AlertIdentifiers).
func alertIdentifiers(a *investigationv1.Alert) []string {
	return target.AlertIdentifiers(a.GetAlertName(), a.GetTitle(), a.GetSummary(), a.GetDescription())
}

// namesTarget: text names one of names whole, or a distinctive word of
// one (a word of four letters or more that is not structural: "pledge" of
// "pledge-intake"), as a word of its own.
func namesTarget(text string, names []string) bool {
	low := strings.ToLower(text)
	words := map[string]bool{}
	for _, w := range reNameToken.FindAllString(low, -1) {
		words[w] = true
	}
	for _, n := range names {
		if strings.Contains(low, n) {
			return true
		}
		for _, w := range textutil.NameWords(n) {
			if words[w] {
				return true
			}
		}
	}
	return false
}

// contextLines are the non-error log lines around at (from contextLookBack
// before to contextAfter after) that name the alert's target (or, logged by
// another system, a peer the target's own lines name: the cache it
// reconnected to, patched by its provider) and either
// record planned work, a change or an announcement, or come from another
// system than the target: change records first, then the
// nearest in time; at most three, one per message template.
func (ev *Evidence) contextLines(at time.Time) []LogLine {
	// The names the alert's own title gives what it watches ("lag
	// pg-crew-delayed", "Queue 'reminders'") name it too.
	names := appendUnique(ev.targetNames(), ev.alertIdentifiers()...)
	// A line that names the alert itself (a monitor's record that it
	// cleared, a ticket about it) is about the target too.
	alertName := ev.alertRuleName()
	if len(names) == 0 && alertName == "" || at.IsZero() {
		return nil
	}
	peers := ev.peerNames(at)
	// A line that names the target's own compound namespace (a preview
	// environment's, a tenant's) whole is about the target too: a janitor
	// that deletes it, a CI job that retires it.
	scope := ""
	if ns := strings.ToLower(ev.alertNamespace()); DistinctiveNamespace(ns) {
		scope = ns
	}
	var cs []recordCand
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" || failedRequestLine(l.Message) {
			continue // a failure, even one logged at INFO, is no context of health
		}
		t := *l.Timestamp
		if !inRecordWindow(t, at, plannedRe.MatchString(l.Message)) && !standingRecord(t, at, l.Message) && !dayNotice(t, at, l.Message) {
			continue // past the look-back, only a notice of planned work, a standing record or a notice naming the alert's day
		}
		m := l.Message
		peer := !ownLine(l, names) && namesPeer(m, peers)
		// A notice of demand for the alert's own day (a deadline, a
		// season opening) is about it whatever it names: a press release
		// names no deployment.
		dayDemand := dayNotice(t, at, m) && reDemandNotice.MatchString(m)
		if !peer && !dayDemand && !namesTarget(m, names) && (alertName == "" || !strings.Contains(strings.ToLower(m), alertName)) && (scope == "" || !strings.Contains(strings.ToLower(m), scope)) {
			continue
		}
		// A record of work, or what another system (a scheduler, a
		// janitor, a monitor, a change calendar) logged about the target.
		record := reRecordID.MatchString(m)
		if !record && !plannedRe.MatchString(m) && !reAnnouncedDemand.MatchString(m) && !reChangeAnnouncement.MatchString(m) && ownLine(l, names) {
			continue
		}
		if !firstOfTemplate(seen, m) {
			continue
		}
		cs = append(cs, recordCand{l: l, record: record, gap: absDur(at.Sub(t))})
	}
	return pickRecords(cs, 3)
}

// recordCand is a line that records work around an alert: whether it
// carries a record id, and how far from the alert it was written.
type recordCand struct {
	l      LogLine
	record bool
	gap    time.Duration
}

// inRecordWindow: a line written at t belongs around an alert at at: from
// contextLookBack before it (noticeLookBack for a notice of planned work)
// to contextAfter after it.
func inRecordWindow(t, at time.Time, planned bool) bool {
	return !t.Before(at.Add(-noticeLookBack)) && !t.After(at.Add(contextAfter)) && (planned || !t.Before(at.Add(-contextLookBack)))
}

// alertRuleName is the alert's name when it reads as a rule's identifier
// (six characters or more, no blank), lower-cased: what a monitor, a
// ticket or a record writes to name the alert itself. "" otherwise.
func (ev *Evidence) alertRuleName() string {
	return ruleName(ev.Alert)
}

// ruleName is the alert's rule name, lower case, when it is an
// identifier a record would name (six characters or more, one word).
func ruleName(a *investigationv1.Alert) string {
	n := a.GetAlertName()
	if len(n) < 6 || strings.ContainsAny(n, " \t") {
		return ""
	}
	return strings.ToLower(n)
}

// standingRecord: a line written at t, up to standingLookBack before an
// alert at at, is a standing record about it (reStanding).
func standingRecord(t, at time.Time, msg string) bool {
	return !t.After(at) && !t.Before(at.Add(-standingLookBack)) && reStanding.MatchString(msg)
}

// pickRecords are the n best candidates (a record id first, then the
// nearest the alert), in time order.
func pickRecords(cs []recordCand, n int) []LogLine {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].record != cs[j].record {
			return cs[i].record
		}
		return cs[i].gap < cs[j].gap
	})
	ranked := make([]LogLine, len(cs))
	for i, c := range cs {
		ranked[i] = c.l
	}
	return firstInTimeOrder(ranked, n)
}

// firstInTimeOrder: the first n of ranked lines (each with a time), in
// time order.
func firstInTimeOrder(ranked []LogLine, n int) []LogLine {
	out := append([]LogLine(nil), ranked[:min(n, len(ranked))]...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(*out[j].Timestamp) })
	return out
}

// ownLine: l was logged by the target itself (its service or one of its
// pods), not by another system about it.
func ownLine(l LogLine, names []string) bool {
	src := strings.ToLower(l.Service)
	pod := strings.ToLower(l.Pod)
	for _, n := range names {
		if src == n || (pod != "" && (pod == n || strings.HasPrefix(pod, n+"-"))) {
			return true
		}
	}
	return src == "" && pod == ""
}

// explainHealth adds to a healthy finding the planned, announced or done
// work around the alert that names its target (healthContext).
func (ev *Evidence) explainHealth(f *Finding) { f.explainWith(ev.healthContext(), ev.alertTime()) }

// healthContext is contextLines around the alert, then the target's own
// account of its state (ownAccount), none without the alert's time.
func (ev *Evidence) healthContext() []LogLine {
	at := ev.alertTime()
	if at == nil {
		return nil
	}
	var out []LogLine
	seen := map[string]bool{}
	for _, l := range append(ev.contextLines(*at), ev.ownAccount(*at)...) {
		if firstOfTemplate(seen, l.Message) {
			out = append(out, l)
		}
	}
	return out
}

// maxOutcomes bounds the outcome lines a healthy reading quotes.
const maxOutcomes = 3

// outcomeLines are how the stories of the quoted lines ended: for each
// system that wrote one of quoted (the target, a scheduler, an operator, a
// provider), its latest later line up to contextAfter after the alert that
// is no error, warning or single request, in a template none of quoted has
// ("caught up", "renewal complete", "replacement launched"), at most
// maxOutcomes, in time order. A reading of health owes the engineer the
// return to normal, not only the work that began it.
func (ev *Evidence) outcomeLines(quoted []LogLine) []LogLine {
	at := ev.alertTime()
	if at == nil || len(quoted) == 0 {
		return nil
	}
	from := map[string]time.Time{} // source -> its first quoted line
	seen := map[string]bool{}
	for _, l := range quoted {
		src := lineSource(l)
		if t, ok := from[src]; src != "" && (!ok || l.Timestamp.Before(t)) {
			from[src] = *l.Timestamp
		}
		firstOfTemplate(seen, l.Message)
	}
	last := map[string]LogLine{}
	for _, l := range ev.Logs {
		src := lineSource(l)
		t0, ok := from[src]
		if !ok || l.Timestamp == nil || !l.Timestamp.After(t0) || l.Timestamp.After(at.Add(contextAfter)) {
			continue
		}
		if !statementLine(l) {
			continue
		}
		if p, ok := last[src]; !ok || l.Timestamp.After(*p.Timestamp) {
			last[src] = l
		}
	}
	var out []LogLine
	for _, src := range slices.Sorted(maps.Keys(last)) {
		if l := last[src]; firstOfTemplate(seen, l.Message) {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(*out[j].Timestamp) })
	return out[:min(len(out), maxOutcomes)]
}

// precursorWindow: how long before the onset another system's line still
// tells what set it off.
const precursorWindow = 5 * time.Minute

// maxPrecursors bounds the systems whose last line before the onset a
// healthy reading quotes.
const maxPrecursors = 2

// precursorLines are what other systems logged last before the onset (the
// first warning or error, else the alert), up to precursorWindow before it,
// the nearest system first, at most maxPrecursors: the event that set the
// symptoms off ("full time" of a match before its viewers' streams
// aborted, a spot interruption before a node's pods moved), quoted by a
// reading that the symptoms were benign. Not a warning or error itself,
// not a single request, not the target's own line, not a template already
// quoted; outcomeLines then follows each of these systems to its latest
// line.
func (ev *Evidence) precursorLines(quoted []LogLine) []LogLine {
	var onset time.Time
	if groups := ev.failureGroups(); len(groups) > 0 {
		onset = groups[0].first
	} else if at := ev.alertTime(); at != nil {
		onset = *at
	} else {
		return nil
	}
	names := ev.targetNames()
	seen := map[string]bool{}
	for _, l := range quoted {
		firstOfTemplate(seen, l.Message)
	}
	last := map[string]*LogLine{}
	for i := range ev.Logs {
		l := &ev.Logs[i]
		if l.Timestamp == nil || l.Timestamp.After(onset) || onset.Sub(*l.Timestamp) > precursorWindow {
			continue
		}
		if !statementLine(*l) {
			continue
		}
		if l.Service == "" && l.Pod == "" || ownLine(*l, names) {
			continue
		}
		src := lineSource(*l)
		if p := last[src]; p == nil || l.Timestamp.After(*p.Timestamp) {
			last[src] = l
		}
	}
	var cs []LogLine
	for _, src := range slices.Sorted(maps.Keys(last)) {
		cs = append(cs, *last[src])
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Timestamp.After(*cs[j].Timestamp) })
	var out []LogLine
	for _, l := range cs {
		if len(out) == maxPrecursors {
			break
		}
		if firstOfTemplate(seen, l.Message) {
			out = append(out, l)
		}
	}
	return out
}

// statementLine: l states something about its system: it has text, is no
// error or warning, and records no single request (served or failed).
func statementLine(l LogLine) bool {
	return l.Message != "" && !isErrorLog(l.LogLine) && logLevel(l.LogLine) != "WARN" && !reRequestLine.MatchString(l.Message) && !failedRequestLine(l.Message)
}

// lineSource is the system that wrote l: its service, else its pod's
// workload, else its pod.
func lineSource(l LogLine) string {
	if l.Service != "" {
		return strings.ToLower(l.Service)
	}
	if w, ok := facts.PodWorkload(l.Pod); ok {
		return strings.ToLower(w)
	}
	return strings.ToLower(l.Pod)
}

// ownAccountBefore: the target's own statements this long before the alert
// still tell why it fired (a mode it entered, work it began).
const ownAccountBefore = 45 * time.Minute

// reRequestLine: a line that records one request (an HTTP method and a
// path): traffic, not an account of the service's state.
var reRequestLine = regexp.MustCompile(`\b(?:` + httpMethods + `)\s+/`)

// httpMethods: the request methods a line that records one request names.
const httpMethods = `GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS`

// ownAccount is what the target itself logged about its state around the
// alert (from ownAccountBefore before to contextAfter after): its non-error
// lines that record no single request, one per message template, the two
// nearest the alert. A service entering a mode (closed for a holiday,
// replaying a backlog, draining a batch, warming a cache) says so in its own
// log; a healthy reading quotes that account rather than only the absence
// of errors.
func (ev *Evidence) ownAccount(at time.Time) []LogLine {
	names := ev.targetNames()
	if len(names) == 0 {
		return nil
	}
	out := ev.nearestLines(at, ownAccountBefore, 2, func(l LogLine) bool {
		return l.Message != "" && logLevel(l.LogLine) != "WARN" && (l.Service != "" || l.Pod != "") && ownLine(l, names) && !reRequestLine.MatchString(l.Message) && !failedRequestLine(l.Message)
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(*out[j].Timestamp) })
	return out
}

// nearestLines are the non-error log lines from before to contextAfter
// around at that keep accepts, one per message template, the n nearest at
// first.
func (ev *Evidence) nearestLines(at time.Time, before time.Duration, n int, keep func(LogLine) bool) []LogLine {
	type cand struct {
		l   LogLine
		gap time.Duration
	}
	var cs []cand
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || !keep(l) {
			continue
		}
		t := *l.Timestamp
		if t.Before(at.Add(-before)) || t.After(at.Add(contextAfter)) || !firstOfTemplate(seen, l.Message) {
			continue
		}
		cs = append(cs, cand{l: l, gap: absDur(at.Sub(t))})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].gap < cs[j].gap })
	var out []LogLine
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.l)
	}
	return out
}

// explainWith adds the context lines to f: a claim per line, and the lines
// in its statement, each with its time (and its day when that is not the
// day of the alert at at: a standing record filed weeks before).
// aroundAlert is the claim that quotes a line written around the alert at
// at (its day when not the alert's), and its time as written there.
func aroundAlert(l LogLine, at *time.Time) (text, when string) {
	when = hhmm(l.Timestamp)
	if at != nil {
		when = hhmmDay(l.Timestamp, *at)
	}
	return fmt.Sprintf("Around the alert, %s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), when, quote(l.Message)), when
}

func (f *Finding) explainWith(lines []LogLine, at *time.Time) {
	if len(lines) == 0 {
		return
	}
	var quoted []string
	for _, l := range lines {
		text, when := aroundAlert(l, at)
		f.validated(text, l.Cite)
		quoted = append(quoted, fmt.Sprintf("%s at %s", quote(clip(l.Message, 200)), when))
	}
	f.Statement += "; recorded around the alert: " + strings.Join(quoted, "; ")
}

// peerNames are the peers the target's own lines name around at (from
// ownAccountBefore before to contextAfter after): the first label of each
// host it gives with a port or in a URL ("orders-cache" of
// orders-cache.redis.example:6380), not the target's own names, at most
// three. What happened to a peer (its provider's planned patching, its
// failover) explains a healthy reading of the target.
func (ev *Evidence) peerNames(at time.Time) []string {
	names := ev.targetNames()
	if len(names) == 0 {
		return nil
	}
	var out []string
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Service == "" && l.Pod == "" || !ownLine(l, names) {
			continue
		}
		if l.Timestamp.Before(at.Add(-ownAccountBefore)) || l.Timestamp.After(at.Add(contextAfter)) {
			continue
		}
		var hosts []string
		for _, m := range hostPortRe.FindAllStringSubmatch(l.Message, -1) {
			if strings.Contains(m[1], ".") {
				hosts = append(hosts, m[1])
			}
		}
		for _, m := range urlHostRe.FindAllStringSubmatch(l.Message, -1) {
			hosts = append(hosts, m[1])
		}
		for _, h := range hosts {
			h = strings.ToLower(h)
			if isIPLike(h) {
				continue
			}
			label, _, _ := strings.Cut(h, ".")
			if len(label) < 4 || proseWord(label) || slices.Contains(names, label) {
				continue
			}
			out = appendUnique(out, label)
			if len(out) == 3 {
				return out
			}
		}
	}
	return out
}

// namesPeer: text names one of the peers whole, as a word of its own.
func namesPeer(text string, peers []string) bool {
	if len(peers) == 0 {
		return false
	}
	low := strings.ToLower(text)
	for _, p := range peers {
		for i := strings.Index(low, p); i >= 0; {
			end := i + len(p)
			if (i == 0 || !nameByte(low[i-1])) && (end == len(low) || !nameByte(low[end])) {
				return true
			}
			j := strings.Index(low[end:], p)
			if j < 0 {
				break
			}
			i = end + j
		}
	}
	return false
}

// nameByte: b can continue a host or workload name.
func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_'
}

// Peers are the peers the alert target's own lines name around the alert
// (peerNames), whatever the reading: what happened to a peer (a planned
// failover of the database its errors name) explains a fault reading's
// errors as well.
func (r Result) Peers() []string {
	if r.ev == nil {
		return nil
	}
	at := r.ev.alertTime()
	if at == nil {
		return nil
	}
	return r.ev.peerNames(*at)
}

// firstOfTemplate: msg is the first of its message template in seen (and
// is recorded there).
func firstOfTemplate(seen map[string]bool, msg string) bool {
	// One line read twice (a pod's raw log, which prints its level, and the
	// log store's record of it, which keeps the level in a field) is one.
	k := logTemplate(reLevelPrefix.ReplaceAllString(msg, ""))
	if seen[k] {
		return false
	}
	seen[k] = true
	return true
}

// absDur is |d|.
func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// DistinctiveNamespace: a namespace whose name is compound (words joined by
// dashes, at least six characters: preview-pr-4821, tenant-acme), which a
// line names only when it means that namespace.
func DistinctiveNamespace(ns string) bool {
	return len(ns) >= 6 && strings.Contains(ns, "-") && ns != "kube-system" && ns != "kube-public" && ns != "kube-node-lease"
}

package analysis

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/alertexpr"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
)

// The alert's own condition: what the alert measures (its symptom kinds,
// read from its name and text) is looked up among the series of its target,
// and a series of that kind still far above its pre-incident level at the
// end of the window, still at its peak, means the condition still holds.
// A verdict of "healthy" that rests on the system looking fine elsewhere
// (pods Ready, no error logs) cannot stand while the alerted signal itself
// is still abnormal; verdicts that do not claim health now (planned work
// that ended, an environment that is not paged) are not affected.

var symptomWords = []struct {
	kind signal.Kind
	re   *regexp.Regexp
}{
	{signal.Latency, regexp.MustCompile(`(?i)latency|p9[059]|slow|response time|duration`)},
	{signal.Errors, regexp.MustCompile(`(?i)error|5xx|\b5[0-9][0-9]\b|fail|exception|unauthori[sz]ed|\b401\b|\b403\b|forbidden|denied|rejected`)},
	{signal.Memory, regexp.MustCompile(`(?i)memory|heap|\brss\b|working set|oom`)},
	{signal.CPU, regexp.MustCompile(`(?i)\bcpu\b|throttl`)},
	{signal.Saturation, regexp.MustCompile(`(?i)\blag\b|backlog|queue|pool|connections?|disk|storage|space|quota|file descriptors|threads|saturat`)},
}

// reCamel splits CamelCase words.
var reCamel = regexp.MustCompile(`([a-z])([A-Z])`)

// alertText is the alert's own words: name (CamelCase split as well),
// title, summary and description.
func (ev *Evidence) alertText() string {
	if ev.Alert == nil {
		return ""
	}
	a := ev.Alert
	text := strings.Join([]string{a.GetAlertName(), a.GetTitle(), a.GetSummary(), a.GetDescription()}, " ")
	// CamelCase alert names: "HighMemoryUsage" reads as words.
	return text + " " + reCamel.ReplaceAllString(a.GetAlertName(), "$1 $2")
}

// alertSymptoms are the signal kinds the alert's own words measure.
func (ev *Evidence) alertSymptoms() map[signal.Kind]bool {
	out := map[signal.Kind]bool{}
	if ev.Alert == nil {
		return out
	}
	text := ev.alertText()
	for _, w := range symptomWords {
		if w.re.MatchString(text) {
			out[w.kind] = true
		}
	}
	return out
}

// held is the alerted signal that still holds.
type held struct {
	what string
	s    Series
	kind signal.Kind
	last float64
}

// heldCondition finds a series of the alert's target whose kind the alert
// measures and that is still abnormal at the end of the window: still
// creeping at its highest (resources), or at least 1.5x its pre-incident
// level and still near its peak (errors and latency: heldShareOfPeak of it).
func (ev *Evidence) heldCondition() (held, bool) {
	if h, holds, measured := ev.alertExprHeld(); measured {
		return h, holds // the alert's own expression, measured: it decides
	}
	kinds := ev.alertSymptoms()
	if len(kinds) == 0 {
		return ev.namedSignalHeld()
	}
	for _, as := range ev.alertedSeries(kinds) {
		s, k := as.s, as.k
		if k == signal.Memory || k == signal.Saturation || k == signal.CPU {
			// A resource creeping up steadily and still at its highest at
			// the end: the condition holds and worsens.
			if first, last, perMin, ok := creep(s); ok && !isCounterName(s.Name) && last >= s.Peak*0.98 && !allocationRamp(s) {
				return held{what: fmt.Sprintf("%s%s still creeps up (%s to %s, %s per minute) and is at its highest at the end of the window", s.Name, labelSuffix(s.Series, "pod", "service"), num(first), num(last), num(perMin)), s: s, kind: k, last: last}, true
			}
		}
		rs := asRate(s.Series)
		r := riseOf(rs)
		fromZero := k == signal.Errors && r.head <= 0 && r.tail > 0.01
		share := heldShareOfPeak
		if k != signal.Errors && k != signal.Latency {
			share = 0.9 // a level (memory, a pool) that saws below its peak is its normal shape
		}
		if !fromZero && (r.head <= 0 || r.tail < 1.5*r.head) || (r.peak > 0 && r.tail < share*r.peak) {
			continue
		}
		return held{what: fmt.Sprintf("%s%s is still at %s at the end of the window (from %s before the incident)", s.Name, labelSuffix(s.Series, "pod", "service"), num(r.tail), num(r.head)), s: s, kind: k, last: r.tail}, true
	}
	return ev.namedSignalHeld()
}

// namedSignalHeld: the alert names what it counts in its own words
// (DuplicateReservations, OutboxGrowing, BoardDisconnects) and a series
// whose name carries a distinctive one of those words, of no kind the
// signal vocabulary knows (a business or domain measure), is still far
// above its pre-incident level and near its worst at the end of the
// window: the condition holds. Measures read the other way up (free,
// available, remaining, time to expiry) are left out: a rise of those is
// a recovery.
func (ev *Evidence) namedSignalHeld() (held, bool) {
	words := ev.alertWords()
	if len(words) == 0 {
		return held{}, false
	}
	for _, s := range ev.Series {
		if isDBMetric(s.Series) || strings.HasSuffix(s.Name, "_bucket") || signal.Classify(s.Name, s.Labels) != signal.Unknown {
			continue
		}
		name := metricWords(s.Name)
		if inverseMeasure(name) || !sharesWord(name, words) {
			continue
		}
		rs := asRate(s.Series)
		r := riseOf(rs)
		fromZero := r.head <= 0 && r.tail > 0
		if !fromZero && (r.head <= 0 || r.tail < 1.5*r.head) || r.peak > 0 && r.tail < heldShareOfPeak*r.peak {
			continue
		}
		return held{what: fmt.Sprintf("%s%s, the measure the alert names, is still at %s at the end of the window (from %s before the incident)", s.Name, labelSuffix(s.Series, "pod", "service"), num(r.tail), num(r.head)), s: s, last: r.tail}, true
	}
	return held{}, false
}

// structuralWords say how or where something is measured, not what: they
// do not tie an alert to a series.
var structuralWords = map[string]bool{
	"total": true, "count": true, "sum": true, "bucket": true, "seconds": true, "bytes": true, "ratio": true, "rate": true,
	"http": true, "https": true, "grpc": true, "request": true, "requests": true, "response": true, "responses": true,
	"server": true, "client": true, "service": true, "node": true, "kube": true, "container": true, "process": true,
	"instance": true, "status": true, "info": true, "high": true, "alert": true, "firing": true, "current": true,
	"value": true, "metric": true, "prod": true, "production": true, "critical": true, "warning": true,
}

// alertWords are the distinctive words of the alert's name and title
// (CamelCase and separators split, lower case, five letters or more).
func (ev *Evidence) alertWords() []string {
	if ev.Alert == nil {
		return nil
	}
	text := reCamel.ReplaceAllString(ev.Alert.GetAlertName(), "$1 $2") + " " + ev.Alert.GetTitle()
	var out []string
	for _, w := range metricWords(text) {
		if len(w) >= 5 && !structuralWords[w] {
			out = appendUnique(out, w)
		}
	}
	return out
}

// metricWords splits a metric or alert name into lower-case words.
func metricWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
}

// sharesWord: one of a's words is one of b's, a plural or a verb form of
// it ("disconnects" and "disconnect", "reservations" and "reservation").
func sharesWord(a, b []string) bool {
	for _, x := range a {
		if len(x) < 5 || structuralWords[x] {
			continue
		}
		for _, y := range b {
			if x == y || strings.TrimSuffix(x, "s") == strings.TrimSuffix(y, "s") {
				return true
			}
		}
	}
	return false
}

// inverseMeasure: a measure where less is worse (what is left, how long
// until a deadline).
func inverseMeasure(words []string) bool {
	for _, w := range words {
		if slices.Contains(leftWords, w) {
			return true
		}
		switch w {
		case "avail", "left", "expiry", "expiration", "until", "ttl", "budget", "success", "successful", "ok", "up":
			return true
		}
	}
	return false
}

// supplyMeasure: a measure of what serves the load (consumers, workers,
// replicas, a limit or a capacity), not of the load or of what fills: its
// rise is capacity added, never the alerted condition itself.
func supplyMeasure(words []string) bool {
	for _, w := range words {
		switch w {
		case "consumers", "workers", "replicas", "instances", "capacity", "limit", "limits", "allocatable", "max", "maximum":
			return true
		}
	}
	return false
}

// leftWords name what is left of a resource (free capacity): a fall of
// such a measure is its exhaustion, a rise its recovery.
var leftWords = []string{"free", "available", "remaining", "balance", "headroom"}

// heldShareOfPeak: an alerted error or latency series still at this share
// of its peak at the end of the window (and far above its pre-incident
// level) still holds: a condition that eased from its worst is not gone.
const heldShareOfPeak = 0.4

// alerted is a series of the alert's target whose kind the alert measures.
type alerted struct {
	s Series
	k signal.Kind
}

// alertedSeries lists the series of the alert's target (its service, or
// unlabelled) whose kind is one the alert measures; traffic and
// availability are context, not the condition.
func (ev *Evidence) alertedSeries(kinds map[signal.Kind]bool) []alerted {
	svc := ""
	if ev.Alert != nil {
		svc = strings.ToLower(firstNonEmptyStr(ev.Alert.GetService(), ev.alertField("service", "app", "deployment")))
	}
	var out []alerted
	for _, s := range ev.Series {
		if isDBMetric(s.Series) {
			continue
		}
		k := signal.Classify(s.Name, s.Labels)
		if !kinds[k] || k == signal.Traffic || k == signal.Availability || supplyMeasure(metricWords(s.Name)) {
			continue
		}
		if own := strings.ToLower(labelOf(s.Series, "service", "app", "deployment", "container", "job", "pod")); svc != "" && own != "" && own != svc && !strings.HasPrefix(own, svc+"-") {
			continue
		}
		out = append(out, alerted{s, k})
	}
	return out
}

// ModeConditionHolds: the alert's own condition still holds and nothing
// else explains it: a resource the alert measures is still rising toward
// its limit.
const ModeConditionHolds = "condition_holds"

// conditionFinding turns a held resource condition into a candidate: a
// resource (memory, CPU, a pool, a queue, a disk) of the alerted workload
// growing toward its limit is resource exhaustion in the making. Latency
// and error conditions are left to the other candidates: their mechanism
// is not in the signal itself.
func (ev *Evidence) conditionFinding(h held) (Finding, bool) {
	if h.kind != signal.Memory && h.kind != signal.CPU && h.kind != signal.Saturation {
		return Finding{}, false
	}
	if h.kind == signal.Saturation && isCounterName(signal.MetricName(h.s.Name)) {
		// The rate of a counter of events (connections closed, requests
		// queued) is a flow, not a level that fills toward a limit.
		return Finding{}, false
	}
	pod := h.s.Labels["pod"]
	entity := ev.workloadEntity()
	for _, p := range ev.Pods {
		if p.Name == pod {
			if wl := ev.workloadOf(p.Pod); wl != "" {
				entity = deploymentEntity(p.Namespace, wl)
			}
		}
	}
	f := Finding{Mode: ModeConditionHolds, Detector: ModeConditionHolds, Category: catResource, Entity: entity, Score: 0.58}
	f.validated("The alert's condition still holds: "+h.what, h.s.Cite)
	limitTxt := ""
	if lim, c, ok := ev.limitOf(h.s); ok && lim > 0 {
		share := h.last / lim
		limitTxt = fmt.Sprintf(", %.0f%% of its limit %s", 100*share, num(lim))
		f.validated(fmt.Sprintf("Its limit is %s; it is at %.0f%% of it", num(lim), 100*share), c)
		if share >= 0.75 {
			f.Score = 0.66
		}
	}
	// What grows with it names what is retained (cache entries, queued
	// items, open connections).
	var with []string
	for _, x := range ev.Series {
		if x.Labels["pod"] != pod || pod == "" || x.Name == h.s.Name || isCounterName(x.Name) || strings.Contains(strings.ToLower(x.Name), "limit") {
			continue
		}
		if first, last, _, ok := creep(x); ok && len(with) < 3 && !containsName(with, x.Name) {
			with = append(with, x.Name)
			f.validated(fmt.Sprintf("%s grows with it (%s to %s)", x.Name, num(first), num(last)), x.Cite)
		}
	}
	if len(with) > 0 {
		limitTxt += "; growing with it: " + strings.Join(with, ", ")
	}
	f.Statement = fmt.Sprintf("%s keeps growing toward exhaustion: %s%s; nothing in the evidence (restarts, errors, changes) explains it otherwise, and it will hit its limit if the trend continues", strings.TrimPrefix(entity, "deployment/"), h.what, limitTxt)
	f.Chain = []string{"A resource of the workload grows steadily (retention, leak, unbounded growth)", "It approaches its limit", "The alert on that resource fires; exhaustion (OOM kill, throttling, refusal) follows if nothing changes"}
	f.Remediation = []string{"Find what grows with it (caches, queues, connections) and bound it", "Restart or scale out as a stopgap before the limit is reached"}
	f.Signals = []string{string(h.kind), "creep"}
	return f, true
}

// limitOf finds the limit series of the same pod and resource (kube-state
// or cAdvisor spec limits).
func (ev *Evidence) limitOf(s Series) (float64, Cite, bool) {
	pod := s.Labels["pod"]
	if pod == "" {
		return 0, Cite{}, false
	}
	isMem := strings.Contains(strings.ToLower(s.Name), "mem") || strings.Contains(strings.ToLower(s.Name), "heap")
	for _, x := range ev.Series {
		n := strings.ToLower(x.Name)
		if x.Labels["pod"] != pod || !strings.Contains(n, "limit") {
			continue
		}
		res := strings.ToLower(x.Labels["resource"])
		if isMem && (res == "memory" || strings.Contains(n, "memory")) || !isMem && (res == "cpu" || strings.Contains(n, "cpu")) {
			return seriesTailMedian(x.Series), x.Cite, true
		}
	}
	return 0, Cite{}, false
}

// ModeConditionCleared: the alert's own signal had an episode and has been
// back at its pre-incident level for a while: the condition no longer
// holds.
const ModeConditionCleared = "condition_cleared"

// clearedFor: the signal must have been back this long at the end of the
// window.
const clearedFor = 10 * time.Minute

// clearedResidue: the share of an episode's rise a signal may keep and
// still count as back at its pre-incident level.
const clearedResidue = 0.05

// detectConditionCleared: every series of the alert's target whose kind the
// alert measures is back near its pre-incident level for the last
// clearedFor, and at least one had an episode (at least 1.5x its level, or
// errors from none). The verdict is healthy now, with the episode's times;
// a fault that still shows elsewhere outranks it (faults above the bar
// always lead).
func detectConditionCleared(ev *Evidence) []Finding {
	kinds := ev.alertSymptoms()
	if len(kinds) == 0 {
		return nil
	}
	if _, holds := ev.heldCondition(); holds {
		return nil
	}
	var episode *Series
	var peakAt, backAt *time.Time
	var peak, head float64
	var cites Cite
	for _, as := range ev.alertedSeries(kinds) {
		s, k := as.s, as.k
		rs := asRate(s.Series)
		pts := rs.Downsampled
		if len(pts) < 6 {
			continue
		}
		h := seriesHead(rs)
		end := pts[len(pts)-1].T
		back := true
		// Back near the pre-incident level: within 20% of it, or within
		// clearedResidue of the episode's rise (a background trickle of
		// errors after a spike of hundreds is the baseline again).
		high := func(v float64) bool {
			residue := h + clearedResidue*math.Max(rs.Peak-h, 0)
			return v > 1.2*h+1e-9 && v > residue && !(k == signal.Errors && v <= 0.01)
		}
		if !tailAll(pts, end, clearedFor, func(v float64) bool { return !high(v) }) {
			back = false
		}
		// When it came back: the first point of the trailing run at its
		// level.
		backSince := func() *time.Time {
			var since *time.Time
			for j := len(pts) - 1; j >= 0 && !high(pts[j].V); j-- {
				t := pts[j].T
				since = &t
			}
			return since
		}
		since := backSince()
		if !back || end.Sub(pts[0].T) < 2*clearedFor {
			return nil // one alerted signal is not back: the condition may hold
		}
		p := rs.Peak
		if k == signal.Errors && h > 0.01 && since != nil && !since.After(end.Add(-clearedFor)) && tailAll(pts, end, clearedFor, func(v float64) bool { return v <= math.Max(0.01, clearedResidue*p) }) {
			// The window opens inside the episode: errors from the first
			// point, none at the end. The level before it is none.
			h = 0
			since = backSince()
		}
		if (h > 0 && p >= 1.5*h) || (k == signal.Errors && h <= 0 && p > 0.01) {
			if episode == nil || p/math.Max(h, 1e-9) > peak/math.Max(head, 1e-9) {
				ss := s
				episode, peak, head, peakAt, backAt = &ss, p, h, rs.PeakAt, since
			}
		}
		cites.merge(s.Cite)
	}
	if episode == nil {
		return nil
	}
	f := healthyFinding(ModeConditionCleared, ev.workloadEntity(), 0.7)
	f.validated(fmt.Sprintf("%s%s peaked at %s%s and has been back near its pre-incident level (%s) for at least the last %s of the window", episode.Name, labelSuffix(episode.Series, "pod", "service"), num(peak), atText(peakAt), num(head), durHuman(clearedFor)), cites)
	f.Statement = fmt.Sprintf("No active failure: the alert's own signal (%s) had an episode%s and has been back at its pre-incident level since; the condition no longer holds", episode.Name, atText(peakAt))
	f.Chain = []string{"A transient episode raises the alerted signal", "The signal returns to its pre-incident level", "The alert, evaluated over a window that still includes the episode (or delivered late), fires after the fact"}
	f.Remediation = []string{"Resolve the alert; check why it fired or arrived after the condition cleared (evaluation window, pending period, delivery delay)"}
	f.Signals = []string{"cleared", episode.Name}
	if l, ok := ev.remediationBefore(backAt); ok {
		// Someone acted and the signal came back: the fault was mitigated
		// before the investigation, whatever caused it. The faults the
		// evidence still shows are its history, not an active failure.
		f.Score = mitigatedScore
		f.Overrides = true
		f.explains(explainsAll, "mitigated before the investigation: "+clip(l.Message, 160))
		f.validated(fmt.Sprintf("Remediation before the return to normal, %s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		f.Statement = fmt.Sprintf("No active failure: the alert's own signal (%s) had an episode%s and came back to its pre-incident level%s after a remediation: %s at %s; the condition no longer holds", episode.Name, atText(peakAt), atText(backAt), quote(clip(l.Message, 200)), hhmm(l.Timestamp))
		f.Chain = []string{"A fault raises the alerted signal", "A remediation is applied: " + clip(l.Message, 120), "The signal returns to its pre-incident level; the alert's condition no longer holds"}
		f.Remediation = []string{"No action needed now: the remediation holds; fix the underlying cause before undoing it"}
	}
	return []Finding{f}
}

// mitigatedScore: a cleared signal after a remediation is the verdict over
// the faults the evidence still shows (their history): above the fault bar
// and above a plain cleared reading.
const mitigatedScore = 0.75

// tailAll: every point of the last d of pts (up to end) satisfies ok.
func tailAll(pts []facts.Point, end time.Time, d time.Duration, ok func(float64) bool) bool {
	for j := len(pts) - 1; j >= 0 && end.Sub(pts[j].T) <= d; j-- {
		if !ok(pts[j].V) {
			return false
		}
	}
	return true
}

// remediationWindow: a remediation this long before an alerted signal came
// back (or remediationAfter after the first point at its level) preceded
// the return to normal.
const (
	remediationWindow = 20 * time.Minute
	remediationAfter  = 2 * time.Minute
)

// reRemediation: the words operators and their tools write when they
// mitigate (a kill switch, a flag turned off, a rollback, a revert, a
// failover, a scale-out, "mitigated").
var reRemediation = regexp.MustCompile(`(?i)\b(kill[- ]?switch|turned off|switched off|disabled|rolled back|roll(?:ing)?[- ]?back|revert(?:ed|ing)?|failed over|fail[- ]?over|scaled (?:up|out)|mitigat(?:ed|ion))\b`)

// remediationBefore is a record of a remediation (reRemediation, not an
// error) written shortly before back, when the alerted signal returned to
// its level: the remediation preceded the return to normal.
func (ev *Evidence) remediationBefore(back *time.Time) (LogLine, bool) {
	if back == nil {
		return LogLine{}, false
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" || !reRemediation.MatchString(l.Message) {
			continue
		}
		if l.Timestamp.Before(back.Add(-remediationWindow)) || l.Timestamp.After(back.Add(remediationAfter)) {
			continue
		}
		return l, true
	}
	return LogLine{}, false
}

func atText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return " at " + hhmm(t)
}

// alertExpr is the PromQL condition the alert carries, when it has one.
func (ev *Evidence) alertExpr() (alertexpr.Expr, bool) {
	if ev.Alert == nil {
		return alertexpr.Expr{}, false
	}
	return alertexpr.Find(ev.Alert.GetAnnotations(), map[string]string{"summary": ev.Alert.GetSummary(), "description": ev.Alert.GetDescription()})
}

// alertExprSeries are the series a query of the alert's own expression
// returned.
func (ev *Evidence) alertExprSeries(e alertexpr.Expr) []Series {
	ofAlert := map[string]bool{} // the pins whose query is the alert's measure
	for id, q := range ev.Queries {
		if qe, ok := alertexpr.Parse(q); ok && qe.Measure == e.Measure {
			ofAlert[id] = true
		}
	}
	if len(ofAlert) == 0 {
		return nil
	}
	var out []Series
	for _, s := range ev.Series {
		if slices.ContainsFunc(s.PinIDs, func(id string) bool { return ofAlert[id] }) {
			out = append(out, s)
		}
	}
	return out
}

// alertExprHeld judges the alert's own expression over the window when its
// series are in evidence (measured): with a threshold, whether its value at
// the end of the window still crosses it; without one, whether it is still
// at least 1.5x its pre-incident level and near its peak.
func (ev *Evidence) alertExprHeld() (h held, holds, measured bool) {
	e, ok := ev.alertExpr()
	if !ok {
		return held{}, false, false
	}
	ss := ev.alertExprSeries(e)
	if len(ss) == 0 {
		return held{}, false, false
	}
	for _, s := range ss {
		if s.Count == 0 {
			continue
		}
		last := s.Latest
		if hold, judged := e.Holds(last); judged {
			if hold {
				return held{what: fmt.Sprintf("the alert's own expression %s is %s at the end of the window, still %s %s", clip(e.Measure, 160), num(last), e.Op, num(e.Threshold)), s: s, last: last}, true, true
			}
			continue
		}
		r := riseOf(s.Series)
		if r.head > 0 && r.tail >= 1.5*r.head && (r.peak <= 0 || r.tail >= 0.9*r.peak) || r.head <= 0 && r.tail > 0 && r.tail >= 0.9*r.peak {
			return held{what: fmt.Sprintf("the alert's own expression %s is still at %s at the end of the window (from %s before the incident)", clip(e.Measure, 160), num(r.tail), num(r.head)), s: s, last: r.tail}, true, true
		}
	}
	return held{}, false, true
}

// reExpectedEffect: a record that declares an effect expected while an
// activity lasts ("replay lag up to 20 min on standby-2 is expected during
// backup", "high CPU by design during the reindex"), not a target to meet
// ("expected to stay under 1 s").
var reExpectedEffect = regexp.MustCompile(`(?i)\b(?:is|are|be|remains?) expected\b(?:\s+(?:during|while|until|for)\b|\s*[;:,.)]|\s*$)|\bexpected (?:during|while)\b|\bby design\b|\bas designed\b`)

// expectedRecord is a record around the alert that names its target and
// declares the alerted effect expected while an activity lasts, when
// nothing fails anywhere (no error line, no warning that keeps coming): the
// condition that still holds is the one the record announced.
func (ev *Evidence) expectedRecord() (LogLine, bool) {
	at := ev.alertTime()
	if at == nil || len(ev.errorLogs()) > 0 || len(ev.persistentWarnings()) > 0 {
		return LogLine{}, false
	}
	for _, l := range ev.contextLines(*at) {
		if l.Timestamp != nil && !l.Timestamp.After(*at) && reExpectedEffect.MatchString(l.Message) {
			return l, true
		}
	}
	return LogLine{}, false
}

// allocationRamp: a garbage-collected heap whose rise is its sawtooth,
// not what it retains: no collection in the window (the allocation phase
// alone), or collections that leave it at the same floor each time. Only
// floors that rise from one collection to the next read as retention.
func allocationRamp(s Series) bool {
	n := strings.ToLower(s.Name)
	heap := strings.Contains(n, "heap") || strings.EqualFold(s.Labels["area"], "heap") || strings.Contains(n, "jvm_memory") || strings.Contains(n, "gc_heap")
	if !heap {
		return false
	}
	pts := s.Downsampled
	var floors []float64
	for i := 1; i < len(pts); i++ {
		if pts[i-1].V > 0 && pts[i].V < 0.75*pts[i-1].V {
			floors = append(floors, pts[i].V) // a collection
		}
	}
	if len(floors) == 0 {
		return true
	}
	return floors[len(floors)-1] <= 1.1*min(floors[0], pts[0].V)
}

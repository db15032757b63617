package analysis

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// ---- formatting ----

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	case a >= 10:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	default:
		return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
}

func pct(v float64) string { return num(v) + "%" }

func bytesHuman(v float64) string {
	const gb = 1 << 30
	const mb = 1 << 20
	switch {
	case math.Abs(v) >= gb:
		return num(v/gb) + " GB"
	case math.Abs(v) >= mb:
		return num(v/mb) + " MB"
	default:
		return num(v) + " B"
	}
}

func hhmm(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "?"
	}
	return t.UTC().Format("15:04:05Z")
}

func hhmmT(t time.Time) string { return hhmm(&t) }

func durHuman(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%d min", int(d.Minutes()+0.5))
	default:
		return fmt.Sprintf("%d s", int(d.Seconds()+0.5))
	}
}

func joinNames(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	case 2:
		return xs[0] + " and " + xs[1]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return cut + "..."
}

// quote marks text from an inspected system as a quotation (untrusted.go).
func quote(s string) string { return quoteUntrusted(s) }

// headTail bounds evidence text for a report: short texts whole; a long one
// keeps its head and its tail, because error chains put the innermost
// cause last ("...: x509: certificate signed by unknown authority").
func headTail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= quoteMax {
		return s
	}
	tail := s[len(s)-quoteTail:]
	if i := strings.IndexByte(tail, ' '); i >= 0 && i < quoteTail/3 {
		tail = tail[i+1:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return clip(s, quoteMax-quoteTail) + " " + tail
}

// quoteMax bounds a quoted text; quoteTail is how much of a long text's
// end is kept.
const (
	quoteMax  = 640
	quoteTail = 200
)

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func containsFold(s string, subs ...string) bool {
	l := strings.ToLower(s)
	for _, x := range subs {
		if strings.Contains(l, strings.ToLower(x)) {
			return true
		}
	}
	return false
}

// ---- Kubernetes helpers ----

var exitCodeRe = regexp.MustCompile(`(?i)exit(?:ed|ing)?[ _]?(?:with[ _])?code[ _]*(?:[:=]\s*)?(\d{1,3})`)

// exitCodes returns exit codes mentioned in free text.
func exitCodes(text string) []int {
	var out []int
	for _, m := range exitCodeRe.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func podReady(p facts.Pod) bool {
	for _, c := range p.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	if p.Ready {
		return true
	}
	if len(p.Containers) == 0 {
		return false
	}
	for _, c := range p.Containers {
		if !c.Ready {
			return false
		}
	}
	return true
}

func podRestarts(p facts.Pod) int32 {
	var sum int32
	for _, c := range p.Containers {
		sum += c.RestartCount
	}
	if p.Restarts > sum {
		return p.Restarts
	}
	return sum
}

func podRunning(p facts.Pod) bool { return strings.EqualFold(p.Phase, "Running") }

// podHealthy: Running, Ready, and every container running.
func podHealthy(p facts.Pod) bool {
	if !podRunning(p) || !podReady(p) {
		return false
	}
	for _, c := range p.Containers {
		if c.State != "" && c.State != "running" {
			return false
		}
	}
	return true
}

// waitingReason returns the first waiting container's reason.
func waitingReason(p facts.Pod) (facts.Container, string) {
	for _, c := range p.Containers {
		if c.State == "waiting" && c.Reason != "" {
			return c, c.Reason
		}
	}
	if p.Reason != "" && !strings.EqualFold(p.Reason, "Terminating") {
		if len(p.Containers) > 0 {
			return p.Containers[0], p.Reason
		}
		return facts.Container{}, p.Reason
	}
	return facts.Container{}, ""
}

// podText is every free-text field of a pod (messages, reasons).
func podText(p facts.Pod) string {
	var b strings.Builder
	b.WriteString(p.Reason + " " + p.Message + " ")
	for _, c := range p.Containers {
		b.WriteString(c.Reason + " " + c.Message + " " + c.LastReason + " " + c.LastMessage + " ")
	}
	for _, c := range p.Conditions {
		b.WriteString(c.Reason + " " + c.Message + " ")
	}
	return b.String()
}

// replicaSetOf returns the pod's ReplicaSet: the owner when known, else the
// name without its last dash segment (Deployment pods are <rs>-<suffix>).
func replicaSetOf(p facts.Pod) string {
	if strings.EqualFold(p.OwnerKind, "ReplicaSet") && p.OwnerName != "" {
		return p.OwnerName
	}
	if i := strings.LastIndexByte(p.Name, '-'); i > 0 {
		return p.Name[:i]
	}
	return ""
}

// workloadOf returns the owning workload name when known or derivable.
func (ev *Evidence) workloadOf(p facts.Pod) string {
	// A known Deployment whose name prefixes the pod's wins (longest match):
	// derived workload names cannot tell "<deploy>-<rs-hash>" from a
	// ReplicaSet name with extra dashes.
	best := ""
	for _, d := range ev.Deployments {
		if d.Namespace != "" && p.Namespace != "" && d.Namespace != p.Namespace {
			continue
		}
		if strings.HasPrefix(p.Name, d.Name+"-") && len(d.Name) > len(best) {
			best = d.Name
		}
	}
	if best != "" {
		return best
	}
	if p.Workload != "" {
		return p.Workload
	}
	if !strings.EqualFold(p.OwnerKind, "ReplicaSet") && p.OwnerKind != "" && p.OwnerName != "" {
		return p.OwnerName
	}
	rs := replicaSetOf(p)
	for _, d := range ev.Deployments {
		if d.Namespace != "" && p.Namespace != "" && d.Namespace != p.Namespace {
			continue
		}
		if strings.HasPrefix(rs, d.Name+"-") || rs == d.Name || strings.HasPrefix(p.Name, d.Name+"-") {
			return d.Name
		}
	}
	for _, l := range []string{"app.kubernetes.io/name", "app"} {
		if v := p.Labels[l]; v != "" {
			return v
		}
	}
	if w := ev.alertField("workload_name", "kube_deployment", "deployment"); w != "" && strings.HasPrefix(p.Name, w+"-") {
		return w
	}
	if i := strings.LastIndexByte(rs, '-'); i > 0 {
		return rs[:i]
	}
	return ""
}

func (ev *Evidence) deploymentFor(ns, name string) (Deployment, bool) {
	for _, d := range ev.Deployments {
		if d.Name == name && (ns == "" || d.Namespace == "" || d.Namespace == ns) {
			return d, true
		}
	}
	return Deployment{}, false
}

// siblings are the other pods of the same workload.
func (ev *Evidence) siblings(p Pod) []Pod {
	w := ev.workloadOf(p.Pod)
	var out []Pod
	for _, o := range ev.Pods {
		if o.Name == p.Name || o.Namespace != p.Namespace {
			continue
		}
		if w != "" && ev.workloadOf(o.Pod) == w {
			out = append(out, o)
		}
	}
	return out
}

func podNames(ps []Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func citesOfPods(ps []Pod) Cite {
	var c Cite
	for _, p := range ps {
		c.merge(p.Cite)
	}
	return c
}

func citesOfEvents(es []Event) Cite {
	var c Cite
	for _, e := range es {
		c.merge(e.Cite)
	}
	return c
}

func citesOfLogs(ls []LogLine) Cite {
	var c Cite
	for _, l := range ls {
		c.merge(l.Cite)
	}
	return c
}

func podStartedAt(p facts.Pod) *time.Time {
	return p.StartTime
}

// podTerminating reports whether the pod is being deleted (kubectl's
// "Terminating"), from the pod's reason or messages.
func podTerminating(p facts.Pod) bool {
	if strings.EqualFold(p.Reason, "Terminating") {
		return true
	}
	return containsFold(podText(p), "terminating")
}

// lastEventTime returns the latest lastSeen (or firstSeen) among events.
func lastEventTime(es []Event) *time.Time {
	var t *time.Time
	for _, e := range es {
		for _, x := range []*time.Time{e.LastSeen, e.FirstSeen} {
			if x != nil && (t == nil || x.After(*t)) {
				t = x
			}
		}
	}
	return t
}

func firstEventTime(es []Event) *time.Time {
	var t *time.Time
	for _, e := range es {
		for _, x := range []*time.Time{e.FirstSeen, e.LastSeen} {
			if x != nil && (t == nil || x.Before(*t)) {
				t = x
			}
		}
	}
	return t
}

// recent reports whether t is within d of the evidence reference time; an
// unknown time counts as recent (we cannot prove it is old).
func (ev *Evidence) recent(t *time.Time, d time.Duration) bool {
	if t == nil || ev.Now.IsZero() {
		return true
	}
	return ev.Now.Sub(*t) <= d
}

func eventCount(e facts.Event) int32 {
	if e.Count <= 0 {
		return 1
	}
	return e.Count
}

func eventLine(e Event) string {
	s := e.Reason
	if c := eventCount(e.Event); c > 1 {
		s += fmt.Sprintf(" (x%d)", c)
	}
	return s + ": " + quote(e.Message)
}

// nodeCondition returns a node condition's status ("" when absent).
func nodeCondition(n facts.Node, typ string) string {
	for _, c := range n.Conditions {
		if strings.EqualFold(c.Type, typ) {
			return c.Status
		}
	}
	return ""
}

func nodeReadyStatus(n facts.Node) string {
	if s := nodeCondition(n, "Ready"); s != "" {
		return s
	}
	if n.Ready {
		return "True"
	}
	return "False"
}

func nodePressures(n facts.Node) []string {
	var out []string
	for _, t := range []string{"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"} {
		if strings.EqualFold(nodeCondition(n, t), "True") {
			out = append(out, t)
		}
	}
	return out
}

func shortNode(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// ---- logs ----

// reWarningClass: a line that starts with a runtime's warning category
// (Python's DeprecationWarning or UserWarning, Node's "(node:12)
// [DEP0005] DeprecationWarning:").
var reWarningClass = regexp.MustCompile(`^\W*(?:\(node:\d+\)\s*)?(?:\[[A-Z0-9]+\]\s*)?(?:[\w.]+\.)?[A-Z]\w*Warning:`)

// reClientGone: a line that says the client of a request went away
// before its answer was written (a browser tab closed, a device that
// dropped its connection): the caller left, the service did not fail.
var reClientGone = regexp.MustCompile(`(?i)\bclient\b(?: [\w.-]+){0,3} (?:disconnected|went away|has gone away|hung up)\b|\bclient closed (?:the )?request\b`)

// reRetrySucceeded: a line that reports its own operation succeeded once
// retried ("upload retried after 502, succeeded on retry", "ok after 2
// retries"): the retry absorbed the failure; nothing failed in the end.
var reRetrySucceeded = regexp.MustCompile(`(?i)\b(?:succeeded|successful(?:ly)?|completed|ok|recovered)\b[^.;]{0,24}\b(?:on|after|with)\b[^.;]{0,12}\bretr(?:y|ies|ying|ied)\b|\bretr(?:y|ied)\b[^.;]{0,12}\b(?:succeeded|successful)\b`)

func logLevel(l facts.LogLine) string {
	lv := strings.ToUpper(strings.TrimSpace(l.Level))
	switch lv {
	case "ERR":
		lv = "ERROR"
	case "WARNING":
		lv = "WARN"
	case "CRITICAL", "CRIT", "EMERG", "ALERT", "PANIC":
		lv = "FATAL"
	}
	if lv == "ERROR" && (reWarningClass.MatchString(l.Message) || reClientGone.MatchString(l.Message) || reRetrySucceeded.MatchString(l.Message)) {
		// A runtime's warning category (a DeprecationWarning a library
		// logs at ERROR) warns; it reports no failure. Nor does a client
		// that went away before its answer, nor an operation a retry
		// completed.
		return "WARN"
	}
	if lv != "" {
		return lv // an explicit level wins over words in the message
	}
	m := strings.ToUpper(l.Message)
	for _, k := range []string{"FATAL", "PANIC", "ERROR", "WARN"} {
		if strings.Contains(m, " "+k+" ") || strings.HasPrefix(m, k+" ") || strings.Contains(m, k+":") || strings.Contains(m, "["+k+"]") {
			if k == "PANIC" {
				return "FATAL"
			}
			return k
		}
	}
	return "INFO"
}

func isErrorLog(l facts.LogLine) bool {
	switch logLevel(l) {
	case "ERROR", "FATAL":
		return true
	}
	return false
}

// ---- series helpers ----

func seriesFirst(s facts.Series) (float64, bool) {
	if len(s.Downsampled) > 0 {
		return s.Downsampled[0].V, true
	}
	return s.Baseline, s.Count > 0
}

func seriesStart(s facts.Series) *time.Time {
	if len(s.Downsampled) > 0 {
		t := s.Downsampled[0].T
		return &t
	}
	return nil
}

// seriesTailMedian is the median of the last third of the downsampled points
// (or Latest).
func seriesTailMedian(s facts.Series) float64 {
	n := len(s.Downsampled)
	if n < 3 {
		return s.Latest
	}
	tail := make([]float64, 0, n/3+1)
	for _, p := range s.Downsampled[n-(n/3+1):] {
		tail = append(tail, p.V)
	}
	sort.Float64s(tail)
	return tail[len(tail)/2]
}

// seriesHead is the baseline: the tool's Baseline, else the first point.
func seriesHead(s facts.Series) float64 {
	if f, ok := seriesFirst(s); ok && (s.Baseline == 0 || math.Abs(f) < math.Abs(s.Baseline)) {
		return f
	}
	return s.Baseline
}

// onsetOf returns the onset time: the tool's OnsetAt, else the first point
// that moved more than 25% of the total change away from the first value.
func onsetOf(s facts.Series) *time.Time {
	if s.OnsetAt != nil {
		return s.OnsetAt
	}
	n := len(s.Downsampled)
	if n < 2 {
		return nil
	}
	first := s.Downsampled[0].V
	var far float64
	for _, p := range s.Downsampled {
		if d := math.Abs(p.V - first); d > far {
			far = d
		}
	}
	if far == 0 {
		return nil
	}
	for _, p := range s.Downsampled[1:] {
		if math.Abs(p.V-first) > far*0.25 {
			t := p.T
			return &t
		}
	}
	return nil
}

func instanceOf(s facts.Series) string {
	for _, k := range []string{"DBInstanceIdentifier", "db_instance_identifier", "instance", "dbinstanceidentifier"} {
		if v := s.Labels[k]; v != "" {
			return v
		}
	}
	return ""
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

var levelKV = regexp.MustCompile(`(?i)\b(?:level|lvl|severity)\s*[=:]\s*"?([a-z]+)`)

// Content markers, matched on the ASCII-lowercased line. "w:" marks a whole word.
var (
	criticalMarkers = []string{"w:panic", "out of memory", "w:oom", "oomkill", "oom-kill", "oom_kill", "oom kill", "fatal error", "segmentation fault", "sigsegv", "killed process", "exit code 137", "stack overflow"}
	errorMarkers    = []string{"w:error", "exception", "traceback", "w:fatal", "w:failed", "w:failure", "timeout", "timed out", "time out", "refused", "denied", "unavailable", "unreachable", "cannot", "could not", "deadlock", "w:killed",
		"exit code 1", "exit code 2", "exit code 3", "exit code 4", "exit code 5", "exit code 6", "exit code 7", "exit code 8", "exit code 9"}
	levelWords = map[string]bool{"FATAL": true, "PANIC": true, "CRITICAL": true, "CRIT": true, "EMERG": true, "ALERT": true, "ERROR": true, "ERR": true, "WARNING": true, "WARN": true, "INFO": true, "NOTICE": true, "DEBUG": true, "TRACE": true}
)

func hasMarker(lower string, markers []string) bool {
	for _, m := range markers {
		if strings.HasPrefix(m, "w:") {
			if textutil.ContainsWord(lower, m[2:]) {
				return true
			}
		} else if strings.Contains(lower, m) {
			return true
		}
	}
	return false
}

// levelTokenIn returns the first upper-case level word of s.
func levelTokenIn(s string) string {
	for i := 0; i < len(s); {
		if c := s[i]; c < 'A' || c > 'Z' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= 'A' && s[j] <= 'Z' {
			j++
		}
		if (i == 0 || !textutil.IsWordByte(s[i-1])) && (j == len(s) || !textutil.IsWordByte(s[j])) && levelWords[s[i:j]] {
			return s[i:j]
		}
		i = j
	}
	return ""
}

// normLevel maps level spellings to FATAL, ERROR, WARN, INFO, DEBUG.
func normLevel(l string) string {
	switch strings.ToUpper(strings.TrimSpace(l)) {
	case "FATAL", "PANIC", "CRITICAL", "CRIT", "EMERG", "EMERGENCY", "ALERT", "F":
		return "FATAL"
	case "ERROR", "ERR", "E", "SEVERE":
		return "ERROR"
	case "WARN", "WARNING", "W":
		return "WARN"
	case "INFO", "NOTICE", "I", "INFORMATION":
		return "INFO"
	case "DEBUG", "TRACE", "D", "VERBOSE":
		return "DEBUG"
	}
	return ""
}

// parseLogLine extracts timestamp, level and message from one line of
// container output (plain, logfmt or JSON).
func parseLogLine(line string) facts.LogLine {
	ll := facts.LogLine{Message: line}
	trimmed := strings.TrimSpace(line)
	if strings.HasPrefix(trimmed, "{") {
		var obj map[string]any
		if json.Unmarshal([]byte(trimmed), &obj) == nil {
			// Level keys of the common structured loggers: zap, logrus,
			// slog, ECS, OpenTelemetry, Python's logging, Serilog's compact
			// form, MongoDB's "s" (F, E, W, I, D1..D5).
			for _, k := range []string{"level", "lvl", "severity", "log.level", "levelname", "log_level", "loglevel", "severity_text", "@l", "s"} {
				if v, ok := obj[k].(string); ok {
					if lv := normLevel(v); lv != "" {
						ll.Level = lv
						break
					}
				}
			}
			if t, ok := obj["t"].(map[string]any); ok {
				obj["time"] = t["$date"] // MongoDB: {"t":{"$date":"..."}}
			}
			for _, k := range []string{"ts", "time", "timestamp", "@timestamp", "@t"} {
				if v, ok := obj[k].(string); ok {
					if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
						ll.Timestamp = ptrTime(t)
						break
					}
				}
			}
			for _, k := range []string{"msg", "message", "error"} {
				if v, ok := obj[k].(string); ok && v != "" {
					ll.Message = v
					if e, ok := obj["error"].(string); ok && k != "error" && e != "" {
						ll.Message += ": " + e
					}
					break
				}
			}
			ll.Message += structuredFields(obj)
			if ll.Level == "" {
				ll.Level = textLevel(ll.Message)
			}
			return ll
		}
	}
	rest := trimmed
	if f := strings.Fields(trimmed); len(f) > 0 {
		tok := strings.Trim(f[0], "[]")
		if k, v, ok := strings.Cut(f[0], "="); ok && logfmtTimeKeys[k] {
			// logfmt (Go's log/slog text handler, logrus, Prometheus):
			// time=2027-07-14T10:00:04Z level=info msg="..."
			tok = strings.Trim(v, `"`)
		}
		if t, err := time.Parse(time.RFC3339Nano, tok); err == nil {
			ll.Timestamp = ptrTime(t)
			rest = strings.TrimSpace(trimmed[len(f[0]):])
		} else if len(f) > 1 {
			if t, err := time.Parse("2006-01-02 15:04:05", strings.Trim(f[0]+" "+f[1], "[]")); err == nil {
				ll.Timestamp = ptrTime(t)
				rest = strings.TrimSpace(strings.SplitN(trimmed, f[1], 2)[1])
			}
		}
	}
	ll.Message = rest
	if lower := textutil.ASCIILower(rest); strings.Contains(lower, "level") || strings.Contains(lower, "lvl") || strings.Contains(lower, "severity") {
		if m := levelKV.FindStringSubmatch(rest); m != nil {
			ll.Level = normLevel(m[1])
		}
	}
	if ll.Level == "" {
		if m := levelTokenIn(rest); m != "" {
			ll.Level = normLevel(m)
		}
	}
	if ll.Level == "" {
		// A leading level word in lower case ("info: listening", winston's
		// and many CLI loggers' form, "warn[...]").
		if m := reLeadingLevel.FindStringSubmatch(rest); m != nil {
			ll.Level = normLevel(m[1])
		}
	}
	if ll.Level == "" {
		ll.Level = textLevel(rest)
	}
	return ll
}

// logfmtTimeKeys are the keys logfmt loggers write a line's time under.
var logfmtTimeKeys = map[string]bool{"time": true, "ts": true, "t": true, "timestamp": true}

// reLeadingLevel: a line that opens with a level word and a colon or
// bracket.
var reLeadingLevel = regexp.MustCompile(`(?i)^(info|warn|warning|error|debug|fatal|trace|notice|critical)\s*[:\[|]`)

// textLevel infers a level from content when the line carries none.
func textLevel(msg string) string {
	lower := textutil.ASCIILower(msg)
	switch {
	case hasMarker(lower, criticalMarkers):
		return "FATAL"
	case hasMarker(lower, errorMarkers):
		return "ERROR"
	}
	return ""
}

// lineClass is a log line's severity and whether it reads as an error.
type lineClass struct {
	sev   evidencev1.Severity
	isErr bool
}

// classify grades one log line: FATAL/panic/OOM critical, ERROR high, WARN medium.
func classify(l facts.LogLine) lineClass {
	lower := textutil.ASCIILower(l.Message)
	crit := l.Level == "FATAL" || hasMarker(lower, criticalMarkers)
	c := lineClass{sev: evidencev1.Severity_SEVERITY_INFO}
	switch {
	case crit:
		c.sev = evidencev1.Severity_SEVERITY_CRITICAL
	case l.Level == "ERROR":
		c.sev = evidencev1.Severity_SEVERITY_HIGH
	case l.Level == "WARN":
		c.sev = evidencev1.Severity_SEVERITY_MEDIUM
	}
	c.isErr = c.sev <= evidencev1.Severity_SEVERITY_HIGH || hasMarker(lower, errorMarkers)
	return c
}

func classifyAll(lines []facts.LogLine) []lineClass {
	out := make([]lineClass, len(lines))
	for i := range lines {
		out[i] = classify(lines[i])
	}
	return out
}

// capLines keeps at most max lines: every error line first (up to max/2),
// then the newest others, in their original order.
func capLines(lines []facts.LogLine, cls []lineClass, max int) []facts.LogLine {
	if len(lines) <= max {
		return lines
	}
	keep := make([]bool, len(lines))
	n := 0
	for i := range lines {
		if n >= max/2 {
			break
		}
		if cls[i].isErr {
			keep[i] = true
			n++
		}
	}
	for i := len(lines) - 1; i >= 0 && n < max; i-- {
		if !keep[i] {
			keep[i] = true
			n++
		}
	}
	out := make([]facts.LogLine, 0, max)
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// podCandidate is a pod a name or pattern resolved to.
type podCandidate struct {
	name string
	obj  *corev1.Pod // nil when Kubernetes does not know the pod
}

// maxPodCandidates bounds how many matching pods fetch_pod_logs tries,
// newest first, until one has lines (a replica set of six: the pods that
// logged may be the older ones).
const maxPodCandidates = 6

// resolvePods turns a pod name, glob (auth-*) or workload prefix into the
// matching pods, newest first. An exact name that exists is the only candidate.
func (s *Service) resolvePods(ctx context.Context, ns, pod string) ([]podCandidate, error) {
	if s.be.Kube == nil {
		if isPattern(pod) {
			return nil, fmt.Errorf("pod pattern %q needs the Kubernetes integration to resolve: %w", pod, backend.ErrNotConfigured)
		}
		return []podCandidate{{name: pod}}, nil
	}
	if !isPattern(pod) {
		p, err := s.be.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err == nil {
			return []podCandidate{{name: p.Name, obj: p}}, nil
		}
		if !apierrors.IsNotFound(err) {
			return []podCandidate{{name: pod}}, nil // logs may still be readable
		}
	}
	items, err := s.listPods(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	var cands []*corev1.Pod
	for i := range items {
		n := items[i].Name
		if (isPattern(pod) && nameMatches(pod, n)) || (!isPattern(pod) && strings.HasPrefix(n, pod+"-")) {
			cands = append(cands, &items[i])
		}
	}
	if len(cands) == 0 {
		if isPattern(pod) {
			return nil, nil
		}
		return []podCandidate{{name: pod}}, nil
	}
	sort.Slice(cands, func(i, j int) bool {
		ti, tj := podTime(cands[i]), podTime(cands[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return cands[i].Name > cands[j].Name
	})
	out := make([]podCandidate, 0, len(cands))
	for _, p := range cands {
		out = append(out, podCandidate{name: p.Name, obj: p})
	}
	return out, nil
}

func podTime(p *corev1.Pod) time.Time {
	if !p.CreationTimestamp.IsZero() {
		return p.CreationTimestamp.Time
	}
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return time.Time{}
}

type logFetch struct {
	container string
	previous  bool
	// fallback: read only when the previous container of the same
	// container gave nothing (it never restarted, or its log is gone):
	// an SRE asking for the crashed container reads the current one then.
	fallback bool
}

// podLogs reads the logs of one pod as the call asks; raw is the text to show.
func (s *Service) podLogs(ctx context.Context, c *Call, ns string, cand podCandidate) (lines []facts.LogLine, raw string, sources []string, err error) {
	tail := c.Params.Int("tail_lines", int64(s.cfg.DefaultTailLines))
	var since time.Time
	if c.Window.Origin == "params" {
		since = c.Window.Start
	}
	container := c.Params.String("container")
	containers := []string{container}
	if container == "" && cand.obj != nil && len(cand.obj.Spec.Containers) > 1 {
		containers = containers[:0]
		for _, ct := range cand.obj.Spec.Containers {
			containers = append(containers, ct.Name)
		}
	}
	if container == "" && cand.obj != nil {
		// A pod held in Init (an init container still running, waiting or
		// failed) has written nothing from its main containers yet: its
		// init container's log says what it waits for.
		for _, st := range cand.obj.Status.InitContainerStatuses {
			if st.State.Running != nil || st.State.Waiting != nil || (st.State.Terminated != nil && st.State.Terminated.ExitCode != 0) {
				containers = append([]string{st.Name}, containers...)
				break
			}
		}
	}
	prevSet := c.Params.Has("previous")
	prev, _ := c.Params.Bool("previous")
	var fetches []logFetch
	for _, ct := range containers {
		switch {
		case prevSet && prev:
			fetches = append(fetches, logFetch{container: ct, previous: true}, logFetch{container: ct, fallback: true})
		case prevSet:
			fetches = append(fetches, logFetch{container: ct})
		default:
			// Unset: the current container, plus the crashed one when it restarted.
			if restarted(cand.obj, ct) {
				fetches = append(fetches, logFetch{container: ct, previous: true})
			}
			fetches = append(fetches, logFetch{container: ct})
		}
	}
	var b strings.Builder
	read := map[string]bool{} // containers whose log gave text
	for _, f := range fetches {
		if f.fallback && read[f.container] {
			continue
		}
		pl, err := s.be.PodLogs.PodLogs(ctx, ns, cand.name, backend.PodLogOptions{Container: f.container, Previous: f.previous, TailLines: tail, Since: since})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
				s.log.Debug("pod logs unavailable", "pod", cand.name, "previous", f.previous, "err", err)
				continue
			}
			if (f.previous && (!prevSet || prev)) || f.fallback {
				continue // best effort: the automatic previous fetch, or a previous container with its fallback behind it
			}
			return nil, "", nil, fmt.Errorf("read logs of pod %s/%s: %w", ns, cand.name, err)
		}
		text := strings.TrimRight(pl.Text, "\n")
		if strings.TrimSpace(text) == "" {
			continue
		}
		read[f.container] = true
		src := first(pl.Source, s.be.Source(backend.AreaPodLogs))
		sources = append(sources, src)
		label := "current"
		switch {
		case f.previous:
			label = "previous (terminated)"
		case f.fallback:
			label = "current (no previous container log)"
		}
		b.WriteString("=== " + label + " container")
		if f.container != "" {
			b.WriteString(" " + f.container)
		}
		b.WriteString(" ===\n" + text + "\n")
		for _, rawLine := range strings.Split(text, "\n") {
			if strings.TrimSpace(rawLine) == "" {
				continue
			}
			ll := parseLogLine(rawLine)
			ll.Namespace, ll.Pod, ll.Container, ll.Previous, ll.Source = ns, cand.name, f.container, f.previous, src
			lines = append(lines, ll)
		}
	}
	return lines, b.String(), sources, nil
}

func handleFetchPodLogs(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := c.Params.String("namespace")
	asked := c.Params.String("pod")
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	cands, err := s.resolvePods(ctx, ns, asked)
	if err != nil {
		return err
	}
	movedFrom := ""
	if len(cands) == 0 && ns != "" && allNamespaces(ns) != "" && isPattern(asked) {
		// The scope named another namespace than the pods' (a payload of
		// several alerts, a namespace label of the monitoring side): the
		// pods the pattern names, wherever they are, when they are all in
		// one namespace.
		if all, err := s.resolvePods(ctx, "", asked); err == nil && len(all) > 0 && all[0].obj != nil {
			other := all[0].obj.Namespace
			same := true
			for _, c := range all {
				if c.obj == nil || c.obj.Namespace != other {
					same = false
				}
			}
			if same {
				movedFrom, ns, cands = ns, other, all
				r.Namespace = ns
			}
		}
	}
	if len(cands) == 0 {
		r.NoData = true
		r.Put(facts.KeyLogLines, []facts.LogLine{})
		r.Summary = fmt.Sprintf("No pod in namespace %s matches %s.", ns, asked)
		return nil
	}
	// The newest matching pod; when it has no logs yet, the next ones.
	var (
		lines   []facts.LogLine
		raw     string
		sources []string
		chosen  = cands[0]
		tried   []string
	)
	for _, cand := range cands[:min(len(cands), maxPodCandidates)] {
		l, rw, src, err := s.podLogs(ctx, c, ns, cand)
		if err != nil {
			return err
		}
		tried = append(tried, cand.name)
		if len(l) > 0 {
			lines, raw, sources, chosen = l, rw, src, cand
			break
		}
	}
	pod := chosen.name
	r.ResourceName = pod
	if pod != asked {
		r.Put(facts.KeyResolvedPod, pod)
		r.Source(s.be.Source(backend.AreaPods))
	}
	for _, src := range sources {
		r.Source(src)
	}
	if len(lines) == 0 {
		r.NoData = true
		r.Put(facts.KeyLogLines, []facts.LogLine{})
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("Pod %s/%s returned no log lines.", ns, pod)
		if len(tried) > 1 {
			r.Summary = fmt.Sprintf("No log lines from the %d newest pods matching %s in %s (%s).", len(tried), asked, ns, strings.Join(tried, ", "))
		}
		return nil
	}
	r.Raw.WriteString(raw)
	if len(tried) > 1 {
		r.Rawf("(newer matching pods without logs: %s)", strings.Join(tried[:len(tried)-1], ", "))
	}
	cls := classifyAll(lines)
	r.Put(facts.KeyLogLines, capLines(lines, cls, s.cfg.MaxLogLines))
	summarizeLogLines(r, lines, cls, fmt.Sprintf("pod %s/%s", ns, pod), s.cfg.MaxSnippets)
	if movedFrom != "" {
		r.Summary += fmt.Sprintf(" No pod in namespace %s matches %s; these are in namespace %s.", movedFrom, asked, ns)
	}
	return nil
}

func restarted(p *corev1.Pod, container string) bool {
	if p == nil {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if (container == "" || cs.Name == container) && (cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}

// summarizeLogLines sets severity, snippets and summary from log lines.
func summarizeLogLines(r *Result, lines []facts.LogLine, cls []lineClass, what string, maxSnippets int) {
	worst := -1
	errs, warns := 0, 0
	for i := range lines {
		c := cls[i]
		r.Escalate(c.sev)
		if c.sev == evidencev1.Severity_SEVERITY_MEDIUM {
			warns++
		}
		if c.isErr {
			errs++
		}
		if (c.isErr || c.sev == evidencev1.Severity_SEVERITY_MEDIUM) && len(r.Snippets) < maxSnippets {
			r.Snippet(logSnippet(lines[i]))
		}
		if worst < 0 || c.sev < cls[worst].sev {
			worst = i
		}
	}
	if r.Severity == evidencev1.Severity_SEVERITY_UNSPECIFIED {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
	}
	msg := strings.TrimSpace(lines[worst].Message)
	if len(msg) > 200 {
		msg = truncUTF8(msg, 197) + "..."
	}
	switch r.Severity {
	case evidencev1.Severity_SEVERITY_CRITICAL:
		r.Summary = fmt.Sprintf("Logs of %s show a fatal condition: %s", what, strings.TrimSuffix(msg, "."))
	case evidencev1.Severity_SEVERITY_HIGH:
		r.Summary = fmt.Sprintf("Logs of %s contain %s; worst: %s", what, plural(errs, "error line", "error lines"), strings.TrimSuffix(msg, "."))
	case evidencev1.Severity_SEVERITY_MEDIUM:
		r.Summary = fmt.Sprintf("Logs of %s contain %s and no errors; first: %s", what, plural(warns, "warning", "warnings"), strings.TrimSuffix(msg, "."))
	default:
		r.Summary = fmt.Sprintf("Logs of %s (%s) show no errors or warnings", what, plural(len(lines), "line", "lines"))
	}
	r.Summary += fmt.Sprintf(". %s read, %s, %s.", plural(len(lines), "line", "lines"), plural(errs, "error line", "error lines"), plural(warns, "warning", "warnings"))
}

func logSnippet(l facts.LogLine) string {
	var b strings.Builder
	if l.Timestamp != nil {
		b.WriteString(l.Timestamp.UTC().Format(time.RFC3339) + " ")
	}
	if l.Previous {
		b.WriteString("[previous] ")
	}
	if l.Service != "" {
		b.WriteString(l.Service + " ")
	} else if l.Pod != "" && l.Container == "" && l.Namespace == "" {
		b.WriteString(l.Pod + " ")
	}
	if l.Level != "" && !strings.Contains(l.Message, l.Level) {
		b.WriteString(l.Level + " ")
	}
	b.WriteString(strings.TrimSpace(l.Message))
	return b.String()
}

func handleSearchLogs(ctx context.Context, s *Service, c *Call, r *Result) error {
	query := c.Params.String("query")
	if query == "*" {
		query = ""
	}
	var levels []string
	switch lv := c.Params.String("level"); lv {
	case "":
	case "ERROR":
		levels = []string{"ERROR", "FATAL", "CRITICAL"}
	case "WARN":
		levels = []string{"WARN", "WARNING"}
	default:
		levels = []string{lv}
	}
	limit := int(c.Params.Int("limit", 100))
	if limit <= 0 {
		limit = 100
	}
	q := backend.LogQuery{
		Query: query, Namespace: allNamespaces(c.Params.String("namespace")), Service: c.Params.String("service"), Pod: c.Params.String("pod"),
		Levels: levels, Start: c.Window.Start, End: c.Window.End, Limit: limit,
	}
	hits, err := s.be.Logs.SearchLogs(ctx, q)
	if err != nil {
		return fmt.Errorf("search logs for %q: %w", query, err)
	}
	// A search that finds nothing widens step by step (logWidenings); the
	// first step with hits answers, and the filters it dropped are named.
	var dropped []string
	if exact, _ := c.Params.Bool("exact"); len(hits) == 0 && !exact {
		for _, w := range s.logWidenings(c, q) {
			wide, err := s.be.Logs.SearchLogs(ctx, w.q)
			if err != nil {
				return fmt.Errorf("search logs for %q widened without %s: %w", query, strings.Join(w.drop, " and "), err)
			}
			if len(wide) > 0 {
				hits, q, dropped = wide, w.q, w.drop
				break
			}
		}
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, evidencev1.Domain_DOMAIN_UNKNOWN
	r.Namespace, r.Service = q.Namespace, q.Service
	r.Put(facts.KeyQuery, q.Query)
	if idx := c.Params.String("index"); idx != "" {
		r.Put("index", idx)
	}
	desc := fmt.Sprintf("%q", q.Query)
	if q.Query == "" {
		desc = "all logs"
	}
	if q.Service != "" {
		desc += " in service " + q.Service
	}
	if q.Namespace != "" {
		desc += " in namespace " + q.Namespace
	}
	if q.Pod != "" {
		desc += " of pod " + q.Pod
	}
	if len(dropped) > 0 {
		r.Put("filters_dropped", dropped)
		desc += " (no hit carried " + strings.Join(dropped, " and ") + "; searched without that filter)"
	}
	if len(hits) == 0 {
		r.NoData = true
		r.Put(facts.KeyLogLines, []facts.LogLine{})
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("Log search %s found no hits between %s and %s.", desc, q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339))
		return nil
	}
	for i := range hits {
		if hits[i].Level != "" {
			hits[i].Level = first(normLevel(hits[i].Level), hits[i].Level)
		} else {
			hits[i].Level = textLevel(hits[i].Message)
		}
		r.Source(first(hits[i].Source, s.be.Source(backend.AreaLogs)))
		r.Rawf("%s %-5s %s %s %s", fmtTime(hits[i].Timestamp), hits[i].Level, first(hits[i].Service, hits[i].Pod, "-"), hits[i].Pod, hits[i].Message)
	}
	cls := classifyAll(hits)
	r.Put(facts.KeyLogLines, capLines(hits, cls, s.cfg.MaxLogLines))
	// Top 20 hits as snippets, errors first.
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return cls[order[i]].sev < cls[order[j]].sev })
	for _, i := range order[:min(20, len(order))] {
		r.Snippet(logSnippet(hits[i]))
	}
	services := map[string]int{}
	errs := 0
	for i, h := range hits {
		r.Escalate(cls[i].sev)
		if cls[i].sev <= evidencev1.Severity_SEVERITY_HIGH {
			errs++
		}
		if h.Service != "" {
			services[h.Service]++
		}
	}
	var svcs []string
	for k := range services {
		svcs = append(svcs, k)
	}
	sort.Slice(svcs, func(i, j int) bool {
		return services[svcs[i]] > services[svcs[j]] || services[svcs[i]] == services[svcs[j]] && svcs[i] < svcs[j]
	})
	r.Summary = fmt.Sprintf("Log search %s found %s (%s)", desc, plural(len(hits), "hit", "hits"), plural(errs, "error", "errors"))
	if len(svcs) > 0 {
		r.Summary += " from " + strings.Join(svcs[:min(5, len(svcs))], ", ")
	}
	r.Summary += "."
	if top := order[0]; cls[top].sev <= evidencev1.Severity_SEVERITY_HIGH {
		r.Summary += " Worst: " + logSnippet(hits[top])
	}
	return nil
}

// structuredFields renders the other scalar fields of a JSON log line as
// " key=value ...", sorted: a structured logger puts the facts (status
// code, upstream, key names, ids) in fields, not in the message, and
// evidence must not drop them. Time, level, message and caller fields are
// skipped; long values are cut; the whole is bounded.
func structuredFields(obj map[string]any) string {
	skip := map[string]bool{"level": true, "lvl": true, "severity": true, "log.level": true, "levelname": true, "log_level": true, "loglevel": true,
		"severity_text": true, "@l": true, "@t": true, "s": true, "t": true, "ts": true, "time": true,
		"timestamp": true, "@timestamp": true, "msg": true, "message": true, "error": true, "caller": true, "logger": true,
		"thread": true, "stacktrace": true, "stack": true, "@version": true}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if !skip[strings.ToLower(k)] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		var v string
		switch x := obj[k].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			v = strconv.FormatBool(x)
		default:
			continue
		}
		if len(v) > 200 {
			v = textutil.Truncate(v, 200)
		}
		if strings.ContainsAny(v, " \t") {
			v = strconv.Quote(v)
		}
		if b.Len()+len(k)+len(v) > 600 {
			break
		}
		b.WriteString(" " + k + "=" + v)
	}
	return b.String()
}

// logWidening is one step a log search that found nothing widens by: the
// filters it drops (named in the result's summary) and the query it runs.
type logWidening struct {
	drop []string
	q    backend.LogQuery
}

// logWidenings are the steps, in order, for search q that found nothing.
//
// With a workload: many log pipelines do not tag every line with its
// Kubernetes namespace (Datadog and Loki often carry only service and
// host), so the namespace filter goes first, keeping the service and pod;
// likewise a pod filter (many stores name the pod only as a host tag); then
// the whole namespace, for lines other workloads logged about this one (a
// rotation job, a sidecar, an operator); last, lines anywhere that name the
// workload over the change look-back: much of what explains an incident is
// logged outside its namespace or outside Kubernetes (an audit trail, a
// kernel, a change calendar, a chaos runner), and what was announced or
// done to the workload often precedes the incident window by hours.
//
// Without a workload (a namespace, the whole cluster), a search term that
// matched nothing gives way to the scope's errors and warnings, which say
// what failed in words the alert did not use.
func (s *Service) logWidenings(c *Call, q backend.LogQuery) []logWidening {
	var out []logWidening
	if q.Service == "" && q.Pod == "" {
		if q.Query != "" && len(q.Levels) == 0 {
			wq := q
			wq.Query, wq.Levels = "", []string{"ERROR", "FATAL", "CRITICAL", "WARN", "WARNING"}
			out = append(out, logWidening{[]string{fmt.Sprintf("query %q (the scope's errors and warnings instead)", q.Query)}, wq})
		}
		return out
	}
	if q.Namespace != "" {
		wq := q
		wq.Namespace = ""
		out = append(out, logWidening{[]string{"namespace " + q.Namespace}, wq})
	}
	if q.Pod != "" && q.Service != "" {
		wq := q
		wq.Namespace, wq.Pod = "", ""
		drop := []string{"pod " + q.Pod}
		if q.Namespace != "" {
			drop = []string{"namespace " + q.Namespace, "pod " + q.Pod}
		}
		out = append(out, logWidening{drop, wq})
	}
	if q.Service == "" {
		return out
	}
	if q.Namespace != "" {
		wq := q
		wq.Service, wq.Pod = "", ""
		drop := []string{"service " + q.Service}
		if q.Pod != "" {
			drop = append(drop, "pod "+q.Pod)
		}
		out = append(out, logWidening{drop, wq})
	}
	wq := q
	wq.Namespace, wq.Service, wq.Pod = "", "", ""
	wq.Query = `"` + strings.ReplaceAll(q.Service, `"`, ``) + `"`
	wq.Start, _ = s.changeWindow(c)
	drop := []string{"service " + q.Service + " (lines that name it, in any namespace, since " + wq.Start.UTC().Format(time.RFC3339) + ")"}
	if q.Namespace != "" {
		drop = append([]string{"namespace " + q.Namespace}, drop...)
	}
	out = append(out, logWidening{drop, wq})
	// Last, the words of its name: an announcement or a change record
	// writes "pledge traffic" for pledge-intake.
	if words := textutil.NameWords(q.Service); len(words) > 1 {
		ww := wq
		qs := make([]string, len(words))
		for i, w := range words {
			qs[i] = `"` + w + `"`
		}
		ww.Query = strings.Join(qs, " OR ")
		wdrop := append(append([]string(nil), drop[:len(drop)-1]...), "service "+q.Service+" (lines that name a word of its name, "+strings.Join(words, " or ")+", in any namespace, since "+wq.Start.UTC().Format(time.RFC3339)+")")
		out = append(out, logWidening{wdrop, ww})
	}
	return out
}

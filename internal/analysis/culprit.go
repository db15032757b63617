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

// The culprit's configuration: when the conclusion names an object, the
// report quotes how that object is configured, as `kubectl describe` shows
// it to the SRE who reads the report: the settings of its containers, the
// lines of its spec and annotations, its conditions, and those of the
// objects that share its name or act on it (its autoscaler, a route or a
// certificate of the same name, the CronJob that owns a Job). Observations,
// each quoted verbatim with its pins, whatever the failure mode: the reader
// sees the value that failed without opening the cluster. Bounded per
// object and in all.
const (
	culpritObjects       = 3  // objects quoted besides the culprit's containers
	culpritLinesPerObj   = 16 // spec lines, conditions and notes per object
	culpritContainerSets = 12 // settings per container
	culpritLineLen       = 160
)

// culpritConfig returns the claims quoting the configuration of entity
// ("kind/ns/name" or "kind/name"); known is the text already said (lower
// case), whose lines are not repeated.
func (ev *Evidence) culpritConfig(entity, known string) []settingRef {
	parts := strings.Split(entity, "/")
	if ev == nil || len(parts) < 2 {
		return nil
	}
	kind := strings.ToLower(parts[0])
	ns, name := splitEntity(entity)
	if name == "" || kind == "commit" || kind == "db" || kind == "host" || kind == "environment" {
		return nil
	}
	said := func(line string) bool {
		l := strings.ToLower(strings.TrimSpace(line))
		return l == "" || strings.Contains(known, l)
	}
	var out []settingRef
	// The containers of the culprit workload (its pods, one per workload).
	seenWL := map[string]bool{}
	for _, p := range ev.Pods {
		if ns != "" && p.Namespace != "" && p.Namespace != ns {
			continue
		}
		wl := firstNonEmptyStr(p.Workload, p.Name)
		if wl != name && p.Name != name {
			continue
		}
		for _, c := range p.Containers {
			key := wl + "|" + c.Name
			if seenWL[key] {
				continue
			}
			seenWL[key] = true
			var lines []string
			if c.Image != "" && !said(c.Image) {
				lines = append(lines, "image "+c.Image)
			}
			for _, st := range c.Settings {
				if len(lines) >= culpritContainerSets {
					break
				}
				if !said(st) {
					lines = append(lines, clip(st, culpritLineLen))
				}
			}
			if len(lines) == 0 {
				continue
			}
			out = append(out, settingRef{fmt.Sprintf("Configuration of %s, container %s: %s", strings.Trim(p.Namespace+"/"+wl, "/"), c.Name, quote(strings.Join(lines, "; "))), p.Cite})
		}
	}
	// The culprit's own object, and the objects that share its name or act
	// on it: its autoscalers (attached to its Deployment), same-named
	// objects of other kinds, the owner of a Job.
	type obj struct {
		label string
		lines []string
		cite  Cite
	}
	var objs []obj
	add := func(label string, lines []string, c Cite) {
		var keep []string
		for _, l := range lines {
			if len(keep) >= culpritLinesPerObj {
				break
			}
			if !said(l) {
				keep = append(keep, clip(l, culpritLineLen))
			}
		}
		if len(keep) > 0 {
			objs = append(objs, obj{label, keep, c})
		}
	}
	for _, d := range ev.Deployments {
		if d.Name != name || (ns != "" && d.Namespace != "" && d.Namespace != ns) {
			continue
		}
		add("Deployment "+strings.Trim(d.Namespace+"/"+d.Name, "/"), append(append([]string(nil), d.Notes...), conditionLines(d.Conditions, true)...), d.Cite)
		for _, a := range d.Autoscalers {
			add("HorizontalPodAutoscaler "+strings.Trim(a.Namespace+"/"+a.Name, "/")+" of "+d.Name, objectLines(a), d.Cite)
		}
		break
	}
	owner := ""
	if kind == "job" {
		if i := strings.LastIndex(name, "-"); i > 0 {
			owner = name[:i] // a CronJob's run is named <cronjob>-<schedule time>
		}
	}
	for _, r := range ev.Resources {
		if r.Listed || (ns != "" && r.Namespace != "" && r.Namespace != ns) {
			continue
		}
		if r.Name != name && (owner == "" || r.Name != owner) {
			continue
		}
		add(r.Kind+" "+strings.Trim(r.Namespace+"/"+r.Name, "/"), objectLines(r.Resource), r.Cite)
	}
	seen := map[string]bool{}
	n := 0
	for _, o := range objs {
		if n >= culpritObjects || seen[o.label] {
			continue
		}
		seen[o.label] = true
		out = append(out, settingRef{fmt.Sprintf("Configuration of %s: %s", o.label, quote(strings.Join(o.lines, "; "))), o.cite})
		n++
	}
	return out
}

// objectLines are what describe found of an object, in the order an SRE
// reads them: its findings, its conditions (those of a rollout only when
// not met), its configured spec, the settings its data holds.
func objectLines(r facts.Resource) []string {
	var lines []string
	for _, l := range append(append([]string(nil), r.Signals...), conditionLines(r.Conditions, rolloutKind(r.Kind))...) {
		if !defaultField(l) {
			lines = append(lines, l)
		}
	}
	for _, l := range r.Spec {
		if !defaultField(l) {
			lines = append(lines, l)
		}
	}
	return append(lines, dataLines(Resource{Resource: r})...)
}

// reDefaultField: a flattened field every object of its kind carries with
// the API server's default (where a container writes its termination
// message, which scheduler places it, its restart bookkeeping) or a
// timestamp of its run: true of every object, it says nothing of this one.
var reDefaultField = regexp.MustCompile(`^(?:spec|status)\.[\w.\[\]]*?(?:terminationMessagePath|terminationMessagePolicy|schedulerName|imagePullPolicy|dnsPolicy|terminationGracePeriodSeconds|revisionHistoryLimit|progressDeadlineSeconds|securityContext|containers\[\d+\]\.name|startTime|completionTime|lastScheduleTime|lastSuccessfulTime|observedGeneration|uid|resourceVersion)(?:[.=\[]|$)`)

func defaultField(l string) bool { return reDefaultField.MatchString(l) }

// rolloutKind: a kind whose conditions say only whether its rollout went
// well (met conditions are noise).
func rolloutKind(kind string) bool {
	switch strings.ToLower(kind) {
	case "deployment", "replicaset", "statefulset", "daemonset", "pod":
		return true
	}
	return false
}

// conditionLines renders conditions as "Type=Status (Reason): message";
// onlyAbnormal keeps those a Deployment reports as not met.
func conditionLines(conds []facts.Condition, onlyAbnormal bool) []string {
	var out []string
	for _, c := range conds {
		if onlyAbnormal && strings.EqualFold(c.Status, "True") {
			continue
		}
		l := c.Type + "=" + c.Status
		if c.Reason != "" {
			l += " (" + c.Reason + ")"
		}
		if m := strings.TrimSpace(c.Message); m != "" {
			l += ": " + m
		}
		out = append(out, l)
	}
	return out
}

// Culprit is the object the reading blames: the leading hypothesis's
// entity, else the entity the fallback summary names; "" when none.
func (r Result) Culprit() string {
	if len(r.Hypotheses) > 0 {
		return r.Hypotheses[0].GetEntity()
	}
	if r.ev == nil {
		return ""
	}
	if f, ok := fallback(r.ev, r); ok {
		return f.Entity
	}
	return ""
}

// maxCulpritDiffs bounds the commit diffs read for one reading.
const maxCulpritDiffs = 2

// CulpritCommits are the commits whose diff is still to be read because
// the reading blames them: those its lead names by short SHA (or as its
// entity), else the latest commit of the blamed object's service within
// changeLookback before the alert. Only commits whose history says a diff
// exists and none was read yet; at most maxCulpritDiffs.
func (r Result) CulpritCommits() []string {
	ev := r.ev
	if ev == nil || len(ev.Commits) == 0 {
		return nil
	}
	var text string
	if len(r.Hypotheses) > 0 {
		h := r.Hypotheses[0]
		text = strings.ToLower(h.GetStatement() + "\n" + h.GetEntity() + "\n" + strings.Join(h.GetCausalChain(), "\n"))
	}
	if f, ok := fallback(ev, r); ok {
		// No reading leads: the commits the summary of abnormal signals
		// quotes (what the nearest change shipped) are the ones it blames.
		parts := []string{text, f.Statement}
		for _, c := range f.Validated {
			parts = append(parts, c.Text)
		}
		text = strings.ToLower(strings.Join(parts, "\n"))
	}
	ent := r.Culprit()
	_, name := splitEntity(ent)
	at := ev.alertTime()
	if at == nil && !ev.windowEnd.IsZero() {
		at = &ev.windowEnd
	}
	unread := func(c *Commit) bool {
		return !c.Removed && c.HasDiff && strings.TrimSpace(c.Diff) == "" && len(c.SHA) >= 7
	}
	var named []string
	for i := range ev.Commits {
		if c := &ev.Commits[i]; unread(c) && text != "" && strings.Contains(text, strings.ToLower(short(c.SHA))) {
			named = append(named, c.SHA)
		}
	}
	notNamed := func(c *Commit) bool { return unread(c) && !slices.Contains(named, c.SHA) }
	latest := ev.latestCommitBefore(at, func(c *Commit) bool { return notNamed(c) && name != "" && strings.EqualFold(c.Service, name) })
	latestAny := ev.latestCommitBefore(at, notNamed)
	if len(named) == 0 && latest != nil {
		named = append(named, latest.SHA)
	}
	if len(named) == 0 && latestAny != nil && !ev.diffRead() {
		// The commit the report quotes as the latest change before the
		// alert (suspectCommits), whichever service it belongs to.
		named = append(named, latestAny.SHA)
	}
	return named[:min(len(named), maxCulpritDiffs)]
}

// culpritLogLines bounds the lines quoted of the culprit's own log;
// culpritContext is how near a line of another system must be to its line
// that names the culprit to be read as the same story.
const (
	culpritLogLines = 4
	culpritContext  = 10 * time.Minute
)

// culpritLogs quotes what the culprit's own log says beside the failures
// already quoted: the lines of its pods (a workload, a job), of its host
// (a node), or, for an object that writes no log (a Secret, a route, a
// policy), the lines of the systems that name it and the lines those
// systems wrote around them (the job that built it). Errors and warnings
// first, then the rest in time order; one line per template, debug left
// out; a line already said is not repeated.
func (ev *Evidence) culpritLogs(entity, known string) []settingRef {
	parts := strings.Split(entity, "/")
	if ev == nil || len(parts) < 2 {
		return nil
	}
	kind := strings.ToLower(parts[0])
	ns, name := splitEntity(entity)
	if len(name) < 4 || kind == "commit" || kind == "environment" {
		return nil
	}
	lname := strings.ToLower(name)
	own := func(l LogLine) bool {
		switch kind {
		case "node", "host":
			return strings.EqualFold(l.Host, name) || strings.Contains(strings.ToLower(l.Pod), lname) || strings.EqualFold(l.Service, name)
		case "deployment", "statefulset", "daemonset", "replicaset", "job", "cronjob", "pod", "service":
			if ns != "" && l.Namespace != "" && !strings.EqualFold(l.Namespace, ns) {
				return false
			}
			return l.Pod == name || strings.HasPrefix(l.Pod, name+"-") || strings.EqualFold(l.Service, name)
		}
		return false
	}
	var lines []LogLine
	var naming []LogLine
	for _, l := range ev.Logs {
		switch {
		case own(l):
			lines = append(lines, l)
		case len(lname) >= 6 && strings.Contains(strings.ToLower(l.Message), lname):
			naming = append(naming, l)
		}
	}
	if len(lines) > 0 {
		// What others wrote about it (a ticket, a change record) beside
		// its own lines.
		lines = append(lines, naming...)
	} else if len(naming) > 0 {
		// What names the culprit, and what the same writers logged around
		// it.
		in := map[*LogLine]bool{}
		for i := range ev.Logs {
			l := &ev.Logs[i]
			if l.Timestamp == nil {
				continue
			}
			for _, n := range naming {
				if n.Timestamp != nil && logOrigin(n) != "" && logOrigin(*l) == logOrigin(n) && l.Timestamp.Sub(*n.Timestamp).Abs() <= culpritContext {
					in[l] = true
					break
				}
			}
		}
		for i := range ev.Logs {
			if in[&ev.Logs[i]] {
				lines = append(lines, ev.Logs[i])
			}
		}
		if len(lines) == 0 {
			lines = naming
		}
	}
	if len(lines) == 0 {
		return nil
	}
	type pick struct {
		t   template
		bad bool
		at  time.Time
	}
	var picks []pick
	for _, t := range templates(lines) {
		rep := t.lines[0]
		lvl := logLevel(rep.LogLine)
		if lvl == "DEBUG" || lvl == "TRACE" {
			continue
		}
		m := strings.ToLower(clip(rep.Message, 60))
		if m == "" || strings.Contains(known, strings.TrimSuffix(m, "...")) {
			continue
		}
		var at time.Time
		if rep.Timestamp != nil {
			at = *rep.Timestamp
		}
		picks = append(picks, pick{t, isErrorLog(rep.LogLine) || lvl == "WARN", at})
	}
	sort.SliceStable(picks, func(i, j int) bool {
		if picks[i].bad != picks[j].bad {
			return picks[i].bad
		}
		return picks[i].at.Before(picks[j].at)
	})
	var out []settingRef
	for _, p := range picks[:min(len(picks), culpritLogLines)] {
		rep := p.t.lines[0]
		when := ""
		if rep.Timestamp != nil {
			when = ", " + hhmm(rep.Timestamp)
		}
		n := ""
		if len(p.t.lines) > 1 {
			n = fmt.Sprintf(" x%d", len(p.t.lines))
		}
		out = append(out, settingRef{fmt.Sprintf("Log of %s (%s%s%s): %s", strings.Trim(parts[0]+" "+name, " "), firstNonEmptyStr(logOrigin(rep), rep.Host, "log"), n, when, quote(clip(rep.Message, 300))), citesOfLogs(p.t.lines)})
	}
	return out
}

// LogWriter is a writer of log lines (a service, a pod) and how far back
// from the end of the incident window its line was written, in minutes.
type LogWriter struct {
	Namespace, Service, Pod string
	SinceMinutes            int
}

// maxCulpritWriters bounds the writers whose logs are read for a culprit.
const maxCulpritWriters = 2

// CulpritWriters: when the reading blames an object that writes no log of
// its own (a Secret, a route, a policy), the other systems whose lines
// name it (the job that built it, the controller that applied it): their
// full log around that line is the story of how it came to be, whatever
// words it uses. At most maxCulpritWriters, in the order their lines were
// read.
func (r Result) CulpritWriters() []LogWriter {
	ev := r.ev
	ent := r.Culprit()
	parts := strings.Split(ent, "/")
	if ev == nil || len(parts) < 2 {
		return nil
	}
	switch strings.ToLower(parts[0]) {
	case "deployment", "statefulset", "daemonset", "replicaset", "job", "cronjob", "pod", "service", "node", "host", "commit", "environment":
		return nil
	}
	_, name := splitEntity(ent)
	lname := strings.ToLower(name)
	if len(lname) < 6 {
		return nil
	}
	end := ev.windowEnd
	if at := ev.alertTime(); at != nil && at.After(end) {
		end = *at
	}
	seen := map[string]bool{}
	var out []LogWriter
	for _, l := range ev.Logs {
		if len(out) >= maxCulpritWriters {
			break
		}
		if l.Service == "" && l.Pod == "" || !strings.Contains(strings.ToLower(l.Message), lname) {
			continue
		}
		k := l.Namespace + "/" + l.Service + "/" + l.Pod
		if seen[k] {
			continue
		}
		seen[k] = true
		since := 0
		if l.Timestamp != nil && !end.IsZero() {
			since = int(end.Sub(*l.Timestamp).Minutes()) + int(culpritContext.Minutes())
		}
		out = append(out, LogWriter{Namespace: l.Namespace, Service: l.Service, Pod: l.Pod, SinceMinutes: since})
	}
	return out
}

// maxTargetLogs bounds the target names whose lines targetLogs quotes.
const maxTargetLogs = 2

// targetLogs: a reading that names no object (no fault found, health of
// no entity) quotes what was written by and about the alert's target (a
// host, a service): its own lines and the records that name it (a ticket
// on the threshold, a batch's completion).
func (ev *Evidence) targetLogs(known string) []settingRef {
	var out []settingRef
	for i, n := range ev.targetNames() {
		if i >= maxTargetLogs {
			break
		}
		for _, r := range ev.culpritLogs("host/"+n, known) {
			out = append(out, r)
			known += strings.ToLower(r.text) + "\n"
		}
	}
	return out
}

// latestCommitBefore is the latest commit keep accepts made within
// changeLookback before at (the first of equals in the history's order);
// nil without at or without one.
func (ev *Evidence) latestCommitBefore(at *time.Time, keep func(*Commit) bool) *Commit {
	return ev.latestCommitWithin(at, changeLookback, keep)
}

// latestCommitWithin is the latest commit kept by keep at most within
// before at (nil when at is).
func (ev *Evidence) latestCommitWithin(at *time.Time, within time.Duration, keep func(*Commit) bool) *Commit {
	var latest *Commit
	for i := range ev.Commits {
		c := &ev.Commits[i]
		if at == nil || c.Timestamp == nil || c.Timestamp.After(*at) || at.Sub(*c.Timestamp) > within || !keep(c) {
			continue
		}
		if latest == nil || c.Timestamp.After(*latest.Timestamp) {
			latest = c
		}
	}
	return latest
}

// diffRead: some commit's diff is in the evidence already.
func (ev *Evidence) diffRead() bool {
	for _, c := range ev.Commits {
		if strings.TrimSpace(c.Diff) != "" {
			return true
		}
	}
	return false
}

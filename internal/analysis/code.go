package analysis

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// ModeCodeException: a service throws runtime exceptions (panics, null
// dereferences, index errors, missing keys) on requests it used to serve.
const ModeCodeException = "code_exception"

// exceptionRe matches runtime errors that come from the application's own
// code, in the usual spellings of Go, Java, Python, JavaScript and .NET.
var exceptionRe = regexp.MustCompile(`(?i)(panic|nil pointer|null ?pointer|nullreferenceexception|segmentation fault|sigsegv|index out of (range|bounds)|indexerror|keyerror|typeerror|attributeerror|valueerror|zerodivisionerror|arithmeticexception|classcastexception|illegalstateexception|illegalargumentexception|unsupportedoperationexception|is not a function|cannot read propert|undefined is not|unhandled exception|uncaught|traceback \(most recent|assertion failed|stack overflow|invalid memory address)`)

// reStackFrame: a frame of a runtime's stack trace, written the way Java
// and Kotlin (`at pkg.Class.method(File.java:41)`), .NET (`in File.cs:line
// 27`), Python (`File "x.py", line 3`), Go (`x.go:88 +0x1d`, `goroutine 7
// [running]`), Node (`at fn (file.js:10:5)`) and Ruby (`x.rb:12:in`) print it.
var reStackFrame = regexp.MustCompile(`(?m)(?:^|\n)\s*at [\w.$<>\x60\[\]]+\([\w$]+\.(?:java|kt|scala|groovy):\d+\)|\bin [\w./\\-]+\.cs:line \d+|File "[^"\n]+", line \d+|\.go:\d+ \+0x[0-9a-f]+|goroutine \d+ \[[a-z ]+\]|\bat [^\n()]*\([^\n()]+\.(?:js|mjs|cjs|ts):\d+:\d+\)|\.rb:\d+:in \x60`)

// reExceptionClass: a runtime's exception class named as it throws it,
// qualified by its package (`java.time.DateTimeException`,
// `System.OverflowException`) or followed by its message
// (`DateTimeParseException: Text ...`).
var reExceptionClass = regexp.MustCompile(`\b(?:[A-Za-z_]\w*\.)+[A-Z]\w*(?:Exception|Error)\b|\b[A-Z]\w*(?:Exception|Error): `)

// runtimeException: the line is a runtime exception of the service's own
// code: one of exceptionRe's spellings, or the shape every runtime gives
// one (a stack frame, an exception class as thrown) whose words the
// cause-to-effect table reads as code or bad input, or that no row reads
// but carries a stack trace (a pool timeout thrown as
// SQLTransientConnectionException is the pool's, a refused connection the
// dependency's).
func runtimeException(msg string) bool {
	if exceptionRe.MatchString(msg) {
		return true
	}
	frame := reStackFrame.MatchString(msg)
	if !frame && !reExceptionClass.MatchString(msg) {
		return false
	}
	// The mechanism is in the exception's message, not in its class's
	// name (the code row reads any "exception") nor in its frames: the
	// first line, and the last one when frames come before it (Python).
	head := exceptionMessage(msg)
	if depSymptom.MatchString(head) || reConnectionLost.MatchString(head) {
		return false // a timeout, a refused or reset connection, a 503
	}
	fam, ok := familyOf(head)
	if !ok {
		// An exception class alone names no mechanism a row reads
		// ("CommunicationsException: link failure" is a connection's): a
		// stack trace printed with it is the program's own failure.
		return frame
	}
	return fam.cat == catCode || fam.cat == catData
}

// reConnectionLost: a connection refused, reset, closed or lost, in the
// words between ("Connection to db:5432 refused").
var reConnectionLost = regexp.MustCompile(`(?i)\bconnect(?:ion)?\b[^\n]{0,60}\b(?:refused|reset|closed|lost|failed)\b`)

// exceptionMessage is an exception's message without its class names and
// stack frames: its first line, and its last when that is not a frame.
func exceptionMessage(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	head := lines[0]
	if last := strings.TrimSpace(lines[len(lines)-1]); len(lines) > 1 && !reStackFrame.MatchString("\n"+lines[len(lines)-1]) && !strings.HasPrefix(last, "at ") {
		head += " " + last
	}
	return reExceptionClass.ReplaceAllString(head, " ")
}

// codeDeployWindow: a deploy finished at most this long before the first
// exception is its suspect.
const codeDeployWindow = 45 * time.Minute

// exceptionSig folds an error line into a signature: digits, quoted values
// and hex ids vary between occurrences of the same bug.
var sigNoise = regexp.MustCompile(`0x[0-9a-f]+|\b[0-9a-f]{8,}\b|\d+(\.\d+)?(ms|s)?\b|"[^"]{0,40}"`)

func exceptionSig(msg string) string { return sigNoise.ReplaceAllString(strings.ToLower(msg), "#") }

// logService names the workload a log line comes from.
func (ev *Evidence) logService(l LogLine) string {
	if l.Service != "" {
		return l.Service
	}
	for _, p := range ev.Pods {
		if p.Name == l.Pod {
			return ev.workloadOf(p.Pod)
		}
	}
	if l.Pod != "" {
		// <workload>-<replicaset hash>-<pod hash>
		parts := strings.Split(l.Pod, "-")
		if len(parts) > 2 {
			return strings.Join(parts[:len(parts)-2], "-")
		}
	}
	return ""
}

// representative picks up to n distinct error signatures, most frequent
// first; among equally frequent ones the most detailed message wins.
func representative(lines []LogLine, n int) []LogLine {
	type grp struct {
		count int
		best  LogLine
	}
	groups := map[string]*grp{}
	var order []string
	for _, l := range lines {
		k := exceptionSig(l.Message)
		g := groups[k]
		if g == nil {
			g = &grp{best: l}
			groups[k] = g
			order = append(order, k)
		}
		g.count++
		if len(l.Message) > len(g.best.Message) {
			g.best = l
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := groups[order[i]], groups[order[j]]
		// A detailed message (file, line, key) tells more than a bare
		// "panic recovered" repeated by a terse logger.
		wa, wb := a.count*(1+min(len(a.best.Message), 200)/40), b.count*(1+min(len(b.best.Message), 200)/40)
		return wa > wb
	})
	var out []LogLine
	for _, k := range order {
		if len(out) >= n {
			break
		}
		out = append(out, groups[k].best)
	}
	return out
}

func detectCodeException(ev *Evidence) []Finding {
	bySvc := map[string][]LogLine{}
	var svcs []string
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) || !runtimeException(l.Message) {
			continue
		}
		if dnsNXRe.MatchString(l.Message) || dnsServerRe.MatchString(l.Message) || depLogRe.MatchString(l.Message) {
			continue
		}
		svc := ev.logService(l)
		if _, ok := bySvc[svc]; !ok {
			svcs = append(svcs, svc)
		}
		bySvc[svc] = append(bySvc[svc], l)
	}
	var out []Finding
	for _, svc := range svcs {
		lines := bySvc[svc]
		if len(lines) < 3 && !ev.firstFailureNamed(svc, lines) {
			continue
		}
		first, last := lines[0], lines[len(lines)-1]
		for _, l := range lines {
			if l.Timestamp != nil {
				first = l // lines are in time order; untimed (raw) lines sort first
				break
			}
		}
		reps := representative(lines, 2)
		ns := first.Namespace
		if ns == "" {
			ns = ev.alertField("namespace", "kube_namespace")
		}
		f := Finding{Mode: ModeCodeException, Category: catCode, Score: 0.6, Entity: deploymentEntity(ns, svc)}
		var pods []string
		for _, l := range lines {
			pods = appendUnique(pods, l.Pod)
		}
		f.Statement = fmt.Sprintf("%s throws runtime exceptions in its own code: %s between %s and %s from %s (e.g. %s)",
			svc, plural(len(lines), "error", "errors"), hhmm(first.Timestamp), hhmm(last.Timestamp), plural(len(pods), "pod", "pods"), quote(reps[0].Message))
		for _, l := range reps {
			f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), quote(l.Message)), citesOfLogs(sameSig(lines, l)))
		}
		// The deploy that shipped it.
		var culprit *Deploy
		var rollback *Deploy
		for i := range ev.Deploys {
			d := &ev.Deploys[i]
			if d.Service != "" && d.Service != svc {
				continue
			}
			t := d.FinishedAt
			if t == nil {
				t = d.StartedAt
			}
			if t == nil || first.Timestamp == nil {
				continue
			}
			gap := first.Timestamp.Sub(*t)
			if d.StartedAt != nil {
				gap = first.Timestamp.Sub(*d.StartedAt)
			}
			if gap >= -time.Minute && gap <= codeDeployWindow && !d.IsRollback {
				culprit = d
			}
		}
		if culprit != nil {
			for i := range ev.Deploys {
				d := &ev.Deploys[i]
				if d == culprit || (d.Service != "" && d.Service != svc) || d.StartedAt == nil || culprit.StartedAt == nil || !d.StartedAt.After(*culprit.StartedAt) {
					continue
				}
				if d.IsRollback || (culprit.PreviousRevision != "" && d.Revision == culprit.PreviousRevision) {
					rollback = d
				}
			}
		}
		if culprit == nil {
			if cm, why := frameCommit(ev.Commits, svc, first.Timestamp, messagesOf(lines)); cm != nil {
				// No release precedes it, but the stack names a file one
				// of the service's commits changed: the code that throws
				// was written there, whatever the input that reaches it.
				f.Score = 0.75
				f.Entity = "commit/" + short(cm.SHA)
				f.validated(fmt.Sprintf("Commit %s of %s (%s, %s): %s", short(cm.SHA), svc, cm.Author, hhmm(cm.Timestamp), clip(firstNonEmptyStr(cm.Summary, cm.Message), 220)), cm.Cite)
				if d := diffLines(cm.Diff, maxDiffLines); d != "" {
					f.validated(fmt.Sprintf("Commit %s changed: %s", short(cm.SHA), d), cm.Cite)
				}
				f.inferred(fmt.Sprintf("The exception's stack runs through the code commit %s changed: %s; no deploy of %s precedes the first exception within %s, so the defect is latent and the input or the date that reaches it is new", short(cm.SHA), why, svc, durHuman(codeDeployWindow)), cm.Cite)
				f.Statement = fmt.Sprintf("A latent defect of %s, in code commit %s changed, fails at runtime: %s between %s and %s from %s (e.g. %s)",
					svc, short(cm.SHA), plural(len(lines), "error", "errors"), hhmm(first.Timestamp), hhmm(last.Timestamp), plural(len(pods), "pod", "pods"), quote(reps[0].Message))
				f.Chain = []string{fmt.Sprintf("Commit %s changes code of %s", short(cm.SHA), svc), "An input or a date reaches the changed code path", "The service throws and answers with errors"}
				f.Remediation = []string{fmt.Sprintf("Fix the code commit %s changed and add a test for the failing input (%s)", short(cm.SHA), clip(reps[0].Message, 80))}
				f.Signals = []string{"exception", "latent", short(cm.SHA)}
				f.explains(ModeDeployRegression, "the error metrics rise because of the same code path's runtime errors")
				out = append(out, f)
				continue
			}
			if fam, ok := familyOf(reps[0].Message); ok && fam.cat == catData && !computedDate(reps[0].Message) && !calendarTriggered(reps[0].Message, first.Timestamp) {
				// No release precedes it and the exception's own words say
				// the input is bad (a date out of range, a value that does
				// not parse): the effect table reads it as data, whatever
				// exception class the runtime wraps it in.
				f.Category = catData
				f.Statement = fmt.Sprintf("%s fails on input it cannot parse or validate (%s): %s between %s and %s from %s (e.g. %s); no release of it precedes the first failure",
					svc, fam.why, plural(len(lines), "error", "errors"), hhmm(first.Timestamp), hhmm(last.Timestamp), plural(len(pods), "pod", "pods"), quote(reps[0].Message))
				f.inferred(fmt.Sprintf("No deploy of %s precedes the first exception within %s, and its message names bad input: the data changed, not the code", svc, durHuman(codeDeployWindow)))
				f.Chain = []string{"Input the service cannot handle arrives", "The service throws on it and answers with errors"}
				f.Remediation = []string{fmt.Sprintf("Find the producer of the bad input (%s) and quarantine or correct it", clip(reps[0].Message, 80)), fmt.Sprintf("Make %s reject such input without failing", svc)}
				f.Signals = []string{"exception", "input", svc}
				out = append(out, f)
				continue
			}
			f.inferred(fmt.Sprintf("No deploy of %s precedes the first exception within %s: a latent bug triggered by new input, or a change outside the deploy history", svc, durHuman(codeDeployWindow)))
			f.Chain = []string{"Requests reach a code path that fails", "The service throws and answers with errors"}
			f.Remediation = []string{fmt.Sprintf("Fix the failing code path of %s (%s)", svc, clip(reps[0].Message, 80))}
			f.Signals = []string{"exception", svc}
			out = append(out, f)
			continue
		}
		d := culprit
		f.Score = 0.85
		f.validated(fmt.Sprintf("Deploy of %s %s -> %s started %s and finished %s; the first exception follows at %s", svc, d.PreviousRevision, d.Revision, hhmm(d.StartedAt), hhmm(d.FinishedAt), hhmm(first.Timestamp)), d.Cite)
		var commits []Commit
		for _, c := range ev.Commits {
			if strings.HasPrefix(c.SHA, d.Revision) || strings.HasPrefix(d.Revision, c.SHA) || (c.Service == d.Service && c.Timestamp != nil && d.StartedAt != nil && c.Timestamp.Before(*d.StartedAt) && !c.Removed && revisionOf(c.SHA, ev.Deploys) == "") {
				commits = append(commits, c)
			}
		}
		cm, _ := pickCommit(commits, "errors")
		for i := range commits {
			if strings.HasPrefix(commits[i].SHA, d.Revision) || strings.HasPrefix(d.Revision, commits[i].SHA) {
				cm = &commits[i]
			}
		}
		if sc, why := specificCommit(commits, messagesOf(lines)); sc != nil {
			// The errors name what one commit changed: specificity beats
			// being the release's head commit.
			cm = sc
			f.inferred(fmt.Sprintf("Commit %s is singled out among the %s of the release: %s", short(sc.SHA), plural(len(commits), "commit", "commits"), why), sc.Cite)
		}
		rev := d.Revision
		if cm != nil {
			f.Entity = "commit/" + short(cm.SHA)
			rev = short(cm.SHA)
			f.validated(fmt.Sprintf("Commit %s (%s): %s", short(cm.SHA), cm.Author, clip(firstNonEmptyStr(cm.Summary, cm.Message), 220)), cm.Cite)
		} else {
			f.Entity = "commit/" + d.Revision
		}
		f.Statement = fmt.Sprintf("Release %s of %s (deployed %s) introduced a code defect: %s since %s from %s, e.g. %s",
			rev, svc, hhmm(d.FinishedAt), plural(len(lines), "runtime error", "runtime errors"), hhmm(first.Timestamp), plural(len(pods), "pod", "pods"), quote(reps[0].Message))
		f.Chain = []string{
			fmt.Sprintf("Release %s of %s rolls out at %s", rev, svc, hhmm(d.StartedAt)),
			fmt.Sprintf("The new code fails at runtime (%s)", clip(reps[0].Message, 100)),
			"Requests on that path return errors and the alert fires",
		}
		f.Remediation = []string{fmt.Sprintf("Roll back %s to %s", svc, firstNonEmptyStr(d.PreviousRevision, "the previous release")), fmt.Sprintf("Fix the defect of %s and add a test for the failing input", rev)}
		if rollback != nil {
			after := 0
			for _, l := range lines {
				if l.Timestamp != nil && rollback.FinishedAt != nil && l.Timestamp.After(rollback.FinishedAt.Add(time.Minute)) {
					after++
				}
			}
			f.validated(fmt.Sprintf("Rollback of %s to %s started %s and finished %s (%s)", svc, rollback.Revision, hhmm(rollback.StartedAt), hhmm(rollback.FinishedAt), "rollback deploy"), rollback.Cite)
			if after == 0 {
				f.Statement += fmt.Sprintf("; the rollback to %s at %s ended the errors (none since), so the service has recovered but %s stays broken", rollback.Revision, hhmm(rollback.FinishedAt), rev)
				f.inferred(fmt.Sprintf("The incident is mitigated by the rollback; re-deploying %s without a fix would bring the errors back", rev))
				// Nothing is failing now: the alert reports a fault already
				// mitigated (the public suite's recovered rollout, and every
				// blind author, read it so). The release stays named as what
				// broke, for its fix.
				f.Category, f.Healthy, f.Overrides = catHealthy, true, true
				f.explains(ModeReleaseFailure, "the release's failures ended with its rollback")
			} else {
				f.Statement += fmt.Sprintf("; a rollback to %s at %s did not stop them (%d errors since)", rollback.Revision, hhmm(rollback.FinishedAt), after)
			}
			f.Chain = append(f.Chain, fmt.Sprintf("Rollback to %s at %s", rollback.Revision, hhmm(rollback.FinishedAt)))
			f.Remediation[0] = fmt.Sprintf("Keep %s on %s until the defect is fixed", svc, rollback.Revision)
		}
		f.explains(ModeDeployRegression, "the error metrics rise because of the same release's runtime errors")
		f.explains(ModeTrafficSaturation, "the request metrics move because the release fails requests, not because of load")
		f.Signals = []string{"exception", "deploy", rev}
		out = append(out, f)
	}
	return out
}

// firstFailureNamed: fewer exceptions than a pattern needs still start the
// incident when one carries a stack trace, the first of them precedes every
// other service's error, and another service's errors name svc (its callers
// report its failures): the failure the others follow.
func (ev *Evidence) firstFailureNamed(svc string, lines []LogLine) bool {
	var first *time.Time
	framed := false
	for _, l := range lines {
		if reStackFrame.MatchString(l.Message) {
			framed = true
		}
		if first == nil && l.Timestamp != nil {
			first = l.Timestamp
		}
	}
	if !framed || first == nil {
		return false
	}
	named := false
	lsvc := strings.ToLower(svc)
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) || ev.logService(l) == svc {
			continue
		}
		if l.Timestamp != nil && !l.Timestamp.After(*first) {
			return false
		}
		if len(lsvc) >= 4 && strings.Contains(strings.ToLower(l.Message), lsvc) {
			named = true
		}
	}
	return named
}

// reFrameFile: the source file a stack frame names (`(Validity.java:41)`,
// `in Manifest.cs:line 27`, `File "/app/rules.py", line 3`, `rules.go:88`).
var reFrameFile = regexp.MustCompile(`([\w$-]+\.(?:java|kt|scala|groovy|cs|py|go|js|mjs|cjs|ts|rb))(?::\d|", line \d|:line \d)`)

// frameFiles are the distinct source files the stack frames of texts name,
// in order, at most max.
func frameFiles(texts []string, max int) []string {
	var out []string
	for _, t := range texts {
		for _, m := range reFrameFile.FindAllStringSubmatch(t, -1) {
			if len(out) >= max {
				return out
			}
			out = appendUnique(out, m[1])
		}
	}
	return out
}

// frameCommit is the latest commit of svc before the first failure that
// changed a source file the failures' stack frames name, and why; nil when
// none did. The frame, not the commit's age, singles it out: latent code
// fails when an input or a date first reaches it.
func frameCommit(commits []Commit, svc string, before *time.Time, texts []string) (*Commit, string) {
	files := frameFiles(texts, 40)
	if len(files) == 0 {
		return nil, ""
	}
	var best *Commit
	var why string
	for i := range commits {
		c := &commits[i]
		if c.Removed || !strings.EqualFold(c.Service, svc) || (before != nil && c.Timestamp != nil && !c.Timestamp.Before(*before)) {
			continue
		}
		for _, fl := range c.Files {
			if slices.Contains(files, path.Base(fl.Path)) && (best == nil || (best.Timestamp != nil && c.Timestamp != nil && c.Timestamp.After(*best.Timestamp))) {
				best, why = c, fmt.Sprintf("it changed %s, which the stack trace names", fl.Path)
				break
			}
		}
	}
	return best, why
}

func sameSig(lines []LogLine, l LogLine) []LogLine {
	k := exceptionSig(l.Message)
	var out []LogLine
	for _, x := range lines {
		if exceptionSig(x.Message) == k {
			out = append(out, x)
		}
	}
	return out
}

// revisionOf returns the deploy revision a commit sha is (empty when none).
func revisionOf(sha string, ds []Deploy) string {
	for _, d := range ds {
		if d.Revision != "" && (strings.HasPrefix(sha, d.Revision) || strings.HasPrefix(d.Revision, sha)) {
			return d.Revision
		}
	}
	return ""
}

func firstNonEmptyStr(xs ...string) string {
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

var (
	reISODate   = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	reDateRange = regexp.MustCompile(`(?i)\b(?:year|month|day)s?(?: -?\d+)? (?:is |value )?out of range`)
)

// calendarBoundary: how soon after midnight (UTC) a failure that starts
// with the new day is the day's.
const calendarBoundary = 5 * time.Minute

// calendarTriggered: a date out of range whose first failure comes with
// a new day (within calendarBoundary after midnight UTC), no release
// before it: the calendar reached a day the code computes a bad date
// from (a leap day, a month's end, a new year), not input that changed.
func calendarTriggered(msg string, first *time.Time) bool {
	if first == nil || !reDateRange.MatchString(msg) {
		return false
	}
	t := first.UTC()
	since := t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
	return since >= 0 && since <= calendarBoundary
}

// computedDate: a date out of range while every date the line quotes is a
// real calendar day (2028-02-29): the input is good and the code computed
// the bad date from it (a year added to a leap day). A quoted day that
// does not exist (1987-02-31) is bad input.
func computedDate(msg string) bool {
	if !reDateRange.MatchString(msg) {
		return false
	}
	dates := reISODate.FindAllString(msg, -1)
	if len(dates) == 0 {
		return false
	}
	for _, d := range dates {
		if _, err := time.Parse("2006-01-02", d); err != nil {
			return false
		}
	}
	return true
}

package analysis

import (
	"fmt"
	"strings"
	"time"
)

// A row of the verdict side of the method: a failure told by log lines
// that has ended. The strongest abnormal candidate failed only in its
// lines (no restart, unready pod, Warning event or abnormal condition);
// after its last failing line, the sources that failed logged, without an
// error, a line that names what they were failing on (the dependency
// they call, "reachable again"), and nothing anywhere has failed since, for
// at least clearedFor before the end of the window; the alert's own signal
// is not still held. The episode is history: the alert fired on it.

// ModeEpisodeEnded: a failure episode told by log lines has ended.
const ModeEpisodeEnded = "episode_ended"

func detectEpisodeEnded(ev *Evidence) []Finding {
	if ev.windowEnd.IsZero() {
		return nil
	}
	cs := ev.anomalyCandidates()
	if len(cs) == 0 {
		return nil
	}
	top := cs[0]
	if len(top.errLines) == 0 || top.restarts > 0 || len(top.notReady) > 0 || len(top.badPods) > 0 || len(top.conditions) > 0 || len(top.events) > 0 || len(top.dbEvents) > 0 {
		return nil
	}
	named := episodeSubject(top)
	if len(named) < 4 {
		return nil
	}
	var last time.Time
	for _, l := range ev.Logs {
		if l.Timestamp != nil && ev.failingLine(l) && l.Timestamp.After(last) {
			last = *l.Timestamp
		}
	}
	if last.IsZero() || ev.windowEnd.Sub(last) < clearedFor {
		return nil
	}
	sources := map[string]bool{}
	for _, l := range top.errLines {
		sources[strings.ToLower(ev.logService(l))] = true
	}
	var back *LogLine
	for i := range ev.Logs {
		l := &ev.Logs[i]
		if l.Timestamp == nil || !l.Timestamp.After(last) || logLevel(l.LogLine) != "INFO" || ev.failingLine(*l) {
			continue
		}
		if sources[strings.ToLower(ev.logService(*l))] && strings.Contains(strings.ToLower(l.Message), named) {
			back = l
			break
		}
	}
	if back == nil {
		return nil
	}
	if _, holds := ev.heldCondition(); holds {
		return nil
	}
	if len(ev.activeAbnormal()) > 0 {
		return nil
	}
	first := top.errLines[0]
	f := healthyFinding(ModeEpisodeEnded, firstNonEmptyStr(ev.workloadEntity(), deploymentEntity(firstNonEmptyStr(first.Namespace, ev.alertNamespace()), ev.logService(first))), 0.75)
	f.Overrides = true
	f.explains(explainsAll, fmt.Sprintf("the failures on %s ended at %s: %s", named, hhmm(&last), clip(back.Message, 160)))
	f.validated(fmt.Sprintf("%s: %s, the last at %s: %s", top.name, plural(len(top.errLines), "failing line", "failing lines"), hhmm(&last), quote(top.errLines[len(top.errLines)-1].Message)), citesOfLogs(top.errLines))
	f.validated(fmt.Sprintf("After the last failure, %s log (%s, %s): %s", back.Cite.Source("logs"), logOrigin(*back), hhmm(back.Timestamp), quote(back.Message)), back.Cite)
	quiet := ev.windowEnd.Sub(last)
	f.validated(fmt.Sprintf("No line failed anywhere in the %s from %s to the end of the window (%s)", durHuman(quiet), hhmm(&last), hhmm(&ev.windowEnd)), citesOfLogs(ev.Logs))
	f.Statement = fmt.Sprintf("No active failure: the failures on %s (%s, %s to %s) ended; %s then logged %s at %s, and nothing has failed since (%s)",
		named, plural(len(top.errLines), "line", "lines"), hhmm(first.Timestamp), hhmm(&last), logOrigin(*back), quote(back.Message), hhmm(back.Timestamp), durHuman(quiet))
	f.Chain = []string{"Calls on " + named + " fail for a while", "The same sources log that it works again: " + clip(back.Message, 120), "The alert fired on the episode, which has ended"}
	f.Remediation = []string{"Resolve the alert; if such episodes recur, look at what " + named + " does at those times"}
	f.Signals = []string{"episode ended", named}
	return []Finding{f}
}

// episodeSubject is what the candidate's failing lines fail on, lower
// case: the dependency itself, or the one downstream all of a workload's
// failing lines name; "" when they name none or several.
func episodeSubject(top *candidate) string {
	if top.kind == "dependency" {
		return strings.ToLower(top.name)
	}
	if top.kind != "workload" {
		return ""
	}
	subject := ""
	for _, l := range top.errLines {
		h := downstreamHost(l.Message, top.name)
		if h == "" || subject != "" && h != subject {
			return ""
		}
		subject = h
	}
	return strings.ToLower(strings.TrimPrefix(subject, remoteAPIPrefix))
}

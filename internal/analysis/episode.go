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

// A second row of the same kind: the alert's own source reports it
// resolved (a resolution delivered with no open incident to end, a
// status page's maintenance completed). Its failing lines, if any, all
// ended at least clearedFor before the window's end, no object is
// abnormal and the alert's own signal does not hold: the episode the
// alert reported is over, which the source says too. A failure still
// under way keeps its reading, resolved or not.

// ModeAlertResolved: the alert's source reports it resolved and the
// evidence agrees.
const ModeAlertResolved = "alert_resolved"

func detectAlertResolved(ev *Evidence) []Finding {
	if ev.Alert == nil || !ev.Alert.GetResolved() || ev.windowEnd.IsZero() {
		return nil
	}
	var failing []LogLine
	var last time.Time
	for _, l := range ev.Logs {
		if l.Timestamp != nil && ev.failingLine(l) {
			failing = append(failing, l)
			if l.Timestamp.After(last) {
				last = *l.Timestamp
			}
		}
	}
	if !last.IsZero() && ev.windowEnd.Sub(last) < clearedFor {
		return nil // it still fails near the window's end
	}
	if _, holds := ev.heldCondition(); holds || len(ev.activeAbnormal()) > 0 {
		return nil
	}
	for _, l := range ev.persistentWarnings() {
		if ev.windowEnd.Sub(*l.Timestamp) < clearedFor {
			return nil // a warning that keeps coming to the window's end
		}
	}
	state := firstNonEmptyStr(ev.Alert.GetState(), "resolved")
	f := healthyFinding(ModeAlertResolved, ev.workloadEntity(), 0.72)
	f.Overrides = true
	var rule Cite // the alert's own rule as the monitors list it, when read
	for _, m := range ev.Monitors {
		if m.FromAlert {
			rule.merge(m.Cite)
		}
	}
	f.validated(fmt.Sprintf("The alert's source reports it %s: %s", state, firstNonEmptyStr(ev.Alert.GetTitle(), ev.Alert.GetAlertName())), rule)
	what := "nothing in the evidence fails"
	if len(failing) > 0 {
		first := failing[0]
		for _, l := range failing {
			if l.Timestamp.Before(*first.Timestamp) {
				first = l
			}
		}
		quiet := ev.windowEnd.Sub(last)
		what = fmt.Sprintf("its failures (%s, %s to %s, e.g. %s) ended and nothing has failed since (%s to the end of the window)",
			plural(len(failing), "line", "lines"), hhmm(first.Timestamp), hhmm(&last), quote(clip(first.Message, 160)), durHuman(quiet))
		f.validated(fmt.Sprintf("Failing lines from %s to %s, none in the %s since: %s", hhmm(first.Timestamp), hhmm(&last), durHuman(quiet), quote(clip(first.Message, 200))), citesOfLogs(failing))
		f.explains(explainsAll, fmt.Sprintf("the episode ended at %s and the alert's source reports it %s", hhmm(&last), state))
	} else {
		f.explains(explainsAll, "the alert's source reports it "+state+" and nothing in the evidence fails")
	}
	f.Statement = fmt.Sprintf("No action needed: the alert is %s at its source, and the evidence agrees: %s; no object is abnormal and the alert's own signal does not hold", state, what)
	f.Chain = []string{"Something fails for a while and the alert fires", "The failures stop", "The alert's source reports it " + state}
	f.Remediation = []string{"None now; if the episode recurs, look at what happened at those times"}
	f.Signals = []string{"resolved", state}
	return []Finding{f}
}

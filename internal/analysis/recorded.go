package analysis

import (
	"fmt"
	"math"
	"strings"
)

// recordedQuietScore: a reading of health that rests on the absence of
// every failure signal plus the records that name the alert's target, with
// no workload state behind it, sits just above the fault bar: any fault
// candidate that reaches the bar with a failure signal of its own outranks
// it, and the alert's own condition, measured and still holding, vetoes it.
const recordedQuietScore = 0.62

// ---- nothing failed, and the records around the alert say what happened ----

// detectRecordedQuiet: no source shows a failure (no error or warning line,
// no request answered with a server error, no restart, unready pod,
// Warning event, abnormal condition or database event, no error or
// latency series that moved, no failing state: stateFailing) and the
// records written around the alert name its target: a change, a plan, a
// configured behaviour or another system's account of it. The alert fired on a state the records explain, not on a
// failure; the reading quotes them (explainWith) so the reader can check.
// Without such a record nothing is claimed: absence alone is not health.
func detectRecordedQuiet(ev *Evidence) []Finding {
	if ev.Alert == nil || len(ev.Logs) == 0 || len(ev.Series) == 0 {
		return nil // the absence of failure is only read where logs and measurements were both looked at
	}
	warns := map[string]int{}
	for _, l := range ev.Logs {
		if logLevel(l.LogLine) == "WARN" {
			warns[warnKey(ev.logService(l), l.Message)]++
		}
	}
	for _, l := range ev.Logs {
		if isErrorLog(l.LogLine) || failedRequestLine(l.Message) {
			return nil
		}
		if logLevel(l.LogLine) == "WARN" && !ev.echoesAlert(l.Message) && (warns[warnKey(ev.logService(l), l.Message)] > 1 || ev.persistentWarning(l)) {
			// A warning that repeats is a failure signal; one said once
			// (an actuator slow within tolerance) is not, nor the
			// monitor's own record of the alert raising and clearing.
			return nil
		}
	}
	if len(ev.recentWarnings()) > 0 {
		return nil
	}
	for _, c := range ev.anomalyCandidates() {
		if c.failed() {
			return nil
		}
	}
	for _, s := range ev.Series {
		if failingSeries(s) {
			return nil
		}
	}
	if ev.stateFailing() {
		return nil
	}
	if len(ev.healthContext()) == 0 {
		return nil // nothing says why the alert fired: no verdict
	}
	ent := ev.workloadEntity()
	name := strings.Trim(ent[strings.LastIndex(ent, "/")+1:], "/")
	if name == "" {
		name = "the alert's target"
		if ev.Alert.GetAlertName() != "" {
			name = "the target of " + quote(ev.Alert.GetAlertName())
		}
	}
	f := healthyFinding(ModeHealthy, ent, recordedQuietScore)
	var parts []string
	nw := 0
	for _, n := range warns {
		nw += n
	}
	if nw == 0 {
		parts = append(parts, fmt.Sprintf("none of the %d log lines is an error or a warning", len(ev.Logs)))
		f.validated(fmt.Sprintf("%d log lines, none at ERROR or WARN level", len(ev.Logs)), citesOfLogs(ev.Logs))
	} else {
		parts = append(parts, fmt.Sprintf("none of the %d log lines is an error, and no warning repeats (%d said once or restating the alert)", len(ev.Logs), nw))
		f.validated(fmt.Sprintf("%d log lines, none at ERROR level; %d at WARN, none repeating except the alert's own", len(ev.Logs), nw), citesOfLogs(ev.Logs))
	}
	{
		n := len(ev.Series)
		var c Cite
		for _, s := range ev.Series {
			c.merge(s.Cite)
		}
		parts = append(parts, fmt.Sprintf("no error or latency series among the %d measured moved", n))
		f.validated(fmt.Sprintf("%d series measured, no error or latency series moved", n), c)
	}
	if len(ev.Pods) > 0 {
		parts = append(parts, fmt.Sprintf("all %d pods are Running and Ready", len(ev.Pods)))
		f.validated(fmt.Sprintf("All %d pods (%s) are Running and Ready", len(ev.Pods), joinNames(podNames(ev.Pods))), citesOfPods(ev.Pods))
	}
	f.Statement = fmt.Sprintf("No failure detected on %s: %s", name, strings.Join(parts, ", "))
	f.Chain = []string{"The alert condition was met", "No source shows a failure; the records around the alert account for it", "No fault to remediate"}
	f.Remediation = []string{"No action needed; check the quoted records and tune the alert if it fires on this again"}
	f.Signals = []string{"normal"}
	return []Finding{f}
}

// failingSeries: an error or latency series that moved the wrong way
// (failingRise), or CPU steal time that rose as an error series does (the
// host withholds CPU from the guest), wherever it is.
func failingSeries(s Series) bool {
	k := seriesKindOf(s.Series)
	if cpuSteal(s.Series) {
		k = "errors"
	}
	if stateDown(s.Series) && machineState(s.Series) {
		// A machine, a device or a link went down (statedown.go). A
		// probe of an address or a workload's own target is the
		// symptom whose cause (a failure, a planned stop) is in question.
		return true
	}
	return failingRise(k, riseOf(asRate(s.Series)))
}

// failingRise: an error series that rose (at its end more than twice its
// start and above a floor, or a peak five times its start), or a latency
// series that ended half again above its start.
func failingRise(kind string, r rise) bool {
	switch kind {
	case "errors":
		return r.tail > 2*math.Max(r.head, 0.05) || r.peak > 5*math.Max(r.head, 0.2)
	case "latency":
		return r.head > 0 && r.tail > 1.5*r.head
	}
	return false
}

// echoesAlert: msg names the alert's own rule (an identifier of six
// characters or more, as a monitor logs it raising and clearing): the
// alert's state restated, not another observation of a failure.
func (ev *Evidence) echoesAlert(msg string) bool {
	name := ev.alertRuleName()
	return name != "" && strings.Contains(strings.ToLower(msg), name)
}

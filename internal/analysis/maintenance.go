package analysis

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ModeMaintenanceEnded: the alert fires for errors a planned maintenance
// window caused, and the window completed successfully before the alert.
const ModeMaintenanceEnded = "maintenance_ended"

// maintenanceGrace: errors this long after the window's end still belong to it.
const maintenanceGrace = 5 * time.Minute

var (
	// Planned work of any kind: a maintenance or change window, a load or
	// stress test, a chaos experiment, a game day or drill, a planned
	// failover or migration. SRE vocabulary, not one incident's wording.
	plannedWork = `(?:maintenance(?: window)?|change window|planned (?:work|outage|failover|maintenance|migration|downtime)|scheduled (?:maintenance|downtime|work)|load[ -]?test(?:ing)?|stress[ -]test|performance test|chaos (?:experiment|test|drill|run)|game[ -]?day|(?:dr|failover|fire) (?:drill|test|exercise)|drill)`
	plannedRe   = regexp.MustCompile(`(?i)\b` + plannedWork + `\b`)
	mwStartRe   = regexp.MustCompile(`(?i)\b` + plannedWork + `\b[^\n]{0,60}\b(started|starting|begins?|began|opened|initiated|kicked off|in progress)\b`)
	mwEndRe     = regexp.MustCompile(`(?i)\b` + plannedWork + `\b[^\n]{0,60}\b(completed|complete|finished|ended|closed|done|concluded|stopped|over)\b`)
	mwFailRe    = regexp.MustCompile(`(?i)\b(failed|failure|rolled back|rollback|aborted|unsuccessful|errors? remain)\b`)
	mwIDRe      = regexp.MustCompile(`\b([A-Z]{2,8}-\d{2,8})\b`)
	mwTargetRe  = regexp.MustCompile(`(?i)\b(db|database|instance|cluster|service|node)/([a-z0-9][a-z0-9-]*)`)
)

// detectMaintenanceEnded: a planned maintenance window (a change record that
// started and then completed successfully) covers every error in evidence,
// no error follows its end, and the alert fires after it ended: the system
// is healthy; the alert reports the planned disruption after the fact.
func detectMaintenanceEnded(ev *Evidence) []Finding {
	var start, end *LogLine
	for i := range ev.Logs {
		l := &ev.Logs[i]
		if l.Timestamp == nil || isErrorLog(l.LogLine) {
			continue
		}
		switch {
		case mwEndRe.MatchString(l.Message) && !mwFailRe.MatchString(l.Message):
			end = l
		case mwStartRe.MatchString(l.Message):
			if start == nil {
				start = l
			}
		}
	}
	if start == nil || end == nil || !end.Timestamp.After(*start.Timestamp) {
		return nil
	}
	id := ""
	if m := mwIDRe.FindStringSubmatch(end.Message); m != nil {
		id = m[1]
		if !strings.Contains(start.Message, id) {
			return nil // two different windows
		}
	}
	// Every error falls inside the window (plus grace), at least one does.
	inside, after := 0, 0
	var errs []LogLine
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) || l.Timestamp == nil {
			continue
		}
		switch {
		case l.Timestamp.Before(*start.Timestamp):
			return nil // errors before the window: not (only) the maintenance
		case !l.Timestamp.After(end.Timestamp.Add(maintenanceGrace)):
			inside++
			errs = append(errs, l)
		default:
			after++
		}
	}
	if inside == 0 || after > 0 {
		return nil
	}
	// The alert fires after the window ended.
	if at := ev.alertTime(); at != nil && at.Before(*end.Timestamp) {
		return nil
	}
	entity := ev.workloadEntity()
	if m := mwTargetRe.FindStringSubmatch(start.Message); m != nil {
		entity = strings.ToLower(m[1]) + "/" + m[2]
		if strings.EqualFold(m[1], "database") {
			entity = "db/" + m[2]
		}
	}
	name := strings.ToLower(plannedRe.FindString(start.Message))
	if name == "" {
		name = "maintenance window"
	}
	if id != "" {
		name += " " + id
	}
	f := healthyFinding(ModeMaintenanceEnded, entity, 0.9)
	f.Overrides = true
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", start.Cite.Source("logs"), logOrigin(*start), hhmm(start.Timestamp), quote(start.Message)), start.Cite)
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", end.Cite.Source("logs"), logOrigin(*end), hhmm(end.Timestamp), quote(end.Message)), end.Cite)
	first, last := errs[0], errs[len(errs)-1]
	f.validated(fmt.Sprintf("All %s fall inside the window (%s to %s, e.g. %s); none after it completed", plural(inside, "error line", "error lines"), hhmm(first.Timestamp), hhmm(last.Timestamp), quote(first.Message)), citesOfLogs(errs))
	var ok []Pod
	for _, p := range ev.Pods {
		if podHealthy(p.Pod) {
			ok = append(ok, p)
		}
	}
	if len(ok) > 0 {
		f.validated(fmt.Sprintf("Pods %s are Running and Ready", joinNames(podNames(ok))), citesOfPods(ok))
	}
	when := ""
	if at := ev.alertTime(); at != nil {
		when = fmt.Sprintf(" at %s, %s after it", hhmm(at), durHuman(at.Sub(*end.Timestamp)))
	}
	f.Statement = fmt.Sprintf("No active failure: the errors came from the planned %s (%s to %s), which completed successfully (%s); no error since, and the alert fired%s for the planned disruption",
		name, hhmm(start.Timestamp), hhmm(end.Timestamp), clip(end.Message, 160), when)
	f.Chain = []string{fmt.Sprintf("The planned %s starts", name), "The maintained component is briefly unavailable and clients log errors", fmt.Sprintf("The %s completes; errors stop", name), "An alert evaluated over a window that still includes the disruption fires afterwards"}
	f.Remediation = []string{"Resolve the alert; no action on the system is needed", "Silence alerts covering the maintained component (including burn-rate/SLO alerts) for the window plus their evaluation range"}
	f.Signals = []string{"maintenance", "completed"}
	for _, m := range []string{ModeDependencyFailure, ModeTrafficSaturation, ModeCodeException, ModeAnomaly, ModeFailover, ModeConnPoolExhaustion} {
		f.explains(m, fmt.Sprintf("the errors are the planned %s, which completed before the alert", name))
	}
	return []Finding{f}
}

// alertTime is when the alert started firing, when known.
func (ev *Evidence) alertTime() *time.Time {
	if ev.Alert == nil || ev.Alert.GetStartsAt() == nil {
		return nil
	}
	t := ev.Alert.GetStartsAt().AsTime()
	if t.IsZero() || t.Year() < 2000 {
		return nil
	}
	return &t
}

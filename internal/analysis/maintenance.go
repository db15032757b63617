package analysis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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
	plannedWork = `(?:maintenance(?: window)?|change window|planned (?:work|outage|failover|maintenance|migration|downtime)|scheduled (?:maintenance|downtime|work)|load[ -]?test(?:ing)?|stress[ -]test|performance test|chaos (?:experiment|test|drill|run)|game[ -]?day|(?:dr|failover|fire) (?:drill|test|exercise)|drill|decommission(?:ed|ing)?|rolling (?:restart|update|upgrade)|(?:upgrade|migration|patch(?:ing)?|switchover)\b[^\n]{0,60}\bwindow)`
	// endWords: how a record says a piece of work ended.
	endWords   = `completed|complete|finished|ended|closed|done|concluded`
	plannedRe  = regexp.MustCompile(`(?i)\b` + plannedWork + `\b`)
	mwStartRe  = regexp.MustCompile(`(?i)\b` + plannedWork + `\b[^\n]{0,60}\b(started|starting|begins?|began|opened|initiated|kicked off|in progress)\b`)
	mwEndRe    = regexp.MustCompile(`(?i)\b` + plannedWork + `\b[^\n]{0,60}\b(` + endWords + `|stopped|over)\b`)
	mwClosedRe = regexp.MustCompile(`(?i)\b(` + endWords + `|successful(?:ly)?)\b`)
	mwFailRe   = regexp.MustCompile(`(?i)\b(failed|failure|rolled back|rollback|aborted|unsuccessful|errors? remain)\b`)
	mwIDRe     = regexp.MustCompile(`\b([A-Z]{2,8}-\d{2,8}|[A-Z]{2,6}\d{6,10})\b`) // CHG-7781, or CHG0041877 as ServiceNow numbers them
	mwTargetRe = regexp.MustCompile(`(?i)\b(db|database|instance|cluster|service|node)/([a-z0-9][a-z0-9-]*)`)
)

// detectMaintenanceEnded: a planned maintenance window (a change record that
// started and then completed successfully) covers every error in evidence,
// no error follows its end, and the alert fires after it ended: the system
// is healthy; the alert reports the planned disruption after the fact.
func detectMaintenanceEnded(ev *Evidence) []Finding {
	var start, end *LogLine
	at := ev.alertTime()
	for i := range ev.Logs {
		l := &ev.Logs[i]
		if l.Timestamp == nil || isErrorLog(l.LogLine) {
			continue
		}
		// A change record approved or scheduled for the alert's own day is
		// planned work, whatever words name the work ("apply Oracle 19.29
		// Release Update, Sun 2026-12-06 01:30-03:30 UTC").
		bookedForTheDay := at != nil && mwIDRe.MatchString(l.Message) && reApproval.MatchString(l.Message) && dayNotice(*l.Timestamp, *at, l.Message)
		switch {
		case mwEndRe.MatchString(l.Message) && !mwFailRe.MatchString(l.Message):
			end = l
		case mwStartRe.MatchString(l.Message) || plannedRe.MatchString(l.Message) && mwIDRe.MatchString(l.Message) || bookedForTheDay:
			// The window's start, or the record that announced it.
			if start == nil {
				start = l
			}
		}
	}
	if start != nil && end == nil {
		// The record closed under its own id, in other words than the
		// start's ("CHG-7781 closed: failover test successful").
		if m := mwIDRe.FindStringSubmatch(start.Message); m != nil {
			for i := range ev.Logs {
				l := &ev.Logs[i]
				if l.Timestamp != nil && l.Timestamp.After(*start.Timestamp) && !isErrorLog(l.LogLine) && strings.Contains(l.Message, m[1]) && mwClosedRe.MatchString(l.Message) && !mwFailRe.MatchString(l.Message) {
					end = l
				}
			}
		}
	}
	if start != nil && end == nil {
		// Or closed in the words of the work itself: a later line that
		// says the same kind of work on the same object ended
		// ("reed-prod: instance failover completed" after "planned
		// failover of reed-prod").
		end = workEnded(ev.Logs, start)
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
	if after > 0 {
		return nil
	}
	if inside == 0 {
		// No error at all: the alert itself is the work's effect when it
		// fired inside the window (a latency check during a load test).
		at := ev.alertTime()
		if at == nil || at.Before(*start.Timestamp) || at.After(end.Timestamp.Add(maintenanceGrace)) {
			return nil
		}
	}
	// The alert fired during the window or after it: either way the
	// window has ended and no error followed it.
	if at := ev.alertTime(); at != nil && at.Before(*start.Timestamp) {
		return nil // the alert is older than the planned work
	}
	entity := ev.workloadEntity()
	if m := mwTargetRe.FindStringSubmatch(start.Message); m != nil {
		entity = dbOrKind(m[1], m[2])
	}
	name := strings.TrimPrefix(strings.ToLower(plannedRe.FindString(start.Message)), "planned ")
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
	if len(errs) > 0 {
		first, last := errs[0], errs[len(errs)-1]
		f.validated(fmt.Sprintf("All %s fall inside the window (%s to %s, e.g. %s); none after it completed", plural(inside, "error line", "error lines"), hhmm(first.Timestamp), hhmm(last.Timestamp), quote(first.Message)), citesOfLogs(errs))
	} else {
		f.validated("No error line at all: the alert, fired inside the window, is the work's only effect", start.Cite, end.Cite)
	}
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
		if at.Before(*end.Timestamp) {
			when = fmt.Sprintf(" at %s, during it", hhmm(at))
		}
	}
	what := "the errors came from"
	if inside == 0 {
		what = "the alert's symptom came from"
	}
	from := hhmm(start.Timestamp)
	if at := ev.alertTime(); at != nil {
		from = hhmmDay(start.Timestamp, *at) // a record written days ahead carries its day
	}
	f.Statement = fmt.Sprintf("No active failure: %s the planned %s (%s to %s), which completed successfully (%s); no error since, and the alert fired%s for the planned disruption",
		what, name, from, hhmm(end.Timestamp), clip(end.Message, 160), when)
	f.Chain = []string{fmt.Sprintf("The planned %s starts", name), "The maintained component is briefly unavailable and clients log errors", fmt.Sprintf("The %s completes; errors stop", name), "An alert evaluated over a window that still includes the disruption fires afterwards"}
	f.Remediation = []string{"Resolve the alert; no action on the system is needed", "Silence alerts covering the maintained component (including burn-rate/SLO alerts) for the window plus their evaluation range"}
	f.Signals = []string{"maintenance", "completed"}
	for _, m := range []string{ModeDependencyFailure, ModeTrafficSaturation, ModeCodeException, ModeAnomaly, ModeFailover, ModeConnPoolExhaustion} {
		f.explains(m, fmt.Sprintf("the errors are the planned %s, which completed before the alert", name))
	}
	return []Finding{f}
}

// alertTime is when the alert started firing, when known; an alert that
// carries no firing time fired at the end most pins' windows share.
func (ev *Evidence) alertTime() *time.Time {
	if ev.Alert == nil {
		return nil
	}
	if ev.Alert.GetStartsAt() == nil {
		// No firing time: it fired when the tools read "now" (the
		// window's end), as they assumed.
		if ev.windowEnd.IsZero() {
			return nil
		}
		t := ev.windowEnd
		return &t
	}
	t := ev.Alert.GetStartsAt().AsTime()
	if t.IsZero() || t.Year() < 2000 {
		return nil
	}
	return &t
}

// ModeNodeMaintenance: a node the alert is about is out of service for
// planned work still under way: cordoned and drained first, by a change
// or ticket, its workloads running elsewhere.
const ModeNodeMaintenance = "node_maintenance"

// reNodeTakenOut: a line that records a node's cordon or drain.
var reNodeTakenOut = regexp.MustCompile(`(?i)\b(cordon(ed|ing)?|drain(ed|ing)?)\b`)

// detectNodeMaintenance: the node the alert names is not Ready and
// cordoned; non-error lines from before it went down record its cordon or
// drain together with a change or ticket id or planned-work words; no line
// records that work ended (a node still down after its work ended is a
// fault); and every pod on other nodes is Running and Ready. The node's
// unavailability is the planned work: no action needed.
func detectNodeMaintenance(ev *Evidence) []Finding {
	var out []Finding
	for _, n := range ev.Nodes {
		if !n.Unschedulable || nodeReadyStatus(n.Node) == "True" || !ev.alertNamesNode(n.Name) {
			continue
		}
		var plan []LogLine
		ids := map[string]bool{}
		for _, l := range ev.Logs {
			if l.Timestamp == nil || isErrorLog(l.LogLine) || !containsFold(l.Message, HostName(n.Name)) || !reNodeTakenOut.MatchString(l.Message) {
				continue
			}
			id := mwIDRe.FindString(l.Message)
			if id == "" && !plannedRe.MatchString(l.Message) {
				continue
			}
			plan = append(plan, l)
			if id != "" {
				ids[id] = true
			}
		}
		if len(plan) == 0 {
			continue
		}
		ended := false
		for _, l := range ev.Logs {
			if id := mwIDRe.FindString(l.Message); (ids[id] || id == "" && containsFold(l.Message, HostName(n.Name))) && mwEndRe.MatchString(l.Message) {
				ended = true
			}
		}
		if ended {
			continue
		}
		var elsewhere []Pod
		healthy := true
		for _, p := range ev.Pods {
			if p.Node == n.Name {
				continue
			}
			if !podHealthy(p.Pod) {
				healthy = false
			}
			elsewhere = append(elsewhere, p)
		}
		if !healthy {
			continue
		}
		f := healthyFinding(ModeNodeMaintenance, "node/"+n.Name, 0.9)
		f.Overrides = true
		for _, l := range plan {
			f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
		f.validated(fmt.Sprintf("Node %s: Ready=%s, cordoned (unschedulable)", n.Name, nodeReadyStatus(n.Node)), n.Cite)
		if len(elsewhere) > 0 {
			f.validated(fmt.Sprintf("Pods on other nodes (%s) are Running and Ready", joinNames(podNames(elsewhere))), citesOfPods(elsewhere))
		}
		work := "planned work"
		if len(ids) > 0 {
			work += " " + strings.Join(slices.Sorted(maps.Keys(ids)), ", ")
		}
		f.Statement = fmt.Sprintf("No action needed: node %s is out of service for %s, still under way: it was cordoned and drained first (%s), its workloads run Ready on other nodes, and no record says the work ended", n.Name, work, clip(plan[0].Message, 200))
		f.Chain = []string{fmt.Sprintf("Node %s is cordoned and drained for %s", n.Name, work), "The node is taken down for the work", "The node's NotReady alert fires for the planned downtime"}
		f.Remediation = []string{"No action on the cluster; silence the node's alerts for the work's window", "Uncordon the node when the work ends"}
		f.Signals = []string{"maintenance", "cordoned", "drained"}
		for _, m := range []string{ModeNodeNotReady, ModeAnomaly} {
			f.explains(m, fmt.Sprintf("node %s is down for %s", n.Name, work))
		}
		out = append(out, f)
	}
	return out
}

// alertNamesNode: the alert is about the node called name (a label or
// annotation, its resource, or its own words name it, full or short, as a
// whole name).
func (ev *Evidence) alertNamesNode(name string) bool {
	if ev.namedByAlert([]string{name}) {
		return true
	}
	a := ev.Alert
	if a == nil {
		return false
	}
	re := regexp.MustCompile(`(?i)(?:^|[^a-z0-9._-])(?:` + regexp.QuoteMeta(name) + `|` + regexp.QuoteMeta(HostName(name)) + `)(?:$|[^a-z0-9._-])`)
	texts := []string{a.GetResourceName(), a.GetAlertName(), a.GetTitle(), a.GetSummary(), a.GetDescription()}
	for _, k := range slices.Sorted(maps.Keys(a.GetAnnotations())) {
		texts = append(texts, a.GetAnnotations()[k])
	}
	return slices.ContainsFunc(texts, re.MatchString)
}

// reObjectName: a lower-case name of an object in a record (a host, an
// instance, a cluster: reed-prod, orders-db.eu-1).
var reObjectName = regexp.MustCompile(`\b[a-z0-9]+(?:[-.][a-z0-9]+)+\b`)

// workEnded is the first line after the planned work's record that says
// the same work ended on the same object: no error, a word of completion
// and none of failure, the work's own noun (the last word of its planned
// phrase: "failover", "migration", "window") and one of the record's
// object names.
func workEnded(logs []LogLine, start *LogLine) *LogLine {
	phrase := strings.Fields(strings.ToLower(plannedRe.FindString(start.Message)))
	if len(phrase) == 0 {
		return nil
	}
	noun := []string{phrase[len(phrase)-1]}
	var objects []string
	for _, o := range reObjectName.FindAllString(start.Message, -1) {
		if strings.ContainsAny(o, "abcdefghijklmnopqrstuvwxyz") {
			objects = append(objects, o) // not a date or a time range ("21:00-21:30")
		}
	}
	if len(objects) == 0 {
		return nil
	}
	for i := range logs {
		l := &logs[i]
		if l == start || l.Timestamp == nil || !l.Timestamp.After(*start.Timestamp) || isErrorLog(l.LogLine) {
			continue
		}
		if mwClosedRe.MatchString(l.Message) && !mwFailRe.MatchString(l.Message) && namesPeer(l.Message, noun) && namesPeer(l.Message, objects) {
			return l
		}
	}
	return nil
}

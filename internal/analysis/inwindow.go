package analysis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ---- planned work still inside the window it was booked for ----

// ModeMaintenanceInWindow: the alert fires inside the window a change
// record booked for planned work on its day ("CHG-30418 approved: annual
// DR test, Sat 12 Sep 02:00-04:00 UTC"), the record's trail shows the
// work under way, every error came after the window opened, and the
// window has not closed: the disruption is the planned one, still in
// progress.
const ModeMaintenanceInWindow = "maintenance_in_window"

// reBookedRange: a clock range in UTC ("02:00-04:00 UTC", "01:30–03:30Z").
// Only an explicit UTC (or Z, GMT) range is read: a local range is a time
// this reading cannot place.
var reBookedRange = regexp.MustCompile(`\b([01]?\d|2[0-3]):([0-5]\d)\s*(?:-|–|to)\s*([01]?\d|2[0-3]):([0-5]\d)\s*(?:UTC|GMT|Z)\b`)

// bookedWindow is the window a record written at written books on the day
// of at: its clock range on the day it names (the alert's day, or the
// day either side).
func bookedWindow(msg string, written, at time.Time) (time.Time, time.Time, bool) {
	m := reBookedRange.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, time.Time{}, false
	}
	days := namedDays(msg, written)
	if len(days) == 0 && at.Sub(written) <= 24*time.Hour {
		// No day named, written within the day before: the window's next
		// occurrence after the record ("window 01:00-02:00 UTC" written
		// at 23:00).
		d := time.Date(written.UTC().Year(), written.UTC().Month(), written.UTC().Day(), 0, 0, 0, 0, time.UTC)
		days = []time.Time{d, d.Add(24 * time.Hour)}
	}
	for _, d := range days {
		h1, _ := strconv.Atoi(m[1])
		m1, _ := strconv.Atoi(m[2])
		h2, _ := strconv.Atoi(m[3])
		m2, _ := strconv.Atoi(m[4])
		from := d.Add(time.Duration(h1)*time.Hour + time.Duration(m1)*time.Minute)
		to := d.Add(time.Duration(h2)*time.Hour + time.Duration(m2)*time.Minute)
		if !to.After(from) {
			to = to.Add(24 * time.Hour) // 22:00-02:00 runs past midnight
		}
		if !at.Before(from) && !at.After(to) && !from.Before(written.Add(-24*time.Hour)) {
			return from, to, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// detectMaintenanceInWindow: a change record (an id, the words of an
// approval or a schedule) written before the alert books a UTC window on
// the alert's day that the alert falls in; a later line carries the
// record's id (the work under way); no error came before the window
// opened, none failing as the work's end (no line of the record says it
// failed or was rolled back).
func detectMaintenanceInWindow(ev *Evidence) []Finding {
	at := ev.alertTime()
	if at == nil {
		return nil
	}
	for i := range ev.Logs {
		rec := &ev.Logs[i]
		if rec.Timestamp == nil || rec.Timestamp.After(*at) || isErrorLog(rec.LogLine) || !reApproval.MatchString(rec.Message) {
			continue
		}
		id := mwIDRe.FindString(rec.Message)
		if id == "" || !dayNotice(*rec.Timestamp, *at, rec.Message) && at.Sub(*rec.Timestamp) > 24*time.Hour {
			continue // booked for another day, or long before without naming the day
		}
		from, to, ok := bookedWindow(rec.Message, *rec.Timestamp, *at)
		if !ok {
			continue
		}
		var trail *LogLine
		failed := false
		for j := range ev.Logs {
			l := &ev.Logs[j]
			if j == i || l.Timestamp == nil || l.Timestamp.Before(from) || !containsID(l.Message, id) {
				continue
			}
			if workFailed(l.Message) {
				failed = true
			}
			if trail == nil && !isErrorLog(l.LogLine) {
				trail = l
			}
		}
		if trail == nil || failed {
			continue
		}
		var errs []LogLine
		early := false
		for _, l := range ev.errorLogs() {
			if l.Timestamp == nil {
				continue
			}
			if l.Timestamp.Before(from) {
				early = true
			}
			errs = append(errs, l)
		}
		if early {
			continue // errors before the window: not (only) the planned work
		}
		entity := ev.workloadEntity()
		if m := mwTargetRe.FindStringSubmatch(rec.Message); m != nil {
			entity = dbOrKind(m[1], m[2])
		}
		f := healthyFinding(ModeMaintenanceInWindow, entity, 0.86)
		f.Overrides = true
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", rec.Cite.Source("logs"), logOrigin(*rec), hhmmDay(rec.Timestamp, *at), quote(rec.Message)), rec.Cite)
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", trail.Cite.Source("logs"), logOrigin(*trail), hhmm(trail.Timestamp), quote(trail.Message)), trail.Cite)
		if len(errs) > 0 {
			f.validated(fmt.Sprintf("All %s came after the window opened at %s (e.g. %s)", plural(len(errs), "error line", "error lines"), hhmm(&from), quote(clip(errs[0].Message, 160))), citesOfLogs(errs))
		}
		f.Statement = fmt.Sprintf("No unplanned failure: the alert fired at %s inside the window %s booked for planned work (%s to %s: %s), still under way (%s at %s); every error came after the window opened",
			hhmm(at), id, hhmm(&from), hhmm(&to), quote(clip(rec.Message, 200)), quote(clip(trail.Message, 160)), hhmm(trail.Timestamp))
		f.Chain = []string{fmt.Sprintf("%s books planned work for %s-%s UTC", id, hhmm(&from), hhmm(&to)), "The work disrupts the component as planned", "The alert fires inside the window"}
		f.Remediation = []string{fmt.Sprintf("Follow %s to its close; if errors outlast %s, treat them as a failure", id, hhmm(&to)), "Silence the alerts of the maintained component for booked windows"}
		f.Signals = []string{"maintenance", "in_window"}
		for _, m := range []string{ModeDependencyFailure, ModeTrafficSaturation, ModeCodeException, ModeAnomaly, ModeFailover, ModeConnPoolExhaustion, ModeReplicationLag} {
			f.explains(m, fmt.Sprintf("the disruption is the planned work %s, inside its booked window", id))
		}
		return []Finding{f}
	}
	return nil
}

// reFailedOver: a failover done ("failed over to B"), which is no failure
// of the work.
var reFailedOver = regexp.MustCompile(`(?i)\bfailed over\b`)

// workFailed: a line of a record's trail says the work failed, was rolled
// back or aborted (a failover it performed is not a failure).
func workFailed(msg string) bool {
	return mwFailRe.MatchString(reFailedOver.ReplaceAllString(msg, ""))
}

// containsID: msg carries the record id whole.
func containsID(msg, id string) bool {
	for _, m := range mwIDRe.FindAllString(msg, -1) {
		if m == id {
			return true
		}
	}
	return false
}

// dbOrKind is the entity of a kind/name a record writes ("database/x" is db/x).
func dbOrKind(kind, name string) string {
	if k := strings.ToLower(kind); k == "database" || k == "db" {
		return "db/" + name
	}
	return strings.ToLower(kind) + "/" + name
}

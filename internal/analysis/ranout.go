package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// ---- a free-capacity measure that reached zero ----

// ModeRanOut: a measure of what is left of a resource (a burst balance, a
// credit balance, free inodes, remaining quota) fell to nothing inside the
// window, and the failures began as it did: the resource is exhausted,
// whatever its consumers then report (timeouts, slow queries, queues).
// runOut forecasts a measure still falling; this reads one already empty.
const ModeRanOut = "ran_out"

const (
	// ranOutShare: at or under this share of its first value a measure is
	// spent.
	ranOutShare = 0.02
	// ranOutLead: failures that begin up to this long before the measure
	// is spent still follow it (the last credits throttle before zero).
	ranOutLead     = 10 * time.Minute
	ranOutScore    = 0.66
	ranOutFollowed = 0.06
)

// ranOutLabels are the labels that name what a measure is of, most
// specific first, with the kind of entity each names.
var ranOutLabels = []struct{ label, kind string }{
	{"volume_id", "volume"}, {"volumeid", "volume"}, {"dimension_volumeid", "volume"}, {"persistentvolumeclaim", "persistentvolumeclaim"},
	{"instance_id", "instance"}, {"dimension_instanceid", "instance"}, {"db_instance_identifier", "db"}, {"dbinstanceidentifier", "db"}, {"db_instance", "db"},
	{"node", "node"}, {"instance_name", "host"}, {"host", "host"}, {"instance", "host"},
}

// detectRanOut: a free-capacity series (freeCapacityName) whose first
// value is positive falls by more than three quarters to ranOutShare of it
// or less; the entity its labels name is exhausted. Failures (an error
// line, an error or latency series rising) from ranOutLead before it was
// spent make the reading stronger.
func detectRanOut(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, s := range ev.Series {
		if !freeCapacityName(s.Name) || isCounterName(strings.ToLower(s.Name)) {
			continue
		}
		pts := s.Downsampled
		if len(pts) < 4 || pts[0].V <= 0 {
			continue
		}
		first := pts[0].V
		var spent *time.Time
		for i := range pts {
			if pts[i].V <= ranOutShare*first {
				t := pts[i].T
				spent = &t
				break
			}
		}
		if spent == nil || pts[len(pts)-1].V > ranOutShare*first {
			continue // never spent, or refilled by the end
		}
		ent := ranOutEntity(s)
		if ent == "" || seen[ent] {
			continue
		}
		seen[ent] = true
		f := Finding{Mode: ModeRanOut, Category: catResource, Entity: ent, Score: ranOutScore}
		what := fmt.Sprintf("%s%s fell from %s to %s, spent at %s", s.Name, seriesSelector(s.Series), num(first), num(pts[len(pts)-1].V), hhmm(spent))
		f.validated(what, s.Cite)
		for _, l := range ev.linesNaming(ent[strings.IndexByte(ent, '/')+1:], maxRanOutLines) {
			f.validated(fmt.Sprintf("About %s, %s log (%s, %s): %s", ent, l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
		followed := ""
		if t, text, c, ok := ev.failureSince(spent.Add(-ranOutLead)); ok {
			f.Score += ranOutFollowed
			f.validated(fmt.Sprintf("Failures follow from %s: %s", hhmm(&t), text), c)
			followed = fmt.Sprintf("; failures follow from %s (%s)", hhmm(&t), text)
		}
		f.Statement = fmt.Sprintf("%s is exhausted: %s%s", ent, what, followed)
		f.Chain = []string{
			fmt.Sprintf("%s is consumed faster than it refills", s.Name),
			fmt.Sprintf("It reaches zero at %s: %s is held to its baseline", hhmm(spent), ent),
			"Its consumers slow down and fail",
		}
		f.Remediation = []string{
			fmt.Sprintf("Give %s capacity that does not run out (a larger or provisioned baseline, another class), or spread the load that spends it", ent),
			fmt.Sprintf("Alert on %s before it reaches zero", s.Name),
		}
		f.Signals = []string{"ran_out"}
		f.Sources = []string{"prometheus"}
		out = append(out, f)
	}
	return out
}

// ranOutEntity is the entity a measure's labels name.
func ranOutEntity(s Series) string {
	low := map[string]string{}
	for k, v := range s.Labels {
		low[strings.ToLower(k)] = v
	}
	for _, l := range ranOutLabels {
		if v := low[l.label]; v != "" {
			if i := strings.LastIndexByte(v, ':'); i > 0 && l.kind == "host" {
				v = v[:i] // host:port
			}
			if ns := low["namespace"]; ns != "" && l.kind == "persistentvolumeclaim" {
				v = ns + "/" + v
			}
			return l.kind + "/" + v
		}
	}
	return ""
}

// maxRanOutLines bounds the lines about a spent entity a reading quotes.
const maxRanOutLines = 2

// linesNaming are up to n lines (not errors) that name id whole: what
// other systems recorded about the entity (its volume type, its baseline).
func (ev *Evidence) linesNaming(id string, n int) []LogLine {
	var out []LogLine
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if len(out) >= n || isErrorLog(l.LogLine) || !textutil.ContainsWord(strings.ToLower(l.Message), strings.ToLower(id)) || !firstOfTemplate(seen, l.Message) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// failureSince is the first failure at or after from: an error line, or an
// error or latency series whose rise begins then; its time and text.
func (ev *Evidence) failureSince(from time.Time) (time.Time, string, Cite, bool) {
	var at time.Time
	var text string
	var c Cite
	for _, l := range ev.errorLogs() {
		if l.Timestamp != nil && !l.Timestamp.Before(from) && (at.IsZero() || l.Timestamp.Before(at)) {
			at, text, c = *l.Timestamp, quote(clip(l.Message, 160)), l.Cite
		}
	}
	for _, s := range ev.Series {
		if !failingSeries(s) {
			continue
		}
		r := riseOf(asRate(s.Series))
		if r.onset != nil && !r.onset.Before(from) && (at.IsZero() || r.onset.Before(at)) {
			at, text, c = *r.onset, fmt.Sprintf("%s%s rose from %s to %s", s.Name, seriesSelector(s.Series), num(r.head), num(r.tail)), s.Cite
		}
	}
	return at, text, c, !at.IsZero()
}

package analysis

import (
	"strings"
	"time"
)

// A warning that keeps coming is a failure still under way, whatever level
// its writer gave it: one template of warning lines from one service,
// repeated persistentWarnMin times or more over at least
// persistentWarnSpan, the last of them at or after the alert fired (the
// alert's own time when known). A single warning, or a burst of one
// second, is noise; a warning repeated through the incident is its
// symptom. Such lines are symptoms of the candidate that writes them (the
// effect rows of causes.go read their words) and no reading of health
// stands while they come.

// A deprecation notice (a runtime's DeprecationWarning or FutureWarning)
// repeats on every call of the deprecated API by design: it announces a
// future change and reports no failure now, however often it comes.

// deprecationNotice: msg is a runtime's deprecation or future warning.
func deprecationNotice(msg string) bool {
	m := reWarningClass.FindString(msg)
	return m != "" && (strings.Contains(m, "Deprecat") || strings.Contains(m, "Future"))
}

// persistentWarnMin: how many lines of one warning template make it
// persistent.
const persistentWarnMin = 4

// persistentWarnSpan: how long they must span.
const persistentWarnSpan = 5 * time.Minute

func warnKey(svc, msg string) string { return svc + "\x00" + logTemplate(msg) }

// persistentWarningKeys groups the warning lines by service and template.
func (ev *Evidence) persistentWarningKeys() map[string]bool {
	ev.persistOnce.Do(func() {
		type group struct {
			n           int
			first, last time.Time
		}
		groups := map[string]*group{}
		for _, l := range ev.Logs {
			if logLevel(l.LogLine) != "WARN" || l.Timestamp == nil || deprecationNotice(l.Message) {
				continue
			}
			k := warnKey(ev.logService(l), l.Message)
			g := groups[k]
			if g == nil {
				g = &group{first: *l.Timestamp, last: *l.Timestamp}
				groups[k] = g
			}
			g.n++
			if l.Timestamp.Before(g.first) {
				g.first = *l.Timestamp
			}
			if l.Timestamp.After(g.last) {
				g.last = *l.Timestamp
			}
		}
		at := ev.alertTime()
		keys := map[string]bool{}
		for k, g := range groups {
			if g.n < persistentWarnMin || g.last.Sub(g.first) < persistentWarnSpan {
				continue
			}
			if at != nil && g.last.Before(*at) {
				continue // it stopped before the alert fired
			}
			keys[k] = true
		}
		ev.persistKeys = keys
	})
	return ev.persistKeys
}

// persistentWarning reports whether l is one line of a persistent warning.
func (ev *Evidence) persistentWarning(l LogLine) bool {
	keys := ev.persistentWarningKeys()
	if len(keys) == 0 || logLevel(l.LogLine) != "WARN" {
		return false
	}
	return keys[warnKey(ev.logService(l), l.Message)]
}

// persistentWarnings lists the lines of persistent warnings.
func (ev *Evidence) persistentWarnings() []LogLine {
	if len(ev.persistentWarningKeys()) == 0 {
		return nil
	}
	var out []LogLine
	for _, l := range ev.Logs {
		if ev.persistentWarning(l) {
			out = append(out, l)
		}
	}
	return out
}

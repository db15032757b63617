package intake

import (
	"regexp"
	"sort"
	"strings"
	"time"
)

// When a format's parser finds no start time, the payload usually still
// carries one under its own name: New Relic's createdAt, Uptime Kuma's
// heartbeat.time, Nagios' LONGDATETIME, Zabbix's event_date and event_time,
// Sentry's event.datetime, a check's down_since. inferStart reads every
// field of the payload whose name says it holds a time, and picks the one
// that says when the condition began.

// Time field names by what they date: the start of the condition; a time
// without saying which (the event's); a later moment (an update, a
// notification sent); the end (never the start).
var (
	reStartField   = regexp.MustCompile(`(?i)(start|since|fired|trigger|opened|began|begin|first|raised|detected|changed|onset|scheduled_?for)`)
	reCreatedField = regexp.MustCompile(`(?i)creat`)
	reEndField     = regexp.MustCompile(`(?i)(resolv|ended|end_?time|ends|closed|recover|clear|expir|until)`)
	reLaterField   = regexp.MustCompile(`(?i)(updat|last|sent|modif|ack|notif|received|delivered|next)`)
	reTimeField    = regexp.MustCompile(`(?i)(time|date|stamp|_at$|[a-z]At$|^at$|when|since|scheduled_?for|^(start|started|began|opened|created|fired|triggered|raised|detected)$)`)
	reNotTimeField = regexp.MustCompile(`(?i)(zone|offset|out$|duration|interval|period|window|ttl|timeout|elapsed|ms$|seconds$|count)`)
)

// objectAge: a creation date this much older than the payload's latest
// dates a long-lived object, not the condition.
const objectAge = 24 * time.Hour

// maxStartDepth bounds how deep inferStart walks (a payload is data).
const maxStartDepth = 5

type timeField struct {
	rank int // 0 start, 1 a creation or unspecified, 2 later
	at   time.Time
}

// eachObject calls visit on obj and on every object nested in it (in
// maps and lists), maxStartDepth deep: a payload is data.
func eachObject(obj map[string]any, visit func(map[string]any)) {
	var walk func(m map[string]any, depth int)
	walk = func(m map[string]any, depth int) {
		if depth > maxStartDepth {
			return
		}
		visit(m)
		for _, v := range m {
			switch t := v.(type) {
			case map[string]any:
				walk(t, depth+1)
			case []any:
				for _, e := range t {
					if em, ok := e.(map[string]any); ok {
						walk(em, depth+1)
					}
				}
			}
		}
	}
	walk(obj, 0)
}

// reTextStart: a start time written in an alert's text, as chat and mail
// notifications print it ("Started 2026-12-15 14:06 UTC", "firing since
// 2026-03-02T08:15:00Z"): a start word, then an ISO date and clock.
var reTextStart = regexp.MustCompile(`(?i)\b(?:started|starts|start(?:ed)? at|since|fired|firing since|triggered|began|opened|raised|detected)\b:?\s+(?:at\s+|on\s+)?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}))?)`)

// textStart is the start time an alert's texts write after a start word
// (reTextStart), when no field carries one: the first text that has one.
func textStart(texts ...string) (time.Time, bool) {
	for _, t := range texts {
		m := reTextStart.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		v := strings.TrimSpace(m[1])
		v = strings.Replace(v, " UTC", "Z", 1)
		v = strings.Replace(v, "UTC", "Z", 1)
		v = strings.Replace(v, " GMT", "Z", 1)
		v = strings.Replace(v, " ", "T", 1)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z0700"} {
			if at, err := time.Parse(layout, v); err == nil && at.Year() >= 2000 && at.Year() <= 2200 {
				return at.UTC(), true
			}
		}
	}
	return time.Time{}, false
}

// inferStart returns the start time the payload's time fields give.
func inferStart(obj map[string]any) (time.Time, bool) {
	var found []timeField
	eachObject(obj, func(m map[string]any) {
		dates := map[string]string{}
		clocks := map[string]string{}
		for k, v := range m {
			switch v.(type) {
			case map[string]any, []any:
				continue
			}
			if !reTimeField.MatchString(k) || reNotTimeField.MatchString(k) || reEndField.MatchString(k) {
				continue
			}
			lk := strings.ToLower(k)
			// A date and a clock in two fields (event_date, event_time).
			if s, ok := v.(string); ok {
				if p, ok := strings.CutSuffix(lk, "date"); ok {
					dates[p] = s
				}
				if p, ok := strings.CutSuffix(lk, "time"); ok {
					clocks[p] = s
				}
			}
			t, ok := parseLooseTime(v)
			if !ok || t.Year() < 2000 || t.Year() > 2200 {
				continue // a number that is not an epoch time (a count, an id), or a "never" sentinel (9999-12-31)
			}
			found = append(found, timeField{rank: fieldRank(k), at: t})
		}
		for p, d := range dates {
			if c, ok := clocks[p]; ok {
				if t, ok := parseLooseTime(strings.TrimSpace(d) + " " + strings.TrimSpace(c)); ok {
					found = append(found, timeField{rank: fieldRank(p + "time"), at: t})
				}
			}
		}
	})
	if len(found) == 0 {
		return time.Time{}, false
	}
	// A long-lived object the payload describes (the component, the
	// monitor, the check) carries its own creation date, days or years
	// before the event: a creation date more than a day older than the
	// payload's latest one dates the object, not the condition.
	var latest time.Time
	for _, f := range found {
		if f.rank == 1 && f.at.After(latest) {
			latest = f.at
		}
	}
	kept := found[:0]
	for _, f := range found {
		if f.rank == 1 && latest.Sub(f.at) > objectAge {
			continue
		}
		kept = append(kept, f)
	}
	found = kept
	sort.Slice(found, func(i, j int) bool {
		if found[i].rank != found[j].rank {
			return found[i].rank < found[j].rank
		}
		return found[i].at.Before(found[j].at)
	})
	return found[0].at, true
}

func fieldRank(k string) int {
	switch {
	case reStartField.MatchString(k):
		return 0
	case reCreatedField.MatchString(k):
		// A record's creation dates the condition when nothing says when
		// it began: a maintenance is created (announced) before the work
		// it schedules starts.
		return 1
	case reLaterField.MatchString(k):
		return 2
	}
	return 1
}

// looseLayouts are the written forms monitoring tools use besides RFC 3339
// and epoch numbers (parseTime): a space instead of the T, milliseconds, a
// zone name, dotted or slashed dates (Zabbix' 2027.03.06), RFC 1123.
var looseLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05 MST",
	"2006-01-02 15:04:05.999999999 MST",
	"2006-01-02 15:04:05 -0700",
	"2006.01.02 15:04:05",
	"2006/01/02 15:04:05",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	time.RFC1123,
	time.RFC1123Z,
	time.UnixDate,
	"Mon Jan _2 15:04:05 MST 2006",
	"Mon Jan _2 15:04:05 2006",
	// A US date with a 12-hour clock (month first: the AM/PM convention's).
	"01/02/2006 03:04:05 PM MST",
	"01/02/2006 03:04:05 PM",
	"1/2/2006 3:04:05 PM MST",
	"1/2/2006 3:04:05 PM",
}

// parseLooseTime is parseTime plus looseLayouts; a zone name other than
// UTC/GMT is not trusted (Go reads unknown names as UTC+0) and is refused.
func parseLooseTime(v any) (time.Time, bool) {
	if t, ok := parseTime(v); ok {
		return t, true
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	s = strings.TrimSpace(s)
	if len(s) < 10 || len(s) > 64 {
		return time.Time{}, false
	}
	for _, layout := range looseLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		if strings.Contains(layout, "MST") {
			if name, off := t.Zone(); name != "UTC" && name != "GMT" && name != "Z" && !(off == 0 && strings.HasPrefix(name, "+00")) {
				continue
			}
		}
		if t.Year() < 1970 {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	return time.Time{}, false
}

// maxResolvedSpan bounds the window a resolution stretches: an end more
// than a day after the start is not this episode's.
const maxResolvedSpan = 24 * time.Hour

// inferEnd returns when a resolved condition ended, by the payload's end
// fields (resolved_at, endsAt, scheduled_until), the earliest after start
// and within maxResolvedSpan of it.
func inferEnd(obj map[string]any, start time.Time) (time.Time, bool) {
	var best time.Time
	eachObject(obj, func(m map[string]any) {
		for k, v := range m {
			if !reEndField.MatchString(k) || reNotTimeField.MatchString(k) {
				continue
			}
			t, ok := parseLooseTime(v)
			if !ok || !t.After(start) || t.Sub(start) > maxResolvedSpan {
				continue
			}
			if best.IsZero() || t.Before(best) {
				best = t
			}
		}
	})
	return best, !best.IsZero()
}

package analysis

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A notice names the day it is about: a deadline announced weeks ahead
// ("filing deadline 31 Jan: forecast 6x"), a test booked for a date
// ("annual DR test, Sat 12 Sep 02:00-04:00 UTC"), a retirement on a day
// ("v1 retired on 2 Feb 2026"). A line written before the alert that
// names the alert's own day is about it, however long before it was
// written; the fixed look-backs (contextLookBack, noticeLookBack) miss
// the notice sent a fortnight ahead.

// dayNoticeLookBack: a notice this long before the alert that names its
// day still explains it (seasons and deadlines are announced weeks ahead).
const dayNoticeLookBack = 60 * 24 * time.Hour

// DayNoticeLookBackMinutes is dayNoticeLookBack in minutes (a search's
// since_minutes).
const DayNoticeLookBackMinutes = int(dayNoticeLookBack / time.Minute)

var (
	monthNames = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}
	// reMonth is a month's name, full or abbreviated to three letters
	// ("Sep" and "Sept").
	reMonth = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`
	// reDayMonth: "31 Jan", "1 September 2026", "12th of May".
	reDayMonth = regexp.MustCompile(`(?i)\b([0-3]?\d)(?:st|nd|rd|th)?(?:\s+of)?\s+` + reMonth + `\b\.?(?:,?\s+((?:19|20)\d\d)\b)?`)
	// reMonthDay: "Jan 31", "September 1st, 2026".
	reMonthDay = regexp.MustCompile(`(?i)\b` + reMonth + `\.?\s+([0-3]?\d)(?:st|nd|rd|th)?\b(?:,?\s+((?:19|20)\d\d)\b)?`)
)

// monthOf is the month a name or abbreviation spells (0 when none).
func monthOf(s string) time.Month {
	s = strings.ToLower(s)
	for i, m := range monthNames {
		if strings.HasPrefix(m, s) && len(s) >= 3 {
			return time.Month(i + 1)
		}
	}
	return 0
}

// namedDays are the calendar days text names, each as a UTC midnight. A
// day written without a year is placed in the year of ref, or the next
// one when that day is more than half a year before ref (a January
// deadline announced in December).
func namedDays(text string, ref time.Time) []time.Time {
	var out []time.Time
	add := func(y int, m time.Month, d int) {
		if m < 1 || m > 12 || d < 1 || d > 31 {
			return
		}
		t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		if t.Month() != m {
			return // 31 February
		}
		out = append(out, t)
	}
	year := func(s string, m time.Month, d int) int {
		if y, err := strconv.Atoi(s); err == nil && s != "" {
			return y
		}
		y := ref.UTC().Year()
		if time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Before(ref.AddDate(0, -6, 0)) {
			y++
		}
		return y
	}
	for _, g := range reISODate.FindAllStringSubmatch(text, -1) { // "2026-01-31" (code.go)
		y, _ := strconv.Atoi(g[1])
		m, _ := strconv.Atoi(g[2])
		d, _ := strconv.Atoi(g[3])
		add(y, time.Month(m), d)
	}
	for _, g := range reDayMonth.FindAllStringSubmatch(text, -1) {
		d, _ := strconv.Atoi(g[1])
		m := monthOf(g[2])
		add(year(g[3], m, d), m, d)
	}
	for _, g := range reMonthDay.FindAllStringSubmatch(text, -1) {
		d, _ := strconv.Atoi(g[2])
		m := monthOf(g[1])
		add(year(g[3], m, d), m, d)
	}
	return out
}

// namesDayOf: text, written at written, names the calendar day of at (or
// the day either side: a notice in local time for an alert in UTC), a
// day after written (a notice is written ahead of its day).
func namesDayOf(text string, written, at time.Time) bool {
	day := time.Date(at.UTC().Year(), at.UTC().Month(), at.UTC().Day(), 0, 0, 0, 0, time.UTC)
	for _, d := range namedDays(text, written) {
		if diff := d.Sub(day); diff >= -24*time.Hour && diff <= 24*time.Hour && !d.Add(24*time.Hour).Before(written) {
			return true
		}
	}
	return false
}

// dayNotice: a line written at t, up to dayNoticeLookBack before an alert
// at at, names the alert's day (namesDayOf).
func dayNotice(t, at time.Time, msg string) bool {
	return !t.After(at) && !t.Before(at.Add(-dayNoticeLookBack)) && namesDayOf(msg, t, at)
}

// DayQuery is the log search for notices that name the day of at: the
// day and the days either side, each in the forms notices write them
// ("2026-01-31", "31 Jan", "Jan 31", "31 January", "January 31").
func DayQuery(at time.Time) string {
	var qs []string
	for _, off := range []int{-1, 0, 1} {
		d := at.UTC().AddDate(0, 0, off)
		full := monthNames[d.Month()-1]
		short := full[:3]
		n := strconv.Itoa(d.Day())
		for _, f := range []string{d.Format("2006-01-02"), n + " " + short, short + " " + n} {
			qs = append(qs, `"`+f+`"`)
		}
		if len(full) > 3 {
			qs = append(qs, `"`+n+" "+full+`"`, `"`+full+" "+n+`"`)
		}
	}
	return strings.Join(qs, " OR ")
}

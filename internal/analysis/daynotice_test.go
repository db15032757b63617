package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func TestNamesDayOf(t *testing.T) {
	at := time.Date(2027, 1, 31, 21, 40, 0, 0, time.UTC)
	for _, tc := range []struct {
		text    string
		written time.Time
		want    bool
	}{
		{"renewal window closes 31 Jan: forecast 5x usual renewals", at.AddDate(0, 0, -11), true},
		{"deadline Jan 31st, 2027 at 23:59", at.AddDate(0, 0, -3), true},
		{"cutover booked for 2027-01-31 22:00 UTC", at.AddDate(0, 0, -20), true},
		{"season opens 1 February 00:00 local", at.AddDate(0, 0, -5), true}, // the day after, in local time
		{"the 12th of January release", at.AddDate(0, 0, -30), false},
		{"review on 3 Feb", at.AddDate(0, 0, -2), false},
		{"31 Jan last year's load test", at.AddDate(0, 0, -1), true}, // a day named is a day named
		{"31 Jan 2026 post-mortem", at.AddDate(0, 0, -1), false},     // its year says another
		{"retry 31 may fail", at, false},
		{"no date here, 31 replicas", at, false},
		{"31 February is no day", at, false},
		// A December notice of a January deadline: the year is the next.
		{"deadline 31 Jan: expect 4x", time.Date(2026, 12, 20, 9, 0, 0, 0, time.UTC), true},
	} {
		if got := namesDayOf(tc.text, tc.written, at); got != tc.want {
			t.Errorf("namesDayOf(%q, %s) = %v, want %v", tc.text, tc.written.Format(time.DateOnly), got, tc.want)
		}
	}
}

func TestDayQueryNamesTheDayAndItsNeighbours(t *testing.T) {
	q := DayQuery(time.Date(2026, 9, 1, 0, 30, 0, 0, time.UTC))
	for _, want := range []string{`"2026-09-01"`, `"1 sep"`, `"sep 1"`, `"1 september"`, `"september 1"`, `"31 aug"`, `"2026-08-31"`, `"2 sep"`} {
		if !strings.Contains(q, want) {
			t.Errorf("DayQuery lacks %s: %s", want, q)
		}
	}
	if strings.Contains(q, "2026-09-03") {
		t.Errorf("DayQuery names a day two away: %s", q)
	}
}

func TestDemandNoticeWords(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"expect 3-4x sign-ins after the keynote", true},
		{"forecast 7x normal uploads 20:00-22:00", true},
		{"expect peak traffic from 11:30", true},
		{"anticipated rush at midnight", true},
		{"expected to triple the usual orders", true},
		{"expected 3 replicas, found 2", false},
		{"harvest week from 06:00, weighbridge-api pre-scaled to 9 replicas", true},
		{"expect queue when sales open", true},
		{"expected response time 200 ms", false},
		{"build took 6x longer", false},
	} {
		if got := reDemandNotice.MatchString(tc.text); got != tc.want {
			t.Errorf("reDemandNotice(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// StandingQuery asks for one of the standing words AND one of the alert's
// names; the log store's query language reads it so (package logquery).
func TestStandingQuery(t *testing.T) {
	a := &investigationv1.Alert{AlertName: "edge router load", Labels: map[string]string{"host": "rtr-edge-17"}}
	q := StandingQuery(a)
	if !strings.HasPrefix(q, `("known" OR "flap"`) || !strings.Contains(q, `) AND (`) || !strings.Contains(q, `"rtr-edge-17"`) {
		t.Fatalf("StandingQuery = %s", q)
	}
	if q := StandingQuery(&investigationv1.Alert{AlertName: "Watchdog"}); !strings.Contains(q, `"watchdog"`) {
		t.Errorf("a rule named by one identifier: StandingQuery = %q, want the rule's name among the names", q)
	}
	if q := StandingQuery(&investigationv1.Alert{}); q != "" {
		t.Fatalf("an alert that names nothing: StandingQuery = %q, want empty", q)
	}
}

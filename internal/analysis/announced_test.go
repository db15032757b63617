package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Demand announced ahead for the alert's day, served without errors: a
// reading of expected load. An error, a resource at its limit, no notice,
// or a notice for another day, and nothing is claimed.
func TestAnnouncedDemand(t *testing.T) {
	day := func(d, h, m int) *time.Time { x := time.Date(2026, 2, d, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Level: level, Message: msg}}
	}
	// The series of mkSeries run 10:00-11:00 on 1 Feb 2026; the alert fires at 10:50.
	noticeDay := line(day(-12+1, 9, 0), "comms", "INFO", "reminder: enrolment closes 1 Feb 23:59; expect 5x sign-ups from 10:00")
	noticeOther := line(day(-12+1, 9, 0), "comms", "INFO", "reminder: enrolment closes 9 Feb 23:59; expect 5x sign-ups from 10:00")
	noticeNear := line(day(-1+1, 15, 0), "capacity", "INFO", "enrol-web pre-scaled: forecast 4x normal load tomorrow morning")
	served := line(day(1, 10, 40), "enrol-web", "INFO", "served 98,000 requests in 10 min, all 2xx")
	demand := mkSeries("http_requests_total", map[string]string{"service": "enrol-web", "code": "200"}, func(i int) float64 {
		if i < 20 {
			return 1000 + float64(i)*20
		}
		return 1400 + float64(i-20)*120
	})
	latency := mkSeries("http_request_duration_seconds_p95", map[string]string{"service": "enrol-web"}, func(i int) float64 {
		if i < 20 {
			return 0.3
		}
		return 0.9
	})
	fewErrors := mkSeries("http_requests_total", map[string]string{"service": "enrol-web", "code": "500"}, func(i int) float64 { return 4 })
	risingErrors := mkSeries("http_requests_total", map[string]string{"service": "enrol-web", "code": "500"}, func(i int) float64 {
		if i < 20 {
			return 4
		}
		return 4 + float64(i-20)*30
	})
	pool := mkSeries("db_pool_waiting_connections", map[string]string{"service": "enrol-web"}, func(i int) float64 {
		if i < 20 {
			return 0
		}
		return float64(i - 20)
	})
	tests := []struct {
		name    string
		logs    []LogLine
		series  []Series
		healthy bool
	}{
		{"a notice names the alert's day, nothing failed", []LogLine{noticeDay, served}, []Series{demand, latency, fewErrors}, true},
		{"a notice the day before names the service", []LogLine{noticeNear, served}, []Series{demand, latency}, true},
		{"the notice names another day", []LogLine{noticeOther, served}, []Series{demand, latency}, false},
		{"no notice", []LogLine{served}, []Series{demand, latency}, false},
		{"an error line", []LogLine{noticeDay, served, line(day(1, 10, 45), "enrol-web", "ERROR", "upstream timed out")}, []Series{demand, latency}, false},
		{"an error series rising", []LogLine{noticeDay, served}, []Series{demand, latency, risingErrors}, false},
		{"a resource at its limit", []LogLine{noticeDay, served}, []Series{demand, latency, pool}, false},
		{"no demand rise", []LogLine{noticeDay, served}, []Series{latency}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alert := &investigationv1.Alert{AlertName: "EnrolWebLatencyHigh", Service: "enrol-web", StartsAt: timestamppb.New(*day(1, 10, 50))}
			ev := NewEvidence(alert, nil)
			ev.Logs = tc.logs
			ev.Series = tc.series
			got := detectAnnouncedDemand(ev)
			if (len(got) == 1) != tc.healthy {
				t.Fatalf("detectAnnouncedDemand = %d findings, want healthy=%v", len(got), tc.healthy)
			}
			if !tc.healthy {
				return
			}
			f := got[0]
			if f.Category != catHealthy || f.Score < minFaultScore || !f.HoldsExpected {
				t.Errorf("finding = %s %.2f holds=%v, want healthy above the fault bar, holding the condition as expected", f.Category, f.Score, f.HoldsExpected)
			}
			if !strings.Contains(f.Statement, "expect") && !strings.Contains(f.Statement, "forecast") {
				t.Errorf("statement %q does not quote the notice", f.Statement)
			}
		})
	}
}

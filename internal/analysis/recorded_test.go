package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Nothing failed and a record names the alert's target: healthy, with the
// record quoted. Any failure signal, or no record at all, and nothing is
// claimed.
func TestRecordedQuiet(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 2, 1, h, m, 0, 0, time.UTC); return &x }
	line := func(ts *time.Time, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts, Service: svc, Level: level, Message: msg}}
	}
	record := line(at(9, 30), "change-calendar", "INFO", "CHG-881 approved: move tenant acme of parcel-api from eu-west to eu-north; cutover 10:15")
	served := line(at(10, 40), "parcel-api", "INFO", "served 41,200 requests in the last 10 min")
	flatOK := mkSeries("http_requests_total", map[string]string{"job": "parcel-api", "code": "200"}, func(i int) float64 { return 5000 + float64(i)*80 })
	flatErr := mkSeries("http_requests_total", map[string]string{"job": "parcel-api", "code": "500"}, func(int) float64 { return 12 })
	risingErr := mkSeries("http_requests_total", map[string]string{"job": "parcel-api", "upstream_status": "502"}, func(i int) float64 {
		if i < 20 {
			return 0
		}
		return float64(i-20) * 40
	})
	tests := []struct {
		name    string
		logs    []LogLine
		series  []Series
		healthy bool
	}{
		{"a record names the target, nothing failed", []LogLine{record, served}, []Series{flatOK, flatErr}, true},
		{"an error line", []LogLine{record, served, line(at(10, 41), "parcel-api", "ERROR", "upstream connect error")}, []Series{flatOK}, false},
		{"a warning that repeats", []LogLine{record, served, line(at(10, 41), "parcel-api", "WARN", "retrying publish to topic 4"), line(at(10, 43), "parcel-api", "WARN", "retrying publish to topic 9")}, []Series{flatOK}, false},
		{"a warning said once", []LogLine{record, served, line(at(10, 41), "parcel-api", "WARN", "label printer slow (2.1s), within tolerance")}, []Series{flatOK}, true},
		{"the monitor's own record of the alert, twice", []LogLine{record, served, line(at(10, 30), "monitor", "WARN", "ParcelApiTrafficDrop raised (value 0.41)"), line(at(10, 36), "monitor", "WARN", "ParcelApiTrafficDrop raised (value 0.38)")}, []Series{flatOK}, true},
		{"a standing known issue filed weeks before names the target", []LogLine{line(at(-24*40+9, 0), "tickets", "INFO", "OPS-77 known: parcel-api traffic dips at 10:30 while the depot batch runs; alert flaps, no action"), line(at(10, 20), "depot-batch", "INFO", "batch 7 started")}, []Series{flatOK}, true},
		{"a record weeks before that is no standing one", []LogLine{line(at(-24*40+9, 0), "change-calendar", "INFO", "CHG-12 done: parcel-api moved to node pool b"), line(at(10, 20), "depot-batch", "INFO", "batch 7 started")}, []Series{flatOK}, false},
		{"an access line with a server error at INFO", []LogLine{record, served, line(at(10, 41), "edge", "INFO", `10.0.0.1 - - "POST /v1/parcels HTTP/1.1" 504 160`)}, []Series{flatOK}, false},
		{"an error series rising under a vendor's status label", []LogLine{record, served}, []Series{flatOK, risingErr}, false},
		{"no measurement looked at", []LogLine{record, served}, nil, false},
		{"no record names the target", []LogLine{line(at(9, 30), "change-calendar", "INFO", "CHG-882 approved: rotate billing-db password")}, []Series{flatOK}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alert := &investigationv1.Alert{AlertName: "ParcelApiTrafficDrop", Service: "parcel-api", StartsAt: timestamppb.New(*at(10, 30))}
			ev := NewEvidence(alert, nil)
			ev.Logs = tc.logs
			ev.Series = tc.series
			got := detectRecordedQuiet(ev)
			if (len(got) == 1) != tc.healthy {
				t.Fatalf("detectRecordedQuiet = %d findings, want healthy=%v", len(got), tc.healthy)
			}
			if !tc.healthy {
				return
			}
			if got[0].Category != catHealthy || got[0].Score < minFaultScore {
				t.Errorf("finding = %s %.2f, want healthy above the fault bar", got[0].Category, got[0].Score)
			}
			f := got[0]
			f.explainWith(ev.healthContext(), ev.alertTime())
			if !strings.Contains(f.Statement, "CHG-881") && !strings.Contains(f.Statement, "OPS-77 known") {
				t.Errorf("statement %q does not quote the record", f.Statement)
			}
			if strings.Contains(f.Statement, "OPS-77") && !strings.Contains(f.Statement, "at 2025-12-23 09:00Z") {
				t.Errorf("statement %q does not date a record filed weeks before the alert", f.Statement)
			}
		})
	}
}

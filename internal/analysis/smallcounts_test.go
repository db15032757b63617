package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// An error ratio crossed on a small denominator (a few errors over a few
// requests a second) with nothing else wrong is no fault; more traffic,
// more errors, a restart or a change before them keep it a fault. Each
// case runs under two vocabularies (Prometheus client and OpenTelemetry
// names, code and http_response_status_code labels).
func TestSmallCounts(t *testing.T) {
	type vocab struct{ metric, svcKey, codeKey string }
	vocabs := []vocab{
		{"http_requests_total", "service", "code"},
		{"http_server_request_duration_seconds_count", "service_name", "http_response_status_code"},
	}
	// counter of rate perSec, with one error burst of n at minute 30.
	counter := func(v vocab, code string, perSec float64, burst float64) Series {
		return mkSeries(v.metric, map[string]string{v.svcKey: "tally-api", v.codeKey: code}, func(i int) float64 {
			x := 1000 + perSec*60*float64(i)
			if burst > 0 && i >= 30 {
				x += burst
			}
			return x
		})
	}
	errLine := LogLine{LogLine: facts.LogLine{Service: "tally-api", Level: "ERROR", Message: "POST /api/tally 502 upstream reset"}}
	for _, v := range vocabs {
		for _, tc := range []struct {
			name     string
			okPerSec float64
			errBurst float64
			errLines int
			restarts int32
			want     bool
		}{
			{"few errors over few requests", 0.05, 2, 2, 0, true},
			{"the same errors over busy traffic", 40, 2, 2, 0, false},
			{"errors by the hundred", 0.05, 600, 2, 0, false},
			{"many error lines", 0.05, 2, 12, 0, false},
			{"a pod restarted", 0.05, 2, 2, 1, false},
		} {
			t.Run(v.codeKey+"/"+tc.name, func(t *testing.T) {
				ev := &Evidence{Series: []Series{counter(v, "200", tc.okPerSec, 0), counter(v, "502", 0, tc.errBurst)}}
				errs := counter(v, "502", 0, tc.errBurst)
				ch, ok := seriesChangeOf(errs)
				if !ok {
					t.Fatalf("the error series is no change")
				}
				c := &candidate{kind: "workload", entity: "deployment/votes/tally-api", name: "tally-api", changes: []seriesChange{ch}, restarts: tc.restarts}
				for i := 0; i < tc.errLines; i++ {
					c.errLines = append(c.errLines, errLine)
				}
				f, got := ev.smallCounts(c)
				if got != tc.want {
					t.Fatalf("small counts %v, want %v (%s)", got, tc.want, f.Statement)
				}
				if got && (!f.Healthy || !strings.Contains(f.Statement, "tally-api") || !strings.Contains(f.Statement, "requests/s")) {
					t.Errorf("finding %v: %q must be healthy and give the volume", f.Healthy, f.Statement)
				}
			})
		}
	}
}

package analysis

import (
	"strings"
	"testing"
)

// A balance spent to zero inside the window, failures after: the entity it
// measures is exhausted. A balance that falls but stays above zero, one
// refilled by the end, or one that names no entity, and nothing is claimed.
func TestRanOut(t *testing.T) {
	burst := func(vals func(i int) float64, labels map[string]string) Series {
		return mkSeries("aws_ebs_burst_balance_average", labels, vals)
	}
	vol := map[string]string{"volume_id": "vol-0abc"}
	spent := func(i int) float64 { return max(0, 80-float64(i)*3) }
	low := func(i int) float64 { return 80 - float64(i) }
	refilled := func(i int) float64 {
		if i < 40 {
			return max(0, 80-float64(i)*3)
		}
		return float64(i-40) * 4
	}
	latency := mkSeries("http_request_duration_seconds_p95", map[string]string{"service": "orders"}, func(i int) float64 {
		if i < 30 {
			return 0.2
		}
		return 2.5
	})
	for _, tc := range []struct {
		name     string
		series   []Series
		want     bool
		followed bool
	}{
		{"spent, latency follows", []Series{burst(spent, vol), latency}, true, true},
		{"spent, nothing follows", []Series{burst(spent, vol)}, true, false},
		{"falls but not spent", []Series{burst(low, vol), latency}, false, false},
		{"refilled by the end", []Series{burst(refilled, vol), latency}, false, false},
		{"no entity named", []Series{burst(spent, map[string]string{"stat": "avg"}), latency}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Series = tc.series
			got := detectRanOut(ev)
			if (len(got) == 1) != tc.want {
				t.Fatalf("detectRanOut = %d findings, want %v", len(got), tc.want)
			}
			if !tc.want {
				return
			}
			f := got[0]
			if f.Entity != "volume/vol-0abc" || f.Category != catResource || (f.Score > ranOutScore) != tc.followed || strings.Contains(f.Statement, "failures follow") != tc.followed {
				t.Errorf("finding %s %s %.2f: %s", f.Category, f.Entity, f.Score, f.Statement)
			}
		})
	}
}

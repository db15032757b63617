package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Throttling that starts when the load arrives, the evening after a change
// lowered the CPU limit: the limit's setting, not the demand. Without the
// change, or with a change that names no CPU limit, it stays a capacity
// reading.
func TestThrottlingAfterCPULimitChange(t *testing.T) {
	// mkSeries runs 10:00-11:00 on 2026-02-01; throttling from 10:30.
	throttled := mkSeries("container_cpu_throttled_share", map[string]string{"service": "quote-api", "namespace": "ins"}, func(i int) float64 {
		if i < 30 {
			return 0.01
		}
		return 0.6
	})
	evening := time.Date(2026, 1, 31, 18, 20, 0, 0, time.UTC)
	cut := Commit{Commit: facts.Commit{SHA: "5e0c2a91d7", Service: "quote-api", Message: "rightsizing: quote-api cpu limit 1500m -> 400m", Timestamp: &evening}}
	other := Commit{Commit: facts.Commit{SHA: "77b1c0e4aa", Service: "quote-api", Message: "quote-api: new premium tables", Timestamp: &evening}}
	for _, tc := range []struct {
		name    string
		commits []Commit
		logs    []LogLine
		want    string
	}{
		{"a commit cut the limit the evening before", []Commit{cut}, nil, "configuration_error"},
		{"a record of the cut", nil, []LogLine{{LogLine: facts.LogLine{Timestamp: &evening, Service: "finops", Level: "INFO", Message: "rightsizing PR #81 merged: quote-api limits cpu 1500m -> cpu: 400m"}}}, "configuration_error"},
		{"a change that names no CPU limit", []Commit{other}, nil, "resource_exhaustion"},
		{"no change", nil, nil, "resource_exhaustion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Series = []Series{throttled}
			ev.Commits = tc.commits
			ev.Logs = tc.logs
			got := detectCPUThrottling(ev)
			if len(got) != 1 {
				t.Fatalf("detectCPUThrottling = %d findings", len(got))
			}
			if cat := strings.ToLower(strings.TrimPrefix(got[0].Category.String(), "ROOT_CAUSE_CATEGORY_")); cat != tc.want {
				t.Errorf("category %s, want %s (%s)", cat, tc.want, got[0].Statement)
			}
			if tc.want == "configuration_error" && !strings.Contains(got[0].Statement, "400m") {
				t.Errorf("statement does not quote the change: %s", got[0].Statement)
			}
		})
	}
}

package analysis

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// The alert's resource condition re-evaluated from the measurement and its
// bound, in several vocabularies: cleared when the resource fell well below
// the level the alert saw and stayed there; not cleared when it is still
// there or only dipped.
func TestResourceCleared(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	alertAt := t0.Add(30 * time.Minute)
	// step: the value before minute 34, then after.
	step := func(before, after float64) func(int) float64 {
		return func(i int) float64 {
			if i < 34 {
				return before
			}
			return after
		}
	}
	tests := []struct {
		name        string
		labels      map[string]string
		use, bound  string
		alertLabels map[string]string
		vals        func(int) float64
		boundVal    float64
		want        bool
	}{
		{"filesystem space reclaimed (free against size)", map[string]string{"instance": "worker-7", "mountpoint": "/"},
			"node_filesystem_avail_bytes", "node_filesystem_size_bytes", map[string]string{"instance": "worker-7"}, step(9e9, 30e9), 80e9, true},
		{"filesystem still nearly full", map[string]string{"instance": "worker-7", "mountpoint": "/"},
			"node_filesystem_avail_bytes", "node_filesystem_size_bytes", map[string]string{"instance": "worker-7"}, step(9e9, 8e9), 80e9, false},
		{"pool drained (active against max), other vocabulary", map[string]string{"pod": "orders-0"},
			"db_pool_connections_active", "db_pool_connections_max", map[string]string{"pod": "orders-0"}, step(48, 10), 50, true},
		{"resource of another target is not the alert's", map[string]string{"instance": "worker-9"},
			"node_filesystem_avail_bytes", "node_filesystem_size_bytes", map[string]string{"instance": "worker-7"}, step(9e9, 30e9), 80e9, false},
		{"dropped only in the last minutes: too early to say", map[string]string{"pod": "orders-0"},
			"db_pool_connections_active", "db_pool_connections_max", map[string]string{"pod": "orders-0"},
			func(i int) float64 {
				if i < 57 {
					return 48
				}
				return 10
			}, 50, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alert := &investigationv1.Alert{AlertName: "ResourceNearlyExhausted", Labels: tc.alertLabels, StartsAt: timestamppb.New(alertAt)}
			ev := NewEvidence(alert, nil)
			ev.Series = []Series{mkSeries(tc.use, tc.labels, tc.vals), mkSeries(tc.bound, tc.labels, func(int) float64 { return tc.boundVal })}
			got := detectResourceCleared(ev)
			if (len(got) > 0) != tc.want {
				t.Fatalf("cleared = %v, want %v (%+v)", len(got) > 0, tc.want, got)
			}
			if tc.want && (!got[0].Healthy || got[0].Mode != ModeConditionCleared) {
				t.Errorf("finding %+v, want a healthy condition_cleared finding", got[0])
			}
		})
	}
}

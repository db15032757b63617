package critic

import (
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func climbSeries(vals ...float64) facts.Series {
	t0 := time.Date(2026, 2, 3, 4, 0, 0, 0, time.UTC)
	s := facts.Series{Name: "container_memory_working_set_bytes"}
	for i, v := range vals {
		s.Downsampled = append(s.Downsampled, facts.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		if v > s.Peak {
			s.Peak = v
		}
		s.Latest = v
	}
	return s
}

func TestSteadyClimb(t *testing.T) {
	cases := []struct {
		name string
		s    facts.Series
		want bool
	}{
		{"slow leak, still at its peak", climbSeries(100, 101, 102, 103, 104, 105, 106, 107), true},
		{"flat plateau", climbSeries(100, 100, 101, 100, 100, 101, 100, 100), false},
		{"noisy without a trend", climbSeries(100, 104, 99, 105, 98, 104, 99, 103), false},
		{"rose then fell back", climbSeries(100, 102, 104, 106, 108, 110, 105, 100), false},
		{"too few samples", climbSeries(100, 110, 120), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := steadyClimb(tc.s); got != tc.want {
				t.Errorf("steadyClimb = %v, want %v", got, tc.want)
			}
		})
	}
}

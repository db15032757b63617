package analysis

import (
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A free-capacity measure that keeps falling runs out at its recent rate;
// one whose fall stopped, one that fell little, one far from empty, and a
// measure of use (not of what is left) do not.
func TestRunOut(t *testing.T) {
	t0 := time.Date(2027, 5, 1, 10, 0, 0, 0, time.UTC)
	every := func(step time.Duration, name string, vals ...float64) Series {
		var pts []facts.Point
		for i, v := range vals {
			pts = append(pts, facts.Point{T: t0.Add(time.Duration(i) * step), V: v})
		}
		return Series{Series: facts.Series{Name: name, Downsampled: pts, Count: len(pts)}}
	}
	series := func(name string, vals ...float64) Series { return every(10*time.Minute, name, vals...) }
	for _, tc := range []struct {
		name string
		s    Series
		want bool
	}{
		{"free bytes falling steadily", series("aws_rds_free_storage_space_average", 100, 95, 90, 85, 80, 75, 70, 65, 60), true},
		{"available inodes falling (renamed vocabulary)", series("volume_inodes_available", 5000, 4700, 4400, 4100, 3800, 3500, 3200, 2900, 2600), true},
		{"a fall that stopped (a one-off load ended)", series("node_filesystem_free_bytes", 100, 90, 80, 70, 60, 60, 60, 60, 60), false},
		{"fell little", series("disk_free_bytes", 100, 99.5, 99, 98.5, 98, 97.5, 97, 96.5, 96), false},
		{"falling for days, weeks from empty", every(24*time.Hour, "disk_free_bytes", 1000, 962, 925, 887, 850, 812, 775, 737, 700), false},
		{"a measure of use", series("disk_used_bytes", 100, 95, 90, 85, 80, 75, 70, 65, 60), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := runOut(tc.s); got != tc.want {
				t.Errorf("runOut = %v, want %v", got, tc.want)
			}
		})
	}
}

// An info metric whose label set changed (a rollout's phase, a build's
// version) is a state, not a symptom: alone it makes no candidate; the
// same move of a measurement does.
func TestInfoMetricIsNoSymptom(t *testing.T) {
	labels := map[string]string{"rollout": "fleet-api", "phase": "Paused", "service": "fleet-api"}
	ev := &Evidence{Series: []Series{flatSeries("rollout_info", labels, 0, 1)}}
	if cs := ev.findCandidates(); len(cs) != 0 {
		t.Errorf("info metric made candidate %s", cs[0].entity)
	}
	ev = &Evidence{Series: []Series{flatSeries("rollout_errors", labels, 0, 40)}}
	if cs := ev.findCandidates(); len(cs) == 0 {
		t.Errorf("a measurement's rise made no candidate")
	}
}

package critic

import (
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestTwoLevels(t *testing.T) {
	pts := func(vs ...float64) []facts.Point {
		out := make([]facts.Point, len(vs))
		for i, v := range vs {
			out[i] = facts.Point{T: time.Unix(int64(60*i), 0), V: v}
		}
		return out
	}
	cases := []struct {
		name string
		s    facts.Series
		want bool
	}{
		{"0/1 state", facts.Series{Downsampled: pts(0, 0, 1, 1)}, true},
		{"scaled state", facts.Series{Downsampled: pts(0, 0, 1.3, 1.3)}, true},
		{"a rate", facts.Series{Downsampled: pts(0.2, 0.5, 1, 3)}, false},
		{"summary only", facts.Series{Min: 0, Peak: 1, Latest: 1}, true},
	}
	for _, tc := range cases {
		if got := twoLevels(tc.s); got != tc.want {
			t.Errorf("%s: twoLevels = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSeriesOnsetOfTheAccusedOnly(t *testing.T) {
	early, late := time.Unix(100, 0), time.Unix(900, 0)
	series := []seriesView{
		{name: "node_memory_available", names: []string{"node-7"}, anomalous: true, onset: &early},
		{name: "errors", names: []string{"checkout"}, anomalous: true, onset: &late},
	}
	cases := []struct {
		name    string
		series  []seriesView
		accused []string
		want    *time.Time
		ok      bool
	}{
		{"other entity's earlier onset ignored", series, []string{"checkout"}, &late, true},
		{"no series of the accused", series, []string{"billing"}, nil, true},
		{"unnamed series: the pin's onset stands", []seriesView{{name: "x", anomalous: true, onset: &early}}, []string{"checkout"}, nil, false},
	}
	for _, tc := range cases {
		got, ok := seriesOnset(tc.series, tc.accused)
		if ok != tc.ok || (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(*tc.want)) {
			t.Errorf("%s: seriesOnset = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

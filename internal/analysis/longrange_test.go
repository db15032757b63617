package analysis

import (
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// The same series read over the incident window and over the hours
// before keeps the longer range, whichever pin came last; both pins are
// cited.
func TestSeriesKeepsLongerRange(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	over := func(from, n int, v func(i int) float64) facts.Series {
		s := facts.Series{Name: "aws_rds_burst_balance_average", Labels: map[string]string{"dimension_DBInstanceIdentifier": "herd-pg"}}
		for i := range n {
			s.Downsampled = append(s.Downsampled, facts.Point{T: t0.Add(time.Duration(from+i) * 30 * time.Minute), V: v(from + i)})
		}
		s.Count = n
		return s
	}
	fall := func(i int) float64 { return max(0, 100-float64(i)*20) }
	short := over(10, 3, fall) // the incident window: already 0
	long := over(0, 13, fall)  // the hours before: 100 down to 0
	for _, order := range [][]facts.Series{{short, long}, {long, short}} {
		ev := NewEvidence(&investigationv1.Alert{}, []*evidencev1.EvidencePin{
			pin(t, "p1", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{order[0]}),
			pin(t, "p2", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{order[1]}),
		})
		if len(ev.Series) != 1 {
			t.Fatalf("series = %d, want one", len(ev.Series))
		}
		s := ev.Series[0]
		if len(s.Downsampled) != 13 || s.Downsampled[0].V != 100 {
			t.Errorf("kept %d points from %v, want the 13 of the longer range", len(s.Downsampled), s.Downsampled[0].V)
		}
		if len(s.Cite.PinIDs) != 2 {
			t.Errorf("cites %v, want both pins", s.Cite.PinIDs)
		}
		if s.Labels["db_instance_identifier"] != "herd-pg" {
			t.Errorf("labels %v: a CloudWatch dimension names the database", s.Labels)
		}
	}
}

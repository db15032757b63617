package series

import (
	"math"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

var t0 = time.Date(2026, 2, 10, 8, 0, 0, 0, time.UTC)

func mk(vs ...float64) []facts.Point {
	out := make([]facts.Point, len(vs))
	for i, v := range vs {
		out[i] = facts.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v}
	}
	return out
}

func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

func TestSummarizeShapes(t *testing.T) {
	tests := []struct {
		name     string
		vals     []float64
		shape    string
		onset    int // -1: none
		baseline float64
		tol      float64
	}{
		{"flat noisy cpu", []float64{14.7, 13.6, 9.9, 11.1, 15.2, 14.1, 15.5, 14.4, 13.3, 18.7, 19.0, 18.7, 16.1, 14.4, 9.9}, ShapeFlat, -1, 13.6, 0.5},
		{"constant", []float64{5, 5, 5, 5, 5, 5}, ShapeFlat, -1, 5, 0},
		{"step up", []float64{20, 21, 19, 20, 22, 20, 85, 88, 86, 87, 89, 86}, ShapeStep, 6, 20, 0.6},
		{"step from zero", []float64{0, 0, 0, 0, 0, 120, 240, 360, 360, 365, 370, 372}, ShapeStep, 5, 0, 0},
		{"drop sustained", []float64{400, 402, 398, 401, 399, 40, 38, 41, 39, 40}, ShapeDrop, 5, 400, 1.5},
		{"creep up", []float64{10, 10.2, 10.1, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22}, ShapeCreep, 3, 10.1, 0.2},
		{"creep down storage", []float64{100, 99.9, 100, 95, 90, 85, 80, 75, 70, 65, 60, 55, 50, 45, 40}, ShapeCreep, 3, 100, 0.2},
		{"spike", []float64{50, 51, 49, 50, 52, 300, 51, 50, 49, 50, 51, 50}, ShapeSpike, 5, 50, 1},
		{"dip to zero and back", []float64{210, 212, 208, 211, 0, 0, 205, 209, 210, 211, 212, 210, 209, 208, 211}, ShapeSpike, 4, 210.5, 1},
		{"recovered plateau", []float64{5, 5, 6, 5, 40, 42, 41, 43, 40, 42, 6, 5, 5, 6}, ShapeRecovered, 4, 5, 0.6},
		{"single point", []float64{7}, ShapeFlat, -1, 7, 0},
		{"noisy healthy iops", []float64{1210, 1350, 1290, 1400, 1260, 1225, 1190, 1080, 1170, 1150, 1140, 1175, 1250, 1240, 1230}, ShapeFlat, -1, 1290, 0.5},
		{"window starts before a jump", []float64{15, 90, 92, 95, 91, 93, 94, 92, 96, 90}, ShapeStep, 1, 15, 0},
		{"hump then collapse", []float64{2000, 3500, 5000, 6100, 6500, 6600, 6550, 6400, 6300, 6100, 5700, 4800, 2600, 1400, 300}, ShapeDrop, 12, 6200, 400},
		{"staircase up", []float64{10, 10, 11, 10, 30, 31, 30, 29, 60, 61, 60, 62}, ShapeStep, 4, 10, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize("m", map[string]string{"a": "b"}, mk(tc.vals...))
			if s.Shape != tc.shape {
				t.Fatalf("shape = %q, want %q (baseline %v onset %v)", s.Shape, tc.shape, s.Baseline, s.OnsetAt)
			}
			switch {
			case tc.onset < 0 && s.OnsetAt != nil:
				t.Errorf("onset = %v, want none", s.OnsetAt)
			case tc.onset >= 0 && (s.OnsetAt == nil || !s.OnsetAt.Equal(at(tc.onset))):
				t.Errorf("onset = %v, want %v", s.OnsetAt, at(tc.onset))
			}
			if math.Abs(s.Baseline-tc.baseline) > tc.tol {
				t.Errorf("baseline = %v, want %v±%v", s.Baseline, tc.baseline, tc.tol)
			}
			if s.Count != len(tc.vals) || s.Labels["a"] != "b" {
				t.Errorf("count/labels wrong: %+v", s)
			}
		})
	}
}

func TestSummarizeStats(t *testing.T) {
	pts := mk(2, 4, 4, 4, 5, 5, 7, 9)
	// Shuffle order and add a NaN: Summarize must sort and skip it.
	pts[0], pts[7] = pts[7], pts[0]
	pts = append(pts, facts.Point{T: at(20), V: math.NaN()})
	s := Summarize("x", nil, pts)
	if s.Count != 8 || s.Mean != 5 || s.Stddev != 2 || s.Min != 2 || s.Peak != 9 || s.Latest != 9 {
		t.Fatalf("stats wrong: %+v", s)
	}
	if s.PeakAt == nil || !s.PeakAt.Equal(at(7)) {
		t.Errorf("peak at %v, want %v", s.PeakAt, at(7))
	}
	if s.Labels != nil {
		t.Errorf("labels should stay nil")
	}
	empty := Summarize("e", nil, nil)
	if empty.Count != 0 || empty.Shape != "" || empty.PeakAt != nil {
		t.Errorf("empty series: %+v", empty)
	}
}

func TestAnomalies(t *testing.T) {
	s := Summarize("x", nil, mk(50, 51, 49, 50, 52, 300, 51, 50, 49, 50, 51, 50))
	if len(s.Anomalies) != 1 || s.Anomalies[0].V != 300 {
		t.Fatalf("anomalies = %v, want the 300 point", s.Anomalies)
	}
	step := Summarize("x", nil, mk(20, 21, 19, 20, 22, 20, 85, 88, 86, 87, 89, 86))
	if len(step.Anomalies) != 6 {
		t.Errorf("step anomalies = %d, want the 6 elevated points", len(step.Anomalies))
	}
	flat := Summarize("x", nil, mk(14.7, 13.6, 9.9, 11.1, 15.2, 14.1, 15.5, 14.4, 13.3, 18.7, 19.0, 18.7, 16.1, 14.4, 9.9))
	if len(flat.Anomalies) != 0 {
		t.Errorf("flat noisy series has anomalies %v", flat.Anomalies)
	}
}

func TestDownsampleKeepsPeaks(t *testing.T) {
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = float64(i % 7)
	}
	vals[613] = 1e6
	vals[101] = -5
	d := Downsample(mk(vals...), MaxDownsampled)
	if len(d) > MaxDownsampled {
		t.Fatalf("len = %d > %d", len(d), MaxDownsampled)
	}
	var hasPeak, hasDip bool
	for i, p := range d {
		if i > 0 && p.T.Before(d[i-1].T) {
			t.Fatalf("not time ordered at %d", i)
		}
		hasPeak = hasPeak || p.V == 1e6
		hasDip = hasDip || p.V == -5
	}
	if !hasPeak || !hasDip {
		t.Errorf("peak kept %v, dip kept %v", hasPeak, hasDip)
	}
	short := Downsample(mk(1, 2, 3), MaxDownsampled)
	if len(short) != 3 {
		t.Errorf("short series changed: %v", short)
	}
}

func BenchmarkSummarize(b *testing.B) {
	vals := make([]float64, 1440)
	for i := range vals {
		vals[i] = 100 + float64(i%13)
		if i > 1000 {
			vals[i] += 400
		}
	}
	pts := mk(vals...)
	b.ReportAllocs()
	for b.Loop() {
		Summarize("bench", nil, pts)
	}
}

func TestLongSeriesStep(t *testing.T) {
	vals := make([]float64, 3000)
	for i := range vals {
		vals[i] = 100 + float64(i%5)
		if i >= 2100 {
			vals[i] += 400
		}
	}
	s := Summarize("long", nil, mk(vals...))
	if s.Shape != ShapeStep || s.OnsetAt == nil || s.OnsetAt.Sub(at(2100)).Abs() > 15*time.Minute || math.Abs(s.Baseline-102) > 1 {
		t.Fatalf("shape %s onset %v baseline %v", s.Shape, s.OnsetAt, s.Baseline)
	}
	if len(s.Downsampled) > MaxDownsampled {
		t.Errorf("downsampled = %d", len(s.Downsampled))
	}
}

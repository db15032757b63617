package graphrca

import (
	"errors"
	"math"
	"testing"
)

// chain: front -> mid -> leaf, front -> side, mid -> db
func testGraph() Graph {
	return Graph{Nodes: []string{"front", "mid", "leaf", "side", "db"}, Callees: map[string][]string{
		"front": {"mid", "side"},
		"mid":   {"leaf", "db"},
	}}
}

// frame builds a 5-row window: each node's latency Average row values, 100
// requests a row, availability 100.
func frame(lat map[string][]float64, avail map[string][]float64) Frame {
	f := Frame{Times: []int64{0, 300, 600, 900, 1200}, Cols: map[Column][]float64{}}
	for n, v := range lat {
		f.Cols[Column{n, MetricLatency, "Average"}] = v
		f.Cols[Column{n, MetricRequests, "Sum"}] = []float64{100, 100, 100, 100, 100}
	}
	for n, v := range avail {
		f.Cols[Column{n, MetricAvailability, "Average"}] = v
		f.Cols[Column{n, MetricRequests, "Sum"}] = []float64{100, 100, 100, 100, 100}
	}
	return f
}

func flat(v float64) []float64 { return []float64{v, v, v, v, v} }

func baseline(cols map[Column]float64) *Frame {
	f := &Frame{Cols: map[Column][]float64{}}
	for i := 0; i < 50; i++ {
		f.Times = append(f.Times, int64(i*300))
	}
	for c, v := range cols {
		s := make([]float64, 50)
		for i := range s {
			// small deterministic wobble
			s[i] = v * (1 + 0.01*math.Sin(float64(i)))
		}
		f.Cols[c] = s
	}
	return f
}

func TestRank(t *testing.T) {
	tests := []struct {
		name      string
		lat       map[string][]float64
		avail     map[string][]float64
		metric    string
		wantFirst string
		wantEmpty bool
	}{
		{
			name: "deep leaf fault explains its callers",
			lat: map[string][]float64{
				"front": {0.1, 0.1, 0.6, 0.3, 0.1}, "mid": {0.05, 0.05, 0.55, 0.2, 0.05},
				"leaf": {0.01, 0.01, 0.51, 0.1, 0.01}, "side": flat(0.02), "db": flat(0.01),
			},
			metric: MetricLatency, wantFirst: "leaf",
		},
		{
			name: "middle node with normal callees is the root",
			lat: map[string][]float64{
				"front": {0.1, 0.1, 0.6, 0.3, 0.1}, "mid": {0.05, 0.05, 0.55, 0.2, 0.05},
				"leaf": flat(0.01), "side": flat(0.02), "db": flat(0.01),
			},
			metric: MetricLatency, wantFirst: "mid",
		},
		{
			name: "node with its own excess beyond a slightly slower callee stays root",
			lat: map[string][]float64{
				"front": {0.1, 0.1, 0.6, 0.3, 0.1}, "mid": {0.05, 0.05, 0.55, 0.2, 0.05},
				"leaf": {0.01, 0.01, 0.05, 0.01, 0.01}, "side": flat(0.02), "db": flat(0.01),
			},
			metric: MetricLatency, wantFirst: "mid",
		},
		{
			name: "availability drop in a side dependency",
			avail: map[string][]float64{
				"front": {100, 100, 96, 97, 100}, "mid": flat(100), "leaf": flat(100),
				"side": {100, 100, 90, 92, 100}, "db": flat(100),
			},
			metric: MetricAvailability, wantFirst: "side",
		},
		{
			name: "target not anomalous gives an empty ranking",
			lat: map[string][]float64{
				"front": flat(0.1), "mid": {0.05, 0.05, 0.5, 0.05, 0.05},
				"leaf": flat(0.01), "side": flat(0.02), "db": flat(0.01),
			},
			metric: MetricLatency, wantEmpty: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Problem{Graph: testGraph(), Window: frame(tt.lat, tt.avail), TargetNode: "front",
				TargetMetric: tt.metric, TargetStat: "Average", TriggerRow: 1}
			res, err := Rank(p, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantEmpty {
				if len(res.Candidates) != 0 || res.Empty == "" {
					t.Fatalf("want empty ranking with a reason, got %+v", res)
				}
				return
			}
			if len(res.Candidates) == 0 || res.Candidates[0].Node != tt.wantFirst {
				t.Fatalf("want %s first, got %+v", tt.wantFirst, res)
			}
			if !res.Candidates[0].Root || res.Candidates[0].Reason == "" {
				t.Fatalf("first candidate must be a root with a reason: %+v", res.Candidates[0])
			}
		})
	}
}

func TestRankUsesBaselineNoise(t *testing.T) {
	// front's latency normally swings widely: a move inside that swing is
	// not an alert.
	lat := map[string][]float64{"front": {0.1, 0.1, 0.14, 0.1, 0.1}, "mid": flat(0.05), "leaf": flat(0.01), "side": flat(0.02), "db": flat(0.01)}
	p := Problem{Graph: testGraph(), Window: frame(lat, nil), TargetNode: "front", TargetMetric: MetricLatency, TargetStat: "Average", TriggerRow: 1}
	noisy := baseline(map[Column]float64{{"front", MetricLatency, "Average"}: 0.1})
	for i := range noisy.Cols[Column{"front", MetricLatency, "Average"}] {
		noisy.Cols[Column{"front", MetricLatency, "Average"}][i] = 0.1 + 0.03*math.Sin(float64(i))
	}
	p.Baseline = noisy
	res, err := Rank(p, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 0 {
		t.Fatalf("a change within normal noise must not name a culprit: %+v", res)
	}
	p.Baseline = nil
	res, err = Rank(p, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if res.TargetScore < DefaultConfig().GateZ {
		t.Fatalf("without a baseline the same move is a large relative change, got score %.1f", res.TargetScore)
	}
}

func TestRankBadProblem(t *testing.T) {
	good := Problem{Graph: testGraph(), Window: frame(map[string][]float64{"front": flat(1)}, nil), TargetNode: "front", TargetMetric: MetricLatency, TargetStat: "Average"}
	tests := []struct {
		name string
		mut  func(p *Problem)
	}{
		{"one row", func(p *Problem) { p.Window.Times = p.Window.Times[:1] }},
		{"unknown metric", func(p *Problem) { p.TargetMetric = "cpu" }},
		{"missing target column", func(p *Problem) { p.TargetNode = "nowhere" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			p.Window = Frame{Times: append([]int64(nil), good.Window.Times...), Cols: good.Window.Cols}
			tt.mut(&p)
			if _, err := Rank(p, DefaultConfig()); !errors.Is(err, ErrBadProblem) {
				t.Fatalf("want ErrBadProblem, got %v", err)
			}
		})
	}
}

func BenchmarkRank(b *testing.B) {
	lat := map[string][]float64{
		"front": {0.1, 0.1, 0.6, 0.3, 0.1}, "mid": {0.05, 0.05, 0.55, 0.2, 0.05},
		"leaf": {0.01, 0.01, 0.51, 0.1, 0.01}, "side": flat(0.02), "db": flat(0.01),
	}
	p := Problem{Graph: testGraph(), Window: frame(lat, nil), TargetNode: "front", TargetMetric: MetricLatency, TargetStat: "Average", TriggerRow: 1}
	for b.Loop() {
		if _, err := Rank(p, DefaultConfig()); err != nil {
			b.Fatal(err)
		}
	}
}

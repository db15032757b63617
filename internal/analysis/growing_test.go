package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// What grows with a resource running out is quoted: a gauge of the
// workload's pods that creeps up (goroutines), not its latency, its
// counters or another workload's gauges.
func TestGrowingWith(t *testing.T) {
	ev := NewEvidence(nil, nil)
	ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "wind", Name: "turbine-stream-6c9d-hdl55", Workload: "turbine-stream"}}}
	up := func(i int) float64 { return 200 + float64(i)*40 }
	ev.Series = []Series{
		mkSeries("go_goroutines", map[string]string{"pod": "turbine-stream-6c9d-hdl55"}, up),
		mkSeries("http_request_duration_seconds", map[string]string{"service": "turbine-stream"}, up),
		mkSeries("ws_messages_sent_total", map[string]string{"service": "turbine-stream"}, up),
		mkSeries("go_goroutines", map[string]string{"service": "fleet-api"}, up),
	}
	var f Finding
	ev.growingWith(&f, "turbine-stream")
	if len(f.Validated) != 1 || !strings.HasPrefix(f.Validated[0].Text, "go_goroutines of turbine-stream grows") {
		t.Fatalf("claims %+v, want the goroutines of turbine-stream only", f.Validated)
	}
}

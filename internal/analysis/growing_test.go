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

// A call that a dependency answers with a server status, in the words of
// several clients, or with "overloaded", is a dependency error; a duration
// or a count of 500 is not.
func TestDependencyErrorWords(t *testing.T) {
	for line, want := range map[string]bool{
		`WARN POST https://api.llm.example/v1/messages -> 529 {"error":{"type":"overloaded_error"}} retry 3/3 exhausted`: true,
		`upstream call failed status=500 host=rates.partner.example`:                                                     true,
		`GET https://maps.example/v2/route returned 507`:                                                                 true,
		`request to https://geo.example took latency=500 rows=512`:                                                       false,
	} {
		if got := depErrRe.MatchString(line); got != want {
			t.Errorf("depErrRe(%q) = %v, want %v", line, got, want)
		}
	}
}

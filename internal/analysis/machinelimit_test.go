package analysis

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A machine outside the cluster whose measurement sits at its published
// bound (its connection-tracking table full) is the suspect, and the
// reading is the resource, not "nothing found" nor the machine itself.
func TestMachineAtItsLimit(t *testing.T) {
	host := map[string]string{"instance": "gate-edge-4:9100"}
	ramp := func(from, to float64) []float64 {
		out := make([]float64, 30)
		for i := range out {
			out[i] = min(to, from+float64(i)*(to-from)/15)
		}
		return out
	}
	flat := func(v float64) []float64 {
		out := make([]float64, 30)
		for i := range out {
			out[i] = v
		}
		return out
	}
	alert := &investigationv1.Alert{Title: "gate-edge-4: TCP connect failures", Summary: "probe tcp_connect failing 30%"}
	_, d := analyze(t, alert,
		pin(t, "prom", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{
			metric("node_nf_conntrack_entries", host, ramp(20000, 262144)...),
			metric("node_nf_conntrack_entries_limit", host, flat(262144)...),
			metric("node_load1", host, flat(0.4)...),
		}))
	if d.GetCategory() != catResource || d.GetRootCauseEntity() != "node/gate-edge-4" {
		t.Errorf("diagnosis %s %s: %s; want the machine's resource at its limit", d.GetCategory(), d.GetRootCauseEntity(), d.GetRootCause())
	}
	if strings.Contains(d.GetRootCause(), "No fault found") {
		t.Errorf("a table at its bound read as nothing found: %s", d.GetRootCause())
	}
}

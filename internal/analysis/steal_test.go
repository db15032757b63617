package analysis

import (
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Steal time is read by its state label or its name, in the exporters'
// vocabularies; other CPU states and other series are not steal.
func TestCPUSteal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"node_cpu_seconds_total", map[string]string{"mode": "steal", "cpu": "0"}, true},
		{"system_cpu_time_seconds_total", map[string]string{"state": "steal"}, true},
		{"system.cpu.time", map[string]string{"cpu.state": "steal", "state": "steal"}, true},
		{"cpu_usage_steal", nil, true},
		{"node_cpu_seconds_total", map[string]string{"mode": "user"}, false},
		{"node_cpu_seconds_total", map[string]string{"mode": "iowait"}, false},
		{"vault_token_steal_total", map[string]string{"mode": "steal"}, false}, // not a CPU series
	} {
		if got := cpuSteal(facts.Series{Name: tc.name, Labels: tc.labels}); got != tc.want {
			t.Errorf("cpuSteal(%s%v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// A VM's steal time that rose, with nothing else failing and an alert that
// names no workload (a chat message carrying only a host): the host is the
// suspect and the reading is infrastructure, not "no fault found"; the same
// with the OpenTelemetry state label. Without the rise, no fault is found.
func TestStealTimeReadsAsTheHost(t *testing.T) {
	rise := []float64{10, 11, 12, 13, 14, 40, 80, 120, 160, 200}
	flat := []float64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	for _, tc := range []struct {
		name    string
		key     string
		vals    []float64
		wantCat investigationv1.RootCauseCategory
	}{
		{"node_exporter", "mode", rise, catInfra},
		{"opentelemetry", "state", rise, catInfra},
		{"no rise", "mode", flat, catHealthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steal := metric("node_cpu_seconds_total", map[string]string{"instance": "kiln-vm-4:9100", tc.key: "steal"}, tc.vals...)
			user := metric("node_cpu_seconds_total", map[string]string{"instance": "kiln-vm-4:9100", tc.key: "user"}, 100, 160, 220, 280, 340, 400, 460, 520, 580, 640)
			logs := []facts.LogLine{{Timestamp: at(-3), Service: "glaze-planner", Level: "INFO", Message: "batch plan computed for kiln 4"}}
			alert := &investigationv1.Alert{AlertName: "glaze planner slow on kiln-vm-4"}
			_, d := analyze(t, alert,
				pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{steal, user}),
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, logs))
			if d.GetCategory() != tc.wantCat {
				t.Fatalf("category %v, want %v: %s", d.GetCategory(), tc.wantCat, d.GetRootCause())
			}
			if tc.wantCat == catInfra && (!strings.Contains(d.GetRootCause(), "kiln-vm-4") || !strings.Contains(text(d), "steal")) {
				t.Errorf("root cause %q: want the host and its steal time", d.GetRootCause())
			}
		})
	}
}

// A machine's own failing series makes its host a suspect when no workload
// claims it; an application's counter scraped from the same host is the
// process's, not the machine's.
func TestHostCandidatesAreMachineSeries(t *testing.T) {
	rise := []float64{10, 11, 12, 13, 14, 40, 80, 120, 160, 200}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"node_cpu_seconds_total", true},
		{"system_cpu_time_seconds_total", true},
		{"kiln_batch_errors_total", false},
	} {
		labels := map[string]string{"instance": "kiln-vm-4:9100"}
		if tc.name != "kiln_batch_errors_total" {
			labels["mode"], labels["state"] = "steal", "steal"
		}
		ev := NewEvidence(&investigationv1.Alert{AlertName: "kiln slow"}, []*evidencev1.EvidencePin{
			pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{metric(tc.name, labels, rise...)})})
		got := false
		for _, c := range ev.anomalyCandidates() {
			if c.entity == "node/kiln-vm-4" {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s: host a suspect %v, want %v", tc.name, got, tc.want)
		}
	}
}

// "No fault found" is not said while a failure series rose, even one no
// workload claims (an edge proxy's 5xx counter scraped by host:port, an
// alert that names no service).
func TestNothingFoundNotWithAFailingSeries(t *testing.T) {
	logs := []facts.LogLine{{Timestamp: at(-3), Service: "pier-web", Level: "INFO", Message: "request served"}}
	for _, tc := range []struct {
		name string
		vals []float64
		want bool
	}{
		{"5xx rose", []float64{30, 30, 30, 30, 30, 30, 40, 400, 1400, 3400, 6400, 8400, 9400}, false},
		{"5xx flat", []float64{30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 31, 31, 31}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := metric("edge_backend_http_responses_total", map[string]string{"instance": "pier-lb-01:8405", "code": "5xx"}, tc.vals...)
			ev := NewEvidence(&investigationv1.Alert{AlertName: "pier-web slow"}, []*evidencev1.EvidencePin{
				pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{errs}),
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, logs)})
			if _, got := ev.nothingFound(); got != tc.want {
				t.Fatalf("nothing found %v, want %v", got, tc.want)
			}
		})
	}
}

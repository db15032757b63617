package analysis

import (
	"slices"
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestDemandSeries(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		svc    string
		want   bool
	}{
		{"http_requests_total", map[string]string{"service": "cart"}, "cart", true},
		{"http_server_request_duration_seconds_count", map[string]string{"service_name": "cart"}, "cart", true},
		{"http_requests_total", map[string]string{"service": "search"}, "cart", false},
		{"cart_upstream_requests_total", nil, "cart", false},
		{"http_client_request_duration_seconds_count", nil, "cart", false},
		{"rpc_calls_total", map[string]string{"span_kind": "client"}, "cart", false},
		{"container_cpu_usage_seconds_total", nil, "cart", false},
	}
	for _, tc := range tests {
		if got := demandSeries(facts.Series{Name: tc.name, Labels: tc.labels}, tc.svc); got != tc.want {
			t.Errorf("demandSeries(%s %v, %s) = %v, want %v", tc.name, tc.labels, tc.svc, got, tc.want)
		}
	}
}

func TestRemoteLimit(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{`upstream rate limited status=429 upstream=geo-vendor`, true},
		{`enrich failed err="mapsco: 429 Too Many Requests after 3 attempts"`, true},
		{`POST https://api.partner.example/v2/quote returned 429`, true},
		{`rejecting request: rate limit of 100 rps per client exceeded`, false}, // our own limiter
		{`connection pool exhausted`, false},
	}
	for _, tc := range tests {
		if got := remoteLimit(tc.msg, "self"); got != tc.want {
			t.Errorf("remoteLimit(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

func TestClassifyLogsPrefersTheRecordHeader(t *testing.T) {
	at := time.Date(2028, 1, 18, 11, 35, 3, 0, time.UTC)
	line := func(msg string, ts *time.Time) LogLine {
		return LogLine{LogLine: facts.LogLine{Message: msg, Level: "FATAL", Timestamp: ts}}
	}
	tests := []struct {
		name  string
		lines []LogLine
		want  string
	}{
		{"continuation sorted first", []LogLine{line("[signal SIGSEGV: segmentation violation code=0x1]", nil), line("panic: runtime error: invalid memory address or nil pointer dereference", &at)}, "panic: runtime error"},
		{"header first", []LogLine{line("panic: runtime error: index out of range", &at), line("[signal SIGSEGV: segmentation violation]", nil)}, "index out of range"},
		{"a higher-ranked cause still wins", []LogLine{line("panic: nil pointer", &at), line("config error: missing required key DB_URL", nil)}, "missing required key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := classifyLogs(tc.lines)
			if !ok || !strings.Contains(c.line.Message, tc.want) {
				t.Errorf("classifyLogs = %q (%v), want the line with %q", c.line.Message, ok, tc.want)
			}
		})
	}
}

func TestDemandSeriesLeavesOutMachinery(t *testing.T) {
	for _, name := range []string{"go_gc_duration_seconds_count", "pg_stat_statements_calls_total", "redis_commands_processed_total", "kube_pod_container_status_restarts_total"} {
		if demandSeries(facts.Series{Name: name, Labels: map[string]string{"service": "cart"}}, "cart") {
			t.Errorf("demandSeries(%s) = true: a runtime's, datastore's or platform's activity is not demand", name)
		}
	}
	if !demandSeries(facts.Series{Name: "http_server_request_duration_seconds_count", Labels: map[string]string{"service": "cart"}}, "cart") {
		t.Error("the server's request count is demand")
	}
}

func TestCreepingLatencyKeepsTheServicesEarlierRelease(t *testing.T) {
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	creep := mkSeries("http_server_request_duration_seconds", map[string]string{"service": "cart", "namespace": "shop"}, func(i int) float64 {
		if i < 20 {
			return 0.2
		}
		return 0.2 + float64(i-20)*0.1
	})
	onset := t0.Add(20 * time.Minute)
	creep.Shape, creep.OnsetAt = "creep", &onset
	tests := []struct {
		name    string
		service string
		gap     time.Duration // release finished this long before the onset (minute 20)
		want    bool
	}{
		{"the service's release 70 minutes before a creep", "cart", 70 * time.Minute, true},
		{"another service's release 70 minutes before", "search", 70 * time.Minute, false},
		{"the service's release three hours before", "cart", 3 * time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fin := t0.Add(20*time.Minute - tc.gap)
			ev := NewEvidence(&investigationv1.Alert{AlertName: "HighLatency", Service: "cart", Namespace: "shop"}, nil)
			ev.Series = []Series{creep}
			ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: tc.service, Revision: "r9", PreviousRevision: "r8", StartedAt: &fin, FinishedAt: &fin}}}
			got := false
			for _, f := range detectMetricRegression(ev) {
				got = got || strings.Contains(f.Statement, "Release r9")
			}
			if got != tc.want {
				t.Errorf("release blamed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidatedMergesOneFactSeenAgain(t *testing.T) {
	var f Finding
	f.validated(`log (a): “submit batch CB-88135 failed: tls: expired certificate”`, Cite{PinIDs: []string{"p1"}})
	f.validated(`log (a): “submit batch CB-88138 failed: tls: expired certificate”`, Cite{PinIDs: []string{"p2"}})
	f.validated(`log (a): “connection refused by ledger”`, Cite{PinIDs: []string{"p3"}})
	if len(f.Validated) != 2 {
		t.Fatalf("claims = %d (%v), want 2: one per fact", len(f.Validated), f.Validated)
	}
	if got := f.Validated[0].PinIDs; !slices.Equal(got, []string{"p1", "p2"}) {
		t.Errorf("merged claim cites %v, want both pins", got)
	}
}

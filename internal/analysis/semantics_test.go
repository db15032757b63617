package analysis

import (
	"testing"

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

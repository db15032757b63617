package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/server"
)

// TestGatewayServesMetrics: every process's gateway serves the default
// registry (Go and process collectors, rcamesh's metrics) in the Prometheus
// text format, for GET only.
func TestGatewayServesMetrics(t *testing.T) {
	metrics.PinsPublished.Add(0) // registered at init; make sure the package is linked
	h := server.NewGateway(nil, server.GatewayConfig{}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{"go_goroutines ", "process_cpu_seconds_total ", "rcamesh_pins_published_total ", "rcamesh_investigations_started_total "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", rec.Code)
	}
}

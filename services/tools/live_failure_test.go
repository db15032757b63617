package tools

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/live"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// TestLiveIntegrationFailuresAreEvidence points the live clients at servers
// that misbehave: each call ends as a failed tool result (recorded as a pin,
// evidence of absence), never a crash or a hang.
func TestLiveIntegrationFailuresAreEvidence(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	servers := map[string]http.HandlerFunc{
		"garbage": func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>gateway error</html>") },
		"unauthorized": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"error":"no"}`)
		},
		// Answers far later than the tool timeout.
		"timeout": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		},
	}
	for name, h := range servers {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			metrics, _, err := live.Prometheus(&integrations.Prometheus{URL: srv.URL, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			logs, err := live.Logs(&integrations.Logs{Type: integrations.LogsLoki, URL: srv.URL, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			set := &backend.Set{Name: "live", Metrics: metrics, Logs: logs,
				Sources: map[string]string{backend.AreaMetrics: "prometheus", backend.AreaLogs: "loki"}}
			s := newService(t, set, func(c *Config) { c.Timeout = 300 * time.Millisecond })
			for _, call := range []struct {
				intent string
				params map[string]any
			}{
				{"query_prometheus", map[string]any{"query": "up"}},
				{"search_logs", map[string]any{"query": "error", "namespace": "shop"}},
			} {
				params, _ := structpb.NewStruct(call.params)
				done := make(chan struct{})
				var resp *toolsv1.ExecuteToolResponse
				var err error
				go func() {
					defer close(done)
					resp, err = s.ExecuteTool(context.Background(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: call.intent, Params: params,
						TriggeredBy: evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT})
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s hung against a %s server", call.intent, name)
				}
				if err != nil {
					t.Fatalf("%s: an integration failure must be a tool result, not an RPC error: %v", call.intent, err)
				}
				r := resp.GetResult()
				if r.GetSuccess() || r.GetError() == "" {
					t.Fatalf("%s against a %s server: want a failed result with an error, got %+v", call.intent, name, r)
				}
				if resp.GetPin().GetId() == "" || resp.GetPin().GetSuccess() {
					t.Fatalf("%s: the failure must still be recorded as a pin: %+v", call.intent, resp.GetPin())
				}
				if name == "unauthorized" && !strings.Contains(strings.ToLower(r.GetError()), "401") && !strings.Contains(r.GetError(), "credentials") && !strings.Contains(strings.ToLower(r.GetError()), "unauthorized") {
					t.Errorf("%s: a 401 must say so: %s", call.intent, r.GetError())
				}
			}
		})
	}
}

// TestResolveIntegrationsHealthOnDemand: a live integration that fails its
// health check says why in ResolveIntegrations.
func TestResolveIntegrationsHealthOnDemand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"status":"error","errorType":"unauthorized","error":"bad token"}`)
	}))
	defer srv.Close()
	set, _ := live.Build(&integrations.Config{Prometheus: &integrations.Prometheus{URL: srv.URL, Timeout: 5 * time.Second}}, slog.New(slog.DiscardHandler))
	s := newService(t, set, nil)
	resp, err := s.ResolveIntegrations(context.Background(), &toolsv1.ResolveIntegrationsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range resp.GetIntegrations() {
		if st.GetName() == backend.AreaMetrics {
			if !strings.Contains(st.GetReason(), "health check failed") {
				t.Fatalf("prometheus status does not report the failed check: %+v", st)
			}
			return
		}
	}
	t.Fatal("no prometheus entry")
}

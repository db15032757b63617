package router

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
)

func TestGateway(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := runtime.NewServeMux()
	if err := h.svc.RegisterGateway(ctx, mux, h.conn); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		want                     []string
	}{
		{"command", http.MethodPost, "/api/v4/session/s1/investigate",
			`{"command": "/logs pod=auth-5b6q9 previous=true", "context": {"active_namespace": "payments"}}`, 200,
			[]string{`"status":"INVESTIGATE_STATUS_EXECUTING"`, `"pathUsed":"PATH_USED_FAST"`, `"pinId":"pin-`, `"filledFromContext":["namespace"]`}},
		{"quick action", http.MethodPost, "/api/v4/session/s1/investigate",
			`{"quick_action": {"intent": "fetch_pod_logs", "params": {"pod": "auth-5b6q9", "previous": true}}, "context": {"active_namespace": "payments"}}`, 200,
			[]string{`"intent":"fetch_pod_logs"`, `"previous":true`}},
		{"none", http.MethodPost, "/api/v4/session/s1/investigate", `{"context": {}}`, 400,
			[]string{"one of command, query or quick_action is required"}},
		{"two inputs", http.MethodPost, "/api/v4/session/s1/investigate", `{"command": "/pods", "query": "pods"}`, 400, nil},
		{"unknown command", http.MethodPost, "/api/v4/session/s1/investigate", `{"command": "/lgs"}`, 400, []string{"did you mean /logs"}},
		{"query unresolved", http.MethodPost, "/api/v4/session/s1/investigate", `{"query": "sing a song"}`, 200,
			[]string{`"status":"INVESTIGATE_STATUS_UNRESOLVED"`, "could not map"}},
		{"tools", http.MethodGet, "/api/v4/session/s1/tools", "", 200, []string{`"intent":"fetch_pod_logs"`, `"slashCommand":"/logs"`, `"nextPageToken":""`}},
		{"tools page", http.MethodGet, "/api/v4/session/s1/tools?page_size=1", "", 200, []string{`"tools":[{`, `"nextPageToken":"djE6`}},
		{"tools bad page token", http.MethodGet, "/api/v4/session/s1/tools?page_token=bogus", "", 400, []string{"page_token"}},
		{"tools bad page size", http.MethodGet, "/api/v4/session/s1/tools?page_size=-1", "", 400, []string{"page_size"}},
		{"chat", http.MethodPost, "/api/v4/session/s1/chat", `{"message": "any recent deploys?", "context": {"active_service": "checkout"}}`, 200,
			[]string{`"intent":"get_deploy_history"`, `"citedPinIds":["pin-`}},
		{"suggestions", http.MethodGet, "/api/v4/session/s1/suggestions", "", 200, []string{`"chips":[]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.wantCode, b)
			}
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("body lacks %s: %s", w, b)
				}
			}
		})
	}
}

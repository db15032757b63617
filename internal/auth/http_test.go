package auth_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/auth"
)

const (
	amToken   = "alertmanager-webhook-token-0123"
	grafanaPw = "grafana-webhook-password-0123"
	pdSecret  = "pagerduty-signing-secret-0123"
)

func webhooksFile(t *testing.T) string {
	t.Helper()
	return write(t, "webhooks.yaml", `sources:
  alertmanager:
    bearer_token_file: `+write(t, "am", amToken)+`
  grafana:
    basic_auth: {username: grafana, password_file: `+write(t, "gf", grafanaPw)+`}
  pagerduty:
    pagerduty_signing_secret_file: `+write(t, "pd", pdSecret)+`
`)
}

// echo answers 200 with the principal the middleware passed on.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p := auth.PrincipalFrom(r.Context())
	if r.Header.Get("Authorization") != "" || r.Header.Get("Grpc-Metadata-X-Rcamesh-Delegate-Roles") != "" {
		http.Error(w, "a credential header leaked to the gateway", 500)
		return
	}
	body, _ := io.ReadAll(r.Body)
	io.WriteString(w, p.Name+" "+string(body))
})

func TestMiddleware(t *testing.T) {
	cfg := auth.Config{TokensFile: tokensFile(t), WebhooksFile: webhooksFile(t), CORSOrigins: []string{"https://ops.example.com"}}
	a, err := auth.New(context.Background(), cfg, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, err := auth.New(context.Background(), auth.Config{}, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	pdBody := `{"event":{"event_type":"incident.triggered"}}`
	mac := hmac.New(sha256.New, []byte(pdSecret))
	mac.Write([]byte(pdBody))
	pdSig := "v1=" + hex.EncodeToString(mac.Sum(nil))

	type req struct {
		method, path, body string
		header             map[string]string
		basic              [2]string
	}
	tests := []struct {
		name     string
		a        *auth.Authenticator
		r        req
		want     int
		wantBody string
	}{
		{"no token", a, req{method: "GET", path: "/api/v4/sessions"}, 401, ""},
		{"unknown token", a, req{method: "GET", path: "/api/v4/sessions", header: map[string]string{"Authorization": "Bearer nope"}}, 401, ""},
		{"token", a, req{method: "GET", path: "/api/v4/sessions", header: map[string]string{"Authorization": "Bearer " + readToken}}, 200, "token:alice"},
		{"cross-origin text/plain POST, auth on", a, req{method: "POST", path: "/api/v4/session/s/investigate", body: `{"command":"/logs"}`,
			header: map[string]string{"Origin": "https://evil.example.com", "Content-Type": "text/plain", "Authorization": "Bearer " + steerToken}}, 403, ""},
		{"cross-origin text/plain POST, auth off", off, req{method: "POST", path: "/api/v4/session/s/investigate", body: `{"command":"/logs"}`,
			header: map[string]string{"Origin": "https://evil.example.com", "Content-Type": "text/plain"}}, 403, ""},
		{"same-origin text/plain POST, auth off", off, req{method: "POST", path: "/api/v4/session/s/investigate", body: `{}`,
			header: map[string]string{"Origin": "http://example.com", "Content-Type": "text/plain"}}, 415, ""},
		{"allowed origin, text/plain", a, req{method: "POST", path: "/api/v4/session/s/chat", body: `{}`,
			header: map[string]string{"Origin": "https://ops.example.com", "Content-Type": "text/plain", "Authorization": "Bearer " + steerToken}}, 415, ""},
		{"allowed origin, JSON, token", a, req{method: "POST", path: "/api/v4/session/s/chat", body: `{}`,
			header: map[string]string{"Origin": "https://ops.example.com", "Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer " + steerToken}}, 200, "token:bob"},
		{"form POST", a, req{method: "POST", path: "/api/v4/alerts", body: `a=b`,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer " + adminToken}}, 415, ""},
		{"webhook bearer", a, req{method: "POST", path: "/api/v4/alerts/alertmanager", body: `{}`,
			header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + amToken}}, 200, "webhook:alertmanager"},
		{"webhook bearer of another source", a, req{method: "POST", path: "/api/v4/alerts/grafana", body: `{}`,
			header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + amToken}}, 401, ""},
		{"webhook bearer on another route", a, req{method: "GET", path: "/api/v4/sessions",
			header: map[string]string{"Authorization": "Bearer " + amToken}}, 401, ""},
		{"webhook basic auth", a, req{method: "POST", path: "/api/v4/alerts/grafana", body: `{}`,
			header: map[string]string{"Content-Type": "application/json"}, basic: [2]string{"grafana", grafanaPw}}, 200, "webhook:grafana"},
		{"webhook basic auth, wrong user", a, req{method: "POST", path: "/api/v4/alerts/grafana", body: `{}`,
			header: map[string]string{"Content-Type": "application/json"}, basic: [2]string{"other", grafanaPw}}, 401, ""},
		{"pagerduty signature", a, req{method: "POST", path: "/api/v4/alerts/pagerduty", body: pdBody,
			header: map[string]string{"Content-Type": "application/json", "X-PagerDuty-Signature": "v1=00," + pdSig}}, 200, "webhook:pagerduty " + pdBody},
		{"pagerduty signature of another body", a, req{method: "POST", path: "/api/v4/alerts/pagerduty", body: pdBody + " ",
			header: map[string]string{"Content-Type": "application/json", "X-PagerDuty-Signature": pdSig}}, 401, ""},
		{"API token on intake", a, req{method: "POST", path: "/api/v4/alerts", body: `{}`,
			header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + adminToken}}, 200, "token:root"},
		{"token as basic-auth password", a, req{method: "POST", path: "/api/v4/alerts", body: `{}`,
			header: map[string]string{"Content-Type": "application/json"}, basic: [2]string{"x", adminToken}}, 200, "token:root"},
		{"delegation header from the caller", a, req{method: "GET", path: "/api/v4/sessions",
			header: map[string]string{"Authorization": "Bearer " + readToken, "Grpc-Metadata-X-Rcamesh-Delegate-Roles": "admin"}}, 200, "token:alice"},
		{"auth off, no token", off, req{method: "GET", path: "/api/v4/sessions"}, 200, "anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.r.method, "http://example.com"+tt.r.path, strings.NewReader(tt.r.body))
			for k, v := range tt.r.header {
				r.Header.Set(k, v)
			}
			if tt.r.basic[0] != "" {
				r.SetBasicAuth(tt.r.basic[0], tt.r.basic[1])
			}
			w := httptest.NewRecorder()
			tt.a.Middleware(1<<20, echo).ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body.String())
			}
			if tt.wantBody != "" && !strings.HasPrefix(w.Body.String(), tt.wantBody) {
				t.Errorf("body %q, want prefix %q", w.Body.String(), tt.wantBody)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			for _, secret := range []string{readToken, steerToken, adminToken, amToken, grafanaPw, pdSecret} {
				if strings.Contains(w.Body.String(), secret) {
					t.Errorf("the response shows a secret: %s", w.Body.String())
				}
			}
		})
	}
}

func TestCORSPreflight(t *testing.T) {
	a, err := auth.New(context.Background(), auth.Config{TokensFile: tokensFile(t), CORSOrigins: []string{"https://ops.example.com"}}, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]int{"https://ops.example.com": 204, "https://evil.example.com": 403} {
		r := httptest.NewRequest("OPTIONS", "http://rcamesh:8080/api/v4/session/s/chat", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		a.Middleware(1<<20, echo).ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("preflight from %s: %d, want %d", origin, w.Code, want)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); (want == 204) != (got == origin) {
			t.Errorf("preflight from %s: Access-Control-Allow-Origin %q", origin, got)
		}
	}
}

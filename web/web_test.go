package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		method, path string
		code         int
		contains     string
	}{
		{"GET", "/", 200, `<div id="app">`},
		{"GET", "/static/app.js", 200, "usePinStream"},
		{"GET", "/static/vendor/htm-preact-standalone-3.1.1.js", 200, "useState"},
		{"GET", "/static/style.css", 200, ".card.pending"},
		{"GET", "/nope", 404, ""},
		{"POST", "/", 405, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.contains) {
			t.Errorf("%s %s: %d %q", tt.method, tt.path, rec.Code, rec.Body.String()[:min(80, rec.Body.Len())])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Header().Get("Content-Security-Policy") == "" {
		t.Error("no CSP header")
	}
	_ = http.MethodGet
}

package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRequireRole(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		name    string
		enabled bool
		p       *Principal
		want    int
	}{
		{"auth off: anyone", false, nil, http.StatusNoContent},
		{"steer token", true, &Principal{Name: "alice", Roles: []Role{RoleSteer}}, http.StatusNoContent},
		{"admin includes steer", true, &Principal{Name: "root", Roles: []Role{RoleAdmin}}, http.StatusNoContent},
		{"read-only token refused", true, &Principal{Name: "bob", Roles: []Role{RoleRead}}, http.StatusForbidden},
		{"anonymous refused", true, &Principal{Name: "anonymous"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Authenticator{enabled: tc.enabled}
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tc.p != nil {
				r = r.WithContext(WithPrincipal(r.Context(), tc.p))
			}
			w := httptest.NewRecorder()
			a.RequireRole(RoleSteer, ok).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status %d, want %d", w.Code, tc.want)
			}
		})
	}
}

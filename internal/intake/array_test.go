package intake

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A body that is a JSON array of alarms (Apache SkyWalking's hook) reaches
// Parse wrapped in an object and is read as the array: one alert per
// element. Objects and other paths pass through unchanged.
func TestArrayPayload(t *testing.T) {
	raw := `[{"scopeId":1,"name":"ledger-api","ruleName":"service_resp_time_rule","alarmMessage":"Response time of service ledger-api is more than 1000ms","startTime":1813114800000},
	 {"scopeId":1,"name":"ledger-api","ruleName":"service_sla_rule","alarmMessage":"Successful rate of service ledger-api is lower than 80%","startTime":1813114860000}]`
	as, err := Parse(WrapArray([]byte(raw)), "")
	if err != nil {
		t.Fatalf("Parse(wrapped array): %v", err)
	}
	if len(as) != 2 {
		t.Fatalf("got %d alerts, want 2", len(as))
	}
	obj := []byte(`{"alert_name":"X"}`)
	if got := WrapArray(obj); string(got) != string(obj) {
		t.Errorf("an object was rewritten: %s", got)
	}

	var seen string
	h := ArrayBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = string(b)
	}))
	for _, tc := range []struct {
		method, path, body string
		wrapped            bool
	}{
		{http.MethodPost, "/api/v4/alerts", raw, true},
		{http.MethodPost, "/api/v4/alerts/skywalking", raw, true},
		{http.MethodPost, "/api/v4/alerts", `{"alert_name":"X"}`, false},
		{http.MethodPost, "/api/v4/sessions", raw, false},
	} {
		seen = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if got := strings.HasPrefix(seen, `{"`+ArrayField+`":`); got != tc.wrapped {
			t.Errorf("%s %s: wrapped=%v, want %v (%.60s)", tc.method, tc.path, got, tc.wrapped, seen)
		}
	}
}

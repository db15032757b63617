package analysis

import "testing"

func TestProxyFlag(t *testing.T) {
	tests := []struct {
		msg    string
		flag   string
		failed bool
	}{
		{`[2027-11-08T16:20:11.000Z] "POST /api/visits HTTP/1.1" 502 UC 0 95 3 - "10.2.0.4"`, "UC", true},
		{`[2026-01-02T10:00:00.000Z] "GET /v1/quote HTTP/2" 503 UH 0 19 0 - "-"`, "UH", true},
		{`{"response_code":503,"response_flags":"UF,URX","upstream_cluster":"outbound|8080||fare.svc"}`, "UF", true},
		{`access method=GET path=/x status=504 response_flags=UT`, "UT", true},
		{`[2026-01-02T10:00:00.000Z] "GET /health HTTP/1.1" 200 - 0 2 1 - "-"`, "", false},
		{`10.0.8.2 - - "POST /v1/orders HTTP/1.1" 504 160 upstream_response_time=30.001`, "", true}, // a server error without a flag
		{`"GET /search HTTP/1.1" 404 NR 0 0 0 - "-"`, "NR", true},
		{`user CHG-12 set status=active`, "", false},
	}
	for _, tc := range tests {
		flag, row, ok := proxyFlag(tc.msg)
		if flag != tc.flag || ok != (tc.flag != "") {
			t.Errorf("proxyFlag(%q) = %q %v, want %q", tc.msg, flag, ok, tc.flag)
		}
		if ok && row.what == "" {
			t.Errorf("flag %s has no meaning", flag)
		}
		if got := failedRequestLine(tc.msg); got != tc.failed {
			t.Errorf("failedRequestLine(%q) = %v, want %v", tc.msg, got, tc.failed)
		}
	}
}

package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Refused requests (4xx) with no server error, restart or unready pod are
// the clients' noise, not the service's failure, and the access log says
// who sent them; a server error, a restart or a slower service is not
// noise.
func TestClientNoise(t *testing.T) {
	client := seriesChange{s: Series{Series: facts.Series{Name: "http_responses_total", Labels: map[string]string{"code": "400", "pod": "booking-1"}}}, r: rise{head: 0, tail: 4, peak: 5, shape: "step"}}
	server := seriesChange{s: Series{Series: facts.Series{Name: "http_responses_total", Labels: map[string]string{"code": "502", "pod": "booking-1"}}}, r: rise{head: 0, tail: 2, peak: 3, shape: "step"}}
	slow := seriesChange{s: Series{Series: facts.Series{Name: "http_request_duration_seconds", Labels: map[string]string{"pod": "booking-1"}}}, r: rise{head: 0.1, tail: 0.9, peak: 1, shape: "step"}}
	access := LogLine{LogLine: facts.LogLine{Service: "edge", Message: `203.0.113.9 - - [01/Jan/2027:10:00:00 +0000] "GET /wp-login.php HTTP/1.1" 404 153 "-" "masscan/1.3"`}}
	refused := func(ip string) LogLine {
		return LogLine{LogLine: facts.LogLine{Pod: "booking-1", Level: "ERROR", Message: "Invalid HTTP_HOST header: '" + ip + "'. You may need to add '" + ip + "' to ALLOWED_HOSTS."}}
	}
	for _, tc := range []struct {
		name string
		c    candidate
		want bool
	}{
		{"client errors only", candidate{kind: "workload", entity: "deployment/shop/booking", name: "booking", changes: []seriesChange{client}}, true},
		{"a server error too", candidate{kind: "workload", name: "booking", changes: []seriesChange{client, server}}, false},
		{"slower as well", candidate{kind: "workload", name: "booking", changes: []seriesChange{client, slow}}, false},
		{"a pod restarted", candidate{kind: "workload", name: "booking", changes: []seriesChange{client}, restarts: 2}, false},
		{"no client-error series", candidate{kind: "workload", name: "booking", changes: []seriesChange{slow}}, false},
		{"no series, its errors name the outside sender", candidate{kind: "workload", entity: "deployment/shop/booking", name: "booking", errLines: []LogLine{refused("203.0.113.9")}}, true},
		{"no series, its errors name someone else", candidate{kind: "workload", name: "booking", errLines: []LogLine{refused("203.0.113.90")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Logs: []LogLine{access}}
			f, ok := ev.clientNoise(&tc.c)
			if ok != tc.want {
				t.Fatalf("noise %v, want %v (%s)", ok, tc.want, f.Statement)
			}
			if ok && (!f.Healthy || f.Category != catHealthy || !strings.Contains(f.Statement, "masscan/1.3") || !strings.Contains(f.Statement, "203.0.113.9")) {
				t.Errorf("finding %v %s: %q must be healthy and name the sender", f.Healthy, f.Category, f.Statement)
			}
		})
	}
}

// Refusals of a caller inside the system (an authorisation policy, a
// route) are a fault to find, not noise; nor are refusals nobody logged.
func TestClientNoiseNeedsAnOutsideSender(t *testing.T) {
	client := seriesChange{s: Series{Series: facts.Series{Name: "http_responses_total", Labels: map[string]string{"code": "403"}}}, r: rise{head: 0, tail: 4, peak: 5, shape: "step"}}
	inside := LogLine{LogLine: facts.LogLine{Message: `10.4.2.17 - - "POST /v1/translate HTTP/1.1" 403 12 "-" "grpc-go/1.60"`}}
	for name, logs := range map[string][]LogLine{"an internal caller": {inside}, "no access log": nil} {
		ev := &Evidence{Logs: logs}
		if f, ok := ev.clientNoise(&candidate{kind: "workload", name: "interp", changes: []seriesChange{client}}); ok {
			t.Errorf("%s: read as noise: %s", name, f.Statement)
		}
	}
}

// A candidate whose series spiked and came back, with nothing else, has
// nothing left to explain; a step that stays, or an error line, does.
func TestTransientOnly(t *testing.T) {
	spike := seriesChange{r: rise{head: 0, tail: 0, peak: 0.01, shape: "spike"}}
	step := seriesChange{r: rise{head: 1, tail: 5, peak: 5, shape: "step"}}
	stayed := seriesChange{r: rise{head: 1, tail: 3, peak: 5, shape: "spike"}}
	for _, tc := range []struct {
		name string
		c    candidate
		want bool
	}{
		{"a spike that is over", candidate{changes: []seriesChange{spike}}, true},
		{"a step", candidate{changes: []seriesChange{spike, step}}, false},
		{"a spike that did not come back", candidate{changes: []seriesChange{stayed}}, false},
		{"an error line", candidate{changes: []seriesChange{spike}, errLines: []LogLine{{}}}, false},
		{"nothing at all", candidate{}, false},
	} {
		if got := tc.c.transientOnly(); got != tc.want {
			t.Errorf("%s: transientOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Errors a ticket accepts for this workload, by the same exception, are
// known noise; a record that does not accept them, names another
// workload, or shares no symbol with them is not; rising server errors
// or a restart keep it a fault.
func TestKnownIssue(t *testing.T) {
	errLine := LogLine{LogLine: facts.LogLine{Service: "clips", Level: "ERROR", Message: "Servlet.service() threw exception org.apache.catalina.connector.ClientAbortException: java.io.IOException: Broken pipe"}}
	record := func(msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Service: "tickets", Level: "INFO", Message: msg}}
	}
	accepted := record("SUP-88 (closed, won't fix): ClientAbortException on clips is benign, players abort range requests")
	for _, tc := range []struct {
		name string
		logs []LogLine
		c    candidate
		want bool
	}{
		{"accepted by a record", []LogLine{accepted}, candidate{kind: "workload", name: "clips", errLines: []LogLine{errLine}}, true},
		{"a record that does not accept them", []LogLine{record("SUP-88 (open): ClientAbortException on clips under investigation")}, candidate{kind: "workload", name: "clips", errLines: []LogLine{errLine}}, false},
		{"another workload's record", []LogLine{record("SUP-88 (closed, won't fix): ClientAbortException on videos is benign")}, candidate{kind: "workload", name: "clips", errLines: []LogLine{errLine}}, false},
		{"no shared symbol", []LogLine{record("SUP-88 (closed, won't fix): timeouts on clips are benign")}, candidate{kind: "workload", name: "clips", errLines: []LogLine{errLine}}, false},
		{"a pod restarted", []LogLine{accepted}, candidate{kind: "workload", name: "clips", errLines: []LogLine{errLine}, restarts: 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Logs: tc.logs}
			f, ok := ev.knownIssue(&tc.c)
			if ok != tc.want {
				t.Fatalf("known issue %v, want %v (%s)", ok, tc.want, f.Statement)
			}
			if ok && (!f.Healthy || !strings.Contains(f.Statement, "SUP-88")) {
				t.Errorf("finding %q must be healthy and quote the record", f.Statement)
			}
		})
	}
}

// The addresses the errors name that an edge or a firewall logs too: public
// IPv4 addresses, whole tokens, not private, loopback or parts of versions.
func TestPublicAddrs(t *testing.T) {
	for text, want := range map[string]string{
		"Invalid HTTP_HOST header: '198.51.100.23'":        "198.51.100.23",
		"dial tcp 10.0.4.9:80: i/o timeout from 127.0.0.1": "",
		"client 203.0.113.7:51234 reset; peer 172.16.3.4":  "203.0.113.7",
		"release 1.22.3.4567 of the agent":                 "",
	} {
		if got := strings.Join(publicAddrs(text), ","); got != want {
			t.Errorf("publicAddrs(%q) = %q, want %q", text, got, want)
		}
	}
}

// An edge that logs its refusals in its own shape (a WAF's "denied <ip>
// \"GET ...\" ua=... -> 403") names the outside sender as an access log
// does; a refusal of an inside caller, or a server error, does not.
func TestRefusalLinesNameTheSender(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		sender string
	}{
		{`RULE-BOT-7 denied 203.0.113.43 "GET /gourds?page=100" ua="PriceHarvester/3.1" -> 403`, "203.0.113.43"},
		{`blocked client=198.51.100.7 "POST /login" status=401 user_agent="curl/8.1"`, "198.51.100.7"},
		{`denied 10.2.0.4 "GET /admin" -> 403`, ""},
		{`upstream 203.0.113.43 "GET /gourds" -> 503`, ""},
	} {
		ev := &Evidence{Logs: []LogLine{{LogLine: facts.LogLine{Level: "ERROR", Message: tc.msg}}}}
		_, sender, _, ok := ev.clientErrorSenders()
		if sender != tc.sender || ok != (tc.sender != "") {
			t.Errorf("%q: sender %q %v, want %q", tc.msg, sender, ok, tc.sender)
		}
	}
}

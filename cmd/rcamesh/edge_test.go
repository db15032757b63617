package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// request sends method url body and returns the status, the Allow header and the body.
func request(t *testing.T, method, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
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
	return resp.StatusCode, resp.Header.Get("Allow"), string(b)
}

// pinIDsOf lists the pins of a session over REST.
func pinIDsOf(t *testing.T, base, sid string) []string {
	t.Helper()
	code, _, body := request(t, http.MethodGet, base+"/session/"+sid+"/pins", "")
	if code == http.StatusNotFound {
		return nil
	}
	if code != 200 {
		t.Fatalf("pins of %s: %d %s", sid, code, body)
	}
	var out struct {
		Pins []struct {
			ID        string `json:"id"`
			SessionID string `json:"session_id"`
		} `json:"pins"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range out.Pins {
		if p.SessionID != sid {
			t.Errorf("pins of %s include %s of session %s", sid, p.ID, p.SessionID)
		}
		ids = append(ids, p.ID)
	}
	return ids
}

// TestHostileInputAndRestart is issue 10's "one request stops the service"
// against the binary in all-in-one mode: a 4,000-character session id gets
// 400 on every route and the process stays up; ids the old subject escape
// confused do not read each other's pins; the other edge cases answer 4xx;
// and a restart on the same -data.dir starts and serves.
func TestHostileInputAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary twice")
	}
	dataDir := t.TempDir()
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	args := []string{"-target=all", "-data.dir=" + dataDir, "-http.addr=" + httpAddr, "-grpc.addr=" + grpcAddr, "-tools.scenario=" + demoScenario}
	p := startBinary(t, httpAddr, args...)
	base := "http://" + httpAddr + "/api/v4"
	long := strings.Repeat("a", 4000)
	command := `{"command":"/events namespace=retail"}`

	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/session/" + long + "/investigate", command},
		{"POST", "/session/" + long + "/chat", `{"message":"hello"}`},
		{"POST", "/session/" + long + "/investigations", `{"service":"orders-api"}`},
		{"GET", "/session/" + long + "/pins", ""},
		{"GET", "/session/" + long + "/events?no_follow=true", ""},
		{"GET", "/session/" + long + "/report", ""},
		{"GET", "/session/" + long + "/record?investigation_id=" + long, ""},
		{"POST", "/alerts?session_id=" + long, `{"title":"x","severity":"critical"}`},
		{"POST", "/session/s1/investigate", `{"command":"/events namespace=retail","context":{"session_id":"` + long + `"}}`},
		{"POST", "/session/team%20a/investigate", command},
		{"POST", "/session/a%2A/investigate", command},
	} {
		code, _, body := request(t, tc.method, base+tc.path, tc.body)
		if code != http.StatusBadRequest {
			t.Errorf("%s %.60s: %d %.200s, want 400", tc.method, tc.path, code, body)
		}
	}

	// Sessions whose subjects used to collide stay apart.
	sessions := []string{"team-a.prod", "team-a_prod", "team-a:prod"}
	for _, sid := range sessions {
		if code, _, body := request(t, "POST", base+"/session/"+sid+"/investigate", command); code != 200 {
			t.Fatalf("investigate %s: %d %s", sid, code, body)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, sid := range sessions {
		for len(pinIDsOf(t, base, sid)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no pin for %s", sid)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ids := pinIDsOf(t, base, sid); len(ids) != 1 {
			t.Errorf("session %s has pins %v, want its own one", sid, ids)
		}
	}

	// The smaller edge cases.
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		allow                    string
	}{
		{"cursor 2^64-1 does not wrap", "GET", "/session/team-a.prod/events?no_follow=true&from_sequence=18446744073709551615", "", 200, ""},
		{"cursor beyond uint64", "GET", "/session/team-a.prod/events?no_follow=true&from_sequence=18446744073709551616", "", 400, ""},
		{"alert time past 9999", "POST", "/alerts", `{"version":"4","alerts":[{"labels":{"alertname":"Late"},"startsAt":"9999-12-31T23:59:59Z"}]}`, 400, ""},
		{"alert epoch overflow", "POST", "/alerts", `{"title":"Z","starts_at":1e30}`, 400, ""},
		{"promql epoch past 9999", "POST", "/session/ts/investigate", `{"quick_action":{"intent":"query_prometheus","params":{"query":"up","end":"99999999999999"}}}`, 200, ""},
		{"invalid UTF-8 in the path", "GET", "/session/%ff%fe/pins", "", 400, ""},
		{"wrong method", "PUT", "/session/s1/investigate", command, 405, "POST"},
		{"trailing garbage", "POST", "/session/s1/investigate", command + " trailing", 400, ""},
	} {
		code, allow, body := request(t, tc.method, base+tc.path, tc.body)
		if code != tc.code || allow != tc.allow {
			t.Errorf("%s: %d (Allow %q) %.200s, want %d (Allow %q)", tc.name, code, allow, body, tc.code, tc.allow)
		}
		if tc.name == "cursor 2^64-1 does not wrap" && strings.Contains(body, "pin") {
			t.Errorf("%s replayed the history: %.200s", tc.name, body)
		}
	}
	// The failed PromQL call makes a readable (failed) pin, not a session
	// every read of which answers 500.
	deadline = time.Now().Add(30 * time.Second)
	for len(pinIDsOf(t, base, "ts")) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}

	if code, _, body := request(t, "GET", "http://"+httpAddr+"/readyz", ""); code != 200 {
		t.Fatalf("not ready after the hostile requests: %d %s\n%s", code, body, p.log())
	}

	// Restart on the same data dir.
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("first process exited with %v:\n%s", err, p.log())
	}
	p2 := startBinary(t, httpAddr, args...)
	for _, sid := range sessions {
		if ids := pinIDsOf(t, base, sid); len(ids) != 1 {
			t.Errorf("after the restart, session %s has pins %v", sid, ids)
		}
	}
	code, _, body := request(t, "POST", base+"/session/after-restart/investigate", command)
	if code != 200 {
		t.Fatalf("investigate after the restart: %d %s", code, body)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(pinIDsOf(t, base, "after-restart")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no pin after the restart:\n%s", p2.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p2.cmd.ProcessState != nil {
		t.Fatalf("the restarted process exited: %v\n%s", p2.cmd.ProcessState, p2.log())
	}
	if code, _, body := request(t, "GET", "http://"+httpAddr+"/readyz", ""); code != 200 {
		t.Errorf("not ready after the restart: %d %s", code, body)
	}
}

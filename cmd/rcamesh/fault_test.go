package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fetchJSON GETs url into out and returns the status code.
func fetchJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

// kill stops a process the way a crash does (SIGKILL, no shutdown).
func kill(t *testing.T, p proc) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}

// demoAlertIn is the demo scenario's alert in cluster c (a distinct
// fingerprint per cluster: one investigation each).
func demoAlertIn(t *testing.T, cluster string) string {
	t.Helper()
	raw, err := os.ReadFile(demoScenario + "/alert.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(raw), `"eu-prod-1"`, `"`+cluster+`"`)
}

// startSplit starts the brain and delivery with the embedded NATS server
// (brainArgs added) and returns its HTTP address and the arguments that
// start tools, router and critic in a second process on bHTTP.
func startSplit(t *testing.T, brainArgs ...string) (aHTTP, bHTTP string, bArgs []string) {
	t.Helper()
	natsAddr := freeAddr(t)
	aHTTP, aGRPC := freeAddr(t), freeAddr(t)
	bHTTP, bGRPC := freeAddr(t), freeAddr(t)
	key, _, _ := meshSecrets(t) // the process with the embedded NATS holds the mesh key
	startBinary(t, aHTTP, append([]string{"-target=brain,delivery", "-data.dir=" + t.TempDir(), "-nats.listen=" + natsAddr, "-mesh.key-file=" + key,
		"-http.addr=" + aHTTP, "-grpc.addr=" + aGRPC, "-tools.addr=" + bGRPC, "-router.addr=" + bGRPC, "-critic.addr=" + bGRPC}, brainArgs...)...)
	// The other holds the credentials issued for its three services.
	cred := t.TempDir() + "/mesh.cred"
	if err := meshCredentialsCmd(t.Context(), []string{"-mesh.key-file=" + key, "-targets=tools,router,critic", "-out=" + cred}, io.Discard); err != nil {
		t.Fatal(err)
	}
	return aHTTP, bHTTP, []string{"-target=tools,router,critic", "-nats.url=nats://" + natsAddr, "-mesh.credentials-file=" + cred,
		"-http.addr=" + bHTTP, "-grpc.addr=" + bGRPC, "-brain.addr=" + aGRPC, "-delivery.addr=" + aGRPC,
		"-tools.scenario=" + demoScenario}
}

type recordView struct {
	Record struct {
		State             string `json:"state"`
		FailureReason     string `json:"failure_reason"`
		DependencyRetries int    `json:"dependency_retries"`
		ToolCalls         []struct {
			PinID   string `json:"pin_id"`
			Success bool   `json:"success"`
			NoData  bool   `json:"no_data"`
		} `json:"tool_calls"`
		Diagnosis struct {
			Status string `json:"status"`
		} `json:"diagnosis"`
	} `json:"record"`
}

// evidence counts the tool calls that returned data into a pin.
func (r recordView) evidence() int {
	n := 0
	for _, c := range r.Record.ToolCalls {
		if c.PinID != "" && c.Success && !c.NoData {
			n++
		}
	}
	return n
}

// TestFaultSplitKillToolsRouterCritic is the fault test of issue 10: in
// split mode (brain and delivery in one process with the embedded NATS
// server, tools, router and critic in another), 20 investigations are
// queued, the second process is killed at once, and it comes back. Every
// investigation must end completed with evidence or failed with its reason;
// none may complete empty.
func TestFaultSplitKillToolsRouterCritic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts and kills processes")
	}
	const n = 20
	aHTTP, bHTTP, bArgs := startSplit(t, "-brain.retry-backoff=250ms", "-brain.retry-max-backoff=2s", "-brain.dependency-attempts=10",
		"-brain.max-alerts-per-request=5")
	// Over the alerts-per-request bound: 413, nothing stored or queued.
	var many []string
	for i := range 6 {
		many = append(many, fmt.Sprintf(`{"status":"firing","labels":{"alertname":"Storm%d","namespace":"retail","severity":"critical"}}`, i))
	}
	code, body := postJSON(t, "http://"+aHTTP+"/api/v4/alerts", `{"version":"4","status":"firing","alerts":[`+strings.Join(many, ",")+`]}`)
	if msg, _ := body["message"].(string); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "limit is 5") {
		t.Fatalf("6 alerts over a bound of 5: %d %v", code, body)
	}
	var list struct {
		Sessions []any `json:"sessions"`
	}
	if fetchJSON(t, "http://"+aHTTP+"/api/v4/sessions", &list) != 200 || len(list.Sessions) != 0 {
		t.Fatalf("a refused request left sessions: %v", list.Sessions)
	}
	b := startBinary(t, bHTTP, bArgs...)

	// 20 alerts are queued, and the second process is killed (SIGKILL) at
	// once, with the investigations queued or in their first stages.
	sessions := make([]string, n)
	for i := range n {
		code, resp := postJSON(t, "http://"+aHTTP+"/api/v4/alerts", demoAlertIn(t, fmt.Sprintf("eu-prod-%d", i+1)))
		if code != 200 {
			t.Fatalf("alert %d: %d %v", i, code, resp)
		}
		sessions[i], _ = resp["session_id"].(string)
		if st, _ := resp["status"].(string); st != "queued" || sessions[i] == "" {
			t.Fatalf("alert %d not queued: %v", i, resp)
		}
	}
	kill(t, b)
	// The workers meet the outage: wait until some investigation is retrying.
	deadline := time.Now().Add(60 * time.Second)
	for retrying := false; !retrying; {
		for _, sid := range sessions {
			var rv recordView
			if fetchJSON(t, "http://"+aHTTP+"/api/v4/session/"+sid+"/record", &rv) == 200 && rv.Record.DependencyRetries > 0 {
				retrying = true
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no investigation retried while the tools, router and critic were down")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b2 := startBinary(t, bHTTP, bArgs...)

	completed, failed, retries := 0, 0, 0
	deadline = time.Now().Add(5 * time.Minute)
	for _, sid := range sessions {
		for {
			var rv recordView
			code := fetchJSON(t, "http://"+aHTTP+"/api/v4/session/"+sid+"/record", &rv)
			st := rv.Record.State
			if code == 200 && (st == "completed" || st == "failed") {
				retries += rv.Record.DependencyRetries
				switch {
				case st == "failed" && rv.Record.FailureReason == "":
					t.Errorf("%s failed without a reason", sid)
				case st == "failed":
					failed++
					t.Logf("%s failed: %s", sid, rv.Record.FailureReason)
				case rv.evidence() == 0:
					t.Errorf("%s completed with no evidence (%s)", sid, rv.Record.Diagnosis.Status)
				default:
					completed++
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not final: state %q", sid, st)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Logf("FAULT split kill tools+router+critic: %d investigations: %d completed with evidence, %d failed with a reason, %d dependency retries", n, completed, failed, retries)
	if completed+failed != n {
		t.Errorf("%d completed + %d failed != %d", completed, failed, n)
	}
	if retries == 0 {
		t.Errorf("no dependency retries recorded")
	}
	// The second process runs on its combined NATS user (tools, router and
	// critic's rights only) and never needed more.
	for _, p := range []proc{b, b2} {
		if l := p.log(); strings.Contains(strings.ToLower(l), "permissions violation") {
			t.Errorf("tools+router+critic hit a NATS permissions violation:\n%s", l)
		}
	}
}

// TestFaultDeliveryKilledDuringRetries: the delivery process is killed while
// it retries a page the destination refuses; after it restarts (the
// destination now accepting) the page is sent, exactly once accepted.
func TestFaultDeliveryKilledDuringRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts and kills processes")
	}
	var accept atomic.Bool
	var refused, accepted atomic.Int32
	var mu sync.Mutex
	var sessions []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SessionID string `json:"session_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if !accept.Load() {
			refused.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		accepted.Add(1)
		mu.Lock()
		sessions = append(sessions, body.SessionID)
		mu.Unlock()
	}))
	defer hook.Close()

	natsAddr := freeAddr(t)
	aHTTP, aGRPC := freeAddr(t), freeAddr(t)
	cHTTP, cGRPC := freeAddr(t), freeAddr(t)
	key, _, _ := meshSecrets(t)
	startBinary(t, aHTTP, "-target=tools,router,critic,brain", "-data.dir="+t.TempDir(), "-nats.listen="+natsAddr, "-mesh.key-file="+key,
		"-http.addr="+aHTTP, "-grpc.addr="+aGRPC, "-delivery.addr="+cGRPC, "-tools.scenario="+demoScenario,
		"-brain.retry-backoff=250ms", "-brain.retry-max-backoff=1s", "-brain.dependency-attempts=30")
	cred := t.TempDir() + "/delivery.cred" // delivery holds only its own credentials
	if err := meshCredentialsCmd(t.Context(), []string{"-mesh.key-file=" + key, "-targets=delivery", "-out=" + cred}, io.Discard); err != nil {
		t.Fatal(err)
	}
	cArgs := []string{"-target=delivery", "-nats.url=nats://" + natsAddr, "-mesh.credentials-file=" + cred, "-http.addr=" + cHTTP, "-grpc.addr=" + cGRPC,
		"-brain.addr=" + aGRPC, "-tools.addr=" + aGRPC, "-router.addr=" + aGRPC, "-critic.addr=" + aGRPC,
		"-delivery.webhook-url=" + hook.URL + "/page", "-delivery.confidence-gate=0",
		"-delivery.max-tries=5", "-delivery.backoff-base=100ms", "-delivery.backoff-max=200ms", "-delivery.http-timeout=1s",
		"-delivery.outbox-interval=200ms"}
	c := startBinary(t, cHTTP, cArgs...)

	code, resp := postJSON(t, "http://"+aHTTP+"/api/v4/alerts", demoAlertIn(t, "eu-prod-1"))
	if code != 200 {
		t.Fatalf("alert: %d %v", code, resp)
	}
	sid, _ := resp["session_id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("delivery never tried the page (refused %d)", refused.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	kill(t, c)
	accept.Store(true)
	startBinary(t, cHTTP, cArgs...)

	deadline = time.Now().Add(2 * time.Minute)
	for accepted.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the page was not sent after the restart (refused %d before the kill)", refused.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rv recordView
	for {
		if fetchJSON(t, "http://"+aHTTP+"/api/v4/session/"+sid+"/record", &rv) == 200 && (rv.Record.State == "completed" || rv.Record.State == "failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("investigation not final: %q", rv.Record.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate page would arrive within the outbox interval
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) != 1 || sessions[0] != sid {
		t.Errorf("accepted pages %v, want exactly one for %s", sessions, sid)
	}
	t.Logf("FAULT delivery killed during retries: %d refused tries before the kill, %d page(s) accepted after the restart; investigation %s", refused.Load(), accepted.Load(), rv.Record.State)
}

// TestFaultOutageOutlastsRetries: tools, router and critic stay down longer
// than the brain retries: every investigation fails visibly with its reason
// (none completes empty, none stays open); once they are back, the same
// alerts re-sent after the failed-dedup window start fresh investigations
// that complete with evidence.
func TestFaultOutageOutlastsRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts and kills processes")
	}
	const n = 5
	aHTTP, bHTTP, bArgs := startSplit(t, "-brain.retry-backoff=100ms", "-brain.retry-max-backoff=200ms", "-brain.dependency-attempts=3",
		"-brain.failed-dedup-window=2s")
	kill(t, startBinary(t, bHTTP, bArgs...))

	submit := func() []string {
		out := make([]string, n)
		for i := range n {
			code, resp := postJSON(t, "http://"+aHTTP+"/api/v4/alerts", demoAlertIn(t, fmt.Sprintf("eu-prod-%d", i+1)))
			if code != 200 {
				t.Fatalf("alert %d: %d %v", i, code, resp)
			}
			out[i], _ = resp["investigation_id"].(string)
		}
		return out
	}
	final := func(sid string, inv string) recordView {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			var rv recordView
			code := fetchJSON(t, "http://"+aHTTP+"/api/v4/session/"+sid+"/record?investigation_id="+inv, &rv)
			if code == 200 && (rv.Record.State == "completed" || rv.Record.State == "failed") {
				return rv
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not final: %q", sid, inv, rv.Record.State)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	sessionOf := func(inv string) string {
		var list struct {
			Sessions []struct {
				SessionID string `json:"session_id"`
			} `json:"sessions"`
		}
		fetchJSON(t, "http://"+aHTTP+"/api/v4/sessions?page_size=100", &list)
		for _, s := range list.Sessions {
			var sess struct {
				InvestigationIDs []string `json:"investigation_ids"`
			}
			fetchJSON(t, "http://"+aHTTP+"/api/v4/session/"+s.SessionID, &sess)
			for _, id := range sess.InvestigationIDs {
				if id == inv {
					return s.SessionID
				}
			}
		}
		t.Fatalf("no session holds %s", inv)
		return ""
	}

	first := submit()
	failed := 0
	for _, inv := range first {
		rv := final(sessionOf(inv), inv)
		if rv.Record.State != "failed" || !strings.Contains(rv.Record.FailureReason, "unavailable") {
			t.Errorf("%s during the outage: state %q reason %q", inv, rv.Record.State, rv.Record.FailureReason)
			continue
		}
		failed++
	}
	startBinary(t, bHTTP, bArgs...)
	time.Sleep(2500 * time.Millisecond) // past the failed-dedup window
	second := submit()
	completed := 0
	for i, inv := range second {
		if inv == first[i] {
			t.Errorf("the re-sent alert %d attached to the failed investigation %s", i, inv)
			continue
		}
		rv := final(sessionOf(inv), inv)
		if rv.Record.State == "completed" && rv.evidence() > 0 {
			completed++
		} else {
			t.Errorf("%s after the outage: state %q, %d evidence pins, reason %q", inv, rv.Record.State, rv.evidence(), rv.Record.FailureReason)
		}
	}
	t.Logf("FAULT outage outlasting retries: %d/%d investigations failed with a reason; re-sent after the window: %d/%d fresh investigations completed with evidence", failed, n, completed, n)
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
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

// TestRestartOnADataDirPoisonedByAnOverlongSession: a data dir written by a
// version without the edge check holds a pin on a 4,030-byte session
// subject. The critic's durable consumer redelivers it on every start; its
// update used to exceed NATS's protocol line limit, close the shared
// connection and stop the process within a second of each restart. Now the
// bus refuses the update, the consumer gives the message up after
// -bus.max-deliver deliveries, and the process stays up and ready.
func TestRestartOnADataDirPoisonedByAnOverlongSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	dataDir := t.TempDir()
	// Short enough that the old version stored it (a publish without a reply
	// fits NATS's 4,096-byte protocol line), long enough that the critic's
	// update (longer kind, a reply inbox) did not.
	long := strings.Repeat("a", 4030)
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv, nc, err := bus.StartEmbedded(ctx, filepath.Join(dataDir, "nats"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { nc.Close(); srv.Shutdown(); srv.WaitForShutdown() }()
		b, err := bus.Connect(ctx, nc, nil)
		if err != nil {
			t.Fatal(err)
		}
		pin := &evidencev1.EvidencePin{Id: "poison", SessionId: long, Version: 1, SourceTool: "get_events", Claim: "3 warning events", Success: true}
		data, err := proto.Marshal(&evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: long, Pin: pin, EventId: "poison"})
		if err != nil {
			t.Fatal(err)
		}
		// What the old version stored: the subject escaped the old way (no
		// change for 'a's), published without a reply so the line fits.
		msg := &nats.Msg{Subject: "rcamesh.v1.session." + long + ".pin.added", Data: data, Header: nats.Header{}}
		msg.Header.Set(bus.HeaderEventKind, bus.EventKindPin)
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := b.JetStream().Stream(ctx, bus.StreamEvents)
			if err == nil && st.CachedInfo().State.Msgs == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the poisoned pin was not stored: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	httpAddr, grpcAddr, natsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	_, readerFile, readerPW := meshSecrets(t)
	p := startBinary(t, httpAddr, "-target=all", "-data.dir="+dataDir, "-http.addr="+httpAddr, "-grpc.addr="+grpcAddr,
		"-nats.listen="+natsAddr, "-nats.reader-password-file="+readerFile, "-bus.max-deliver=2", "-tools.scenario="+demoScenario)
	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo(bus.UserReader, readerPW))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the critic has been through the poisoned pin and given it up.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := js.Consumer(ctx, bus.StreamEvents, bus.ConsumerCritic)
		var ci *jetstream.ConsumerInfo
		if err == nil {
			ci, err = info.Info(ctx)
		}
		cancel()
		if err == nil && ci.Delivered.Stream >= 1 && ci.NumAckPending == 0 && ci.NumPending == 0 {
			break
		}
		if p.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("the critic never gave the poisoned pin up (%v, %+v):\n%s", err, ci, p.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, body := request(t, "GET", "http://"+httpAddr+"/readyz", ""); code != 200 {
		t.Fatalf("not ready after the poisoned pin: %d %s\n%s", code, body, p.log())
	}
	code, _, body := request(t, "POST", "http://"+httpAddr+"/api/v4/session/s1/investigate", `{"command":"/events namespace=retail"}`)
	if code != 200 {
		t.Fatalf("investigate after the poisoned pin: %d %s", code, body)
	}
	for len(pinIDsOf(t, "http://"+httpAddr+"/api/v4", "s1")) == 0 {
		if p.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("no pin after the poisoned one:\n%s", p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

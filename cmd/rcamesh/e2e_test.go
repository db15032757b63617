package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the rcamesh binary once for the slow end-to-end tests.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rcamesh-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rcamesh")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// handedOut are the loopback addresses freeAddr gave in this test binary:
// the kernel may offer a port again once its probe listener closed, and two
// servers of one test told the same port fail to start.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// freeAddr reserves a loopback address for a listener started later, never
// one it gave before.
func freeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		handedOut.Lock()
		seen := handedOut.addrs[addr]
		handedOut.addrs[addr] = true
		handedOut.Unlock()
		if !seen {
			return addr
		}
	}
	t.Fatal("no loopback port that was not handed out already")
	return ""
}

type proc struct {
	cmd *exec.Cmd
	out *bytes.Buffer
	mu  *sync.Mutex
}

func (p proc) log() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startBinary runs `rcamesh serve args...` and waits for /readyz.
func startBinary(t testing.TB, httpAddr string, args ...string) proc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	p := proc{cmd: cmd, out: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout = lockedWriter{p.mu, p.out}
	cmd.Stderr = lockedWriter{p.mu, p.out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("serve did not stop on SIGINT within 20s:\n%s", p.log())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serve %v not ready:\n%s", args, p.log())
	return p
}

func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// streamUntil reads the REST event stream of a session until pred holds.
func streamUntil(t *testing.T, url string, pred func(kind, status string, pin map[string]any) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			Result struct {
				Event struct {
					Pin struct {
						Kind string         `json:"kind"`
						Pin  map[string]any `json:"pin"`
					} `json:"pin"`
				} `json:"event"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Result.Event.Pin.Pin == nil {
			continue
		}
		p := msg.Result.Event.Pin
		status, _ := p.Pin["validation_status"].(string)
		if pred(p.Kind, status, p.Pin) {
			return
		}
	}
	t.Fatalf("stream ended before the expected events: %v", sc.Err())
}

const demoScenario = "../../scenarios/demo"

// TestEndToEndAllInOne: the binary in all-in-one mode; a slash command over
// REST becomes a pin on the stream, then the critic updates it.
func TestEndToEndAllInOne(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	startBinary(t, httpAddr, "-target=all", "-data.dir="+t.TempDir(), "-http.addr="+httpAddr, "-grpc.addr="+grpcAddr,
		"-tools.scenario="+demoScenario)
	base := "http://" + httpAddr + "/api/v4/session/s1"
	code, resp := postJSON(t, base+"/investigate", `{"command":"/logs namespace=retail pod=orders-api-*","context":{"session_id":"s1"}}`)
	if code != 200 || resp["pin_id"] == nil {
		t.Fatalf("investigate: %d %v", code, resp)
	}
	pinID := resp["pin_id"].(string)
	var added bool
	streamUntil(t, base+"/events", func(kind, status string, pin map[string]any) bool {
		if pin["id"] != pinID {
			return false
		}
		if kind == "PIN_EVENT_KIND_ADDED" {
			added = true
			if !strings.Contains(pin["claim"].(string), "orders-api") {
				t.Errorf("claim not derived from the scenario: %v", pin["claim"])
			}
		}
		return added && (kind == "PIN_EVENT_KIND_UPDATED" || kind == "PIN_EVENT_KIND_REJECTED") && status != "VALIDATION_STATUS_PENDING_CRITIC"
	})

	// Bad input gets a clear error and the service keeps serving.
	for _, tc := range []struct{ body, want string }{
		{`{"command":"/nope x=1"}`, "nope"},
		{`{"command":"/logs colour=blue"}`, "colour"},
		{`{}`, "one of"},
		{`{"command":"/logs","query":"both"}`, ""},
	} {
		code, out := postJSON(t, base+"/investigate", tc.body)
		if code != 400 || !strings.Contains(fmt.Sprint(out["message"]), tc.want) {
			t.Errorf("%s: want 400 naming %q, got %d %v", tc.body, tc.want, code, out)
		}
	}
	big := `{"command":"/logs pod=` + strings.Repeat("a", 5<<20) + `"}`
	if code, _ := postJSON(t, base+"/investigate", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized payload: want 413, got %d", code)
	}
	if resp, err := http.Get("http://" + httpAddr + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("service stopped serving after bad input: %v", err)
	}
}

// TestEndToEndSplit runs the services in two processes sharing NATS and
// watches the pin on JetStream directly, as another platform would.
func TestEndToEndSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary twice")
	}
	natsAddr := freeAddr(t)
	aHTTP, aGRPC := freeAddr(t), freeAddr(t)
	bHTTP, bGRPC := freeAddr(t), freeAddr(t)
	key, readerFile, readerPW := meshSecrets(t)
	startBinary(t, aHTTP, "-target=router,brain,delivery", "-data.dir="+t.TempDir(), "-nats.listen="+natsAddr,
		"-mesh.key-file="+key, "-nats.reader-password-file="+readerFile,
		"-http.addr="+aHTTP, "-grpc.addr="+aGRPC, "-tools.addr="+bGRPC, "-critic.addr="+bGRPC)
	startBinary(t, bHTTP, "-target=tools,critic", "-nats.url=nats://"+natsAddr, "-mesh.key-file="+key,
		"-http.addr="+bHTTP, "-grpc.addr="+bGRPC, "-brain.addr="+aGRPC, "-router.addr="+aGRPC, "-delivery.addr="+aGRPC,
		"-tools.scenario="+demoScenario)

	// Another platform reads the stream as the read-only user.
	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo(bus.UserReader, readerPW))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, bus.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{bus.SessionFilter("s2")}})
	if err != nil {
		t.Fatal(err)
	}
	code, resp := postJSON(t, "http://"+aHTTP+"/api/v4/session/s2/investigate", `{"command":"/status namespace=retail","context":{"session_id":"s2"}}`)
	if code != 200 {
		t.Fatalf("investigate: %d %v", code, resp)
	}
	pinID, _ := resp["pin_id"].(string)
	seen := map[evidencev1.PinEventKind]bool{}
	for !(seen[evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED] && (seen[evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED] || seen[evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED])) {
		msg, err := cons.Next(jetstream.FetchMaxWait(20 * time.Second))
		if err != nil {
			t.Fatalf("waiting for pin events of %s: %v (seen %v)", pinID, err, seen)
		}
		if !strings.Contains(msg.Subject(), ".pin.") {
			continue
		}
		var ev evidencev1.PinEvent
		if err := proto.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatalf("payload is not a PinEvent: %v", err)
		}
		if ev.GetPin().GetId() == pinID {
			seen[ev.GetKind()] = true
		}
	}
}

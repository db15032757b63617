package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// replicaMesh is the mesh in split mode against a three-node NATS cluster:
// n replicas each of brain, critic and tools (each a process of the
// binary), and one process with the router, delivery and the gateway that
// fronts every REST route.
type replicaMesh struct {
	cluster *bustest.Cluster
	front   string // HTTP address of the gateway
	brains  []proc
	events  *eventReader
	procs   map[string]proc
}

// logs returns the tail of every process's warnings and errors (for a
// failure message; diagnose quotes the info lines that matter).
func (m *replicaMesh) logs() string {
	var b strings.Builder
	for name, p := range m.procs {
		var warn strings.Builder
		for line := range strings.Lines(p.log()) {
			if !strings.Contains(line, "level=INFO") && !strings.Contains(line, "level=DEBUG") {
				warn.WriteString(line)
			}
		}
		l := warn.String()
		if len(l) > 4000 {
			l = l[len(l)-4000:]
		}
		fmt.Fprintf(&b, "--- %s:\n%s\n", name, l)
	}
	return b.String()
}

func startReplicaMesh(t testing.TB, replicas int) *replicaMesh {
	t.Helper()
	c := bustest.StartCluster(t, 3)
	// Every process of a split mesh shares the mesh key (pin signatures,
	// service identity); the test cluster itself runs without NATS users.
	key, _, _ := meshSecrets(t)
	common := []string{"-nats.url=" + c.URL(), "-nats.replicas=3", "-bus.ack-wait=2s", "-log.level=info", "-mesh.key-file=" + key}
	addrs := func(n int) (grpcs, https []string) {
		for range n {
			grpcs, https = append(grpcs, freeAddr(t)), append(https, freeAddr(t))
		}
		return grpcs, https
	}
	brainG, brainH := addrs(replicas)
	toolsG, toolsH := addrs(replicas)
	criticG, criticH := addrs(replicas)
	frontG, frontH := addrs(1)
	list := func(a []string) string { return strings.Join(a, ",") }
	procs := map[string]proc{}
	run := func(httpAddr, grpcAddr string, args ...string) proc {
		p := startBinary(t, httpAddr, append(append([]string{"-http.addr=" + httpAddr, "-grpc.addr=" + grpcAddr}, common...), args...)...)
		procs[args[0]+"@"+grpcAddr] = p
		return p
	}
	for i := range toolsG {
		run(toolsH[i], toolsG[i], "-target=tools", "-brain.addr="+list(brainG), "-tools.scenario="+demoScenario)
	}
	for i := range criticG {
		run(criticH[i], criticG[i], "-target=critic", "-tools.addr="+list(toolsG))
	}
	m := &replicaMesh{cluster: c, front: frontH[0], events: newEventReader(t, c.URL()), procs: procs}
	run(frontH[0], frontG[0], "-target=router,delivery,gateway", "-brain.addr="+list(brainG), "-tools.addr="+list(toolsG), "-critic.addr="+list(criticG))
	for i := range brainG {
		m.brains = append(m.brains, run(brainH[i], brainG[i], "-target=brain", "-router.addr="+frontG[0], "-delivery.addr="+frontG[0],
			"-tools.addr="+list(toolsG), "-critic.addr="+list(criticG)))
	}
	return m
}

// demoAlert is the demo scenario's alert in a cluster of its own (so its
// own fingerprint): every copy opens an investigation of its own.
func demoAlert(t testing.TB, i int) string {
	t.Helper()
	raw, err := os.ReadFile(demoScenario + "/alert.json")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(string(raw), `"cluster": "eu-prod-1"`, fmt.Sprintf(`"cluster": "eu-prod-copy%d"`, i))
	if out == string(raw) {
		t.Fatal("the demo alert no longer has the cluster label the copies extend")
	}
	return out
}

// submit posts n alerts to the gateway and returns the investigation of
// each by session.
func (m *replicaMesh) submit(t testing.TB, from, n int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := from; i < from+n; i++ {
		resp, err := http.Post("http://"+m.front+"/api/v4/alerts", "application/json", strings.NewReader(demoAlert(t, i)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct {
			SessionID       string `json:"session_id"`
			InvestigationID string `json:"investigation_id"`
			Status          string `json:"status"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || r.InvestigationID == "" || r.Status != "queued" {
			t.Fatalf("alert %d through the gateway: %d %s", i, resp.StatusCode, body)
		}
		out[r.SessionID] = r.InvestigationID
	}
	return out
}

// storedEvent is one message of the events stream with the headers the
// checks need.
type storedEvent struct {
	seq       uint64
	publisher string
	pin       *evidencev1.PinEvent
	life      *evidencev1.LifecycleEvent
}

// eventReader reads RCAMESH_EVENTS message by message (direct gets by
// sequence, no consumer), through any live node, keeping what it read.
type eventReader struct {
	js     jetstream.JetStream
	events []storedEvent
	next   uint64
}

func newEventReader(t testing.TB, url string) *eventReader {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &eventReader{js: js, next: 1}
}

// read returns every event stored so far, retrying while the cluster elects
// new leaders after a node died.
func (r *eventReader) read(ctx context.Context, t testing.TB) []storedEvent {
	t.Helper()
	var err error
	for range 120 {
		if err = r.tryRead(ctx); err == nil {
			return r.events
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("reading the events stream: %v", err)
	return nil
}

func (r *eventReader) tryRead(ctx context.Context) error {
	// Each request gets its own short deadline: a request in flight on the
	// connection to a node that dies is never answered.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := r.js.Stream(rctx, bus.StreamEvents)
	if err != nil {
		return fmt.Errorf("stream info: %w", err)
	}
	for last := st.CachedInfo().State.LastSeq; r.next <= last; r.next++ {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := st.GetMsg(mctx, r.next)
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("message %d: %w", r.next, err)
		}
		ev := storedEvent{seq: msg.Sequence, publisher: msg.Header.Get(bus.HeaderPublisher)}
		switch msg.Header.Get(bus.HeaderEventKind) {
		case bus.EventKindPin:
			ev.pin = &evidencev1.PinEvent{}
			err = proto.Unmarshal(msg.Data, ev.pin)
		case bus.EventKindLifecycle:
			ev.life = &evidencev1.LifecycleEvent{}
			err = proto.Unmarshal(msg.Data, ev.life)
		}
		if err != nil {
			return fmt.Errorf("message %d: %w", r.next, err)
		}
		r.events = append(r.events, ev)
	}
	return nil
}

// finished counts the investigations with a completed (or noise) lifecycle event.
func finished(events []storedEvent) map[string]bool {
	done := map[string]bool{}
	for _, ev := range events {
		if k := ev.life.GetKind(); k == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_COMPLETED || k == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_NOISE {
			done[ev.life.GetInvestigationId()] = true
		}
	}
	return done
}

// diagnose describes the investigations that did not finish: their events
// on the stream, their work item, the work consumer's state, and every log
// line that names them (for a failure message).
func (m *replicaMesh) diagnose(ctx context.Context, want map[string]string, events []storedEvent, done map[string]bool) string {
	var b strings.Builder
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if ci, err := m.events.js.Consumer(cctx, bus.StreamWork, bus.ConsumerWork); err != nil {
		fmt.Fprintf(&b, "work consumer: %v\n", err)
	} else {
		info := ci.CachedInfo()
		fmt.Fprintf(&b, "work consumer: pending %d, ack pending %d, redelivered %d, waiting %d, leader %s\n",
			info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.Cluster.Leader)
	}
	for sid, inv := range want {
		if done[inv] {
			continue
		}
		fmt.Fprintf(&b, "investigation %s (session %s):", inv, sid)
		for _, ev := range events {
			if ev.life.GetInvestigationId() == inv {
				fmt.Fprintf(&b, " %d:%s@%s", ev.seq, strings.TrimPrefix(ev.life.GetKind().String(), "LIFECYCLE_EVENT_KIND_"), ev.publisher)
			}
		}
		fmt.Fprintln(&b)
		for name, p := range m.procs {
			for line := range strings.Lines(p.log()) {
				if strings.Contains(line, inv) || strings.Contains(line, sid) {
					fmt.Fprintf(&b, "  %s: %s", name, line)
				}
			}
		}
	}
	return b.String()
}

// dump writes each live process's goroutines (SIGQUIT) and full log to
// $RCAMESH_CLUSTER_DUMP_DIR, when set, for a failure to be investigated.
func (m *replicaMesh) dump(t testing.TB) {
	dir := os.Getenv("RCAMESH_CLUSTER_DUMP_DIR")
	if dir == "" {
		return
	}
	for name, p := range m.procs {
		if p.cmd.ProcessState == nil && p.cmd.Process.Signal(syscall.SIGQUIT) == nil {
			time.Sleep(time.Second)
		}
		file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_", ",", "_").Replace(name)+".log")
		if err := os.WriteFile(file, []byte(p.log()), 0o600); err != nil {
			t.Log(err)
		}
	}
}

// waitFinished polls the stream until every investigation finished.
func (m *replicaMesh) waitFinished(t testing.TB, want map[string]string, timeout time.Duration) []storedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	deadline := time.Now().Add(timeout)
	for {
		events := m.events.read(ctx, t)
		done := finished(events)
		missing := 0
		for _, inv := range want {
			if !done[inv] {
				missing++
			}
		}
		if missing == 0 {
			return events
		}
		if time.Now().After(deadline) {
			m.dump(t)
			t.Fatalf("%d of %d investigations did not complete within %s\n%s\n%s", missing, len(want), timeout, m.diagnose(ctx, want, events, done), m.logs())
		}
		time.Sleep(time.Second)
	}
}

// TestClusterSurvivesLosingANodeAndABrain is the fault test of the scaled-out
// mesh: a three-node NATS cluster with R3 streams and KV, two replicas each of
// brain, critic and tools, one gateway; 50 investigations submitted through
// the gateway; one NATS node and one brain replica (SIGKILL) killed while they
// run. Every investigation completes, every pin an investigation recorded
// (acknowledged by the stream before the tools service answered) is on the
// stream exactly once, and no investigation ran on two brains at a time.
func TestClusterSurvivesLosingANodeAndABrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster and seven processes")
	}
	const total = 50
	m := startReplicaMesh(t, 2)
	want := m.submit(t, 0, total)
	if len(want) != total {
		t.Fatalf("%d investigations opened, want %d", len(want), total)
	}

	// Let the brains get going, then kill a NATS node and a brain that is
	// running an investigation.
	// Generous: on a loaded 2-core machine the 50 investigations take
	// minutes; the waits below poll, so a quick run stays quick.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	victim := m.brains[0].cmd.Process.Pid
	for {
		events := m.events.read(ctx, t)
		running := false
		for _, ev := range events {
			if ev.life.GetKind() == evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STARTED && strings.HasSuffix(ev.publisher, fmt.Sprintf(":%d", victim)) {
				running = true
			}
		}
		if n := len(finished(events)); running && n >= 5 || n >= total/2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	m.cluster.Kill(1)
	if err := m.brains[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	killedAt := len(finished(m.events.read(ctx, t)))

	// Polled: on an idle machine the rest completes within seconds.
	events := m.waitFinished(t, want, 5*time.Minute)
	t.Logf("investigations completed: %d of %d (%d before the kills, the rest within %s after)", len(finished(events)), total, killedAt, time.Since(killed).Round(time.Second))

	// Pins: every pin event stored once; every pin a record cites is stored.
	added := map[string]int{}
	for _, ev := range events {
		if ev.pin.GetKind() == evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED {
			added[ev.pin.GetSessionId()+"/"+ev.pin.GetPin().GetId()]++
		}
	}
	dups := 0
	for id, n := range added {
		if n != 1 {
			dups++
			t.Errorf("pin %s added %d times", id, n)
		}
	}
	lost, cited := 0, 0
	for sid := range want {
		resp, err := http.Get("http://" + m.front + "/api/v4/session/" + sid + "/record")
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Record struct {
				State     string `json:"state"`
				ToolCalls []struct {
					PinID string `json:"pin_id"`
				} `json:"tool_calls"`
			} `json:"record"`
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &rec); err != nil || resp.StatusCode != 200 {
			t.Fatalf("record of %s through the gateway: %d %s", sid, resp.StatusCode, body)
		}
		if rec.Record.State != "completed" && rec.Record.State != "noise" {
			t.Errorf("session %s ended %q", sid, rec.Record.State)
		}
		for _, tc := range rec.Record.ToolCalls {
			if tc.PinID == "" {
				continue
			}
			cited++
			if added[sid+"/"+tc.PinID] == 0 {
				lost++
				t.Errorf("session %s: pin %s of its record is not on the stream", sid, tc.PinID)
			}
		}
	}
	if cited == 0 {
		t.Fatal("no record cites a pin: nothing was checked")
	}

	// One brain at a time: per investigation, the brains that published its
	// started and stage events form runs that never interleave (A..A B..B).
	takenOver := 0
	runs := map[string][]string{}
	for _, ev := range events {
		k := ev.life.GetKind()
		if k != evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STARTED && k != evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE {
			continue
		}
		inv := ev.life.GetInvestigationId()
		r := runs[inv]
		if len(r) == 0 || r[len(r)-1] != ev.publisher {
			for _, earlier := range r {
				if earlier == ev.publisher {
					t.Errorf("investigation %s went back to brain %s after another brain ran it (%v)", inv, ev.publisher, r)
				}
			}
			runs[inv] = append(r, ev.publisher)
		}
	}
	for _, r := range runs {
		if len(r) > 1 {
			takenOver++
		}
	}
	t.Logf("FAULT TEST: investigations %d/%d completed, pins cited %d, pins lost %d, pin events duplicated %d, investigations taken over by the surviving brain %d",
		len(finished(events)), total, cited, lost, dups, takenOver)
}

// BenchmarkClusterInvestigations measures investigations per minute of the
// demo scenario through the gateway, in split mode on a three-node NATS
// cluster (R3), with one and with two replicas each of brain, critic and
// tools. Each iteration submits a batch and waits until all completed.
// Run: go test -run '^$' -bench ClusterInvestigations -benchtime 1x ./cmd/rcamesh/
func BenchmarkClusterInvestigations(b *testing.B) {
	const batch = 40
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			m := startReplicaMesh(b, replicas)
			m.waitFinished(b, m.submit(b, 1_000_000, 2), 2*time.Minute) // warm up
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				m.waitFinished(b, m.submit(b, i*batch, batch), 10*time.Minute)
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Minutes(), "investigations/min")
		})
	}
}

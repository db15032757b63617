package critic

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/facts"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func tp(t time.Time) *time.Time { return &t }
func ip(v int32) *int32         { return &v }

// md builds pin metadata from key/value pairs of facts.
func md(t testing.TB, kv ...any) *structpb.Struct {
	t.Helper()
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		var err error
		if m, err = facts.Put(m, kv[i].(string), kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := facts.ToStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type pinOpt func(*evidencev1.EvidencePin)

func at(t time.Time) pinOpt {
	return func(p *evidencev1.EvidencePin) { p.Timestamp = timestamppb.New(t) }
}
func ns(n string) pinOpt    { return func(p *evidencev1.EvidencePin) { p.Namespace = n } }
func claim(c string) pinOpt { return func(p *evidencev1.EvidencePin) { p.Claim = c } }
func noData() pinOpt        { return func(p *evidencev1.EvidencePin) { p.NoData = true } }
func failedCall(e string) pinOpt {
	return func(p *evidencev1.EvidencePin) { p.Success = false; p.Error = e }
}
func session(s string) pinOpt { return func(p *evidencev1.EvidencePin) { p.SessionId = s } }

func newPin(id, tool string, meta *structpb.Struct, opts ...pinOpt) *evidencev1.EvidencePin {
	p := &evidencev1.EvidencePin{
		Id: id, SessionId: "s1", SourceTool: tool, Success: true, Confidence: 100, Version: 1,
		ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC,
		Metadata:         meta, Claim: tool + " result", Timestamp: timestamppb.New(t0),
		Namespace: "shop",
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func oomPod(t testing.TB, name string) *structpb.Struct {
	return md(t, facts.KeyPods, []facts.Pod{{Namespace: "shop", Name: name, Workload: "api", Phase: "Running", Restarts: 4, OOMKilled: true,
		Containers: []facts.Container{{Name: "app", RestartCount: 4, State: "waiting", Reason: "CrashLoopBackOff", LastReason: "OOMKilled", LastExitCode: ip(137)}}}})
}

func crashPod(t testing.TB, name string) *structpb.Struct {
	return md(t, facts.KeyPods, []facts.Pod{{Namespace: "shop", Name: name, Workload: "api", Phase: "Running", Restarts: 7,
		Containers: []facts.Container{{Name: "app", RestartCount: 7, State: "waiting", Reason: "CrashLoopBackOff", LastReason: "Error", LastExitCode: ip(1)}}}})
}

func healthyPod(t testing.TB, name string) *structpb.Struct {
	return md(t, facts.KeyPods, []facts.Pod{{Namespace: "shop", Name: name, Workload: "api", Phase: "Running", Ready: true,
		Containers: []facts.Container{{Name: "app", Ready: true, State: "running"}}}})
}

func series(t testing.TB, name, service, shape string, onset *time.Time) *structpb.Struct {
	return md(t, facts.KeySeries, []facts.Series{{Name: name, Labels: map[string]string{"service": service}, Count: 60,
		Peak: 40, Baseline: 1, Latest: 35, Shape: shape, OnsetAt: onset}})
}

func newTestService(t testing.TB, b *bus.Bus, mut ...func(*Config)) *Service {
	t.Helper()
	cfg := DefaultConfig()
	for _, m := range mut {
		m(&cfg)
	}
	s, err := New(cfg, Deps{Bus: b, Now: func() time.Time { return t0.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve starts the service on a real gRPC server on 127.0.0.1:0.
func serve(t testing.TB, s *Service) criticv1.CriticServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	s.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return criticv1.NewCriticServiceClient(cc)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// latest replays a session and returns the highest version of every pin and
// the number of events per pin and kind.
func latest(t testing.TB, b *bus.Bus, sess string) (map[string]*evidencev1.EvidencePin, map[string]int) {
	t.Helper()
	evs, err := b.Replay(context.Background(), bus.SessionFilter(sess), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*evidencev1.EvidencePin{}
	counts := map[string]int{}
	for _, ev := range evs {
		pe := ev.GetPin()
		if pe == nil {
			continue
		}
		p := pe.GetPin()
		counts[p.GetId()+"/"+bus.PinKindToken(pe.GetKind())]++
		if cur := out[p.GetId()]; cur == nil || p.GetVersion() >= cur.GetVersion() {
			out[p.GetId()] = p
		}
	}
	return out, counts
}

func addPin(t testing.TB, b *bus.Bus, p *evidencev1.EvidencePin) {
	t.Helper()
	if _, err := b.PublishPin(context.Background(), &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: p.GetSessionId(), Pin: p}); err != nil {
		t.Fatal(err)
	}
}

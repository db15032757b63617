package critic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestRevalidateKinds(t *testing.T) {
	onset := t0.Add(-10 * time.Minute)
	symptom := func() *evidencev1.EvidencePin {
		return newPin("sym", "query_prometheus", series(t, "http_5xx_rate", "api", "step", &onset))
	}
	cases := []struct {
		name      string
		pool      []*evidencev1.EvidencePin
		pin       *evidencev1.EvidencePin
		status    evidencev1.ValidationStatus
		role      evidencev1.CausalRole
		rationale string
		supports  []string
		maxConf   float64
		minConf   float64
	}{
		{name: "tool failure is rejected", pin: newPin("p", "fetch_pod_logs", nil, failedCall("pods \"x\" not found")),
			status: statusRejected, role: roleInfo, rationale: "tool call failed", maxConf: 0},
		{name: "empty evidence is rejected", pin: newPin("p", "search_logs", nil, claim("")),
			status: statusRejected, role: roleInfo, rationale: "empty evidence", maxConf: 0},
		{name: "no data rules something out", pin: newPin("p", "search_logs", nil, noData(), claim("no OOM messages in 1h")),
			status: statusValidated, role: roleInfo, rationale: "rules this out", maxConf: 70, minConf: 70},
		{name: "OOM is a root cause with exit code", pin: newPin("p", "check_pod_status", oomPod(t, "api-7d9f8b6c5-x2x1z")),
			status: statusValidated, role: roleRoot, rationale: "exit_code 137", minConf: 85},
		{name: "config error is a root cause", pin: newPin("p", "check_pod_status", md(t, facts.KeyPods, []facts.Pod{{Namespace: "shop", Name: "api-1", Phase: "Pending",
			Containers: []facts.Container{{Name: "app", State: "waiting", Reason: "CreateContainerConfigError", Message: "configmap \"api-cfg\" not found"}}}})),
			status: statusValidated, role: roleRoot, rationale: "CreateContainerConfigError"},
		{name: "node not ready is a root cause", pin: newPin("p", "get_node_health", md(t, facts.KeyNodes, []facts.Node{{Name: "worker-a", Ready: false,
			Conditions: []facts.Condition{{Type: "Ready", Status: "Unknown"}}}})),
			status: statusValidated, role: roleRoot, rationale: "node worker-a"},
		{name: "5xx spike is a cascading symptom", pin: symptom(), status: statusValidated, role: roleCascading, rationale: "http_5xx"},
		{name: "log text timeout is a symptom", pin: newPin("p", "search_logs", md(t, facts.KeyLogLines, []facts.LogLine{{Level: "ERROR", Service: "api",
			Message: "upstream request timed out after 30s", Timestamp: tp(t0)}})),
			status: statusValidated, role: roleCascading, rationale: "symptom"},
		{name: "healthy pods are informational", pin: newPin("p", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-abcde")),
			status: statusValidated, role: roleInfo, rationale: "healthy state"},
		{name: "deploy before the onset is a root-cause candidate", pool: []*evidencev1.EvidencePin{symptom()},
			pin:    newPin("p", "get_deploy_history", md(t, facts.KeyDeploys, []facts.Deploy{{ID: "dep-42", Service: "api", Revision: "a1b2c3d4", StartedAt: tp(onset.Add(-12 * time.Minute))}})),
			status: statusValidated, role: roleRoot, rationale: "deploy dep-42 started 12m0s before the onset"},
		{name: "deploy after the onset is ruled out", pool: []*evidencev1.EvidencePin{symptom()},
			pin:    newPin("p", "get_deploy_history", md(t, facts.KeyDeploys, []facts.Deploy{{ID: "dep-43", Service: "api", Revision: "r2", StartedAt: tp(onset.Add(20 * time.Minute))}})),
			status: statusValidated, role: roleInfo, rationale: "ruled out by timeline"},
		{name: "crash explained by an OOM in the pool cascades", pool: []*evidencev1.EvidencePin{newPin("oom", "get_events",
			md(t, facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "OOMKilling", InvolvedKind: "Pod", InvolvedName: "api-7d9f8b6c5-x2x1z", Message: "Memory cgroup out of memory"}}))},
			pin:    newPin("p", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z")),
			status: statusValidated, role: roleCascading, rationale: "explained by root cause in pin oom", supports: []string{"oom"}},
		{name: "irrelevant evidence is rejected", pool: []*evidencev1.EvidencePin{symptom()},
			pin:    newPin("p", "search_logs", nil, ns("billing"), claim("12 log lines matched"), func(p *evidencev1.EvidencePin) { p.RawOutput = "INFO started\nINFO ready" }),
			status: statusRejected, role: roleInfo, rationale: "irrelevant", maxConf: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, nil)
			ctx := context.Background()
			for _, p := range tc.pool {
				if _, _, err := s.revalidate(ctx, "s1", p.GetId(), p, true); err != nil {
					t.Fatal(err)
				}
			}
			out, _, err := s.revalidate(ctx, "s1", tc.pin.GetId(), tc.pin, true)
			if err != nil {
				t.Fatal(err)
			}
			if out.GetValidationStatus() != tc.status || out.GetCausalRole() != tc.role {
				t.Fatalf("got %s/%s, want %s/%s; rationale %q", out.GetValidationStatus(), out.GetCausalRole(), tc.status, tc.role, out.GetCriticRationale())
			}
			if !strings.Contains(out.GetCriticRationale(), tc.rationale) {
				t.Errorf("rationale %q lacks %q", out.GetCriticRationale(), tc.rationale)
			}
			if out.GetVersion() != 2 {
				t.Errorf("version %d, want 2", out.GetVersion())
			}
			if tc.maxConf > 0 || tc.status == statusRejected {
				if out.GetConfidence() > tc.maxConf {
					t.Errorf("confidence %v > %v", out.GetConfidence(), tc.maxConf)
				}
			}
			if out.GetConfidence() < tc.minConf {
				t.Errorf("confidence %v < %v", out.GetConfidence(), tc.minConf)
			}
			for _, id := range tc.supports {
				if !containsStr(out.GetSupports(), id) {
					t.Errorf("supports %v lacks %s", out.GetSupports(), id)
				}
			}
		})
	}
}

func TestContradictionUpdatesEarlierPin(t *testing.T) {
	b := bustest.New(t)
	s := newTestService(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	addPin(t, b, newPin("crash", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"), session("c1"), at(t0)))
	waitFor(t, "crash pin revalidated", func() bool {
		pins, _ := latest(t, b, "c1")
		return pins["crash"].GetVersion() == 2
	})
	pins, _ := latest(t, b, "c1")
	if pins["crash"].GetCausalRole() != roleRoot {
		t.Fatalf("crash pin role %s, want ROOT_CAUSE", pins["crash"].GetCausalRole())
	}
	addPin(t, b, newPin("ok", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-x2x1z"), session("c1"), at(t0.Add(5*time.Minute))))
	waitFor(t, "earlier pin downgraded", func() bool {
		pins, _ := latest(t, b, "c1")
		return pins["crash"].GetVersion() == 3 && pins["ok"].GetVersion() == 2
	})
	pins, counts := latest(t, b, "c1")
	crash, ok := pins["crash"], pins["ok"]
	if crash.GetCausalRole() != roleCorrelated || crash.GetValidationStatus() != statusValidated {
		t.Errorf("earlier pin %s/%s, want VALIDATED/CORRELATED", crash.GetValidationStatus(), crash.GetCausalRole())
	}
	if !containsStr(crash.GetContradicts(), "ok") || !strings.Contains(crash.GetCriticRationale(), "contradicted by fresher pin ok") {
		t.Errorf("earlier pin contradicts=%v rationale=%q", crash.GetContradicts(), crash.GetCriticRationale())
	}
	if crash.GetConfidence() >= 90 {
		t.Errorf("earlier pin confidence %v not lowered", crash.GetConfidence())
	}
	if !containsStr(ok.GetContradicts(), "crash") || ok.GetCausalRole() != roleInfo {
		t.Errorf("new pin contradicts=%v role=%s", ok.GetContradicts(), ok.GetCausalRole())
	}
	if counts["crash/updated"] != 2 || counts["ok/updated"] != 1 {
		t.Errorf("event counts %v", counts)
	}

	// An older observation arriving late does not override a fresher one.
	addPin(t, b, newPin("stale", "describe_resource", crashPod(t, "api-7d9f8b6c5-x2x1z"), session("c1"), at(t0.Add(-5*time.Minute))))
	waitFor(t, "stale pin revalidated", func() bool {
		pins, _ := latest(t, b, "c1")
		return pins["stale"].GetVersion() == 2
	})
	pins, _ = latest(t, b, "c1")
	if pins["ok"].GetVersion() != 2 {
		t.Errorf("fresher pin was changed by an older one: v%d", pins["ok"].GetVersion())
	}
	if st := pins["stale"]; st.GetCausalRole() == roleRoot || !strings.Contains(st.GetCriticRationale(), "older than pin ok") {
		t.Errorf("stale pin role %s rationale %q", st.GetCausalRole(), st.GetCriticRationale())
	}
}

func TestStrongerEvidenceRejects(t *testing.T) {
	s := newTestService(t, nil)
	ctx := context.Background()
	for _, p := range []*evidencev1.EvidencePin{
		newPin("a", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-abcde"), at(t0.Add(10*time.Minute))),
		newPin("b", "describe_resource", healthyPod(t, "api-7d9f8b6c5-abcde"), at(t0.Add(11*time.Minute))),
	} {
		if _, _, err := s.revalidate(ctx, "s1", p.GetId(), p, true); err != nil {
			t.Fatal(err)
		}
	}
	out, contradicted, err := s.revalidate(ctx, "s1", "c", newPin("c", "list_pods", crashPod(t, "api-7d9f8b6c5-abcde"), at(t0)), true)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetValidationStatus() != statusRejected || !strings.Contains(out.GetCriticRationale(), "stronger evidence") {
		t.Fatalf("got %s %q", out.GetValidationStatus(), out.GetCriticRationale())
	}
	if len(contradicted) != 0 {
		t.Errorf("a rejected pin must not update others: %v", contradicted)
	}
}

func TestRestartRebuildsFromReplay(t *testing.T) {
	b := bustest.New(t)
	first := newTestService(t, b)
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- first.Run(ctx1) }()
	addPin(t, b, newPin("oom", "get_events", md(t, facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "OOMKilling",
		InvolvedKind: "Pod", InvolvedName: "api-7d9f8b6c5-x2x1z", Message: "Memory cgroup out of memory"}}), session("r1")))
	waitFor(t, "first instance revalidates", func() bool {
		pins, _ := latest(t, b, "r1")
		return pins["oom"].GetVersion() == 2
	})
	cancel1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}

	// While no critic runs, another pin arrives; the new instance must see the
	// earlier verdict (rebuilt from the stream) to classify it.
	addPin(t, b, newPin("crash", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"), session("r1")))
	second := newTestService(t, b)
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- second.Run(ctx2) }()
	t.Cleanup(func() { cancel2(); <-done2 })
	waitFor(t, "second instance revalidates", func() bool {
		pins, _ := latest(t, b, "r1")
		return pins["crash"].GetVersion() == 2
	})
	pins, counts := latest(t, b, "r1")
	if pins["crash"].GetCausalRole() != roleCascading || !strings.Contains(pins["crash"].GetCriticRationale(), "pin oom") {
		t.Errorf("crash after restart: %s %q", pins["crash"].GetCausalRole(), pins["crash"].GetCriticRationale())
	}
	if counts["oom/updated"] != 1 {
		t.Errorf("oom pin re-published after restart: %v", counts)
	}
}

func TestRevalidatePinRPCIdempotent(t *testing.T) {
	b := bustest.New(t)
	s := newTestService(t, b)
	cl := serve(t, s)
	ctx := context.Background()
	p := newPin("p1", "check_pod_status", oomPod(t, "api-7d9f8b6c5-x2x1z"), session("i1"))
	addPin(t, b, p)

	dry, err := cl.RevalidatePin(ctx, &criticv1.RevalidatePinRequest{SessionId: "i1", PinId: "p1", SkipPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.GetPin().GetCausalRole() != roleRoot {
		t.Fatalf("dry run role %s", dry.GetPin().GetCausalRole())
	}
	if _, counts := latest(t, b, "i1"); counts["p1/updated"] != 0 {
		t.Fatalf("skip_publish published: %v", counts)
	}
	for i := 0; i < 3; i++ {
		resp, err := cl.RevalidatePin(ctx, &criticv1.RevalidatePinRequest{SessionId: "i1", Pin: p})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetPin().GetVersion() != 2 {
			t.Fatalf("call %d: version %d, want 2", i, resp.GetPin().GetVersion())
		}
	}
	// The consumer delivering the same added event changes nothing either.
	if err := s.handle(ctx, &evidencev1.SessionEvent{Event: &evidencev1.SessionEvent_Pin{Pin: &evidencev1.PinEvent{
		Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "i1", Pin: p}}}); err != nil {
		t.Fatal(err)
	}
	if _, counts := latest(t, b, "i1"); counts["p1/updated"] != 1 {
		t.Fatalf("want exactly one update event, got %v", counts)
	}

	for _, tc := range []struct {
		req  *criticv1.RevalidatePinRequest
		code codes.Code
	}{
		{&criticv1.RevalidatePinRequest{PinId: "p1"}, codes.InvalidArgument},
		{&criticv1.RevalidatePinRequest{SessionId: "i1"}, codes.InvalidArgument},
		{&criticv1.RevalidatePinRequest{SessionId: "i1", PinId: "nope"}, codes.NotFound},
		{&criticv1.RevalidatePinRequest{SessionId: "i1", PinId: "x", Pin: newPin("y", "t", nil)}, codes.InvalidArgument},
	} {
		if _, err := cl.RevalidatePin(ctx, tc.req); status.Code(err) != tc.code {
			t.Errorf("%v: got %v, want %s", tc.req, err, tc.code)
		}
	}
}

func TestHundredConcurrentPins(t *testing.T) {
	b := bustest.New(t)
	s := newTestService(t, b)
	cl := serve(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := newPin(fmt.Sprintf("p%03d", i), "check_pod_status", crashPod(t, fmt.Sprintf("api-7d9f8b6c5-%05d", i)), session("hc"))
			if i%3 == 0 {
				p = newPin(p.GetId(), "search_logs", nil, session("hc"), failedCall("backend unavailable"))
			}
			if _, err := b.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "hc", Pin: p}); err != nil {
				errs <- err
				return
			}
			// Half of them are also revalidated synchronously, racing the consumer.
			if i%2 == 0 {
				if _, err := cl.RevalidatePin(ctx, &criticv1.RevalidatePinRequest{SessionId: "hc", Pin: p}); err != nil {
					errs <- err
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, "all pins revalidated", func() bool {
		pins, _ := latest(t, b, "hc")
		judgedN := 0
		for _, p := range pins {
			if p.GetVersion() >= 2 {
				judgedN++
			}
		}
		return judgedN == n
	})
	pins, counts := latest(t, b, "hc")
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("p%03d", i)
		verdicts := counts[id+"/updated"] + counts[id+"/rejected"]
		if verdicts != 1 {
			t.Errorf("%s: %d verdict events, want 1", id, verdicts)
		}
		want := statusValidated
		if i%3 == 0 {
			want = statusRejected
		}
		if pins[id].GetValidationStatus() != want {
			t.Errorf("%s: %s, want %s", id, pins[id].GetValidationStatus(), want)
		}
	}
}

func TestPoolEviction(t *testing.T) {
	s := newTestService(t, nil, func(c *Config) { c.MaxSessions = 2 })
	for _, id := range []string{"a", "b", "c"} {
		s.pool(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pools) != 2 || s.pools["a"] != nil {
		t.Fatalf("pools %v", s.pools)
	}
}

// TestPoolEvictionByBytes: pools are bounded in bytes whatever their number;
// the least recently used go first, the one in use stays.
func TestPoolEvictionByBytes(t *testing.T) {
	pin := func(id string) *evidencev1.EvidencePin {
		return &evidencev1.EvidencePin{Id: id, Version: 1, RawOutput: strings.Repeat("x", 10_000)}
	}
	one := pinBytes(pin("p-x")) // every pin of the test has this size
	s := newTestService(t, nil, func(c *Config) { c.MaxPoolBytes = 3 * one })
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		sp := s.pool(id)
		sp.mu.Lock()
		sp.apply(pin("p-" + id))
		sp.mu.Unlock()
	}
	s.pool("e") // the next access evicts down to the bound
	s.mu.Lock()
	defer s.mu.Unlock()
	total := int64(0)
	for _, p := range s.pools {
		total += p.bytes.Load()
	}
	if total > 3*one || s.pools["e"] == nil || s.pools["a"] != nil || len(s.pools) != 3 {
		t.Fatalf("%d pools, %d bytes (bound %d); e kept %v, a evicted %v", len(s.pools), total, 3*one, s.pools["e"] != nil, s.pools["a"] == nil)
	}
}

var _ = bus.ConsumerCritic

// TestEntryKeepsFactsEncoded: a pool entry holds its pin without the facts
// (kept encoded) and gives back the whole pin, equal to the one it was
// given, which stays as it was.
func TestEntryKeepsFactsEncoded(t *testing.T) {
	params, err := structpb.NewStruct(map[string]any{"namespace": "shop"})
	if err != nil {
		t.Fatal(err)
	}
	withBoth := newPin("a", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"))
	withBoth.Params = params
	for _, tc := range []struct {
		name string
		pin  *evidencev1.EvidencePin
	}{
		{"metadata and params", withBoth},
		{"metadata", newPin("b", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-x2x1z"))},
		{"empty metadata", newPin("c", "search_logs", &structpb.Struct{})},
		{"no facts", newPin("d", "search_logs", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.pin)
			e := newEntry(tc.pin, newProfile(tc.pin))
			if e.pin.GetMetadata() != nil || e.pin.GetParams() != nil {
				t.Errorf("the entry keeps decoded facts: %v", e.pin)
			}
			if got := e.full(); !proto.Equal(got, tc.pin) {
				t.Errorf("full pin %v\nwant %v", got, tc.pin)
			}
			if !proto.Equal(tc.pin, before) {
				t.Errorf("the given pin changed: %v", tc.pin)
			}
		})
	}
}

package brain

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

func TestKVKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"inc-abc_1", "inc-abc_1"},
		{"", "_"},
	}
	for _, tc := range tests {
		if got := kvKey(tc.in); got != tc.want {
			t.Errorf("kvKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a, b := kvKey("a.b"), kvKey("a b")
	if a == b || !strings.HasPrefix(a, "a_b=") {
		t.Errorf("escaped ids must stay distinct: %q %q", a, b)
	}
}

func TestCheckpointRoundTripAndSizeCap(t *testing.T) {
	t.Parallel()
	st := &invState{rec: &investigationv1.InvestigationRecord{InvestigationId: "inv-1", SessionId: "s", Loops: 2, WallMs: 1234},
		done: map[string]bool{stageResolve: true, stagePlan: true}}
	st.loop = loopState{Round: 2, Stagnant: 1, Pending: []pendingCall{{Intent: "get_events", Params: map[string]any{"namespace": "x"}, Origin: originCritic}}}
	big := strings.Repeat("z", 40_000)
	md, _ := structpb.NewStruct(map[string]any{"log_lines": big})
	for i := range 30 {
		st.addPin(&evidencev1.EvidencePin{Id: "p" + string(rune('a'+i)), RawOutput: big, Metadata: md, Version: 1, Sources: []string{"logs"}})
	}
	data, err := st.marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 900<<10 {
		t.Fatalf("checkpoint of %d bytes exceeds the KV message limit", len(data))
	}
	back, err := unmarshalState(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.pins) != 30 || back.loop.Round != 2 || back.loop.Pending[0].Params["namespace"] != "x" ||
		!back.done[stagePlan] || back.done[stageGather] || back.baseWallMs != 1234 {
		t.Fatalf("round trip lost state: pins %d loop %+v done %v", len(back.pins), back.loop, back.done)
	}
	small := &invState{rec: &investigationv1.InvestigationRecord{InvestigationId: "i"}, done: map[string]bool{}}
	small.addPin(&evidencev1.EvidencePin{Id: "p", RawOutput: "full output", Version: 3})
	small.addPin(&evidencev1.EvidencePin{Id: "p", RawOutput: "older", Version: 2})
	data, _ = small.marshal()
	back, _ = unmarshalState(data)
	if back.pins[0].GetRawOutput() != "full output" {
		t.Errorf("small checkpoints keep pins whole and the latest version: %v", back.pins[0])
	}
}

func TestResolvedAlertAttachesToOpenIncident(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	ctx := testCtx(t)
	first, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert)})
	if err != nil {
		t.Fatal(err)
	}
	resolved := strings.ReplaceAll(crashAlert, `"firing"`, `"resolved"`)
	resp, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, resolved)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != statusResolved || !resp.GetAttached() || resp.GetSessionId() != first.GetSessionId() {
		t.Fatalf("resolved alert: %v", resp)
	}
	// A resolution that ends no open incident is investigated (why it
	// fired, whether anything still fails), in a session of its own.
	other := strings.ReplaceAll(resolved, "KubePodCrashLooping", "KubeJobFailed")
	resp, err = h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, other)})
	if err != nil || resp.GetStatus() == statusNoise || resp.GetAttached() || resp.GetInvestigationId() == "" || resp.GetSessionId() == first.GetSessionId() {
		t.Fatalf("lone resolution: %v %v", resp, err)
	}
}

// TestCheckpointFencesAStaleReplica: two replicas load the same checkpoint
// (a redelivery while the first one still runs); the first to save wins and
// the other is fenced off, on the in-memory store and on JetStream KV.
func TestCheckpointFencesAStaleReplica(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) *stateStore{
		"memory": func(*testing.T) *stateStore {
			return &stateStore{sessions: newMemKV(), records: newMemKV(), fingerprints: newMemKV()}
		},
	}
	if !testing.Short() {
		stores["jetstream"] = func(t *testing.T) *stateStore {
			b := bustest.New(t)
			kv, err := b.KV(t.Context(), "fence_test")
			if err != nil {
				t.Fatal(err)
			}
			return &stateStore{records: jsKV{kv}}
		}
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			store := mk(t)
			ctx := t.Context()
			first := &invState{rec: &investigationv1.InvestigationRecord{InvestigationId: "inv-f", State: stateQueued}, done: map[string]bool{}}
			if err := store.saveState(ctx, first); err != nil {
				t.Fatal(err)
			}
			a, err := store.loadState(ctx, "inv-f")
			if err != nil {
				t.Fatal(err)
			}
			b, err := store.loadState(ctx, "inv-f")
			if err != nil {
				t.Fatal(err)
			}
			a.rec.State, b.rec.State = stateRunning, stateRunning
			if err := store.saveState(ctx, a); err != nil {
				t.Fatalf("the first replica to save claims the investigation: %v", err)
			}
			if err := store.saveState(ctx, b); !errors.Is(err, errFenced) {
				t.Fatalf("the second replica must be fenced off, got %v", err)
			}
			a.done[stagePlan] = true
			if err := store.saveState(ctx, a); err != nil {
				t.Fatalf("the owner keeps checkpointing: %v", err)
			}
			got, _ := store.loadState(ctx, "inv-f")
			if !got.done[stagePlan] {
				t.Error("the owner's checkpoint was lost")
			}
		})
	}
}

// lostAckKV applies an Update and then answers as the client's retry of it
// would after the first acknowledgement was lost: a revision conflict.
type lostAckKV struct {
	kv
	lose bool
}

func (l *lostAckKV) Update(ctx context.Context, key string, val []byte, rev uint64) (uint64, error) {
	n, err := l.kv.Update(ctx, key, val, rev)
	if err == nil && l.lose {
		l.lose = false
		return 0, errConflict
	}
	return n, err
}

// TestCheckpointWhoseAckWasLostIsOwn: a checkpoint that landed although its
// writer saw a conflict (the acknowledgement was lost and the retry met the
// write itself) is the writer's; it is not fenced off and keeps saving. A
// conflicting write by another replica still fences it.
func TestCheckpointWhoseAckWasLostIsOwn(t *testing.T) {
	ctx := t.Context()
	lk := &lostAckKV{kv: newMemKV()}
	store := &stateStore{records: lk}
	first := &invState{rec: &investigationv1.InvestigationRecord{InvestigationId: "inv-l", State: stateQueued}, done: map[string]bool{}}
	if err := store.saveState(ctx, first); err != nil {
		t.Fatal(err)
	}
	a, err := store.loadState(ctx, "inv-l")
	if err != nil {
		t.Fatal(err)
	}
	a.rec.State = stateRunning
	lk.lose = true
	if err := store.saveState(ctx, a); err != nil {
		t.Fatalf("a write that landed must not fence its writer: %v", err)
	}
	a.done[stagePlan] = true
	if err := store.saveState(ctx, a); err != nil {
		t.Fatalf("the writer keeps checkpointing over the revision it wrote: %v", err)
	}
	b, err := store.loadState(ctx, "inv-l")
	if err != nil || !b.done[stagePlan] {
		t.Fatalf("the second checkpoint was lost: %v", err)
	}
	b.done[stageGather] = true
	if err := store.saveState(ctx, b); err != nil {
		t.Fatal(err)
	}
	a.done[stageGather] = false
	lk.lose = true // a conflict that is not a's own write stays a fence
	if err := store.saveState(ctx, a); !errors.Is(err, errFenced) {
		t.Fatalf("a replica whose record another wrote must be fenced off, got %v", err)
	}
}

// TestPinsRevisionFollowsTheAnalysisInput: a new pin or new facts in a pin
// change the evidence model's key; the critic's verdict on a pin does not.
func TestPinsRevisionFollowsTheAnalysisInput(t *testing.T) {
	st := &invState{rec: &investigationv1.InvestigationRecord{}}
	st.addPin(&evidencev1.EvidencePin{Id: "p", SourceTool: "fetch_pod_logs", Version: 1, Sources: []string{"pod_logs"}})
	rev := st.pinsRev
	st.addPin(&evidencev1.EvidencePin{Id: "p", SourceTool: "fetch_pod_logs", Version: 2, Sources: []string{"pod_logs"},
		ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED, CriticRationale: "checked"})
	if st.pinsRev != rev {
		t.Fatal("a verdict changed the pins revision")
	}
	if st.pin("p").GetVersion() != 2 {
		t.Fatal("the newer version was not kept")
	}
	st.addPin(&evidencev1.EvidencePin{Id: "p", SourceTool: "fetch_pod_logs", Version: 3, Sources: []string{"pod_logs"}, NoData: true})
	if st.pinsRev == rev {
		t.Fatal("new facts kept the pins revision")
	}
	rev = st.pinsRev
	st.addPin(&evidencev1.EvidencePin{Id: "q", SourceTool: "list_pods", Version: 1})
	if st.pinsRev == rev {
		t.Fatal("a new pin kept the pins revision")
	}
}

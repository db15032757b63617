package critic

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestConsumedPinsJudgedAsGiven: pins the critic consumes from the stream
// with their facts kept encoded get the verdicts the same pins get when
// given decoded (the same status, role, confidence, rationale and
// contradictions), and each verdict carries its pin's facts.
func TestConsumedPinsJudgedAsGiven(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded NATS servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pins := func(sess string) []*evidencev1.EvidencePin {
		return []*evidencev1.EvidencePin{
			newPin("crash", "check_pod_status", crashPod(t, "api-7d9f8b6c5-x2x1z"), session(sess), at(t0)),
			newPin("other", "check_pod_status", crashPod(t, "web-5c6d7f8b9-qa"), session(sess), at(t0.Add(time.Minute))),
			newPin("ok", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-x2x1z"), session(sess), at(t0.Add(5*time.Minute))),
			newPin("empty", "get_events", nil, session(sess), noData()),
			newPin("bare", "get_events", nil, session(sess), claim("")),
		}
	}
	// Given: judged directly, decoded, on one bus.
	gb := bustest.New(t)
	given := newTestService(t, gb)
	for _, p := range pins("s") {
		addPin(t, gb, p)
		if _, _, err := given.revalidate(ctx, "s", p.GetId(), p, true); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := latest(t, gb, "s")

	// Consumed: published to another bus, judged by the critic's consumer.
	cb := bustest.New(t)
	consumer := newTestService(t, cb)
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- consumer.Run(rctx) }()
	defer func() { stop(); <-done }()
	// One at a time, as tools publish them: the critic reads the session
	// once, then each new pin as it comes (judging its encoded facts).
	added := pins("s")
	var got map[string]*evidencev1.EvidencePin
	for _, p := range added {
		addPin(t, cb, p)
		for {
			got, _ = latest(t, cb, "s")
			if judged(got[p.GetId()]) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pin %s not judged", p.GetId())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	for _, p := range added {
		g, w := got[p.GetId()], want[p.GetId()]
		if g.GetValidationStatus() != w.GetValidationStatus() || g.GetCausalRole() != w.GetCausalRole() || g.GetConfidence() != w.GetConfidence() ||
			g.GetCriticRationale() != w.GetCriticRationale() || g.GetVersion() != w.GetVersion() ||
			!slices.Equal(g.GetContradicts(), w.GetContradicts()) || !slices.Equal(g.GetSupports(), w.GetSupports()) {
			t.Errorf("pin %s consumed: %v %v %v %q v%d %v %v\ngiven: %v %v %v %q v%d %v %v", p.GetId(),
				g.GetValidationStatus(), g.GetCausalRole(), g.GetConfidence(), g.GetCriticRationale(), g.GetVersion(), g.GetContradicts(), g.GetSupports(),
				w.GetValidationStatus(), w.GetCausalRole(), w.GetConfidence(), w.GetCriticRationale(), w.GetVersion(), w.GetContradicts(), w.GetSupports())
		}
		if !proto.Equal(g.GetMetadata(), p.GetMetadata()) {
			t.Errorf("pin %s: the verdict's facts %v, want the pin's %v", p.GetId(), g.GetMetadata(), p.GetMetadata())
		}
	}
	if got["crash"].GetCausalRole() == got["ok"].GetCausalRole() && len(got["crash"].GetContradicts())+len(got["ok"].GetContradicts()) == 0 {
		t.Errorf("the session compares nothing: crash %v, ok %v", got["crash"], got["ok"])
	}
}

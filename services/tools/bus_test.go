package tools

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

// TestPublishOverJetStream runs a call against the real bus and reads the
// pin back from the session's stream: published once, even when retried.
func TestPublishOverJetStream(t *testing.T) {
	b := bustest.New(t)
	ts := newTestSet()
	s := newService(t, ts.set, nil, func(d *Deps) { d.Bus = b })
	req := &toolsv1.ExecuteToolRequest{SessionId: "sess.js", InvestigationId: "inv", Intent: "get_events", Context: incidentCtx(),
		TriggeredBy: evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION}
	resp, err := s.ExecuteTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.NoCache = true // a forced re-run publishes the same pin id and version: deduplicated
	if _, err := s.ExecuteTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	evs, err := b.Replay(t.Context(), bus.SessionFilter("sess.js"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("stream holds %d events, want 1", len(evs))
	}
	pe := evs[0].GetPin()
	if pe.GetKind() != evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED || pe.GetPin().GetId() != resp.GetPin().GetId() ||
		pe.GetPin().GetSource() != evidencev1.Source_SOURCE_MANUAL || pe.GetPin().GetMetadata().GetFields()["events"] == nil {
		t.Errorf("event = %v", pe)
	}
}

// TestPinLimitPerSession: a session at its pin limit gets a clear
// FailedPrecondition (permanent, not an outage to retry); other sessions
// are unaffected.
func TestPinLimitPerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	b := bustest.New(t)
	ts := newTestSet()
	s := newService(t, ts.set, func(c *Config) { c.MaxPinsPerSession = 2 }, func(d *Deps) { d.Bus = b })
	call := func(session, intent string) error {
		_, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: session, InvestigationId: "inv", Intent: intent,
			Context: incidentCtx(), TriggeredBy: evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION})
		return err
	}
	for _, intent := range []string{"get_events", "check_pod_status"} {
		if err := call("full", intent); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.SessionPins(t.Context(), "full"); err != nil || n != 2 {
		t.Fatalf("SessionPins = %d, %v", n, err)
	}
	err := call("full", "list_pods")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "max-pins-per-session 2") {
		t.Fatalf("third pin: %v", err)
	}
	if err := call("other", "get_events"); err != nil {
		t.Errorf("another session refused: %v", err)
	}
}

// TestPinLimitCountsOtherReplicas: the count a tools process reuses for a
// short while is read afresh once it is stale and on every call in the
// limit's last tenth, so pins another replica published are counted.
func TestPinLimitCountsOtherReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	b := bustest.New(t)
	ts := newTestSet()
	s := newService(t, ts.set, func(c *Config) { c.MaxPinsPerSession = 20; c.DuplicateTTL = 0 }, func(d *Deps) { d.Bus = b })
	clock := time.Now()
	s.now = func() time.Time { return clock }
	call := func(intent string) error {
		_, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "shared", InvestigationId: "inv", Intent: intent,
			Context: incidentCtx(), TriggeredBy: evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION})
		return err
	}
	if err := call("get_events"); err != nil {
		t.Fatal(err)
	}
	// Another replica adds 18 pins: 19 in all.
	for i := range 18 {
		ev := &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "shared",
			Pin: &evidencev1.EvidencePin{Id: fmt.Sprintf("other-%d", i), SessionId: "shared", Version: 1}}
		if _, err := b.PublishPin(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(pinCountTTL) // the count read at the first call is stale
	if err := call("check_pod_status"); err != nil {
		t.Fatalf("the 20th pin: %v", err)
	}
	err := call("list_pods") // 20 pins: in the last tenth, counted afresh
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "holds 20 pins") {
		t.Fatalf("the 21st pin: %v", err)
	}
}

// TestOmitAnswer: a caller that reads only the status gets the pin's id
// (and the replayed flag) once the pin is published; the pin on the stream
// has the facts of a whole answer, whether they were encoded straight from
// the tool's facts (a call not kept for replays) or from a Struct; without
// a publish (skip_publish) the whole answer comes back.
func TestOmitAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("embedded NATS")
	}
	b := bustest.New(t)
	ts := newTestSet()
	s := newService(t, ts.set, nil, func(d *Deps) { d.Bus = b })
	ctx := t.Context()
	for _, intent := range []string{"get_events", "check_pod_status", "list_pods"} {
		t.Run(intent, func(t *testing.T) {
			session := "omit-" + intent
			req := func() *toolsv1.ExecuteToolRequest {
				return &toolsv1.ExecuteToolRequest{SessionId: session, InvestigationId: "inv", Intent: intent, Context: incidentCtx(),
					TriggeredBy: evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION}
			}
			whole := req()
			whole.SkipPublish, whole.NoCache = true, true
			want, err := s.ExecuteTool(ctx, whole)
			if err != nil {
				t.Fatal(err)
			}
			for _, cached := range []bool{false, true} {
				r := req()
				r.OmitAnswer, r.NoCache = true, !cached
				r.SessionId = fmt.Sprintf("%s-%v", session, cached)
				resp, err := s.ExecuteTool(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetResult() != nil || resp.GetPin().GetId() == "" || resp.GetPin().GetMetadata() != nil || resp.GetPin().GetClaim() != "" {
					t.Errorf("omitted answer = %v, want the pin's id only", resp)
				}
				evs, err := b.Replay(ctx, bus.SessionFilter(r.SessionId), 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(evs) != 1 {
					t.Fatalf("stream holds %d events, want 1", len(evs))
				}
				got := evs[0].GetPin().GetPin()
				if !cached {
					// Encoded straight from the tool's facts: the params
					// come right before the metadata (one run of facts,
					// which a reader keeping facts encoded does not copy).
					if last := lastFields(t, b, r.SessionId); !slices.Equal(last, []protowire.Number{21, 22}) {
						t.Errorf("the published pin ends with fields %v, want params (21) then metadata (22)", last)
					}
				}
				if !proto.Equal(got.GetParams(), want.GetPin().GetParams()) {
					t.Errorf("cached %v: published params %v, want %v", cached, got.GetParams(), want.GetPin().GetParams())
				}
				if got.GetId() != resp.GetPin().GetId() || !proto.Equal(got.GetMetadata(), want.GetPin().GetMetadata()) ||
					got.GetResourceName() != want.GetPin().GetResourceName() || got.GetClaim() != want.GetPin().GetClaim() {
					t.Errorf("cached %v: published pin %v\nwant the whole answer's %v", cached, got, want.GetPin())
				}
			}
			r := req()
			r.OmitAnswer, r.SessionId = true, session+"-true"
			again, err := s.ExecuteTool(ctx, r) // served from the duplicate cache
			if err != nil {
				t.Fatal(err)
			}
			if !again.GetReplayed() || again.GetResult() != nil || again.GetPin().GetId() == "" {
				t.Errorf("replayed omitted answer = %v", again)
			}
			if len(want.GetPin().GetParams().GetFields()) == 0 {
				t.Errorf("%s: the call has no params to compare", intent)
			}
			if want.GetResult() == nil || len(want.GetPin().GetMetadata().GetFields()) == 0 {
				t.Errorf("an unpublished pin's answer was omitted: %v", want)
			}
		})
	}
}

// lastFields returns the numbers of the last two fields of the encoded pin
// of the session's added pin as stored.
func lastFields(t *testing.T, b *bus.Bus, session string) []protowire.Number {
	t.Helper()
	stream, err := b.JetStream().Stream(t.Context(), bus.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := stream.GetLastMsgForSubject(t.Context(), bus.PinSubject(session, evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED))
	if err != nil {
		t.Fatal(err)
	}
	fields := func(data []byte, each func(protowire.Number, []byte)) {
		for len(data) > 0 {
			num, typ, n := protowire.ConsumeTag(data)
			m := protowire.ConsumeFieldValue(num, typ, data[n:])
			if n < 0 || m < 0 {
				t.Fatalf("bad encoding % x", data)
			}
			each(num, data[n:n+m])
			data = data[n+m:]
		}
	}
	var pin []byte
	fields(raw.Data, func(num protowire.Number, v []byte) {
		if num == 4 { // PinEvent.pin
			pin, _ = protowire.ConsumeBytes(v)
		}
	})
	var nums []protowire.Number
	fields(pin, func(num protowire.Number, _ []byte) { nums = append(nums, num) })
	if len(nums) < 2 {
		t.Fatalf("pin fields %v", nums)
	}
	return nums[len(nums)-2:]
}

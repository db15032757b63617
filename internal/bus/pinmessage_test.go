package bus

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// TestFilledPinEventCarriesEveryField: pinMessage builds a new event around
// the caller's pin instead of copying it; every field of PinEvent must be
// carried over, and the caller's event and pin are left untouched.
func TestFilledPinEventCarriesEveryField(t *testing.T) {
	var names []string
	fields := (&evidencev1.PinEvent{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		names = append(names, string(fields.Get(i).Name()))
	}
	slices.Sort(names)
	if want := []string{"event_id", "kind", "pin", "session_id", "time"}; !slices.Equal(names, want) {
		t.Fatalf("PinEvent has fields %v, filledPinEvent carries %v: carry the new ones", names, want)
	}
	ts := timestamppb.New(timestamppb.Now().AsTime().Add(-3600e9))
	for _, tc := range []struct {
		name string
		ev   *evidencev1.PinEvent
		want *evidencev1.PinEvent // nil: the time is filled with now
	}{
		{"all set but the session", &evidencev1.PinEvent{EventId: "e1", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED, Time: ts,
			Pin: &evidencev1.EvidencePin{Id: "p1", SessionId: "s1", Version: 2, Claim: "c"}},
			&evidencev1.PinEvent{EventId: "e1", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED, SessionId: "s1", Time: ts,
				Pin: &evidencev1.EvidencePin{Id: "p1", SessionId: "s1", Version: 2, Claim: "c"}}},
		{"no event id", &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "s2", Time: ts,
			Pin: &evidencev1.EvidencePin{Id: "p2"}},
			&evidencev1.PinEvent{EventId: "pin:s2:p2:added:0", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "s2", Time: ts,
				Pin: &evidencev1.EvidencePin{Id: "p2"}}},
		{"no time", &evidencev1.PinEvent{EventId: "e3", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "s3",
			Pin: &evidencev1.EvidencePin{Id: "p3"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.ev)
			_, msgID, got, err := pinMessage(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(tc.ev, before) {
				t.Errorf("the caller's event changed: %v", tc.ev)
			}
			if got.GetPin() != tc.ev.GetPin() {
				t.Error("the pin was copied")
			}
			if tc.want == nil {
				if got.GetTime() == nil || got.GetEventId() != tc.ev.GetEventId() || msgID == "" {
					t.Errorf("got %v", got)
				}
				return
			}
			if !proto.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
	// Unknown fields (a newer writer's) are kept.
	ev := &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: &evidencev1.EvidencePin{Id: "p", SessionId: "s"}}
	unknown := protoreflect.RawFields{0xf8, 0x06, 0x01} // field 111, varint 1
	ev.ProtoReflect().SetUnknown(unknown)
	_, _, got, err := pinMessage(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.ProtoReflect().GetUnknown(), unknown) {
		t.Errorf("unknown fields %v, want %v", got.ProtoReflect().GetUnknown(), unknown)
	}
}

// TestCopyPin: the copy equals the pin; setting its fields, appending to
// its lists and setting its map entries leave the pin as it was.
func TestCopyPin(t *testing.T) {
	md, err := structpb.NewStruct(map[string]any{"pods": []any{map[string]any{"name": "a", "ready": true}}})
	if err != nil {
		t.Fatal(err)
	}
	p := &evidencev1.EvidencePin{
		Id: "p1", SessionId: "s", Version: 3, Claim: "claim", Confidence: 70,
		SupportingEvidence: []string{"line"}, Supports: []string{"p0"}, Contradicts: []string{"p9"},
		Metadata: md, Timestamp: timestamppb.Now(),
		ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC,
	}
	p.ProtoReflect().SetUnknown(protoreflect.RawFields{0xf8, 0x06, 0x01})
	before := proto.Clone(p)
	if got := CopyPin(nil); got != nil {
		t.Errorf("CopyPin(nil) = %v", got)
	}
	c := CopyPin(p)
	if !proto.Equal(c, p) {
		t.Fatalf("copy %v differs from %v", c, p)
	}
	if c.GetMetadata() != p.GetMetadata() {
		t.Error("the facts were copied, not shared")
	}
	c.Version, c.Claim, c.ValidationStatus = 4, "other", evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED
	c.Supports = append(c.Supports, "p2")
	c.Contradicts[0] = "changed"
	c.SupportingEvidence = append(c.SupportingEvidence[:0], "replaced")
	c.ProtoReflect().SetUnknown(nil)
	if !proto.Equal(p, before) {
		t.Errorf("changing the copy changed the pin: %v", p)
	}
}

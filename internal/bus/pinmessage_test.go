package bus

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
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

// TestCopyPinCopiesEveryField: a pin with every field of EvidencePin set
// (each list with two elements) is copied whole, whatever fields the
// message gains.
func TestCopyPinCopiesEveryField(t *testing.T) {
	p := &evidencev1.EvidencePin{}
	m := p.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		value := func(k int) protoreflect.Value {
			switch fd.Kind() {
			case protoreflect.StringKind:
				return protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), k))
			case protoreflect.BoolKind:
				return protoreflect.ValueOfBool(true)
			case protoreflect.EnumKind:
				return protoreflect.ValueOfEnum(protoreflect.EnumNumber(1 + k))
			case protoreflect.Int64Kind:
				return protoreflect.ValueOfInt64(int64(fd.Number())*10 + int64(k))
			case protoreflect.DoubleKind:
				return protoreflect.ValueOfFloat64(float64(fd.Number()) + 0.5)
			case protoreflect.MessageKind:
				sub := m.NewField(fd).Message()
				if sub.Descriptor().FullName() == "google.protobuf.Struct" {
					s, _ := structpb.NewStruct(map[string]any{string(fd.Name()): float64(k)})
					return protoreflect.ValueOfMessage(s.ProtoReflect())
				}
				sf := sub.Descriptor().Fields()
				for j := range sf.Len() {
					if sf.Get(j).Kind() == protoreflect.Int64Kind {
						sub.Set(sf.Get(j), protoreflect.ValueOfInt64(int64(fd.Number())))
					}
				}
				return protoreflect.ValueOfMessage(sub)
			}
			t.Fatalf("field %s of kind %v: teach this test to set it", fd.Name(), fd.Kind())
			return protoreflect.Value{}
		}
		switch {
		case fd.IsMap():
			t.Fatalf("map field %s: teach this test to set it", fd.Name())
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Append(value(0))
			l.Append(value(1))
		default:
			m.Set(fd, value(0))
		}
		if !m.Has(fd) {
			t.Fatalf("field %s not set", fd.Name())
		}
	}
	c := CopyPin(p)
	if !proto.Equal(c, p) {
		t.Fatalf("CopyPin lost fields:\n got %v\nwant %v", c, p)
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
	unknown := make(protoreflect.RawFields, 3, 64) // room to append in place
	copy(unknown, []byte{0xf8, 0x06, 0x01})
	p.ProtoReflect().SetUnknown(unknown)
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
	cu, pu := c.ProtoReflect().GetUnknown(), p.ProtoReflect().GetUnknown()
	if &cu[0] != &pu[0] {
		t.Error("the unknown fields were copied, not shared")
	}
	// Unknown fields added to the copy (a merge appends them) leave the
	// pin's as they were.
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal([]byte{0xf8, 0x06, 0x02}, c); err != nil {
		t.Fatal(err)
	}
	merged := slices.Clone(c.ProtoReflect().GetUnknown())
	if len(merged) != 6 {
		t.Errorf("merged unknown fields %x", merged)
	}
	// And the pin's own additions leave the copy's.
	p2 := CopyPin(p)
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal([]byte{0xf8, 0x06, 0x03}, p2); err != nil {
		t.Fatal(err)
	}
	if got := c.ProtoReflect().GetUnknown(); !bytes.Equal(got, merged) {
		t.Errorf("appending to one copy's unknown fields changed another's: %x, want %x", got, merged)
	}
	c.ProtoReflect().SetUnknown(nil)
	if !proto.Equal(p, before) {
		t.Errorf("changing the copy changed the pin: %v", p)
	}
}

// fullPin is a pin with every field set (from the descriptor: a field
// added to EvidencePin is set too).
func fullPin(t testing.TB, id string, seed int) *evidencev1.EvidencePin {
	t.Helper()
	p := &evidencev1.EvidencePin{}
	m := p.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), seed))
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.EnumKind:
			v = protoreflect.ValueOfEnum(1)
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			v = protoreflect.ValueOfInt32(int32(seed + i + 1))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			v = protoreflect.ValueOfInt64(int64(seed + i + 1))
		case protoreflect.DoubleKind:
			v = protoreflect.ValueOfFloat64(float64(seed+i) + 0.5)
		case protoreflect.FloatKind:
			v = protoreflect.ValueOfFloat32(float32(seed+i) + 0.5)
		case protoreflect.MessageKind:
			if fd.IsList() || fd.IsMap() {
				continue
			}
			switch fd.Message().FullName() {
			case "google.protobuf.Struct":
				st, err := structpb.NewStruct(map[string]any{"pods": []any{map[string]any{"name": fmt.Sprint("p", seed)}}})
				if err != nil {
					t.Fatal(err)
				}
				v = protoreflect.ValueOfMessage(st.ProtoReflect())
			case "google.protobuf.Timestamp":
				v = protoreflect.ValueOfMessage(timestamppb.Now().ProtoReflect())
			default:
				v = m.NewField(fd)
			}
		default:
			continue
		}
		if fd.IsList() {
			l := m.Mutable(fd).List()
			l.Append(v)
			l.Append(v)
			continue
		}
		if fd.IsMap() {
			continue
		}
		m.Set(fd, v)
	}
	p.Id = id
	return p
}

// TestSlimVerdict: a verdict decoded without its content binds to the same
// pin as the whole verdict; an added pin, and bytes that do not parse, are
// left as they are.
func TestSlimVerdict(t *testing.T) {
	added := fullPin(t, "p1", 1)
	verdict := fullPin(t, "p1", 2)
	for _, kind := range []evidencev1.PinEventKind{evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED, evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED} {
		data, err := proto.Marshal(&evidencev1.PinEvent{EventId: "e", Kind: kind, SessionId: "s", Pin: verdict, Time: timestamppb.Now()})
		if err != nil {
			t.Fatal(err)
		}
		slim := slimVerdict(data)
		if len(slim) >= len(data)/2 {
			t.Errorf("%v: slim verdict of %d bytes from %d", kind, len(slim), len(data))
		}
		var whole, thin evidencev1.PinEvent
		if err := proto.Unmarshal(data, &whole); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(slim, &thin); err != nil {
			t.Fatal(err)
		}
		if thin.GetEventId() != "e" || thin.GetKind() != kind || thin.GetSessionId() != "s" || thin.GetTime() == nil {
			t.Errorf("%v: the event's own fields were lost: %v", kind, &thin)
		}
		if got, want := VerdictOf(added, thin.GetPin()), VerdictOf(added, whole.GetPin()); !proto.Equal(got, want) {
			t.Errorf("%v: bound slim verdict %v\nwant %v", kind, got, want)
		}
		if thin.GetPin().GetMetadata() != nil || thin.GetPin().GetRawOutput() != "" {
			t.Errorf("%v: the content was kept: %v", kind, thin.GetPin())
		}
	}
	data, err := proto.Marshal(&evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: added})
	if err != nil {
		t.Fatal(err)
	}
	if got := slimVerdict(data); !slices.Equal(got, data) {
		t.Error("an added pin was changed")
	}
	for _, bad := range [][]byte{{0xff}, {0x22, 0x05, 0x01}, append([]byte{0x10, 0x02}, 0x22)} {
		if got := slimVerdict(bad); !slices.Equal(got, bad) {
			t.Errorf("bytes % x that do not parse became % x", bad, got)
		}
	}
}

// TestLastingBinderKeepsPinsEncoded: Follow's binder keeps an added pin
// encoded, and decoded while it is one of the recentDecoded last; a
// verdict binds to the decoded pin while it is kept, and to the same
// content decoded again once recentDecoded other pins came after it. A
// one-shot binder keeps the decoded pin.
func TestLastingBinderKeepsPinsEncoded(t *testing.T) {
	b := &Bus{cfg: Config{Keys: noKeys{}}}
	ctx := t.Context()
	event := func(kind evidencev1.PinEventKind, pin *evidencev1.EvidencePin) (*evidencev1.SessionEvent, []byte) {
		t.Helper()
		pe := &evidencev1.PinEvent{EventId: "e", Kind: kind, SessionId: "s", Pin: pin, Time: timestamppb.Now()}
		data, err := proto.Marshal(pe)
		if err != nil {
			t.Fatal(err)
		}
		dec := &evidencev1.PinEvent{}
		if err := proto.Unmarshal(data, dec); err != nil {
			t.Fatal(err)
		}
		subject := PinSubject("s", kind)
		return &evidencev1.SessionEvent{Subject: subject, Event: &evidencev1.SessionEvent_Pin{Pin: dec}}, data
	}
	want := fullPin(t, "p1", 1)
	verdict := func() *evidencev1.EvidencePin {
		v := fullPin(t, "p1", 2)
		v.ValidationStatus = evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED
		return v
	}
	wantBound := VerdictOf(want, verdict())

	vb := b.newVerdictBinder(true, false)
	added, data := event(evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, want)
	if keep, err := vb.bind(ctx, added, data); err != nil || !keep {
		t.Fatalf("added pin: keep %v, %v", keep, err)
	}
	key := PinSubject("s", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED)
	key = key[:len(key)-len(".pin.added")] + "\x00p1"
	kept, ok := vb.added[key]
	if !ok || kept.pin == nil || len(kept.data) == 0 {
		t.Fatalf("the lasting binder keeps %+v under %q, want the encoding and the recent pin", kept, key)
	}
	live := added.GetPin().GetPin()
	v1, _ := event(evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED, verdict())
	if keep, err := vb.bind(ctx, v1, nil); err != nil || !keep {
		t.Fatalf("verdict: keep %v, %v", keep, err)
	}
	if got := v1.GetPin().GetPin(); !proto.Equal(got, wantBound) || got.GetMetadata() != live.GetMetadata() {
		t.Errorf("verdict on a live pin: bound %v (shares its facts: %v), want %v", got, got.GetMetadata() == live.GetMetadata(), wantBound)
	}
	// recentDecoded pins later only its encoding is kept: bind again.
	for i := range recentDecoded {
		other, data := event(evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, fullPin(t, fmt.Sprintf("q%d", i), 1))
		if _, err := vb.bind(ctx, other, data); err != nil {
			t.Fatal(err)
		}
		if i == recentDecoded-2 && vb.added[key].pin == nil {
			t.Fatal("the pin was released before recentDecoded others came")
		}
	}
	if k := vb.added[key]; k.pin != nil || len(k.data) == 0 {
		t.Fatalf("after %d more pins the binder keeps %+v, want the encoding only", recentDecoded, k)
	}
	if n := len(vb.recent); n != recentDecoded {
		t.Errorf("%d pins kept decoded, want %d", n, recentDecoded)
	}
	v2, _ := event(evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED, verdict())
	if keep, err := vb.bind(ctx, v2, nil); err != nil || !keep {
		t.Fatalf("verdict after collection: keep %v, %v", keep, err)
	}
	if got := v2.GetPin().GetPin(); !proto.Equal(got, wantBound) || got.GetMetadata() == live.GetMetadata() {
		t.Errorf("verdict on a released pin: bound %v, want %v decoded again", got, wantBound)
	}
	if vb.added[key].pin == nil {
		t.Error("the pin decoded again is not kept as a recent one")
	}

	// Without the event's encoding (or with one the binder cannot split),
	// the lasting binder encodes the decoded pin itself.
	other, _ := event(evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, fullPin(t, "p2", 3))
	if _, err := vb.bind(ctx, other, []byte{0xff}); err != nil {
		t.Fatal(err)
	}
	if k := vb.added[key[:len(key)-2]+"p2"]; len(k.data) == 0 {
		t.Errorf("a pin without its encoding: kept %+v", k)
	}

	oneShot := b.newVerdictBinder(false, false)
	added, data = event(evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, want)
	if _, err := oneShot.bind(ctx, added, data); err != nil {
		t.Fatal(err)
	}
	if k := oneShot.added[key]; k.pin != added.GetPin().GetPin() || k.data != nil {
		t.Errorf("the one-shot binder keeps %+v, want the decoded pin", k)
	}
}

// TestPinBytes: the pin of an encoded pin event, or nil when there is not
// exactly one.
func TestPinBytes(t *testing.T) {
	pin := fullPin(t, "p1", 1)
	data, err := proto.Marshal(&evidencev1.PinEvent{EventId: "e", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	got := &evidencev1.EvidencePin{}
	if err := proto.Unmarshal(pinBytes(data), got); err != nil || !proto.Equal(got, pin) {
		t.Errorf("pinBytes: %v, %v", got, err)
	}
	// The pin is a part of data, clipped: appending to it leaves data as it was.
	before := slices.Clone(data)
	data = append(data[:len(data):len(data)], 0x7a) // a byte after the pin, in data's array
	data = data[:len(before)]
	_ = append(pinBytes(data), 0x00, 0x00)
	if !bytes.Equal(data[:cap(data)][:len(before)+1], append(before, 0x7a)) {
		t.Error("appending to pinBytes' result wrote into the event's bytes")
	}
	twice := append(slices.Clone(data), data...)
	for name, in := range map[string][]byte{"no pin": {0x10, 0x01}, "two pins": twice, "garbage": {0xff}, "empty": nil} {
		if got := pinBytes(in); got != nil {
			t.Errorf("%s: % x", name, got)
		}
	}
}

type noKeys struct{}

func (noKeys) SigningKey(string) (ed25519.PrivateKey, bool) { return nil, false }
func (noKeys) PublicKey(string) (ed25519.PublicKey, bool)   { return nil, false }

package bus

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// factsEncodedCases are encoded pin events: a pin with every field set, a
// pin's facts in two parts, a pin in two parts, a pin with unknown fields
// of its own, facts that do not decode, and bytes that do not parse.
func factsEncodedCases(t testing.TB) map[string][]byte {
	t.Helper()
	marshal := func(m proto.Message) []byte {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := fullPin(t, "p1", 1)
	full.Metadata = mustStruct(t, map[string]any{"pods": []any{map[string]any{"name": "a", "ready": true, "restarts": 3.0}}, "parent_ref": "x", "q": nil})
	event := marshal(&evidencev1.PinEvent{EventId: "e", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "s", Pin: full, Time: timestamppb.Now()})
	pin := marshal(full)
	withPin := func(pin []byte) []byte {
		b := protowire.AppendTag([]byte{0x08, 0x01}, pinEventPinField, protowire.BytesType) // kind = added
		return protowire.AppendBytes(b, pin)
	}
	more := marshal(&evidencev1.EvidencePin{Metadata: mustStruct(t, map[string]any{"more": "yes"}), Supports: []string{"p9"}})
	unknown := protowire.AppendVarint(protowire.AppendTag(slices.Clone(pin), 999, protowire.VarintType), 7)
	badUTF8 := marshal(&evidencev1.EvidencePin{Id: "p", Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("ok")}}})
	badUTF8 = slices.Clone(badUTF8)
	badUTF8[len(badUTF8)-1] = 0xff // the last byte of the string value "ok"
	return map[string][]byte{
		"every field":          event,
		"facts in two parts":   withPin(append(slices.Clone(pin), more...)),
		"pin in two parts":     append(withPin(pin), withPin(more)...),
		"unknown pin fields":   withPin(unknown),
		"invalid UTF-8 facts":  withPin(badUTF8),
		"facts that end early": withPin(append(slices.Clone(pin[:len(pin)-40]), 0xb2, 0x01, 0x05, 0x0a)),
		"no pin":               {0x08, 0x01},
		"garbage":              {0xff, 0xff},
	}
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkFactsEncoded: decoding with the facts kept encoded fails exactly
// when decoding the whole event fails, and otherwise gives a pin without
// decoded facts that encodes to the same event.
func checkFactsEncoded(t *testing.T, data []byte) {
	t.Helper()
	whole, lazy := &evidencev1.PinEvent{}, &evidencev1.PinEvent{}
	werr := proto.Unmarshal(data, whole)
	lerr := unmarshalPinEvent(data, lazy, true, true)
	if (werr == nil) != (lerr == nil) {
		t.Fatalf("whole decoding: %v; facts encoded: %v", werr, lerr)
	}
	if werr != nil {
		return
	}
	// A pin in several parts (merged on decoding) is decoded whole.
	if _, _, one := onlyField(data, pinEventPinField); one && (lazy.GetPin().GetMetadata() != nil || lazy.GetPin().GetParams() != nil) {
		t.Fatalf("facts decoded: %v", lazy.GetPin())
	}
	enc, err := proto.Marshal(lazy)
	if err != nil {
		t.Fatal(err)
	}
	back := &evidencev1.PinEvent{}
	if err := proto.Unmarshal(enc, back); err != nil || !proto.Equal(back, whole) {
		t.Fatalf("encoded again: %v (%v)\nwant %v", back, err, whole)
	}
	if got, want := HasFact(lazy.GetPin(), "parent_ref"), HasFact(whole.GetPin(), "parent_ref"); got != want {
		t.Errorf("HasFact(parent_ref) = %v with the facts encoded, %v decoded", got, want)
	}
	if got, want := PinKindOf(lazy.GetPin()), PinKindOf(whole.GetPin()); got != want {
		t.Errorf("PinKindOf = %s with the facts encoded, %s decoded", got, want)
	}
	if got, want := Metadata(lazy.GetPin()), whole.GetPin().GetMetadata(); !proto.Equal(got, want) {
		t.Errorf("Metadata = %v, want %v", got, want)
	}
	if got, want := HasMetadata(lazy.GetPin()), len(whole.GetPin().GetMetadata().GetFields()) > 0; got != want {
		t.Errorf("HasMetadata = %v, decoded: %v", got, want)
	}
	// SplitEncodedFacts: the facts as a pin of metadata and params, and the
	// pin without them.
	enc, lean := SplitEncodedFacts(lazy.GetPin())
	if enc == nil {
		// No facts kept encoded (none, or a pin decoded whole).
		if lean != lazy.GetPin() {
			t.Error("SplitEncodedFacts copied a pin without encoded facts")
		}
		return
	}
	facts := &evidencev1.EvidencePin{}
	if err := proto.Unmarshal(enc, facts); err != nil || !proto.Equal(facts.GetMetadata(), whole.GetPin().GetMetadata()) ||
		!proto.Equal(facts.GetParams(), whole.GetPin().GetParams()) {
		t.Errorf("SplitEncodedFacts: facts %v (%v)", facts, err)
	}
	if u := lazy.GetPin().ProtoReflect().GetUnknown(); onlyFacts(u) && (&enc[0] != &u[0] || cap(enc) != len(enc)) {
		t.Error("SplitEncodedFacts copied facts that are all of the pin's unknown fields, or did not clip them")
	}
	b, err := proto.Marshal(lean)
	if err != nil {
		t.Fatal(err)
	}
	gotLean, wantLean := &evidencev1.EvidencePin{}, proto.CloneOf(whole.GetPin())
	wantLean.Metadata, wantLean.Params = nil, nil
	if err := proto.Unmarshal(b, gotLean); err != nil || !proto.Equal(gotLean, wantLean) {
		t.Errorf("SplitEncodedFacts: lean pin %v (%v), want %v", gotLean, err, wantLean)
	}
}

func TestFactsEncoded(t *testing.T) {
	for name, data := range factsEncodedCases(t) {
		t.Run(name, func(t *testing.T) { checkFactsEncoded(t, data) })
	}
	// The fixture cases cover what they claim.
	cases := factsEncodedCases(t)
	for _, name := range []string{"invalid UTF-8 facts", "facts that end early"} {
		if err := proto.Unmarshal(cases[name], &evidencev1.PinEvent{}); err == nil {
			t.Errorf("%s: decodes", name)
		}
	}
	lazy := &evidencev1.PinEvent{}
	if err := unmarshalPinEvent(cases["every field"], lazy, true, true); err != nil {
		t.Fatal(err)
	}
	if !HasFact(lazy.GetPin(), "parent_ref") || !HasFact(lazy.GetPin(), "pods") || HasFact(lazy.GetPin(), "nodes") {
		t.Errorf("HasFact on encoded facts: parent_ref %v, pods %v, nodes %v", HasFact(lazy.GetPin(), "parent_ref"),
			HasFact(lazy.GetPin(), "pods"), HasFact(lazy.GetPin(), "nodes"))
	}
}

// FuzzFactsEncoded: for any bytes, decoding a pin event with its facts kept
// encoded agrees with decoding it whole (fails alike, encodes to the same
// event, classifies the pin alike).
func FuzzFactsEncoded(f *testing.F) {
	for _, data := range factsEncodedCases(f) {
		f.Add(data)
	}
	f.Fuzz(checkFactsEncoded)
}

// TestBinderFactsEncoded: a follower's binder that keeps facts encoded
// decodes a released pin again the same way: the bound verdict has no
// decoded facts and encodes to the verdict bound to the whole pin.
func TestBinderFactsEncoded(t *testing.T) {
	b := &Bus{cfg: Config{Keys: noKeys{}}}
	added := fullPin(t, "p1", 1)
	data, err := proto.Marshal(&evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: added})
	if err != nil {
		t.Fatal(err)
	}
	vb := b.newVerdictBinder(true, true)
	func() {
		ev := &evidencev1.PinEvent{}
		if err := unmarshalPinEvent(data, ev, true, true); err != nil {
			t.Fatal(err)
		}
		se := &evidencev1.SessionEvent{Subject: PinSubject("s", ev.GetKind()), Event: &evidencev1.SessionEvent_Pin{Pin: ev}}
		if _, err := vb.bind(t.Context(), se, data); err != nil {
			t.Fatal(err)
		}
	}()
	key := "rcamesh.v1.session.s\x00p1"
	if _, ok := vb.added[key]; !ok {
		t.Fatalf("nothing kept under %q: %v", key, vb.added)
	}
	// Released as recentDecoded other pins come: decoded again to bind.
	for i := range recentDecoded {
		pe := &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, Pin: &evidencev1.EvidencePin{Id: fmt.Sprintf("q%d", i)}}
		d, err := proto.Marshal(pe)
		if err != nil {
			t.Fatal(err)
		}
		se := &evidencev1.SessionEvent{Subject: PinSubject("s", pe.GetKind()), Event: &evidencev1.SessionEvent_Pin{Pin: pe}}
		if _, err := vb.bind(t.Context(), se, d); err != nil {
			t.Fatal(err)
		}
	}
	if vb.added[key].pin != nil {
		t.Fatal("the decoded pin is still kept")
	}
	verdict := fullPin(t, "p1", 2)
	se := &evidencev1.SessionEvent{Subject: PinSubject("s", evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED),
		Event: &evidencev1.SessionEvent_Pin{Pin: &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED, Pin: verdict}}}
	if keep, err := vb.bind(t.Context(), se, nil); err != nil || !keep {
		t.Fatalf("keep %v, %v", keep, err)
	}
	got := se.GetPin().GetPin()
	if got.GetMetadata() != nil {
		t.Error("the kept pin was decoded with its facts")
	}
	enc, err := proto.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	back := &evidencev1.EvidencePin{}
	if err := proto.Unmarshal(enc, back); err != nil || !proto.Equal(back, VerdictOf(added, verdict)) {
		t.Errorf("bound verdict once encoded: %v (%v)\nwant %v", back, err, VerdictOf(added, verdict))
	}
}

// TestFactsEncodedSharesOneFactsRun: a pin whose facts are one run of
// fields (metadata alone, or params and metadata one after the other, as
// protobuf encodes them) and that has no unknown fields of its own keeps
// that run as a clipped part of the bytes it was decoded from (no copy);
// facts fields apart from each other, or beside unknown fields of the
// pin's own, are a copy, which later changes to the bytes leave as they
// were. Either way the pin decodes as protobuf-go decodes it.
func TestFactsEncodedSharesOneFactsRun(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	facts := mustStruct(t, map[string]any{"pods": []any{map[string]any{"name": "a", "ready": true}}})
	params := mustStruct(t, map[string]any{"namespace": "shop"})
	one := fullPin(t, "p1", 1)
	one.Metadata, one.Params = facts, nil
	two := fullPin(t, "p2", 2)
	two.Metadata, two.Params = facts, params
	// params, then a known field, then metadata: two runs.
	lead := fullPin(t, "p3", 3)
	lead.Metadata, lead.Params, lead.Version = nil, params, 0
	apart := marshal(lead)
	apart = protowire.AppendVarint(protowire.AppendTag(apart, 32, protowire.VarintType), 7)
	apart = protowire.AppendBytes(protowire.AppendTag(apart, pinMetadataField, protowire.BytesType), marshal(facts))
	own := fullPin(t, "p4", 4)
	own.Metadata = facts
	own.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7))
	for _, c := range []struct {
		name   string
		data   []byte
		shared bool
	}{
		{"metadata alone", marshal(one), true},
		{"params and metadata", marshal(two), true},
		{"facts apart", apart, false},
		{"unknown fields of its own", marshal(own), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := &evidencev1.EvidencePin{}
			if err := proto.Unmarshal(c.data, want); err != nil {
				t.Fatal(err)
			}
			got := &evidencev1.EvidencePin{}
			if err := unmarshalPinFactsEncoded(c.data, got, true); err != nil {
				t.Fatal(err)
			}
			if got.GetMetadata() != nil || got.GetParams() != nil {
				t.Fatal("facts decoded")
			}
			whole := &evidencev1.EvidencePin{}
			if err := proto.Unmarshal(marshal(got), whole); err != nil || !proto.Equal(whole, want) {
				t.Fatalf("decodes to %v (%v), want %v", whole, err, want)
			}
			u := got.ProtoReflect().GetUnknown()
			at := bytes.Index(c.data, u)
			if c.shared {
				if at < 0 || cap(u) != len(u) {
					t.Fatalf("the facts (at %d, len %d, cap %d) are not a clipped run of the bytes", at, len(u), cap(u))
				}
				c.data[at+len(u)-1] ^= 0xff
				if u[len(u)-1] != c.data[at+len(u)-1] {
					t.Error("the facts are a copy, not a part of the decoded bytes")
				}
				return
			}
			before := slices.Clone(u)
			for i := range c.data {
				c.data[i] ^= 0xff
			}
			if !bytes.Equal(u, before) {
				t.Error("the unknown fields changed with the decoded bytes")
			}
		})
	}
}

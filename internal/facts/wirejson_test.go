package facts

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// checkFields holds DecodeFields of an encoded Struct to Decode of the
// Struct protobuf-go decodes from the same bytes, into typ: the same
// result, error and value; or, where it does not read the encoding,
// AddStruct's refusal or ErrNotReadEncoded.
func checkFields(t *testing.T, enc []byte, typ reflect.Type) {
	t.Helper()
	st := &structpb.Struct{}
	perr := proto.Unmarshal(enc, st)
	f := Fields{}
	if !f.AddStruct(enc) || perr != nil {
		// Read by decoding the Struct; or bytes protobuf-go refuses, which
		// a pin kept encoded never carries (checked when it is read).
		for key := range f {
			DecodeFields(f, key, reflect.New(typ).Interface()) // no panic
		}
		return
	}
	if len(f) != len(st.GetFields()) {
		t.Fatalf("AddStruct found %d keys, decoding %d: %x", len(f), len(st.GetFields()), enc)
	}
	for key := range st.GetFields() {
		got, want := reflect.New(typ), reflect.New(typ)
		gok, gerr := DecodeFields(f, key, got.Interface())
		if errors.Is(gerr, ErrNotReadEncoded) {
			continue // read by decoding the Struct
		}
		wok, werr := Decode(st, key, want.Interface())
		if gok != wok || (gerr == nil) != (werr == nil) {
			t.Fatalf("%v, key %q of %x: DecodeFields %v, %v; Decode %v, %v", typ, key, enc, gok, gerr, wok, werr)
		}
		if werr == nil && !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
			t.Fatalf("%v, key %q:\nDecodeFields %#v\nDecode       %#v", typ, key, got.Elem().Interface(), want.Elem().Interface())
		}
		// The JSON itself is the decoded value's.
		if v := st.GetFields()[key]; v != nil {
			w := appendJSON(nil, v)
			g, ok := appendValueWireJSON(nil, f[key], 0)
			if !ok || string(g) != string(w) {
				t.Fatalf("key %q: JSON %s (%v), want %s", key, g, ok, w)
			}
		}
	}
	if ok, err := DecodeFields(f, "\x00absent", new(any)); ok || err != nil {
		t.Errorf("a missing key: %v, %v", ok, err)
	}
}

// TestDecodeFieldsMatchesDecode: on the facts tools put (random, every
// fact type), on values no tool puts, and on encodings protobuf-go reads
// its own way (a key given twice, an entry's key or value given twice, a
// value's kind given twice, unknown fields, known fields with another wire
// type, missing keys and values).
func TestDecodeFieldsMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 0
	for _, sample := range factTypes {
		typ := reflect.TypeOf(sample)
		for range 100 {
			v := reflect.New(typ).Elem()
			fill(v, r, 0)
			md, err := Put(nil, "k", v.Interface())
			if err != nil {
				continue
			}
			md["window_origin"] = "default"
			enc, ok := AppendStruct(nil, md)
			if !ok {
				continue
			}
			checkFields(t, enc, typ)
			checkFields(t, enc, reflect.TypeFor[any]())
			n++
		}
	}
	if n < 1000 {
		t.Errorf("only %d values compared", n)
	}

	odd := []*structpb.Value{
		structpb.NewNumberValue(2.5), structpb.NewNumberValue(math.NaN()), structpb.NewNumberValue(math.Inf(-1)),
		structpb.NewNumberValue(math.Inf(1)), structpb.NewNumberValue(1e21), structpb.NewNumberValue(1e-7),
		structpb.NewNumberValue(math.Copysign(0, -1)), {}, structpb.NewNullValue(), structpb.NewBoolValue(false),
		{Kind: &structpb.Value_StructValue{}}, {Kind: &structpb.Value_ListValue{}},
		structpb.NewStringValue("\x00<>&\u2028\"\\"),
		structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{{}, structpb.NewBoolValue(true), structpb.NewListValue(&structpb.ListValue{})}}),
		structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"name": structpb.NewStringValue("lower"), "Name": structpb.NewStringValue("upper"), "NAME": structpb.NewStringValue("caps"),
			"restarts": structpb.NewNumberValue(3.5), "ready": structpb.NewStringValue("yes"), "": structpb.NewNullValue(),
		}}),
	}
	types := []reflect.Type{reflect.TypeFor[any](), reflect.TypeFor[Pod](), reflect.TypeFor[[]Pod](), reflect.TypeFor[string](),
		reflect.TypeFor[int32](), reflect.TypeFor[[]any](), reflect.TypeFor[map[string]string](), reflect.TypeFor[float64]()}
	for _, v := range odd {
		enc, err := proto.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"k": v}})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			checkFields(t, enc, typ)
		}
	}

	// Hand-made encodings.
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	num := func(f float64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, valueNumber, protowire.Fixed64Type), math.Float64bits(f))
	}
	boolean := protowire.AppendVarint(protowire.AppendTag(nil, valueBool, protowire.VarintType), 7)
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	wrongType := protowire.AppendVarint(protowire.AppendTag(nil, valueString, protowire.VarintType), 1)
	entry := func(k string, v ...[]byte) []byte { return msg(structFields, str(entryKey, k), msg(entryValue, v...)) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	cases := map[string][]byte{
		"key twice":             cat(entry("k", num(1)), entry("k", str(valueString, "second"))),
		"entry key twice":       msg(structFields, str(entryKey, "x"), str(entryKey, "k"), msg(entryValue, num(2))),
		"entry value twice":     msg(structFields, str(entryKey, "k"), msg(entryValue, num(2)), msg(entryValue, boolean)),
		"kind twice":            entry("k", num(1), str(valueString, "s")),
		"struct kind twice":     entry("k", msg(valueStruct, entry("a", num(1))), msg(valueStruct, entry("b", num(2)))),
		"unknown fields":        cat(unknown, entry("k", unknown, num(3), wrongType), msg(structFields, str(entryKey, "u"), unknown, msg(entryValue, boolean))),
		"no key":                msg(structFields, msg(entryValue, num(4))),
		"no value":              msg(structFields, str(entryKey, "k")),
		"nested duplicates":     entry("k", msg(valueStruct, entry("a", num(1)), entry("B", num(2)), entry("a", str(valueString, "last")))),
		"list with odd members": entry("k", msg(valueList, msg(listValues), unknown, msg(listValues, boolean), msg(listValues, msg(valueList)))),
		"bad UTF-8 value":       entry("k", str(valueString, "a\xff")),
		"bad UTF-8 key":         cat(entry("k", num(1)), entry("\xff", num(2))),
		"truncated":             entry("k", num(1))[:5],
	}
	for name, enc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, typ := range types {
				checkFields(t, enc, typ)
			}
		})
	}
	f := Fields{}
	if f.AddStruct(cases["bad UTF-8 key"]) || len(f) != 0 {
		t.Errorf("AddStruct took a key that is not UTF-8: %v", f)
	}
	if !f.AddStruct(cases["bad UTF-8 value"]) {
		t.Fatal("AddStruct refused an entry it reads only when decoded")
	}
	if _, err := DecodeFields(f, "k", new(any)); !errors.Is(err, ErrNotReadEncoded) {
		t.Errorf("a value that is not UTF-8: %v", err)
	}
}

// FuzzDecodeFields: on any bytes, what DecodeFields reads is what Decode
// reads from the Struct protobuf-go decodes.
func FuzzDecodeFields(f *testing.F) {
	md, _ := Put(nil, KeyPods, benchPods()[:2])
	enc, _ := AppendStruct(nil, md)
	f.Add(enc)
	f.Add([]byte{})
	odd, _ := proto.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewNumberValue(math.NaN()), "l": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{{}}})}})
	f.Add(odd)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFields(t, b, reflect.TypeFor[any]())
		checkFields(t, b, reflect.TypeFor[[]Pod]())
	})
}

// BenchmarkDecodeFields: BenchmarkDecode's facts read from their encoding
// (the Struct's decoding included, as a reader of a pin kept encoded pays
// it).
func BenchmarkDecodeFields(b *testing.B) {
	md, err := Put(nil, KeyPods, benchPods())
	if err != nil {
		b.Fatal(err)
	}
	enc, ok := AppendStruct(nil, md)
	if !ok {
		b.Fatal("not encoded")
	}
	b.Run("fields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := Fields{}
			var pods []Pod
			if !f.AddStruct(enc) {
				b.Fatal("refused")
			}
			if ok, err := DecodeFields(f, KeyPods, &pods); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st := &structpb.Struct{}
			var pods []Pod
			if err := proto.Unmarshal(enc, st); err != nil {
				b.Fatal(err)
			}
			if ok, err := Decode(st, KeyPods, &pods); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}

// TestDecodeWireMatchesJSON: decodeWire, DecodeFields' reading of a value
// straight from its encoding, gives what the JSON path gives whenever it
// reads a value, and reads most values of the fact types tools put (the
// rest, values encoding/json refuses or converts, take the JSON path).
func TestDecodeWireMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, sample := range factTypes {
		typ := reflect.TypeOf(sample)
		read, tried := 0, 0
		for range 200 {
			v := reflect.New(typ).Elem()
			fill(v, r, 0)
			md, err := Put(nil, "k", v.Interface())
			if err != nil {
				continue
			}
			enc, ok := AppendStruct(nil, md)
			f := Fields{}
			if !ok || !f.AddStruct(enc) {
				continue
			}
			st := &structpb.Struct{}
			if err := proto.Unmarshal(enc, st); err != nil {
				t.Fatal(err)
			}
			tried++
			got, want := reflect.New(typ), reflect.New(typ)
			if !decodeWire(f["k"], got.Interface()) {
				if !got.Elem().IsZero() {
					t.Fatalf("%v: decodeWire refused the value but set %#v", typ, got.Elem().Interface())
				}
				continue
			}
			read++
			if _, err := Decode(st, "k", want.Interface()); err != nil {
				t.Fatalf("%v: decodeWire read %#v, the JSON path fails: %v", typ, got.Elem().Interface(), err)
			}
			if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
				t.Fatalf("%v:\ndecodeWire %#v\nJSON path  %#v", typ, got.Elem().Interface(), want.Elem().Interface())
			}
		}
		switch typ {
		case reflect.TypeFor[[]Pod](), reflect.TypeFor[[]Event](), reflect.TypeFor[[]Node](), reflect.TypeFor[[]Deployment](),
			reflect.TypeFor[[]Resource](), reflect.TypeFor[[]LogLine](), reflect.TypeFor[[]Series](), reflect.TypeFor[[]Deploy](),
			reflect.TypeFor[[]Commit](), reflect.TypeFor[[]TopQuery](), reflect.TypeFor[[]DBEvent](), reflect.TypeFor[[]Monitor](), reflect.TypeFor[[]StatusIncident]():
			if read*4 < tried {
				t.Errorf("%v: decodeWire read %d of %d values", typ, read, tried)
			}
		}
		t.Logf("%v: %d of %d read from the encoding", typ, read, tried)
	}
	// A value that already holds something is merged by encoding/json:
	// the JSON path does it.
	md, _ := Put(nil, "k", []Pod{{Name: "a"}})
	enc, _ := AppendStruct(nil, md)
	f := Fields{}
	f.AddStruct(enc)
	if held := []Pod{{Name: "b"}}; decodeWire(f["k"], &held) {
		t.Error("decodeWire read into a slice that held a pod")
	}
}

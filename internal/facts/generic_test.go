package facts

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// factTypes are the types tools put under the well-known keys, and values
// of other kinds handlers put.
var factTypes = []any{
	[]Pod{}, []Event{}, []Node{}, []Deployment{}, []Resource{}, []LogLine{}, []Series{}, []Deploy{},
	[]Commit{}, []TopQuery{}, []DBEvent{}, []Monitor{}, []StatusIncident{}, []ObjectChange{}, Pod{}, &Pod{},
	"", 0, 0.0, int32(0), uint8(0), true, []string{}, map[string]string{}, map[string]any{}, []any{},
	time.Time{}, &time.Time{}, time.Duration(0),
	// Left to encoding/json, value by value:
	float32(0), []byte{}, map[int]string{}, withMarshaler{}, &withPtrMarshaler{}, []withPtrMarshaler{}, embedding{}, tagged{}, withText(""),
	map[withText]int{},
}

type withMarshaler struct{ X int }

func (w withMarshaler) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int{"custom": w.X})
}

type withPtrMarshaler struct{ X int }

func (w *withPtrMarshaler) MarshalJSON() ([]byte, error) { return json.Marshal([]int{w.X, w.X}) }

type withText string

func (w withText) MarshalText() ([]byte, error) { return []byte("text:" + string(w)), nil }

type embedding struct {
	Pod
	Extra string `json:"extra"`
}

type tagged struct {
	A      int     `json:"a,string"`
	B      int     `json:"b,omitzero"`
	C      string  `json:"-"`
	D      string  `json:"-,"`
	E      float64 `json:",omitempty"`
	F      string  `json:"bad\"name"`
	hidden string
}

var trickyStrings = []string{"", "a", "payments-api-7d9f8c6b5-x2x4z", "é€😀", "\xff", "a\xc3", "q\"uote\\back\nline\ttab\x01\x1f",
	"<script>&amp;</script>", "\u2028\u2029", "Secret"}

// fill sets v (settable) to a random value of its type.
func fill(v reflect.Value, r *rand.Rand, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		switch r.IntN(4) {
		case 0: // zero
		case 1:
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()))
		case 2:
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9), 0).In(time.FixedZone("X", 5400))))
		default:
			v.Set(reflect.ValueOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))) // beyond RFC 3339: an error
		}
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := []int64{0, 1, -1, 127, 1 << 31, math.MaxInt64, math.MinInt64, 9007199254740993}[r.IntN(8)]
		if !v.OverflowInt(n) {
			v.SetInt(n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := []uint64{0, 1, 255, math.MaxUint64}[r.IntN(4)]
		if !v.OverflowUint(n) {
			v.SetUint(n)
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, math.Copysign(0, -1), 0.1, 1e-7, 1e21, 123456.789, -3.5e-300, r.Float64() * 1e6, math.NaN(), math.Inf(1)}[r.IntN(10)])
	case reflect.String:
		v.SetString(trickyStrings[r.IntN(len(trickyStrings))])
	case reflect.Pointer:
		if r.IntN(3) > 0 && depth < 4 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), r, depth+1)
			v.Set(p)
		}
	case reflect.Interface:
		if depth < 4 {
			var x any = []any{"x", 1.5, nil, map[string]any{"k": true}}[r.IntN(4)]
			v.Set(reflect.ValueOf(&x).Elem())
		}
	case reflect.Slice:
		switch r.IntN(4) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			if depth < 4 {
				s := reflect.MakeSlice(v.Type(), 1+r.IntN(3), 3)
				for i := range s.Len() {
					fill(s.Index(i), r, depth+1)
				}
				v.Set(s)
			}
		}
	case reflect.Map:
		switch r.IntN(4) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			if depth < 4 {
				m := reflect.MakeMap(v.Type())
				for range 1 + r.IntN(3) {
					k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
					fill(k, r, depth+1)
					fill(e, r, depth+1)
					m.SetMapIndex(k, e)
				}
				v.Set(m)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), r, depth+1)
			}
		}
	}
}

// roundTrip is what Put did before generic: json.Marshal, then
// json.Unmarshal into an any.
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// TestGenericMatchesJSON: generic is the JSON round trip, on random values
// of every fact type and of the kinds it leaves to encoding/json.
func TestGenericMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sample := range factTypes {
		typ := reflect.TypeOf(sample)
		errs := 0
		for i := range 300 {
			v := reflect.New(typ).Elem()
			fill(v, r, 0)
			want, werr := roundTrip(v.Interface())
			got, gerr := generic(reflect.ValueOf(v.Interface()))
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%v #%d %#v: round trip error %v, generic error %v", typ, i, v.Interface(), werr, gerr)
			}
			if werr != nil {
				errs++
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v #%d %#v:\ngeneric    %#v\nround trip %#v", typ, i, v.Interface(), got, want)
			}
			md, err := Put(nil, "k", v.Interface())
			if err != nil || !reflect.DeepEqual(md["k"], want) {
				t.Fatalf("Put: %#v, %v", md, err)
			}
		}
		if errs == 300 {
			t.Errorf("%v: every value failed to encode; the test compares nothing", typ)
		}
	}
}

// oldDecode is what Decode did before appendJSON.
func oldDecode(md *structpb.Struct, key string, out any) (bool, error) {
	v, ok := md.GetFields()[key]
	if !ok {
		return false, nil
	}
	b, err := json.Marshal(v.AsInterface())
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return false, err
	}
	return true, nil
}

// TestDecodeMatchesJSON: Decode reads what it read through AsInterface and
// encoding/json, into every fact type, from the facts tools put (random)
// and from values no tool puts (numbers that are not integers where
// integers are expected, NaN, values without a kind, lists and objects
// that are nil, keys that differ only in case).
func TestDecodeMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(t *testing.T, md *structpb.Struct, typ reflect.Type) {
		t.Helper()
		got, want := reflect.New(typ), reflect.New(typ)
		gok, gerr := Decode(md, "k", got.Interface())
		wok, werr := oldDecode(md, "k", want.Interface())
		if gok != wok || (gerr == nil) != (werr == nil) {
			t.Fatalf("%v from %v: Decode %v, %v; before %v, %v", typ, md, gok, gerr, wok, werr)
		}
		if werr == nil && !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
			t.Fatalf("%v from %v:\nDecode %#v\nbefore %#v", typ, md, got.Elem().Interface(), want.Elem().Interface())
		}
	}
	for _, sample := range factTypes {
		typ := reflect.TypeOf(sample)
		for range 200 {
			v := reflect.New(typ).Elem()
			fill(v, r, 0)
			md, err := Put(nil, "k", v.Interface())
			if err != nil {
				continue
			}
			st, err := ToStruct(md)
			if err != nil {
				continue // invalid UTF-8 a tool's metadata cannot hold either
			}
			check(t, st, typ)
			check(t, st, reflect.TypeFor[any]())
		}
	}
	odd := []*structpb.Value{
		structpb.NewNumberValue(2.5), structpb.NewNumberValue(math.NaN()), structpb.NewNumberValue(math.Inf(-1)),
		structpb.NewNumberValue(1e21), structpb.NewNumberValue(1e-7), structpb.NewNumberValue(-0.0), {}, nil,
		{Kind: &structpb.Value_StructValue{}}, {Kind: &structpb.Value_ListValue{}},
		structpb.NewStringValue("\xff\x00<>&\u2028"),
		structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{nil, {}, structpb.NewBoolValue(true)}}),
		structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"name": structpb.NewStringValue("lower"), "Name": structpb.NewStringValue("upper"), "NAME": structpb.NewStringValue("caps"),
			"restarts": structpb.NewNumberValue(3.5), "ready": structpb.NewStringValue("yes"), "\xffkey": structpb.NewNullValue(),
		}}),
	}
	for _, v := range odd {
		st := &structpb.Struct{Fields: map[string]*structpb.Value{"k": v}}
		for _, typ := range []reflect.Type{reflect.TypeFor[any](), reflect.TypeFor[Pod](), reflect.TypeFor[[]Pod](), reflect.TypeFor[string](),
			reflect.TypeFor[int32](), reflect.TypeFor[[]any](), reflect.TypeFor[map[string]string](), reflect.TypeFor[float64]()} {
			check(t, st, typ)
		}
	}
	if ok, err := Decode(&structpb.Struct{}, "k", new(any)); ok || err != nil {
		t.Errorf("a missing key: %v, %v", ok, err)
	}
}

// BenchmarkPut: the facts of a check_pod_status call over 40 pods.
func BenchmarkPut(b *testing.B) {
	pods := benchPods()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Put(nil, KeyPods, pods); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode: the same facts read back from a pin's metadata.
func BenchmarkDecode(b *testing.B) {
	md, err := Put(nil, KeyPods, benchPods())
	if err != nil {
		b.Fatal(err)
	}
	st, err := ToStruct(md)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var pods []Pod
		if ok, err := Decode(st, KeyPods, &pods); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func benchPods() []Pod {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	code := int32(137)
	pods := make([]Pod, 40)
	for i := range pods {
		pods[i] = Pod{Namespace: "retail", Name: "checkout-7d9f8c6b5-x2x4z", Node: "node-1", Phase: "Running", Restarts: 4,
			StartTime: &start, OwnerKind: "ReplicaSet", OwnerName: "checkout-7d9f8c6b5", Workload: "checkout",
			Labels: map[string]string{"app": "checkout", "tier": "web"},
			Containers: []Container{{Name: "app", Image: "registry/checkout:1.4.2", RestartCount: 4, State: "running",
				LastReason: "OOMKilled", LastExitCode: &code, RequestsMemory: "256Mi", LimitsMemory: "512Mi",
				LivenessProbe: "http-get :8080/healthz delay=0s period=10s timeout=1s failure=3"}},
			Conditions: []Condition{{Type: "Ready", Status: "True"}, {Type: "ContainersReady", Status: "True"}}}
	}
	return pods
}

// TestAppendStruct: the encoding AppendStruct writes decodes to the Struct
// ToStruct builds, for the facts tools put (random) and what they do not
// (a value outside the generic model, a string that is not UTF-8: refused,
// nothing appended).
func TestAppendStruct(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
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
			want, err := ToStruct(md)
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte{0xAA}
			b, ok := AppendStruct(prefix, md)
			if !ok || b[0] != 0xAA {
				t.Fatalf("%v: refused %#v", typ, md)
			}
			got := &structpb.Struct{}
			if err := proto.Unmarshal(b[1:], got); err != nil || !proto.Equal(got, want) {
				t.Fatalf("%v: decoded %v (%v)\nwant %v", typ, got, err, want)
			}
			n++
		}
	}
	if n < 1000 {
		t.Errorf("only %d values compared", n)
	}
	for name, md := range map[string]map[string]any{
		"not UTF-8":         {"k": []any{map[string]any{"x": "a\xff"}}},
		"key not UTF-8":     {"k": map[string]any{"\xff": 1.0}},
		"outside the model": {"k": []any{int32(3)}},
	} {
		b, ok := AppendStruct(make([]byte, 0, 64), md)
		if ok || len(b) != 0 {
			t.Errorf("%s: appended %d bytes, ok %v", name, len(b), ok)
		}
	}
}

// BenchmarkAppendStruct: the pods' facts encoded for a pin, against
// ToStruct and proto.Marshal.
func BenchmarkAppendStruct(b *testing.B) {
	md, err := Put(nil, KeyPods, benchPods())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("AppendStruct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := AppendStruct(nil, md); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("ToStruct+Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st, err := ToStruct(md)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := proto.Marshal(st); err != nil {
				b.Fatal(err)
			}
		}
	})
}

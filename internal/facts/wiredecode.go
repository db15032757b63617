package facts

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// decodeWire sets out (a non-nil pointer to a zero value) to the encoded
// google.protobuf.Value v as json.Unmarshal of its JSON (appendValueWireJSON)
// sets it, straight from the encoding: the critic read every pin's facts by
// writing them as JSON and decoding the JSON through encoding/json, 40 of
// its 60 µs per pin. It reports false, having set nothing, wherever it does
// not read the value exactly as that would (a value decoding or
// encoding/json would refuse or convert, a type it does not model: an
// interface, float32, byte slices, arrays, maps whose keys are not plain
// strings, types with UnmarshalText, embedded structs, the string option,
// a key that matches a field only case-insensitively, a key given twice):
// the caller then takes the JSON path. Types with their own UnmarshalJSON
// (time.Time) get the value's JSON, as encoding/json gives it to them.
// TestDecodeWireMatchesJSON and the tests of DecodeFields hold it to the
// JSON path.
func decodeWire(v []byte, out any) bool {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false // decoding into a value that holds something merges
	}
	tmp := reflect.New(rv.Elem().Type()).Elem()
	d := wireDecoder{}
	defer d.release()
	if !d.value(v, tmp, 0) {
		return false
	}
	rv.Elem().Set(tmp)
	return true
}

// maxWireDepth bounds the nesting decodeWire reads itself (deeper values
// take the JSON path).
const maxWireDepth = 100

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// The methods encoding/json decodes a type with instead of its kind.
const (
	noUnmarshaler   = iota
	jsonUnmarshaler // UnmarshalJSON (a type that is not a pointer)
	textUnmarshaler // UnmarshalText
)

var unmarshalers sync.Map // reflect.Type → int

// unmarshalerOf is how encoding/json decodes t, for decodeWire (cached:
// Implements walks the method set, for each of hundreds of values a pin).
func unmarshalerOf(t reflect.Type) int {
	if u, ok := unmarshalers.Load(t); ok {
		return u.(int)
	}
	u := noUnmarshaler
	switch pt := reflect.PointerTo(t); {
	case t.Kind() != reflect.Pointer && pt.Implements(jsonUnmarshalerType):
		u = jsonUnmarshaler
	case pt.Implements(textUnmarshalerType):
		u = textUnmarshaler
	}
	unmarshalers.Store(t, u)
	return u
}

type wireDecoder struct {
	scratch *[]byte // the JSON given to an UnmarshalJSON, or of an ignored value
}

func (d *wireDecoder) buf() []byte {
	if d.scratch == nil {
		d.scratch = jsonBufs.Get().(*[]byte)
	}
	return (*d.scratch)[:0]
}

func (d *wireDecoder) release() {
	if d.scratch != nil && cap(*d.scratch) <= maxPooledJSON {
		jsonBufs.Put(d.scratch)
	}
}

// json writes v's JSON into the scratch buffer; false when the JSON path
// would not read it either.
func (d *wireDecoder) json(v []byte, depth int) ([]byte, bool) {
	b, ok := appendValueWireJSON(d.buf(), v, depth)
	*d.scratch = b
	return b, ok
}

// value decodes v into rv, a settable zero value.
func (d *wireDecoder) value(v []byte, rv reflect.Value, depth int) bool {
	if depth > maxWireDepth {
		return false
	}
	t := rv.Type()
	switch unmarshalerOf(t) {
	case jsonUnmarshaler:
		// encoding/json hands such a value its JSON, null included.
		b, ok := d.json(v, depth)
		if !ok {
			return false
		}
		return rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b) == nil
	case textUnmarshaler:
		return false
	}
	w, ok := parseValue(v)
	if !ok {
		return false
	}
	if w.kind == 0 || w.kind == valueNull {
		// null leaves a value as it is (zero) and sets a pointer, map,
		// slice or interface to nil (zero too); only what the JSON path
		// reads is read.
		switch t.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float64,
			reflect.Struct, reflect.Map, reflect.Slice:
			return true
		case reflect.Pointer:
			return t.Elem().Kind() != reflect.Pointer
		}
		return false
	}
	switch t.Kind() {
	case reflect.String:
		if w.kind != valueString || !utf8.Valid(w.payload) {
			return false
		}
		rv.SetString(string(w.payload))
		return true
	case reflect.Bool:
		if w.kind != valueBool {
			return false
		}
		rv.SetBool(w.bits != 0)
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		// Below 2^53 an integral number's JSON is its exact digits.
		f, ok := wireNumber(w)
		if !ok || f != math.Trunc(f) || math.Abs(f) >= 1<<53 || rv.OverflowInt(int64(f)) {
			return false
		}
		rv.SetInt(int64(f))
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, ok := wireNumber(w)
		if !ok || f != math.Trunc(f) || f >= 1<<53 || math.Signbit(f) || rv.OverflowUint(uint64(f)) {
			return false // -0 is written "-0", which encoding/json refuses here
		}
		rv.SetUint(uint64(f))
		return true
	case reflect.Float64:
		// The JSON of a finite number is its shortest form, which
		// parses back to the same float64.
		f, ok := wireNumber(w)
		if !ok {
			return false
		}
		rv.SetFloat(f)
		return true
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Pointer {
			return false
		}
		p := reflect.New(t.Elem())
		if !d.value(v, p.Elem(), depth) {
			return false
		}
		rv.Set(p)
		return true
	case reflect.Struct:
		if w.kind != valueStruct {
			return false
		}
		return d.object(w.payload, rv, depth+1)
	case reflect.Slice:
		if w.kind != valueList || t.Elem().Kind() == reflect.Uint8 {
			return false // a byte slice is read from base64
		}
		n := 0
		eachListValue(w.payload, func([]byte) bool { n++; return true })
		s := reflect.MakeSlice(t, n, n) // an empty list is an empty slice, not nil
		i := 0
		if !eachListValue(w.payload, func(e []byte) bool {
			ok := d.value(e, s.Index(i), depth+1)
			i++
			return ok
		}) {
			return false
		}
		rv.Set(s)
		return true
	case reflect.Map:
		kt := t.Key()
		if w.kind != valueStruct || kt.Kind() != reflect.String || unmarshalerOf(kt) != noUnmarshaler {
			return false
		}
		m := reflect.MakeMap(t) // an empty object is an empty map, not nil
		ok := eachEntry(w.payload, func(k, e []byte) bool {
			ev := reflect.New(t.Elem()).Elem()
			if !d.value(e, ev, depth+1) {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(string(k)).Convert(kt), ev) // a later entry of a key replaces it
			return true
		})
		if !ok {
			return false
		}
		rv.Set(m)
		return true
	}
	return false
}

// wireNumber is a finite number's value (encoding/json refuses the strings
// the JSON path writes for the others).
func wireNumber(w wireValue) (float64, bool) {
	f := math.Float64frombits(w.bits)
	return f, w.kind == valueNumber && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// object decodes an encoded Struct into rv, a settable zero struct.
func (d *wireDecoder) object(s []byte, rv reflect.Value, depth int) bool {
	dp := decodePlanOf(rv.Type())
	if dp == nil {
		return false
	}
	var seen uint64
	return eachEntry(s, func(k, e []byte) bool {
		i, ok := dp.byName[string(k)]
		if !ok {
			// A key encoding/json ignores, unless it matches a field
			// case-insensitively; its value must still be one the JSON
			// path writes.
			if dp.folds(k) {
				return false
			}
			_, ok := d.json(e, depth)
			return ok
		}
		if seen&(1<<i) != 0 {
			return false // a key given twice
		}
		seen |= 1 << i
		return d.value(e, rv.Field(dp.fields[i]), depth)
	})
}

// decodePlan is how encoding/json maps a struct's keys to its fields.
type decodePlan struct {
	fields []int          // field index of each name
	byName map[string]int // name → position in fields
}

// folds reports whether key could match a field case-insensitively (any
// key that is not ASCII counts: encoding/json folds some runes to ASCII).
func (p *decodePlan) folds(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	for name := range p.byName {
		if strings.EqualFold(name, string(key)) {
			return true
		}
	}
	return false
}

var decodePlans sync.Map // reflect.Type → *decodePlan (nil: the JSON path does it)

// decodePlanOf returns the decoding plan of t, nil when decodeWire leaves
// it to the JSON path: what planOf leaves to encoding/json, two names that
// differ only in case, more than 64 fields.
func decodePlanOf(t reflect.Type) *decodePlan {
	if p, ok := decodePlans.Load(t); ok {
		return p.(*decodePlan)
	}
	var dp *decodePlan
	if p := planOf(t); p != nil && len(p.fields) <= 64 {
		dp = &decodePlan{byName: map[string]int{}}
		for i, f := range p.fields {
			for name := range dp.byName {
				if strings.EqualFold(name, f.name) {
					dp = nil
					break
				}
			}
			if dp == nil {
				break
			}
			dp.byName[f.name] = i
			dp.fields = append(dp.fields, f.index)
		}
	}
	decodePlans.Store(t, dp)
	return dp
}

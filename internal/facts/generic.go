package facts

import (
	"encoding"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// generic returns v in the generic JSON model (map[string]any, []any,
// float64, string, bool, nil) exactly as json.Unmarshal of json.Marshal(v)
// into an any does, without the JSON text in between: the round trip cost a
// tool a fifth of its time per call (the facts of a pin are hundreds of
// values). What the walk does not model itself (types with their own
// MarshalJSON or MarshalText other than time.Time, embedded structs, the
// string and omitzero options, float32, byte slices, maps whose keys are
// not strings) goes through encoding/json, value by value.
// TestGenericMatchesJSON holds it to the round trip on every fact type.
func generic(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil // a nil interface
	}
	t := v.Type()
	if t == timeType {
		b, err := v.Interface().(time.Time).MarshalJSON()
		if err != nil {
			return nil, err
		}
		return string(b[1 : len(b)-1]), nil // RFC 3339, nothing to unquote
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return generic(v.Elem()) // a method of the pointer is the element's (marshals)
	}
	if marshals(t) {
		return viaJSON(v)
	}
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(v.Uint()), nil
	case reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errUnsupportedFloat
		}
		return f, nil
	case reflect.String:
		return validUTF8(v.String()), nil
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return viaJSON(v) // base64, or an element type's own encoding
		}
		return genericList(v)
	case reflect.Array:
		return genericList(v)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || marshals(t.Key()) {
			return viaJSON(v)
		}
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			e, err := generic(it.Value())
			if err != nil {
				return nil, err
			}
			out[validUTF8(it.Key().String())] = e
		}
		return out, nil
	case reflect.Struct:
		plan := planOf(t)
		if plan == nil {
			return viaJSON(v)
		}
		out := make(map[string]any, len(plan.fields))
		for _, f := range plan.fields {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmptyValue(fv) {
				continue
			}
			e, err := generic(fv)
			if err != nil {
				return nil, err
			}
			out[f.name] = e
		}
		return out, nil
	}
	return viaJSON(v) // float32, complex, channels, functions: as encoding/json does them
}

var errUnsupportedFloat = errors.New("json: unsupported value: NaN or ±Inf")

func genericList(v reflect.Value) (any, error) {
	out := make([]any, v.Len())
	for i := range out {
		e, err := generic(v.Index(i))
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// viaJSON is the round trip through encoding/json, for one value (through
// its address when it has one, so that encoding/json finds the methods it
// would have found on it).
func viaJSON(v reflect.Value) (any, error) {
	x := v.Interface()
	if v.CanAddr() {
		x = v.Addr().Interface()
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshals reports whether encoding/json would call a method of t (or of a
// pointer to it) to encode it.
func marshals(t reflect.Type) bool {
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		p := reflect.PointerTo(t)
		return p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
	}
	return false
}

// validUTF8 is s with each byte that is not valid UTF-8 replaced by U+FFFD,
// as encoding/json writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// structPlan is the JSON fields of a struct type.
type structPlan struct {
	fields []fieldPlan
}

type fieldPlan struct {
	index     int
	name      string
	omitEmpty bool
}

var plans sync.Map // reflect.Type → *structPlan (nil: encoding/json does it)

// planOf returns the fields encoding/json writes for t, in order, or nil
// when t has what the walk leaves to encoding/json (an embedded field, the
// string or omitzero option, a name used twice, a tag name encoding/json
// would not take).
func planOf(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := makePlan(t)
	plans.Store(t, p)
	return p
}

func makePlan(t reflect.Type) *structPlan {
	p := &structPlan{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := fieldPlan{index: i, name: sf.Name}
		if name != "" {
			if !validTagName(name) {
				return nil
			}
			f.name = name
		}
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "omitempty":
				f.omitEmpty = true
			case "string", "omitzero":
				return nil
			}
		}
		if seen[f.name] {
			return nil
		}
		seen[f.name] = true
		p.fields = append(p.fields, f)
	}
	return p
}

// validTagName is the tag names encoding/json takes (isValidTag).
func validTagName(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return s != ""
}

package facts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Fields are the top-level values of a metadata Struct kept in its
// encoding: each key's google.protobuf.Value as bytes, located, not
// decoded. Reading one fact (DecodeFields) writes its JSON straight from
// those bytes: a reader of a few keys of a pin kept encoded (the critic)
// decoded the whole Struct first, about 28 KB of small objects for a
// 3.7 KB pin, to write it out as JSON again.
type Fields map[string][]byte

// AddStruct adds the entries of b, an encoded google.protobuf.Struct, to f;
// an entry replaces one of the same key, as decoding and merging the
// Struct do. It reports false, having added nothing, for what it does not
// read as protobuf-go would decode it (bytes that do not parse, a key that
// is not UTF-8, an entry whose value is given twice, which decoding
// merges): the caller then decodes the Struct.
func (f Fields) AddStruct(b []byte) bool {
	var add []entry
	ok := eachEntry(b, func(k, v []byte) bool {
		add = append(add, entry{k, v})
		return true
	})
	if !ok {
		return false
	}
	for _, e := range add {
		f[string(e.key)] = e.value
	}
	return true
}

// DecodeFields is Decode for facts kept encoded: the same result and
// errors as Decode of the decoded Struct. A value it does not read as
// protobuf-go would decode it (AddStruct has checked the entries, not the
// values within them) reports ErrNotReadEncoded: the caller then decodes
// the Struct.
func DecodeFields(f Fields, key string, out any) (bool, error) {
	v, ok := f[key]
	if !ok {
		return false, nil
	}
	if decodeWire(v, out) {
		return true, nil
	}
	bp := jsonBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledJSON {
			jsonBufs.Put(bp)
		}
	}()
	b, ok := appendValueWireJSON((*bp)[:0], v, 0)
	*bp = b
	if !ok {
		return false, fmt.Errorf("facts: decode %s: %w", key, ErrNotReadEncoded)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return false, fmt.Errorf("facts: decode %s: %w", key, err)
	}
	return true, nil
}

// ErrNotReadEncoded: a value DecodeFields does not read from its encoding.
var ErrNotReadEncoded = errors.New("the encoded value is not read as decoding would read it")

type entry struct{ key, value []byte }

// nullValue is an entry without its value: decoding gives an empty Value,
// whose JSON is null.
var nullValue = []byte{}

// eachEntry calls fn with the key and the encoded value of each entry of
// an encoded Struct, in order; false when b does not decode as protobuf-go
// decodes a Struct, or when an entry's value is given twice (decoding
// merges the two), or when fn returns false.
func eachEntry(b []byte, fn func(k, v []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num != structFields || typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return false
			}
			b = b[m:] // an unknown field, kept by decoding, not read
			continue
		}
		e, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return false
		}
		b = b[m:]
		var key, value []byte
		for len(e) > 0 {
			num, typ, n := protowire.ConsumeTag(e)
			if n < 0 {
				return false
			}
			e = e[n:]
			switch {
			case num == entryKey && typ == protowire.BytesType:
				k, m := protowire.ConsumeBytes(e)
				if m < 0 || !utf8.Valid(k) {
					return false
				}
				key, e = k, e[m:] // the last one counts
			case num == entryValue && typ == protowire.BytesType:
				v, m := protowire.ConsumeBytes(e)
				if m < 0 || value != nil {
					return false
				}
				value, e = v, e[m:]
			default:
				m := protowire.ConsumeFieldValue(num, typ, e)
				if m < 0 {
					return false
				}
				e = e[m:]
			}
		}
		if value == nil {
			value = nullValue
		}
		if key == nil {
			key = []byte{}
		}
		if !fn(key, value) {
			return false
		}
	}
	return true
}

// wireValue is an encoded google.protobuf.Value read as protobuf-go
// decodes it: its kind (0 for none, which decodes as null), the bits of a
// number or bool, the payload of a string, struct or list.
type wireValue struct {
	kind    protowire.Number
	bits    uint64
	payload []byte
}

// parseValue reads an encoded google.protobuf.Value; false when v does not
// decode as protobuf-go decodes it, or gives its kind twice (decoding keeps
// the last, or merges two messages).
func parseValue(v []byte) (wireValue, bool) {
	var w wireValue
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return w, false
		}
		v = v[n:]
		var m int
		known := true
		switch {
		case (num == valueNull || num == valueBool) && typ == protowire.VarintType:
			w.bits, m = protowire.ConsumeVarint(v)
		case num == valueNumber && typ == protowire.Fixed64Type:
			w.bits, m = protowire.ConsumeFixed64(v)
		case (num == valueString || num == valueStruct || num == valueList) && typ == protowire.BytesType:
			w.payload, m = protowire.ConsumeBytes(v)
		default:
			known = false // another field, or a known one with another wire type: unknown to decoding
			m = protowire.ConsumeFieldValue(num, typ, v)
		}
		if m < 0 {
			return w, false
		}
		v = v[m:]
		if known {
			if w.kind != 0 {
				return w, false
			}
			w.kind = num
		}
	}
	return w, true
}

// eachListValue calls fn with each encoded value of an encoded ListValue,
// in order; false when it does not decode or fn returns false.
func eachListValue(payload []byte, fn func(v []byte) bool) bool {
	for len(payload) > 0 {
		num, typ, n := protowire.ConsumeTag(payload)
		if n < 0 {
			return false
		}
		payload = payload[n:]
		if num != listValues || typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, payload)
			if m < 0 {
				return false
			}
			payload = payload[m:]
			continue
		}
		e, m := protowire.ConsumeBytes(payload)
		if m < 0 {
			return false
		}
		payload = payload[m:]
		if !fn(e) {
			return false
		}
	}
	return true
}

// appendValueWireJSON appends the JSON of an encoded google.protobuf.Value
// exactly as appendJSON writes the decoded Value; false when v does not
// decode as protobuf-go decodes it (parseValue).
func appendValueWireJSON(b, v []byte, depth int) ([]byte, bool) {
	if depth > maxStructNesting {
		return b, false
	}
	w, ok := parseValue(v)
	if !ok {
		return b, false
	}
	switch w.kind {
	case valueNumber:
		switch f := math.Float64frombits(w.bits); {
		case math.IsNaN(f):
			return append(b, `"NaN"`...), true
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...), true
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...), true
		default:
			return appendFloat(b, f), true
		}
	case valueString:
		if !utf8.Valid(w.payload) {
			return b, false
		}
		return appendString(b, string(w.payload)), true
	case valueBool:
		return strconv.AppendBool(b, w.bits != 0), true
	case valueStruct:
		return appendObjectWireJSON(b, w.payload, depth+1)
	case valueList:
		b = append(b, '[')
		first := true
		ok := eachListValue(w.payload, func(e []byte) bool {
			if !first {
				b = append(b, ',')
			}
			first = false
			var ok bool
			b, ok = appendValueWireJSON(b, e, depth+1)
			return ok
		})
		if !ok {
			return b, false
		}
		return append(b, ']'), true
	}
	return append(b, "null"...), true // null, or no kind
}

// appendObjectWireJSON appends an encoded Struct as appendObject writes the
// decoded one: keys in order, the last entry of a key counting.
func appendObjectWireJSON(b, s []byte, depth int) ([]byte, bool) {
	if depth > maxStructNesting {
		return b, false
	}
	ep := entryBufs.Get().(*[]entry)
	defer func() {
		clear(*ep)
		*ep = (*ep)[:0]
		entryBufs.Put(ep)
	}()
	entries := (*ep)[:0]
	if !eachEntry(s, func(k, v []byte) bool { entries = append(entries, entry{k, v}); return true }) {
		*ep = entries
		return b, false
	}
	*ep = entries
	slices.SortStableFunc(entries, func(x, y entry) int { return bytes.Compare(x.key, y.key) })
	b = append(b, '{')
	first := true
	for i, e := range entries {
		if i+1 < len(entries) && bytes.Equal(entries[i+1].key, e.key) {
			continue // a later entry of the same key replaces it
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, string(e.key))
		b = append(b, ':')
		var ok bool
		if b, ok = appendValueWireJSON(b, e.value, depth); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

var entryBufs = sync.Pool{New: func() any { return new([]entry) }}

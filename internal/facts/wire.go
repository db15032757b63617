package facts

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// AppendStruct appends md encoded as a google.protobuf.Struct (the
// message's bytes, without a tag), as proto.Marshal of ToStruct(md) encodes
// it up to the order of the map's entries, without building the Struct: a
// tool whose pin is published and whose answer nobody reads (omit_answer)
// built a Struct of every fact only to encode it. It reports false, having
// appended nothing, when md holds what ToStruct would refuse (a string
// that is not UTF-8) or a value outside the generic JSON model Put builds
// (map[string]any, []any, float64, string, bool, nil): the caller then
// uses ToStruct.
func AppendStruct(b []byte, md map[string]any) ([]byte, bool) {
	out, ok := appendFields(b, md, 0)
	if !ok {
		return b, false
	}
	return out, true
}

// Fields of google.protobuf.Struct, Value and ListValue.
const (
	structFields     = 1
	entryKey         = 1
	entryValue       = 2
	valueNull        = 1
	valueNumber      = 2
	valueString      = 3
	valueBool        = 4
	valueStruct      = 5
	valueList        = 6
	listValues       = 1
	maxStructNesting = 10000 // protobuf-go's recursion limit
)

// appendMessage appends a length-delimited field num whose content fn
// appends: the length is written in front of the content once it is known
// (one byte reserved, the content moved when the length needs more).
func appendMessage(b []byte, num protowire.Number, fn func([]byte) ([]byte, bool)) ([]byte, bool) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = append(b, 0)
	b, ok := fn(b)
	if !ok {
		return b, false
	}
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b, true
	}
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k-1)...)
	copy(b[at+k:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b, true
}

// appendFields appends md's entries as the fields of a Struct.
func appendFields(b []byte, md map[string]any, depth int) ([]byte, bool) {
	if depth > maxStructNesting {
		return b, false
	}
	ok := true
	for k, v := range md {
		if !utf8.ValidString(k) {
			return b, false
		}
		b, ok = appendMessage(b, structFields, func(b []byte) ([]byte, bool) {
			b = protowire.AppendTag(b, entryKey, protowire.BytesType)
			b = protowire.AppendString(b, k)
			return appendMessage(b, entryValue, func(b []byte) ([]byte, bool) { return appendValue(b, v, depth+1) })
		})
		if !ok {
			return b, false
		}
	}
	return b, true
}

// appendValue appends v's fields as a google.protobuf.Value.
func appendValue(b []byte, v any, depth int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		b = protowire.AppendTag(b, valueNull, protowire.VarintType)
		return protowire.AppendVarint(b, 0), true
	case bool:
		b = protowire.AppendTag(b, valueBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(x)), true
	case float64:
		b = protowire.AppendTag(b, valueNumber, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(x)), true
	case string:
		if !utf8.ValidString(x) {
			return b, false
		}
		b = protowire.AppendTag(b, valueString, protowire.BytesType)
		return protowire.AppendString(b, x), true
	case map[string]any:
		return appendMessage(b, valueStruct, func(b []byte) ([]byte, bool) { return appendFields(b, x, depth+1) })
	case []any:
		if depth > maxStructNesting {
			return b, false
		}
		return appendMessage(b, valueList, func(b []byte) ([]byte, bool) {
			ok := true
			for _, e := range x {
				if b, ok = appendMessage(b, listValues, func(b []byte) ([]byte, bool) { return appendValue(b, e, depth+1) }); !ok {
					return b, false
				}
			}
			return b, true
		})
	}
	return b, false
}

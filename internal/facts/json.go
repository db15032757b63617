package facts

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// appendJSON appends the JSON of a Struct value, as json.Marshal writes
// v.AsInterface() for what decoding into the fact types reads (objects with
// their keys in order, numbers in encoding/json's format, NaN and the
// infinities as AsInterface's strings), without building the maps and slices of
// AsInterface: decoding facts from a pin (the critic, the brain) went
// through a copy of every fact as Go maps first.
func appendJSON(b []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		switch f := k.NumberValue; {
		case math.IsNaN(f): // AsInterface's strings for what JSON has no number for
			return append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...)
		}
		return appendFloat(b, k.NumberValue)
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue)
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue)
	case *structpb.Value_StructValue:
		return appendObject(b, k.StructValue.GetFields())
	case *structpb.Value_ListValue:
		b = append(b, '[')
		for i, e := range k.ListValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	return append(b, "null"...) // null, or no kind (AsInterface: nil)
}

func appendObject(b []byte, fields map[string]*structpb.Value) []byte {
	kp := keyBufs.Get().(*[]string)
	keys := (*kp)[:0]
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys) // as encoding/json orders a map's keys
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendJSON(b, fields[k])
	}
	clear(keys)
	*kp = keys[:0]
	keyBufs.Put(kp)
	return append(b, '}')
}

var keyBufs = sync.Pool{New: func() any { return new([]string) }}

// appendFloat is encoding/json's float64 format (floatEncoder) of a finite f.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, each byte that is not UTF-8 as U+FFFD (as
// encoding/json does).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

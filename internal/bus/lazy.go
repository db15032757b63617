package bus

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A pin's facts (its metadata and params, google.protobuf.Struct) are most
// of its decoding: a 3.7 KB pin becomes about 28 KB of small objects, maps
// of Values, that the collector then marks and frees. A reader that only
// passes events on (the brain's StreamEvents, to a subscriber that decodes
// them itself) needs none of it: with FactsEncoded, Follow decodes a pin
// without them and keeps their encoding, checked, in the pin's unknown
// fields, from which encoding the pin writes them back as they were
// stored. Such a pin's GetMetadata and GetParams are nil; HasFact still
// sees its keys.

// ReadOption changes how Follow and ConsumeDurable hand events over.
type ReadOption func(*readOptions)

type readOptions struct {
	factsEncoded bool
}

// FactsEncoded makes Follow or ConsumeDurable hand over pins whose facts
// (metadata and params) stay encoded in the pin's unknown fields:
// GetMetadata and GetParams return nil (Metadata decodes the metadata,
// HasFact and HasMetadata read it encoded), and encoding the pin
// (proto.Marshal, a gRPC send) writes the facts back as they were stored.
// For a reader that passes events on, or reads few of their facts; facts
// that do not decode are refused as an undecodable event is.
func FactsEncoded() ReadOption {
	return func(o *readOptions) { o.factsEncoded = true }
}

var (
	pinFields          = (&evidencev1.EvidencePin{}).ProtoReflect().Descriptor().Fields()
	pinParamsField     = pinFields.ByName("params").Number()
	pinMetadataField   = pinFields.ByName("metadata").Number()
	structFieldsField  = protowire.Number(1) // google.protobuf.Struct.fields
	valueStructField   = protowire.Number(5) // google.protobuf.Value.struct_value
	valueListField     = protowire.Number(6) // google.protobuf.Value.list_value
	valueStringField   = protowire.Number(3) // google.protobuf.Value.string_value
	maxFactsRecursion  = 10000               // protobuf-go's default recursion limit
	errFactsUndecoding = fmt.Errorf("bus: a pin's facts do not decode")
)

// unmarshalPinEvent decodes an encoded pin event into ev, its pin's facts
// kept encoded when factsEncoded (see FactsEncoded) and then checked when
// checkFacts (unmarshalPinFactsEncoded).
func unmarshalPinEvent(data []byte, ev *evidencev1.PinEvent, factsEncoded, checkFacts bool) error {
	if !factsEncoded {
		return proto.Unmarshal(data, ev)
	}
	pinStart, pinEnd, ok := onlyField(data, pinEventPinField)
	if !ok {
		return proto.Unmarshal(data, ev) // no pin, or one in two parts
	}
	merge := proto.UnmarshalOptions{Merge: true}
	if err := merge.Unmarshal(data[:pinStart], ev); err != nil {
		return err
	}
	if err := merge.Unmarshal(data[pinEnd:], ev); err != nil {
		return err
	}
	pin, _ := protowire.ConsumeBytes(data[pinStart+protowire.SizeTag(pinEventPinField):])
	p := &evidencev1.EvidencePin{}
	if err := unmarshalPinFactsEncoded(pin, p, checkFacts); err != nil {
		return err
	}
	ev.Pin = p
	return nil
}

// onlyField returns where the one field num of an encoded message starts
// and ends, false when it is absent, not length-delimited, present more
// than once, or the bytes do not parse.
func onlyField(data []byte, num protowire.Number) (start, end int, ok bool) {
	start = -1
	for i := 0; i < len(data); {
		n, typ, tn := protowire.ConsumeTag(data[i:])
		if tn < 0 {
			return 0, 0, false
		}
		m := protowire.ConsumeFieldValue(n, typ, data[i+tn:])
		if m < 0 {
			return 0, 0, false
		}
		if n == num {
			if start >= 0 || typ != protowire.BytesType {
				return 0, 0, false
			}
			start, end = i, i+tn+m
		}
		i += tn + m
	}
	return start, end, start >= 0
}

// unmarshalPinFactsEncoded decodes an encoded pin into p, its facts kept
// encoded in p's unknown fields (after any unknown fields of its own).
//
// The usual pin has its facts in one run of fields (params and metadata,
// one after the other) and no unknown fields of its own: its unknown
// fields are then that run as a part of data, clipped (appending to them
// reallocates), not a copy of it. data is a message's payload
// (Bus.open's callers), which the NATS client copies for each message it
// delivers and nobody writes to, or a part of one a verdict binder keeps
// (pinBytes): every pin read by the critic and the brain's StreamEvents
// copied its facts (about 3 KB) for nothing. Facts fields apart from each
// other, or beside unknown fields of the pin's own, are copied together as
// before.
//
// Each facts field is checked to decode as protobuf-go decodes it
// (validStruct) unless check is false: the bytes were encoded and signed
// in this process (ownFactsMax).
func unmarshalPinFactsEncoded(data []byte, p *evidencev1.EvidencePin, check bool) error {
	merge := proto.UnmarshalOptions{Merge: true}
	var (
		facts   []byte // the facts fields, data's part or a copy
		copied  bool   // facts is this call's own copy
		factsAt int    // where facts starts in data (not copied)
	)
	from := 0 // start of the run of fields not yet decoded
	for i := 0; i < len(data); {
		num, typ, n := protowire.ConsumeTag(data[i:])
		if n < 0 {
			return proto.Unmarshal(data, p) // reports the error
		}
		m := protowire.ConsumeFieldValue(num, typ, data[i+n:])
		if m < 0 {
			return proto.Unmarshal(data, p)
		}
		if (num == pinParamsField || num == pinMetadataField) && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(data[i+n:])
			if check && !validStruct(v, 0) {
				return fmt.Errorf("%w (field %d)", errFactsUndecoding, num)
			}
			if err := merge.Unmarshal(data[from:i], p); err != nil {
				return err
			}
			field := data[i : i+n+m : i+n+m]
			switch {
			case facts == nil:
				facts, factsAt = field, i
			case !copied && factsAt+len(facts) == i:
				// Right after the facts before it (params and metadata,
				// fields 21 and 22, as encoded): still one part of data.
				facts = data[factsAt : i+n+m : i+n+m]
			case !copied:
				facts, copied = append(append(make([]byte, 0, len(facts)+len(field)), facts...), field...), true
			default:
				facts = append(facts, field...)
			}
			from = i + n + m
		}
		i += n + m
	}
	if err := merge.Unmarshal(data[from:], p); err != nil {
		return err
	}
	if len(facts) > 0 {
		m := p.ProtoReflect()
		if u := m.GetUnknown(); len(u) > 0 {
			facts = append(append(make([]byte, 0, len(u)+len(facts)), u...), facts...)
		}
		m.SetUnknown(facts)
	}
	return nil
}

// validStruct reports whether b decodes as a google.protobuf.Struct as
// protobuf-go decodes it: bytes that parse, strings of valid UTF-8, within
// its recursion limit (a known field with another wire type is an unknown
// field to protobuf-go, kept, not an error).
func validStruct(b []byte, depth int) bool {
	if depth > maxFactsRecursion {
		return false
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != structFieldsField || typ != protowire.BytesType {
			return true
		}
		// A map entry: key = 1 (string), value = 2 (Value).
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) bool {
			switch {
			case typ != protowire.BytesType:
				return true
			case num == 1:
				return utf8.Valid(v)
			case num == 2:
				return validValue(v, depth+1)
			}
			return true
		})
	})
}

// validValue reports whether b decodes as a google.protobuf.Value.
func validValue(b []byte, depth int) bool {
	if depth > maxFactsRecursion {
		return false
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if typ != protowire.BytesType {
			return true // null, number and bool values parse whatever they hold
		}
		switch num {
		case valueStringField:
			return utf8.Valid(v)
		case valueStructField:
			return validStruct(v, depth+1)
		case valueListField:
			return validList(v, depth+1)
		}
		return true
	})
}

// validList reports whether b decodes as a google.protobuf.ListValue.
func validList(b []byte, depth int) bool {
	if depth > maxFactsRecursion {
		return false
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != 1 || typ != protowire.BytesType {
			return true
		}
		return validValue(v, depth+1)
	})
}

// eachField calls fn with each field of an encoded message (v: the value's
// bytes, for a length-delimited field its content) while fn returns true;
// false when fn does or the bytes do not parse.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) bool) bool {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[i+n:])
		if m < 0 {
			return false
		}
		v := b[i+n : i+n+m]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if !fn(num, typ, v) {
			return false
		}
		i += n + m
	}
	return true
}

// HasFact reports whether the pin's metadata has key, whether its facts
// are decoded or kept encoded (FactsEncoded).
func HasFact(p *evidencev1.EvidencePin, key string) bool {
	if p.GetMetadata().GetFields()[key] != nil {
		return true
	}
	found := false
	eachField(p.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != pinMetadataField || typ != protowire.BytesType {
			return true
		}
		eachField(v, func(num protowire.Number, typ protowire.Type, entry []byte) bool {
			if num != structFieldsField || typ != protowire.BytesType {
				return true
			}
			eachField(entry, func(num protowire.Number, typ protowire.Type, k []byte) bool {
				if num == 1 && typ == protowire.BytesType && string(k) == key {
					found = true
				}
				return !found
			})
			return !found
		})
		return !found
	})
	return found
}

// encodedFacts returns the pin's facts kept encoded (FactsEncoded): its
// unknown fields that are its metadata or params, nil when it has none.
// The rest of its unknown fields are in rest. When they are all facts (the
// usual case), facts is the pin's unknown fields themselves, clipped (they
// are shared and never modified, as CopyPin shares them), not a copy.
func encodedFacts(p *evidencev1.EvidencePin) (facts, rest []byte) {
	u := p.ProtoReflect().GetUnknown()
	if onlyFacts(u) {
		return u[:len(u):len(u)], nil
	}
	for i := 0; i < len(u); {
		num, typ, n := protowire.ConsumeTag(u[i:])
		if n < 0 {
			return nil, u
		}
		m := protowire.ConsumeFieldValue(num, typ, u[i+n:])
		if m < 0 {
			return nil, u
		}
		if (num == pinParamsField || num == pinMetadataField) && typ == protowire.BytesType {
			facts = append(facts, u[i:i+n+m]...)
		} else {
			rest = append(rest, u[i:i+n+m]...)
		}
		i += n + m
	}
	return facts, rest
}

// onlyFacts reports whether u, a pin's unknown fields, holds facts
// (metadata or params) and nothing else.
func onlyFacts(u []byte) bool {
	return len(u) > 0 && eachField(u, func(num protowire.Number, typ protowire.Type, _ []byte) bool {
		return (num == pinParamsField || num == pinMetadataField) && typ == protowire.BytesType
	})
}

// SplitEncodedFacts returns the facts a pin keeps encoded (FactsEncoded),
// as the encoding of a pin with only its metadata and params, and a copy
// of the pin without them (CopyPin); nil and p itself when it keeps none.
func SplitEncodedFacts(p *evidencev1.EvidencePin) ([]byte, *evidencev1.EvidencePin) {
	facts, rest := encodedFacts(p)
	if facts == nil {
		return nil, p
	}
	lean := CopyPin(p)
	lean.ProtoReflect().SetUnknown(rest)
	return facts, lean
}

// Metadata returns the pin's metadata, decoded from its encoding when the
// pin keeps it encoded (FactsEncoded); nil when it has none.
func Metadata(p *evidencev1.EvidencePin) *structpb.Struct {
	if md := p.GetMetadata(); md != nil {
		return md
	}
	var md *structpb.Struct
	merge := proto.UnmarshalOptions{Merge: true}
	eachField(p.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != pinMetadataField || typ != protowire.BytesType {
			return true
		}
		if md == nil {
			md = &structpb.Struct{}
		}
		return merge.Unmarshal(v, md) == nil // checked when it was read
	})
	return md
}

// MetadataFields returns the top-level facts of a pin that keeps its
// metadata encoded (FactsEncoded), located in their encoding, not decoded
// (facts.DecodeFields reads one); false when the pin holds its metadata
// decoded or has none, or when the encoding is not read that way: then
// Metadata.
func MetadataFields(p *evidencev1.EvidencePin) (facts.Fields, bool) {
	if p.GetMetadata() != nil {
		return nil, false
	}
	var f facts.Fields
	ok := true
	eachField(p.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != pinMetadataField || typ != protowire.BytesType {
			return true
		}
		if f == nil {
			f = facts.Fields{}
		}
		ok = f.AddStruct(v) // occurrences merge as decoding merges them
		return ok
	})
	return f, ok && f != nil
}

// HasMetadata reports whether the pin's metadata has any key, whether it
// is decoded or kept encoded (len(GetMetadata().GetFields()) > 0 of the
// decoded pin).
func HasMetadata(p *evidencev1.EvidencePin) bool {
	if len(p.GetMetadata().GetFields()) > 0 {
		return true
	}
	found := false
	eachField(p.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num == pinMetadataField && typ == protowire.BytesType {
			eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte) bool {
				found = found || num == structFieldsField && typ == protowire.BytesType
				return !found
			})
		}
		return !found
	})
	return found
}

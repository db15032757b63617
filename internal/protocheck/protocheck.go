// Package protocheck validates what proto.Marshal lets through but no JSON
// reader can take back: timestamps outside years 1 to 9999.
package protocheck

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var timestampName = (&timestamppb.Timestamp{}).ProtoReflect().Descriptor().FullName()

// Timestamps walks m (nil is fine) and returns an error naming the first
// google.protobuf.Timestamp outside the range the JSON mapping can express
// (years 1 to 9999, nanos in [0, 1e9)). proto.Marshal accepts such values,
// but nothing can turn the message into JSON again: a stored event or record
// carrying one breaks every later read of it.
func Timestamps(m proto.Message) error {
	if m == nil {
		return nil
	}
	return checkTimestamps(m.ProtoReflect(), "")
}

func checkTimestamps(m protoreflect.Message, path string) error {
	if !m.IsValid() {
		return nil
	}
	if ts, ok := m.Interface().(*timestamppb.Timestamp); ok {
		if err := ts.CheckValid(); err != nil {
			return fmt.Errorf("timestamp %s: %w", path, err)
		}
		return nil
	}
	if m.Descriptor().FullName() == timestampName { // a dynamic message
		fields := m.Descriptor().Fields()
		ts := &timestamppb.Timestamp{
			Seconds: m.Get(fields.ByName("seconds")).Int(),
			Nanos:   int32(m.Get(fields.ByName("nanos")).Int()),
		}
		if err := ts.CheckValid(); err != nil {
			return fmt.Errorf("timestamp %s: %w", path, err)
		}
		return nil
	}
	// Only the fields whose type can hold a Timestamp are visited (none of
	// a google.protobuf.Struct's, nor any scalar).
	for _, fd := range timestampFields(m.Descriptor()) {
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		name := string(fd.Name())
		if path != "" {
			name = path + "." + name
		}
		var err error
		switch {
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = checkTimestamps(mv.Message(), name+"["+k.String()+"]")
				return err == nil
			})
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkTimestamps(l.Get(i).Message(), fmt.Sprintf("%s[%d]", name, i))
			}
		default:
			err = checkTimestamps(v.Message(), name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fieldPlans caches, per message type, the fields whose type can hold a
// Timestamp at any depth (protoreflect.FullName -> []FieldDescriptor).
var fieldPlans sync.Map

func timestampFields(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if v, ok := fieldPlans.Load(md.FullName()); ok {
		return v.([]protoreflect.FieldDescriptor)
	}
	var out []protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		if sub != nil && mayHoldTimestamp(sub) {
			out = append(out, fd)
		}
	}
	fieldPlans.Store(md.FullName(), out)
	return out
}

// holds caches, per message type, whether a Timestamp can occur anywhere in
// a message of that type (protoreflect.FullName -> bool).
var holds sync.Map

// mayHoldTimestamp reports whether a message of type md can contain a
// Timestamp at any depth. Walking only those fields keeps the check cheap
// on large payloads of JSON-like values (structpb metadata of tool results).
func mayHoldTimestamp(md protoreflect.MessageDescriptor) bool {
	if v, ok := holds.Load(md.FullName()); ok {
		return v.(bool)
	}
	r := reaches(md, map[protoreflect.FullName]bool{})
	holds.Store(md.FullName(), r)
	return r
}

func reaches(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == timestampName {
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		if sub != nil && reaches(sub, seen) {
			return true
		}
	}
	return false
}

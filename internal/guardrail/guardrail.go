// Package guardrail reads the Guardrail enum of the investigation contract:
// each value names one limit of the investigation loop and carries, as an
// enum value option, the one service that owns and decides it, the one flag
// that sets it and the field of the record's Guardrails message that holds
// its live limit. Services build their trips here, so a trip's owner is the
// contract's owner and cannot drift from it.
package guardrail

import (
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// G is a guardrail of the contract.
type G = investigationv1.Guardrail

const prefix = "GUARDRAIL_"

func value(g G) protoreflect.EnumValueDescriptor {
	return g.Descriptor().Values().ByNumber(g.Number())
}

// Spec returns g's owner, flag and record field (empty for an unknown value).
func Spec(g G) *investigationv1.GuardrailSpec {
	v := value(g)
	if v == nil {
		return &investigationv1.GuardrailSpec{}
	}
	opts, ok := v.Options().(*descriptorpb.EnumValueOptions)
	if !ok || opts == nil {
		return &investigationv1.GuardrailSpec{}
	}
	spec, _ := proto.GetExtension(opts, investigationv1.E_GuardrailSpec).(*investigationv1.GuardrailSpec)
	if spec == nil {
		return &investigationv1.GuardrailSpec{}
	}
	return spec
}

// Name is g's trip name: the value's name, lower case, without the prefix
// (GUARDRAIL_MAX_LOOPS is "max_loops").
func Name(g G) string {
	v := value(g)
	if v == nil {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), prefix))
}

// Owner is the service that owns and decides g.
func Owner(g G) string { return Spec(g).GetOwner() }

// All lists every guardrail of the contract, in number order.
func All() []G {
	vals := investigationv1.Guardrail(0).Descriptor().Values()
	out := make([]G, 0, vals.Len())
	for i := range vals.Len() {
		if n := vals.Get(i).Number(); n != 0 {
			out = append(out, G(n))
		}
	}
	return out
}

// Parse maps a trip name ("max_loops") to its guardrail (UNSPECIFIED when
// the name is not one of the contract's).
func Parse(name string) G {
	v := investigationv1.Guardrail(0).Descriptor().Values().ByName(protoreflect.Name(prefix + strings.ToUpper(name)))
	if v == nil {
		return investigationv1.Guardrail_GUARDRAIL_UNSPECIFIED
	}
	return G(v.Number())
}

// Trip records g reaching its limit, decided by g's owner.
func Trip(g G, detail string, limit, value float64, at time.Time) *investigationv1.GuardrailTrip {
	t := &investigationv1.GuardrailTrip{Guardrail: Name(g), Owner: Owner(g), Kind: g, Detail: detail, Limit: limit, Value: value}
	if !at.IsZero() {
		t.Time = timestamppb.New(at)
	}
	return t
}

// Merge copies the limits a service reported into the record's Guardrails:
// only the fields the reporting service set (scalars that are not zero,
// optional fields that are present).
func Merge(dst, limits *investigationv1.Guardrails) {
	if dst == nil || limits == nil {
		return
	}
	proto.Merge(dst, limits)
}

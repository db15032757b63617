package protocheck_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/protocheck"
)

func TestTimestamps(t *testing.T) {
	year10000 := &timestamppb.Timestamp{Seconds: 253402300800}
	tests := []struct {
		name string
		m    proto.Message
		want string // "" = valid; else a substring naming the field
	}{
		{"nil", nil, ""},
		{"no timestamps", &evidencev1.EvidencePin{Id: "p"}, ""},
		{"valid", &evidencev1.EvidencePin{Timestamp: timestamppb.Now()}, ""},
		{"last second of 9999", &evidencev1.EvidencePin{Timestamp: &timestamppb.Timestamp{Seconds: 253402300799}}, ""},
		{"year 10000", &evidencev1.EvidencePin{Timestamp: year10000}, "timestamp"},
		{"before year 1", &evidencev1.EvidencePin{Timestamp: &timestamppb.Timestamp{Seconds: -62135596801}}, "timestamp"},
		{"nested window", &evidencev1.EvidencePin{TimeWindow: &evidencev1.TimeWindow{End: &timestamppb.Timestamp{Seconds: math.MaxInt64}}}, "time_window.end"},
		{"bad nanos", &evidencev1.PinEvent{Time: &timestamppb.Timestamp{Nanos: 1e9}}, "time"},
		{"deep in an event", &evidencev1.PinEvent{Pin: &evidencev1.EvidencePin{TimeWindow: &evidencev1.TimeWindow{Start: year10000}}}, "pin.time_window.start"},
		{"alert window", &investigationv1.Alert{IncidentWindow: &evidencev1.TimeWindow{Start: year10000}}, "incident_window.start"},
		{"a struct without timestamps", &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStringValue("b")}}, ""},
		{"beside metadata", &evidencev1.PinEvent{Pin: &evidencev1.EvidencePin{Metadata: bigMetadata(), TimeWindow: &evidencev1.TimeWindow{End: year10000}}}, "pin.time_window.end"},
		{"list of messages with timestamps", &evidencev1.SessionEvent{Event: &evidencev1.SessionEvent_Pin{Pin: &evidencev1.PinEvent{Time: year10000}}}, "pin.time"},
	}
	for _, tt := range tests {
		err := protocheck.Timestamps(tt.m)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
}

// bigMetadata is the kind of facts a tool result carries (no timestamps).
func bigMetadata() *structpb.Struct {
	pods := make([]any, 200)
	for i := range pods {
		pods[i] = map[string]any{"name": "api-7d9f8b6c5-x2x1z", "phase": "Running", "restarts": float64(i),
			"containers": []any{map[string]any{"name": "app", "ready": true, "reason": ""}}}
	}
	md, err := structpb.NewStruct(map[string]any{"pods": pods, "namespace": "retail"})
	if err != nil {
		panic(err)
	}
	return md
}

// BenchmarkTimestampsPinWithMetadata: the check runs on every published
// event; it walks only the fields whose types can hold a Timestamp.
func BenchmarkTimestampsPinWithMetadata(b *testing.B) {
	ev := &evidencev1.PinEvent{Time: timestamppb.Now(), Pin: &evidencev1.EvidencePin{Metadata: bigMetadata(), Timestamp: timestamppb.Now()}}
	b.ReportAllocs()
	for b.Loop() {
		if err := protocheck.Timestamps(ev); err != nil {
			b.Fatal(err)
		}
	}
}

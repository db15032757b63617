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

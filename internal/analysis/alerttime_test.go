package analysis

import (
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// An alert without a firing time fired when the tools read "now": the end
// most pins' windows share (a pin with a window of its own does not move
// it); with no pins, and no time, there is no alert time.
func TestAlertTimeWithoutAFiringTime(t *testing.T) {
	now := time.Date(2026, 3, 27, 2, 30, 0, 0, time.UTC)
	win := func(id string, start, end time.Time) *evidencev1.EvidencePin {
		return &evidencev1.EvidencePin{Id: id, TimeWindow: &evidencev1.TimeWindow{Start: timestamppb.New(start), End: timestamppb.New(end)}}
	}
	pins := []*evidencev1.EvidencePin{
		win("a", now.Add(-time.Hour), now),
		win("b", now.Add(-8*24*time.Hour), now),
		win("c", now.Add(-time.Hour), now.Add(-10*time.Minute)), // its own end
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ticket-pdf queue depth > 10k"}, pins)
	if at := ev.alertTime(); at == nil || !at.Equal(now) {
		t.Fatalf("alert time %v, want %v", at, now)
	}
	fired := now.Add(-20 * time.Minute)
	ev = NewEvidence(&investigationv1.Alert{AlertName: "x", StartsAt: timestamppb.New(fired)}, pins)
	if at := ev.alertTime(); at == nil || !at.Equal(fired) {
		t.Fatalf("alert time %v, want its own firing time %v", at, fired)
	}
	if at := NewEvidence(&investigationv1.Alert{AlertName: "x"}, nil).alertTime(); at != nil {
		t.Fatalf("alert time %v from nothing", at)
	}
}

package analysis

import (
	"context"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Planned work closed in the words of the work itself ("instance
// failover completed" on the object the change record names), not under
// the record's id: the errors it caused are the planned disruption. A
// completion of other work, of another object, or a failed one closes
// nothing.
func TestPlannedWorkEndedInItsOwnWords(t *testing.T) {
	record := "CHG-2207 approved: RDS reed-prod planned failover for minor version upgrade 21:00-21:30 UTC"
	tests := []struct {
		name, end string
		healthy   bool
	}{
		{"same work, same object", "reed-prod: Multi-AZ instance failover completed", true},
		{"other vocabulary", "failover of reed-prod finished, writer endpoint moved", true},
		{"another object", "orders-prod: Multi-AZ instance failover completed", false},
		{"other work", "reed-prod: snapshot completed", false},
		{"a failed one", "reed-prod: Multi-AZ instance failover completed with failure, rolled back", false},
		{"only the window's times in common", "orders-prod failover completed 21:00-21:30", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := []facts.LogLine{
				{Timestamp: at(-30), Service: "change-calendar", Level: "INFO", Message: record},
				{Timestamp: at(2), Namespace: "reed", Service: "quote-builder", Level: "ERROR", Message: "PSQLException: Connection to reed-prod.cluster.example:5432 refused"},
				{Timestamp: at(3), Service: "rds-events", Level: "INFO", Message: tc.end},
				{Timestamp: at(3), Namespace: "reed", Service: "quote-builder", Level: "ERROR", Message: "PSQLException: Connection to reed-prod.cluster.example:5432 refused"},
				{Timestamp: at(4), Namespace: "reed", Service: "quote-builder", Level: "INFO", Message: "HikariPool-1 - connections re-established (10/10)"},
			}
			in := Input{Alert: &investigationv1.Alert{AlertName: "HTTP 5xx rate", Namespace: "reed", Service: "quote-builder", StartsAt: timestamppb.New(*at(4))},
				Pins: []*evidencev1.EvidencePin{pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, ls)}}
			res, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			ended := res.Healthy && res.Findings[0].Mode == ModeMaintenanceEnded
			if ended != tc.healthy {
				t.Fatalf("planned work ended = %v, want %v (lead %s: %s)", ended, tc.healthy, res.Findings[0].Mode, res.Findings[0].Statement)
			}
		})
	}
}

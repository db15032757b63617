package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// An alert inside the UTC window a change record booked for its day, the
// work under way under the record's id, errors only since the window
// opened: planned work in progress. Outside the window, with errors before
// it, a failed step, no trail, or a local-time window, nothing is claimed.
func TestMaintenanceInWindow(t *testing.T) {
	ts := func(d, h, m int) *time.Time { x := time.Date(2026, 4, d, h, m, 0, 0, time.UTC); return &x }
	line := func(at *time.Time, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at, Service: svc, Level: level, Message: msg}}
	}
	booked := line(ts(5, 10, 0), "change-mgmt", "INFO", "OPS-7731 approved: storage controller firmware for vault-db, Tue 14 Apr 02:00-04:00 UTC; writes paused up to 15 min")
	bookedLocal := line(ts(5, 10, 0), "change-mgmt", "INFO", "OPS-7731 approved: storage controller firmware for vault-db, Tue 14 Apr 02:00-04:00 local; writes paused")
	step := line(ts(14, 2, 4), "runbook", "INFO", "OPS-7731 step 3: controller A failed over to B")
	stepFailed := line(ts(14, 2, 4), "runbook", "INFO", "OPS-7731 step 3 aborted, rolled back")
	errInside := line(ts(14, 2, 6), "vault-api", "ERROR", "write failed: database is read-only")
	errBefore := line(ts(14, 1, 40), "vault-api", "ERROR", "write failed: database is read-only")
	for _, tc := range []struct {
		name  string
		alert *time.Time
		logs  []LogLine
		want  bool
	}{
		{"inside the booked window, work under way", ts(14, 2, 20), []LogLine{booked, step, errInside}, true},
		{"after the window closed", ts(14, 4, 30), []LogLine{booked, step, errInside}, false},
		{"errors before the window opened", ts(14, 2, 20), []LogLine{booked, errBefore, step, errInside}, false},
		{"a step of the record failed", ts(14, 2, 20), []LogLine{booked, stepFailed, errInside}, false},
		{"no trail of the work", ts(14, 2, 20), []LogLine{booked, errInside}, false},
		{"a local-time window", ts(14, 2, 20), []LogLine{bookedLocal, step, errInside}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "VaultWriteErrors", Service: "vault-api", StartsAt: timestamppb.New(*tc.alert)}, nil)
			ev.Logs = tc.logs
			got := detectMaintenanceInWindow(ev)
			if (len(got) == 1) != tc.want {
				t.Fatalf("detectMaintenanceInWindow = %d findings, want %v", len(got), tc.want)
			}
			if tc.want && (!got[0].Healthy || !strings.Contains(got[0].Statement, "OPS-7731") || !got[0].Overrides) {
				t.Errorf("finding = %+v", got[0])
			}
		})
	}
}

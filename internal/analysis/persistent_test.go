package analysis

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A warning template repeated through the incident is a symptom; one
// warning, a burst within a second or a stream that ended before the alert
// is not. The symptom makes a candidate of its writer and vetoes a reading
// of health.
func TestPersistentWarnings(t *testing.T) {
	alertAt := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	stream := func(svc, msg string, from time.Time, n int, every time.Duration) []LogLine {
		var out []LogLine
		for i := range n {
			ts := from.Add(time.Duration(i) * every)
			out = append(out, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Service: svc, Level: "WARNING", Message: fmt.Sprintf(msg, 100+i*7)}})
		}
		return out
	}
	tests := []struct {
		name string
		logs []LogLine
		want int
	}{
		{"a throttling warning every three minutes into the alert", stream("edge-gw", "limit exceeded for client 10.1.0.4 count=%d, answering 429", alertAt.Add(-6*time.Minute), 8, 3*time.Minute), 8},
		{"the same under another service and wording", stream("ledger-sync", "retry %d of batch upload deferred: token bucket empty", alertAt.Add(-20*time.Minute), 5, 5*time.Minute), 5},
		{"three warnings only", stream("edge-gw", "limit exceeded count=%d", alertAt.Add(-6*time.Minute), 3, 3*time.Minute), 0},
		{"a burst within a minute", stream("edge-gw", "limit exceeded count=%d", alertAt.Add(-time.Minute), 10, time.Second), 0},
		{"a stream that ended an hour before the alert", stream("edge-gw", "limit exceeded count=%d", alertAt.Add(-2*time.Hour), 8, 3*time.Minute), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alert := &investigationv1.Alert{AlertName: "PortalLoginFailing", StartsAt: timestamppb.New(alertAt)}
			ev := NewEvidence(alert, nil)
			ev.Logs = tc.logs
			if got := len(ev.persistentWarnings()); got != tc.want {
				t.Fatalf("persistentWarnings = %d lines, want %d", got, tc.want)
			}
			var writer *candidate
			for _, c := range ev.anomalyCandidates() {
				if len(c.errLines) > 0 {
					writer = c
				}
			}
			if (writer != nil) != (tc.want > 0) {
				t.Errorf("a candidate with symptom lines = %v, want %v", writer != nil, tc.want > 0)
			}
			// Every pod Ready, no error line: health is read only when no
			// warning keeps coming.
			ev.Pods = []Pod{{Pod: healthyPod("portal-1")}, {Pod: healthyPod("portal-2")}}
			if healthy := len(detectK8sHealthy(ev)) == 1; healthy != (tc.want == 0) {
				t.Errorf("k8s_healthy found = %v, want %v", healthy, tc.want == 0)
			}
		})
	}
}

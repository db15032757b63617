package analysis

import (
	"fmt"
	"strings"
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
		{"a deprecation notice on every call", stream("orders", "DeprecationWarning: datetime.utcnow() is deprecated (call %d)", alertAt.Add(-30*time.Minute), 12, 3*time.Minute), 0},
		{"a runtime's future warning, other runtime", stream("web", "(node:%d) [DEP0005] DeprecationWarning: Buffer() is deprecated", alertAt.Add(-30*time.Minute), 12, 3*time.Minute), 0},
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
	// A runtime warning of another class (an unclosed socket) reports a
	// present fault: it keeps coming, and vetoes health.
	ev := NewEvidence(&investigationv1.Alert{AlertName: "PortalLoginFailing", StartsAt: timestamppb.New(alertAt)}, nil)
	ev.Logs = stream("orders", "ResourceWarning: unclosed socket fd=%d", alertAt.Add(-30*time.Minute), 12, 3*time.Minute)
	if got := len(ev.persistentWarnings()); got != 12 {
		t.Errorf("ResourceWarning stream: persistentWarnings = %d, want 12", got)
	}
}

// The failing entity's own account of what its errors name: its non-error
// line about the same address, not its error template again, not a line
// about another address, not another service's line.
func TestErrorAccount(t *testing.T) {
	base := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	line := func(min int, svc, level, msg string) LogLine {
		ts := base.Add(time.Duration(min) * time.Minute)
		return LogLine{LogLine: facts.LogLine{Timestamp: &ts, Service: svc, Level: level, Message: msg}}
	}
	errs := []LogLine{
		line(10, "edge-gw", "WARN", "limit exceeded for key 10.8.0.7 count=184, answering 429"),
		line(13, "edge-gw", "WARN", "limit exceeded for key 10.8.0.7 count=205, answering 429"),
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "PortalRefusing"}, nil)
	ev.Logs = append([]LogLine{
		line(9, "edge-gw", "INFO", "peer 10.8.0.7 is not a trusted proxy; keying on the connection address"),
		line(9, "edge-gw", "INFO", "peer 10.8.0.71 connected"),
		line(9, "billing", "INFO", "call from 10.8.0.7 accepted"),
	}, errs...)
	onset := base.Add(10 * time.Minute)
	got := ev.errorAccount("edge-gw", &onset, errs)
	if len(got) != 1 || !strings.Contains(got[0].Message, "trusted proxy") {
		t.Fatalf("errorAccount = %v, want the gateway's own line about 10.8.0.7", got)
	}
}

package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A cause found elsewhere (a dependency, a cut, a node) is reported with
// the effect the alerted workload shows: its most frequent error line. A
// lead on the alerted workload itself, or one that already quotes the
// line, adds nothing.
func TestAlertedSymptom(t *testing.T) {
	base := time.Date(2027, 12, 7, 10, 13, 0, 0, time.UTC)
	ev := NewEvidence(&investigationv1.Alert{AlertName: "AccessionFailures", Namespace: "lab", Service: "sample-intake"}, nil)
	for i := 0; i < 4; i++ {
		ts := base.Add(time.Duration(i) * time.Minute)
		ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "lab", Service: "sample-intake", Pod: "sample-intake-79c8b6d5f4-fbzzs", Level: "ERROR",
			Message: "accession failed: dial tcp: lookup sample-db.lab.svc.cluster.local: i/o timeout"}})
	}
	elsewhere := Finding{Entity: "deployment/kube-system/coredns", Category: catConfig}
	text, _, ok := ev.alertedSymptom(elsewhere)
	if !ok || !strings.Contains(text, "i/o timeout") || !strings.Contains(text, "sample-intake") {
		t.Fatalf("alertedSymptom = %q, %v; want the alerted workload's error line", text, ok)
	}
	if _, _, ok := ev.alertedSymptom(Finding{Entity: "deployment/lab/sample-intake"}); ok {
		t.Error("a lead on the alerted workload itself got its symptom added")
	}
	quoted := elsewhere
	quoted.validated(`callers fail: "accession failed: dial tcp: lookup sample-db.lab.svc.cluster.local: i/o timeout"`)
	if _, _, ok := ev.alertedSymptom(quoted); ok {
		t.Error("a lead that already quotes the line got it again")
	}
}

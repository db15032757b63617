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

// Names that cannot be resolved because the DNS server times out make the
// cluster DNS server the failing dependency once its own pods were read;
// before, the name asked for stands in for it.
func TestDNSServerTimeoutNamesTheServer(t *testing.T) {
	base := time.Date(2027, 12, 7, 10, 14, 0, 0, time.UTC)
	mk := func(withServer bool) Finding {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "PrintFailures", Namespace: "lab", Service: "label-api"}, nil)
		for i := 0; i < 3; i++ {
			ts := base.Add(time.Duration(i) * time.Minute)
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "lab", Service: "label-api", Level: "ERROR",
				Message: "print failed: dial tcp: lookup printer-gw.lab.svc.cluster.local on 10.96.0.10:53: read udp 10.0.1.4:40512->10.96.0.10:53: i/o timeout"}})
		}
		if withServer {
			ev.Pods = []Pod{{Pod: facts.Pod{Namespace: clusterDNSNamespace, Name: clusterDNSWorkload + "-6d4b75cb6d-85sd8", Phase: "Running", Ready: true}}}
		}
		for _, f := range detectDNS(ev) {
			return f
		}
		t.Fatal("no DNS finding")
		return Finding{}
	}
	if f := mk(true); f.Entity != deploymentEntity(clusterDNSNamespace, clusterDNSWorkload) || f.Category != catDependency {
		t.Errorf("with the server read: %s on %s, want dependency on the cluster DNS server", f.Category, f.Entity)
	}
	if f := mk(false); !strings.HasPrefix(f.Entity, "service/") {
		t.Errorf("without the server read: entity %s, want the name asked for", f.Entity)
	}
}

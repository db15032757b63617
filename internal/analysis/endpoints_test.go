package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A Service whose targetPort no selected pod serves is the configuration
// culprit of its callers' refused connections, and explains them as a
// dependency failure; a Service without the signal is no finding; callers'
// failures to the Service's DNS name are NamedObjects to describe.
func TestServicePortUnserved(t *testing.T) {
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	ev := NewEvidence(&investigationv1.Alert{AlertName: "PortalErrors", Namespace: "records", StartsAt: timestamppb.New(at)}, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: &at, Service: "portal", Level: "ERROR", Message: "GET http://plots.records.svc.cluster.local/api failed: ECONNREFUSED 10.0.1.4:8080"}},
	}
	ev.Resources = []Resource{
		{Resource: facts.Resource{Kind: "Service", Namespace: "records", Name: "plots", Signals: []string{"targetPort not served: port 80 targets 8080, which no selected pod declares (the pods declare 8000/TCP http)"}}},
		{Resource: facts.Resource{Kind: "Service", Namespace: "records", Name: "graves"}},
	}
	fs := detectServicePortUnserved(ev)
	if len(fs) != 1 {
		t.Fatalf("findings = %d, want 1", len(fs))
	}
	f := fs[0]
	if f.Entity != "service/records/plots" || f.Category != catConfig || !strings.Contains(f.Statement, "port 80 targets 8080") || !strings.Contains(f.Statement, "ECONNREFUSED") {
		t.Errorf("finding %s %v %q", f.Entity, f.Category, f.Statement)
	}
	if _, ok := f.Explains[ModeDependencyFailure]; !ok {
		t.Errorf("does not explain the dependency failure: %v", f.Explains)
	}
	refs := Result{ev: ev}.NamedObjects()
	if len(refs) != 1 || refs[0] != (ObjectRef{Kind: "service", Namespace: "records", Name: "plots"}) {
		t.Errorf("named objects = %+v, want the Service its DNS name names", refs)
	}
}

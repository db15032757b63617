package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A workload a mesh route only mirrors to answers no caller: its errors
// are no outage. Variants: Istio's mirror host (short and qualified), the
// Gateway API's request-mirror filter; a route that also sends it real
// requests, or no route at all, leaves it a fault.
func TestMirrorOnly(t *testing.T) {
	res := func(kind string, sigs ...string) Resource {
		return Resource{Resource: facts.Resource{Kind: kind, Namespace: "sleds", Name: "pricing", Signals: sigs}}
	}
	tests := []struct {
		name string
		rs   []Resource
		want bool
	}{
		{"istio mirror host", []Resource{res("VirtualService", "spec.http[0].mirror.host=pricing-v2-shadow", "spec.http[0].route[0].destination.host=pricing")}, true},
		{"qualified mirror host", []Resource{res("VirtualService", "spec.http[0].mirror.host=pricing-v2-shadow.sleds.svc.cluster.local", "spec.http[0].route[0].destination.host=pricing")}, true},
		{"gateway api request mirror", []Resource{res("HTTPRoute", "spec.rules[0].filters[0].requestMirror.backendRef.name=pricing-v2-shadow", "spec.rules[0].backendRefs[0].name=pricing")}, true},
		{"also routed", []Resource{res("VirtualService", "spec.http[0].mirror.host=pricing-v2-shadow", "spec.http[1].route[0].destination.host=pricing-v2-shadow")}, false},
		{"no route names it", []Resource{res("VirtualService", "spec.http[0].route[0].destination.host=pricing")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Resources = tc.rs
			c := &candidate{kind: "workload", name: "pricing-v2-shadow", entity: "deployment/sleds/pricing-v2-shadow",
				errLines: []LogLine{{LogLine: facts.LogLine{Level: "ERROR", Message: "quote failed: NotImplementedError"}}}}
			f, ok := ev.mirrorFinding(c)
			if ok != tc.want {
				t.Fatalf("mirror-only %v, want %v (%s)", ok, tc.want, f.Statement)
			}
			if ok && (!f.Healthy || !strings.Contains(f.Statement, "mirror")) {
				t.Errorf("finding %v %q must be healthy and name the mirror", f.Healthy, f.Statement)
			}
		})
	}
}

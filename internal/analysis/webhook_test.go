package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A controller's refused creates that say the API server could not call
// an admission webhook's service (no endpoints, refused, timed out) make
// that service's workload a dependency failure; a webhook whose
// certificate the call refused is not this row's, and no such event
// proposes nothing.
func TestWebhookDown(t *testing.T) {
	ev := func(msg string) facts.Event {
		return facts.Event{Namespace: "wards", Type: "Warning", Reason: "FailedCreate", InvolvedKind: "ReplicaSet", InvolvedName: "bed-board-5f6", Count: 14, Message: msg, LastSeen: at(5)}
	}
	cases := []struct {
		name, msg, want string
	}{
		{"no endpoints", `Error creating: Internal error occurred: failed calling webhook "validate.gatekeeper.io": failed to call webhook: Post "https://gate-keeper.admission.svc:443/validate?timeout=10s": no endpoints available for service "gate-keeper"`, "deployment/admission/gate-keeper"},
		{"timed out", `Error creating: Internal error occurred: failed calling webhook "inject.mesh.io": Post "https://mesh-injector.mesh-system.svc:443/inject?timeout=10s": context deadline exceeded`, "deployment/mesh-system/mesh-injector"},
		{"certificate", `Error creating: Internal error occurred: failed calling webhook "defaults.platform.io": Post "https://pod-defaults.platform.svc:443/mutate": x509: certificate has expired or is not yet valid`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, nil, pin(t, "e", "get_events", "k8s", facts.KeyEvents, []facts.Event{ev(tc.msg)}))
			f := modeFinding(res, ModeWebhookDown)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("webhook down proposed: %s", f.Statement)
				}
				return
			}
			if f == nil || f.Entity != tc.want || f.Category != catDependency {
				t.Fatalf("findings %v, want the webhook's service %s down", modesOf(res.Findings), tc.want)
			}
		})
	}
}

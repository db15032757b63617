package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// The same failure on two pods of a workload is the workload's; on one pod
// it stays that pod's; a StatefulSet's pods lift to the StatefulSet and a
// Job's pods stay pods.
func TestLiftToOwners(t *testing.T) {
	ev := NewEvidence(nil, nil)
	ev.Deployments = []Deployment{{Deployment: facts.Deployment{Name: "cart", Namespace: "shop"}}}
	ev.Pods = []Pod{
		{Pod: facts.Pod{Namespace: "shop", Name: "cart-7f9c-aaaa1", OwnerKind: "ReplicaSet", OwnerName: "cart-7f9c"}},
		{Pod: facts.Pod{Namespace: "shop", Name: "cart-7f9c-bbbb2", OwnerKind: "ReplicaSet", OwnerName: "cart-7f9c"}},
		{Pod: facts.Pod{Namespace: "shop", Name: "ledger-0", OwnerKind: "StatefulSet", OwnerName: "ledger"}},
		{Pod: facts.Pod{Namespace: "shop", Name: "ledger-1", OwnerKind: "StatefulSet", OwnerName: "ledger"}},
		{Pod: facts.Pod{Namespace: "shop", Name: "export-29001-x1", OwnerKind: "Job", OwnerName: "export-29001"}},
		{Pod: facts.Pod{Namespace: "shop", Name: "export-29001-x2", OwnerKind: "Job", OwnerName: "export-29001"}},
	}
	findings := []Finding{
		{Mode: "oom_killed", Entity: "pod/shop/cart-7f9c-aaaa1"},
		{Mode: "oom_killed", Entity: "pod/shop/cart-7f9c-bbbb2"},
		{Mode: "probe_failure", Entity: "pod/shop/cart-7f9c-aaaa1"},
		{Mode: "crash_loop", Entity: "pod/shop/ledger-0"},
		{Mode: "crash_loop", Entity: "pod/shop/ledger-1"},
		{Mode: "job_failed", Entity: "pod/shop/export-29001-x1"},
		{Mode: "job_failed", Entity: "pod/shop/export-29001-x2"},
		{Mode: "healthy_restart", Entity: "pod/shop/cart-7f9c-bbbb2", Healthy: true},
	}
	ev.liftToOwners(findings)
	want := []string{"deployment/shop/cart", "deployment/shop/cart", "pod/shop/cart-7f9c-aaaa1", "statefulset/shop/ledger", "statefulset/shop/ledger", "pod/shop/export-29001-x1", "pod/shop/export-29001-x2", "pod/shop/cart-7f9c-bbbb2"}
	for i, f := range findings {
		if f.Entity != want[i] {
			t.Errorf("finding %d (%s): entity %s, want %s", i, f.Mode, f.Entity, want[i])
		}
	}
	if len(findings[0].Inferred) == 0 || !strings.Contains(findings[0].Inferred[0].Text, "2 pods of deployment/shop/cart") {
		t.Errorf("a lifted finding must say which pods showed it: %v", findings[0].Inferred)
	}
}

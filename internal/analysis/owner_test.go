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

// A ranked reading about one pod names the workload when nothing
// distinguishes that pod from the workload's spec: it is the only pod, or the only pod of a
// new revision while the old revision serves. A pod among healthy replicas
// of its own revision, and a StatefulSet's replica among its siblings,
// stay pods.
func TestLiftSinglePod(t *testing.T) {
	pod := func(name, owner, kind string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "shop", Name: name, OwnerKind: kind, OwnerName: owner}}
	}
	for _, tc := range []struct {
		name string
		pods []Pod
		want string
	}{
		{"the only pod", []Pod{pod("cart-7f9c-aaaa1", "cart-7f9c", "ReplicaSet")}, "deployment/shop/cart"},
		{"the new revision's only pod", []Pod{pod("cart-7f9c-aaaa1", "cart-7f9c", "ReplicaSet"), pod("cart-5b2d-cccc3", "cart-5b2d", "ReplicaSet"), pod("cart-5b2d-dddd4", "cart-5b2d", "ReplicaSet")}, "deployment/shop/cart"},
		{"one replica of its revision", []Pod{pod("cart-7f9c-aaaa1", "cart-7f9c", "ReplicaSet"), pod("cart-7f9c-bbbb2", "cart-7f9c", "ReplicaSet")}, "pod/shop/cart-7f9c-aaaa1"},
		{"a StatefulSet's only pod", []Pod{pod("ledger-0", "ledger", "StatefulSet")}, "statefulset/shop/ledger"},
		{"one StatefulSet replica of three", []Pod{pod("ledger-0", "ledger", "StatefulSet"), pod("ledger-1", "ledger", "StatefulSet"), pod("ledger-2", "ledger", "StatefulSet")}, "pod/shop/ledger-0"},
		{"a Job's pod", []Pod{pod("export-1-x1", "export-1", "Job")}, "pod/shop/export-1-x1"},
	} {
		ev := NewEvidence(nil, nil)
		ev.Deployments = []Deployment{{Deployment: facts.Deployment{Name: "cart", Namespace: "shop"}}}
		ev.Pods = tc.pods
		findings := []Finding{{Mode: "crash_loop", Entity: "pod/shop/" + tc.pods[0].Name, Score: 0.8, Category: catConfig}}
		ev.liftToOwners(findings)
		round := rank(ev, findings)
		res := round
		ev.liftSolePods(&res)
		if res.Findings[0].Entity != tc.want || res.Hypotheses[0].GetEntity() != tc.want {
			t.Errorf("%s: entity %s (hypothesis %s), want %s", tc.name, res.Findings[0].Entity, res.Hypotheses[0].GetEntity(), tc.want)
		}
		// The round's reading (which picks the next evidence) keeps the pod.
		if pod := "pod/shop/" + tc.pods[0].Name; round.Findings[0].Entity != pod || round.Hypotheses[0].GetEntity() != pod {
			t.Errorf("%s: the round's reading moved to %s / %s", tc.name, round.Findings[0].Entity, round.Hypotheses[0].GetEntity())
		}
	}
}

package tools

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func managed(manager, sub string, at time.Time, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: sub, Time: &t,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

func TestGetRecentChanges(t *testing.T) {
	old := metav1.NewTime(t0.Add(-400 * 24 * time.Hour))
	objs := []runtime.Object{
		// An operator edit of a budget 20 minutes before t0, and a
		// controller's later status write that is not a change.
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "dock-pdb", Namespace: "shop", CreationTimestamp: old,
			Annotations: map[string]string{"kubernetes.io/change-cause": "tighten budget for the migration"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				managed("kubectl-edit", "", t0.Add(-20*time.Minute), `{"f:spec":{"f:minAvailable":{}},"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`),
				managed("kube-controller-manager", "status", t0.Add(-time.Minute), `{"f:status":{"f:currentHealthy":{}}}`),
			}}},
		// A PriorityClass created in the window (cluster-scoped).
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-high", CreationTimestamp: metav1.NewTime(t0.Add(-30 * time.Minute)),
			Annotations: map[string]string{"team.example/ticket": "OPS-42", "argocd.argoproj.io/tracking-id": "ml:PriorityClass:batch-high"}}, Value: 1000000},
		// A node label edit.
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", CreationTimestamp: old, ManagedFields: []metav1.ManagedFieldsEntry{
			managed("kubectl-label", "", t0.Add(-10*time.Minute), `{"f:metadata":{"f:labels":{"f:topology.example/rack":{}}}}`),
		}}},
		// Another namespace, and an edit long before the window: neither is listed.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "billing", CreationTimestamp: metav1.NewTime(t0.Add(-5 * time.Minute))}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ancient", Namespace: "shop", CreationTimestamp: old, ManagedFields: []metav1.ManagedFieldsEntry{
			managed("helm", "", t0.Add(-200*24*time.Hour), `{"f:data":{"f:k":{}}}`),
		}}},
	}
	set := newTestSet()
	set.set.Kube = fake.NewClientset(objs...)
	s := newService(t, set.set, nil)
	resp := run(t, s, "get_recent_changes", map[string]any{"namespace": "shop", "since": "6h"})
	got := decode[[]facts.ObjectChange](t, resp.GetResult(), facts.KeyObjectChanges)
	byName := map[string]facts.ObjectChange{}
	for _, c := range got {
		byName[c.Kind+"/"+c.Name] = c
	}
	if len(got) != 3 {
		t.Fatalf("want 3 changes (budget edit, priority class created, node label), got %d: %+v", len(got), got)
	}
	pdb, ok := byName["PodDisruptionBudget/dock-pdb"]
	if !ok || pdb.Action != "edited" || pdb.Manager != "kubectl-edit" || !pdb.At.Equal(t0.Add(-20*time.Minute)) {
		t.Errorf("budget edit: %+v", pdb)
	}
	if strings.Join(pdb.Fields, ",") != "spec.minAvailable" {
		t.Errorf("budget fields = %v, want spec.minAvailable only (no last-applied, no status)", pdb.Fields)
	}
	if pdb.Note != "tighten budget for the migration" {
		t.Errorf("change-cause note = %q", pdb.Note)
	}
	if pc := byName["PriorityClass/batch-high"]; pc.Action != "created" || pc.Namespace != "" || pc.Note != "annotations team.example/ticket=OPS-42" {
		t.Errorf("priority class (created, cluster-scoped, its ticket but not the deploy tool's bookkeeping): %+v", pc)
	}
	if n := byName["Node/worker-1"]; n.Action != "edited" || len(n.Fields) != 1 || n.Fields[0] != "metadata.labels.topology.example/rack" {
		t.Errorf("node label edit: %+v", n)
	}
	if !got[0].At.After(*got[1].At) || !got[1].At.After(*got[2].At) {
		t.Errorf("changes not newest first: %+v", got)
	}
	if !strings.Contains(resp.GetResult().GetSummary(), "3 object changes") {
		t.Errorf("summary: %s", resp.GetResult().GetSummary())
	}
}

func TestManagedLeaves(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}}`, `spec.template.spec.containers[{"name":"app"}].image`},
		{`{"f:status":{"f:replicas":{}}}`, ``},
		{`not json`, ``},
	} {
		got := strings.Join(managedLeaves(&metav1.FieldsV1{Raw: []byte(tc.raw)}), ",")
		if got != tc.want {
			t.Errorf("managedLeaves(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

package tools

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func objWithApplied(t *testing.T, applied map[string]any, current map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(applied)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"metadata": map[string]any{"annotations": map[string]any{lastAppliedKey: string(raw)}}}
	for k, v := range current {
		obj[k] = v
	}
	return obj
}

func TestAppliedDiff(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		applied map[string]any
		current map[string]any
		want    []string
	}{
		{"a setting inside a config file", "ConfigMap",
			map[string]any{"data": map[string]any{"app.conf": "... pool_size = 50 ..."}},
			map[string]any{"data": map[string]any{"app.conf": "listen = '*'\npool_size = 5\nlog_level = info\n"}},
			[]string{"data.app.conf: pool_size 50 -> 5"}},
		{"a plain value and a removed key", "ConfigMap",
			map[string]any{"data": map[string]any{"MODE": "strict", "TTL": "30"}},
			map[string]any{"data": map[string]any{"MODE": "permissive"}},
			[]string{"data.MODE: strict -> permissive", "data.TTL: removed"}},
		{"a spec field", "Deployment",
			map[string]any{"spec": map[string]any{"replicas": 6.0}},
			map[string]any{"spec": map[string]any{"replicas": int64(2), "paused": false}},
			[]string{"spec.replicas: 6 -> 2"}},
		{"unchanged", "ConfigMap",
			map[string]any{"data": map[string]any{"MODE": "strict"}},
			map[string]any{"data": map[string]any{"MODE": "strict", "EXTRA": "x"}},
			nil},
		{"a Secret is never compared", "Secret",
			map[string]any{"data": map[string]any{"password": "b2xk"}},
			map[string]any{"data": map[string]any{"password": "bmV3"}},
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := appliedDiff(tc.kind, objWithApplied(t, tc.applied, tc.current))
			if !slices.Equal(got, tc.want) {
				t.Errorf("appliedDiff = %q, want %q", got, tc.want)
			}
		})
	}
	if got := appliedDiff("ConfigMap", map[string]any{"data": map[string]any{"a": "b"}}); got != nil {
		t.Errorf("no last-applied configuration: %q, want nil", got)
	}
}

func TestObjectChangesEntryWithoutFieldSet(t *testing.T) {
	start := time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)
	at := metav1.NewTime(start.Add(15 * time.Hour))
	tests := []struct {
		name  string
		entry metav1.ManagedFieldsEntry
		want  int
	}{
		{"an operator's edit without its field set", metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}, 1},
		{"a controller's write", metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}, 0},
		{"a status write", metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, Subresource: "status"}, 0},
		{"bookkeeping only", metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns", CreationTimestamp: metav1.NewTime(start.AddDate(-1, 0, 0)),
				ManagedFields: []metav1.ManagedFieldsEntry{tc.entry}}}
			got := objectChanges("ConfigMap", cm, start, start.Add(24*time.Hour))
			if len(got) != tc.want {
				t.Errorf("changes = %+v, want %d", got, tc.want)
			}
		})
	}
}

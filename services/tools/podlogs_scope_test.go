package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A pod held in Init is read through its init container; a pattern that
// matches no pod in the asked namespace is resolved where its pods are.
func TestFetchPodLogsInitContainerAndOtherNamespace(t *testing.T) {
	ts := newTestSet()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scorer-6c8d-4wzkd", Namespace: "fleet", CreationTimestamp: metav1.NewTime(t0.Add(-10 * time.Minute))},
		Spec:       corev1.PodSpec{InitContainers: []corev1.Container{{Name: "wait-for-registry"}}, Containers: []corev1.Container{{Name: "scorer"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "wait-for-registry", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if _, err := ts.kube.CoreV1().Pods("fleet").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ts.podLogs.logs["fleet/scorer-6c8d-4wzkd/wait-for-registry"] = "2026-03-10T11:50:00Z INFO waiting for registry.streams.svc.cluster.local:8081\n"
	s := newService(t, ts.set, nil)
	r := run(t, s, "fetch_pod_logs", map[string]any{"namespace": "streams", "pod": "scorer-*"}).GetResult()
	if !r.GetSuccess() || r.GetNoData() {
		t.Fatalf("no logs: %s %s", r.GetError(), r.GetSummary())
	}
	lines := decode[[]facts.LogLine](t, r, facts.KeyLogLines)
	if len(lines) == 0 || lines[0].Namespace != "fleet" || lines[0].Container != "wait-for-registry" || !strings.Contains(lines[0].Message, "waiting for registry") {
		t.Errorf("lines = %+v, want the init container's log from namespace fleet", lines)
	}
	if !strings.Contains(r.GetSummary(), "namespace fleet") {
		t.Errorf("summary %q does not say where the pods were found", r.GetSummary())
	}
}

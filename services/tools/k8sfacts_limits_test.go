package tools

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The limits a LimitRange set at admission are read per container from the
// LimitRanger's annotation: limits only (not requests), of the named
// container only; a pod without the annotation has none.
func TestLimitRangerDefaults(t *testing.T) {
	for _, tc := range []struct {
		annotation, container string
		want                  []string
	}{
		{"LimitRanger plugin set: cpu, memory request for container api; cpu, memory limit for container api", "api", []string{"cpu", "memory"}},
		{"LimitRanger plugin set: cpu, memory request for container api; memory limit for container api", "api", []string{"memory"}},
		{"LimitRanger plugin set: cpu, memory request for container api", "api", nil},
		{"LimitRanger plugin set: memory limit for container sidecar", "api", nil},
		{"LimitRanger plugin set: memory limit for container api; cpu limit for init container setup", "api", []string{"memory"}},
		{"", "api", nil},
		{"garbage", "api", nil},
	} {
		if got := limitRangerDefaults(tc.annotation, tc.container); !slices.Equal(got, tc.want) {
			t.Errorf("%q / %s: %v, want %v", tc.annotation, tc.container, got, tc.want)
		}
	}
}

// The pod's facts carry them on the container.
func TestPodFactsDefaultedLimits(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-1", Namespace: "shop", Annotations: map[string]string{limitRangerAnnotation: "LimitRanger plugin set: memory limit for container api"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "reg/api:1"}}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "api", Image: "reg/api:1"}}},
	}
	f := podFact(p)
	if len(f.Containers) != 1 || !slices.Equal(f.Containers[0].DefaultedLimits, []string{"memory"}) {
		t.Fatalf("containers %+v, want api with a defaulted memory limit", f.Containers)
	}
}

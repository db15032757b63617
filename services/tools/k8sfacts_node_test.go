package tools

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node's fact carries what it runs (its status' node info): the report
// can tell nodes of a new image or runtime from the others.
func TestNodeFactSoftware(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{
		OSImage: "Amazon Linux 2023.7", KernelVersion: "6.12.14", ContainerRuntimeVersion: "containerd://2.0.1", KubeletVersion: "v1.31.4"}}}
	got := nodeFact(n).Software
	want := map[string]string{"os_image": "Amazon Linux 2023.7", "kernel": "6.12.14", "container_runtime": "containerd://2.0.1", "kubelet": "v1.31.4"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("software[%s] = %q, want %q", k, got[k], v)
		}
	}
	if s := nodeFact(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}).Software; s != nil {
		t.Errorf("a node without node info has software %v", s)
	}
}

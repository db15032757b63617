package tools

import (
	"github.com/rcamesh/rcamesh/internal/facts"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A Service port whose target no selected pod declares is named; a port
// served by number or by name, an unset target (the port itself) and pods
// that declare no ports are not.
func TestUnservedTargetPorts(t *testing.T) {
	pod := func(ports ...corev1.ContainerPort) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ports}}}}
	}
	svc := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Ports: ports}}
	}
	http8000 := corev1.ContainerPort{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []corev1.Pod
		want string // a substring, "" for none
	}{
		{"numeric target not declared", svc(corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}), []corev1.Pod{pod(http8000)}, "port 80 targets 8080"},
		{"numeric target declared", svc(corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8000)}), []corev1.Pod{pod(http8000)}, ""},
		{"named target declared", svc(corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}), []corev1.Pod{pod(http8000)}, ""},
		{"named target missing", svc(corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("web")}), []corev1.Pod{pod(http8000)}, "port 80 targets web"},
		{"unset target is the port", svc(corev1.ServicePort{Port: 8000}), []corev1.Pod{pod(http8000)}, ""},
		{"pods declare no ports", svc(corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}), []corev1.Pod{pod()}, ""},
	}
	for _, tc := range tests {
		got := unservedTargetPorts(tc.svc, tc.pods)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A Service's Local traffic policies are signalled with the nodes of its
// ready endpoints (a pod not ready is no endpoint); Cluster policies, and
// an external policy of a Service that takes no outside traffic, are not.
func TestLocalTrafficPolicies(t *testing.T) {
	local, cluster := corev1.ServiceInternalTrafficPolicyLocal, corev1.ServiceInternalTrafficPolicyCluster
	pod := func(node string, ready corev1.ConditionStatus) facts.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		return podFact(&p)
	}
	pods := []facts.Pod{pod("node-b", corev1.ConditionTrue), pod("node-a", corev1.ConditionTrue), pod("node-c", corev1.ConditionFalse)}
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		want string
	}{
		{"internal Local", corev1.ServiceSpec{InternalTrafficPolicy: &local}, "internal nodes=node-a,node-b"},
		{"internal Cluster", corev1.ServiceSpec{InternalTrafficPolicy: &cluster}, ""},
		{"external Local on a load balancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}, "external nodes=node-a,node-b"},
		{"external Local on a ClusterIP Service", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}, ""},
	}
	for _, tc := range tests {
		got := strings.Join(localTrafficPolicies(&corev1.Service{Spec: tc.spec}, pods), "|")
		if tc.want == "" && got != "" || tc.want != "" && got != facts.SignalLocalTraffic+tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

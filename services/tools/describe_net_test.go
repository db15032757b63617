package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestDescribeNetworkPoliciesAndIngressBackends(t *testing.T) {
	ts := newTestSet()
	ctx := context.Background()
	udp := corev1.ProtocolUDP
	port53 := intstr.FromInt32(53)
	created := metav1.NewTime(t0.Add(-20 * time.Minute))
	if _, err := ts.kube.NetworkingV1().NetworkPolicies("shop").Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "egress-lockdown", Namespace: "shop", CreationTimestamp: created},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port53}},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.kube.CoreV1().Services("shop").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "shop"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "orphan-gone"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pathType := networkingv1.PathTypePrefix
	if _, err := ts.kube.NetworkingV1().Ingresses("shop").Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "shop"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "front.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "orphan", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := newService(t, ts.set, nil)
	cases := []struct {
		name   string
		params map[string]any
		noData bool
		check  func(t *testing.T, res []facts.Resource)
	}{
		{"every policy of the namespace", map[string]any{"kind": "networkpolicy", "name": "*", "namespace": "shop"}, false, func(t *testing.T, res []facts.Resource) {
			if len(res) != 1 || res[0].Kind != "NetworkPolicy" || res[0].Name != "egress-lockdown" || res[0].CreatedAt == nil || !res[0].CreatedAt.Equal(created.Time) {
				t.Fatalf("policies = %+v", res)
			}
			if s := strings.Join(res[0].Signals, "; "); !strings.Contains(s, "egress allows only") || !strings.Contains(s, "53/UDP") || !strings.Contains(s, "kube-system") {
				t.Errorf("signals = %s", s)
			}
		}},
		{"a namespace without policies", map[string]any{"kind": "networkpolicy", "name": "*", "namespace": "empty"}, true, nil},
		{"ingress describes its backend service", map[string]any{"kind": "ingress", "name": "front", "namespace": "shop"}, false, func(t *testing.T, res []facts.Resource) {
			if len(res) != 2 || res[1].Kind != "Service" || res[1].Name != "orphan" {
				t.Fatalf("resources = %+v", res)
			}
			if s := strings.Join(res[1].Signals, "; "); !strings.Contains(s, "selector app=orphan-gone matches no pods") {
				t.Errorf("backend signals = %s", s)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, s, "describe_resource", tc.params).GetResult()
			if r.GetNoData() != tc.noData {
				t.Fatalf("no_data = %v, want %v (%s)", r.GetNoData(), tc.noData, r.GetSummary())
			}
			if tc.check != nil {
				tc.check(t, decode[[]facts.Resource](t, r, facts.KeyResources))
			}
		})
	}
}

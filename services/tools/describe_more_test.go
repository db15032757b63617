package tools

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A budget that allows no disruption, an autoscaler that cannot read its
// metric (and the Deployment it targets carrying it), and a node described
// without a namespace.
func TestDescribeBudgetsAutoscalersAndClusterScoped(t *testing.T) {
	ts := newTestSet()
	minAv := intstr.FromInt32(2)
	mustAdd := func(o interface{ GetName() string }, err error) {
		if err != nil {
			t.Fatalf("add %s: %v", o.GetName(), err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "cart-pdb", Namespace: "shop"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAv},
		Status: policyv1.PodDisruptionBudgetStatus{ExpectedPods: 2, CurrentHealthy: 2, DesiredHealthy: 2, DisruptionsAllowed: 0}}
	_, err := ts.kube.PolicyV1().PodDisruptionBudgets("shop").Create(context.Background(), pdb, metav1.CreateOptions{})
	mustAdd(pdb, err)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "cart"}, MaxReplicas: 8,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "cart_rps"}}}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.ScalingActive, Status: "False", Reason: "FailedGetPodsMetric", Message: "unable to get metric cart_rps"}}}}
	_, err = ts.kube.AutoscalingV2().HorizontalPodAutoscalers("shop").Create(context.Background(), hpa, metav1.CreateOptions{})
	mustAdd(hpa, err)
	s := newService(t, ts.set, nil)

	r := run(t, s, "describe_resource", map[string]any{"kind": "poddisruptionbudget", "name": "cart-pdb", "namespace": "shop"}).GetResult()
	res := decode[[]facts.Resource](t, r, facts.KeyResources)
	if !r.GetSuccess() || len(res) == 0 || res[0].Kind != "PodDisruptionBudget" || len(res[0].Conditions) != 1 || res[0].Conditions[0].Status != "False" {
		t.Fatalf("pdb: %s %+v", r.GetError(), res)
	}
	if !strings.Contains(strings.Join(res[0].Signals, " "), "disruptionsAllowed 0") {
		t.Errorf("pdb signals %v", res[0].Signals)
	}

	r = run(t, s, "list_deployments", map[string]any{"namespace": "shop", "name": "cart"}).GetResult()
	deps := decode[[]facts.Deployment](t, r, facts.KeyDeployments)
	if len(deps) != 1 || len(deps[0].Autoscalers) != 1 || deps[0].Autoscalers[0].Conditions[0].Reason != "FailedGetPodsMetric" {
		t.Fatalf("deployment autoscalers: %+v", deps)
	}
	if !strings.Contains(strings.Join(deps[0].Autoscalers[0].Signals, " "), "cart_rps") {
		t.Errorf("autoscaler signals %v", deps[0].Autoscalers[0].Signals)
	}

	// A node has no namespace and is described without one.
	if r := run(t, s, "describe_resource", map[string]any{"kind": "node", "name": "node-1"}).GetResult(); strings.Contains(r.GetError(), "namespace") {
		t.Errorf("node describe asked for a namespace: %s", r.GetError())
	}
}

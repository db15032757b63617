package tools

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// builtinKind folds the spellings of the built-in kinds describe_resource
// handles to its own names ("poddisruptionbudget" and "pdb" are "pdb"),
// through the one kind vocabulary (canonicalKind).
func builtinKind(kind string) string {
	switch c := canonicalKind(kind); c {
	case "PodDisruptionBudget":
		return "pdb"
	case "HorizontalPodAutoscaler":
		return "hpa"
	case "PersistentVolumeClaim":
		return "pvc"
	case "Pod", "Deployment", "Service", "Node", "ConfigMap", "Ingress", "NetworkPolicy":
		return strings.ToLower(c)
	}
	return kind
}

// describePDB: a PodDisruptionBudget's bound, how many disruptions it
// allows now and its condition. A budget that allows none blocks every
// eviction (a node drain, an upgrade) until it does.
func (s *Service) describePDB(ctx context.Context, r *Result, res *facts.Resource) error {
	p, err := s.be.Kube.PolicyV1().PodDisruptionBudgets(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	res.Kind = "PodDisruptionBudget"
	bound := ""
	switch {
	case p.Spec.MinAvailable != nil:
		bound = "minAvailable " + p.Spec.MinAvailable.String()
	case p.Spec.MaxUnavailable != nil:
		bound = "maxUnavailable " + p.Spec.MaxUnavailable.String()
	}
	st := p.Status
	res.Signals = append(res.Signals, fmt.Sprintf("%s; %d pods expected, %d healthy, %d desired healthy, disruptionsAllowed %d",
		bound, st.ExpectedPods, st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed))
	if st.DisruptionsAllowed == 0 && st.ExpectedPods > 0 {
		res.Signals = append(res.Signals, "the budget allows no disruption: every eviction of its pods (a drain, an upgrade) is refused")
	}
	if p.Spec.Selector != nil {
		res.Signals = append(res.Signals, "selects "+metav1.FormatLabelSelector(p.Spec.Selector))
	}
	for _, c := range st.Conditions {
		res.Conditions = append(res.Conditions, facts.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	if len(res.Conditions) == 0 && (st.ObservedGeneration > 0 || st.ExpectedPods > 0) {
		// The disruption controller publishes DisruptionAllowed; a status
		// without it (an older controller, an exported object) is read the
		// way the controller would write it.
		c := facts.Condition{Type: "DisruptionAllowed", Status: "True", Reason: "SufficientPods"}
		if st.DisruptionsAllowed == 0 {
			c.Status, c.Reason = "False", "InsufficientPods"
		}
		res.Conditions = append(res.Conditions, c)
	}
	r.Rawf("Name:       %s", p.Name)
	r.Rawf("Namespace:  %s", p.Namespace)
	for _, l := range res.Signals {
		r.Rawf("  %s", l)
		r.Snippet(fmt.Sprintf("poddisruptionbudget %s/%s: %s", p.Namespace, p.Name, l))
	}
	for _, c := range res.Conditions {
		r.Rawf("  condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return nil
}

// describeHPA: an autoscaler's bounds, metric sources and conditions (can
// it read its metrics, can it scale, is it limited).
func (s *Service) describeHPA(ctx context.Context, r *Result, res *facts.Resource) error {
	h, err := s.be.Kube.AutoscalingV2().HorizontalPodAutoscalers(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	*res = autoscalerFact(h)
	res.Owners = []string{h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name}
	r.Rawf("Name:       %s", h.Name)
	r.Rawf("Namespace:  %s", h.Namespace)
	r.Rawf("Target:     %s/%s", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	for _, l := range res.Signals {
		r.Rawf("  %s", l)
	}
	for _, c := range res.Conditions {
		r.Rawf("  condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		r.Snippet(fmt.Sprintf("horizontalpodautoscaler %s/%s: %s=%s %s %s", h.Namespace, h.Name, c.Type, c.Status, c.Reason, c.Message))
	}
	return nil
}

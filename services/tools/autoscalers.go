package tools

import (
	"context"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// attachAutoscalers adds to each Deployment the HorizontalPodAutoscalers
// that target it: an autoscaler that cannot read its metric or cannot
// scale is part of the workload's state, and it is never visible in the
// Deployment's own status. A cluster without the autoscaling API (or
// without the permission to list it) leaves the Deployments as they are.
func (s *Service) attachAutoscalers(ctx context.Context, ns string, deps []facts.Deployment) {
	if len(deps) == 0 || s.be.Kube == nil {
		return
	}
	list, err := s.be.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.log.Debug("autoscalers unavailable", "namespace", ns, "err", err)
		return
	}
	for i := range list.Items {
		h := &list.Items[i]
		ref := h.Spec.ScaleTargetRef
		if !strings.EqualFold(ref.Kind, "Deployment") {
			continue
		}
		for j := range deps {
			if deps[j].Name == ref.Name && deps[j].Namespace == h.Namespace {
				deps[j].Autoscalers = append(deps[j].Autoscalers, autoscalerFact(h))
			}
		}
	}
}

// autoscalerFact is an HPA as a resource: its conditions, and its replica
// bounds and metric sources as signals.
func autoscalerFact(h *autoscalingv2.HorizontalPodAutoscaler) facts.Resource {
	res := facts.Resource{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name, Spec: specLines(h, h.Annotations)}
	for _, c := range h.Status.Conditions {
		res.Conditions = append(res.Conditions, facts.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	minR := int32(1)
	if h.Spec.MinReplicas != nil {
		minR = *h.Spec.MinReplicas
	}
	res.Signals = append(res.Signals, fmt.Sprintf("replicas current %d, desired %d, minReplicas %d, maxReplicas %d",
		h.Status.CurrentReplicas, h.Status.DesiredReplicas, minR, h.Spec.MaxReplicas))
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingLimited && c.Status == "True" && c.Reason == "TooManyReplicas" {
			res.Signals = append(res.Signals, fmt.Sprintf("at its maxReplicas bound (%d): ScalingLimited (%s): %s", h.Spec.MaxReplicas, c.Reason, c.Message))
		}
	}
	for _, m := range h.Spec.Metrics {
		if name := metricSourceName(m); name != "" {
			res.Signals = append(res.Signals, "scales on "+strings.ToLower(string(m.Type))+" metric "+name)
		}
	}
	return res
}

// metricSourceName names the metric an HPA metric spec reads.
func metricSourceName(m autoscalingv2.MetricSpec) string {
	switch {
	case m.Resource != nil:
		return string(m.Resource.Name)
	case m.ContainerResource != nil:
		return string(m.ContainerResource.Name)
	case m.Pods != nil:
		return m.Pods.Metric.Name
	case m.Object != nil:
		return m.Object.Metric.Name
	case m.External != nil:
		return m.External.Metric.Name
	}
	return ""
}

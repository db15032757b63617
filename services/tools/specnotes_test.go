package tools

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A workload's notes keep what says how it is run and leave out the
// bookkeeping of controllers and deploy tools, blobs and credentials.
func TestRunNotes(t *testing.T) {
	got := strings.Join(runNotes(map[string]string{
		"downscaler/original-replicas":                     "4",
		"ops.example/why":                                  "pinned to  two zones\nafter INC-88",
		"deployment.kubernetes.io/revision":                "12",
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1"}`,
		"meta.helm.sh/release-name":                        "crane",
		"checksum/config":                                  "9f2c1",
		"example.com/api-token":                            "s3cr3t",
		"example.com/layout":                               `["a","b"]`,
	}, map[string]string{"sidecar.istio.io/inject": "false"}), "\n")
	for _, w := range []string{"downscaler/original-replicas=4", "ops.example/why=pinned to two zones after INC-88", "sidecar.istio.io/inject=false"} {
		if !strings.Contains(got, w) {
			t.Errorf("notes %q: %q missing", got, w)
		}
	}
	for _, n := range []string{"revision", "last-applied", "helm", "checksum", "s3cr3t", "api-token", "layout"} {
		if strings.Contains(got, n) {
			t.Errorf("notes %q: %q kept", got, n)
		}
	}
}

// A typed object's spec is flattened with its notes: an autoscaler's
// scaling behaviour, an ingress's controller annotations; empty values and
// credentials are not kept.
func TestSpecLines(t *testing.T) {
	one, sixty := int32(1), int32(60)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: "tix"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 30, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "gate"},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Pods", Value: one, PeriodSeconds: sixty}}}}},
	}
	got := strings.Join(specLines(hpa, hpa.Annotations), "\n")
	for _, w := range []string{"spec.behavior.scaleUp.policies[0].periodSeconds=60", "spec.behavior.scaleUp.policies[0].type=Pods", "spec.maxReplicas=30"} {
		if !strings.Contains(got, w) {
			t.Errorf("hpa spec %q: %q missing", got, w)
		}
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "quotes", Annotations: map[string]string{
		"nginx.ingress.kubernetes.io/proxy-read-timout": "600", "nginx.ingress.kubernetes.io/auth-password": "hunter2"}}}
	got = strings.Join(specLines(ing, ing.Annotations), "\n")
	if !strings.Contains(got, "metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timout=600") {
		t.Errorf("ingress spec %q: the annotation is missing", got)
	}
	if strings.Contains(got, "hunter2") || strings.Contains(got, "auth-password") {
		t.Errorf("ingress spec %q: a credential is kept", got)
	}
}

// An object's own settings come before the details of the templates it
// nests, so the cap on the lines kept does not cut them.
func TestShallowFirst(t *testing.T) {
	got := shallowFirst([]string{
		"spec.jobTemplate.spec.template.spec.containers[0].image=x:1",
		"spec.concurrencyPolicy=Forbid",
		"spec.jobTemplate.spec.backoffLimit=2",
		"spec.schedule=0 2 * * *",
		"spec.timeZone=Europe/Lisbon",
	})
	want := []string{"spec.concurrencyPolicy=Forbid", "spec.schedule=0 2 * * *", "spec.timeZone=Europe/Lisbon", "spec.jobTemplate.spec.backoffLimit=2", "spec.jobTemplate.spec.template.spec.containers[0].image=x:1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("shallowFirst = %q, want %q", got, want)
	}
}

package analysis

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A consumer's backlog grows while the autoscaler that acts on it cannot
// read its metric: the autoscaler's settings are the cause (a
// configuration error of the autoscaler), the backlog their effect. An
// autoscaler held at its maximum, or no autoscaler, leaves the capacity
// reading as it is. Names and vocabularies vary; the verdict follows the
// condition, not the words.
func TestBlockedControllerExplainsSaturation(t *testing.T) {
	type variant struct {
		ns, app, msg, condType, condStatus, reason string
		category                                   string
		entity                                     string
	}
	vs := []variant{
		{"lanes", "lane-scorer", "throw backlog: pulled 100 of ~{i}540 undelivered from lane-throws; lag growing", "ScalingActive", "False", "FailedGetExternalMetric", "config", "horizontalpodautoscaler/lanes/lane-scorer"},
		{"freight", "manifest-worker", "queue depth {i}200: worker pool exhausted, jobs waiting", "ScalingActive", "False", "FailedGetObjectMetric", "config", "horizontalpodautoscaler/freight/manifest-worker"},
		{"freight", "manifest-worker", "queue depth {i}200: worker pool exhausted, jobs waiting", "ScalingLimited", "True", "TooManyReplicas", "resource", "deployment/freight/manifest-worker"},
		{"freight", "manifest-worker", "queue depth {i}200: worker pool exhausted, jobs waiting", "", "", "", "resource", "deployment/freight/manifest-worker"},
	}
	for _, v := range vs {
		t.Run(v.app+"/"+v.reason, func(t *testing.T) {
			dep := facts.Deployment{Namespace: v.ns, Name: v.app, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
			if v.condType != "" {
				dep.Autoscalers = []facts.Resource{{Kind: "HorizontalPodAutoscaler", Namespace: v.ns, Name: v.app,
					Conditions: []facts.Condition{{Type: "AbleToScale", Status: "True", Reason: "SucceededGetScale"},
						{Type: v.condType, Status: v.condStatus, Reason: v.reason, Message: "the HPA was unable to compute the replica count: no metrics returned"}}}}
			}
			tc := fallbackCase{name: v.app, entity: v.entity,
				pins: func(t *testing.T) []*evidencev1.EvidencePin {
					return []*evidencev1.EvidencePin{
						pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(8, v.ns, v.app, v.app+"-7d9f8c-x1", "WARN", v.msg)),
						pin(t, "dp", "list_deployments", "k8s", facts.KeyDeployments, []facts.Deployment{dep}),
					}
				}}
			tc.category = map[string]investigationv1.RootCauseCategory{"config": catConfig, "resource": catResource}[v.category]
			runFallback(t, healthOnly(t), tc)
		})
	}
}

// Two names of one workload (a log shipper's service name and its pods'
// workload) are one caller; two workloads are two.
func TestDistinctWorkloads(t *testing.T) {
	tests := []struct {
		names []string
		want  int
	}{
		{[]string{"ingress-nginx", "ingress-nginx-controller"}, 1},
		{[]string{"edge-proxy-controller", "edge-proxy"}, 1},
		{[]string{"checkout", "refunds"}, 2},
		{[]string{"cart", "cartographer"}, 2}, // a prefix without a hyphen is another name
		{nil, 0},
	}
	for _, tc := range tests {
		if got := distinctWorkloads(tc.names); got != tc.want {
			t.Errorf("distinctWorkloads(%v) = %d, want %d", tc.names, got, tc.want)
		}
	}
}

// A CronJob's own Warning events make the CronJob the suspect (its
// schedule and deadline), not a workload of pods by its name; a message
// naming the spec field to set reads as configuration.
func TestCronJobEventsNameTheCronJob(t *testing.T) {
	runFallback(t, healthOnly(t), fallbackCase{name: "cronjob", category: catConfig, entity: "cronjob/anvil/class-reminders",
		pins: func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Namespace: "anvil", Type: "Warning", Reason: "TooManyMissedTimes",
				Message: "too many missed start times: 101. Set or decrease .spec.startingDeadlineSeconds or check clock skew", InvolvedKind: "CronJob", InvolvedName: "class-reminders", Count: 40, FirstSeen: at(-40), LastSeen: at(0)}})}
		},
		has: []string{"TooManyMissedTimes", "startingDeadlineSeconds"}})
}

// A probe that could not even run because the container is out of a
// capacity (its pids) is that exhaustion's symptom: no probe finding; the
// same probe timing out is the probe's.
func TestProbeThatCannotRunForCapacity(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		probe bool
	}{
		{"Readiness probe errored: rpc error: code = Unknown desc = failed to exec in container: OCI runtime exec failed: read init-p: connection reset by peer: unknown (pids.max reached)", false},
		{"Readiness probe failed: Get http://10.0.0.1:8080/ready: context deadline exceeded", true},
	} {
		p := healthyPod("api-5d9-prb")
		p.Ready = false
		p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
		res, _ := analyze(t, nil,
			pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
			pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "Unhealthy", Message: tc.msg, InvolvedName: "Pod/api-5d9-prb", Count: 30, LastSeen: at(0)}}))
		got := false
		for _, f := range res.Findings {
			got = got || f.Mode == ModeProbeFailure
		}
		if got != tc.probe {
			t.Errorf("probe finding for %q = %v, want %v", tc.msg, got, tc.probe)
		}
	}
}

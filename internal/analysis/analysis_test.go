package analysis

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/series"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func at(min int) *time.Time { t := t0.Add(time.Duration(min) * time.Minute); return &t }

func i32(v int32) *int32 { return &v }

// pin builds an evidence pin carrying facts under key.
func pin(t *testing.T, id, intent, source, key string, v any) *evidencev1.EvidencePin {
	t.Helper()
	md, err := facts.Put(nil, key, v)
	if err != nil {
		t.Fatal(err)
	}
	st, err := facts.ToStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &evidencev1.EvidencePin{Id: id, SourceTool: intent, Sources: []string{source}, Metadata: st, Success: true}
}

func noData(id, intent string) *evidencev1.EvidencePin {
	return &evidencev1.EvidencePin{Id: id, SourceTool: intent, NoData: true, Success: true}
}

func metric(name string, labels map[string]string, vals ...float64) facts.Series {
	pts := make([]facts.Point, len(vals))
	for i, v := range vals {
		pts[i] = facts.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v}
	}
	return series.Summarize(name, labels, pts)
}

func healthyPod(name string) facts.Pod {
	return facts.Pod{Namespace: "shop", Name: name, Node: "node-a", Phase: "Running", Ready: true, StartTime: at(-600),
		Containers: []facts.Container{{Name: "app", Ready: true, State: "running"}},
		Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}}
}

func readyNodes() []facts.Node {
	return []facts.Node{
		{Name: "node-a", Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}, Allocatable: map[string]string{"cpu": "3500m"}},
		{Name: "node-b", Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}, Allocatable: map[string]string{"cpu": "3500m"}},
	}
}

func analyze(t *testing.T, alert *investigationv1.Alert, pins ...*evidencev1.EvidencePin) (Result, *investigationv1.Diagnosis) {
	t.Helper()
	in := Input{Alert: alert, Pins: pins}
	res, err := Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res, Diagnose(in, res)
}

func text(d *investigationv1.Diagnosis) string {
	var b strings.Builder
	b.WriteString(d.GetRootCause() + "\n")
	for _, c := range append(append([]*investigationv1.Claim{}, d.GetValidatedClaims()...), d.GetNonValidatedClaims()...) {
		b.WriteString(c.GetClaim() + "\n")
	}
	for _, r := range d.GetRuledOut() {
		b.WriteString(r.GetAlternative() + ": " + r.GetReason() + "\n")
	}
	return b.String()
}

func TestRegistry(t *testing.T) {
	names := DetectorNames()
	if len(names) < 20 {
		t.Fatalf("only %d detectors", len(names))
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("names not sorted: %v", names)
		}
	}
	for _, n := range names {
		d, err := NewDetector(n)
		if err != nil || d.Name() != n {
			t.Errorf("NewDetector(%q) = %v, %v", n, d, err)
		}
	}
	if _, err := NewDetector("no-such-detector"); err == nil || !strings.Contains(err.Error(), "no-such-detector") {
		t.Errorf("unknown detector: err = %v", err)
	}
}

func TestEvidenceDecode(t *testing.T) {
	p1 := pin(t, "p1", "list_pods", "eks_pods", facts.KeyPods, []facts.Pod{healthyPod("web-1")})
	p2 := pin(t, "p2", "check_pod_status", "eks_pods", facts.KeyPods, []facts.Pod{healthyPod("web-1"), healthyPod("web-2")})
	bad := &evidencev1.EvidencePin{Id: "p3", SourceTool: "get_events", Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{facts.KeyEvents: structpb.NewStringValue("not a list")}}}
	ev := NewEvidence(nil, []*evidencev1.EvidencePin{p1, p2, bad, noData("p4", "search_logs"), nil})
	if len(ev.Pods) != 2 {
		t.Fatalf("pods = %d, want 2 (deduplicated)", len(ev.Pods))
	}
	if got := ev.Pods[0].PinIDs; len(got) != 2 || got[0] != "p1" || got[1] != "p2" {
		t.Errorf("merged citations = %v", got)
	}
	if len(ev.DecodeErrors) != 1 || !strings.Contains(ev.DecodeErrors[0], "p3") {
		t.Errorf("decode errors = %v", ev.DecodeErrors)
	}
	if !ev.Queried("search_logs") || len(ev.NoData["search_logs"]) != 1 || ev.Sources["eks_pods"] != true {
		t.Errorf("called/nodata/sources: %v %v %v", ev.Called, ev.NoData, ev.Sources)
	}
}

func TestEmptyEvidenceIsUnknownNotHealthy(t *testing.T) {
	res, d := analyze(t, &investigationv1.Alert{AlertName: "X"}, noData("n1", "list_pods"))
	if res.Healthy || d.GetCategory() != catUnknown || d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW {
		t.Fatalf("absence of data must be unknown: healthy=%v cat=%v status=%v", res.Healthy, d.GetCategory(), d.GetStatus())
	}
	if !strings.Contains(strings.Join(res.Unknowns, "\n"), "list_pods returned no data") {
		t.Errorf("unknowns = %v", res.Unknowns)
	}
}

func TestErrorLogsVetoHealth(t *testing.T) {
	res, d := analyze(t, nil,
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("web-1")}),
		pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{{Service: "web", Level: "ERROR", Message: "request failed: something odd", Timestamp: at(0)}}))
	if res.Healthy || d.GetCategory() == catHealthy {
		t.Fatalf("unexplained error logs must not yield a healthy verdict: %q", d.GetRootCause())
	}
}

// Warnings that values are impossible (not a number, outside the range
// their kind allows) are bad data, whatever the pods say: no healthy
// verdict, and the reading is the data's. A routine warning is not bad
// data: once, it leaves health standing; repeated through the incident, it
// is a symptom (persistent.go), still not the data's.
func TestInvalidValueWarningsVetoHealth(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		n       int
		healthy bool
		data    bool
	}{
		{`scored order=O-1 score=NaN decision=review reason="score not finite"`, 6, false, true},
		{"reading R-7: depth -4.2 out of range [0, 120]; reading dropped", 6, false, true},
		// A value printed beside the bound it breaks.
		{"tariff check failed: factor 18.5, expected <= 1.0; order held", 6, false, true},
		{"tariff check failed: factor 18.5 (expected < 1.0); order held", 6, false, true},
		{"slow request took 1.2s (threshold 1s)", 1, true, false},
		{"slow request took 1.2s (threshold 1s)", 6, false, false},
	} {
		var lines []facts.LogLine
		for i := 0; i < tc.n; i++ {
			lines = append(lines, facts.LogLine{Service: "scorer", Pod: "scorer-5d9c-x1", Level: "WARN", Message: tc.msg, Timestamp: at(i)})
		}
		res, d := analyze(t, nil,
			pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("scorer-5d9c-x1")}),
			pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
		if got := res.Healthy || d.GetCategory() == catHealthy; got != tc.healthy {
			t.Errorf("%q x%d: healthy = %v, want %v (%s)", tc.msg, tc.n, got, tc.healthy, d.GetRootCause())
		}
		if (d.GetCategory() == catData) != tc.data {
			t.Errorf("%q x%d: category %v, data quality wanted = %v", tc.msg, tc.n, d.GetCategory(), tc.data)
		}
	}
}

func TestTransientWarningBurstIsHealthyButWeaker(t *testing.T) {
	res, d := analyze(t, nil,
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("web-1"), healthyPod("web-2")}),
		pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
		pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: timeout", InvolvedName: "Pod/web-1", FirstSeen: at(-2), LastSeen: at(-1)}}),
		pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{{Level: "INFO", Message: "ok", Timestamp: at(0)}}))
	if !res.Healthy || !strings.Contains(d.GetRootCause(), "transient") || res.Findings[0].Score >= 0.7 {
		t.Fatalf("healthy=%v score=%.2f root=%q", res.Healthy, res.Findings[0].Score, d.GetRootCause())
	}
	_, d = analyze(t, nil,
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("web-1")}),
		pin(t, "dep", "list_deployments", "k8s", facts.KeyDeployments, []facts.Deployment{{Namespace: "shop", Name: "web", Replicas: 3, ReadyReplicas: 1, UnavailableReplicas: 2}}))
	if d.GetCategory() == catHealthy {
		t.Fatal("a deployment short of replicas is not healthy")
	}
}

func TestExitCode137AloneIsAWeakOOM(t *testing.T) {
	p := healthyPod("api-5d9-k1")
	p.Ready = false
	p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	p.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 3, LastExitCode: i32(137)}}
	res, _ := analyze(t, nil, pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}))
	if res.Findings[0].Mode != ModeOOMKilled || res.Findings[0].Score >= 0.85 {
		t.Fatalf("lead = %s %.2f", res.Findings[0].Mode, res.Findings[0].Score)
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Analyze(ctx, Input{}); err == nil {
		t.Fatal("want error on cancelled context")
	}
}

type want struct {
	mode     string
	category investigationv1.RootCauseCategory
	entity   string
	healthy  bool
	has      []string // in root cause + claims + ruled out
	ruledOut []string // alternatives (substring) that must be ruled out
}

func check(t *testing.T, res Result, d *investigationv1.Diagnosis, w want) {
	t.Helper()
	if len(res.Findings) == 0 {
		t.Fatalf("no findings")
	}
	if got := res.Findings[0].Mode; got != w.mode {
		t.Errorf("lead mode = %s, want %s (statement %q)", got, w.mode, res.Findings[0].Statement)
	}
	if d.GetCategory() != w.category {
		t.Errorf("category = %v, want %v", d.GetCategory(), w.category)
	}
	if w.entity != "" && d.GetRootCauseEntity() != w.entity {
		t.Errorf("entity = %q, want %q", d.GetRootCauseEntity(), w.entity)
	}
	if res.Healthy != w.healthy {
		t.Errorf("healthy = %v, want %v", res.Healthy, w.healthy)
	}
	all := text(d)
	for _, h := range w.has {
		if !strings.Contains(strings.ToLower(all), strings.ToLower(h)) {
			t.Errorf("diagnosis lacks %q:\n%s", h, all)
		}
	}
	for _, alt := range w.ruledOut {
		found := false
		for _, r := range d.GetRuledOut() {
			if strings.Contains(strings.ToLower(r.GetAlternative()), strings.ToLower(alt)) && r.GetReason() != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("alternative %q not ruled out: %v", alt, d.GetRuledOut())
		}
	}
	for _, h := range d.GetHypotheses() {
		if len(h.GetPinIds()) == 0 {
			t.Errorf("hypothesis %s (%s) cites no pins", h.GetId(), h.GetDetector())
		}
	}
	for _, c := range d.GetValidatedClaims() {
		if len(c.GetPinIds()) == 0 {
			t.Errorf("validated claim without pins: %q", c.GetClaim())
		}
	}
}

func TestKubernetesDetectors(t *testing.T) {
	oomPod := healthyPod("api-5d9-xk2")
	oomPod.Ready = false
	oomPod.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	oomPod.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 5, LastReason: "OOMKilled", LastExitCode: i32(137), LimitsMemory: "256Mi"}}

	pullPod := healthyPod("api-7c4-new1")
	pullPod.Phase, pullPod.Ready, pullPod.StartTime = "Pending", false, at(-10)
	pullPod.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	pullPod.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "ImagePullBackOff", Message: `Back-off pulling image "reg/api:9.9": unauthorized: authentication required`}}

	registryDownPod := healthyPod("api-7c4-new3")
	registryDownPod.Phase, registryDownPod.Ready, registryDownPod.StartTime = "Pending", false, at(-10)
	registryDownPod.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	registryDownPod.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "ImagePullBackOff", Message: `Back-off pulling image "images.registry.example/shop/api:9.9": unexpected status from HEAD request to https://images.registry.example/v2/shop/api/manifests/9.9: 503 Service Unavailable`}}

	crashPod := healthyPod("api-7c4-new2")
	crashPod.Ready, crashPod.StartTime = false, at(-10)
	crashPod.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	crashPod.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 4, LastExitCode: i32(2)}}

	pending := healthyPod("api-5d9-pend")
	pending.Phase, pending.Ready, pending.Node = "Pending", false, ""
	pending.Conditions = []facts.Condition{{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient memory."}}

	notReadyNodes := readyNodes()
	notReadyNodes[1].Ready = false
	notReadyNodes[1].Conditions = []facts.Condition{{Type: "Ready", Status: "Unknown"}}
	lostPod := healthyPod("api-5d9-lost")
	lostPod.Node, lostPod.Phase, lostPod.Ready = "node-b", "Unknown", false
	lostPod.Conditions = []facts.Condition{{Type: "Ready", Status: "Unknown", Reason: "NodeLost"}}

	recovered := healthyPod("api-5d9-rst")
	recovered.Containers[0].RestartCount = 1

	dep := func(desired, ready int32) []facts.Deployment {
		return []facts.Deployment{{Namespace: "shop", Name: "api", Replicas: desired, ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: desired - ready}}
	}
	cases := []struct {
		name string
		pins func(t *testing.T) []*evidencev1.EvidencePin
		want want
	}{
		{"oom killed", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{oomPod, healthyPod("api-5d9-ok1")}),
				pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container api", InvolvedKind: "Pod", InvolvedName: "api-5d9-xk2", Count: 5, LastSeen: at(0)}}),
			}
		}, want{mode: ModeOOMKilled, category: catResource, entity: "pod/shop/api-5d9-xk2", has: []string{"exit code 137", "256Mi", "Sibling replicas api-5d9-ok1"}, ruledOut: []string{"image pull"}}},
		{"image pull unauthorized", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{pullPod, healthyPod("api-5d9-old")}),
				pin(t, "dep", "list_deployments", "k8s", facts.KeyDeployments, dep(2, 1)),
			}
		}, want{mode: ModeImagePull, category: catConfig, entity: "deployment/shop/api", has: []string{"reg/api:9.9", "unauthorized", "old ReplicaSet api-5d9"}, ruledOut: []string{"OOM"}}},
		{"image pull from a failing registry", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{registryDownPod, healthyPod("api-5d9-old")}),
			}
		}, want{mode: ModeImagePull, category: catDependency, entity: "host/images.registry.example", has: []string{"503 service unavailable", "images.registry.example"}}},
		{"crashloop from a code panic", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{crashPod}),
				pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, []facts.LogLine{{Pod: "api-7c4-new2", Level: "ERROR", Message: "panic: runtime error: invalid memory address or nil pointer dereference", Timestamp: at(0)}}),
			}
		}, want{mode: ModeCrashLoop, category: catCode, entity: "pod/shop/api-7c4-new2", has: []string{"nil pointer", "exit code 2"}}},
		{"crashloop from a missing config key", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{crashPod}),
				pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, []facts.LogLine{{Pod: "api-7c4-new2", Message: "FATAL missing config key payment.gateway.url", Timestamp: at(0)}}),
			}
		}, want{mode: ModeCrashLoop, category: catConfig, has: []string{"payment.gateway.url"}}},
		{"missing secret blocks container creation", func(t *testing.T) []*evidencev1.EvidencePin {
			p := crashPod
			p.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CreateContainerConfigError", Message: `secret "db-creds" not found`}}
			return []*evidencev1.EvidencePin{pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p})}
		}, want{mode: ModeCrashLoop, category: catConfig, has: []string{`secret "db-creds" not found`}}},
		{"evictions under disk pressure", func(t *testing.T) []*evidencev1.EvidencePin {
			nodes := readyNodes()
			nodes[0].Conditions = append(nodes[0].Conditions, facts.Condition{Type: "DiskPressure", Status: "True"})
			ev := healthyPod("api-5d9-ev1")
			ev.Phase, ev.Ready, ev.Reason, ev.Message = "Failed", false, "Evicted", "The node was low on resource: ephemeral-storage."
			return []*evidencev1.EvidencePin{
				pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, nodes),
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{ev}),
			}
		}, want{mode: ModeNodePressure, category: catResource, entity: "node/node-a", has: []string{"DiskPressure", "ephemeral-storage"}}},
		{"volume cannot mount", func(t *testing.T) []*evidencev1.EvidencePin {
			p := healthyPod("api-5d9-vol")
			p.Phase, p.Ready = "Pending", false
			p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
			p.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "ContainerCreating"}}
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
				pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "FailedAttachVolume", Message: "AttachVolume.Attach failed for volume \"pvc-1\": volume is in another availability zone", InvolvedName: "Pod/api-5d9-vol", LastSeen: at(0)}}),
			}
		}, want{mode: ModeVolumeMount, category: catInfra, has: []string{"availability zone"}}},
		{"readiness probe", func(t *testing.T) []*evidencev1.EvidencePin {
			p := healthyPod("api-5d9-prb")
			p.Ready = false
			p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
				pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: Get http://10.0.0.1:8080/ready: context deadline exceeded", InvolvedName: "Pod/api-5d9-prb", Count: 30, LastSeen: at(0)}}),
			}
		}, want{mode: ModeProbeFailure, category: catConfig, has: []string{"Readiness probe failed"}}},
		{"unschedulable on memory", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{pending, healthyPod("api-5d9-ok1")}),
				pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
			}
		}, want{mode: ModeUnschedulable, category: catResource, entity: "pod/shop/api-5d9-pend", has: []string{"Insufficient memory", "nodes are Ready"}}},
		{"unschedulable on taints is configuration", func(t *testing.T) []*evidencev1.EvidencePin {
			p := pending
			p.Conditions = []facts.Condition{{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", Message: "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}."}}
			return []*evidencev1.EvidencePin{pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p})}
		}, want{mode: ModeUnschedulable, category: catConfig, has: []string{"taint"}}},
		{"quota exceeded", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "dep", "list_deployments", "k8s", facts.KeyDeployments, dep(4, 2)),
				pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Namespace: "shop", Type: "Warning", Reason: "FailedCreate", InvolvedKind: "ReplicaSet", InvolvedName: "api-5d9", Message: `Error creating: pods "api-5d9-zz" is forbidden: exceeded quota: team-quota, requested: requests.memory=1Gi, used: requests.memory=7Gi, limited: requests.memory=8Gi`, LastSeen: at(0)}}),
			}
		}, want{mode: ModeQuotaExceeded, category: catResource, entity: "deployment/shop/api", has: []string{"team-quota", "requests.memory=8Gi", "namespace shop"}}},
		{"node not ready", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, notReadyNodes),
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("api-5d9-ok1"), lostPod}),
			}
		}, want{mode: ModeNodeNotReady, category: catInfra, entity: "node/node-b", has: []string{"Ready=Unknown", "kubelet", "healthy node"}}},
		{"restart that recovered is healthy", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{recovered, healthyPod("api-5d9-ok1")}),
				pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", InvolvedName: "Pod/api-5d9-rst", LastSeen: at(-90)}}),
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{{Service: "api", Level: "INFO", Message: "ok", Timestamp: at(0)}}),
				pin(t, "mon", "list_monitors", "datadog_monitors", facts.KeyMonitors, []facts.Monitor{{Name: "api errors", State: "OK"}}),
			}
		}, want{mode: ModeRecovered, category: catHealthy, healthy: true, has: []string{"not currently restarting", "monitors are OK"}, ruledOut: []string{"OOM"}}},
		{"all healthy", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("api-5d9-a"), healthyPod("api-5d9-b")}),
				pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
				noData("ev", "get_events"),
			}
		}, want{mode: ModeHealthy, category: catHealthy, healthy: true, has: []string{"No failure detected", "no Warning events"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, d := analyze(t, &investigationv1.Alert{Namespace: "shop", Service: "api"}, c.pins(t)...)
			check(t, res, d, c.want)
		})
	}
	// The same evidence under an alert whose own state says its rule is
	// not firing (a scheduled check that reports normal): healthy.
	for _, state := range []string{"normal", "OK"} {
		res, d := analyze(t, &investigationv1.Alert{Namespace: "shop", Service: "api", State: state},
			pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("api-5d9-a"), healthyPod("api-5d9-b")}),
			pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
			noData("ev", "get_events"))
		check(t, res, d, want{mode: ModeHealthy, category: catHealthy, healthy: true, has: []string{"No failure detected", "no Warning events"}})
	}
}

// A line whose own level says info states no failure: a setting printed
// at start-up ("max_connections = 500") is no pool-exhaustion error; the
// same words at ERROR, or in a line without a level, are.
func TestLogSignatureSkipsDeclaredInfo(t *testing.T) {
	ts := time.Date(2026, 8, 2, 20, 30, 0, 0, time.UTC)
	mk := func(level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: &ts, Service: "postgres", Namespace: "db", Level: level, Message: msg}}
	}
	for _, tc := range []struct {
		name string
		l    LogLine
		want bool
	}{
		{"info setting", mk("INFO", "booking-pg: max_connections = 500, superuser_reserved_connections = 3"), false},
		{"debug", mk("debug", "pool exhausted check skipped"), false},
		{"error", mk("ERROR", "FATAL: remaining connection slots are reserved for non-replication superuser connections"), true},
		{"no level", mk("", "too many connections for role booking"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "x"}, nil)
			ev.Logs = []LogLine{tc.l}
			got := false
			for _, f := range detectLogSignatures(ev) {
				if f.Mode == ModeConnPoolExhaustion {
					got = true
				}
			}
			if got != tc.want {
				t.Errorf("pool exhaustion read = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLogDetectors(t *testing.T) {
	pods := []facts.Pod{healthyPod("web-1"), healthyPod("web-2")}
	line := func(pod, lvl, msg string) facts.LogLine {
		return facts.LogLine{Pod: pod, Service: "web", Level: lvl, Message: msg, Timestamp: at(0)}
	}
	cases := []struct {
		name string
		logs []facts.LogLine
		want want
	}{
		{"dns servfail is a dependency failure", []facts.LogLine{
			line("web-1", "ERROR", "dial tcp: lookup redis.cache.svc.cluster.local on 10.96.0.10:53: server misbehaving SERVFAIL"),
			line("web-2", "ERROR", "lookup redis.cache.svc.cluster.local: SERVFAIL"),
		}, want{mode: ModeDNSFailure, category: catDependency, entity: "service/cache/redis", has: []string{"DNS", "redis.cache.svc.cluster.local"}, ruledOut: []string{"OOM"}}},
		{"no such host is configuration", []facts.LogLine{
			line("web-1", "ERROR", "Get \"http://inventory.shop.svc.cluster.local/items\": dial tcp: lookup inventory.shop.svc.cluster.local: no such host"),
			line("web-2", "ERROR", "lookup inventory.shop.svc.cluster.local: no such host"),
		}, want{mode: ModeDNSFailure, category: catConfig, entity: "service/shop/inventory"}},
		{"a provider's public name that no longer resolves is the provider's", []facts.LogLine{
			line("web-1", "ERROR", "fetch failed: getaddrinfo ENOTFOUND api.scribevendor.example"),
			line("web-2", "ERROR", "lookup api.scribevendor.example: no such host"),
		}, want{mode: ModeDNSFailure, category: catDependency, entity: "host/api.scribevendor.example"}},
		{"downstream refuses connections", []facts.LogLine{
			line("web-1", "ERROR", "upstream payments-gw:8443 failed: connection refused"),
			line("web-2", "ERROR", "upstream payments-gw:8443 failed: connection refused"),
			line("web-1", "ERROR", "upstream payments-gw:8443 failed: connection refused"),
		}, want{mode: ModeDependencyFailure, category: catDependency, entity: "service/payments-gw", has: []string{"payments-gw:8443"}}},
		{"service without endpoints", []facts.LogLine{
			line("web-1", "ERROR", "503: no endpoints available for service \"cart\""),
			line("web-2", "ERROR", "no endpoints available for service \"cart\""),
		}, want{mode: ModeNoEndpoints, category: catConfig, has: []string{"no ready endpoints"}}},
		{"node style ECONNREFUSED", []facts.LogLine{
			line("web-1", "ERROR", "Error: connect ECONNREFUSED redis-master:6379"),
			line("web-2", "ERROR", "Error: connect ECONNREFUSED redis-master:6379"),
		}, want{mode: ModeDependencyFailure, category: catDependency, entity: "service/redis-master"}},
		{"expired certificate", []facts.LogLine{
			line("web-1", "ERROR", "tls handshake: x509: certificate has expired or is not yet valid"),
			line("web-2", "ERROR", "x509: certificate has expired or is not yet valid"),
		}, want{mode: ModeCertExpiry, category: catConfig, has: []string{"x509"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, d := analyze(t, &investigationv1.Alert{Namespace: "shop", Service: "web"},
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, pods),
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, c.logs))
			check(t, res, d, c.want)
		})
	}
}

func db(t *testing.T, id string, ss ...facts.Series) *evidencev1.EvidencePin {
	return pin(t, id, "query_db_metrics", "aws_cloudwatch_metrics", facts.KeySeries, ss)
}

func tops(t *testing.T, qs ...facts.TopQuery) *evidencev1.EvidencePin {
	return pin(t, "pi", "get_db_top_queries", "aws_performance_insights", facts.KeyTopQueries, qs)
}

func dbev(t *testing.T, es ...facts.DBEvent) *evidencev1.EvidencePin {
	return pin(t, "rds", "get_db_events", "aws_rds_events", facts.KeyDBEvents, es)
}

func ramp(from, to float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + (to-from)*float64(i)/float64(n-1)
	}
	return out
}

func flat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v + float64(i%3)*0.01*v
	}
	return out
}

func step(from, to float64, n, at int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from
		if i >= at {
			out[i] = to + float64(i%2)
		}
	}
	return out
}

func TestDatabaseDetectors(t *testing.T) {
	inst := map[string]string{"DBInstanceIdentifier": "ledger-db"}
	alert := &investigationv1.Alert{Annotations: map[string]string{"db_instance_identifier": "ledger-db"}}
	cases := []struct {
		name string
		pins func(t *testing.T) []*evidencev1.EvidencePin
		want want
	}{
		{"replication lag with an independent CPU query", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("ReplicaLag", map[string]string{"DBInstanceIdentifier": "ledger-db-ro"}, ramp(2, 900, 12)...),
					metric("TransactionLogsGeneration", inst, step(3e6, 150e6, 12, 1)...),
					metric("CPUUtilization", inst, step(20, 70, 12, 2)...),
					metric("FreeStorageSpace", inst, flat(100e9, 12)...)),
				tops(t, facts.TopQuery{Statement: "DELETE FROM journal WHERE ts < $1", Load: 5, WaitEvents: []facts.WaitEvent{{Name: "IO:WALWrite", Load: 4}, {Name: "CPU", Load: 1}}},
					facts.TopQuery{Statement: "SELECT sum(x) FROM facts GROUP BY y", Load: 2, WaitEvents: []facts.WaitEvent{{Name: "CPU", Load: 1.9}}}),
			}
		}, want{mode: ModeReplicationLag, category: catResource, entity: "db/ledger-db", has: []string{"replication lag", "WAL", "causally independent", "DELETE FROM journal"}, ruledOut: []string{"CPU", "storage"}}},
		{"connection exhaustion from idle client sessions", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("DatabaseConnections", inst, ramp(100, 198, 12)...), metric("CPUUtilization", inst, flat(20, 12)...)),
				tops(t, facts.TopQuery{Statement: "BEGIN; SELECT * FROM accounts WHERE id = $1", Load: 4, WaitEvents: []facts.WaitEvent{{Name: "Client:ClientRead", Load: 3.6}, {Name: "CPU", Load: 0.4}}}),
				dbev(t, facts.DBEvent{Time: at(10), SourceID: "ledger-db", Message: "Connections at 198 of 200; new connections refused: too many clients"}),
			}
		}, want{mode: ModeConnExhaustion, category: catResource, has: []string{"max_connections 200", "Client:ClientRead", "idle in transaction"}}},
		{"storage full without the metric", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("WriteIOPS", inst, append(flat(900, 8), 10, 0, 0, 0)...)),
				dbev(t, facts.DBEvent{Time: at(9), SourceID: "ledger-db", Message: "DB instance ran out of storage space."}),
			}
		}, want{mode: ModeStorageFull, category: catResource, has: []string{"ran out of storage space", "FreeStorageSpace metric returned no datapoints"}}},
		{"cpu-bound query", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("CPUUtilization", inst, step(15, 95, 12, 1)...), metric("DatabaseConnections", inst, flat(80, 12)...)),
				tops(t, facts.TopQuery{Statement: "SELECT * FROM ledger WHERE memo LIKE $1", Load: 6, CallsPerSec: 4, WaitEvents: []facts.WaitEvent{{Name: "CPU:user", Load: 5.5}, {Name: "IO:DataFileRead", Load: 0.5}}},
					facts.TopQuery{Statement: "SELECT 1", Load: 0.2, WaitEvents: []facts.WaitEvent{{Name: "CPU:user", Load: 0.2}}}),
			}
		}, want{mode: ModeCPUQuery, category: catResource, has: []string{"Performance Insights", "CPU", "memo LIKE"}, ruledOut: []string{"Connection exhaustion"}}},
		{"cpu pinned without performance insights", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{db(t, "cw", metric("CPUUtilization", inst, step(20, 96, 12, 2)...))}
		}, want{mode: ModeCPUQuery, category: catResource, has: []string{"Performance Insights data is not available"}}},
		{"lock contention", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("CPUUtilization", inst, flat(30, 12)...)),
				tops(t, facts.TopQuery{Statement: "UPDATE accounts SET balance = balance + $1 WHERE id = $2", Load: 6, WaitEvents: []facts.WaitEvent{{Name: "Lock:tuple", Load: 5}, {Name: "CPU", Load: 1}}}),
			}
		}, want{mode: ModeLockContention, category: catResource, has: []string{"Lock:tuple"}}},
		{"memory pressure", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{db(t, "cw", metric("FreeableMemory", inst, ramp(8e9, 2e8, 12)...), metric("SwapUsage", inst, ramp(1e7, 2e9, 12)...))}
		}, want{mode: ModeDBMemory, category: catResource, has: []string{"FreeableMemory", "SwapUsage"}}},
		{"burst balance drained", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{db(t, "cw", metric("BurstBalance", inst, ramp(100, 0, 12)...), metric("ReadLatency", inst, step(0.002, 0.05, 12, 6)...))}
		}, want{mode: ModeDBIO, category: catResource, has: []string{"BurstBalance", "ReadLatency"}}},
		{"xid wraparound", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{db(t, "cw", metric("MaximumUsedTransactionIDs", inst, ramp(1.6e9, 1.9e9, 12)...))}
		}, want{mode: ModeXIDWraparound, category: catResource, has: []string{"wraparound"}}},
		{"historical failover does not lead", func(t *testing.T) []*evidencev1.EvidencePin {
			old := at(-300)
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("CPUUtilization", inst, flat(25, 12)...), metric("DatabaseConnections", inst, flat(100, 12)...), metric("ReplicaLag", inst, flat(1, 12)...), metric("FreeStorageSpace", inst, flat(100e9, 12)...)),
				dbev(t, facts.DBEvent{Time: old, SourceID: "ledger-db", Message: "Multi-AZ instance failover completed.", Categories: []string{"failover"}}),
			}
		}, want{mode: ModeHealthy, category: catHealthy, healthy: true, has: []string{"normal bounds"}, ruledOut: []string{"Failover"}}},
		{"current failover leads", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				db(t, "cw", metric("DatabaseConnections", inst, 300, 305, 310, 0, 0, 290, 300, 305, 302, 301, 300, 299)),
				dbev(t, facts.DBEvent{Time: at(3), SourceID: "ledger-db", Message: "Multi-AZ instance failover started.", Categories: []string{"failover"}},
					facts.DBEvent{Time: at(4), SourceID: "ledger-db", Message: "Multi-AZ instance failover completed.", Categories: []string{"failover"}}),
			}
		}, want{mode: ModeFailover, category: catInfra, has: []string{"failover started", "workload resumed normally"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, d := analyze(t, alert, c.pins(t)...)
			check(t, res, d, c.want)
		})
	}
}

func TestMetricRegressionAndDeploys(t *testing.T) {
	svc := map[string]string{"service": "checkout", "namespace": "shop"}
	errs := metric("http_errors_rate", svc, step(0.5, 20, 20, 10)...)
	onset := *errs.OnsetAt
	before := onset.Add(-5 * time.Minute)
	after := onset.Add(10 * time.Minute)
	commit := facts.Commit{SHA: "a1b2c3d4e5", Service: "checkout", Timestamp: at(-60), Message: "raise client timeout, add retries", ChangeTypes: []string{facts.ChangeTimeoutRetry}}
	t.Run("deploy before onset is blamed with its commit", func(t *testing.T) {
		res, d := analyze(t, &investigationv1.Alert{Service: "checkout"},
			pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{errs}),
			pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "checkout", Revision: "a1b2c3d", PreviousRevision: "9f8e7d6", StartedAt: &before, FinishedAt: &before}}),
			pin(t, "com", "get_commits", "commits", facts.KeyCommits, []facts.Commit{commit}))
		check(t, res, d, want{mode: ModeDeployRegression, category: catConfig, entity: "commit/a1b2c3d", has: []string{"a1b2c3d", "9f8e7d6"}})
	})
	for _, c := range []struct {
		name   string
		commit facts.Commit
		cat    investigationv1.RootCauseCategory
	}{
		{"a base image bump is configuration", facts.Commit{SHA: "a1b2c3d4e5", Service: "checkout", Timestamp: at(-60), Message: "build: runtime image node:22-alpine",
			ChangeTypes: []string{facts.ChangeDependencyBump}, Files: []facts.CommitFile{{Path: "Dockerfile", ChangeType: facts.ChangeDependencyBump}}}, catConfig},
		{"a library bump is code", facts.Commit{SHA: "a1b2c3d4e5", Service: "checkout", Timestamp: at(-60), Message: "deps: bump http client",
			ChangeTypes: []string{facts.ChangeDependencyBump}, Files: []facts.CommitFile{{Path: "package.json", ChangeType: facts.ChangeDependencyBump}}}, catCode},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, d := analyze(t, &investigationv1.Alert{Service: "checkout"},
				pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{errs}),
				pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "checkout", Revision: "a1b2c3d", PreviousRevision: "9f8e7d6", StartedAt: &before, FinishedAt: &before}}),
				pin(t, "com", "get_commits", "commits", facts.KeyCommits, []facts.Commit{c.commit}))
			check(t, res, d, want{mode: ModeDeployRegression, category: c.cat, entity: "commit/a1b2c3d"})
		})
	}
	t.Run("deploy after onset is a red herring", func(t *testing.T) {
		res, d := analyze(t, &investigationv1.Alert{Service: "checkout"},
			pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{errs, metric("http_requests_rate", svc, step(100, 400, 20, 9)...)}),
			pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "checkout", Revision: "b2c3d4e", StartedAt: &after, FinishedAt: &after}}))
		check(t, res, d, want{mode: ModeTrafficSaturation, category: catResource, has: []string{"http_requests_rate"}})
		ro := text(d)
		if !strings.Contains(ro, "red herring") {
			t.Errorf("late deploy not ruled out:\n%s", ro)
		}
	})
}

func TestCounterSeriesAreReadAsRates(t *testing.T) {
	// A raw 5xx counter: 1/s for 10 minutes, then 30/s.
	vals := make([]float64, 20)
	for i := 1; i < len(vals); i++ {
		inc := 60.0
		if i >= 10 {
			inc = 1800
		}
		vals[i] = vals[i-1] + inc
	}
	c := metric("http_requests_total", map[string]string{"service": "cart", "code": "503"}, vals...)
	dep := t0.Add(8 * time.Minute)
	res, d := analyze(t, &investigationv1.Alert{Service: "cart"},
		pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{c}),
		pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "cart", Revision: "c0ffee1", PreviousRevision: "bead001", StartedAt: &dep, FinishedAt: &dep}}))
	check(t, res, d, want{mode: ModeDeployRegression, category: catCode, has: []string{"c0ffee1", "http_requests_total:rate"}})
	// A steadily increasing counter with a constant rate is not a regression.
	steady := make([]float64, 20)
	for i := range steady {
		steady[i] = float64(i) * 60
	}
	res, _ = analyze(t, nil, pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{metric("http_requests_total", map[string]string{"code": "500"}, steady...)}))
	for _, f := range res.Findings {
		if f.Mode == ModeDeployRegression || f.Mode == ModeTrafficSaturation {
			t.Errorf("constant-rate counter flagged: %s", f.Statement)
		}
	}
}

func TestPodFailureCitesThePrecedingDeploy(t *testing.T) {
	p := healthyPod("api-7c4-zz1")
	p.Ready, p.StartTime = false, at(-20)
	p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	p.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 5, LastExitCode: i32(1)}}
	dep := at(-25)
	res, d := analyze(t, nil,
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
		pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, []facts.LogLine{{Pod: p.Name, Level: "FATAL", Message: "invalid configuration: unknown flag --max-conns"}}),
		pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "api", Revision: "d4e5f6a", PreviousRevision: "a1a1a1a", StartedAt: dep}}),
		pin(t, "com", "get_commits", "commits", facts.KeyCommits, []facts.Commit{{SHA: "d4e5f6a9", Service: "api", Message: "rename max-conns flag", ChangeTypes: []string{facts.ChangeConfig}}}))
	check(t, res, d, want{mode: ModeCrashLoop, category: catConfig, has: []string{"Deploy d4e5f6a of api (from a1a1a1a)", "rename max-conns flag"}})
}

func TestSaturationSignals(t *testing.T) {
	res, d := analyze(t, nil, pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{
		metric("kafka_consumergroup_lag", map[string]string{"consumergroup": "billing", "topic": "invoices"}, ramp(50, 50000, 12)...),
	}))
	check(t, res, d, want{mode: ModeConsumerLag, category: catResource, entity: "consumergroup/billing", has: []string{"invoices"}})
	res, d = analyze(t, nil, pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{
		metric("container_cpu_cfs_throttled_ratio", map[string]string{"pod": "api-1", "namespace": "shop"}, step(0.01, 0.6, 12, 3)...),
	}))
	check(t, res, d, want{mode: ModeCPUThrottling, category: catResource, entity: "pod/shop/api-1"})
}

func TestDiagnoseNamesSourcesAndEntity(t *testing.T) {
	oom := healthyPod("api-5d9-xk2")
	oom.Ready = false
	oom.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	oom.Containers = []facts.Container{{Name: "api", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 3, LastReason: "OOMKilled"}}
	_, d := analyze(t, nil, pin(t, "pods", "list_pods", "eks_pods", facts.KeyPods, []facts.Pod{oom}))
	if !strings.Contains(d.GetRootCause(), "api-5d9-xk2") || !strings.Contains(d.GetRootCause(), "Primary evidence source: pod status (eks_pods)") {
		t.Errorf("root cause = %q", d.GetRootCause())
	}
	if d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_UNSPECIFIED || d.GetConfidence() < 0.7 {
		t.Errorf("status %v (the conclusion gate's owner decides) confidence %v", d.GetStatus(), d.GetConfidence())
	}
	md := Markdown(d)
	for _, s := range []string{"# Root cause", "## Validated claims", "## Ruled out", "## Remediation", "[pods]"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	if d2 := Diagnose(Input{Alert: &investigationv1.Alert{AlertName: "A"}}, Result{}); d2.GetCategory() != catUnknown || !strings.Contains(d2.GetRootCause(), "Undetermined") {
		t.Errorf("empty result diagnosis = %v", d2)
	}
}

func BenchmarkAnalyze(b *testing.B) {
	t := &testing.T{}
	pins := []*evidencev1.EvidencePin{
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("a-1-x"), healthyPod("a-1-y")}),
		pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
		db(t, "cw", metric("CPUUtilization", nil, step(15, 95, 60, 10)...), metric("DatabaseConnections", nil, flat(80, 60)...)),
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(context.Background(), Input{Pins: pins}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestHealthyNeedsTheAlertsConditionGone(t *testing.T) {
	cordoned := readyNodes()
	cordoned[1].Unschedulable = true
	pods := []facts.Pod{healthyPod("api-5d9-a"), healthyPod("api-5d9-b")}
	tests := []struct {
		name     string
		alert    *investigationv1.Alert
		pins     func(t *testing.T) []*evidencev1.EvidencePin
		wantMode string
	}{
		{"the rule the payload describes firing at delivery does not veto", &investigationv1.Alert{Namespace: "shop", Service: "api", State: "normal"},
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "pods", "list_pods", "k8s", facts.KeyPods, pods),
					pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
					pin(t, "mon", "list_monitors", "alert", facts.KeyMonitors, []facts.Monitor{{Name: "ApiDown", State: "firing", FromAlert: true}}),
				}
			}, ModeHealthy},
		{"a rules API that says the rule fires vetoes", &investigationv1.Alert{Namespace: "shop", Service: "api", State: "normal"},
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "pods", "list_pods", "k8s", facts.KeyPods, pods),
					pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
					pin(t, "mon", "list_monitors", "grafana", facts.KeyMonitors, []facts.Monitor{{Name: "ApiDown", State: "firing"}}),
				}
			}, ""},
		{"the node the alert names is still cordoned", &investigationv1.Alert{State: "normal", Labels: map[string]string{"node": "node-b"}},
			func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "pods", "list_pods", "k8s", facts.KeyPods, pods),
					pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, cordoned),
				}
			}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, tc.alert, tc.pins(t)...)
			healthy := false
			for _, f := range res.Findings {
				healthy = healthy || f.Mode == ModeHealthy
			}
			if want := tc.wantMode == ModeHealthy; healthy != want {
				t.Errorf("healthy finding = %v, want %v (findings %v)", healthy, want, res.Findings)
			}
		})
	}
}

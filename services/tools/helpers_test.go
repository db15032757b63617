package tools

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// t0 is the test incident time.
var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ---- fakes for the non-Kubernetes backend interfaces ----

type fakePodLogs struct {
	logs  map[string]string // key: ns/pod[/container][#previous]
	calls []backend.PodLogOptions
	mu    sync.Mutex
	block chan struct{} // when set: ignore ctx and answer only once closed (a hung backend)
	src   string
}

func (f *fakePodLogs) PodLogs(ctx context.Context, ns, pod string, o backend.PodLogOptions) (backend.PodLog, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	f.calls = append(f.calls, o)
	f.mu.Unlock()
	key := ns + "/" + pod
	if o.Container != "" {
		key += "/" + o.Container
	}
	if o.Previous {
		key += "#previous"
	}
	return backend.PodLog{Text: f.logs[key], Source: f.src}, nil
}

type fakeMetrics struct {
	matrix model.Matrix
	last   promv1.Range
	query  string
	block  bool
	calls  int
	mu     sync.Mutex
}

func (f *fakeMetrics) Query(ctx context.Context, q string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, error) {
	return model.Vector{}, nil, nil
}

func (f *fakeMetrics) QueryRange(ctx context.Context, q string, r promv1.Range, _ ...promv1.Option) (model.Value, promv1.Warnings, error) {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	f.mu.Lock()
	f.last, f.query = r, q
	f.calls++
	f.mu.Unlock()
	return f.matrix, nil, nil
}

func (f *fakeMetrics) Series(ctx context.Context, m []string, s, e time.Time, _ ...promv1.Option) ([]model.LabelSet, promv1.Warnings, error) {
	return nil, nil, nil
}

func (f *fakeMetrics) LabelValues(ctx context.Context, l string, m []string, s, e time.Time, _ ...promv1.Option) (model.LabelValues, promv1.Warnings, error) {
	return nil, nil, nil
}

type fakeLogs struct {
	hits []facts.LogLine
	last backend.LogQuery
	// unqueried: the hits answer only a search without a query (what a
	// widened search asks); a query finds nothing.
	unqueried bool
}

func (f *fakeLogs) SearchLogs(ctx context.Context, q backend.LogQuery) ([]facts.LogLine, error) {
	f.last = q
	if f.unqueried && q.Query != "" {
		return nil, nil
	}
	return f.hits, nil
}

type fakeChanges struct {
	deploys []facts.Deploy
	commits []facts.Commit
	diffs   map[string]string
	last    backend.ChangeQuery
}

func (f *fakeChanges) Deploys(ctx context.Context, q backend.ChangeQuery) ([]facts.Deploy, error) {
	f.last = q
	var out []facts.Deploy
	for _, d := range f.deploys {
		if q.Service == "" || d.Service == "" || d.Service == q.Service {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeChanges) Commits(ctx context.Context, q backend.ChangeQuery) ([]facts.Commit, error) {
	f.last = q
	var out []facts.Commit
	for _, c := range f.commits {
		if q.Service == "" || c.Service == q.Service {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeChanges) CommitDiff(ctx context.Context, sha string) (string, error) {
	return f.diffs[sha], nil
}

type fakeDB struct {
	series []facts.Series
	top    []facts.TopQuery
	events []facts.DBEvent
}

func (f *fakeDB) DBMetrics(ctx context.Context, q backend.DBQuery) ([]facts.Series, error) {
	return f.series, nil
}
func (f *fakeDB) TopQueries(ctx context.Context, q backend.DBQuery) ([]facts.TopQuery, error) {
	return f.top, nil
}
func (f *fakeDB) DBEvents(ctx context.Context, q backend.DBQuery) ([]facts.DBEvent, error) {
	return f.events, nil
}

type fakeMonitors struct{ ms []facts.Monitor }

func (f *fakeMonitors) Monitors(ctx context.Context) ([]facts.Monitor, error) { return f.ms, nil }

type fakeBrain struct {
	brainv1.BrainServiceClient
	mu   sync.Mutex
	reqs []*brainv1.StartInvestigationRequest
}

func (f *fakeBrain) StartInvestigation(ctx context.Context, in *brainv1.StartInvestigationRequest, _ ...grpc.CallOption) (*brainv1.StartInvestigationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, in)
	return &brainv1.StartInvestigationResponse{SessionId: in.GetSessionId(), InvestigationId: in.GetInvestigationId(), Status: "queued"}, nil
}

type fakePublisher struct {
	mu  sync.Mutex
	evs []*evidencev1.PinEvent
	err error
}

func (f *fakePublisher) PublishPin(ctx context.Context, ev *evidencev1.PinEvent) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.evs = append(f.evs, ev)
	return uint64(len(f.evs)), nil
}

func (f *fakePublisher) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.evs)
}

// ---- Kubernetes objects ----

func i32(v int32) *int32 { return &v }

func ts(t time.Time) metav1.Time { return metav1.NewTime(t) }

func crashPod(name string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "shop", CreationTimestamp: ts(created),
			Labels:          map[string]string{"app": "cart", "pod-template-hash": "5d8f9"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart-5d8f9", Controller: ptrBool(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-a",
			Containers: []corev1.Container{{
				Name: "cart", Image: "reg/cart:v2",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				EnvFrom:   []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cart-db"}}}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "cart", Image: "reg/cart:v2", RestartCount: 7,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "OOMKilled", ExitCode: 137, FinishedAt: ts(t0.Add(-2 * time.Minute)),
				}},
			}},
		},
	}
}

func healthyPod(name string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: ts(created), Labels: map[string]string{"app": "cart"}},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "cart", Image: "reg/cart:v2"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "cart", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

func ptrBool(b bool) *bool { return &b }

func event(name, kind, obj, typ, reason, msg string, first, last time.Time, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: obj, Namespace: "shop"},
		Type:           typ, Reason: reason, Message: msg, Count: count,
		FirstTimestamp: ts(first), LastTimestamp: ts(last),
		Source: corev1.EventSource{Component: "kubelet"},
	}
}

func kubeObjects() []runtime.Object {
	uid := types.UID("dep-uid")
	return []runtime.Object{
		crashPod("cart-5d8f9-aaaaa", t0.Add(-30*time.Minute)),
		healthyPod("cart-5d8f9-bbbbb", t0.Add(-3*time.Hour)),
		healthyPod("web-1", t0.Add(-time.Hour)),
		event("e1", "Pod", "cart-5d8f9-aaaaa", "Warning", "BackOff", "Back-off restarting failed container", t0.Add(-20*time.Minute), t0.Add(-time.Minute), 7),
		event("e2", "Pod", "cart-5d8f9-aaaaa", "Normal", "Pulled", "Container image already present", t0.Add(-20*time.Minute), t0.Add(-2*time.Minute), 7),
		event("e3", "Pod", "web-1", "Warning", "FailedMount", "old mount problem", t0.Add(-48*time.Hour), t0.Add(-47*time.Hour), 1),
		event("e4", "Node", "node-b", "Warning", "NodeNotReady", "Node node-b status is now: NodeNotReady", t0.Add(-10*time.Minute), t0.Add(-10*time.Minute), 1),
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop", UID: uid, Annotations: map[string]string{revisionAnnotation: "3"}},
			Spec: appsv1.DeploymentSpec{Replicas: i32(2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "reg/cart:v2"}}}},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"}}},
		},
		&appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "cart-5d8f9", Namespace: "shop", CreationTimestamp: ts(t0.Add(-30 * time.Minute)),
				Annotations:     map[string]string{revisionAnnotation: "3"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "cart", UID: uid}}},
			Spec:   appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "reg/cart:v2"}}}}},
			Status: appsv1.ReplicaSetStatus{Replicas: 2},
		},
		&appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "cart-44c1a", Namespace: "shop", CreationTimestamp: ts(t0.Add(-72 * time.Hour)),
				Annotations:     map[string]string{revisionAnnotation: "2"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "cart", UID: uid}}},
			Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "cart", Image: "reg/cart:v1"}}}}},
		},
		&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"node.kubernetes.io/instance-type": "m5.large"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, {Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}},
				Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}},
		},
		&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-b"},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "cart"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cart-config", Namespace: "shop"},
			Data:       map[string]string{"DB_URL": "postgres://cart:hunter2@db:5432/cart", "TIMEOUT_MS": "500"},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cart-db", Namespace: "shop"},
			Data:       map[string][]byte{"password": []byte("s3cr3t-value")},
		},
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		},
	}
}

// testSet is a backend.Set over fakes with every integration configured.
type testSet struct {
	set     *backend.Set
	kube    *fake.Clientset
	podLogs *fakePodLogs
	metrics *fakeMetrics
	logs    *fakeLogs
	changes *fakeChanges
	db      *fakeDB
	mons    *fakeMonitors
}

func newTestSet() *testSet {
	ts := &testSet{
		kube: fake.NewClientset(kubeObjects()...),
		podLogs: &fakePodLogs{src: "pod_logs", logs: map[string]string{
			"shop/cart-5d8f9-aaaaa":          "2026-03-10T11:58:00Z INFO starting cart\n2026-03-10T11:58:01Z WARN cache cold\n",
			"shop/cart-5d8f9-aaaaa#previous": "2026-03-10T11:57:00Z INFO batch start\n2026-03-10T11:57:09Z ERROR failed to reserve stock: timeout\nfatal error: runtime: out of memory\n",
			"shop/web-1":                     "2026-03-10T11:59:00Z INFO ok\n",
			"shop/cart-5d8f9-bbbbb":          "",
		}},
		metrics: &fakeMetrics{matrix: stepMatrix()},
		logs: &fakeLogs{hits: []facts.LogLine{
			{Timestamp: ptrTime(t0.Add(-5 * time.Minute)), Service: "cart", Level: "ERROR", Message: "TimeoutException calling inventory", Source: "logs"},
			{Timestamp: ptrTime(t0.Add(-4 * time.Minute)), Service: "web", Level: "INFO", Message: "GET / 200"},
		}},
		changes: &fakeChanges{
			deploys: []facts.Deploy{{Service: "cart", Namespace: "shop", Revision: "r3", PreviousRevision: "r2", StartedAt: ptrTime(t0.Add(-35 * time.Minute))}},
			commits: []facts.Commit{
				{SHA: "abc1234def", Service: "cart", Message: "lower inventory timeout", ChangeTypes: []string{facts.ChangeTimeoutRetry}, Timestamp: ptrTime(t0.Add(-2 * time.Hour))},
				{SHA: "fff0000aaa", Service: "cart", Message: "refactor handlers", ChangeTypes: []string{facts.ChangeRefactor}, Timestamp: ptrTime(t0.Add(-3 * time.Hour)),
					Files: []facts.CommitFile{{Path: "src/cart/handlers/Quote.java"}}},
				{SHA: "9c0ffee111", Service: "platform-config", Message: "cost: lower autoscaler bounds", Timestamp: ptrTime(t0.Add(-240 * time.Hour)),
					Files: []facts.CommitFile{{Path: "apps/billing/payments/hpa.yaml"}}},
			},
			diffs: map[string]string{"abc1234def": "diff --git a/cfg.go b/cfg.go\n--- a/cfg.go\n+++ b/cfg.go\n-timeout: 2s\n+timeout: 200ms\n"},
		},
		db: &fakeDB{
			series: []facts.Series{{Name: "DatabaseConnections", Count: 3, Latest: 90, Peak: 95, Baseline: 20, Shape: "step", Anomalies: []facts.Point{{T: t0, V: 95}}}},
			top:    []facts.TopQuery{{Instance: "db1", Statement: "SELECT * FROM orders WHERE id = $1", Load: 3.5, WaitEvents: []facts.WaitEvent{{Name: "Lock:tuple", Load: 3}}}, {Statement: "SELECT 1", Load: 0.1}},
			events: []facts.DBEvent{{Time: ptrTime(t0.Add(-10 * time.Minute)), SourceID: "db1", Message: "Multi-AZ instance failover started", Categories: []string{"failover"}}},
		},
		mons: &fakeMonitors{ms: []facts.Monitor{{Name: "cart error rate", State: "Alert", Query: "sum(errors)"}, {Name: "web latency", State: "OK"}}},
	}
	ts.set = &backend.Set{
		Name: "test", Kube: ts.kube, PodLogs: ts.podLogs, Metrics: ts.metrics, Logs: ts.logs,
		Changes: ts.changes, Database: ts.db, Monitors: ts.mons,
		Sources: map[string]string{
			backend.AreaPods: "k8s", backend.AreaEvents: "k8s", backend.AreaDeployments: "k8s", backend.AreaNodes: "k8s", backend.AreaResources: "k8s",
			backend.AreaPodLogs: "pod_logs", backend.AreaLogs: "logs", backend.AreaMetrics: "prometheus", backend.AreaDeploys: "deploys",
			backend.AreaCommits: "commits", backend.AreaDBMetrics: "aws_cloudwatch_metrics", backend.AreaTopQueries: "aws_performance_insights",
			backend.AreaDBEvents: "aws_rds_events", backend.AreaMonitors: "datadog_monitors",
		},
		Now: func() time.Time { return t0 },
	}
	return ts
}

// stepMatrix is an error-rate series that steps up 40 minutes in, plus a flat one.
func stepMatrix() model.Matrix {
	var a, b []model.SamplePair
	for i := 0; i < 60; i++ {
		at := model.TimeFromUnixNano(t0.Add(-time.Hour + time.Duration(i)*time.Minute).UnixNano())
		v := 1.0
		if i >= 40 {
			v = 25
		}
		a = append(a, model.SamplePair{Timestamp: at, Value: model.SampleValue(v)})
		b = append(b, model.SamplePair{Timestamp: at, Value: 5})
	}
	return model.Matrix{
		{Metric: model.Metric{"__name__": "http_errors", "service": "cart"}, Values: a},
		{Metric: model.Metric{"__name__": "http_errors", "service": "web"}, Values: b},
	}
}

func newService(t testing.TB, set *backend.Set, mut func(*Config), deps ...func(*Deps)) *Service {
	t.Helper()
	cfg := DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	d := Deps{Logger: quietLog(), Backend: set}
	for _, f := range deps {
		f(&d)
	}
	s, err := New(cfg, d)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("struct: %v", err)
	}
	return s
}

func incidentCtx() *evidencev1.RouterContext {
	return &evidencev1.RouterContext{
		ActiveNamespace: "shop", ActiveService: "cart",
		TimeWindow: &evidencev1.TimeWindow{Start: timestamppb.New(t0.Add(-time.Hour)), End: timestamppb.New(t0)},
	}
}

func run(t testing.TB, s *Service, intent string, params map[string]any) *toolsv1.ExecuteToolResponse {
	t.Helper()
	resp, err := s.ExecuteTool(context.Background(), &toolsv1.ExecuteToolRequest{
		SessionId: "sess-1", InvestigationId: "inv-1", Intent: intent, Params: mustStruct(t, params),
		Context: incidentCtx(), NoCache: true,
	})
	if err != nil {
		t.Fatalf("%s: %v", intent, err)
	}
	return resp
}

func decode[T any](t testing.TB, r *evidencev1.ToolResult, key string) T {
	t.Helper()
	var out T
	ok, err := facts.Decode(r.GetMetadata(), key, &out)
	if err != nil || !ok {
		t.Fatalf("metadata %q: ok=%v err=%v", key, ok, err)
	}
	return out
}

var _ = mesh.Tools

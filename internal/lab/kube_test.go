package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"fmt"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/backend/live"
	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
	"github.com/rcamesh/rcamesh/internal/scenario"
	"github.com/rcamesh/rcamesh/services/tools"
)

// skipIfMissing skips a test whose server binary is not installed, unless
// CI is set: there .ci/run installs them and a missing one is a failure.
func skipIfMissing(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if IsMissing(err) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	t.Fatal(err)
}

func TestWriteCRILog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	fallback := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := "no time yet\n2026-03-09T14:31:45Z INFO up\n  at frame\n2026-03-09T14:31:46.5Z ERROR boom\n"
	if err := writeCRILog(path, in, fallback); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "2026-01-02T03:04:05Z stdout F no time yet\n" +
		"2026-03-09T14:31:45Z stdout F 2026-03-09T14:31:45Z INFO up\n" +
		"2026-03-09T14:31:45Z stdout F   at frame\n" +
		"2026-03-09T14:31:46.5Z stdout F 2026-03-09T14:31:46.5Z ERROR boom\n"
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

func TestFillOwnerUIDs(t *testing.T) {
	uids := map[string]string{"ReplicaSet/ns/web-1": "real-uid"}
	obj := map[string]any{"metadata": map[string]any{"ownerReferences": []any{
		map[string]any{"kind": "ReplicaSet", "name": "web-1"},
		map[string]any{"kind": "Deployment", "name": "gone"},
		map[string]any{"kind": "Deployment", "name": "kept", "uid": "given"},
	}}}
	fillOwnerUIDs(obj, "ns", uids)
	refs := obj["metadata"].(map[string]any)["ownerReferences"].([]any)
	got := []string{}
	for _, r := range refs {
		got = append(got, r.(map[string]any)["uid"].(string))
	}
	if got[0] != "real-uid" || got[2] != "given" || len(got[1]) != 36 {
		t.Fatalf("uids = %v", got)
	}
	again := map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment", "name": "gone"}}}}
	fillOwnerUIDs(again, "ns", uids)
	if u := again["metadata"].(map[string]any)["ownerReferences"].([]any)[0].(map[string]any)["uid"]; u != got[1] {
		t.Fatalf("stand-in uid not stable: %v vs %v", u, got[1])
	}
}

// parityScenarios are the bundled demo and one corpus scenario with
// Kubernetes evidence: scenarios/corpus when present, else the benchmark
// suites (benchdata: RCAMESH_BENCHMARKS, else ../shared/benchmarks next to
// the repository root).
// RCAMESH_LAB_ALL=1 takes every scenario found instead of one.
func parityScenarios(t *testing.T) []*scenario.Scenario {
	demo, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	out := []*scenario.Scenario{demo}
	var roots []string
	if st, err := os.Stat(filepath.Join("..", "..", "scenarios", "corpus")); err == nil && st.IsDir() {
		roots = append(roots, filepath.Join("..", "..", "scenarios", "corpus"))
	}
	if r, ok := benchdata.Lookup(); ok {
		roots = append(roots, r)
	}
	all := os.Getenv("RCAMESH_LAB_ALL") != "" // every scenario, not one
	for _, root := range roots {
		dirs, _ := scenario.Discover(root)
		sort.Strings(dirs)
		if all {
			for _, d := range dirs {
				if sc, err := scenario.Load(d); err == nil {
					out = append(out, sc)
				}
			}
			continue
		}
		best, bestScore := (*scenario.Scenario)(nil), 0
		for _, d := range dirs {
			sc, err := scenario.Load(d)
			if err != nil {
				continue
			}
			score := 0
			for _, stem := range []string{"eks_pods", "eks_events", "eks_deployments", "eks_node_health"} {
				if sc.Has(stem) {
					score++
				}
			}
			if len(sc.K8sDocs) > 0 {
				score += 4
			}
			if score > bestScore {
				best, bestScore = sc, score
			}
		}
		if best != nil {
			return append(out, best)
		}
	}
	t.Log("no corpus scenario with Kubernetes evidence found; parity runs on the demo only")
	return out
}

// TestKubeParity loads scenarios into a real kube-apiserver and checks that
// the Kubernetes tools report the same facts there as on the fixture.
func TestKubeParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and kwok")
	}
	for _, sc := range parityScenarios(t) {
		t.Run(sc.ID, func(t *testing.T) { kubeParity(t, sc) })
	}
}

func kubeParity(t *testing.T, sc *scenario.Scenario) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fx, err := fixture.New(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Kube == nil {
		t.Skip("scenario has no Kubernetes evidence")
	}
	k, err := StartKube(ctx, t.TempDir())
	skipIfMissing(t, err)
	defer k.Stop()
	applied, err := k.LoadScenario(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("applied %d objects", applied.Objects)

	cs, podLogs, err := live.Kube(&integrations.Kubernetes{Kubeconfig: k.Kubeconfig, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	real := *fx
	real.Name, real.Kube, real.PodLogs = "live", cs, podLogs
	fxTools, err := tools.New(tools.DefaultConfig(), tools.Deps{Backend: fx})
	if err != nil {
		t.Fatal(err)
	}
	liveTools, err := tools.New(tools.DefaultConfig(), tools.Deps{Backend: &real})
	if err != nil {
		t.Fatal(err)
	}

	calls := parityCalls(ctx, t, fx)
	for _, c := range calls {
		want := runTool(ctx, t, fxTools, c)
		got := runTool(ctx, t, liveTools, c)
		name := c.intent + " " + c.params.String()
		if want.GetSuccess() != got.GetSuccess() || want.GetNoData() != got.GetNoData() {
			t.Errorf("%s: success/no_data fixture %v/%v, live %v/%v (live error %q)", name,
				want.GetSuccess(), want.GetNoData(), got.GetSuccess(), got.GetNoData(), got.GetError())
			continue
		}
		for _, key := range []string{facts.KeyPods, facts.KeyEvents, facts.KeyDeployments, facts.KeyNodes, facts.KeyResources} {
			w, g := apiDefaults.Replace(factJSON(want, key)), serverOnly(factJSON(want, key), factJSON(got, key))
			if w != g {
				t.Errorf("%s: %s differ\nfixture: %s\nlive:    %s", name, key, w, g)
			}
		}
		if !reflect.DeepEqual(want.GetSources(), got.GetSources()) {
			t.Errorf("%s: sources fixture %v, live %v", name, want.GetSources(), got.GetSources())
		}
	}

	// Container logs go through the API server to kwok's kubelet endpoint.
	pods, err := fx.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range pods.Items {
		if !hasNode(ctx, fx, p) || len(p.Spec.Containers) == 0 {
			continue
		}
		c := p.Spec.Containers[0].Name
		want, err := fx.PodLogs.PodLogs(ctx, p.Namespace, p.Name, backend.PodLogOptions{Container: c})
		if err != nil || want.Text == "" {
			continue
		}
		got, err := podLogs.PodLogs(ctx, p.Namespace, p.Name, backend.PodLogOptions{Container: c})
		if err != nil {
			t.Fatalf("logs of %s/%s through the API server: %v", p.Namespace, p.Name, err)
		}
		if stripKubeletTimes(got.Text) != strings.TrimRight(want.Text, "\n")+"\n" {
			t.Errorf("logs of %s/%s differ\nfixture:\n%s\nlive:\n%s", p.Namespace, p.Name, want.Text, got.Text)
		}
		checked++
	}
	t.Logf("%d tool calls compared, logs of %d pods compared", len(calls), checked)
	kwokManages(ctx, t, k)
}

// kwokManages checks that kwok brings a node annotated for it to Ready and
// runs the pods bound to it, while scenario nodes keep their recorded status.
func kwokManages(ctx context.Context, t *testing.T, k *Kube) {
	t.Helper()
	cfg, err := AdminConfig(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const node = "lab-kwok-0"
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: node, Annotations: map[string]string{KwokNodeAnnotation: "fake"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lab-kwok-pod", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example/c:1"}}}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = eventually(ctx, 60*time.Second, func() error {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		p, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !ready || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("node ready %v, pod %s", ready, p.Status.Phase)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kwok does not manage its node: %v\n%s", err, k.Kwok.Log())
	}
}

func hasNode(ctx context.Context, set *backend.Set, p corev1.Pod) bool {
	if p.Spec.NodeName == "" || set.PodLogs == nil {
		return false
	}
	_, err := set.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	return err == nil
}

// stripKubeletTimes drops the RFC3339Nano prefix the kubelet adds with
// timestamps=true.
func stripKubeletTimes(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		_, rest, _ := strings.Cut(l, " ")
		b.WriteString(rest + "\n")
	}
	return b.String()
}

type toolCall struct {
	intent string
	params *structpb.Struct
}

// parityCalls derives the calls from the scenario's objects: every
// namespace, and describe for each pod, deployment, node and service.
func parityCalls(ctx context.Context, t *testing.T, fx *backend.Set) []toolCall {
	t.Helper()
	mk := func(intent string, kv map[string]any) toolCall {
		s, err := structpb.NewStruct(kv)
		if err != nil {
			t.Fatal(err)
		}
		return toolCall{intent, s}
	}
	calls := []toolCall{
		mk("list_pods", map[string]any{"namespace": "all"}),
		mk("list_pods", map[string]any{"namespace": "all", "unhealthy_only": true}),
		mk("list_deployments", map[string]any{"namespace": "all"}),
		mk("get_node_health", map[string]any{}),
	}
	nss := map[string]bool{}
	pods, _ := fx.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		nss[p.Namespace] = true
		calls = append(calls, mk("describe_resource", map[string]any{"kind": "pod", "name": p.Name, "namespace": p.Namespace}))
	}
	evs, _ := fx.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	for _, e := range evs.Items {
		nss[e.Namespace] = true
	}
	deps, _ := fx.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	for _, d := range deps.Items {
		nss[d.Namespace] = true
		calls = append(calls, mk("describe_resource", map[string]any{"kind": "deployment", "name": d.Name, "namespace": d.Namespace}))
		calls = append(calls, mk("list_deployments", map[string]any{"namespace": d.Namespace, "name": d.Name}))
	}
	nodes, _ := fx.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		calls = append(calls, mk("describe_resource", map[string]any{"kind": "node", "name": n.Name, "namespace": "default"}))
	}
	svcs, _ := fx.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	for _, s := range svcs.Items {
		calls = append(calls, mk("describe_resource", map[string]any{"kind": "service", "name": s.Name, "namespace": s.Namespace}))
	}
	names := make([]string, 0, len(nss))
	for ns := range nss {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		calls = append(calls,
			mk("check_pod_status", map[string]any{"namespace": ns}),
			mk("get_events", map[string]any{"namespace": ns}),
			mk("get_events", map[string]any{"namespace": ns, "type": "Warning", "since_minutes": 1440}),
		)
	}
	return calls
}

func runTool(ctx context.Context, t *testing.T, s *tools.Service, c toolCall) *evidencev1.ToolResult {
	t.Helper()
	resp, err := s.ExecuteTool(ctx, &toolsv1.ExecuteToolRequest{
		SessionId: "lab-parity", Intent: c.intent, Params: c.params, SkipPublish: true, NoCache: true,
	})
	if err != nil {
		t.Fatalf("%s %s: %v", c.intent, c.params, err)
	}
	return resp.GetResult()
}

// apiDefaults fills in, in the fixture's facts, the probe settings the API
// server defaults (timeoutSeconds 1, periodSeconds 10, failureThreshold 3)
// when a recorded object leaves them out: client-go's fake clientset does
// no defaulting, a real API server does.
var apiDefaults = strings.NewReplacer("timeout=0s", "timeout=1s", "period=0s", "period=10s", "failure=0\"", "failure=3\"", "failure=0 ", "failure=3 ")

// serverOnly drops from the live facts the created_at of objects recorded
// without a creationTimestamp: a real API server stamps every object.
func serverOnly(want, got string) string {
	var w, g any
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(got), &g) != nil {
		return got
	}
	var walk func(w, g any)
	walk = func(w, g any) {
		switch gv := g.(type) {
		case map[string]any:
			wm, _ := w.(map[string]any)
			if _, ok := wm["created_at"]; !ok {
				delete(gv, "created_at")
			}
			if ge, ok := gv["events"].([]any); ok {
				we, _ := wm["events"].([]any)
				if kept := withoutControlPlaneEvents(we, ge); len(kept) == 0 && we == nil {
					delete(gv, "events")
				} else {
					gv["events"] = kept
				}
			}
			for k, v := range gv {
				walk(wm[k], v)
			}
		case []any:
			wl, _ := w.([]any)
			for i, v := range gv {
				if i < len(wl) {
					walk(wl[i], v)
				}
			}
		}
	}
	// A list of events (get_events) gets the same filtering.
	if gl, ok := g.([]any); ok && len(gl) > 0 {
		if m, ok := gl[0].(map[string]any); ok && m["reason"] != nil && m["involved_kind"] != nil {
			wl, _ := w.([]any)
			g = withoutControlPlaneEvents(wl, gl)
		}
	}
	walk(w, g)
	b, _ := json.Marshal(g)
	return string(b)
}

// withoutControlPlaneEvents drops the events the lab's own API server
// emits about the objects it was loaded with (its repair controllers, for
// example re-allocating a recorded cluster IP): they are not part of the
// recording, so the fixture cannot have them.
func withoutControlPlaneEvents(want, got []any) []any {
	recorded := map[string]bool{}
	for _, e := range want {
		if m, ok := e.(map[string]any); ok {
			recorded[fmt.Sprint(m["reason"], "/", m["message"])] = true
		}
	}
	var out []any
	for _, e := range got {
		m, ok := e.(map[string]any)
		if ok && !recorded[fmt.Sprint(m["reason"], "/", m["message"])] && strings.HasSuffix(fmt.Sprint(m["source"]), "-controller") {
			continue
		}
		out = append(out, e)
	}
	return out
}

func factJSON(res *evidencev1.ToolResult, key string) string {
	v := res.GetMetadata().GetFields()[key]
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(v.AsInterface())
	return string(b)
}

func TestStorageKey(t *testing.T) {
	byKind := map[string]kindInfo{}
	for _, k := range kinds {
		byKind[k.kind] = k
	}
	for _, tc := range []struct{ kind, ns, name, want string }{
		{"Node", "", "n1", "/registry/minions/n1"},
		{"Pod", "shop", "p", "/registry/pods/shop/p"},
		{"Service", "shop", "web", "/registry/services/specs/shop/web"},
		{"Endpoints", "shop", "web", "/registry/services/endpoints/shop/web"},
		{"Ingress", "shop", "web", "/registry/ingress/shop/web"},
		{"Deployment", "shop", "web", "/registry/deployments/shop/web"},
		{"Namespace", "", "shop", "/registry/namespaces/shop"},
	} {
		if got := storageKey(byKind[tc.kind], tc.ns, tc.name); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.kind, got, tc.want)
		}
	}
}

func TestLookBinMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("RCAMESH_CACHE", t.TempDir())
	t.Setenv("RCAMESH_KUBE_BIN", "")
	if _, err := LookBin("kube-apiserver"); !IsMissing(err) {
		t.Fatalf("err = %v, want ErrMissing", err)
	}
	dir := filepath.Join(os.Getenv("RCAMESH_CACHE"), "kube-v1-kwok-v1", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := LookBin("kube-apiserver"); err != nil || got != filepath.Join(dir, "kube-apiserver") {
		t.Fatalf("LookBin = %q, %v", got, err)
	}
}

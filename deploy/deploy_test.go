// Package deploy holds the Helm chart (helm/rcamesh) and the plain manifests
// rendered from it (manifests/). Its tests lint and render the chart with the
// Helm Go SDK, keep the manifests in step with it, and apply them to a real
// kube-apiserver (internal/lab).
package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/rcamesh/rcamesh/internal/lab"
)

const (
	chartDir      = "helm/rcamesh"
	manifestsFile = "manifests/rcamesh.yaml"
	// The plain manifests: release "rcamesh" in namespace "rcamesh" against
	// the NATS cluster the official chart installs as release "nats" there.
	manifestsNamespace = "rcamesh"
	manifestsNATS      = "nats://nats.rcamesh.svc:4222"
)

var components = []string{"tools", "critic", "router", "delivery", "brain", "gateway"}

// render renders the chart as `helm template` would (the NATS dependency is
// not vendored: it is disabled here, nats.url names an existing cluster) and
// returns the manifests in template order, each headed by its source.
func render(t testing.TB, release, namespace string, values map[string]any) (string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return "", err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(out))
	for name := range out {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		for _, doc := range strings.Split(out[name], "\n---\n") {
			doc = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---"))
			if doc == "" || onlyComments(doc) {
				continue
			}
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, doc)
		}
	}
	return b.String(), nil
}

func onlyComments(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// objects decodes rendered manifests.
func objects(t testing.TB, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(manifests, "\n---\n") {
		doc = strings.TrimPrefix(doc, "---\n")
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

func natsValues(url string) map[string]any {
	return map[string]any{"nats": map[string]any{"enabled": false, "url": url}}
}

// TestChartLints: the Helm SDK's linter (the rules of `helm lint`) finds no
// error, and no warning but the one about the NATS dependency, which is
// declared in Chart.yaml and deliberately not vendored into charts/.
func TestChartLints(t *testing.T) {
	for _, values := range []map[string]any{nil, natsValues(manifestsNATS)} {
		l := lint.All(chartDir, values, manifestsNamespace, false)
		for _, m := range l.Messages {
			switch {
			case m.Severity == support.ErrorSev:
				t.Errorf("lint error: %s", m)
			case m.Severity == support.WarningSev && !strings.Contains(m.Err.Error(), "missing these dependencies: nats"):
				t.Errorf("lint warning: %s", m)
			}
		}
	}
}

// TestChartRenders checks what the chart promises: a Deployment per service
// with replicas, resources and probes on /healthz, /readyz and gRPC health;
// a headless Service each (round-robin over dns:///), a PodDisruptionBudget
// and a NetworkPolicy each; the read-only ClusterRole bound to the service
// account only the tools pods mount; Secrets only by reference.
func TestChartRenders(t *testing.T) {
	out, err := render(t, "prod", "sre", map[string]any{
		"nats": map[string]any{"url": "nats://n1:4222,nats://n2:4222"},
		"llm": map[string]any{"provider": "openai", "model": "gpt-x",
			"apiKeySecret": map[string]any{"name": "llm-key", "key": "token"}},
		"integrations": map[string]any{"envFromSecrets": []any{"es-credentials"},
			"secretFiles": []any{map[string]any{"secret": "prom-token", "mountPath": "/var/run/secrets/prom"}}},
		"components": map[string]any{"brain": map[string]any{"replicas": 3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]map[string]*unstructured.Unstructured{}
	for _, o := range objects(t, out) {
		if byKind[o.GetKind()] == nil {
			byKind[o.GetKind()] = map[string]*unstructured.Unstructured{}
		}
		byKind[o.GetKind()][o.GetName()] = o
		if o.GetKind() == "Secret" {
			t.Errorf("the chart must not create Secrets (only reference them): %s", o.GetName())
		}
	}
	for _, c := range components {
		name := "prod-rcamesh-" + c
		for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} {
			if byKind[kind][name] == nil {
				t.Errorf("no %s %s", kind, name)
			}
		}
		var svc corev1.Service
		fromUnstructured(t, byKind["Service"][name], &svc)
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("service %s is not headless: %q", name, svc.Spec.ClusterIP)
		}
		var d appsv1.Deployment
		fromUnstructured(t, byKind["Deployment"][name], &d)
		want := int32(2)
		if c == "brain" {
			want = 3
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			t.Errorf("%s replicas %v, want %d", name, d.Spec.Replicas, want)
		}
		pod := d.Spec.Template.Spec
		ctr := pod.Containers[0]
		args := strings.Join(ctr.Args, " ")
		for _, a := range []string{"-target=" + c, "-nats.url=nats://n1:4222,nats://n2:4222", "-nats.replicas=3", "-grpc.addr=0.0.0.0:9090"} {
			if !strings.Contains(args, a) {
				t.Errorf("%s args lack %s: %s", name, a, args)
			}
		}
		if c == "brain" && !strings.Contains(args, "-tools.addr=dns:///prod-rcamesh-tools.sre.svc:9090") {
			t.Errorf("brain does not balance over the tools replicas: %s", args)
		}
		if ctr.StartupProbe.HTTPGet.Path != "/healthz" || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" || ctr.LivenessProbe.GRPC == nil || ctr.LivenessProbe.GRPC.Port != 9090 {
			t.Errorf("%s probes: startup %v readiness %v liveness %v", name, ctr.StartupProbe, ctr.ReadinessProbe, ctr.LivenessProbe)
		}
		if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s has no resources", name)
		}
		if ctr.SecurityContext == nil || ctr.SecurityContext.ReadOnlyRootFilesystem == nil || !*ctr.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("%s root filesystem is writable", name)
		}
		if got := *pod.AutomountServiceAccountToken; got != (c == "tools") {
			t.Errorf("%s mounts the service account token: %v (only tools reads the Kubernetes API)", name, got)
		}
		usesModel := c == "brain" || c == "router"
		if strings.Contains(args, "-llm.api-key-file=/var/run/secrets/rcamesh/llm/token") != usesModel {
			t.Errorf("%s: model key file flag %v, want %v: %s", name, !usesModel, usesModel, args)
		}
		if c == "tools" {
			if len(ctr.EnvFrom) != 1 || ctr.EnvFrom[0].SecretRef.Name != "es-credentials" {
				t.Errorf("tools env from secrets: %v", ctr.EnvFrom)
			}
			if !strings.Contains(args, "-integrations.config=") {
				t.Errorf("tools has no integrations config: %s", args)
			}
		}
		var np struct {
			Spec struct {
				Ingress []struct {
					From []map[string]any `json:"from"`
				} `json:"ingress"`
			} `json:"spec"`
		}
		fromUnstructured(t, byKind["NetworkPolicy"][name], &np)
		if len(np.Spec.Ingress) == 0 || len(np.Spec.Ingress[0].From) == 0 {
			t.Errorf("%s network policy admits everyone", name)
		}
	}
	if byKind["Service"]["prod-rcamesh"] == nil {
		t.Error("no front-door Service for the gateway")
	}
	if cr := byKind["ClusterRole"]["prod-rcamesh-readonly"]; cr == nil {
		t.Error("no read-only ClusterRole")
	} else {
		rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		for _, r := range rules {
			for _, v := range r.(map[string]any)["verbs"].([]any) {
				if !slices.Contains([]any{"get", "list", "watch"}, v) {
					t.Errorf("ClusterRole grants %v", v)
				}
			}
		}
	}
	if strings.Contains(out, "gpt-x") && strings.Contains(out, "api_key:") {
		t.Error("a key value reached the manifests")
	}

	// Without a NATS URL and without the subchart the chart refuses to render.
	if _, err := render(t, "x", "y", map[string]any{"nats": map[string]any{"url": ""}}); err == nil || !strings.Contains(err.Error(), "nats.url is required") {
		t.Errorf("missing NATS: %v", err)
	}
	// With the official chart enabled, the URL defaults to its Service.
	out, err = render(t, "x", "y", map[string]any{"nats": map[string]any{"enabled": true, "url": ""}})
	if err != nil || !strings.Contains(out, "-nats.url=nats://x-nats:4222") {
		t.Errorf("subchart NATS URL: %v", err)
	}
}

func fromUnstructured(t testing.TB, o *unstructured.Unstructured, into any) {
	t.Helper()
	if o == nil {
		t.Fatalf("missing object for %T", into)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatal(err)
	}
}

// TestManifestsUpToDate: deploy/manifests/rcamesh.yaml is what the chart
// renders for users without Helm. UPDATE_MANIFESTS=1 rewrites it.
func TestManifestsUpToDate(t *testing.T) {
	out, err := render(t, "rcamesh", manifestsNamespace, natsValues(manifestsNATS))
	if err != nil {
		t.Fatal(err)
	}
	head := "# rcamesh, rendered from deploy/helm/rcamesh (release rcamesh, namespace rcamesh,\n" +
		"# NATS at " + manifestsNATS + "). Regenerate: UPDATE_MANIFESTS=1 go test ./deploy/\n" +
		"# kubectl create namespace rcamesh && kubectl apply -n rcamesh -f deploy/manifests/rcamesh.yaml\n"
	want := head + out
	if os.Getenv("UPDATE_MANIFESTS") != "" {
		if err := os.WriteFile(manifestsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(manifestsFile)
	if err != nil {
		t.Fatalf("%v (UPDATE_MANIFESTS=1 go test ./deploy/ writes it)", err)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Fatalf("%s is not what the chart renders: run UPDATE_MANIFESTS=1 go test ./deploy/", manifestsFile)
	}
}

// TestManifestsApplyToKubeAPIServer creates every object of the plain
// manifests on the lab's real kube-apiserver (etcd + kube-apiserver + kwok),
// so the API server's own validation judges them, then runs one pod of each
// Deployment's template on a node kwok manages (the lab runs no controllers
// or scheduler: the test binds the pods itself) and waits for kwok to report
// them running.
func TestManifestsApplyToKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and kwok")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k, err := lab.StartKube(ctx, t.TempDir())
	if err != nil {
		if lab.IsMissing(err) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer k.Stop()
	cfg, err := lab.AdminConfig(k.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: manifestsNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The documented secret step (scripts/k8s-secrets.sh | kubectl apply):
	// every Secret the pods and NATS reference, from the real commands.
	secrets := map[string]map[string][]byte{}
	for _, s := range k8sSecrets(t, "rcamesh") {
		created, err := admin.CoreV1().Secrets(manifestsNamespace).Create(ctx, &s, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatalf("the API server refused Secret %s: %v", s.Name, err)
		}
		secrets[created.Name] = created.Data
	}
	if len(secrets["rcamesh-nats-auth"]["auth.conf"]) == 0 {
		t.Error("no NATS users in Secret rcamesh-nats-auth")
	}
	raw, err := os.ReadFile(manifestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var deployments []appsv1.Deployment
	kinds := map[string]int{}
	for _, o := range objects(t, string(raw)) {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: the API server does not serve it: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(manifestsNamespace)
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Errorf("the API server refused %s %s: %v", gvk.Kind, o.GetName(), err)
			continue
		}
		kinds[gvk.Kind]++
		if gvk.Kind == "Deployment" {
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			deployments = append(deployments, d)
		}
	}
	t.Logf("objects accepted: %v", kinds)
	if kinds["Deployment"] != len(components) {
		t.Fatalf("%d Deployments accepted, want %d", kinds["Deployment"], len(components))
	}

	// Every Secret key a pod mounts exists: nothing waits for a missing one.
	for _, d := range deployments {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			data, ok := secrets[v.Secret.SecretName]
			if !ok {
				t.Errorf("%s mounts Secret %s, which the secret step does not create", d.Name, v.Secret.SecretName)
			}
			for _, it := range v.Secret.Items {
				if len(data[it.Key]) == 0 {
					t.Errorf("%s mounts key %s of Secret %s: missing or empty", d.Name, it.Key, v.Secret.SecretName)
				}
			}
		}
	}

	const node = "rcamesh-kwok-0"
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: node, Annotations: map[string]string{lab.KwokNodeAnnotation: "fake"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range deployments {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-0", Namespace: manifestsNamespace, Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}
		pod.Spec.NodeName = node
		if _, err := admin.CoreV1().Pods(manifestsNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod of %s: %v", d.Name, err)
		}
	}
	for _, d := range deployments {
		name := d.Name + "-0"
		for {
			p, err := admin.CoreV1().Pods(manifestsNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if err == nil && p.Status.Phase == corev1.PodRunning {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("pod %s never ran on the kwok node", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

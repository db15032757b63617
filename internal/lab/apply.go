package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// kindInfo is a Kubernetes kind the lab copies from a scenario.
type kindInfo struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	status     bool // has a status subresource
}

func gv(group, version, resource, kind string, namespaced, status bool) kindInfo {
	return kindInfo{gvr: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, kind: kind, namespaced: namespaced, status: status}
}

// kinds is the creation order: owners before what they own, events last.
var kinds = []kindInfo{
	gv("", "v1", "namespaces", "Namespace", false, true),
	gv("", "v1", "nodes", "Node", false, true),
	gv("", "v1", "persistentvolumes", "PersistentVolume", false, true),
	gv("", "v1", "serviceaccounts", "ServiceAccount", true, false),
	gv("", "v1", "configmaps", "ConfigMap", true, false),
	gv("", "v1", "secrets", "Secret", true, false),
	gv("", "v1", "services", "Service", true, true),
	gv("", "v1", "endpoints", "Endpoints", true, false),
	gv("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, true),
	gv("apps", "v1", "deployments", "Deployment", true, true),
	gv("apps", "v1", "statefulsets", "StatefulSet", true, true),
	gv("apps", "v1", "daemonsets", "DaemonSet", true, true),
	gv("apps", "v1", "replicasets", "ReplicaSet", true, true),
	gv("batch", "v1", "cronjobs", "CronJob", true, true),
	gv("batch", "v1", "jobs", "Job", true, true),
	gv("networking.k8s.io", "v1", "ingresses", "Ingress", true, true),
	gv("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, false),
	gv("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, true),
	gv("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, true),
	gv("", "v1", "pods", "Pod", true, true),
	gv("", "v1", "events", "Event", true, false),
}

// tracker is implemented by client-go's fake clientset (the fixture's Kube).
type tracker interface {
	Tracker() k8stesting.ObjectTracker
}

// recorded is one object to create, with the metadata the API server
// overwrites at creation.
type recorded struct {
	info     kindInfo
	obj      map[string]any
	created  string // metadata.creationTimestamp as recorded
	deleted  string // metadata.deletionTimestamp as recorded
	gen      int64  // metadata.generation as recorded
	ns, name string
}

// Applied reports what ApplyScenario created.
type Applied struct {
	Objects int
	// Rejected are recorded objects the API server refused (a synthetic
	// recording may carry an invalid label value or a pod template without
	// containers). LoadScenario writes them straight to etcd, so the tools
	// still see the recording; ApplyScenario alone leaves them out.
	Rejected []Rejection
	rejected []recorded
	// restore lists objects whose server-stamped metadata differs from the
	// recording (creationTimestamp, generation, deletionTimestamp).
	restore []recorded
	// Set is the fixture backend of the scenario (its pod logs feed kwok).
	Set *backend.Set
}

// Rejection is one object the API server refused.
type Rejection struct {
	Kind, Namespace, Name string
	Err                   error
}

// scenarioObjects returns the Kubernetes objects the fixture backend serves
// for sc (k8s/*.yaml, or the opensre eks_* files converted), so the real
// API server gets exactly what the fixture's tools read.
func scenarioObjects(sc *scenario.Scenario, logger *slog.Logger) (*backend.Set, []recorded, error) {
	set, err := fixture.New(sc, logger)
	if err != nil {
		return nil, nil, err
	}
	if set.Kube == nil {
		return set, nil, nil
	}
	tr, ok := set.Kube.(tracker)
	if !ok {
		return nil, nil, fmt.Errorf("lab: fixture clientset %T has no object tracker", set.Kube)
	}
	var out []recorded
	namespaces := map[string]bool{}
	for _, k := range kinds {
		list, err := tr.Tracker().List(k.gvr, k.gvr.GroupVersion().WithKind(k.kind), "")
		if err != nil {
			return nil, nil, fmt.Errorf("lab: list %s from the fixture: %w", k.gvr.Resource, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, nil, fmt.Errorf("lab: %s: %w", k.gvr.Resource, err)
		}
		var recs []recorded
		for _, it := range items {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
			if err != nil {
				return nil, nil, fmt.Errorf("lab: %s: %w", k.gvr.Resource, err)
			}
			u["apiVersion"], u["kind"] = k.gvr.GroupVersion().String(), k.kind
			o := &unstructured.Unstructured{Object: u}
			r := recorded{info: k, obj: u, ns: o.GetNamespace(), name: o.GetName(), gen: o.GetGeneration()}
			if ts := o.GetCreationTimestamp(); !ts.IsZero() {
				r.created = ts.UTC().Format(time.RFC3339)
			}
			if ts := o.GetDeletionTimestamp(); ts != nil {
				r.deleted = ts.UTC().Format(time.RFC3339)
			}
			if r.ns != "" {
				namespaces[r.ns] = true
			}
			recs = append(recs, r)
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].ns+"/"+recs[i].name < recs[j].ns+"/"+recs[j].name })
		out = append(out, recs...)
	}
	// Namespaces the objects live in but the scenario does not declare.
	have := map[string]bool{}
	for _, r := range out {
		if r.info.kind == "Namespace" {
			have[r.name] = true
		}
	}
	var extra []recorded
	for ns := range namespaces {
		if !have[ns] {
			extra = append(extra, recorded{info: kinds[0], name: ns, obj: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}})
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i].name < extra[j].name })
	return set, append(extra, out...), nil
}

// AdminConfig loads a kubeconfig as an admin rest.Config (writes allowed:
// this is test setup, never a tool's client).
func AdminConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("lab: kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "rcamesh-lab"
	return cfg, nil
}

// ApplyScenario creates the scenario's Kubernetes objects (the ones the
// fixture backend serves) on the cluster of kubeconfig with an admin client,
// then writes each recorded status through the status subresource, so the
// tools see the same phase, containerStatuses, conditions and events as on
// the fixture. Owner references without a uid get the owner's real uid.
//
// The API server stamps creationTimestamp and generation itself; restoring
// the recorded values needs etcd (Kube.LoadScenario does it).
func ApplyScenario(ctx context.Context, kubeconfig string, sc *scenario.Scenario) (*Applied, error) {
	cfg, err := AdminConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("lab: dynamic client: %w", err)
	}
	set, recs, err := scenarioObjects(sc, nil)
	if err != nil {
		return nil, err
	}
	res := &Applied{Set: set}
	uids := map[string]string{} // kind/ns/name -> uid on the server
	for _, r := range recs {
		obj := cleanForCreate(r.obj)
		fillOwnerUIDs(obj, r.ns, uids)
		var ri dynamic.ResourceInterface = dyn.Resource(r.info.gvr)
		if r.info.namespaced {
			ri = dyn.Resource(r.info.gvr).Namespace(r.ns)
		}
		u := &unstructured.Unstructured{Object: obj}
		reject := func(err error) {
			r.obj = obj
			res.rejected = append(res.rejected, r)
			res.Rejected = append(res.Rejected, Rejection{Kind: r.info.kind, Namespace: r.ns, Name: r.name, Err: err})
		}
		got, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: "rcamesh-lab"})
		if apierrors.IsInvalid(err) && r.info.kind == "Service" && strings.Contains(err.Error(), "spec.clusterIP") {
			// A recorded cluster IP outside the lab's service range: let the
			// API server allocate one (tools report no cluster IP fact).
			spec, _ := obj["spec"].(map[string]any)
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
			got, err = ri.Create(ctx, u, metav1.CreateOptions{FieldManager: "rcamesh-lab"})
		}
		if apierrors.IsAlreadyExists(err) && r.info.kind == "Namespace" {
			got, err = ri.Get(ctx, r.name, metav1.GetOptions{})
		}
		if apierrors.IsInvalid(err) {
			reject(err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("lab: create %s %s: %w", r.info.kind, qualifiedName(r.ns, r.name), err)
		}
		uids[r.info.kind+"/"+r.ns+"/"+r.name] = string(got.GetUID())
		res.Objects++
		if st, ok := r.obj["status"].(map[string]any); ok && len(st) > 0 && r.info.status {
			merged := map[string]any{}
			for k, v := range st {
				merged[k] = v
			}
			if cur, ok := got.Object["status"].(map[string]any); ok {
				// qosClass is derived from the spec by the server and immutable.
				if q, ok := cur["qosClass"]; ok {
					merged["qosClass"] = q
				}
			}
			got.Object["status"] = merged
			_, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "rcamesh-lab"})
			if apierrors.IsInvalid(err) {
				// Replaced in etcd by the recorded object (same uid).
				meta := obj["metadata"].(map[string]any)
				meta["uid"] = string(got.GetUID())
				reject(err)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("lab: status of %s %s: %w", r.info.kind, qualifiedName(r.ns, r.name), err)
			}
		}
		if (r.created != "" && r.created != got.GetCreationTimestamp().UTC().Format(time.RFC3339)) ||
			(r.gen != 0 && r.gen != got.GetGeneration()) || r.deleted != "" {
			res.restore = append(res.restore, r)
		}
	}
	return res, nil
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// cleanForCreate drops what only the server may set.
func cleanForCreate(in map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(in)
	md, _ := out["metadata"].(map[string]any)
	for _, k := range []string{"resourceVersion", "uid", "selfLink", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "generation", "managedFields"} {
		delete(md, k)
	}
	return out
}

func fillOwnerUIDs(obj map[string]any, ns string, uids map[string]string) {
	md, _ := obj["metadata"].(map[string]any)
	refs, _ := md["ownerReferences"].([]any)
	for _, r := range refs {
		ref, ok := r.(map[string]any)
		if !ok || ref["uid"] != nil && ref["uid"] != "" {
			continue
		}
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		uid := uids[kind+"/"+ns+"/"+name]
		if uid == "" {
			// The owner is not in the scenario: a stable stand-in.
			h := sha256.Sum256([]byte(kind + "/" + ns + "/" + name))
			uid = string(types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])))
		}
		ref["uid"] = uid
	}
}

// LoadScenario applies sc (ApplyScenario), restores the recorded
// creationTimestamp, generation and deletionTimestamp in etcd (the API
// server overwrites them at creation; rollout history and pod ages depend
// on them), and restarts kwok serving the scenario's container logs, with
// every scenario node pointing its kubelet endpoint at kwok so that
// `kubectl logs` (pods/log through the API server) returns them.
func (k *Kube) LoadScenario(ctx context.Context, sc *scenario.Scenario) (*Applied, error) {
	res, err := ApplyScenario(ctx, k.Kubeconfig, sc)
	if err != nil {
		return nil, err
	}
	if err := k.restoreMetadata(ctx, res.restore); err != nil {
		return nil, err
	}
	if err := k.storeDirect(ctx, res.rejected); err != nil {
		return nil, err
	}
	if err := k.servePodLogs(ctx, res.Set); err != nil {
		return nil, err
	}
	return res, nil
}

// restoreMetadata rewrites server-stamped metadata in etcd (objects are
// stored as JSON, see StartKube) and waits until the API server serves it.
func (k *Kube) restoreMetadata(ctx context.Context, recs []recorded) error {
	if len(recs) == 0 {
		return nil
	}
	want := map[string]recorded{}
	for _, r := range recs {
		want[r.info.kind+"/"+r.ns+"/"+r.name] = r
	}
	kvs, err := k.etcdRange(ctx, "/registry/", "/registry0")
	if err != nil {
		return err
	}
	done := 0
	for _, kv := range kvs {
		if !bytes.HasPrefix(kv.value, []byte("{")) {
			continue
		}
		var obj map[string]any
		if json.Unmarshal(kv.value, &obj) != nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		r, ok := want[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()]
		if !ok || u.GroupVersionKind().Group != r.info.gvr.Group {
			continue
		}
		md := obj["metadata"].(map[string]any)
		if r.created != "" {
			md["creationTimestamp"] = r.created
		}
		if r.gen != 0 {
			md["generation"] = r.gen
		}
		if r.deleted != "" {
			md["deletionTimestamp"] = r.deleted
			md["deletionGracePeriodSeconds"] = 30
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("lab: etcd %s: %w", kv.key, err)
		}
		if err := k.etcdPut(ctx, kv.key, append(b, '\n')); err != nil {
			return err
		}
		done++
	}
	if done != len(want) {
		return fmt.Errorf("lab: restored metadata of %d objects in etcd, want %d", done, len(want))
	}
	// The API server's watch cache follows etcd: wait until it serves the change.
	cfg, err := AdminConfig(k.Kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range recs {
		var ri dynamic.ResourceInterface = dyn.Resource(r.info.gvr)
		if r.info.namespaced {
			ri = dyn.Resource(r.info.gvr).Namespace(r.ns)
		}
		for {
			got, err := ri.Get(ctx, r.name, metav1.GetOptions{})
			if err == nil && (r.created == "" || got.GetCreationTimestamp().UTC().Format(time.RFC3339) == r.created) &&
				(r.gen == 0 || got.GetGeneration() == r.gen) {
				lst, lerr := ri.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + r.name})
				if lerr == nil && len(lst.Items) == 1 && (r.created == "" || lst.Items[0].GetCreationTimestamp().UTC().Format(time.RFC3339) == r.created) {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("lab: API server does not serve restored metadata of %s %s (err %v)", r.info.kind, qualifiedName(r.ns, r.name), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// storageKey is the etcd key under which the API server keeps an object.
func storageKey(info kindInfo, ns, name string) string {
	res := info.gvr.Resource
	switch res {
	case "nodes":
		res = "minions"
	case "services":
		res = "services/specs"
	case "endpoints":
		res = "services/endpoints"
	case "ingresses":
		res = "ingress"
	}
	if info.namespaced {
		return "/registry/" + res + "/" + ns + "/" + name
	}
	return "/registry/" + res + "/" + name
}

// storeDirect writes objects the API server refused straight into etcd,
// as recorded (status included, no defaulting), and waits until the API
// server serves them.
func (k *Kube) storeDirect(ctx context.Context, recs []recorded) error {
	if len(recs) == 0 {
		return nil
	}
	cfg, err := AdminConfig(k.Kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, r := range recs {
		obj := runtime.DeepCopyJSON(r.obj)
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		if md["uid"] == nil {
			h := sha256.Sum256([]byte(r.info.kind + "/" + r.ns + "/" + r.name))
			md["uid"] = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
		}
		md["creationTimestamp"] = r.created
		if r.created == "" {
			md["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
		}
		if r.gen != 0 {
			md["generation"] = r.gen
		}
		if r.deleted != "" {
			md["deletionTimestamp"] = r.deleted
		}
		if st, ok := r.obj["status"]; ok {
			obj["status"] = st
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("lab: %s %s: %w", r.info.kind, qualifiedName(r.ns, r.name), err)
		}
		if err := k.etcdPut(ctx, storageKey(r.info, r.ns, r.name), append(b, '\n')); err != nil {
			return err
		}
	}
	return eventually(ctx, 30*time.Second, func() error {
		for _, r := range recs {
			var ri dynamic.ResourceInterface = dyn.Resource(r.info.gvr)
			if r.info.namespaced {
				ri = dyn.Resource(r.info.gvr).Namespace(r.ns)
			}
			if _, err := ri.Get(ctx, r.name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("lab: %s %s written to etcd but not served: %w", r.info.kind, qualifiedName(r.ns, r.name), err)
			}
		}
		return nil
	})
}

// eventually polls fn every 50ms until it returns nil, ctx ends or timeout passes.
func eventually(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// patchStored edits the JSON object stored under key in etcd.
func (k *Kube) patchStored(ctx context.Context, key string, edit func(map[string]any)) error {
	kvs, err := k.etcdRange(ctx, key, key+"\x00")
	if err != nil {
		return err
	}
	if len(kvs) != 1 {
		return fmt.Errorf("lab: etcd key %s not found", key)
	}
	var obj map[string]any
	if err := json.Unmarshal(kvs[0].value, &obj); err != nil {
		return fmt.Errorf("lab: etcd %s: %w", key, err)
	}
	edit(obj)
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("lab: etcd %s: %w", key, err)
	}
	return k.etcdPut(ctx, key, append(b, '\n'))
}

type etcdKV struct {
	key   string
	value []byte
}

func (k *Kube) etcdCall(ctx context.Context, path string, body map[string]string, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.EtcdURL+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("lab: etcd: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("lab: etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lab: etcd %s: HTTP %d: %s", path, resp.StatusCode, rb)
	}
	if out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			return fmt.Errorf("lab: etcd %s: %w", path, err)
		}
	}
	return nil
}

// etcdRange reads keys in [from, to) through etcd's JSON gateway.
func (k *Kube) etcdRange(ctx context.Context, from, to string) ([]etcdKV, error) {
	enc := base64.StdEncoding.EncodeToString
	var resp struct {
		KVs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := k.etcdCall(ctx, "/v3/kv/range", map[string]string{"key": enc([]byte(from)), "range_end": enc([]byte(to))}, &resp); err != nil {
		return nil, err
	}
	out := make([]etcdKV, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		key, err1 := base64.StdEncoding.DecodeString(kv.Key)
		val, err2 := base64.StdEncoding.DecodeString(kv.Value)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("lab: etcd range: bad base64")
		}
		out = append(out, etcdKV{key: string(key), value: val})
	}
	return out, nil
}

func (k *Kube) etcdPut(ctx context.Context, key string, value []byte) error {
	enc := base64.StdEncoding.EncodeToString
	return k.etcdCall(ctx, "/v3/kv/put", map[string]string{"key": enc([]byte(key)), "value": enc(value)}, nil)
}

// servePodLogs writes the scenario's container logs (as the fixture
// serves them: pod_logs files, eks_pod_logs, else log-search hits) in the
// CRI log format under k.Dir/podlogs, restarts kwok with one Logs object
// per pod, and points every scenario node's kubelet endpoint at kwok.
func (k *Kube) servePodLogs(ctx context.Context, set *backend.Set) error {
	if set == nil || set.Kube == nil || set.PodLogs == nil {
		return nil
	}
	pods, err := set.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("lab: fixture pods: %w", err)
	}
	var docs [][]byte
	for _, p := range pods.Items {
		var logs []map[string]any
		for _, c := range p.Spec.Containers {
			entry := map[string]any{"containers": []string{c.Name}}
			for _, prev := range []bool{false, true} {
				pl, err := set.PodLogs.PodLogs(ctx, p.Namespace, p.Name, backend.PodLogOptions{Container: c.Name, Previous: prev})
				if err != nil {
					return fmt.Errorf("lab: fixture logs of %s/%s: %w", p.Namespace, p.Name, err)
				}
				if pl.Text == "" {
					continue
				}
				name := c.Name + ".log"
				key := "logsFile"
				if prev {
					name, key = c.Name+".previous.log", "previousLogsFile"
				}
				path := filepath.Join(k.Dir, "podlogs", p.Namespace, p.Name, name)
				if err := writeCRILog(path, pl.Text, set.Clock()); err != nil {
					return err
				}
				entry[key] = path
			}
			if len(entry) > 1 {
				logs = append(logs, entry)
			}
		}
		if len(logs) == 0 {
			continue
		}
		doc, err := yaml.Marshal(map[string]any{
			"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
			"metadata": map[string]any{"name": p.Name, "namespace": p.Namespace},
			"spec":     map[string]any{"logs": logs},
		})
		if err != nil {
			return fmt.Errorf("lab: kwok logs: %w", err)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		return nil
	}
	if err := k.startKwok(ctx, docs); err != nil {
		return err
	}
	return k.pointNodesAtKwok(ctx, set)
}

// pointNodesAtKwok sets status.addresses (InternalIP 127.0.0.1) and the
// kubelet endpoint port of the scenario's nodes to kwok's server. Neither
// is a fact the tools report.
func (k *Kube) pointNodesAtKwok(ctx context.Context, set *backend.Set) error {
	_, portStr, _ := strings.Cut(k.KwokAddr, ":")
	var port int
	fmt.Sscanf(portStr, "%d", &port)
	cfg, err := AdminConfig(k.Kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	nodes := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	list, err := nodes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("lab: nodes: %w", err)
	}
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, port)
	for _, n := range list.Items {
		if _, managed := n.GetAnnotations()[KwokNodeAnnotation]; managed {
			continue
		}
		_, err := nodes.Patch(ctx, n.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if apierrors.IsInvalid(err) {
			// A recorded node the API server would refuse (kept in etcd as
			// recorded): patch its stored status directly.
			err = k.patchStored(ctx, storageKey(kinds[1], "", n.GetName()), func(obj map[string]any) {
				st, _ := obj["status"].(map[string]any)
				if st == nil {
					st = map[string]any{}
					obj["status"] = st
				}
				st["addresses"] = []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}}
				st["daemonEndpoints"] = map[string]any{"kubeletEndpoint": map[string]any{"Port": port}}
			})
		}
		if err != nil {
			return fmt.Errorf("lab: point node %s at kwok: %w", n.GetName(), err)
		}
	}
	return nil
}

// writeCRILog writes text as a CRI container log ("<RFC3339Nano> stdout F
// <line>"), each line stamped with its own leading timestamp when it has
// one, else the previous line's, else fallback.
func writeCRILog(path, text string, fallback time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	var b strings.Builder
	ts := fallback.UTC()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if t, ok := leadingTime(line); ok {
			ts = t.UTC()
		}
		fmt.Fprintf(&b, "%s stdout F %s\n", ts.Format(time.RFC3339Nano), line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("lab: pod log %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return nil
}

func leadingTime(line string) (time.Time, bool) {
	tok, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	tok = strings.Trim(tok, "[]")
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, tok); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// get_recent_changes answers the first question of any incident, "what
// changed?", from the objects themselves: every object whose creation or
// last edit (managedFields) falls in the window, with who edited it and
// which fields. Controllers' status writes are not changes; Pods,
// ReplicaSets, Events, Endpoints and Leases are written by controllers and
// are not listed.

const (
	// maxObjectChanges caps the changes reported (newest first).
	maxObjectChanges = 40
	// maxChangeFields caps the fields named per change.
	maxChangeFields = 8
)

// changeKinds are the built-in kinds whose edits change behaviour: the
// settings, policies, limits and workload specs an operator edits. The
// list is Kubernetes' own vocabulary; custom resources are read through
// the dynamic client.
var changeKinds = []struct {
	kind       string
	namespaced bool
	list       func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error)
}{
	{"ConfigMap", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Secret", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Service", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	}},
	{"ServiceAccount", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	}},
	{"ResourceQuota", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	}},
	{"LimitRange", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Deployment", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	}},
	{"StatefulSet", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	}},
	{"DaemonSet", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	}},
	{"CronJob", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Ingress", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	}},
	{"NetworkPolicy", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	}},
	{"PodDisruptionBudget", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	}},
	{"HorizontalPodAutoscaler", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Role", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
	}},
	{"RoleBinding", true, func(ctx context.Context, k kubernetes.Interface, ns string) (runtime.Object, error) {
		return k.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	}},
	{"Node", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	}},
	{"PriorityClass", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	}},
	{"StorageClass", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	}},
	{"ClusterRole", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	}},
	{"ClusterRoleBinding", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	}},
	{"ValidatingWebhookConfiguration", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	}},
	{"MutatingWebhookConfiguration", false, func(ctx context.Context, k kubernetes.Interface, _ string) (runtime.Object, error) {
		return k.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	}},
}

// controllerManagers write on behalf of the cluster, not of an operator.
var controllerManagers = map[string]bool{
	"kube-controller-manager": true, "kube-scheduler": true, "kubelet": true,
	"kube-apiserver": true, "cluster-autoscaler": true,
}

func handleGetRecentChanges(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	start, end := s.changeWindow(c)
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	var out []facts.ObjectChange
	listed := 0
	for _, k := range changeKinds {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recent changes: %w", err)
		}
		list, err := k.list(ctx, s.be.Kube, ns)
		if err != nil {
			s.log.Debug("recent changes: kind unavailable", "kind", k.kind, "err", err)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return fmt.Errorf("recent changes: %s list: %w", k.kind, err)
		}
		for _, it := range items {
			m, err := meta.Accessor(it)
			if err != nil {
				continue
			}
			listed++
			chs := objectChanges(k.kind, m, start, end)
			if len(chs) > 0 {
				if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it); err == nil {
					setRefs(chs, u["spec"])
					addAppliedDiff(chs, k.kind, u)
				}
			}
			out = append(out, chs...)
		}
	}
	if s.kindsAvailable() {
		kinds, err := s.be.Kinds.Custom(ctx)
		if err != nil {
			s.log.Debug("recent changes: custom kinds unavailable", "err", err)
		}
		for _, kr := range kinds {
			onNS := ns
			if !kr.Namespaced {
				onNS = ""
			}
			list, err := s.be.Dynamic.Resource(kr.GVR).Namespace(onNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range list.Items {
				listed++
				chs := objectChanges(kr.Kind, &list.Items[i], start, end)
				setRefs(chs, list.Items[i].Object["spec"])
				addAppliedDiff(chs, kr.Kind, list.Items[i].Object)
				out = append(out, chs...)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(*out[j].At) })
	if len(out) > maxObjectChanges {
		out = out[:maxObjectChanges]
	}
	if out == nil {
		out = []facts.ObjectChange{}
	}
	r.Put(facts.KeyObjectChanges, out)
	if len(out) == 0 {
		r.NoData = listed == 0
		r.Summary = fmt.Sprintf("No object in %s was created or edited between %s and %s (%d objects read).", nsScope(ns), start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), listed)
		if listed > 0 {
			r.Source(s.be.Source(backend.AreaResources))
		}
		return nil
	}
	r.Source(s.be.Source(backend.AreaResources))
	r.Severity = evidencev1.Severity_SEVERITY_INFO
	for _, ch := range out {
		r.Rawf("%s", objectChangeText(ch))
	}
	newest := out[0]
	r.Summary = fmt.Sprintf("%s in %s between %s and %s; newest: %s.", plural(len(out), "object change", "object changes"), nsScope(ns),
		start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), objectChangeText(newest))
	return nil
}

// objectChangeText renders one change on one line.
func objectChangeText(ch facts.ObjectChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s at %s", ch.Kind, qualified(ch.Namespace, ch.Name), ch.Action, ch.At.UTC().Format(time.RFC3339))
	if ch.Manager != "" {
		fmt.Fprintf(&b, " by %s", ch.Manager)
	}
	if len(ch.Fields) > 0 {
		fmt.Fprintf(&b, " (fields: %s)", strings.Join(ch.Fields, ", "))
	}
	if ch.Note != "" {
		fmt.Fprintf(&b, ": %s", ch.Note)
	}
	return b.String()
}

// objectChanges returns the object's creation and latest operator edit
// that fall in [start, end].
func objectChanges(kind string, m metav1.Object, start, end time.Time) []facts.ObjectChange {
	in := func(t time.Time) bool { return !t.IsZero() && !t.Before(start) && !t.After(end) }
	note := changeNote(m.GetAnnotations())
	var out []facts.ObjectChange
	if ct := m.GetCreationTimestamp().Time; in(ct) {
		t := ct.UTC()
		out = append(out, facts.ObjectChange{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), At: &t, Action: "created", Note: note})
	}
	var last *metav1.ManagedFieldsEntry
	var lastFields []string
	for i := range m.GetManagedFields() {
		e := &m.GetManagedFields()[i]
		if e.Time == nil || !in(e.Time.Time) || e.Subresource == "status" || controllerManagers[e.Manager] {
			continue
		}
		fields := managedLeaves(e.FieldsV1)
		if len(fields) == 0 && (e.FieldsV1 != nil || e.Operation == "") {
			continue // status or bookkeeping only
		}
		// An entry without its field set (a stripped export, an audit
		// copy) still records who wrote the object and when; the fields
		// come from the last-applied configuration when it has them.
		if last == nil || e.Time.After(last.Time.Time) {
			last, lastFields = e, fields
		}
	}
	if last != nil && (len(out) == 0 || last.Time.Sub(*out[0].At) > time.Minute) {
		t := last.Time.UTC()
		if len(lastFields) > maxChangeFields {
			lastFields = append(lastFields[:maxChangeFields], fmt.Sprintf("+%d more", len(lastFields)-maxChangeFields))
		}
		out = append(out, facts.ObjectChange{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), At: &t, Action: "edited",
			Manager: last.Manager, Fields: lastFields, Note: note})
	}
	return out
}

// changeNote is the text of an annotation that records a change
// (kubernetes.io/change-cause, a tool's "last-change", "changed-by").
func changeNote(ann map[string]string) string {
	keys := make([]string, 0, len(ann))
	for k := range ann {
		name := strings.ToLower(k[strings.LastIndex(k, "/")+1:])
		if strings.Contains(name, "change") && !strings.Contains(name, "last-applied") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if v := strings.TrimSpace(ann[k]); v != "" {
			parts = append(parts, textutil.TruncateEllipsis(v, maxFieldValue))
		}
	}
	// Short annotations an operator or a tool wrote (a ticket, a game-day
	// or change id, an owner) identify the change; controllers'
	// bookkeeping does not.
	var tags []string
	for _, k := range sortedKeys(ann) {
		v := strings.TrimSpace(ann[k])
		if v == "" || len(v) > 80 || strings.ContainsAny(v, "{}\n") || bookkeepingAnnotation(k) || slices.Contains(keys, k) || len(tags) >= maxChangeTags {
			continue
		}
		tags = append(tags, k+"="+v)
	}
	if len(tags) > 0 {
		parts = append(parts, "annotations "+strings.Join(tags, ", "))
	}
	return strings.Join(parts, "; ")
}

// maxChangeTags caps the annotations named per change.
const maxChangeTags = 4

// bookkeepingAnnotation: written by Kubernetes controllers and deploy
// tools to track their own state.
func bookkeepingAnnotation(k string) bool {
	for _, p := range []string{"kubectl.kubernetes.io/", "deployment.kubernetes.io/", "control-plane.alpha.kubernetes.io/", "autoscaling.alpha.kubernetes.io/",
		"meta.helm.sh/", "argocd.argoproj.io/", "kubernetes.io/", "pv.kubernetes.io/", "volume.", "checksum/", "cni.projectcalico.org/", "node.alpha.kubernetes.io/"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// managedLeaves flattens a FieldsV1 set into dotted leaf paths, leaving out
// status and bookkeeping (the last-applied annotation, resourceVersion).
func managedLeaves(f *metav1.FieldsV1) []string {
	if f == nil || len(f.Raw) == 0 {
		return nil
	}
	var tree map[string]any
	if err := json.Unmarshal(f.Raw, &tree); err != nil {
		return nil
	}
	var out []string
	var walk func(prefix string, node map[string]any)
	walk = func(prefix string, node map[string]any) {
		leaf := true
		for k, v := range node {
			if k == "." {
				continue
			}
			leaf = false
			seg := k
			switch {
			case strings.HasPrefix(k, "f:"):
				seg = k[2:]
			case strings.HasPrefix(k, "k:"), strings.HasPrefix(k, "v:"):
				seg = "[" + k[2:] + "]"
			}
			path := seg
			if prefix != "" {
				path = prefix + "." + seg
				if strings.HasPrefix(seg, "[") {
					path = prefix + seg
				}
			}
			if path == "status" || strings.HasPrefix(path, "status.") || strings.Contains(path, "last-applied-configuration") {
				continue
			}
			child, _ := v.(map[string]any)
			walk(path, child)
		}
		if leaf && prefix != "" {
			out = append(out, prefix)
		}
	}
	walk("", tree)
	sort.Strings(out)
	return out
}

// maxChangeRefs caps the names recorded per change.
const maxChangeRefs = 16

// setRefs records the names a spec refers to on each change: string
// values under keys that name something (name, ...Name, target, queue,
// topic, host, service, selector labels), never free text.
func setRefs(chs []facts.ObjectChange, spec any) {
	var refs []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		if len(refs) >= maxChangeRefs {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(k, x[k])
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			lk := strings.ToLower(key)
			if len(x) < 3 || len(x) > 120 || strings.ContainsAny(x, " \n\t") {
				return
			}
			for _, w := range refKeyWords {
				if strings.Contains(lk, w) {
					refs = appendUniqueStr(refs, x)
					return
				}
			}
		}
	}
	walk("", spec)
	for i := range chs {
		chs[i].Refs = refs
	}
}

// refKeyWords mark spec keys whose string value names another entity.
var refKeyWords = []string{"name", "target", "queue", "topic", "stream", "subject", "host", "service", "app", "selector", "class", "bucket", "table", "database"}

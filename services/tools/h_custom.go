package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

const (
	// maxCustomSignals caps the flattened spec/status lines of one object.
	maxCustomSignals = 24
	// maxManagers caps the managing objects described along with one object.
	maxManagers = 3
	// maxFieldValue caps one flattened value.
	maxFieldValue = 160
)

// ownerStrings renders ownerReferences as "Kind/name".
func ownerStrings(refs []metav1.OwnerReference) []string {
	var out []string
	for _, o := range refs {
		out = append(out, o.Kind+"/"+o.Name)
	}
	return out
}

// kindsAvailable: the backend reads custom resources.
func (s *Service) kindsAvailable() bool { return s.be.Dynamic != nil && s.be.Kinds != nil }

// describeCustom describes an object of a kind outside the built-in
// handlers through the dynamic client.
// A name of "*" (or none) lists the namespace's objects of the kind and
// describes the first maxListedObjects by name, the others in extra.
func (s *Service) describeCustom(ctx context.Context, r *Result, res *facts.Resource, kind string, extra *[]facts.Resource) error {
	if !s.kindsAvailable() {
		return fmt.Errorf("kind %q is not describable (one of %s; custom resources need the Kubernetes integration): %w",
			kind, strings.Join(describeKinds, ", "), backend.ErrNotConfigured)
	}
	kr, err := s.be.Kinds.Resolve(ctx, kind)
	if err != nil {
		if errors.Is(err, backend.ErrUnknownKind) {
			return fmt.Errorf("kind %q is not describable: the cluster serves no such kind (built-in: %s)", kind, strings.Join(describeKinds, ", "))
		}
		return fmt.Errorf("resolve kind %q: %w", kind, err)
	}
	res.Kind = kr.Kind
	if !kr.Namespaced {
		res.Namespace = ""
	}
	if res.Name == "" || res.Name == "*" {
		list, err := s.be.Dynamic.Resource(kr.GVR).Namespace(res.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		items := list.Items
		if len(items) == 0 {
			return apierrors.NewNotFound(schema.GroupResource{Group: kr.GVR.Group, Resource: kr.GVR.Resource}, "*")
		}
		sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
		for i := range items[:min(len(items), maxListedObjects)] {
			f := customFact(&items[i], kr.Kind)
			if i == 0 {
				*res = f
			} else {
				*extra = append(*extra, f)
			}
			s.rawCustom(r, &items[i], kr.Kind, f)
		}
		if len(items) > maxListedObjects {
			r.Rawf("(%d more %s objects)", len(items)-maxListedObjects, kr.Kind)
		}
		return nil
	}
	u, err := s.be.Dynamic.Resource(kr.GVR).Namespace(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	*res = customFact(u, kr.Kind)
	s.rawCustom(r, u, kr.Kind, *res)
	return nil
}

// maxListedObjects bounds the objects one listing describes.
const maxListedObjects = 5

// rawCustom writes an object's description as kubectl describe shows it.
func (s *Service) rawCustom(r *Result, u *unstructured.Unstructured, kind string, res facts.Resource) {
	r.Rawf("Name:        %s", u.GetName())
	if u.GetNamespace() != "" {
		r.Rawf("Namespace:   %s", u.GetNamespace())
	}
	r.Rawf("API Version: %s", u.GetAPIVersion())
	r.Rawf("Kind:        %s", kind)
	if len(res.Owners) > 0 {
		r.Rawf("Owners:      %s", strings.Join(res.Owners, ", "))
	}
	for _, l := range res.Signals {
		r.Rawf("  %s", l)
	}
	for _, c := range res.Conditions {
		r.Rawf("  condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		if c.Status == string(corev1.ConditionFalse) && readyLike(c.Type) {
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
}

func readyLike(t string) bool {
	switch strings.ToLower(t) {
	case "ready", "available", "synced", "healthy", "progressing":
		return true
	}
	return false
}

// customFact summarises an unstructured object: conditions from
// status.conditions, spec/status flattened as "path=value" lines (capped,
// secrets redacted), owners.
func customFact(u *unstructured.Unstructured, kind string) facts.Resource {
	res := facts.Resource{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Owners: ownerStrings(u.GetOwnerReferences())}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		ct := t.UTC()
		res.CreatedAt = &ct
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		res.Conditions = append(res.Conditions, facts.Condition{
			Type: str(m["type"]), Status: str(m["status"]), Reason: str(m["reason"]), Message: RedactText(str(m["message"])),
		})
	}
	lines := noteAnnotations(u.GetAnnotations())
	for _, top := range []string{"spec", "status"} {
		if v, ok := u.Object[top]; ok {
			var flat []string
			flatten(top, v, &flat)
			lines = append(lines, shallowFirst(flat)...)
		}
	}
	if len(lines) > maxCustomSignals {
		lines = append(lines[:maxCustomSignals], fmt.Sprintf("(%d more fields)", len(lines)-maxCustomSignals))
	}
	res.Signals = lines
	return res
}

// maxNotes bounds the annotations kept as notes of one object.
const maxNotes = 3

// noteAnnotations are the annotations people wrote as notes on an object
// (a description, the reason of a setting, a ticket): free text of a few
// words, not a tool's bookkeeping (last-applied configuration, a JSON or
// YAML blob, a checksum). Redacted, clipped, sorted by key, at most
// maxNotes.
func noteAnnotations(ann map[string]string) []string {
	var keys []string
	for k, v := range ann {
		v = strings.TrimSpace(v)
		if _, ok := annotationValue(k, v); !ok || len(v) < 12 || !strings.Contains(v, " ") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys[:min(maxNotes, len(keys))] {
		v, _ := annotationValue(k, ann[k])
		out = append(out, fmt.Sprintf("metadata.annotations.%s=%s", k, v))
	}
	return out
}

// annotationValue is an annotation's value as a report shows it (spaces
// folded, capped at maxFieldValue, redacted), and false for one never
// shown: empty, a JSON or YAML blob, the last applied configuration, a key
// that names a credential.
func annotationValue(k, v string) (string, bool) {
	v = strings.Join(strings.Fields(v), " ")
	if v == "" || strings.ContainsAny(v[:1], "{[") || strings.Contains(k, "last-applied") || sensitiveKeyRE.MatchString(k) {
		return "", false
	}
	if len(v) > maxFieldValue {
		v = textutil.Truncate(v, maxFieldValue) + "..."
	}
	return RedactText(v), true
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// sensitiveKeyRE: field names whose values are credentials, never shown.
var sensitiveKeyRE = regexp.MustCompile(`(?i)(password|passwd|token|apikey|api_key|privatekey|private_key|credential|secretvalue|^data$|^stringdata$)`)

// flatten appends "path=value" lines for the scalar leaves under v, in
// key order; status.conditions is left out (summarised as conditions).
func flatten(path string, v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if n, ok := x["name"].(string); ok && sensitiveEnv(n) {
			// A name/value pair (an env var, a parameter) whose name says
			// it holds a credential: its value is never shown.
			if _, has := x["value"]; has {
				c := make(map[string]any, len(x))
				for k, e := range x {
					c[k] = e
				}
				c["value"] = "<redacted>"
				x = c
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if p == "status.conditions" {
				continue
			}
			if sensitiveKeyRE.MatchString(k) {
				if _, scalar := x[k].(string); scalar {
					*out = append(*out, p+"=<redacted>")
					continue
				}
				if _, isMap := x[k].(map[string]any); isMap && (strings.EqualFold(k, "data") || strings.EqualFold(k, "stringData")) {
					*out = append(*out, p+"=<redacted>")
					continue
				}
			}
			flatten(p, x[k], out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", path, i), e, out)
		}
	case nil:
	default:
		val := RedactText(fmt.Sprint(x))
		if len(val) > maxFieldValue {
			val = textutil.Truncate(val, maxFieldValue) + "..."
		}
		*out = append(*out, path+"="+val)
	}
}

// managersOf returns the objects that own or manage ns/name of kind: its
// owners (custom kinds, resolved through the dynamic client) and custom
// resources of the namespace whose spec names it. Best effort: lookup
// errors leave a manager out.
func (s *Service) managersOf(ctx context.Context, ns, kind, name string, owners []metav1.OwnerReference) []facts.Resource {
	if !s.kindsAvailable() {
		return nil
	}
	var out []facts.Resource
	seen := map[string]bool{}
	add := func(u *unstructured.Unstructured, k string) {
		key := k + "/" + u.GetNamespace() + "/" + u.GetName()
		if seen[key] || len(out) >= maxManagers {
			return
		}
		seen[key] = true
		out = append(out, customFact(u, k))
	}
	for _, o := range owners {
		kr, err := s.be.Kinds.Resolve(ctx, o.Kind)
		if err != nil {
			continue // a built-in owner (ReplicaSet, ...) or unknown
		}
		onNS := ns
		if !kr.Namespaced {
			onNS = ""
		}
		if u, err := s.be.Dynamic.Resource(kr.GVR).Namespace(onNS).Get(ctx, o.Name, metav1.GetOptions{}); err == nil {
			add(u, kr.Kind)
		}
	}
	kinds, err := s.be.Kinds.Custom(ctx)
	if err != nil || ns == "" {
		return out
	}
	for _, kr := range kinds {
		if !kr.Namespaced || strings.EqualFold(kr.Kind, kind) {
			continue
		}
		list, err := s.be.Dynamic.Resource(kr.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			u := &list.Items[i]
			if spec, ok := u.Object["spec"]; ok && namesObject(spec, name) {
				add(u, kr.Kind)
			}
		}
	}
	return out
}

// namesObject reports whether a spec refers to name: a string field whose
// key names an object ("name", "secretName", "target.name", ...) equals it,
// or a host field (a mesh route's destination or mirror) names its Service.
func namesObject(v any, name string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if sv, ok := e.(string); ok {
				lk := strings.ToLower(k)
				if sv == name && strings.Contains(lk, "name") {
					return true
				}
				if strings.Contains(lk, "host") && (sv == name || strings.HasPrefix(sv, name+".")) {
					return true // a mesh route's host: the Service of that name
				}
				continue
			}
			if namesObject(e, name) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if namesObject(e, name) {
				return true
			}
		}
	}
	return false
}

// describeSecret describes a Secret's metadata only (type, key names,
// owners); values are never read into the result. A Secret the tools may
// not read (RBAC) or that does not exist still gets its managers.
func (s *Service) describeSecret(ctx context.Context, r *Result, res *facts.Resource, extra *[]facts.Resource) error {
	sec, err := s.be.Kube.CoreV1().Secrets(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	var owners []metav1.OwnerReference
	switch {
	case err == nil:
		owners = sec.OwnerReferences
		res.Owners = ownerStrings(owners)
		keys := make([]string, 0, len(sec.Data)+len(sec.StringData))
		for k := range sec.Data {
			keys = append(keys, k)
		}
		for k := range sec.StringData {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.Rawf("Name:       %s", sec.Name)
		r.Rawf("Namespace:  %s", sec.Namespace)
		r.Rawf("Type:       %s", sec.Type)
		r.Rawf("Data (names only): %s", strings.Join(keys, ", "))
		res.Signals = append(res.Signals, fmt.Sprintf("%d keys: %s", len(keys), strings.Join(keys, ", ")))
		if !sec.CreationTimestamp.IsZero() {
			res.Signals = append(res.Signals, "created "+sec.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"))
		}
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		r.Rawf("Secret %s/%s: %s", res.Namespace, res.Name, shortAPIErr(err))
	default:
		return err
	}
	mgrs := s.managersOf(ctx, res.Namespace, "Secret", res.Name, owners)
	if err != nil && len(mgrs) == 0 {
		return err
	}
	s.noteManagers(r, res, mgrs, extra)
	return nil
}

func shortAPIErr(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return "not found"
	case apierrors.IsForbidden(err):
		return "not readable (forbidden)"
	}
	return err.Error()
}

// noteManagers records managing objects on res and appends them to extra.
func (s *Service) noteManagers(r *Result, res *facts.Resource, mgrs []facts.Resource, extra *[]facts.Resource) {
	for _, m := range mgrs {
		ref := m.Kind + "/" + m.Name
		res.ManagedBy = appendUniqueStr(res.ManagedBy, ref)
		res.Signals = append(res.Signals, "managed by "+ref)
		r.Rawf("Managed by %s %s:", m.Kind, qualified(m.Namespace, m.Name))
		for _, l := range m.Signals {
			r.Rawf("  %s", l)
		}
		for _, c := range m.Conditions {
			r.Rawf("  condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		}
		*extra = append(*extra, m)
	}
	if len(mgrs) > 0 {
		r.Source(s.be.Source(backend.AreaResources))
	}
}

// maxSpecLines bounds the spec lines kept of one typed object.
const maxSpecLines = 32

// specLines flattens a typed object's notable annotations and spec into
// "path=value" lines (facts.Resource.Spec): redacted, empty values left
// out, at most maxSpecLines. nil when the object cannot be converted.
func specLines(obj runtime.Object, ann map[string]string) []string {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	var lines []string
	for _, n := range runNotes(ann) {
		lines = append(lines, "metadata.annotations."+n)
	}
	if spec, ok := u["spec"]; ok {
		var all []string
		flatten("spec", spec, &all)
		for _, l := range shallowFirst(all) {
			if strings.HasSuffix(l, "=") {
				continue
			}
			lines = append(lines, l)
		}
	}
	if len(lines) > maxSpecLines {
		lines = append(lines[:maxSpecLines], fmt.Sprintf("(%d more fields)", len(lines)-maxSpecLines))
	}
	return lines
}

// shallowFirst orders flattened "path=value" lines by the depth of their
// path, key order kept within a depth: an object's own settings (a
// CronJob's schedule and time zone) come before the details of the
// templates it nests, so a cap keeps them.
func shallowFirst(lines []string) []string {
	depth := func(l string) int {
		p, _, _ := strings.Cut(l, "=")
		return strings.Count(p, ".") + strings.Count(p, "[")
	}
	out := append([]string(nil), lines...)
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i]) < depth(out[j]) })
	return out
}

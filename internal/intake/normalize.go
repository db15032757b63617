package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/redact"
	"github.com/rcamesh/rcamesh/internal/target"
)

// Incident window around starts_at when the payload does not give one.
const (
	WindowBefore = 30 * time.Minute
	WindowAfter  = 15 * time.Minute
)

// Label and annotation keys of the fields that are not entities, in
// priority order (entities are read through internal/target's vocabulary).
var (
	envKeys     = []string{"env", "environment", "stage", "tier"}
	errorKeys   = []string{"error", "error_message", "exception", "message"}
	summaryKeys = []string{"summary", "message"}
	descKeys    = []string{"description", "details"}
)

// lookup returns the first non-empty value of keys in labels, then annotations.
func lookup(a *investigationv1.Alert, keys []string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(a.GetLabels()[k]); v != "" {
			return v
		}
	}
	for _, k := range keys {
		if v := strings.TrimSpace(a.GetAnnotations()[k]); v != "" {
			return v
		}
	}
	return ""
}

// finish derives the fields every format shares: identity, text, resource,
// window, fingerprint and noise classification.
func finish(a *investigationv1.Alert) {
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	mergeTextBlocks(a.Labels, a.Annotations, a.Description, a.Summary)
	redactAlert(a)
	a.Severity = strings.ToLower(firstNonEmpty(a.Severity, lookup(a, []string{"severity", "priority"})))
	a.ErrorMessage = firstNonEmpty(a.ErrorMessage, lookupAnn(a, errorKeys))
	a.Summary = firstNonEmpty(a.Summary, lookupAnn(a, summaryKeys))
	a.Description = firstNonEmpty(a.Description, lookupAnn(a, descKeys))
	resolveTargets(a)
	if !target.ValidNamespace(a.Namespace) {
		a.Namespace = "" // a cloud product's metric namespace ("AWS/ELB"), not a cluster's
	}
	a.Namespace = firstNonEmpty(a.Namespace, targetOf(a, target.Namespace))
	a.Service = firstNonEmpty(a.Service, targetOf(a, target.Service),
		targetOf(a, target.Deployment), targetOf(a, target.StatefulSet), targetOf(a, target.DaemonSet))
	a.Pod = firstNonEmpty(a.Pod, targetOf(a, target.Pod))
	a.Cluster = firstNonEmpty(a.Cluster, targetOf(a, target.Cluster))
	if a.Title == "" {
		a.Title = firstNonEmpty(a.Summary, a.AlertName)
	}
	if a.AlertName == "" {
		a.AlertName = a.Title
	}
	if a.ResourceKind == "" || a.ResourceName == "" {
		a.ResourceKind, a.ResourceName = resource(a)
	}
	if a.IncidentWindow == nil {
		a.IncidentWindow = window(a)
	}
	a.Fingerprint = Fingerprint(a)
	if !a.IsNoise {
		if reason := NoiseReason(a); reason != "" {
			a.IsNoise = true
			a.NoiseReason = reason
		}
	}
}

func lookupAnn(a *investigationv1.Alert, keys []string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(a.GetAnnotations()[k]); v != "" {
			return v
		}
	}
	return ""
}

// resource names the object the alert is about: a pod, a workload, a node or a database instance.
func resource(a *investigationv1.Alert) (kind, name string) {
	if a.Pod != "" {
		return "pod", a.Pod
	}
	if wt, wn := lookup(a, []string{"workload_type", "workload_kind"}), lookup(a, []string{"workload_name", "workload"}); wn != "" {
		return firstNonEmpty(strings.ToLower(wt), "deployment"), wn
	}
	for _, w := range []struct {
		kind target.Kind
		name string
	}{{target.Deployment, "deployment"}, {target.StatefulSet, "statefulset"}, {target.DaemonSet, "daemonset"}, {target.Job, "job"}, {target.CronJob, "cronjob"}} {
		if v := targetOf(a, w.kind); v != "" {
			return w.name, v
		}
	}
	if v := targetOf(a, target.Node); v != "" {
		return "node", v
	}
	if v := targetOf(a, target.Database); v != "" {
		return "db_instance", v
	}
	if v := lookup(a, []string{"resource_name", "resource"}); v != "" {
		return firstNonEmpty(strings.ToLower(lookup(a, []string{"resource_kind", "kind"})), "resource"), v
	}
	if a.Service != "" {
		return "service", a.Service
	}
	return "", ""
}

// window reads an explicit incident window from the annotations, else
// starts_at - 30m .. starts_at + 15m; nil when the alert carries no time.
func window(a *investigationv1.Alert) *evidencev1.TimeWindow {
	start, okS := parseTime(lookupAnn(a, []string{"incident_window_start", "window_start"}))
	end, okE := parseTime(lookupAnn(a, []string{"incident_window_end", "window_end"}))
	if okS && okE && end.After(start) {
		return &evidencev1.TimeWindow{Start: timestamppb.New(start), End: timestamppb.New(end)}
	}
	if a.StartsAt == nil {
		return nil
	}
	t := a.StartsAt.AsTime()
	if okS {
		return &evidencev1.TimeWindow{Start: timestamppb.New(start), End: timestamppb.New(t.Add(WindowAfter))}
	}
	return &evidencev1.TimeWindow{Start: timestamppb.New(t.Add(-WindowBefore)), End: timestamppb.New(t.Add(WindowAfter))}
}

// Fingerprint is a stable hash of an alert's identity: alert name, namespace,
// service or workload, cluster and environment. Wording, annotations, pod
// replicas and timestamps do not change it, so a storm of the same alert
// across replicas collapses to one fingerprint, while the same alert in
// another cluster or environment does not.
func Fingerprint(a *investigationv1.Alert) string {
	kind, name := a.GetResourceKind(), a.GetResourceName()
	if kind == "pod" {
		// Replicas of one workload are one incident: use the workload when known.
		kind, name = "", ""
		if wn := lookup(a, []string{"workload_name", "workload", "kube_deployment", "deployment", "kube_statefulset", "statefulset", "kube_daemonset", "daemonset"}); wn != "" {
			kind, name = "workload", wn
		}
	}
	if kind == "service" {
		kind, name = "", ""
	}
	parts := []string{
		"alertname=" + strings.ToLower(a.GetAlertName()),
		"namespace=" + strings.ToLower(a.GetNamespace()),
		"service=" + strings.ToLower(a.GetService()),
		"resource=" + strings.ToLower(kind+"/"+name),
		"cluster=" + strings.ToLower(a.GetCluster()),
		"env=" + strings.ToLower(lookup(a, envKeys)),
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:])[:24]
}

var heartbeatNames = map[string]bool{
	"watchdog": true, "deadmansswitch": true, "deadmanswitch": true, "infoinhibitor": true,
	"heartbeat": true, "testalert": true, "test": true,
}

// NoiseReason classifies an alert as noise and says why, or returns "".
// Noise: test / heartbeat / watchdog alerts, and informational alerts that
// describe no symptom. A resolved alert is no noise: it attaches to the
// open incident it ends, and one that ends no open incident (its firing
// was never investigated) is investigated, to say why it fired and
// whether anything still fails.
func NoiseReason(a *investigationv1.Alert) string {
	name := strings.ToLower(a.GetAlertName())
	compact := strings.NewReplacer(" ", "", "_", "", "-", "").Replace(name)
	if heartbeatNames[compact] {
		return "heartbeat/test alert: " + a.GetAlertName() + " fires continuously to prove the alerting pipeline works"
	}
	title := strings.ToLower(a.GetTitle())
	// A watchdog is an alert named so (above); a title that merely mentions a
	// heartbeat ("signalling heartbeat p99 2.1s") describes a real signal.
	for _, s := range []string{"[test]", "test alert", "test notification", "this is a test"} {
		if strings.Contains(title, s) || strings.Contains(name, s) {
			return "test/heartbeat alert: " + truncate(a.GetTitle(), 80)
		}
	}
	if strings.EqualFold(a.GetLabels()["test"], "true") {
		return "test alert: labelled test=true"
	}
	switch a.GetSeverity() {
	case "none", "info", "informational", "ok", "debug":
		if a.GetErrorMessage() == "" && a.GetSummary() == "" && a.GetDescription() == "" {
			return "informational: severity " + a.GetSeverity() + " and no symptom described"
		}
	}
	return ""
}

// ResolvedAnnotation lists the entities target resolution read from the
// alert's text, URLs or expressions rather than from its labels, with
// where each came from.
const ResolvedAnnotation = "rcamesh_resolved"

// resolveTargets reads the entities an alert names anywhere (embedded
// key=value pairs in a PagerDuty body or a Grafana annotation, PromQL
// selectors of its expression, in-cluster service URLs) and writes those its
// labels lack as annotations under the canonical key of their kind, so every
// later stage reads one vocabulary. Labels are never overridden.
func resolveTargets(a *investigationv1.Alert) {
	es := target.Extract(a.Labels, a.Annotations, target.Fields{
		"title": a.Title, "summary": a.Summary, "description": a.Description, "error_message": a.ErrorMessage,
	})
	var notes []string
	miss := target.Missing(a.Labels, es)
	kinds := make([]string, 0, len(miss))
	for k := range miss {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		e := miss[target.Kind(k)]
		key := target.CanonicalKey(e.Kind)
		if _, ok := a.Annotations[key]; ok || strings.HasPrefix(e.From, "annotation:") {
			continue
		}
		a.Annotations[key] = e.Value
		notes = append(notes, key+"="+e.Value+" ("+e.From+")")
	}
	if len(notes) > 0 {
		a.Annotations[ResolvedAnnotation] = strings.Join(notes, "; ")
	}
}

// targetOf is the value of the first label or annotation naming kind under
// any spelling of the vocabulary.
func targetOf(a *investigationv1.Alert, k target.Kind) string {
	return firstNonEmpty(target.Lookup(a.GetLabels(), k), target.Lookup(a.GetAnnotations(), k))
}

// GroupFingerprint identifies an incident made of several alerts: the
// fingerprints of its alerts, sorted and deduplicated, so the same group
// sent again (in any order) is the same incident.
func GroupFingerprint(alerts []*investigationv1.Alert) string {
	if len(alerts) == 1 {
		return alerts[0].GetFingerprint()
	}
	fps := make([]string, 0, len(alerts))
	seen := map[string]bool{}
	for _, a := range alerts {
		if fp := a.GetFingerprint(); !seen[fp] {
			seen[fp] = true
			fps = append(fps, fp)
		}
	}
	if len(fps) == 1 {
		return fps[0]
	}
	sort.Strings(fps)
	sum := sha256.Sum256([]byte("group\n" + strings.Join(fps, "\n")))
	return hex.EncodeToString(sum[:])[:24]
}

// redactAlert removes secrets from everything an alert carries before any
// stage sees it (labels, annotations, texts): an alert is outside input, and
// what it carries reaches pins, the stream, the store, reports and prompts.
// A label or annotation whose key names a credential is redacted whole.
func redactAlert(a *investigationv1.Alert) {
	for _, m := range []map[string]string{a.Labels, a.Annotations} {
		for k, v := range m {
			if redact.SensitiveKey(k) {
				m[k] = redact.Redacted
				continue
			}
			m[k] = redact.Text(v)
		}
	}
	for _, f := range []*string{&a.AlertName, &a.Title, &a.Summary, &a.Description, &a.ErrorMessage} {
		*f = redact.Text(*f)
	}
}

package brain

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/target"
)

// originResolve marks the cluster-wide discovery call of target resolution.
const originResolve = "resolve"

const intentListPods = string(intent.ListPods)

// reNameToken: a Kubernetes-style name in free text (lower case, digits,
// hyphens; at least one hyphen or four characters).
var reNameToken = regexp.MustCompile(`[a-z0-9](?:[a-z0-9-]*[a-z0-9])?`)

// resolveScope is target resolution's discovery step: an alert that names a
// workload (or only mentions it in its text) but no namespace is resolved
// against the pods of every namespace, instead of planning calls that need
// a namespace and then finding nothing. The discovery call is an ordinary
// tool call (recorded, pinned, cited); the namespace is adopted only when
// one namespace holds the best match. It returns what it decided, for the
// stage record; "" when there was nothing to resolve. Its error is a
// dependency failure (the tools service unavailable): the stage is retried.
func (s *Service) resolveScope(ctx context.Context, st *invState) (string, error) {
	a := st.rec.GetAlert()
	if st.isSub() {
		return "", nil
	}
	if a.GetNamespace() != "" {
		empty, err := s.emptyNamespace(ctx, st)
		if err != nil || !empty {
			if err != nil {
				return "", err
			}
			return s.resolveNamedPods(ctx, st)
		}
		// A namespace with no pod at all is the alerting tool's own
		// (a Sensu or Grafana tenancy namespace), not where the target
		// runs: the target is resolved cluster-wide, and the alert keeps
		// its namespace when nothing matches.
		a = proto.CloneOf(a)
		a.Namespace = ""
	}
	kind := strings.ToLower(a.GetResourceKind())
	if strings.HasPrefix(kind, "db") || kind == "database" {
		return "", nil // outside Kubernetes
	}
	names, fromText := scopeNames(a)
	if len(names) == 0 || kind == "node" && fromText {
		// Nothing to resolve, or a node alert (cluster-scoped) whose only
		// names are words of its text; a node alert that names a
		// workload by a label is resolved for that workload.
		return "", nil
	}
	if !s.canListPods(ctx, st) {
		return "namespace unknown; no pod listing tool to resolve it", nil
	}
	pods, pin, listed, err := s.resolvePods(ctx, st, "all")
	if err != nil {
		return "", err
	}
	if !listed {
		return "namespace unknown; cluster-wide pod listing failed", nil
	}
	if len(pods) == 0 {
		return "namespace unknown; no pods found cluster-wide", nil
	}
	ns, svc, why := matchScope(names, pods)
	if ns == "" {
		return "namespace unknown; " + why, nil
	}
	na := proto.CloneOf(a)
	note := ""
	if orig := st.rec.GetAlert().GetNamespace(); orig != "" && orig != ns {
		note = fmt.Sprintf("; the alert's namespace %s has no pods", orig)
	}
	na.Namespace = ns
	if na.GetService() == "" && svc != "" && !fromText {
		// Only a name the alert gives as a label becomes its service; a
		// workload found from the alert's prose scopes the namespace only
		// (the alert may be about an ingress, a route, a host).
		na.Service = svc
		if na.GetResourceKind() == "" {
			na.ResourceKind, na.ResourceName = "service", svc
		}
	}
	return st.adoptResolved(na, fmt.Sprintf("namespace=%s (%s, pin %s%s)", ns, why, pin, note)), nil
}

// emptyNamespace reports whether the alert's namespace holds no pod at all
// (listed, and empty); false when it cannot be listed.
func (s *Service) emptyNamespace(ctx context.Context, st *invState) (bool, error) {
	if !s.canListPods(ctx, st) {
		return false, nil
	}
	pods, _, listed, err := s.resolvePods(ctx, st, st.rec.GetAlert().GetNamespace())
	if err != nil || !listed {
		return false, err
	}
	return len(pods) == 0, nil
}

// adoptResolved makes na the investigation's alert, its resolution noted
// (after any earlier note) in its rcamesh_resolved annotation.
func (st *invState) adoptResolved(na *investigationv1.Alert, note string) string {
	if na.Annotations == nil {
		na.Annotations = map[string]string{}
	}
	if prev := na.Annotations["rcamesh_resolved"]; prev != "" {
		note = prev + "; " + note
	}
	na.Annotations["rcamesh_resolved"] = note
	st.rec.Alert = na
	st.rc = routerContext(na, st.rec.GetSessionId(), st.rec.GetInvestigationId(), st.rc)
	return "scope resolved: " + note
}

// resolvePods is target resolution's pod listing of namespace ns ("all"
// for every one): the pods and the pin that carries them; listed is false
// when the call failed or its pods do not decode; err is the tools service
// being unavailable (the stage is retried).
func (s *Service) resolvePods(ctx context.Context, st *invState, ns string) (pods []facts.Pod, pin string, listed bool, err error) {
	out := s.execute(ctx, st, pendingCall{Intent: intentListPods, Params: map[string]any{"namespace": ns}, Origin: originResolve}, 0)
	if out.unavailable {
		return nil, "", false, out.err
	}
	if out.err != nil || out.pin == nil {
		return nil, "", false, nil
	}
	if ok, derr := facts.Decode(out.pin.GetMetadata(), facts.KeyPods, &pods); !ok || derr != nil {
		return nil, "", false, nil
	}
	return pods, out.pin.GetId(), true, nil
}

// resolveNamedPods: an alert with a namespace whose labels name no pod,
// workload or service but whose text names pods of that namespace by
// their exact names ("primary changed (store-db-1 -> store-db-2)") is
// about those pods' workload, when they all belong to one.
func (s *Service) resolveNamedPods(ctx context.Context, st *invState) (string, error) {
	a := st.rec.GetAlert()
	if a.GetPod() == "" && a.GetService() != "" {
		return s.resolveUnknownService(ctx, st)
	}
	if a.GetPod() != "" || a.GetService() != "" {
		return "", nil
	}
	names, fromText := scopeNames(a)
	if !fromText || len(names) == 0 {
		return "", nil
	}
	var podLike []string
	for _, n := range names {
		if strings.Contains(n, "-") && hasDigit(n[strings.LastIndexByte(n, '-')+1:]) {
			podLike = append(podLike, n)
		}
	}
	if len(podLike) == 0 {
		return "", nil
	}
	if !s.canListPods(ctx, st) {
		return "", nil
	}
	pods, pin, listed, err := s.resolvePods(ctx, st, a.GetNamespace())
	if err != nil || !listed {
		return "", err
	}
	var named []facts.Pod
	for _, n := range podLike {
		for _, p := range pods {
			if p.Name == n {
				named = append(named, p)
			}
		}
	}
	workload := oneWorkload(named) // pods of several workloads: no single target
	if workload == "" {
		return "", nil
	}
	na := proto.CloneOf(a)
	na.Service = workload
	return st.adoptResolved(na, fmt.Sprintf("service=%s (the alert's text names its pod %s, pin %s)", workload, named[0].Name, pin)), nil
}

// canListPods: a tool serves the pod listing target resolution reads
// (unknown tool definitions count as yes: the call says).
func (s *Service) canListPods(ctx context.Context, st *invState) bool {
	defs := s.toolDefs(ctx, st.rec.GetSessionId())
	return defs == nil || defs[intentListPods] != nil
}

// oneWorkload is the workload every one of pods belongs to; "" when there
// are none, one is unowned, or they belong to several.
func oneWorkload(pods []facts.Pod) string {
	workload := ""
	for _, p := range pods {
		w := firstNonEmpty(p.Workload, p.OwnerName)
		if w == "" || workload != "" && w != workload {
			return ""
		}
		workload = w
	}
	return workload
}

// resolveUnknownService: an alert with a namespace whose service names no
// pod or workload there (a product name, a PagerDuty service, another
// naming scheme), in a namespace whose pods all belong to one workload, is
// about that workload.
func (s *Service) resolveUnknownService(ctx context.Context, st *invState) (string, error) {
	a := st.rec.GetAlert()
	if !s.canListPods(ctx, st) {
		return "", nil
	}
	pods, pin, listed, err := s.resolvePods(ctx, st, a.GetNamespace())
	if err != nil || !listed {
		return "", err
	}
	for _, p := range pods {
		if podMatches(p, a.GetService()) {
			return "", nil // the service is known here
		}
	}
	workload := oneWorkload(pods) // several workloads (or an unowned pod): no single target
	if workload == "" {
		return "", nil
	}
	na := proto.CloneOf(a)
	na.Service = workload
	if na.GetResourceKind() == "service" || na.GetResourceKind() == "" {
		na.ResourceKind, na.ResourceName = "service", workload
	}
	return st.adoptResolved(na, fmt.Sprintf("service=%s (the alert's service %s names nothing in %s, whose pods all belong to %s, pin %s)", workload, a.GetService(), a.GetNamespace(), workload, pin)), nil
}

// scopeNames are the names the alert gives its target, most specific
// first: pod, workload labels, service, resource; then name-like tokens of
// its text (title, summary, description) when no label names a workload.
func scopeNames(a *investigationv1.Alert) (names []string, fromText bool) {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" || seen[v] || len(v) > 253 {
			return
		}
		seen[v] = true
		out = append(out, v)
	}
	add(a.GetPod())
	for _, k := range []target.Kind{target.Deployment, target.StatefulSet, target.DaemonSet, target.CronJob, target.Job, target.Service, target.Container} {
		add(target.Lookup(a.GetLabels(), k))
		add(target.Lookup(a.GetAnnotations(), k))
	}
	add(a.GetService())
	if k := strings.ToLower(a.GetResourceKind()); k != "" && k != "node" {
		add(a.GetResourceName())
	}
	if j := a.GetLabels()["job"]; j != "" {
		add(j) // a Prometheus scrape job is usually named after the workload
	}
	if len(out) > 0 {
		return out, false
	}
	text := strings.ToLower(strings.Join([]string{a.GetAlertName(), a.GetTitle(), a.GetSummary(), a.GetDescription()}, " "))
	for _, tok := range reNameToken.FindAllString(text, -1) {
		if strings.Contains(tok, "-") || len(tok) >= 4 {
			add(tok)
		}
	}
	return out, true
}

// matchScope finds the namespace of the pods the names designate. A pod
// matches a name when it is that pod, belongs to a workload of that name,
// carries it as its app label, or is named <name>-<suffix>. Earlier names
// weigh more; the namespace with the highest weight wins when it is unique.
func matchScope(names []string, pods []facts.Pod) (ns, workload, why string) {
	type hit struct {
		weight   float64
		workload string
		name     string
	}
	byNS := map[string]*hit{}
	for i, n := range names {
		w := 1 / float64(i+1)
		for _, p := range pods {
			if !podMatches(p, n) {
				continue
			}
			h := byNS[p.Namespace]
			if h == nil {
				h = &hit{}
				byNS[p.Namespace] = h
			}
			if w > h.weight {
				h.weight, h.name = w, n
				h.workload = firstNonEmpty(p.Workload, p.Labels["app.kubernetes.io/name"], p.Labels["app"], n)
			}
		}
	}
	if len(byNS) == 0 {
		return "", "", fmt.Sprintf("no pod in any namespace matches %s", strings.Join(names[:min(len(names), 5)], ", "))
	}
	keys := make([]string, 0, len(byNS))
	for k := range byNS {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if byNS[keys[i]].weight != byNS[keys[j]].weight {
			return byNS[keys[i]].weight > byNS[keys[j]].weight
		}
		return keys[i] < keys[j]
	})
	if len(keys) > 1 && byNS[keys[0]].weight == byNS[keys[1]].weight {
		return "", "", fmt.Sprintf("%q matches pods in several namespaces (%s)", byNS[keys[0]].name, strings.Join(keys, ", "))
	}
	best := byNS[keys[0]]
	return keys[0], best.workload, fmt.Sprintf("pods of %q found cluster-wide only in namespace %s", best.name, keys[0])
}

func podMatches(p facts.Pod, name string) bool {
	if p.Name == name || p.Workload == name || p.OwnerName == name {
		return true
	}
	// A display name of the workload in another case and spelling
	// (HiveIngest, hive_ingest for hive-ingest).
	if folded := foldName(name); folded != "" && folded != name && (foldName(p.Workload) == folded || foldName(p.Labels["app"]) == folded || foldName(p.Labels["app.kubernetes.io/name"]) == folded) {
		return true
	}
	for _, k := range []string{"app", "app.kubernetes.io/name", "app.kubernetes.io/instance", "k8s-app", "component"} {
		if p.Labels[k] == name {
			return true
		}
	}
	if strings.HasPrefix(p.Name, name+"-") {
		rest := strings.TrimPrefix(p.Name, name+"-")
		// <name>-<hash>-<id> or <name>-<ordinal>: not a longer sibling name
		// like <name>-worker-<hash>-<id>.
		parts := strings.Split(rest, "-")
		return len(parts) <= 2 && (len(parts) == 1 || hasDigit(parts[0]) || len(parts[0]) >= 8)
	}
	return false
}

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

// foldName is a name without case and separators ("HiveIngest",
// "hive-ingest" and "hive_ingest" fold alike); "" for short names, which
// fold into too many others.
func foldName(n string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(n) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() < 5 {
		return ""
	}
	return b.String()
}

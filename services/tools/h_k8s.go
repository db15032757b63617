package tools

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// allNamespaces maps "all"/"*" to the empty namespace (every namespace).
func allNamespaces(ns string) string {
	if mesh.EveryNamespace(ns) {
		return ""
	}
	return ns
}

func isPattern(s string) bool { return strings.ContainsAny(s, "*?[") }

// nameMatches matches a name against an exact name or a glob pattern.
func nameMatches(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	if isPattern(pattern) {
		ok, err := path.Match(pattern, name)
		return err == nil && ok
	}
	return pattern == name
}

func (s *Service) listPods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := s.be.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods in %q: %w", nsLabel(ns), err)
	}
	return list.Items, nil
}

func nsLabel(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return ns
}

// nsScope is "namespace X" or "all namespaces".
func nsScope(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// podSeverity grades a pod's state.
func podSeverity(p facts.Pod) evidencev1.Severity {
	crit := p.OOMKilled
	high := p.Phase == "Failed" || p.Phase == "Unknown"
	for _, c := range p.Containers {
		switch c.Reason {
		case "CrashLoopBackOff", "OOMKilled":
			crit = true
		case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "Error", "ContainerCannotRun", "StartError":
			high = true
		}
	}
	switch {
	case crit:
		return evidencev1.Severity_SEVERITY_CRITICAL
	case high, p.Phase == "Pending", p.Reason == "Evicted":
		return evidencev1.Severity_SEVERITY_HIGH
	case !p.Ready && p.Phase != "Succeeded", p.Restarts > 0:
		return evidencev1.Severity_SEVERITY_MEDIUM
	}
	return evidencev1.Severity_SEVERITY_INFO
}

// podsResult fills r with pod facts and a table; it returns the unhealthy count.
func (s *Service) podsResult(r *Result, pods []facts.Pod) int {
	sort.Slice(pods, func(i, j int) bool {
		si, sj := podSeverity(pods[i]), podSeverity(pods[j])
		if si != sj {
			return si < sj
		}
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	r.Put(facts.KeyPods, pods)
	r.Rawf("%-12s %-50s %-9s %-6s %-8s %-28s %s", "NAMESPACE", "NAME", "PHASE", "READY", "RESTARTS", "REASON", "NODE")
	unhealthy := 0
	for _, p := range pods {
		sev := podSeverity(p)
		r.Escalate(sev)
		if sev <= evidencev1.Severity_SEVERITY_MEDIUM {
			unhealthy++
			for _, line := range podProblems(p) {
				r.Snippet(line)
			}
		}
		reason := p.Reason
		if p.OOMKilled && !strings.Contains(reason, "OOM") {
			reason = strings.TrimSpace(reason + " (OOMKilled)")
		}
		r.Rawf("%-12s %-50s %-9s %-6v %-8d %-28s %s", p.Namespace, p.Name, p.Phase, p.Ready, p.Restarts, reason, p.Node)
	}
	return unhealthy
}

func handleCheckPodStatus(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	pattern := c.Params.String("pod")
	items, err := s.listPods(ctx, ns, c.Params.String("label_selector"))
	if err != nil {
		return err
	}
	var pods []facts.Pod
	for i := range items {
		if pattern != "" && !nameMatches(pattern, items[i].Name) && !strings.HasPrefix(items[i].Name, pattern+"-") {
			continue
		}
		pods = append(pods, podFact(&items[i]))
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	scope := nsScope(ns)
	if sel := c.Params.String("label_selector"); sel != "" {
		scope += " (selector " + sel + ")"
	}
	if pattern != "" {
		scope += " matching " + pattern
	}
	if len(pods) == 0 {
		r.NoData = true
		r.Put(facts.KeyPods, []facts.Pod{})
		r.Summary = fmt.Sprintf("No pods found in %s.", scope)
		return nil
	}
	r.Source(s.be.Source(backend.AreaPods))
	unhealthy := s.podsResult(r, pods)
	if len(pods) == 1 {
		r.ResourceName = pods[0].Name
	}
	r.Summary = podSummary(pods, unhealthy, scope)
	return nil
}

func podSummary(pods []facts.Pod, unhealthy int, scope string) string {
	if unhealthy == 0 {
		return fmt.Sprintf("All %s in %s are healthy (running and ready, no restarts).", plural(len(pods), "pod", "pods"), scope)
	}
	worst := pods[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %s in %s unhealthy; worst: %s", unhealthy, plural(len(pods), "pod", "pods"), scope, worst.Name)
	var bits []string
	if worst.Phase != "" {
		bits = append(bits, "phase "+worst.Phase)
	}
	if worst.Reason != "" {
		bits = append(bits, worst.Reason)
	}
	if worst.OOMKilled {
		bits = append(bits, "OOMKilled")
	}
	if worst.Restarts > 0 {
		bits = append(bits, fmt.Sprintf("%d restarts", worst.Restarts))
	}
	if !worst.Ready {
		bits = append(bits, "not ready")
	}
	if len(bits) > 0 {
		b.WriteString(" (" + strings.Join(bits, ", ") + ")")
	}
	b.WriteString(".")
	return b.String()
}

func handleListPods(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	items, err := s.listPods(ctx, ns, c.Params.String("label_selector"))
	if err != nil {
		return err
	}
	onlyUnhealthy, _ := c.Params.Bool("unhealthy_only")
	var pods []facts.Pod
	for i := range items {
		p := podFact(&items[i])
		if onlyUnhealthy && podSeverity(p) > evidencev1.Severity_SEVERITY_MEDIUM {
			continue
		}
		pods = append(pods, p)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	scope := nsScope(ns)
	if len(items) == 0 {
		r.NoData = true
		r.Put(facts.KeyPods, []facts.Pod{})
		r.Summary = fmt.Sprintf("No pods found in %s.", scope)
		return nil
	}
	r.Source(s.be.Source(backend.AreaPods))
	if len(pods) == 0 {
		r.Put(facts.KeyPods, []facts.Pod{})
		r.Summary = fmt.Sprintf("All %s in %s are healthy.", plural(len(items), "pod", "pods"), scope)
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		return nil
	}
	unhealthy := s.podsResult(r, pods)
	r.Summary = podSummary(pods, unhealthy, scope)
	return nil
}

// eventsIn lists events of ns (all namespaces when ""), newest first.
func (s *Service) eventsIn(ctx context.Context, ns string) ([]corev1.Event, error) {
	list, err := s.be.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list events in %q: %w", nsLabel(ns), err)
	}
	return list.Items, nil
}

// hostNodeEvents are the events about the nodes that run the namespace's
// pods; best effort (errors leave them out).
func (s *Service) hostNodeEvents(ctx context.Context, ns string) []corev1.Event {
	pods, err := s.be.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			nodes[p.Spec.NodeName] = true
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	all, err := s.be.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []corev1.Event
	for _, e := range all.Items {
		if e.InvolvedObject.Kind == "Node" && nodes[e.InvolvedObject.Name] && e.Namespace != ns {
			out = append(out, e)
		}
	}
	return out
}

// parseInvolved splits "pod/name", "Pod/ns/name" or "name" into kind and name.
func parseInvolved(s string) (kind, name string) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	switch len(parts) {
	case 1:
		return "", parts[0]
	case 2:
		return canonicalKind(parts[0]), parts[1]
	default:
		return canonicalKind(parts[0]), parts[len(parts)-1]
	}
}

// canonicalKind maps kubectl kind spellings to the API Kind.
func canonicalKind(k string) string {
	switch strings.ToLower(k) {
	case "pod", "pods", "po":
		return "Pod"
	case "deployment", "deployments", "deploy":
		return "Deployment"
	case "replicaset", "replicasets", "rs":
		return "ReplicaSet"
	case "service", "services", "svc":
		return "Service"
	case "node", "nodes", "no":
		return "Node"
	case "configmap", "configmaps", "cm":
		return "ConfigMap"
	case "ingress", "ingresses", "ing":
		return "Ingress"
	case "networkpolicy", "networkpolicies", "netpol":
		return "NetworkPolicy"
	case "pvc", "pvcs", "persistentvolumeclaim", "persistentvolumeclaims":
		return "PersistentVolumeClaim"
	case "statefulset", "statefulsets", "sts":
		return "StatefulSet"
	case "daemonset", "daemonsets", "ds":
		return "DaemonSet"
	case "job", "jobs":
		return "Job"
	case "hpa", "hpas", "horizontalpodautoscaler", "horizontalpodautoscalers":
		return "HorizontalPodAutoscaler"
	case "pdb", "pdbs", "poddisruptionbudget", "poddisruptionbudgets":
		return "PodDisruptionBudget"
	}
	return k
}

// eventMatches filters by involved object: exact name, glob, or the name of
// a workload whose pods/replicasets carry it as prefix.
func eventMatches(e facts.Event, kind, name string) bool {
	if kind != "" && !strings.EqualFold(e.InvolvedKind, kind) {
		return false
	}
	if name == "" {
		return true
	}
	if nameMatches(name, e.InvolvedName) {
		return true
	}
	return kind == "" && strings.HasPrefix(e.InvolvedName, name+"-")
}

func inWindow(first, last *time.Time, w Window) bool {
	if first == nil && last == nil {
		return true
	}
	f, l := first, last
	if f == nil {
		f = l
	}
	if l == nil {
		l = f
	}
	return !l.Before(w.Start) && !f.After(w.End)
}

func sortEvents(evs []facts.Event) {
	sort.SliceStable(evs, func(i, j int) bool {
		wi, wj := evs[i].Type == corev1.EventTypeWarning, evs[j].Type == corev1.EventTypeWarning
		if wi != wj {
			return wi
		}
		return timeBefore(evs[j].LastSeen, evs[i].LastSeen)
	})
}

// severe event reasons (kubelet, scheduler, node controller).
var severeEventReasons = map[string]evidencev1.Severity{
	"OOMKilling": evidencev1.Severity_SEVERITY_CRITICAL, "OOMKilled": evidencev1.Severity_SEVERITY_CRITICAL,
	"SystemOOM": evidencev1.Severity_SEVERITY_CRITICAL, "NodeNotReady": evidencev1.Severity_SEVERITY_CRITICAL,
	"BackOff": evidencev1.Severity_SEVERITY_HIGH, "CrashLoopBackOff": evidencev1.Severity_SEVERITY_HIGH,
	"Failed": evidencev1.Severity_SEVERITY_HIGH, "FailedScheduling": evidencev1.Severity_SEVERITY_HIGH,
	"Unhealthy": evidencev1.Severity_SEVERITY_HIGH, "Evicted": evidencev1.Severity_SEVERITY_HIGH,
	"FailedCreate": evidencev1.Severity_SEVERITY_HIGH, "FailedMount": evidencev1.Severity_SEVERITY_MEDIUM,
	"FailedAttachVolume": evidencev1.Severity_SEVERITY_HIGH, "ProgressDeadlineExceeded": evidencev1.Severity_SEVERITY_HIGH,
	"Killing": evidencev1.Severity_SEVERITY_MEDIUM, "EvictionThresholdMet": evidencev1.Severity_SEVERITY_HIGH,
	"NodeHasDiskPressure": evidencev1.Severity_SEVERITY_HIGH, "NodeHasInsufficientMemory": evidencev1.Severity_SEVERITY_HIGH,
	"FailedKillPod": evidencev1.Severity_SEVERITY_MEDIUM, "ErrImagePull": evidencev1.Severity_SEVERITY_HIGH,
	"ImagePullBackOff": evidencev1.Severity_SEVERITY_HIGH, "FailedPostStartHook": evidencev1.Severity_SEVERITY_HIGH,
}

func eventSeverity(e facts.Event) evidencev1.Severity {
	if sev, ok := severeEventReasons[e.Reason]; ok && e.Type == corev1.EventTypeWarning {
		return sev
	}
	if e.Type == corev1.EventTypeWarning {
		return evidencev1.Severity_SEVERITY_MEDIUM
	}
	return evidencev1.Severity_SEVERITY_INFO
}

func eventLine(e facts.Event) string {
	obj := e.InvolvedName
	if e.InvolvedKind != "" {
		obj = strings.ToLower(e.InvolvedKind) + "/" + e.InvolvedName
	}
	count := ""
	if e.Count > 1 {
		count = fmt.Sprintf(" (x%d)", e.Count)
	}
	return fmt.Sprintf("%s %s %s %s%s: %s", fmtTime(e.LastSeen), e.Type, e.Reason, obj, count, e.Message)
}

func handleGetEvents(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	kind, name := parseInvolved(c.Params.String("involved_object"))
	typ := c.Params.String("type")
	reason := c.Params.String("reason")
	items, err := s.eventsIn(ctx, ns)
	if err != nil {
		return err
	}
	if ns != "" && name == "" {
		// Node events are cluster-scoped: the namespace's view includes the
		// events of the nodes its pods run on (a node flap or pressure
		// explains pod symptoms).
		items = append(items, s.hostNodeEvents(ctx, ns)...)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_EVENT, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	r.ResourceName = name
	var evs []facts.Event
	outside := 0
	for i := range items {
		e := eventFact(&items[i])
		if !eventMatches(e, kind, name) || (typ != "" && !strings.EqualFold(e.Type, typ)) || (reason != "" && !strings.EqualFold(e.Reason, reason)) {
			continue
		}
		if !inWindow(e.FirstSeen, e.LastSeen, c.Window) {
			outside++
			continue
		}
		evs = append(evs, e)
	}
	sortEvents(evs)
	scope := nsScope(ns)
	if name != "" {
		scope += " for " + strings.TrimPrefix(strings.ToLower(kind)+"/"+name, "/")
	}
	win := fmt.Sprintf("%s..%s", c.Window.Start.UTC().Format(time.RFC3339), c.Window.End.UTC().Format(time.RFC3339))
	if evs == nil {
		evs = []facts.Event{}
	}
	r.Put(facts.KeyEvents, evs)
	if len(evs) == 0 {
		r.NoData = true
		r.Summary = fmt.Sprintf("No Kubernetes events in %s during %s.", scope, win)
		if outside > 0 {
			r.Summary += fmt.Sprintf(" %s fell outside the window.", plural(outside, "event", "events"))
		}
		return nil
	}
	r.Source(s.be.Source(backend.AreaEvents))
	warnings := 0
	reasons := map[string]int32{}
	var order []string
	for _, e := range evs {
		r.Escalate(eventSeverity(e))
		r.Rawf("%s", eventLine(e))
		if e.Type == corev1.EventTypeWarning {
			warnings++
			if _, ok := reasons[e.Reason]; !ok {
				order = append(order, e.Reason)
			}
			reasons[e.Reason] += max(e.Count, 1)
			r.Snippet(eventLine(e))
		}
	}
	if warnings == 0 {
		r.Summary = fmt.Sprintf("%s in %s during %s, none of them warnings.", plural(len(evs), "event", "events"), scope, win)
		return nil
	}
	var parts []string
	for _, rs := range order {
		parts = append(parts, fmt.Sprintf("%s x%d", rs, reasons[rs]))
	}
	r.Summary = fmt.Sprintf("%s in %s during %s: %s.", plural(warnings, "warning event", "warning events"), scope, win, strings.Join(parts, ", "))
	if outside > 0 {
		r.Summary += fmt.Sprintf(" %s outside the window were left out.", plural(outside, "event", "events"))
	}
	return nil
}

// objectEvents returns the events whose involved object is kind/name, warnings first.
func (s *Service) objectEvents(ctx context.Context, ns, kind, name string) []facts.Event {
	items, err := s.eventsIn(ctx, ns)
	if err != nil {
		s.log.Debug("events for object unavailable", "kind", kind, "name", name, "err", err)
		return nil
	}
	var evs []facts.Event
	for i := range items {
		e := eventFact(&items[i])
		if strings.EqualFold(e.InvolvedKind, kind) && e.InvolvedName == name {
			evs = append(evs, e)
		}
	}
	sortEvents(evs)
	return evs
}

func handleListDeployments(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	name := c.Params.String("name")
	list, err := s.be.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: c.Params.String("label_selector")})
	if err != nil {
		return fmt.Errorf("list deployments in %q: %w", nsLabel(ns), err)
	}
	rsList, err := s.be.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.log.Debug("replicasets unavailable", "err", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	var deps []facts.Deployment
	for i := range list.Items {
		d := &list.Items[i]
		if name != "" && !nameMatches(name, d.Name) && !(facts.IsDeploymentPod(name) && facts.TrimReplicaSuffix(name) == d.Name) {
			continue // a Deployment pod's name names its Deployment
		}
		var rss = rsList
		if rss == nil {
			deps = append(deps, deploymentFact(d, nil))
			continue
		}
		deps = append(deps, deploymentFact(d, rss.Items))
	}
	if deps == nil {
		deps = []facts.Deployment{}
	}
	s.attachAutoscalers(ctx, ns, deps)
	r.Put(facts.KeyDeployments, deps)
	scope := nsScope(ns)
	if name != "" {
		scope = name + " in " + scope
	}
	if len(deps) == 0 {
		r.NoData = true
		r.Summary = fmt.Sprintf("No deployments found for %s.", scope)
		return nil
	}
	r.Source(s.be.Source(backend.AreaDeployments))
	if len(deps) == 1 {
		r.ResourceName = deps[0].Name
	}
	r.Rawf("%-12s %-36s %-8s %-6s %-8s %-10s %-11s %-8s %s", "NAMESPACE", "NAME", "DESIRED", "READY", "UPDATED", "AVAILABLE", "UNAVAILABLE", "REVISION", "IMAGES")
	degraded := 0
	var worst *facts.Deployment
	for i := range deps {
		d := &deps[i]
		r.Rawf("%-12s %-36s %-8d %-6d %-8d %-10d %-11d %-8s %s", d.Namespace, d.Name, d.Replicas, d.ReadyReplicas, d.UpdatedReplicas, d.AvailableReplicas, d.UnavailableReplicas, d.Revision, strings.Join(d.Images, ","))
		problems := deploymentProblems(*d)
		for _, c := range d.Conditions {
			r.Rawf("    condition %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, rev := range d.RolloutHistory {
			r.Rawf("    revision %s %s created %s replicas=%d images=%s", rev.Revision, rev.Name, fmtTime(rev.CreatedAt), rev.Replicas, strings.Join(rev.Images, ","))
		}
		for _, a := range d.Autoscalers {
			r.Rawf("    autoscaler %s: %s", a.Name, strings.Join(a.Signals, "; "))
			for _, c := range a.Conditions {
				r.Rawf("      %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		if len(problems) > 0 {
			degraded++
			if worst == nil {
				worst = d
			}
			for _, p := range problems {
				r.Snippet(fmt.Sprintf("deployment %s/%s: %s", d.Namespace, d.Name, p))
			}
			r.Escalate(deploymentSeverity(*d))
		}
	}
	if degraded == 0 {
		r.Summary = fmt.Sprintf("All %s for %s are fully available.", plural(len(deps), "deployment", "deployments"), scope)
		return nil
	}
	r.Summary = fmt.Sprintf("%d of %s for %s degraded; %s has %d/%d ready, %d unavailable.", degraded, plural(len(deps), "deployment", "deployments"), scope, worst.Name, worst.ReadyReplicas, worst.Replicas, worst.UnavailableReplicas)
	return nil
}

func deploymentProblems(d facts.Deployment) []string {
	var out []string
	if d.UnavailableReplicas > 0 || d.ReadyReplicas < d.Replicas {
		out = append(out, fmt.Sprintf("%d/%d replicas ready, %d unavailable", d.ReadyReplicas, d.Replicas, d.UnavailableReplicas))
	}
	for _, c := range d.Conditions {
		if (c.Type == "Available" || c.Type == "Progressing") && c.Status == "False" || c.Reason == "ProgressDeadlineExceeded" || c.Type == "ReplicaFailure" && c.Status == "True" {
			out = append(out, fmt.Sprintf("condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	// A status without updatedReplicas (0) says nothing about the rollout.
	if d.UpdatedReplicas > 0 && d.UpdatedReplicas < d.Replicas {
		out = append(out, fmt.Sprintf("rollout incomplete: %d/%d replicas updated", d.UpdatedReplicas, d.Replicas))
	}
	if d.Generation > 0 && d.ObservedGeneration > 0 && d.ObservedGeneration < d.Generation {
		out = append(out, fmt.Sprintf("rollout not yet observed by the controller (generation %d, observed %d)", d.Generation, d.ObservedGeneration))
	}
	return out
}

func deploymentSeverity(d facts.Deployment) evidencev1.Severity {
	if d.Replicas > 0 && d.AvailableReplicas == 0 {
		return evidencev1.Severity_SEVERITY_CRITICAL
	}
	for _, c := range d.Conditions {
		if c.Reason == "ProgressDeadlineExceeded" || (c.Type == "Available" && c.Status == "False") {
			return evidencev1.Severity_SEVERITY_HIGH
		}
	}
	if d.UnavailableReplicas > 0 || d.ReadyReplicas < d.Replicas {
		return evidencev1.Severity_SEVERITY_HIGH
	}
	return evidencev1.Severity_SEVERITY_MEDIUM
}

func nodeProblems(n facts.Node) (out []string, sev evidencev1.Severity) {
	sev = evidencev1.Severity_SEVERITY_INFO
	bump := func(s evidencev1.Severity) {
		if s < sev {
			sev = s
		}
	}
	if !n.Ready {
		msg := "NotReady"
		for _, c := range n.Conditions {
			if c.Type == "Ready" {
				msg = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		out = append(out, "node "+n.Name+" "+msg)
		bump(evidencev1.Severity_SEVERITY_CRITICAL)
	}
	for _, c := range n.Conditions {
		if c.Type != "Ready" && c.Status == "True" {
			out = append(out, fmt.Sprintf("node %s %s=True %s: %s", n.Name, c.Type, c.Reason, c.Message))
			bump(evidencev1.Severity_SEVERITY_HIGH)
		}
	}
	if n.Unschedulable {
		out = append(out, "node "+n.Name+" is cordoned (unschedulable)")
		bump(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	for _, t := range n.Taints {
		if strings.HasPrefix(t, "node.kubernetes.io/") || strings.HasPrefix(t, "node.cloudprovider.kubernetes.io/") {
			out = append(out, "node "+n.Name+" tainted "+t)
			bump(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
	return out, sev
}

func handleGetNodeHealth(ctx context.Context, s *Service, c *Call, r *Result) error {
	name := c.Params.String("name")
	list, err := s.be.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.Params.String("label_selector")})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_COMPUTE
	var nodes []facts.Node
	for i := range list.Items {
		if nameMatches(name, list.Items[i].Name) {
			nodes = append(nodes, nodeFact(&list.Items[i]))
		}
	}
	if nodes == nil {
		nodes = []facts.Node{}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	r.Put(facts.KeyNodes, nodes)
	if len(nodes) == 0 {
		r.NoData = true
		r.Summary = "No nodes found" + map[bool]string{true: " matching " + name, false: ""}[name != ""] + "."
		return nil
	}
	r.Source(s.be.Source(backend.AreaNodes))
	if len(nodes) == 1 {
		r.ResourceName = nodes[0].Name
	}
	r.Rawf("%-48s %-6s %-14s %-14s %s", "NAME", "READY", "INSTANCE", "SCHEDULABLE", "CONDITIONS / TAINTS")
	var bad []string
	for _, n := range nodes {
		var conds []string
		for _, c := range n.Conditions {
			conds = append(conds, c.Type+"="+c.Status)
		}
		r.Rawf("%-48s %-6v %-14s %-14v %s %s", n.Name, n.Ready, n.InstanceType, !n.Unschedulable, strings.Join(conds, ","), strings.Join(n.Taints, ","))
		r.Rawf("    capacity %v allocatable %v", n.Capacity, n.Allocatable)
		problems, sev := nodeProblems(n)
		r.Escalate(sev)
		if len(problems) > 0 {
			bad = append(bad, n.Name)
			for _, p := range problems {
				r.Snippet(p)
			}
		}
	}
	if len(bad) == 0 {
		r.Summary = fmt.Sprintf("All %s are Ready with no pressure conditions.", plural(len(nodes), "node", "nodes"))
		return nil
	}
	r.Summary = fmt.Sprintf("%d of %s unhealthy: %s.", len(bad), plural(len(nodes), "node", "nodes"), strings.Join(r.Snippets[:min(len(r.Snippets), 3)], "; "))
	return nil
}

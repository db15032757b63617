package tools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// describeKinds are the built-in kinds describe_resource has handlers for
// (a Secret: metadata and key names only, never values); any other kind is
// read through the dynamic client.
var describeKinds = []string{"pod", "deployment", "service", "node", "configmap", "secret", "ingress", "pvc", "networkpolicy", "pdb", "hpa"}

func kindDomain(kind string) evidencev1.Domain {
	switch kind {
	case "service", "ingress", "networkpolicy":
		return evidencev1.Domain_DOMAIN_NETWORK
	case "pvc":
		return evidencev1.Domain_DOMAIN_STORAGE
	}
	return evidencev1.Domain_DOMAIN_COMPUTE
}

func handleDescribeResource(ctx context.Context, s *Service, c *Call, r *Result) error {
	kind := strings.ToLower(c.Params.String("kind"))
	name := c.Params.String("name")
	ns := c.Params.String("namespace")
	if k, n := parseInvolved(name); k != "" {
		name = n // "pod/x" given as name
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, kindDomain(kind)
	r.Namespace, r.ResourceName = ns, name
	res := facts.Resource{Kind: canonicalKind(kind), Namespace: ns, Name: name}
	if kind == "node" {
		res.Namespace = ""
	}
	kind = builtinKind(kind)
	if ns == "" && kind != "node" && slices.Contains(describeKinds, kind) {
		return fmt.Errorf("namespace is required to describe a %s", res.Kind)
	}
	area := backend.AreaResources
	var err error
	var extra []facts.Resource // objects described along the way (an ingress's backend services)
	switch kind {
	case "pdb":
		err = s.describePDB(ctx, r, &res)
	case "hpa":
		err = s.describeHPA(ctx, r, &res)
	case "pod":
		area = backend.AreaPods
		err = s.describePod(ctx, r, &res)
	case "deployment":
		area = backend.AreaDeployments
		err = s.describeDeployment(ctx, r, &res)
		if err == nil {
			// The custom resources whose spec names it (a mesh route that
			// sends it traffic, or only a mirror of it).
			s.noteManagers(r, &res, s.managersOf(ctx, res.Namespace, "Deployment", res.Name, nil), &extra)
		}
	case "service":
		err = s.describeService(ctx, r, &res)
	case "node":
		area = backend.AreaNodes
		err = s.describeNode(ctx, r, &res)
	case "configmap":
		if name == "" || name == "*" {
			// Every ConfigMap of the namespace: the configuration the
			// workloads there read, mounted or not.
			var cms []facts.Resource
			cms, err = s.describeConfigMaps(ctx, r, ns)
			if err == nil && len(cms) == 0 {
				err = apierrors.NewNotFound(corev1.Resource("configmaps"), "*")
			}
			if len(cms) > 0 {
				res, extra = cms[0], cms[1:]
			}
			break
		}
		err = s.describeConfigMap(ctx, r, &res, &extra)
	case "secret":
		err = s.describeSecret(ctx, r, &res, &extra)
	case "ingress":
		err = s.describeIngress(ctx, r, &res, &extra)
	case "pvc":
		err = s.describePVC(ctx, r, &res)
	case "networkpolicy":
		var pols []facts.Resource
		pols, err = s.describeNetworkPolicies(ctx, r, ns, name)
		if err == nil && len(pols) == 0 {
			err = apierrors.NewNotFound(networkingv1.Resource("networkpolicies"), name)
		}
		if len(pols) > 0 {
			res, extra = pols[0], pols[1:]
		}
	default:
		if kind == "" {
			return fmt.Errorf("kind is empty (one of %s, or a custom resource kind)", strings.Join(describeKinds, ", "))
		}
		err = s.describeCustom(ctx, r, &res, kind, &extra)
	}
	if apierrors.IsNotFound(err) {
		r.NoData = true
		r.Put(facts.KeyResources, []facts.Resource{})
		where := ""
		if res.Namespace != "" {
			where = " in namespace " + res.Namespace
		}
		r.Summary = fmt.Sprintf("%s %s not found%s.", res.Kind, name, where)
		if name == "" || name == "*" {
			r.Summary = fmt.Sprintf("No %s found%s.", res.Kind, where) // a listing that found none
		}
		r.Rawf("Error from server (NotFound): %s %q not found", strings.ToLower(res.Kind), name)
		return nil
	}
	if err != nil {
		return err
	}
	more := ""
	if (name == "" || name == "*") && res.Name != "" && res.Name != "*" {
		// A listing: the first object's name stands for it (the others
		// follow in the same pin).
		name = res.Name
		if len(extra) > 0 {
			more = fmt.Sprintf(" (and %d more)", len(extra))
		}
	}
	res.Events = s.objectEvents(ctx, eventNamespace(res), res.Kind, name)
	r.Put(facts.KeyResources, append([]facts.Resource{res}, extra...))
	r.Source(s.be.Source(area))
	if len(res.Events) > 0 {
		r.Source(s.be.Source(backend.AreaEvents))
		r.Rawf("Events:")
		for _, e := range res.Events {
			r.Rawf("  %s", eventLine(e))
			if e.Type == corev1.EventTypeWarning {
				r.Snippet(eventLine(e))
				r.Escalate(eventSeverity(e))
			}
		}
	} else {
		r.Rawf("Events: <none>")
	}
	for _, sig := range res.Signals {
		r.Snippet(sig)
	}
	if r.Severity == evidencev1.Severity_SEVERITY_UNSPECIFIED {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
	}
	lead := fmt.Sprintf("%s %s%s", res.Kind, qualified(res.Namespace, name), more)
	switch {
	case len(res.Signals) > 0:
		r.Summary = fmt.Sprintf("%s: %s.", lead, strings.Join(res.Signals[:min(3, len(res.Signals))], "; "))
	default:
		r.Summary = fmt.Sprintf("%s shows no problem signals.", lead)
	}
	if w := countWarnings(res.Events); w > 0 {
		r.Summary += fmt.Sprintf(" %s.", plural(w, "warning event", "warning events"))
	}
	return nil
}

func eventNamespace(res facts.Resource) string {
	return res.Namespace // nodes: "" = every namespace
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func countWarnings(evs []facts.Event) int {
	n := 0
	for _, e := range evs {
		if e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}

func condFacts[T any](conds []T, conv func(T) facts.Condition) []facts.Condition {
	var out []facts.Condition
	for _, c := range conds {
		out = append(out, conv(c))
	}
	return out
}

func (s *Service) describePod(ctx context.Context, r *Result, res *facts.Resource) error {
	p, err := s.be.Kube.CoreV1().Pods(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pf := podFact(p)
	res.Owners = ownerStrings(p.OwnerReferences)
	r.Put(facts.KeyPods, []facts.Pod{pf})
	r.Escalate(podSeverity(pf))
	res.Conditions = pf.Conditions
	prefix := fmt.Sprintf("pod %s/%s", pf.Namespace, pf.Name)
	for _, sig := range podProblems(pf) {
		res.Signals = append(res.Signals, strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(sig, prefix), ":")))
	}
	r.Rawf("Name:         %s", p.Name)
	r.Rawf("Namespace:    %s", p.Namespace)
	r.Rawf("Node:         %s", p.Spec.NodeName)
	r.Rawf("Status:       %s %s", pf.Phase, pf.Reason)
	r.Rawf("Controlled By: %s/%s", pf.OwnerKind, pf.OwnerName)
	r.Rawf("Labels:       %s", labels.Set(p.Labels).String())
	r.Rawf("Containers:")
	for _, c := range pf.Containers {
		r.Rawf("  %s: image=%s state=%s %s ready=%v restarts=%d", c.Name, c.Image, c.State, c.Reason, c.Ready, c.RestartCount)
		if c.LastReason != "" {
			r.Rawf("    Last State: terminated %s exit=%s finished=%s", c.LastReason, exitText(c.LastExitCode), fmtTime(c.LastFinishedAt))
		}
		r.Rawf("    Requests: cpu=%s memory=%s  Limits: cpu=%s memory=%s", c.RequestsCPU, c.RequestsMemory, c.LimitsCPU, c.LimitsMemory)
		if c.LivenessProbe != "" {
			r.Rawf("    Liveness:  %s", c.LivenessProbe)
		}
		if c.ReadinessProbe != "" {
			r.Rawf("    Readiness: %s", c.ReadinessProbe)
		}
		if len(c.ConfigMaps)+len(c.Secrets) > 0 {
			r.Rawf("    ConfigMaps: %s  Secrets (names only): %s", strings.Join(c.ConfigMaps, ","), strings.Join(c.Secrets, ","))
		}
	}
	r.Rawf("Conditions:")
	for _, c := range pf.Conditions {
		r.Rawf("  %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return nil
}

func (s *Service) describeDeployment(ctx context.Context, r *Result, res *facts.Resource) error {
	d, err := s.be.Kube.AppsV1().Deployments(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	rsList, err := s.be.Kube.AppsV1().ReplicaSets(res.Namespace).List(ctx, metav1.ListOptions{})
	var df facts.Deployment
	if err == nil {
		df = deploymentFact(d, rsList.Items)
	} else {
		df = deploymentFact(d, nil)
	}
	deps := []facts.Deployment{df}
	s.attachAutoscalers(ctx, res.Namespace, deps)
	df = deps[0]
	r.Put(facts.KeyDeployments, deps)
	res.Owners = ownerStrings(d.OwnerReferences)
	res.Conditions = df.Conditions
	res.Signals = deploymentProblems(df)
	if len(res.Signals) > 0 {
		r.Escalate(deploymentSeverity(df))
	}
	if d.Spec.Paused {
		res.Signals = append(res.Signals, "rollout is paused")
	}
	r.Rawf("Name:       %s", d.Name)
	r.Rawf("Namespace:  %s", d.Namespace)
	r.Rawf("Replicas:   %d desired | %d updated | %d ready | %d available | %d unavailable", df.Replicas, df.UpdatedReplicas, df.ReadyReplicas, df.AvailableReplicas, df.UnavailableReplicas)
	r.Rawf("Revision:   %s", df.Revision)
	r.Rawf("Strategy:   %s", d.Spec.Strategy.Type)
	r.Rawf("Selector:   %s", metav1.FormatLabelSelector(d.Spec.Selector))
	r.Rawf("Images:     %s", strings.Join(df.Images, ", "))
	r.Rawf("Conditions:")
	for _, c := range df.Conditions {
		r.Rawf("  %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, a := range df.Autoscalers {
		r.Rawf("Autoscaler %s: %s", a.Name, strings.Join(a.Signals, "; "))
		for _, c := range a.Conditions {
			r.Rawf("  %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if len(df.RolloutHistory) > 0 {
		r.Rawf("Rollout history:")
		for _, rev := range df.RolloutHistory {
			r.Rawf("  revision %s %s created %s replicas=%d images=%s", rev.Revision, rev.Name, fmtTime(rev.CreatedAt), rev.Replicas, strings.Join(rev.Images, ","))
		}
	}
	return nil
}

func (s *Service) describeService(ctx context.Context, r *Result, res *facts.Resource) error {
	svc, err := s.be.Kube.CoreV1().Services(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s %d->%s/%s", p.Name, p.Port, p.TargetPort.String(), p.Protocol))
	}
	r.Rawf("Name:       %s", svc.Name)
	r.Rawf("Namespace:  %s", svc.Namespace)
	r.Rawf("Type:       %s", svc.Spec.Type)
	r.Rawf("ClusterIP:  %s", svc.Spec.ClusterIP)
	r.Rawf("Ports:      %s", strings.Join(ports, ", "))
	r.Rawf("Selector:   %s", labels.Set(svc.Spec.Selector).String())
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		res.Signals = append(res.Signals, "load balancer has no ingress address yet")
		r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	if len(svc.Spec.Selector) == 0 {
		r.Rawf("Endpoints:  (no selector: endpoints are managed externally)")
		return nil
	}
	pods, err := s.be.Kube.CoreV1().Pods(res.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(svc.Spec.Selector).String()})
	if err != nil {
		return fmt.Errorf("list pods behind service %s: %w", svc.Name, err)
	}
	ready, total := 0, len(pods.Items)
	var backing []facts.Pod
	for i := range pods.Items {
		pf := podFact(&pods.Items[i])
		backing = append(backing, pf)
		if pf.Ready {
			ready++
		}
	}
	if backing != nil {
		r.Put(facts.KeyPods, backing)
	}
	r.Rawf("Endpoints:  %d ready of %d selected pods", ready, total)
	for _, sig := range localTrafficPolicies(svc, backing) {
		r.Rawf("Traffic:    %s", strings.TrimPrefix(sig, facts.SignalLocalTraffic))
		res.Signals = append(res.Signals, sig)
	}
	if sig := unservedTargetPorts(svc, pods.Items); sig != "" {
		res.Signals = append(res.Signals, sig)
		r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
	}
	switch {
	case total == 0:
		sel := labels.Set(svc.Spec.Selector).String()
		res.Signals = append(res.Signals, "selector "+sel+" matches no pods: the service has no endpoints")
		if near := s.podsLabelledLike(ctx, res.Namespace, svc.Spec.Selector); near != "" {
			res.Signals = append(res.Signals, near)
		}
		r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
	case ready == 0:
		res.Signals = append(res.Signals, fmt.Sprintf("none of %d selected pods is ready: the service has no ready endpoints", total))
		r.Escalate(evidencev1.Severity_SEVERITY_CRITICAL)
	case ready < total:
		res.Signals = append(res.Signals, fmt.Sprintf("%d of %d selected pods not ready", total-ready, total))
		r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	return nil
}

func (s *Service) describeNode(ctx context.Context, r *Result, res *facts.Resource) error {
	n, err := s.be.Kube.CoreV1().Nodes().Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	nf := nodeFact(n)
	r.Put(facts.KeyNodes, []facts.Node{nf})
	problems, sev := nodeProblems(nf)
	r.Escalate(sev)
	res.Conditions = nf.Conditions
	res.Signals = problems
	r.Rawf("Name:          %s", n.Name)
	r.Rawf("InstanceType:  %s", nf.InstanceType)
	r.Rawf("Unschedulable: %v", nf.Unschedulable)
	r.Rawf("Taints:        %s", strings.Join(nf.Taints, ", "))
	r.Rawf("Capacity:      %v", nf.Capacity)
	r.Rawf("Allocatable:   %v", nf.Allocatable)
	r.Rawf("Conditions:")
	for _, c := range nf.Conditions {
		r.Rawf("  %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	// Pods on the node: where the node's trouble lands.
	pods, err := s.be.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err == nil {
		var on []facts.Pod
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName == n.Name {
				on = append(on, podFact(&pods.Items[i]))
			}
		}
		if len(on) > 0 {
			r.Put(facts.KeyPods, on)
			r.Rawf("Pods on node: %d", len(on))
			for _, p := range on {
				r.Rawf("  %s/%s phase=%s ready=%v restarts=%d %s", p.Namespace, p.Name, p.Phase, p.Ready, p.Restarts, p.Reason)
			}
		}
	}
	return nil
}

func (s *Service) describeConfigMap(ctx context.Context, r *Result, res *facts.Resource, extra *[]facts.Resource) error {
	cm, err := s.be.Kube.CoreV1().ConfigMaps(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	res.Owners = ownerStrings(cm.OwnerReferences)
	defer func() {
		s.noteManagers(r, res, s.managersOf(ctx, cm.Namespace, "ConfigMap", cm.Name, cm.OwnerReferences), extra)
	}()
	keys := configMapData(r, cm, res)
	res.Signals = append(res.Signals, fmt.Sprintf("%d keys: %s", len(keys), strings.Join(keys, ", ")))
	if !cm.CreationTimestamp.IsZero() {
		res.Signals = append(res.Signals, "created "+cm.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return nil
}

// configMapData fills res.Data with the ConfigMap's data (values redacted
// of secrets, binary data by its size) and writes them to the raw output;
// it returns the keys, sorted.
func configMapData(r *Result, cm *corev1.ConfigMap, res *facts.Resource) []string {
	res.Data = map[string]string{}
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		res.Data[k] = RedactText(v)
		keys = append(keys, k)
	}
	for k, v := range cm.BinaryData {
		res.Data[k] = fmt.Sprintf("<binary %d bytes>", len(v))
		keys = append(keys, k)
	}
	sort.Strings(keys)
	r.Rawf("Name:       %s", cm.Name)
	r.Rawf("Namespace:  %s", cm.Namespace)
	r.Rawf("Data (%d keys):", len(keys))
	for _, k := range keys {
		r.Rawf("%s:\n----\n%s\n", k, res.Data[k])
	}
	return keys
}

// maxListedConfigMaps bounds the ConfigMaps one listing describes.
const maxListedConfigMaps = 16

// describeConfigMaps describes the namespace's ConfigMaps, by name, at
// most maxListedConfigMaps; the cluster's own (the root CA bundle every
// namespace gets, kube-* objects) are left out.
func (s *Service) describeConfigMaps(ctx context.Context, r *Result, ns string) ([]facts.Resource, error) {
	l, err := s.be.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := l.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	var out []facts.Resource
	for i := range items {
		cm := &items[i]
		if cm.Name == "kube-root-ca.crt" || strings.HasPrefix(cm.Name, "kube-") {
			continue
		}
		if len(out) >= maxListedConfigMaps {
			r.Rawf("(%d more ConfigMaps not described)", len(items)-i)
			break
		}
		res := facts.Resource{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, Owners: ownerStrings(cm.OwnerReferences), Listed: true}
		configMapData(r, cm, &res)
		// No signals: a listing's objects are read for their settings
		// (the report quotes the lines the failure's words name), and a
		// key count of each would crowd out the findings of others.
		out = append(out, res)
	}
	return out, nil
}

func (s *Service) describeIngress(ctx context.Context, r *Result, res *facts.Resource, extra *[]facts.Resource) error {
	ing, err := s.be.Kube.NetworkingV1().Ingresses(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	class := ""
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	res.Spec = specLines(ing, ing.Annotations)
	r.Rawf("Name:       %s", ing.Name)
	r.Rawf("Namespace:  %s", ing.Namespace)
	r.Rawf("Class:      %s", class)
	var backends []string
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			if p.Backend.Service != nil {
				port := p.Backend.Service.Port.Name
				if port == "" {
					port = fmt.Sprint(p.Backend.Service.Port.Number)
				}
				r.Rawf("  %s%s -> %s:%s", rule.Host, p.Path, p.Backend.Service.Name, port)
				backends = append(backends, p.Backend.Service.Name)
			}
		}
	}
	for _, t := range ing.Spec.TLS {
		r.Rawf("  TLS %s (secret %s)", strings.Join(t.Hosts, ","), t.SecretName)
	}
	if len(ing.Status.LoadBalancer.Ingress) == 0 {
		res.Signals = append(res.Signals, "ingress has no load balancer address")
		r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	for _, b := range uniq(backends) {
		if _, err := s.be.Kube.CoreV1().Services(res.Namespace).Get(ctx, b, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			res.Signals = append(res.Signals, "backend service "+b+" does not exist")
			r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
			continue
		}
		// The backend's endpoints: an ingress answers 503 when its Service
		// selects no ready pod.
		svc := facts.Resource{Kind: "Service", Namespace: res.Namespace, Name: b}
		if err := s.describeService(ctx, r, &svc); err != nil {
			return fmt.Errorf("describe backend service %s: %w", b, err)
		}
		for _, sig := range svc.Signals {
			res.Signals = append(res.Signals, "backend service "+b+": "+sig)
		}
		*extra = append(*extra, svc)
	}
	return nil
}

func (s *Service) describePVC(ctx context.Context, r *Result, res *facts.Resource) error {
	pvc, err := s.be.Kube.CoreV1().PersistentVolumeClaims(res.Namespace).Get(ctx, res.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sc := ""
	if pvc.Spec.StorageClassName != nil {
		sc = *pvc.Spec.StorageClassName
	}
	capacity := ""
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		capacity = q.String()
	}
	requested := ""
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		requested = q.String()
	}
	res.Conditions = condFacts(pvc.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) facts.Condition {
		return facts.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	})
	r.Rawf("Name:          %s", pvc.Name)
	r.Rawf("Namespace:     %s", pvc.Namespace)
	r.Rawf("StorageClass:  %s", sc)
	r.Rawf("Status:        %s", pvc.Status.Phase)
	r.Rawf("Volume:        %s", pvc.Spec.VolumeName)
	r.Rawf("Capacity:      %s (requested %s)", capacity, requested)
	r.Rawf("Access Modes:  %v", pvc.Spec.AccessModes)
	switch pvc.Status.Phase {
	case corev1.ClaimPending:
		res.Signals = append(res.Signals, "claim is Pending: no volume bound")
		r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
	case corev1.ClaimLost:
		res.Signals = append(res.Signals, "claim is Lost: its volume is gone")
		r.Escalate(evidencev1.Severity_SEVERITY_CRITICAL)
	}
	for _, c := range res.Conditions {
		if c.Status == "True" && c.Type != "" {
			res.Signals = append(res.Signals, fmt.Sprintf("condition %s %s", c.Type, c.Message))
		}
	}
	return nil
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// podsLabelledLike finds the pods a selector that matches nothing was most
// likely meant for: pods of the namespace carrying one of the selector's
// values under another key (app=x vs app.kubernetes.io/name=x). It returns
// one line naming them and their labels, or "".
func (s *Service) podsLabelledLike(ctx context.Context, ns string, sel map[string]string) string {
	pods, err := s.be.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	var names []string
	var carried []string
	for i := range pods.Items {
		p := &pods.Items[i]
		hit := false
		for k, v := range p.Labels {
			for sk, sv := range sel {
				if v == sv && k != sk {
					hit = true
					carried = appendUniqueStr(carried, k+"="+v)
				}
			}
		}
		if hit {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(carried)
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(names)-3))
	}
	return fmt.Sprintf("pods %s carry %s instead (labels changed: the selector no longer matches them)", strings.Join(names, ", "), strings.Join(carried, ", "))
}

func appendUniqueStr(xs []string, v string) []string {
	for _, x := range xs {
		if x == v {
			return xs
		}
	}
	return append(xs, v)
}

// describeNetworkPolicies describes one NetworkPolicy, or every policy of the
// namespace when name is "*" or empty: which pods it selects, the directions
// it restricts, what it still allows and when it was created.
func (s *Service) describeNetworkPolicies(ctx context.Context, r *Result, ns, name string) ([]facts.Resource, error) {
	var items []networkingv1.NetworkPolicy
	if name == "" || name == "*" {
		l, err := s.be.Kube.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		items = l.Items
	} else {
		p, err := s.be.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		items = []networkingv1.NetworkPolicy{*p}
	}
	var out []facts.Resource
	for i := range items {
		p := &items[i]
		res := facts.Resource{Kind: "NetworkPolicy", Namespace: p.Namespace, Name: p.Name}
		if !p.CreationTimestamp.IsZero() {
			t := p.CreationTimestamp.UTC()
			res.CreatedAt = &t
		}
		var types []string
		for _, t := range p.Spec.PolicyTypes {
			types = append(types, string(t))
		}
		if len(types) == 0 {
			types = []string{"Ingress"}
			if len(p.Spec.Egress) > 0 {
				types = append(types, "Egress")
			}
		}
		sel := metav1.FormatLabelSelector(&p.Spec.PodSelector)
		if sel == "<none>" || sel == "" {
			sel = "all pods"
		}
		r.Rawf("NetworkPolicy %s/%s: selects %s; types %s; created %s", p.Namespace, p.Name, sel, strings.Join(types, ","), p.CreationTimestamp.UTC().Format(time.RFC3339))
		res.Signals = append(res.Signals, fmt.Sprintf("selects %s in %s; restricts %s", sel, p.Namespace, strings.Join(types, " and ")))
		for _, t := range types {
			if t != string(networkingv1.PolicyTypeEgress) {
				continue
			}
			var allows []string
			for _, rule := range p.Spec.Egress {
				allows = append(allows, peerText(rule.To, rule.Ports))
			}
			if len(allows) == 0 {
				res.Signals = append(res.Signals, "egress allows nothing: all outbound traffic is denied")
			} else {
				res.Signals = append(res.Signals, "egress allows only: "+strings.Join(allows, "; "))
			}
			r.Rawf("  egress allows: %s", strings.Join(allows, "; "))
		}
		for _, t := range types {
			if t != string(networkingv1.PolicyTypeIngress) {
				continue
			}
			var allows []string
			for _, rule := range p.Spec.Ingress {
				allows = append(allows, peerText(rule.From, rule.Ports))
			}
			if len(allows) == 0 {
				res.Signals = append(res.Signals, "ingress allows nothing: all inbound traffic is denied")
			} else {
				res.Signals = append(res.Signals, "ingress allows only: "+strings.Join(allows, "; "))
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// peerText renders one NetworkPolicy rule: its peers and ports.
func peerText(peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) string {
	var who []string
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			who = append(who, "ipBlock "+p.IPBlock.CIDR)
		case p.NamespaceSelector != nil && p.PodSelector != nil:
			who = append(who, "namespaces "+metav1.FormatLabelSelector(p.NamespaceSelector)+" pods "+metav1.FormatLabelSelector(p.PodSelector))
		case p.NamespaceSelector != nil:
			who = append(who, "namespaces "+metav1.FormatLabelSelector(p.NamespaceSelector))
		case p.PodSelector != nil:
			who = append(who, "pods "+metav1.FormatLabelSelector(p.PodSelector)+" (same namespace)")
		}
	}
	if len(who) == 0 {
		who = []string{"anywhere"}
	}
	var ps []string
	for _, p := range ports {
		proto := "TCP"
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		if p.Port != nil {
			ps = append(ps, p.Port.String()+"/"+proto)
		} else {
			ps = append(ps, "all/"+proto)
		}
	}
	if len(ps) == 0 {
		ps = []string{"all ports"}
	}
	return strings.Join(who, ", ") + " on " + strings.Join(ps, ", ")
}

// localTrafficPolicies are the signals of a Service's Local traffic
// policies (internalTrafficPolicy, and externalTrafficPolicy of a Service
// that takes outside traffic), each with the nodes of its ready endpoints:
// a client on any other node has no endpoint to reach.
func localTrafficPolicies(svc *corev1.Service, pods []facts.Pod) []string {
	var nodes []string
	for _, p := range pods {
		if p.Node != "" && p.Ready && !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	var out []string
	if p := svc.Spec.InternalTrafficPolicy; p != nil && *p == corev1.ServiceInternalTrafficPolicyLocal {
		out = append(out, fmt.Sprintf("%sinternal nodes=%s", facts.SignalLocalTraffic, strings.Join(nodes, ",")))
	}
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && (svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort) {
		out = append(out, fmt.Sprintf("%sexternal nodes=%s", facts.SignalLocalTraffic, strings.Join(nodes, ",")))
	}
	return out
}

// unservedTargetPorts names the Service ports whose target no selected pod
// declares: a numeric targetPort that is no containerPort of the pods, a
// named one that no container port is called, when the pods declare their
// ports at all (a pod that declares none may listen anywhere). Traffic to
// such a port reaches the pods and is refused: the endpoints look healthy
// while every connection fails. "" when every port is served or nothing
// can be said.
func unservedTargetPorts(svc *corev1.Service, pods []corev1.Pod) string {
	declared := map[string]bool{}
	var listed []string
	for i := range pods {
		for _, c := range pods[i].Spec.Containers {
			for _, p := range c.Ports {
				num := strconv.Itoa(int(p.ContainerPort))
				if !declared[num] {
					listed = append(listed, num+"/"+string(p.Protocol)+" "+p.Name)
				}
				declared[num] = true
				if p.Name != "" {
					declared[p.Name] = true
				}
			}
		}
	}
	if len(declared) == 0 {
		return ""
	}
	var miss []string
	for _, p := range svc.Spec.Ports {
		t := p.TargetPort.String()
		if p.TargetPort.IntValue() == 0 && p.TargetPort.StrVal == "" {
			t = strconv.Itoa(int(p.Port)) // an unset targetPort is the port itself
		}
		if !declared[t] {
			miss = append(miss, fmt.Sprintf("port %d targets %s", p.Port, t))
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("%s%s, which no selected pod declares (the pods declare %s)", facts.SignalTargetPortUnserved, strings.Join(miss, ", "), strings.Join(listed, ", "))
}

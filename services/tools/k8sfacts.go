package tools

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/redact"
)

// podFact converts a Pod into facts.Pod (kubectl get pods semantics for Reason).
func podFact(p *corev1.Pod) facts.Pod {
	f := facts.Pod{
		Namespace: p.Namespace,
		Name:      p.Name,
		Node:      p.Spec.NodeName,
		Phase:     string(p.Status.Phase),
		Reason:    p.Status.Reason,
		Message:   p.Status.Message,
		CreatedAt: ptrTime(p.CreationTimestamp.Time),
		Labels:    p.Labels,
		QOSClass:  qosClass(p),
	}
	if p.Status.StartTime != nil {
		f.StartTime = ptrTime(p.Status.StartTime.Time)
	}
	if len(p.OwnerReferences) > 0 {
		o := p.OwnerReferences[0]
		for _, ref := range p.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				o = ref
			}
		}
		f.OwnerKind, f.OwnerName = o.Kind, o.Name
		f.Workload = o.Name
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				f.Workload = strings.TrimSuffix(o.Name, "-"+h)
			} else if i := strings.LastIndexByte(o.Name, '-'); i > 0 {
				f.Workload = o.Name[:i]
			}
		}
	}
	for _, c := range p.Status.Conditions {
		f.Conditions = append(f.Conditions, facts.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			f.Ready = true
		}
	}
	specs := map[string]corev1.Container{}
	for _, c := range p.Spec.Containers {
		specs[c.Name] = c
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = v
	}
	statuses := append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...)
	statuses = append(statuses, p.Status.ContainerStatuses...)
	seen := map[string]bool{}
	for _, cs := range statuses {
		seen[cs.Name] = true
		cf := facts.Container{Name: cs.Name, Image: cs.Image, Ready: cs.Ready, RestartCount: cs.RestartCount}
		switch {
		case cs.State.Waiting != nil:
			cf.State, cf.Reason, cf.Message = "waiting", cs.State.Waiting.Reason, cs.State.Waiting.Message
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			code := t.ExitCode
			cf.State, cf.Reason, cf.Message, cf.ExitCode = "terminated", t.Reason, t.Message, &code
		case cs.State.Running != nil:
			cf.State = "running"
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			code := t.ExitCode
			cf.LastReason, cf.LastExitCode, cf.LastMessage = t.Reason, &code, t.Message
			cf.LastFinishedAt = ptrTime(t.FinishedAt.Time)
		}
		if spec, ok := specs[cs.Name]; ok {
			fillContainerSpec(&cf, spec, &p.Spec, volumes)
		}
		cf.DefaultedLimits = limitRangerDefaults(p.Annotations[limitRangerAnnotation], cs.Name)
		f.Restarts += cs.RestartCount
		if cf.Reason == "OOMKilled" || cf.LastReason == "OOMKilled" || (cf.ExitCode != nil && *cf.ExitCode == 137 && cf.Reason == "OOMKilled") {
			f.OOMKilled = true
		}
		f.Containers = append(f.Containers, cf)
	}
	for _, c := range p.Spec.Containers {
		if !seen[c.Name] {
			cf := facts.Container{Name: c.Name, Image: c.Image}
			fillContainerSpec(&cf, c, &p.Spec, volumes)
			f.Containers = append(f.Containers, cf)
		}
	}
	if f.Reason == "" {
		f.Reason, f.Message = podDisplayReason(p)
	}
	return f
}

// limitRangerAnnotation is where the LimitRanger admission plugin records
// the requests and limits it set on a pod's containers from the
// namespace's LimitRange defaults.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// limitRangerDefaults are the resources whose limit the LimitRanger set
// for container name, from its annotation ("LimitRanger plugin set: cpu,
// memory request for container api; memory limit for container api").
func limitRangerDefaults(annotation, name string) []string {
	_, body, ok := strings.Cut(annotation, ":")
	if !ok {
		return nil
	}
	var out []string
	for _, part := range strings.Split(body, ";") {
		what, container, ok := strings.Cut(strings.TrimSpace(part), " for container ")
		if !ok || strings.TrimSpace(container) != name {
			continue
		}
		resources, ok := strings.CutSuffix(strings.TrimSpace(what), " limit")
		if !ok {
			continue
		}
		for _, r := range strings.Split(resources, ",") {
			if r = strings.TrimSpace(r); r != "" && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// podDisplayReason is the STATUS column of kubectl get pods when not Running.
func podDisplayReason(p *corev1.Pod) (string, string) {
	for _, cs := range p.Status.InitContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return "Init:" + w.Reason, w.Message
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return "Init:" + firstNonEmpty(t.Reason, "Error"), t.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason, w.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason != "" {
			return t.Reason, t.Message
		}
	}
	if p.Status.Phase == corev1.PodPending {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return firstNonEmpty(c.Reason, "Unschedulable"), c.Message
			}
		}
	}
	if p.DeletionTimestamp != nil {
		return "Terminating", ""
	}
	return "", ""
}

func fillContainerSpec(cf *facts.Container, c corev1.Container, pod *corev1.PodSpec, volumes map[string]corev1.Volume) {
	if cf.Image == "" {
		cf.Image = c.Image
	}
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cf.RequestsCPU = q.String()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		cf.RequestsMemory = q.String()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		cf.LimitsCPU = q.String()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		cf.LimitsMemory = q.String()
	}
	cf.LivenessProbe = probeText(c.LivenessProbe)
	cf.ReadinessProbe = probeText(c.ReadinessProbe)
	cf.RuntimeLimits = runtimeLimits(c)
	cf.Settings = containerSettings(c, volumes)
	for _, st := range runSettings(c, pod) {
		if len(cf.Settings) < maxSettings {
			cf.Settings = append(cf.Settings, st)
		}
	}
	cms, secs := map[string]bool{}, map[string]bool{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			cms[ef.ConfigMapRef.Name] = true
		}
		if ef.SecretRef != nil {
			secs[ef.SecretRef.Name] = true
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			cms[r.Name] = true
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			secs[r.Name] = true
		}
	}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			continue
		}
		if v.ConfigMap != nil {
			cms[v.ConfigMap.Name] = true
		}
		if v.Secret != nil {
			secs[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					cms[src.ConfigMap.Name] = true
				}
				if src.Secret != nil {
					secs[src.Secret.Name] = true
				}
			}
		}
	}
	cf.ConfigMaps = sortedKeys(cms)
	cf.Secrets = sortedKeys(secs)
}

func probeText(p *corev1.Probe) string {
	if p == nil {
		return ""
	}
	var how string
	switch {
	case p.HTTPGet != nil:
		how = fmt.Sprintf("http-get :%s%s", p.HTTPGet.Port.String(), p.HTTPGet.Path)
	case p.TCPSocket != nil:
		how = "tcp-socket :" + p.TCPSocket.Port.String()
	case p.Exec != nil:
		how = "exec [" + strings.Join(p.Exec.Command, " ") + "]"
	case p.GRPC != nil:
		how = fmt.Sprintf("grpc :%d", p.GRPC.Port)
	default:
		how = "probe"
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds failure=%d", how, p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.FailureThreshold)
}

func eventTimes(e *corev1.Event) (first, last time.Time) {
	first = e.FirstTimestamp.Time
	last = e.LastTimestamp.Time
	if e.Series != nil && !e.Series.LastObservedTime.IsZero() {
		last = e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		if first.IsZero() {
			first = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.EventTime.Time
		}
	}
	if first.IsZero() {
		first = last
	}
	if last.IsZero() {
		last = first
	}
	if first.IsZero() && !e.CreationTimestamp.IsZero() {
		first, last = e.CreationTimestamp.Time, e.CreationTimestamp.Time
	}
	return first, last
}

func eventFact(e *corev1.Event) facts.Event {
	first, last := eventTimes(e)
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count
	}
	return facts.Event{
		Namespace:    firstNonEmpty(e.InvolvedObject.Namespace, e.Namespace),
		Type:         e.Type,
		Reason:       e.Reason,
		Message:      strings.TrimSpace(e.Message),
		InvolvedKind: e.InvolvedObject.Kind,
		InvolvedName: e.InvolvedObject.Name,
		Count:        count,
		FirstSeen:    ptrTime(first),
		LastSeen:     ptrTime(last),
		Source:       firstNonEmpty(e.Source.Component, e.ReportingController),
	}
}

func nodeFact(n *corev1.Node) facts.Node {
	f := facts.Node{
		Name:          n.Name,
		Unschedulable: n.Spec.Unschedulable,
		Labels:        n.Labels,
		InstanceType:  firstNonEmpty(n.Labels["node.kubernetes.io/instance-type"], n.Labels["beta.kubernetes.io/instance-type"]),
		Capacity:      quantities(n.Status.Capacity),
		Allocatable:   quantities(n.Status.Allocatable),
	}
	ni := n.Status.NodeInfo
	for k, v := range map[string]string{"os_image": ni.OSImage, "kernel": ni.KernelVersion, "container_runtime": ni.ContainerRuntimeVersion, "kubelet": ni.KubeletVersion} {
		if v != "" {
			if f.Software == nil {
				f.Software = map[string]string{}
			}
			f.Software[k] = v
		}
	}
	for _, c := range n.Status.Conditions {
		f.Conditions = append(f.Conditions, facts.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			f.Ready = true
		}
	}
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		f.Taints = append(f.Taints, s+":"+string(t.Effect))
	}
	return f
}

func quantities(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for k, q := range rl {
		out[string(k)] = q.String()
	}
	return out
}

const revisionAnnotation = "deployment.kubernetes.io/revision"

func deploymentFact(d *appsv1.Deployment, rss []appsv1.ReplicaSet) facts.Deployment {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	f := facts.Deployment{
		Namespace:           d.Namespace,
		Name:                d.Name,
		Replicas:            desired,
		ReadyReplicas:       d.Status.ReadyReplicas,
		UpdatedReplicas:     d.Status.UpdatedReplicas,
		AvailableReplicas:   d.Status.AvailableReplicas,
		UnavailableReplicas: d.Status.UnavailableReplicas,
		Revision:            d.Annotations[revisionAnnotation],
		Generation:          d.Generation,
		ObservedGeneration:  d.Status.ObservedGeneration,
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		f.Images = append(f.Images, c.Image)
	}
	for _, c := range d.Status.Conditions {
		f.Conditions = append(f.Conditions, facts.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	f.Calls = calledHosts(&d.Spec.Template.Spec)
	f.Notes = runNotes(d.Annotations, d.Spec.Template.Annotations)
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, st := range containerSettings(c, volumes) {
			if len(f.Settings) < maxSettings && !slices.Contains(f.Settings, st) {
				f.Settings = append(f.Settings, st)
			}
		}
	}
	for i := range rss {
		rs := &rss[i]
		if !ownedBy(rs.OwnerReferences, "Deployment", d.Name, string(d.UID)) {
			continue
		}
		rev := facts.Revision{Revision: rs.Annotations[revisionAnnotation], Name: rs.Name, CreatedAt: ptrTime(rs.CreationTimestamp.Time), Replicas: rs.Status.Replicas}
		for _, c := range rs.Spec.Template.Spec.Containers {
			rev.Images = append(rev.Images, c.Image)
		}
		f.RolloutHistory = append(f.RolloutHistory, rev)
	}
	sort.SliceStable(f.RolloutHistory, func(i, j int) bool {
		a, _ := strconv.Atoi(f.RolloutHistory[i].Revision)
		b, _ := strconv.Atoi(f.RolloutHistory[j].Revision)
		if a != b {
			return a < b
		}
		return timeBefore(f.RolloutHistory[i].CreatedAt, f.RolloutHistory[j].CreatedAt)
	})
	return f
}

func ownedBy(refs []metav1.OwnerReference, kind, name, uid string) bool {
	for _, r := range refs {
		if r.Kind != kind {
			continue
		}
		if (uid != "" && string(r.UID) == uid) || r.Name == name {
			return true
		}
	}
	return false
}

func timeBefore(a, b *time.Time) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	return a.Before(*b)
}

func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func firstNonEmpty(vals ...string) string { return first(vals...) }

// podProblems are one-line findings about a pod, most severe first.
func podProblems(p facts.Pod) []string {
	var out []string
	if p.OOMKilled {
		out = append(out, fmt.Sprintf("pod %s/%s: container OOMKilled", p.Namespace, p.Name))
	}
	for _, c := range p.Containers {
		switch {
		case c.State == "waiting" && c.Reason != "" && c.Reason != "ContainerCreating" && c.Reason != "PodInitializing":
			out = append(out, fmt.Sprintf("pod %s/%s container %s waiting: %s %s", p.Namespace, p.Name, c.Name, c.Reason, c.Message))
		case c.State == "terminated" && c.Reason != "Completed":
			out = append(out, fmt.Sprintf("pod %s/%s container %s terminated: %s exit=%s %s", p.Namespace, p.Name, c.Name, c.Reason, exitText(c.ExitCode), c.Message))
		}
		if c.LastReason != "" && c.LastReason != "Completed" {
			at := ""
			if c.LastFinishedAt != nil {
				at = " at " + fmtTime(c.LastFinishedAt)
			}
			out = append(out, fmt.Sprintf("pod %s/%s container %s last terminated: %s exit=%s%s %s", p.Namespace, p.Name, c.Name, c.LastReason, exitText(c.LastExitCode), at, c.LastMessage))
		}
		if c.RestartCount > 0 {
			out = append(out, fmt.Sprintf("pod %s/%s container %s restarted %d times", p.Namespace, p.Name, c.Name, c.RestartCount))
		}
	}
	if p.Phase == "Pending" || p.Phase == "Failed" || p.Phase == "Unknown" {
		out = append(out, fmt.Sprintf("pod %s/%s phase %s %s %s", p.Namespace, p.Name, p.Phase, p.Reason, p.Message))
	} else if !p.Ready && p.Phase == "Running" {
		out = append(out, fmt.Sprintf("pod %s/%s running but not ready", p.Namespace, p.Name))
	}
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

func exitText(c *int32) string {
	if c == nil {
		return "-"
	}
	return strconv.Itoa(int(*c))
}

// runtimeMemFlag matches a runtime's memory cap: JVM heap and metaspace
// sizes, Node's old-space size, Go's soft memory limit.
var runtimeMemFlag = regexp.MustCompile(`(?:-Xm[sx][0-9]+[kKmMgG]?|-XX:Max(?:RAM|Metaspace|Direct)\w*=[0-9]+[kKmMgG%]?|-XX:MaxRAMPercentage=[0-9.]+|--max-old-space-size=[0-9]+|GOMEMLIMIT=[0-9]+\w*)`)

// runtimeLimits lists the runtime memory flags of a container (command,
// args and literal env values); nothing else of those values is kept.
// qosClass is the pod's QoS class: the API server's own (status.qosClass),
// or, for a pod recorded without its status, the class the API server
// assigns by the documented rule: BestEffort when no container requests or
// limits CPU or memory, Guaranteed when every container limits both and
// requests what it limits (a request defaults to its limit), else Burstable.
func qosClass(p *corev1.Pod) string {
	if p.Status.QOSClass != "" {
		return string(p.Status.QOSClass)
	}
	cs := append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...)
	if len(cs) == 0 {
		return ""
	}
	set, guaranteed := false, true
	for _, c := range cs {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if hasReq || hasLim {
				set = true
			}
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !set:
		return string(corev1.PodQOSBestEffort)
	case guaranteed:
		return string(corev1.PodQOSGuaranteed)
	}
	return string(corev1.PodQOSBurstable)
}

// maxSettings bounds the settings kept per container.
const maxSettings = 40

// reFlag is one command-line flag: -x, --name, --name=value, -XX:+Opt,
// -XX:Name=value, -Dkey=value.
var reFlag = regexp.MustCompile(`(?:^|\s)(-{1,2}[A-Za-z][A-Za-z0-9_.:+/-]*(?:=[^\s"']{0,80})?)`)

// containerSettings describes how c is configured, without secrets: flags
// of its command and args, its literal env vars (a sensitive name's value,
// or a value shaped like a secret, redacted), the sources of the others,
// and its mounts.
func containerSettings(c corev1.Container, volumes map[string]corev1.Volume) []string {
	var out []string
	add := func(s string) {
		if len(out) < maxSettings {
			out = append(out, s)
		}
	}
	for _, t := range append(append([]string(nil), c.Command...), c.Args...) {
		for _, m := range reFlag.FindAllStringSubmatch(" "+t, -1) {
			add("flag " + redact.Text(m[1]))
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
			add(fmt.Sprintf("env %s from configmap %s key %s", e.Name, e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key))
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			add(fmt.Sprintf("env %s from secret %s key %s", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key))
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			add(fmt.Sprintf("env %s from field %s", e.Name, e.ValueFrom.FieldRef.FieldPath))
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			add(fmt.Sprintf("env %s from resource %s", e.Name, e.ValueFrom.ResourceFieldRef.Resource))
		case e.ValueFrom == nil:
			v := e.Value
			if sensitiveEnv(e.Name) {
				v = "[redacted]"
			} else if len(v) > 120 {
				v = v[:120] + "…"
			}
			add(fmt.Sprintf("env %s=%s", e.Name, redact.Text(v)))
		}
	}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			add("env from configmap " + ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			add("env from secret " + ef.SecretRef.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		src := "volume " + m.Name
		if v, ok := volumes[m.Name]; ok {
			switch {
			case v.ConfigMap != nil:
				src = "configmap " + v.ConfigMap.Name
			case v.Secret != nil:
				src = "secret " + v.Secret.SecretName
			case v.PersistentVolumeClaim != nil:
				src = "persistentvolumeclaim " + v.PersistentVolumeClaim.ClaimName
			case v.EmptyDir != nil:
				src = "emptyDir " + m.Name
			case v.HostPath != nil:
				src = "hostPath " + v.HostPath.Path
			}
		}
		s := fmt.Sprintf("mount %s from %s", m.MountPath, src)
		if m.SubPath != "" {
			s += " subPath " + m.SubPath
		}
		if m.ReadOnly {
			s += " (read-only)"
		}
		add(s)
	}
	return out
}

// runSettings are the settings of how the container runs that commonly
// explain a failure after a hardening or a network change, one line each:
// its security context (the pod's where the container sets none) when it
// restricts (a read-only root filesystem, a non-root user, dropped
// capabilities, no privilege escalation), and the pod's host network with
// its DNS policy (a pod on the host network with ClusterFirst resolves
// through the node's resolver, not the cluster's: Kubernetes' documented
// fallback unless the policy is ClusterFirstWithHostNet).
func runSettings(c corev1.Container, pod *corev1.PodSpec) []string {
	var out []string
	sc := c.SecurityContext
	var psc *corev1.PodSecurityContext
	if pod != nil {
		psc = pod.SecurityContext
	}
	if sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		out = append(out, "securityContext readOnlyRootFilesystem: true")
	}
	switch {
	case sc != nil && sc.RunAsNonRoot != nil:
		if *sc.RunAsNonRoot {
			out = append(out, "securityContext runAsNonRoot: true")
		}
	case psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot:
		out = append(out, "pod securityContext runAsNonRoot: true")
	}
	switch {
	case sc != nil && sc.RunAsUser != nil:
		out = append(out, fmt.Sprintf("securityContext runAsUser: %d", *sc.RunAsUser))
	case psc != nil && psc.RunAsUser != nil:
		out = append(out, fmt.Sprintf("pod securityContext runAsUser: %d", *psc.RunAsUser))
	}
	if psc != nil && psc.FSGroup != nil {
		out = append(out, fmt.Sprintf("pod securityContext fsGroup: %d", *psc.FSGroup))
	}
	if sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		out = append(out, "securityContext allowPrivilegeEscalation: false")
	}
	if sc != nil && sc.Capabilities != nil {
		if len(sc.Capabilities.Drop) > 0 {
			out = append(out, "securityContext capabilities drop "+capNames(sc.Capabilities.Drop))
		}
		if len(sc.Capabilities.Add) > 0 {
			out = append(out, "securityContext capabilities add "+capNames(sc.Capabilities.Add))
		}
	}
	if pod != nil && pod.HostNetwork {
		policy := pod.DNSPolicy
		if policy == "" {
			policy = corev1.DNSClusterFirst
		}
		out = append(out, fmt.Sprintf("pod hostNetwork: true, dnsPolicy: %s", policy))
	}
	return out
}

func capNames(cs []corev1.Capability) string {
	var names []string
	for _, c := range cs {
		names = append(names, string(c))
	}
	return strings.Join(names, ",")
}

// sensitiveEnv: an env var whose name says its value is a credential; its
// value is never kept.
func sensitiveEnv(name string) bool {
	n := strings.ToLower(name)
	return redact.SensitiveKey(n) || strings.Contains(n, "secret") || strings.Contains(n, "credential") || strings.Contains(n, "passw") ||
		strings.Contains(n, "auth") || strings.Contains(n, "key") || strings.Contains(n, "dsn") || strings.Contains(n, "private")
}

func runtimeLimits(c corev1.Container) []string {
	var texts []string
	texts = append(texts, c.Command...)
	texts = append(texts, c.Args...)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue
		}
		if e.Name == "GOMEMLIMIT" {
			texts = append(texts, "GOMEMLIMIT="+e.Value)
			continue
		}
		texts = append(texts, e.Value)
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range texts {
		for _, m := range runtimeMemFlag.FindAllString(t, -1) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// maxRunNotes bounds the annotations kept as a workload's notes.
const maxRunNotes = 6

// runNotes are the annotations of a workload and of its pod template that
// say how it is run ("key=value", sorted, redacted, clipped): what a
// controller saved (a downscaler's original replicas), a note of why a
// setting is so, a restart request. Bookkeeping is left out: the last
// applied configuration, the rollout revision, a chart's ownership, a
// checksum, JSON or YAML blobs, and keys that name credentials.
func runNotes(sets ...map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, ann := range sets {
		for k, v := range ann {
			v, ok := annotationValue(k, v)
			if !ok || seen[k] || bookkeepingAnnotation(k) || strings.Contains(k, "checksum") {
				continue
			}
			seen[k] = true
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out[:min(len(out), maxRunNotes)]
}

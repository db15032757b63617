package analysis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

const (
	catConfig     = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CONFIGURATION_ERROR
	catCode       = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT
	catResource   = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION
	catDependency = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE
	catInfra      = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_INFRASTRUCTURE
	catHealthy    = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY
	catUnknown    = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN
)

// recentWindow: a pod-level signal older than this (relative to the
// evidence reference time) with the pod healthy now is history.
const recentWindow = 15 * time.Minute

func podEntity(p facts.Pod) string { return "pod/" + p.Namespace + "/" + p.Name }

func deploymentEntity(ns, name string) string { return "deployment/" + ns + "/" + name }

// podActive: the pod is failing now (not Ready, waiting, or restarted
// recently according to its events).
func (ev *Evidence) podActive(p Pod) bool {
	if !podHealthy(p.Pod) {
		return true
	}
	if podRestarts(p.Pod) == 0 {
		return false
	}
	return ev.recent(lastEventTime(ev.EventsFor("Pod", p.Name)), recentWindow) && len(ev.EventsFor("Pod", p.Name)) > 0
}

// superseded: the pod belongs to an older ReplicaSet of a deployment whose
// current ReplicaSet has all desired replicas Ready (it is being replaced).
func (ev *Evidence) superseded(p Pod) (current string, ok bool) {
	if strings.EqualFold(p.OwnerKind, "Job") && p.OwnerName != "" {
		// A Job's failed attempt is history once a later pod of the same
		// Job succeeded: the Job retried and completed.
		for _, o := range ev.Pods {
			if o.Name != p.Name && o.Namespace == p.Namespace && o.OwnerName == p.OwnerName && strings.EqualFold(o.Phase, "Succeeded") &&
				(o.StartTime == nil || p.StartTime == nil || !o.StartTime.Before(*p.StartTime)) {
				return o.Name, true
			}
		}
		return "", false
	}
	w := ev.workloadOf(p.Pod)
	d, found := ev.deploymentFor(p.Namespace, w)
	if !found || d.Replicas == 0 || d.ReadyReplicas < d.Replicas || d.UnavailableReplicas > 0 {
		return "", false
	}
	rs := replicaSetOf(p.Pod)
	if d.Revision != "" {
		for _, h := range d.RolloutHistory {
			if h.Name == rs && h.Revision == d.Revision {
				// The pod's ReplicaSet is the Deployment's current
				// revision: the rollout brought it, nothing superseded it.
				return "", false
			}
		}
	}
	byRS := map[string][]Pod{}
	for _, o := range ev.Pods {
		if o.Namespace == p.Namespace && ev.workloadOf(o.Pod) == w {
			byRS[replicaSetOf(o.Pod)] = append(byRS[replicaSetOf(o.Pod)], o)
		}
	}
	for name, pods := range byRS {
		if name == rs {
			continue
		}
		ready := 0
		newer := true
		for _, o := range pods {
			if podHealthy(o.Pod) {
				ready++
			}
			if o.StartTime != nil && p.StartTime != nil && o.StartTime.Before(*p.StartTime) {
				newer = false
			}
		}
		if int32(ready) >= d.Replicas && (newer || podTerminating(p.Pod)) {
			return name, true
		}
	}
	return "", false
}

// rolloutContext describes a failing pod set against the deployment: the
// counts, the healthy pods of other (older) ReplicaSets, progress-deadline
// events. It returns claims and whether a rollout is stalled.
type rollout struct {
	deployment  Deployment
	found       bool
	failingRS   string
	oldRS       []string
	oldPods     []Pod
	deadline    []Event
	stalled     bool
	newRevision bool
}

func (ev *Evidence) rolloutOf(failing []Pod) rollout {
	var r rollout
	if len(failing) == 0 {
		return r
	}
	p := failing[0]
	w := ev.workloadOf(p.Pod)
	r.deployment, r.found = ev.deploymentFor(p.Namespace, w)
	r.failingRS = replicaSetOf(p.Pod)
	failingNames := map[string]bool{}
	for _, f := range failing {
		failingNames[f.Name] = true
	}
	for _, o := range ev.Pods {
		if failingNames[o.Name] || o.Namespace != p.Namespace || ev.workloadOf(o.Pod) != w {
			continue
		}
		if rs := replicaSetOf(o.Pod); rs != r.failingRS && podHealthy(o.Pod) {
			r.oldPods = append(r.oldPods, o)
			r.oldRS = appendUnique(r.oldRS, rs)
			if o.StartTime != nil && p.StartTime != nil && o.StartTime.Before(*p.StartTime) {
				r.newRevision = true
			}
		}
	}
	for _, e := range ev.Events {
		if e.Reason == "ProgressDeadlineExceeded" && (w == "" || e.InvolvedName == w || strings.Contains(e.Message, w)) {
			r.deadline = append(r.deadline, e)
		}
	}
	for _, c := range r.deployment.Conditions {
		if c.Type == "Progressing" && c.Status == "False" {
			r.stalled = true
		}
	}
	if r.found && (r.deployment.UnavailableReplicas > 0 || r.deployment.ReadyReplicas < r.deployment.Replicas) && (len(r.deadline) > 0 || r.newRevision) {
		r.stalled = true
	}
	return r
}

func (r rollout) claims(f *Finding) {
	if r.found {
		d := r.deployment
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d available, %d unavailable replicas", d.Name, d.Replicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas), d.Cite)
	}
	if len(r.oldPods) > 0 {
		f.validated(fmt.Sprintf("Pods of the old ReplicaSet %s (%s) are still Running and Ready and keep serving traffic; the failure is confined to ReplicaSet %s", joinNames(r.oldRS), joinNames(podNames(r.oldPods)), r.failingRS), citesOfPods(r.oldPods))
	}
	for _, e := range r.deadline {
		f.validated("Deployment event "+eventLine(e), e.Cite)
	}
}

// ---- OOMKilled ----

var memPairRe = regexp.MustCompile(`(\d+(?:\.\d+)?\s?[KMGT]i?)B?\s*/\s*(\d+(?:\.\d+)?\s?[KMGT]i?)`)
var memLimitRe = regexp.MustCompile(`(?i)memory[_ ]limit[=: ]+(\d+(?:\.\d+)?\s?[KMGT]i?)`)

type oomSig struct {
	explicit bool // OOMKilled reason
	code137  bool
	events   []Event
	logs     []LogLine
	limit    string
	usage    string
	cont     facts.Container
}

func (ev *Evidence) oomSignals(p Pod) oomSig {
	var s oomSig
	if p.OOMKilled {
		s.explicit = true
	}
	for _, c := range p.Containers {
		txt := c.Reason + " " + c.Message + " " + c.LastReason + " " + c.LastMessage
		if containsFold(txt, "OOMKilled") {
			s.explicit, s.cont = true, c
		}
		for _, x := range []*int32{c.ExitCode, c.LastExitCode} {
			if x != nil && *x == 137 {
				s.code137, s.cont = true, c
			}
		}
		for _, code := range exitCodes(txt) {
			if code == 137 {
				s.code137, s.cont = true, c
			}
		}
		if c.LimitsMemory != "" {
			s.limit = c.LimitsMemory
		}
	}
	for _, e := range ev.EventsFor("Pod", p.Name) {
		if containsFold(e.Message, "OOMKilled") || containsFold(e.Reason, "OOMKilling") {
			s.explicit = true
			s.events = append(s.events, e)
		} else if containsFold(e.Message, "exit code: 137", "exit code 137", "exit_code=137") {
			s.code137 = true
			s.events = append(s.events, e)
		}
	}
	for _, l := range ev.LogsFor(p.Name) {
		m := l.Message
		if containsFold(m, "out of memory", "oom-kill", "oomkilled", "oom_kill", "killed process") {
			s.logs = append(s.logs, l)
			s.explicit = true
		}
		for _, code := range exitCodes(m) {
			if code == 137 {
				s.code137 = true
			}
		}
		if mm := memLimitRe.FindStringSubmatch(m); mm != nil && s.limit == "" {
			s.limit = strings.ReplaceAll(mm[1], " ", "")
		}
		if mm := memPairRe.FindStringSubmatch(m); mm != nil && containsFold(m, "heap", "memory", "rss", "mem") {
			s.usage = strings.ReplaceAll(mm[1], " ", "") + " / " + strings.ReplaceAll(mm[2], " ", "")
			if s.limit == "" {
				s.limit = strings.ReplaceAll(mm[2], " ", "")
			}
		}
	}
	if s.cont.Name == "" && len(p.Containers) > 0 {
		s.cont = p.Containers[0]
	}
	return s
}

// found: an explicit OOMKilled reason or kernel OOM log, or exit code 137
// alone (SIGKILL: most often the OOM killer; scored lower).
func (s oomSig) found() bool { return s.explicit || s.code137 }

func detectOOM(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		sig := ev.oomSignals(p)
		if !sig.found() || !ev.podActive(p) {
			continue
		}
		if _, sup := ev.superseded(p); sup {
			continue
		}
		c := sig.cont
		f := Finding{Mode: ModeOOMKilled, Category: catResource, Entity: podEntity(p.Pod), Score: 0.85}
		if !sig.explicit {
			f.Score = 0.65
			f.inferred("Only exit code 137 (SIGKILL) is recorded, without an OOMKilled reason: an OOM kill is the usual cause, but an external SIGKILL (e.g. a failed liveness probe's grace period) would look the same")
		}
		limit := ""
		if sig.limit != "" {
			limit = " of " + sig.limit
		}
		state := c.Reason
		if state == "" {
			state = p.Phase
		}
		f.Statement = fmt.Sprintf("Container %s in pod %s is OOMKilled: it exceeds its memory limit%s, the kernel kills it with exit code 137 (SIGKILL) and kubelet restarts it (%s, now %s)",
			c.Name, p.Name, limit, plural(int(podRestarts(p.Pod)), "restart", "restarts"), state)
		f.validated(fmt.Sprintf("Pod %s: container %s restart_count=%d, state %s %s, last termination OOMKilled / exit code 137", p.Name, c.Name, podRestarts(p.Pod), c.State, c.Reason), p.Cite)
		for _, e := range sig.events {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		for _, l := range sig.logs {
			f.validated("Pod logs: "+quote(l.Message), l.Cite)
			f.Score += 0.05
		}
		if sig.usage != "" {
			f.validated("Pod logs show memory use reaching "+sig.usage+" just before the kill", citesOfLogs(sig.logs))
		}
		if len(sig.events) > 0 {
			f.Score += 0.05
		}
		var healthySibs []Pod
		for _, s := range ev.siblings(p) {
			if podHealthy(s.Pod) && podRestarts(s.Pod) == 0 {
				healthySibs = append(healthySibs, s)
			}
		}
		if len(healthySibs) > 0 {
			f.validated(fmt.Sprintf("Sibling replicas %s are Running and Ready with 0 restarts: only %s is affected", joinNames(podNames(healthySibs)), p.Name), citesOfPods(healthySibs))
		}
		f.inferred(fmt.Sprintf("The memory demand of this replica exceeds the container memory limit%s; the limit, not the node, is what kills it", limit))
		if slices.Contains(c.DefaultedLimits, "memory") {
			// The container declares no memory limit: the namespace's
			// LimitRange set it at admission. The default is the setting
			// that kills it, and the LimitRange carries it.
			lr := ev.limitRangeOf(p.Namespace)
			f.Category = catConfig
			if lr != "" {
				f.Entity = "limitrange/" + p.Namespace + "/" + lr
			}
			f.validated(fmt.Sprintf("Pod %s: the memory limit%s of container %s was set by the LimitRanger admission plugin (kubernetes.io/limit-ranger): the container declares none, the namespace's LimitRange default applies", p.Name, limit, c.Name), p.Cite)
			f.Statement += fmt.Sprintf("; the container declares no memory limit: the limit%s is the default of the namespace's LimitRange%s, applied when the pod was created", limit, func() string {
				if lr == "" {
					return ""
				}
				return " " + lr
			}())
		}
		if flag, capB, limB, ok := runtimeCapAboveLimit(c); ok && f.Category == catResource && ev.memorySettingChanged() {
			// The runtime inside may use more than the container may: the
			// kernel kills it before the runtime collects. The setting is
			// the fault, not the demand.
			f.Category = catConfig
			if w := ev.workloadOf(p.Pod); w != "" && w != p.Name {
				f.Entity = deploymentEntity(p.Namespace, w)
			}
			f.Score += 0.05
			f.validated(fmt.Sprintf("Container %s of pod %s caps its runtime's memory at %s (%s), at or above its container memory limit %s (%s): the runtime grows past the limit before it collects", c.Name, p.Name, quote(flag), bytesHuman(capB), c.LimitsMemory, bytesHuman(limB)), p.Cite)
			f.Statement += fmt.Sprintf("; the container's runtime is told it may use %s (%s) while the container limit is %s: the heap cap does not fit in the container", bytesHuman(capB), flag, c.LimitsMemory)
			f.Remediation = append([]string{fmt.Sprintf("Set %s well below the container limit (about 75%% of %s, leaving room for the runtime's non-heap memory), or raise the limit above it", flag, c.LimitsMemory)}, f.Remediation...)
		}
		f.Chain = []string{
			fmt.Sprintf("Memory use of container %s grows past its limit%s", c.Name, limit),
			"The kernel OOM killer terminates the process with SIGKILL (exit code 137)",
			"Kubelet restarts the container with exponential back-off: CrashLoopBackOff",
			fmt.Sprintf("Pod %s is not Ready while sibling replicas keep serving", p.Name),
		}
		f.Remediation = []string{
			fmt.Sprintf("Raise the memory limit of container %s%s or reduce per-request memory (batch sizes, caches)", c.Name, func() string {
				if sig.limit == "" {
					return ""
				}
				return " (currently " + sig.limit + ")"
			}()),
			"Profile heap usage to rule out a leak before only raising the limit",
		}
		f.Signals = []string{"OOMKilled", "exit code 137", "memory limit"}
		if slices.Contains(c.DefaultedLimits, "memory") {
			f.Signals = append(f.Signals, "LimitRange default")
		}
		out = append(out, f)
	}
	return out
}

// limitRangeOf is the name of the one LimitRange of namespace ns in the
// evidence, "" when none or several are known.
func (ev *Evidence) limitRangeOf(ns string) string {
	name := ""
	for _, r := range ev.Resources {
		if strings.EqualFold(r.Kind, "LimitRange") && r.Namespace == ns {
			if name != "" && name != r.Name {
				return ""
			}
			name = r.Name
		}
	}
	return name
}

// ---- image pull ----

var imageRe = regexp.MustCompile(`(?i)image "?([^"\s]+[^"\s:.,])"?`)

// pullErrors are the registry's answers an image pull reports, most
// telling first. registrySide marks the answers in which the registry
// itself fails (it is down, overloaded or rate-limits), not the reference
// or the credentials: that row is a dependency failure of the registry
// host, whatever the image.
var pullErrors = []struct {
	phrase       string
	registrySide bool
}{
	{"manifest unknown", false}, {"not found", false}, {"unauthorized", false}, {"pull access denied", false},
	{"no basic auth credentials", false}, {"toomanyrequests", true}, {"x509", false}, {"i/o timeout", true},
	{"no such host", false}, {"repository does not exist", false}, {"denied", false},
	{"500 internal server error", true}, {"502 bad gateway", true}, {"503 service unavailable", true},
	{"504 gateway timeout", true}, {"connection refused", true}, {"connection reset", true},
}

// registryHost is the registry an image reference names ("" for Docker
// Hub's short names).
func registryHost(image string) string {
	first, _, ok := strings.Cut(image, "/")
	if !ok || !strings.ContainsAny(first, ".:") && first != "localhost" {
		return ""
	}
	host, _, _ := strings.Cut(first, ":")
	return strings.ToLower(host)
}

// signalPullRateLimited: the registry refuses pulls with its rate limit
// (every pull counts against it, from every namespace).
const signalPullRateLimited = "pull rate limited"

// imagePullLookback: pods of another workload created this long before a
// registry's rate limit can be what spent it.
const imagePullLookback = 2 * time.Hour

// minPullRuns: a workload pulls often enough to spend a registry's limit
// when this many of its pods were created in the look-back.
const minPullRuns = 3

// pullConsumer is a workload whose pods pull from a registry.
type pullConsumer struct {
	entity, name, image string
	pods                []Pod
}

// reJobRun: a Job a CronJob created, named after it with the scheduled
// time.
var reJobRun = regexp.MustCompile(`^(.+)-\d{6,}$`)

// pullConsumer: the workload (a CronJob's runs, a Job, a workload) other
// than the failing pods', whose pods created in the imagePullLookback
// before the last failed pull (until, else the failing pods' creation), on
// the same nodes, pull images from the registry host (or whose pulls the
// cluster's events record), most runs first; at least minPullRuns of them.
func (ev *Evidence) pullConsumer(failing []Pod, host string, until *time.Time) (pullConsumer, bool) {
	nodes := map[string]bool{}
	names := map[string]bool{}
	latest := timeOfPtr(until)
	for _, p := range failing {
		nodes[p.Node] = true
		names[p.Name] = true
		if t := timeOfPtr(firstNonNilTime(p.CreatedAt, p.StartTime)); t.After(latest) {
			latest = t
		}
	}
	groups := map[string]*pullConsumer{}
	for _, p := range ev.Pods {
		if names[p.Name] || !nodes[p.Node] || p.Node == "" {
			continue
		}
		created := timeOfPtr(firstNonNilTime(p.CreatedAt, p.StartTime))
		if created.IsZero() || created.After(latest) || latest.Sub(created) > imagePullLookback {
			continue
		}
		image := ""
		for _, c := range p.Containers {
			if fromRegistry(c.Image, host) {
				image = c.Image
			}
		}
		if image == "" {
			continue
		}
		key, name := podEntity(p.Pod), "pod "+p.Name
		switch {
		case strings.EqualFold(p.OwnerKind, "Job") && reJobRun.MatchString(p.OwnerName):
			cj := reJobRun.FindStringSubmatch(p.OwnerName)[1]
			key, name = "cronjob/"+p.Namespace+"/"+cj, "CronJob "+cj
		case strings.EqualFold(p.OwnerKind, "Job"):
			key, name = "job/"+p.Namespace+"/"+p.OwnerName, "Job "+p.OwnerName
		case ev.ownerEntity(p) != "":
			key = ev.ownerEntity(p)
			name = key
		}
		g := groups[key]
		if g == nil {
			g = &pullConsumer{entity: key, name: name, image: image}
			groups[key] = g
		}
		g.pods = append(g.pods, p)
	}
	// Pulls the events record (a CronJob's short-lived runs are gone from
	// the pod list): "Pulling image" of another workload's pod.
	for _, e := range ev.Events {
		if !strings.EqualFold(e.InvolvedKind, "Pod") || names[e.InvolvedName] || !strings.EqualFold(e.Reason, "Pulling") && !strings.EqualFold(e.Reason, "Pulled") {
			continue
		}
		at := timeOfPtr(firstNonNilTime(e.LastSeen, e.FirstSeen))
		if at.IsZero() || at.After(latest) || latest.Sub(at) > imagePullLookback {
			continue
		}
		m := imageRe.FindStringSubmatch(e.Message)
		if m == nil || !fromRegistry(m[1], host) {
			continue
		}
		i := strings.LastIndexByte(e.InvolvedName, '-')
		if i <= 0 || !reJobRun.MatchString(e.InvolvedName[:i]) {
			continue // only a CronJob's run is named after its owner by construction
		}
		cj := reJobRun.FindStringSubmatch(e.InvolvedName[:i])[1]
		key := "cronjob/" + e.Namespace + "/" + cj
		g := groups[key]
		if g == nil {
			g = &pullConsumer{entity: key, name: "CronJob " + cj, image: m[1]}
			groups[key] = g
		}
		if !slices.ContainsFunc(g.pods, func(p Pod) bool { return p.Name == e.InvolvedName }) {
			g.pods = append(g.pods, Pod{Pod: facts.Pod{Namespace: e.Namespace, Name: e.InvolvedName}, Cite: e.Cite})
		}
	}
	var best *pullConsumer
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		if g := groups[k]; len(g.pods) >= minPullRuns && (best == nil || len(g.pods) > len(best.pods)) {
			best = g
		}
	}
	if best == nil {
		return pullConsumer{}, false
	}
	return *best, true
}

// firstNonNilTime is the first of ts that is set, nil when none is.
func firstNonNilTime(ts ...*time.Time) *time.Time {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// dockerHub is the registry of images named without a registry host.
const dockerHub = "docker.io"

// fromRegistry: image is pulled from the registry host (Docker Hub for
// an image named without a host).
func fromRegistry(image, host string) bool {
	h := registryHost(image)
	return h == host || host == dockerHub && h == ""
}

func detectImagePull(ev *Evidence) []Finding {
	type group struct {
		pods   []Pod
		events []Event
		image  string
		detail string
		reason string
		// registrySide: detail is an answer in which the registry fails.
		registrySide bool
	}
	groups := map[string]*group{}
	var order []string
	for _, p := range ev.Pods {
		c, reason := waitingReason(p.Pod)
		evs := []Event{}
		for _, e := range ev.EventsFor("Pod", p.Name) {
			if containsFold(e.Message, "pull") && containsFold(e.Message, "image") && strings.EqualFold(e.Type, "Warning") {
				evs = append(evs, e)
			}
		}
		isPull := containsFold(reason, "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull") || (len(evs) > 0 && !podHealthy(p.Pod))
		if !isPull {
			continue
		}
		key := p.Namespace + "/" + ev.workloadOf(p.Pod)
		g := groups[key]
		if g == nil {
			g = &group{}
			groups[key] = g
			order = append(order, key)
		}
		g.pods = append(g.pods, p)
		g.events = append(g.events, evs...)
		if g.reason == "" {
			g.reason = reason
		}
		texts := []string{c.Message}
		for _, e := range evs {
			texts = append(texts, e.Message)
		}
		for _, t := range texts {
			if m := imageRe.FindStringSubmatch(t); m != nil && g.image == "" {
				g.image = m[1]
			}
			for _, pe := range pullErrors {
				if g.detail == "" && containsFold(t, pe.phrase) {
					g.detail, g.registrySide = pe.phrase, pe.registrySide
				}
			}
		}
		if g.image == "" && c.Image != "" {
			g.image = c.Image
		}
	}
	var out []Finding
	for _, k := range order {
		g := groups[k]
		if g.reason == "" {
			g.reason = "ImagePullBackOff"
		}
		p := g.pods[0]
		w := ev.workloadOf(p.Pod)
		f := Finding{Mode: ModeImagePull, Category: catConfig, Score: 0.9, Entity: podEntity(p.Pod)}
		if w != "" {
			f.Entity = deploymentEntity(p.Namespace, w)
		}
		r := ev.rolloutOf(g.pods)
		who := fmt.Sprintf("Pod %s", p.Name)
		if len(g.pods) > 1 {
			who = fmt.Sprintf("Pods %s", joinNames(podNames(g.pods)))
		}
		if r.newRevision {
			who += fmt.Sprintf(" of the new ReplicaSet %s of deployment %s", r.failingRS, w)
		}
		img := "its image"
		if g.image != "" {
			img = fmt.Sprintf("image %q", g.image)
		}
		detail := ""
		if g.detail != "" {
			detail = fmt.Sprintf(": the registry answers '%s'", g.detail)
			if g.detail == "manifest unknown" || g.detail == "not found" {
				detail += " (the tag does not exist in the registry manifest)"
			}
		}
		f.Statement = fmt.Sprintf("%s are stuck in %s: kubelet cannot pull %s%s, so the containers never start", who, g.reason, img, detail)
		if len(g.pods) == 1 {
			f.Statement = strings.Replace(f.Statement, " are stuck", " is stuck", 1)
		}
		f.validated(fmt.Sprintf("%s: container state waiting, reason %s, phase %s", joinNames(podNames(g.pods)), g.reason, p.Phase), citesOfPods(g.pods))
		for _, e := range g.events {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		r.claims(&f)
		f.inferred(fmt.Sprintf("The deployed image reference %s was never pushed or was mistyped; pods cannot start until it resolves", g.image))
		f.Chain = []string{
			fmt.Sprintf("A rollout sets the container image to %s", g.image),
			"Kubelet asks the runtime to pull it and the registry rejects the reference" + detail,
			"Kubelet retries with back-off: " + g.reason,
			"The new pods never become Ready and the rollout stalls",
		}
		if len(r.oldPods) > 0 {
			f.Chain = append(f.Chain, "The old ReplicaSet keeps serving traffic")
		}
		first := firstEventTime(g.events)
		if first == nil {
			first = p.StartTime
		}
		ev.changeContext(&f, w, first)
		f.Remediation = []string{
			fmt.Sprintf("Fix the image reference (push %s or roll back to the previous image)", g.image),
			"Roll back the deployment: kubectl rollout undo deployment/" + w,
		}
		f.Signals = []string{g.reason, "image pull", g.image}
		if host := registryHost(g.image); g.registrySide && host != "" {
			// The registry fails, not the reference: the same image pulls
			// once the registry answers again.
			f.Category, f.Entity = catDependency, "host/"+host
			f.Statement = fmt.Sprintf("The image registry %s is failing: %s are stuck in %s because the registry answers '%s' when kubelet pulls %s", host, strings.TrimPrefix(strings.TrimPrefix(who, "Pods "), "Pod "), g.reason, g.detail, img)
			f.Inferred = slices.DeleteFunc(f.Inferred, func(c Claim) bool { return strings.HasPrefix(c.Text, "The deployed image reference") })
			f.inferred(fmt.Sprintf("The registry %s answers '%s': it is down or overloaded; the reference %s itself is not in question", host, g.detail, g.image))
			f.Chain = []string{
				"Kubelet asks the runtime to pull " + g.image,
				fmt.Sprintf("The registry %s answers '%s'", host, g.detail),
				"Kubelet retries with back-off: " + g.reason,
				"Pods that need the image (a rollout, a scale-out, a rescheduled pod) never start",
			}
			f.Remediation = []string{"Pull from a mirror or pre-pulled cache of " + host + " until it recovers", "Keep running pods where they are (pause rollouts and node drains) while the registry is failing"}
			f.Signals = append(f.Signals, "registry unavailable")
			if g.detail == "toomanyrequests" {
				f.Signals = append(f.Signals, signalPullRateLimited)
			}
			if c, ok := ev.pullConsumer(g.pods, host, lastEventTime(g.events)); ok && g.detail == "toomanyrequests" {
				// The registry limits pulls, and another workload keeps
				// pulling from it on the same nodes: the quota is
				// exhausted by that workload's pulls, not by the
				// registry's failure.
				f.Category, f.Entity = catResource, c.entity
				f.Statement = fmt.Sprintf("%s exhausts the pull rate limit of %s: %s of its pods (image %s) pulled from %s in the %s before the last refused pull; %s",
					c.name, host, plural(len(c.pods), "run", "runs"), c.image, host, durHuman(imagePullLookback), f.Statement)
				f.validated(fmt.Sprintf("Pods of %s pulling %s from %s: %s", c.name, c.image, host, joinNames(podNames(c.pods))), citesOfPods(c.pods))
				f.Chain = append([]string{fmt.Sprintf("%s starts a pod on every run, each pulling %s from %s", c.name, c.image, host)}, f.Chain...)
				f.Remediation = append([]string{fmt.Sprintf("Stop %s pulling from %s on every run (imagePullPolicy IfNotPresent, a mirror, authenticated pulls)", c.name, host)}, f.Remediation...)
			}
		}
		out = append(out, f)
	}
	return out
}

// ---- CrashLoopBackOff with a startup error ----

type logCause struct {
	category investigationv1.RootCauseCategory
	kind     string
	line     LogLine
}

var (
	configLogRe = regexp.MustCompile(`(?i)(env(ironment)?[ _]?var(iable)?s?\b.*\b(not set|missing|required|empty|undefined)|(missing|required|invalid|unknown|bad)\s+(config|configuration|env|setting|key|flag|option|parameter|argument)|configuration error|config error|no such file|flag provided but not defined|unknown flag|cannot parse|could not parse|failed to (load|read|parse) (config|configuration)|permission denied)`)
	codeLogRe   = regexp.MustCompile(`(?i)(panic:|nil pointer|segmentation fault|sigsegv|null ?pointer|traceback \(most recent|unhandled exception|uncaught exception|stack overflow|index out of range|assertion failed)`)
	depLogRe    = regexp.MustCompile(`(?i)(connection refused|econnrefused|etimedout|could not connect|failed to connect|connect: |dial tcp|timed? ?out (connecting|waiting)|no route to host|connection reset)`)
)

// classifyLogs finds the most telling error line among a pod's logs.
func classifyLogs(lines []LogLine) (logCause, bool) {
	var best logCause
	found := false
	rank := func(k string) int {
		switch k {
		case "capacity":
			return 4
		case "config":
			return 3
		case "code":
			return 2
		case "dependency":
			return 1
		}
		return 0
	}
	for _, l := range lines {
		lv := logLevel(l.LogLine)
		// An unambiguous capacity signature (no space left, an exceeded
		// quota) decides wherever it is written: the exception line that
		// ends a traceback carries no level, and the crash header above
		// it says only that the program crashed.
		capacity := families[0].re.MatchString(l.Message)
		if lv != "ERROR" && lv != "FATAL" && lv != "WARN" && !capacity {
			continue
		}
		var c logCause
		switch {
		case capacity:
			c = logCause{families[0].cat, "capacity", l}
		case configLogRe.MatchString(l.Message):
			c = logCause{catConfig, "config", l}
		case codeLogRe.MatchString(l.Message):
			c = logCause{catCode, "code", l}
		case depLogRe.MatchString(l.Message):
			c = logCause{catDependency, "dependency", l}
		default:
			// Any other mechanism the cause-to-effect table reads (a limit
			// exhausted, a node fault, bad input data).
			f, ok := familyOf(l.Message)
			if !ok {
				continue
			}
			c = logCause{f.cat, strings.ToLower(strings.TrimPrefix(f.cat.String(), "ROOT_CAUSE_CATEGORY_")), l}
		}
		// On a tie, a record's header (it carries the time) over a
		// continuation line of a stack dump ("[signal SIGSEGV ...]",
		// "Caused by: ..."), which says less on its own.
		if !found || rank(c.kind) > rank(best.kind) || (rank(c.kind) == rank(best.kind) && best.line.Timestamp == nil && l.Timestamp != nil) {
			best, found = c, true
		}
	}
	return best, found
}

func detectCrashLoop(ev *Evidence) []Finding {
	groups := map[string][]Pod{}
	var order []string
	for _, p := range ev.Pods {
		_, reason := waitingReason(p.Pod)
		backoff := false
		for _, e := range ev.EventsFor("Pod", p.Name) {
			if e.Reason == "BackOff" && containsFold(e.Message, "restarting failed container") && ev.recent(lastEventTime([]Event{e}), recentWindow) {
				backoff = true
			}
		}
		if !(strings.Contains(reason, "CrashLoopBackOff") || strings.EqualFold(reason, "Error") || isContainerConfigError(reason) || (backoff && !podHealthy(p.Pod))) {
			continue
		}
		if ev.oomSignals(p).found() {
			continue
		}
		if _, sup := ev.superseded(p); sup {
			continue
		}
		key := p.Namespace + "/" + replicaSetOf(p.Pod)
		if groups[key] == nil {
			order = append(order, key)
		}
		groups[key] = append(groups[key], p)
	}
	var out []Finding
	for _, k := range order {
		pods := groups[k]
		p := pods[0]
		var logs []LogLine
		for _, x := range pods {
			logs = append(logs, ev.LogsFor(x.Name)...)
		}
		var podEvents []Event
		for _, x := range pods {
			for _, e := range ev.EventsFor("Pod", x.Name) {
				if strings.EqualFold(e.Type, "Warning") {
					podEvents = append(podEvents, e)
				}
			}
		}
		codes := map[int]bool{}
		for _, x := range pods {
			for _, c := range x.Containers {
				for _, ec := range []*int32{c.LastExitCode, c.ExitCode} {
					if ec != nil && *ec != 0 {
						codes[int(*ec)] = true
					}
				}
				for _, code := range exitCodes(c.Message + " " + c.LastMessage) {
					codes[code] = true
				}
			}
		}
		for _, e := range podEvents {
			for _, code := range exitCodes(e.Message) {
				codes[code] = true
			}
		}
		for _, l := range logs {
			for _, code := range exitCodes(l.Message) {
				codes[code] = true
			}
		}
		var codeList []string
		for c := range codes {
			codeList = append(codeList, fmt.Sprint(c))
		}
		sort.Strings(codeList)
		cause, ok := startFailure(pods, podEvents, logs)
		if !ok {
			cause, ok = classifyLogs(logs)
		}
		if !ok {
			// The kubelet's own message (CreateContainerConfigError: secret "x" not found).
			for _, x := range pods {
				if c, reason := waitingReason(x.Pod); isContainerConfigError(reason) && c.Message != "" {
					cause = logCause{catConfig, "config", LogLine{facts.LogLine{Message: reason + ": " + c.Message}, x.Cite}}
					ok = true
				}
			}
		}
		if !ok {
			// The container's own last words (its termination message)
			// read through the cause-to-effect table's effect rows.
			cause, ok = terminationCause(pods)
		}
		w := ev.workloadOf(p.Pod)
		r := ev.rolloutOf(pods)
		f := Finding{Mode: ModeCrashLoop, Category: catConfig, Score: 0.6, Entity: podEntity(p.Pod)}
		why := "the container exits on startup"
		if ok {
			f.Category = cause.category
			f.Score = 0.85
			why = "the container exits on startup with " + quote(strings.TrimSpace(cause.line.Message))
		} else {
			f.Score = 0.55
		}
		exit := ""
		if len(codeList) > 0 {
			exit = ", exit code " + strings.Join(codeList, "/")
		}
		restarts := podRestarts(p.Pod)
		if !ok && r.found && r.imageChanged() {
			// No log names the cause, but the crashing ReplicaSet runs a new
			// image: the release's code (or a migration it runs at start)
			// fails, not a setting (the change ledger's code row).
			f.Category = catCode
			why += " after a release changed the image"
		}
		if r.stalled && r.found {
			f.Mode = ModeRolloutStuck
			f.Entity = deploymentEntity(p.Namespace, w)
			f.Score += 0.05
			f.Statement = fmt.Sprintf("The rollout of deployment %s is stuck: pods of the new ReplicaSet %s (%s) crash on startup and stay in CrashLoopBackOff (%s%s) because %s; %d of %d replicas are ready",
				w, r.failingRS, joinNames(podNames(pods)), plural(int(restarts), "restart", "restarts"), exit, why, r.deployment.ReadyReplicas, r.deployment.Replicas)
			if len(r.deadline) > 0 {
				f.Statement += ", the deployment reports ProgressDeadlineExceeded"
			}
			if len(r.oldPods) > 0 {
				f.Statement += fmt.Sprintf(", and the old ReplicaSet %s keeps serving traffic", joinNames(r.oldRS))
			}
		} else {
			if w != "" && len(pods) > 1 {
				f.Entity = deploymentEntity(p.Namespace, w)
			}
			verb := "Pod %s is"
			if len(pods) > 1 {
				verb = "Pods %s are"
			}
			f.Statement = fmt.Sprintf(verb+" in CrashLoopBackOff (%s%s): %s", joinNames(podNames(pods)), plural(int(restarts), "restart", "restarts"), exit, why)
		}
		f.validated(fmt.Sprintf("Pods %s: container waiting, reason CrashLoopBackOff, restart_count=%d, not Ready", joinNames(podNames(pods)), restarts), citesOfPods(pods))
		for _, e := range podEvents {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		if ok {
			f.validated("Container logs: "+quote(cause.line.Message), cause.line.Cite)
		} else {
			f.inferred("Container logs were not available or show no startup error; the crash reason is unconfirmed")
		}
		r.claims(&f)
		switch {
		case ok && cause.kind == "config":
			f.inferred("The new revision's configuration (pod spec, env or mounted config) is incompatible with what the application requires")
			f.Remediation = []string{"Restore the missing/invalid configuration in the pod spec or roll back: kubectl rollout undo deployment/" + w}
		case ok && cause.kind == "code":
			f.inferred("The application crashes on startup: a code defect in the running revision")
			f.Remediation = []string{"Roll back to the previous revision and fix the crash: kubectl rollout undo deployment/" + w}
		case ok && cause.kind == "dependency":
			f.inferred("The application cannot reach a dependency at startup and exits")
			f.Remediation = []string{"Restore the dependency or make startup tolerate it (retry with back-off)"}
		default:
			f.Remediation = []string{"Read the previous container logs (kubectl logs --previous) to find the exit reason", "Roll back the last change if the crash started with a rollout"}
		}
		f.Chain = []string{"The container starts and hits the startup error", "It exits" + exit + " and kubelet restarts it with back-off (CrashLoopBackOff)"}
		if r.stalled {
			f.Chain = append(f.Chain, "No new-ReplicaSet pod becomes available, so the deployment rollout cannot progress", "The old ReplicaSet keeps serving")
		}
		first := firstEventTime(podEvents)
		if first == nil {
			first = p.StartTime
		}
		ev.changeContext(&f, w, first)
		f.Signals = []string{"CrashLoopBackOff"}
		out = append(out, f)
	}
	return out
}

// ---- probe failures ----

var probeStatusRe = regexp.MustCompile(`(?i)status ?code:? ?(\d{3})`)
var probePathRe = regexp.MustCompile(`(/[A-Za-z0-9_./-]*)`)

func detectProbeFailure(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		var probeEvents, killEvents []Event
		liveness := false
		for _, e := range ev.EventsFor("Pod", p.Name) {
			switch {
			case e.Reason == "Unhealthy" || containsFold(e.Message, "probe failed"):
				probeEvents = append(probeEvents, e)
				if containsFold(e.Message, "liveness") {
					liveness = true
				}
			case e.Reason == "Killing" && containsFold(e.Message, "probe"):
				killEvents = append(killEvents, e)
				liveness = true
			}
		}
		if len(probeEvents) == 0 {
			continue
		}
		all := append(append([]Event{}, probeEvents...), killEvents...)
		if podHealthy(p.Pod) && (podRestarts(p.Pod) == 0 || !ev.recent(lastEventTime(all), recentWindow)) {
			continue // probes recovered
		}
		if _, sup := ev.superseded(p); sup {
			continue
		}
		kind := "readiness"
		if liveness {
			kind = "liveness"
		}
		probeMsg := probeEvents[0].Message
		if !liveness && containsFold(probeMsg, "connection refused") && crashedOnItsOwn(p.Pod) {
			// Nothing listens because the process died on its own (an
			// error exit the kubelet did not cause): the readiness
			// failures are the crash's symptom, not the probe's fault.
			continue
		}
		if fam, ok := familyOf(probeMsg); ok && fam.cat == catResource && fam.re == families[0].re {
			// The probe could not even run: the container is out of a
			// capacity (its pids, its memory). The probe failures are that
			// exhaustion's symptom; the capacity row reads it.
			continue
		}
		status := ""
		if m := probeStatusRe.FindStringSubmatch(probeMsg); m != nil {
			status = " with HTTP status " + m[1]
		}
		c := facts.Container{}
		if len(p.Containers) > 0 {
			c = p.Containers[0]
		}
		spec := c.LivenessProbe
		if kind == "readiness" {
			spec = c.ReadinessProbe
		}
		exitZero := false
		var cleanLogs []LogLine
		for _, l := range ev.LogsFor(p.Name) {
			for _, code := range exitCodes(l.Message) {
				if code == 0 {
					exitZero = true
					cleanLogs = append(cleanLogs, l)
				}
			}
			if containsFold(l.Message, "SIGTERM") {
				cleanLogs = append(cleanLogs, l)
			}
		}
		for _, x := range []*int32{c.ExitCode, c.LastExitCode} {
			if x != nil && *x == 0 && podRestarts(p.Pod) > 0 {
				exitZero = true
			}
		}
		f := Finding{Mode: ModeProbeFailure, Category: catConfig, Score: 0.8, Entity: podEntity(p.Pod)}
		title := strings.ToUpper(kind[:1]) + kind[1:]
		if liveness {
			f.Statement = fmt.Sprintf("%s probe failures make kubelet restart pod %s: %s%s; kubelet kills the container after consecutive failures (%s)",
				title, p.Name, quote(probeMsg), status, plural(int(podRestarts(p.Pod)), "restart", "restarts"))
			if exitZero {
				f.Statement += " while the application shuts down cleanly with exit code 0 — probe-driven restarts, not an application crash"
				f.Score += 0.1
			}
		} else {
			f.Statement = fmt.Sprintf("Readiness probe failures keep pod %s out of service: %s%s", p.Name, quote(probeMsg), status)
			f.Score = 0.65
		}
		if spec != "" {
			f.Statement += " (probe: " + spec + ")"
		}
		f.validated(fmt.Sprintf("Pod %s: restart_count=%d, Ready=%v, phase %s", p.Name, podRestarts(p.Pod), podReady(p.Pod), p.Phase), p.Cite)
		for _, e := range all {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		seen := map[string]bool{}
		for _, l := range cleanLogs {
			if !seen[l.Message] {
				seen[l.Message] = true
				f.validated("Logs: "+quote(l.Message), l.Cite)
			}
		}
		path := ""
		if m := probePathRe.FindString(probeMsg); m != "" && len(m) > 1 {
			path = " " + m
		}
		f.inferred(fmt.Sprintf("The %s probe endpoint%s does not return success (or its timeout/threshold is too aggressive) although the process serves requests", kind, path))
		f.Chain = []string{
			fmt.Sprintf("The %s probe%s fails%s", kind, path, status),
			"Kubelet counts consecutive failures and kills the container (SIGTERM)",
			"The container exits and is restarted; the new container fails the same probe",
		}
		f.Remediation = []string{
			fmt.Sprintf("Fix the %s probe: point it at an endpoint that reflects process health, or relax timeoutSeconds/failureThreshold/initialDelaySeconds", kind),
			"Roll back the probe change if it arrived with the last rollout",
		}
		f.Signals = []string{title + " probe", "probe failure", "Unhealthy"}
		out = append(out, f)
	}
	return out
}

// crashedOnItsOwn: a container of p last exited with an error code the
// kubelet does not cause (not 137 or 143, the kill and terminate signals).
func crashedOnItsOwn(p facts.Pod) bool {
	for _, c := range p.Containers {
		if x := c.LastExitCode; x != nil && *x != 0 && *x != 137 && *x != 143 {
			return true
		}
	}
	return false
}

// ---- unschedulable ----

var insufficientRe = regexp.MustCompile(`(?i)insufficient ([a-z][a-z./-]*[a-z])`)

func (ev *Evidence) schedulingEvents(pod string) []Event {
	var out []Event
	for _, e := range ev.EventsFor("Pod", pod) {
		if e.Reason == "FailedScheduling" || containsFold(e.Message, "nodes are available") {
			out = append(out, e)
		}
	}
	return out
}

func schedulingMessage(p facts.Pod, evs []Event) string {
	for _, c := range p.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Message != "" {
			return c.Message
		}
	}
	if len(evs) > 0 {
		return evs[0].Message
	}
	return p.Message
}

func detectUnschedulable(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		evs := ev.schedulingEvents(p.Name)
		unsched := false
		for _, c := range p.Conditions {
			if c.Type == "PodScheduled" && c.Status == "False" {
				unsched = true
			}
		}
		if !strings.EqualFold(p.Phase, "Pending") || (!unsched && len(evs) == 0) {
			continue
		}
		msg := schedulingMessage(p.Pod, evs)
		f := Finding{Mode: ModeUnschedulable, Category: catResource, Score: 0.85, Entity: podEntity(p.Pod)}
		var resources []string
		for _, m := range insufficientRe.FindAllStringSubmatch(msg, -1) {
			resources = appendUnique(resources, strings.ToLower(m[1]))
		}
		reason := "Unschedulable"
		cause := ""
		switch {
		case len(resources) > 0:
			cause = "insufficient " + joinNames(resources) + " on every node"
		case containsFold(msg, "taint"):
			f.Category, cause = catConfig, "no node tolerates the pod (untolerated taints)"
		case containsFold(msg, "affinity", "selector"):
			f.Category, cause = catConfig, "no node matches the pod's node selector/affinity"
		case containsFold(msg, "persistentvolumeclaim", "volume"):
			f.Category, cause = catConfig, "its volumes cannot be bound on any node"
		default:
			cause = "the scheduler found no feasible node"
			f.Score = 0.7
		}
		f.Statement = fmt.Sprintf("Pod %s cannot be scheduled and stays Pending (PodScheduled=False, reason %s): %s — %s", p.Name, reason, quote(msg), cause)
		f.validated(fmt.Sprintf("Pod %s: phase Pending, PodScheduled=False reason Unschedulable", p.Name), p.Cite)
		for _, e := range evs {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		var readyNodes, nodeInfo []string
		var nodeCite Cite
		for _, n := range ev.Nodes {
			nodeCite.merge(n.Cite)
			if nodeReadyStatus(n.Node) == "True" {
				readyNodes = append(readyNodes, shortNode(n.Name))
			}
			for _, r := range resources {
				if v := n.Allocatable[r]; v != "" {
					nodeInfo = append(nodeInfo, fmt.Sprintf("%s allocatable %s %s", shortNode(n.Name), r, v))
				}
			}
		}
		if len(ev.Nodes) > 0 && len(readyNodes) == len(ev.Nodes) {
			s := fmt.Sprintf("All %d nodes (%s) are Ready with no pressure conditions, so the nodes are healthy but full", len(ev.Nodes), joinNames(readyNodes))
			if len(nodeInfo) > 0 {
				s += ": " + strings.Join(nodeInfo, ", ")
			}
			f.validated(s, nodeCite)
			f.Statement += fmt.Sprintf("; all %d nodes are Ready", len(ev.Nodes))
			if len(nodeInfo) > 0 {
				f.Statement += " but have only " + strings.Join(nodeInfo, ", ")
			}
			f.Score += 0.05
		}
		if len(resources) > 0 {
			f.inferred(fmt.Sprintf("Requests of the running pods consume the allocatable %s; the new replica's request does not fit", joinNames(resources)))
			f.Remediation = []string{"Add capacity (scale the node group / cluster autoscaler) or lower the pod's " + joinNames(resources) + " request", "Rightsize or evict lower-priority workloads"}
		} else {
			f.Remediation = []string{"Fix the scheduling constraint (tolerations, node selector/affinity, volumes)"}
		}
		f.Chain = []string{"The new pod requests resources", "The scheduler finds no node that fits: " + cause, "The pod stays Pending (Unschedulable) until capacity or constraints change"}
		f.Signals = []string{"Unschedulable", "FailedScheduling"}
		out = append(out, f)
	}
	return out
}

// ---- resource quota ----

var quotaRe = regexp.MustCompile(`(?i)exceeded quota:?\s*([A-Za-z0-9._-]+)`)
var quotaFieldRe = regexp.MustCompile(`(?i)(requested|used|limited):\s*([a-z0-9._/]+=[0-9a-zA-Z.]+)`)

func detectQuota(ev *Evidence) []Finding {
	var evs []Event
	quota := ""
	for _, e := range ev.Events {
		if containsFold(e.Message, "exceeded quota") || e.Reason == "QuotaExceeded" {
			evs = append(evs, e)
			if m := quotaRe.FindStringSubmatch(e.Message); m != nil && quota == "" {
				quota = strings.TrimRight(m[1], ",")
			}
		}
	}
	if len(evs) == 0 {
		return nil
	}
	var ns, owner string
	fields := map[string]string{}
	for _, e := range evs {
		if ns == "" {
			ns = e.Namespace
		}
		if strings.EqualFold(e.InvolvedKind, "ReplicaSet") && owner == "" {
			owner = e.InvolvedName
		}
		for _, m := range quotaFieldRe.FindAllStringSubmatch(e.Message, -1) {
			if fields[strings.ToLower(m[1])] == "" {
				fields[strings.ToLower(m[1])] = m[2]
			}
		}
	}
	var dep Deployment
	found := false
	for _, d := range ev.Deployments {
		if (owner != "" && strings.HasPrefix(owner, d.Name)) || (ns != "" && d.Namespace == ns && (d.ReadyReplicas < d.Replicas || d.UnavailableReplicas > 0)) {
			dep, found = d, true
			break
		}
	}
	if found && dep.ReadyReplicas >= dep.Replicas && dep.UnavailableReplicas == 0 && !ev.recent(lastEventTime(evs), recentWindow) {
		return nil // quota pressure is history
	}
	f := Finding{Mode: ModeQuotaExceeded, Category: catResource, Score: 0.9}
	nsName := ns
	if nsName == "" {
		nsName = dep.Namespace
	}
	usage := ""
	if len(fields) > 0 {
		var parts []string
		for _, k := range []string{"requested", "used", "limited"} {
			if v := fields[k]; v != "" {
				parts = append(parts, k+" "+v)
			}
		}
		usage = " (" + strings.Join(parts, ", ") + ")"
	}
	var resources []string
	for _, v := range fields {
		if k, _, ok := strings.Cut(v, "="); ok {
			resources = appendUnique(resources, k)
		}
	}
	sort.Strings(resources)
	if found {
		f.Entity = deploymentEntity(dep.Namespace, dep.Name)
		f.Statement = fmt.Sprintf("Deployment %s cannot reach %d replicas (%d ready, %d unavailable): ResourceQuota %s in namespace %s is exhausted%s, so quota admission rejects new pods with 'forbidden: exceeded quota' before the scheduler is reached",
			dep.Name, dep.Replicas, dep.ReadyReplicas, dep.UnavailableReplicas, quota, nsName, usage)
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d available, %d unavailable replicas", dep.Name, dep.Replicas, dep.ReadyReplicas, dep.AvailableReplicas, dep.UnavailableReplicas), dep.Cite)
	} else {
		f.Entity = "resourcequota/" + nsName + "/" + quota
		f.Statement = fmt.Sprintf("ResourceQuota %s in namespace %s is exhausted%s: admission rejects new pods", quota, nsName, usage)
	}
	for _, e := range evs {
		f.validated("Warning event "+eventLine(e), e.Cite)
	}
	if len(resources) > 0 {
		f.Signals = append(f.Signals, resources...)
		f.inferred(fmt.Sprintf("The namespace budget for %s is consumed by the existing pods; every additional replica needs more than is left", joinNames(resources)))
	}
	f.Chain = []string{"The controller scales the ReplicaSet up", "Pod creation hits the ResourceQuota admission check", fmt.Sprintf("Quota %s has no room%s: FailedCreate", quota, usage), "The deployment stays below its desired replica count"}
	f.Remediation = []string{fmt.Sprintf("Raise ResourceQuota %s in namespace %s or lower the per-pod limits", quota, nsName), "Free quota by scaling down other workloads in the namespace"}
	f.Signals = append(f.Signals, "quota", "FailedCreate")
	return []Finding{f}
}

// ---- rollout stuck without a pod-level explanation ----

func detectRolloutStuck(ev *Evidence) []Finding {
	var out []Finding
	for _, d := range ev.Deployments {
		if d.ReadyReplicas >= d.Replicas && d.UnavailableReplicas == 0 {
			continue
		}
		var deadline []Event
		for _, e := range ev.Events {
			if e.Reason == "ProgressDeadlineExceeded" && (e.InvolvedName == d.Name || strings.Contains(e.Message, d.Name)) {
				deadline = append(deadline, e)
			}
		}
		cond := false
		for _, c := range d.Conditions {
			if c.Type == "Progressing" && c.Status == "False" {
				cond = true
			}
		}
		if len(deadline) == 0 && !cond {
			continue
		}
		f := Finding{Mode: ModeRolloutStuck, Category: catConfig, Score: 0.55, Entity: deploymentEntity(d.Namespace, d.Name)}
		f.Statement = fmt.Sprintf("The rollout of deployment %s is stuck: it exceeded its progress deadline with %d of %d replicas ready (%d unavailable)", d.Name, d.ReadyReplicas, d.Replicas, d.UnavailableReplicas)
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d unavailable replicas", d.Name, d.Replicas, d.ReadyReplicas, d.UnavailableReplicas), d.Cite)
		for _, e := range deadline {
			f.validated("Deployment event "+eventLine(e), e.Cite)
		}
		f.inferred("The new ReplicaSet's pods do not become available; the pod-level reason needs the pods' state and logs")
		f.Chain = []string{"A new revision is rolled out", "Its pods do not become available", "The progress deadline expires: ProgressDeadlineExceeded"}
		f.Remediation = []string{"kubectl rollout undo deployment/" + d.Name, "Inspect the new ReplicaSet's pods and logs"}
		out = append(out, f)
	}
	return out
}

// ---- nodes ----

func detectNodeNotReady(ev *Evidence) []Finding {
	var out []Finding
	for _, n := range ev.Nodes {
		status := nodeReadyStatus(n.Node)
		if status == "True" {
			continue
		}
		f := Finding{Mode: ModeNodeNotReady, Category: catInfra, Score: 0.9, Entity: "node/" + n.Name}
		evs := ev.EventsFor("Node", n.Name)
		var affected []Pod
		for _, p := range ev.Pods {
			if p.Node == n.Name {
				affected = append(affected, p)
			}
		}
		f.Statement = fmt.Sprintf("Node %s is NotReady (Ready=%s): the node controller no longer receives kubelet heartbeats", n.Name, status)
		if t := firstEventTime(evs); t != nil {
			f.Statement += " since " + hhmm(t)
		}
		if len(affected) > 0 {
			var desc []string
			for _, p := range affected {
				desc = append(desc, fmt.Sprintf("%s (phase %s)", p.Name, p.Phase))
			}
			f.Statement += "; pods on it are unreachable: " + strings.Join(desc, ", ")
		}
		if pr := nodePressures(n.Node); len(pr) > 0 {
			f.Statement += "; last reported conditions: " + strings.Join(pr, ", ") + "=True"
		}
		f.validated(fmt.Sprintf("Node %s: Ready=%s%s", n.Name, status, func() string {
			if pr := nodePressures(n.Node); len(pr) > 0 {
				return ", " + strings.Join(pr, "=True, ") + "=True"
			}
			return ""
		}()), n.Cite)
		for _, e := range evs {
			f.validated("Event "+eventLine(e), e.Cite)
		}
		for _, p := range affected {
			var why []string
			for _, c := range p.Conditions {
				if c.Status != "True" && c.Reason != "" {
					why = appendUnique(why, c.Reason)
				}
			}
			s := fmt.Sprintf("Pod %s on node %s: phase %s, Ready=%v", p.Name, shortNode(n.Name), p.Phase, podReady(p.Pod))
			if len(why) > 0 {
				s += " (" + strings.Join(why, ", ") + ")"
			}
			f.validated(s, p.Cite)
		}
		f.inferred("The kubelet on the node stopped reporting (node crash, kubelet failure or network partition); workloads on other nodes are unaffected")
		f.Chain = []string{"The kubelet on " + shortNode(n.Name) + " stops posting node status", "The node controller marks the node Ready=" + status + " (NodeNotReady)", "Pods on the node become Unknown and are marked for eviction", "Capacity drops to the remaining nodes"}
		f.Remediation = []string{"Check the instance (EC2 status checks, kubelet and container runtime logs) and replace the node if it does not recover", "Cordon and drain the node; make sure replicas spread across nodes (PodDisruptionBudget, topology spread)"}
		f.Signals = []string{"NodeNotReady", "kubelet", "Unknown"}
		out = append(out, f)
	}
	return out
}

// nodePressureReasons are the kubelet's node events for a resource running
// short, by the condition they stand for.
var nodePressureReasons = map[string]string{
	"NodeHasInsufficientMemory": "MemoryPressure", "NodeHasDiskPressure": "DiskPressure",
	"NodeHasInsufficientPID": "PIDPressure", "EvictionThresholdMet": "",
}

// nodesFromEvents are nodes the node tools did not return but whose pressure
// events are in evidence, with the conditions those events report.
func (ev *Evidence) nodesFromEvents() []Node {
	known := map[string]bool{}
	for _, n := range ev.Nodes {
		known[n.Name] = true
	}
	idx := map[string]int{}
	var out []Node
	for _, e := range ev.Events {
		cond, ok := nodePressureReasons[e.Reason]
		if !ok || !strings.EqualFold(e.InvolvedKind, "Node") || e.InvolvedName == "" || known[e.InvolvedName] {
			continue
		}
		i, seen := idx[e.InvolvedName]
		if !seen {
			i = len(out)
			idx[e.InvolvedName] = i
			out = append(out, Node{facts.Node{Name: e.InvolvedName, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}}, e.Cite})
		}
		if cond == "" && strings.Contains(strings.ToLower(e.Message), "memory") {
			cond = "MemoryPressure"
		}
		if cond == "" && containsFold(e.Message, "ephemeral-storage", "nodefs", "imagefs", "disk") {
			cond = "DiskPressure"
		}
		if cond != "" && nodeCondition(out[i].Node, cond) != "True" {
			out[i].Conditions = append(out[i].Conditions, facts.Condition{Type: cond, Status: "True", Reason: e.Reason, Message: e.Message})
		}
		out[i].Cite.merge(e.Cite)
	}
	return out
}

func detectNodePressure(ev *Evidence) []Finding {
	var out []Finding
	for _, n := range append(append([]Node(nil), ev.Nodes...), ev.nodesFromEvents()...) {
		if nodeReadyStatus(n.Node) != "True" {
			continue // NotReady handled elsewhere
		}
		pr := nodePressures(n.Node)
		var evicted []Event
		for _, e := range ev.Events {
			if (e.Reason == "Evicted" || e.Reason == "EvictionThresholdMet") && (strings.Contains(e.Message, n.Name) || e.InvolvedName == n.Name) {
				evicted = append(evicted, e)
			}
		}
		onNode := map[string]bool{}
		for _, p := range ev.Pods {
			if p.Node == n.Name {
				onNode[p.Name] = true
			}
		}
		for _, e := range ev.Events {
			if e.Reason == "Evicted" && strings.EqualFold(e.InvolvedKind, "Pod") && onNode[e.InvolvedName] && !strings.Contains(e.Message, n.Name) {
				evicted = append(evicted, e)
			}
		}
		for _, p := range ev.Pods {
			if p.Node == n.Name && strings.EqualFold(p.Reason, "Evicted") {
				evicted = append(evicted, Event{facts.Event{Type: "Warning", Reason: "Evicted", Message: p.Message, InvolvedKind: "Pod", InvolvedName: p.Name}, p.Cite})
			}
		}
		if len(pr) == 0 && len(evicted) == 0 {
			continue
		}
		// A pressure condition says a resource of the node ran out (its
		// disk or inodes, its memory, its process ids): resource
		// exhaustion on the node, whoever filled it, not a failure of the
		// machine (a NotReady node, a kernel fault).
		f := Finding{Mode: ModeNodePressure, Category: catResource, Score: 0.65, Entity: "node/" + n.Name}
		f.Statement = fmt.Sprintf("Node %s reports %s", n.Name, strings.Join(pr, ", "))
		if len(evicted) > 0 {
			f.Statement += fmt.Sprintf(" and kubelet evicts pods (%s)", quote(evicted[0].Message))
			f.Score = 0.8
		}
		f.validated(fmt.Sprintf("Node %s: %s=True", n.Name, strings.Join(pr, "=True, ")), n.Cite)
		for i, e := range evicted {
			if i >= 6 {
				break
			}
			f.validated("Event "+eventLine(e), e.Cite)
		}
		for _, sr := range ev.nodeSeries(n.Name) {
			r := riseOf(sr.Series)
			f.validated(fmt.Sprintf("%s on %s went from %s to %s (%s)", sr.Name, n.Name, num(r.head), num(r.tail), r.shape), sr.Cite)
		}
		f.Chain = []string{"Usage on the node crosses the kubelet eviction threshold", "Kubelet sets the pressure condition and evicts pods"}
		f.Remediation = []string{"Free or add node resources (disk cleanup, larger volumes, more nodes)", "Set requests/limits so pods cannot exhaust the node"}
		f.Signals = pr
		out = append(out, f)
	}
	return out
}

func isContainerConfigError(reason string) bool {
	switch reason {
	case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "InvalidImageName":
		return true
	}
	return false
}

// ---- volumes that cannot be attached or mounted ----

func detectVolumeMount(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		if podHealthy(p.Pod) {
			continue
		}
		var evs []Event
		for _, e := range ev.EventsFor("Pod", p.Name) {
			if (e.Reason == "FailedMount" || e.Reason == "FailedAttachVolume") && ev.recent(lastEventTime([]Event{e}), recentWindow) {
				evs = append(evs, e)
			}
		}
		if len(evs) == 0 {
			continue
		}
		_, reason := waitingReason(p.Pod)
		f := Finding{Mode: ModeVolumeMount, Category: catInfra, Score: 0.75, Entity: podEntity(p.Pod)}
		if containsFold(evs[0].Message, "not found", "secret", "configmap") {
			f.Category = catConfig
		}
		f.Statement = fmt.Sprintf("Pod %s cannot start (%s %s): its volumes fail to mount — %s", p.Name, p.Phase, reason, quote(evs[0].Message))
		f.validated(fmt.Sprintf("Pod %s: phase %s, %s, not Ready", p.Name, p.Phase, reason), p.Cite)
		for _, e := range evs {
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		f.Chain = []string{"Kubelet tries to attach/mount the pod's volumes", "The mount fails", "The containers never start (ContainerCreating)"}
		f.Remediation = []string{"Fix the referenced volume/Secret/ConfigMap or the storage attachment (CSI driver, zone affinity)"}
		f.Signals = []string{"FailedMount"}
		out = append(out, f)
	}
	return out
}

// deployBefore returns the latest deploy of the workload that started at
// most an hour before t (the change a failure most likely came with).
func (ev *Evidence) deployBefore(workload string, t *time.Time) (Deploy, bool) {
	var best Deploy
	found := false
	for _, d := range ev.Deploys {
		if workload != "" && d.Service != "" && d.Service != workload {
			continue
		}
		st := d.StartedAt
		if st == nil {
			st = d.FinishedAt
		}
		if st == nil || t == nil || st.After(t.Add(2*time.Minute)) || t.Sub(*st) > time.Hour {
			continue
		}
		if !found || st.After(timeOf(best.StartedAt)) {
			best, found = d, true
		}
	}
	return best, found
}

// changeContext adds the deploy (and its commits) that preceded a
// pod-level failure starting at t.
func (ev *Evidence) changeContext(f *Finding, workload string, t *time.Time) {
	d, ok := ev.deployBefore(workload, t)
	if !ok {
		if ev.Queried("get_deploy_history") && len(ev.Deploys) == 0 {
			f.Inferred = append(f.Inferred, Claim{Text: "No deploys were recorded in the window: the failure did not come with a code rollout", PinIDs: ev.PinsOf("get_deploy_history")})
		}
		return
	}
	what := fmt.Sprintf("Deploy %s of %s", d.Revision, d.Service)
	if d.PreviousRevision != "" {
		what += " (from " + d.PreviousRevision + ")"
	}
	if d.IsRollback {
		what = "Rollback " + strings.TrimPrefix(what, "Deploy ")
	}
	f.validated(fmt.Sprintf("%s started at %s, %s before the first failure at %s", what, hhmm(d.StartedAt), durHuman(t.Sub(timeOf(d.StartedAt))), hhmm(t)), d.Cite)
	for _, c := range ev.Commits {
		if c.Removed || !(strings.HasPrefix(c.SHA, d.Revision) || strings.HasPrefix(d.Revision, c.SHA) || (c.Service == d.Service && c.Timestamp != nil && d.StartedAt != nil && c.Timestamp.Before(*d.StartedAt) && d.StartedAt.Sub(*c.Timestamp) < 24*time.Hour)) {
			continue
		}
		f.validated(fmt.Sprintf("Commit %s in that deploy: %s (change types %s)", short(c.SHA), clip(c.Message, 100), strings.Join(c.ChangeTypes, ", ")), c.Cite)
	}
	f.Chain = append([]string{what + " rolls out"}, f.Chain...)
}

// nodeSeries are the node-level resource series (filesystem, memory, disk)
// that name the node in a node, instance or hostname label and changed.
func (ev *Evidence) nodeSeries(node string) []Series {
	var out []Series
	for _, sr := range ev.Series {
		who := labelOf(sr.Series, "node", "kubernetes_node", "nodename", "instance", "hostname", "host")
		if who == "" || !(who == node || strings.HasPrefix(who, node+":") || strings.HasPrefix(who, node+".")) {
			continue
		}
		n := strings.ToLower(sr.Name)
		if !containsFold(n, "filesystem", "memory", "disk", "inode", "pid") {
			continue
		}
		if r := riseOf(sr.Series); r.shape == "flat" {
			continue
		}
		out = append(out, sr)
		if len(out) >= 3 {
			break
		}
	}
	return out
}

// imageChanged: the failing ReplicaSet's images differ from the revision
// before it (the rollout shipped new code, not only a setting).
func (r rollout) imageChanged() bool {
	h := r.deployment.RolloutHistory
	for _, rv := range h {
		if rv.Name != r.failingRS {
			continue
		}
		prev, ok := previousRevision(h, rv)
		return ok && len(prev.Images) > 0 && len(rv.Images) > 0 && !sameImages(prev.Images, rv.Images)
	}
	return false
}

// terminationCause classifies the last termination message of the pods'
// containers through the effect rows of the cause-to-effect table (no
// space left, cannot create a thread, a missing setting, an exception).
// runtimeStartRe is the container runtime refusing to start a process
// (runc, containerd, Docker, CRI-O wording); startExecRe is why: the
// command the spec names is not in the image, not executable, or built for
// another architecture.
var (
	runtimeStartRe = regexp.MustCompile(`(?i)OCI runtime \w+ failed|failed to create (?:containerd )?(?:task|shim)|unable to start container process|starting container process caused|failed to start container|cannot start container`)
	startExecRe    = regexp.MustCompile(`(?i)\bexec\b[^\n]*?(?:no such file or directory|not found|permission denied)|executable file not found|exec format error`)
)

// startFailure reads a container the runtime could not start: its process
// never ran (reason StartError or ContainerCannotRun, the runtime's "exec
// ...: no such file or directory", "executable file not found in $PATH",
// "exec format error"), so no other container's log explains the crash: the
// pod spec (command, entrypoint, image, architecture) does not fit the image,
// a configuration error. The runtime's own message is the line.
func startFailure(pods []Pod, events []Event, logs []LogLine) (logCause, bool) {
	line := func(msg string, cite Cite) (logCause, bool) {
		return logCause{catConfig, "config", LogLine{facts.LogLine{Message: strings.TrimSpace(msg)}, cite}}, true
	}
	for _, e := range events {
		if runtimeStartRe.MatchString(e.Message) && startExecRe.MatchString(e.Message) {
			return line(e.Message, e.Cite)
		}
	}
	for _, x := range pods {
		for _, c := range x.Containers {
			for _, st := range [][2]string{{c.LastReason, c.LastMessage}, {c.Reason, c.Message}} {
				if (st[0] == "StartError" || st[0] == "ContainerCannotRun") && startExecRe.MatchString(st[1]) {
					return line(st[1], x.Cite)
				}
			}
		}
	}
	for _, l := range logs {
		if strings.Contains(strings.ToLower(l.Message), "exec format error") {
			return logCause{catConfig, "config", l}, true
		}
	}
	return logCause{}, false
}

func terminationCause(pods []Pod) (logCause, bool) {
	for _, x := range pods {
		for _, c := range x.Containers {
			for _, msg := range []string{c.LastMessage, c.Message} {
				msg = strings.TrimSpace(msg)
				if msg == "" {
					continue
				}
				if f, ok := familyOf(msg); ok {
					return logCause{f.cat, categoryWord(f.cat), LogLine{facts.LogLine{Message: msg}, x.Cite}}, true
				}
			}
		}
	}
	return logCause{}, false
}

// reMemorySetting: a record's words for a container's memory settings:
// its limit, a runtime's heap cap or the env var that carries it.
var reMemorySetting = regexp.MustCompile(`(?i)\bmemory limit|limits\.memory|\bmemory:\s*\d|-Xmx|max-old-space-size|GOMEMLIMIT|JAVA_OPTS|JAVA_TOOL_OPTIONS|NODE_OPTIONS|\bheap\b|rightsiz`)

// memorySettingChanged: a change before the alert names a memory setting
// (a limit lowered, a heap cap raised): a line that announces a change
// (not an error), an edit of an object, or a commit. A cap that was always
// above the limit, with nothing changed, is no cause by itself (a leak
// reaches any limit).
func (ev *Evidence) memorySettingChanged() bool {
	at := ev.alertTime()
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || at != nil && l.Timestamp.After(*at) {
			continue
		}
		if settingChangeRecord(l.Message, reMemorySetting) {
			return true
		}
	}
	for _, c := range ev.ObjectChanges {
		if reMemorySetting.MatchString(objectChangeText(c.ObjectChange) + " " + strings.Join(c.Fields, " ")) {
			return true
		}
	}
	for _, c := range ev.Commits {
		if reMemorySetting.MatchString(c.Message + " " + c.Summary) {
			return true
		}
	}
	return false
}

// settingChangeRecord: msg names a setting (setting) and records its
// change (the words of a change, an announcement, or "old -> new").
func settingChangeRecord(msg string, setting *regexp.Regexp) bool {
	return setting.MatchString(msg) && (reConfigChanged.MatchString(msg) || announcesChange(msg) || strings.Contains(msg, "->"))
}

// runtimeCapShare: a runtime memory cap at this share of the container's
// memory limit or more leaves no room for what the runtime keeps outside
// its heap (threads, metaspace, buffers): the kernel kills the container
// before the runtime collects.
const runtimeCapShare = 0.9

// reRuntimeCap: a runtime's memory cap as its flags write it: the JVM's
// -Xmx, Node's --max-old-space-size (MiB), Go's GOMEMLIMIT.
var reRuntimeCap = regexp.MustCompile(`^(?:-Xmx([0-9]+)([kKmMgG]?)|--max-old-space-size=([0-9]+)|GOMEMLIMIT=([0-9]+)(B|KiB|MiB|GiB|TiB)?)$`)

// runtimeCapAboveLimit: one of c's runtime memory caps (RuntimeLimits) is
// at runtimeCapShare of its memory limit or above: the flag, both sizes.
func runtimeCapAboveLimit(c facts.Container) (string, float64, float64, bool) {
	limit := quantityBytes(c.LimitsMemory)
	if limit <= 0 {
		return "", 0, 0, false
	}
	for _, fl := range c.RuntimeLimits {
		m := reRuntimeCap.FindStringSubmatch(fl)
		if m == nil {
			continue
		}
		var b float64
		switch {
		case m[1] != "":
			n, _ := strconv.ParseFloat(m[1], 64)
			b = n * map[string]float64{"": 1, "k": 1 << 10, "K": 1 << 10, "m": 1 << 20, "M": 1 << 20, "g": 1 << 30, "G": 1 << 30}[m[2]]
		case m[3] != "":
			n, _ := strconv.ParseFloat(m[3], 64)
			b = n * (1 << 20)
		case m[4] != "":
			n, _ := strconv.ParseFloat(m[4], 64)
			b = n * map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[5]]
		}
		if b >= runtimeCapShare*limit {
			return fl, b, limit, true
		}
	}
	return "", 0, 0, false
}

package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/signal"
	"github.com/rcamesh/rcamesh/internal/target"

	"github.com/rcamesh/rcamesh/internal/intent"
)

// FollowUp is the next evidence a finding asks for: a tool call an
// investigation makes when no equivalent call ran yet.
type FollowUp struct {
	Intent intent.Name
	Params map[string]any
}

// LeadFollowUps are the follow-ups the leading hypothesis's finding asks
// for, as data (the caller filters out what already ran and what no tool
// serves). exclusive says they are the whole next step: when they all ran,
// nothing else follows from the entity (a cluster DNS name is not a
// workload whose configuration is worth reading).
func (r Result) LeadFollowUps() (calls []FollowUp, exclusive bool) {
	if len(r.Findings) == 0 || r.ev == nil {
		return nil, false
	}
	f := r.Findings[0] // Hypotheses[0] is built from the first finding
	if fu, ok := leadFollowUps[f.Detector]; ok {
		return fu(r.ev, f)
	}
	return nil, false
}

// SuspectEntity is the entity the next evidence should be about: the
// leading hypothesis's, or, when no detector proposed one, the entity with
// the strongest abnormal signals (the anomaly summary's), "" when nothing
// is abnormal.
func (r Result) SuspectEntity() string {
	if len(r.Hypotheses) > 0 {
		return r.Hypotheses[0].GetEntity()
	}
	if r.ev == nil {
		return ""
	}
	if cs := r.ev.anomalyCandidates(); len(cs) > 0 {
		return cs[0].entity
	}
	return ""
}

// SuspectNodes are the nodes the evidence points at: a node among the three
// strongest anomaly candidates, or the node of a Warning event (a reboot,
// a NotReady); their current state is the next evidence.
func (r Result) SuspectNodes() []string {
	if r.ev == nil {
		return nil
	}
	var out []string
	for i, c := range r.ev.anomalyCandidates() {
		if i >= 3 {
			break
		}
		if c.kind == "node" {
			out = appendUnique(out, c.name)
		}
	}
	for _, e := range r.ev.Events {
		if strings.EqualFold(e.Type, "Warning") && strings.EqualFold(e.InvolvedKind, "Node") && e.InvolvedName != "" {
			out = appendUnique(out, e.InvolvedName)
		}
	}
	return out
}

// ChangedObject is the object ("kind/namespace/name") the evidence-driven
// reading blames when no detector proposed a cause: a change of the ledger
// to an object that is not a workload (a policy, a route, a custom
// resource) made just before the onset. Its spec is the next evidence.
// "" when the reading blames no such object.
func (r Result) ChangedObject() string {
	if len(r.Hypotheses) > 0 || r.ev == nil {
		return ""
	}
	f, ok := fallback(r.ev, r)
	if !ok || f.Healthy {
		return ""
	}
	parts := strings.Split(f.Entity, "/")
	if len(parts) != 3 {
		return ""
	}
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "replicaset", "pod", "service", "job", "cronjob", "node", "host", "commit", "queue", "db", "database":
		return ""
	}
	return f.Entity
}

// leadFollowUps maps a detector to the follow-ups of its findings.
var leadFollowUps = map[string]func(ev *Evidence, f Finding) ([]FollowUp, bool){
	ModeDNSFailure:        dnsFollowUps,
	ModeOOMKilled:         oomFollowUps,
	ModeUpstreamRateLimit: rateLimitFollowUps,
	ModeImagePull:         imagePullFollowUps,
	ModeDependencyFailure: dependencyFollowUps,
	ModeRemovedTarget:     removedFollowUps,
	ModeCodeException:     codeFollowUps,
	ModeStaleConfig:       staleConfigFollowUps,
}

// maxStalePodLogs bounds the failing pods whose logs a stale-config
// reading asks for.
const maxStalePodLogs = 2

// staleConfigFollowUps: the logs of the workload's pods whose error series
// rose and whose lines no call read (a fetch by prefix reads the newest
// pod, which started after the change and does not fail): what the pods
// running the old configuration say.
func staleConfigFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	ns, name := splitEntity(f.Entity)
	read := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Pod != "" {
			read[l.Pod] = true
		}
	}
	failing, _ := ev.failingPodSeries(name)
	var out []FollowUp
	for _, p := range ev.Pods {
		if _, ok := failing[p.Name]; !ok || read[p.Name] || len(out) >= maxStalePodLogs {
			continue
		}
		read[p.Name] = true
		out = append(out, FollowUp{Intent: intent.FetchPodLogs, Params: map[string]any{"namespace": firstNonEmptyStr(p.Namespace, ns), "pod": p.Name}})
	}
	return out, false
}

// codeFollowUps: exceptions no release explains, whose stack frames name
// source files no commit read so far changed, ask for those files' history
// in the service's repository (a latent defect written months before the
// input that first reaches it).
func codeFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	if !strings.HasPrefix(f.Entity, "deployment/") || slices.Contains(f.Signals, "deploy") {
		return nil, false
	}
	parts := strings.Split(f.Entity, "/")
	svc := parts[len(parts)-1]
	var texts []string
	for _, l := range ev.Logs {
		if ev.logService(l) == svc && isErrorLog(l.LogLine) && runtimeException(l.Message) {
			texts = append(texts, l.Message)
		}
	}
	files := frameFiles(texts, 8)
	if len(files) == 0 {
		return nil, false
	}
	return []FollowUp{{Intent: intent.GetCommits, Params: map[string]any{"service": svc, "path": strings.Join(files, ",")}}}, false
}

// The cluster DNS server of Kubernetes (CoreDNS, deployed as the kube-dns
// compatible "coredns" in kube-system by kubeadm, EKS, GKE and AKS).
const (
	clusterDNSNamespace = "kube-system"
	clusterDNSWorkload  = "coredns"
)

// oomFollowUps: a memory limit the namespace's LimitRange set (the
// container declares none) is read from the LimitRange itself.
func oomFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	if !slices.Contains(f.Signals, "LimitRange default") {
		return nil, false
	}
	ns := ""
	if parts := strings.Split(f.Entity, "/"); len(parts) == 3 {
		ns = parts[1]
	}
	if ns == "" || strings.HasPrefix(f.Entity, "limitrange/") {
		return nil, false
	}
	return []FollowUp{{Intent: intent.DescribeResource, Params: map[string]any{"kind": "limitrange", "name": "*", "namespace": ns}}}, false
}

// maxConsumerLogs bounds the new consumers whose logs a quota reading
// asks for.
const maxConsumerLogs = 2

// rateLimitFollowUps: a quota can be shared (an account, an API key) with
// whatever started just before the first 429; the logs of the pods of
// other workloads that started then say whether they call the same
// dependency with the same identity.
func rateLimitFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	var out []FollowUp
	for _, g := range ev.rateLimitGroups() {
		if !slices.Contains(f.Signals, g.target) {
			continue
		}
		for _, p := range ev.newConsumers(g.callers, g.first().Timestamp) {
			if len(out) >= maxConsumerLogs {
				break
			}
			out = append(out, FollowUp{Intent: intent.FetchPodLogs, Params: map[string]any{"namespace": p.Namespace, "pod": p.Name}})
		}
		break
	}
	return out, false
}

// imagePullFollowUps: a registry that limits pulls ("toomanyrequests")
// counts every pull, from every namespace; the cluster's pull events say
// who else pulls from it.
func imagePullFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	if !slices.Contains(f.Signals, signalPullRateLimited) {
		return nil, false
	}
	return []FollowUp{{Intent: intent.GetEvents, Params: map[string]any{"namespace": "all", "reason": "Pulling"}}}, false
}

// dnsFollowUps: a cluster-local name (service/<ns>/<name>, from
// <name>.<ns>.svc...) that does not resolve: the cluster DNS server's own
// logs and configuration are the next evidence, and nothing else follows;
// an outside host's name: what its provider and others say of it.
func dnsFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	if strings.HasPrefix(f.Entity, "host/") {
		// A public name that does not resolve is its provider's failure
		// (its domain, its DNS): a dependency's follow-ups.
		return dependencyFollowUps(ev, f)
	}
	if !strings.HasPrefix(f.Entity, "service/") || strings.Count(f.Entity, "/") != 2 {
		return nil, false
	}
	out := []FollowUp{
		{Intent: intent.FetchPodLogs, Params: map[string]any{"namespace": clusterDNSNamespace, "pod": clusterDNSWorkload + "-*"}},
		{Intent: intent.DescribeResource, Params: map[string]any{"kind": "configmap", "name": clusterDNSWorkload, "namespace": clusterDNSNamespace}},
	}
	// Lookups that time out are dropped on the way to the DNS server:
	// the callers' namespaces' egress policies are next.
	var callerNS []string
	for _, l := range ev.Logs {
		if l.Namespace != "" && reLookupTimeout.MatchString(l.Message) && len(callerNS) < 2 {
			callerNS = appendUnique(callerNS, l.Namespace)
		}
	}
	for _, ns := range callerNS {
		out = append(out, FollowUp{Intent: intent.DescribeResource, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}})
	}
	return out, true
}

// dependencyFollowUps: a dependency that went away may have been taken
// down on purpose (planned maintenance, change records, cluster-wide); and
// connections to it that time out while dialing (dropped, not refused) are
// dropped on the path, so the caller namespace's NetworkPolicies are next.
func dependencyFollowUps(ev *Evidence, f Finding) ([]FollowUp, bool) {
	out := []FollowUp{{Intent: intent.SearchLogs, Params: map[string]any{"query": "maintenance OR \"change window\""}}}
	ns := ""
	if a := ev.Alert; a != nil {
		ns = a.GetNamespace()
		if ns == "" {
			ns = a.GetLabels()["namespace"]
		}
	}
	if dep := dependencyName(f); dep != "" {
		// What the rest of the system logged about the dependency (its
		// own logs, a network plugin's verdicts, a sync of its policy).
		out = append(out, FollowUp{Intent: intent.SearchLogs, Params: map[string]any{"query": `"` + dep + `"`}})
		// An outside provider speaks of itself by its name, not by the
		// host its API answers on: its status page, a watcher of it.
		if p := providerName(dep); p != "" {
			out = append(out, FollowUp{Intent: intent.SearchLogs, Params: map[string]any{"query": `"` + p + `"`, "namespace": "all"}})
			if strings.HasPrefix(f.Entity, "host/") {
				out = append(out, FollowUp{Intent: intent.GetStatusPage, Params: map[string]any{"provider": p}})
			}
		}
	}
	if parts := strings.Split(f.Entity, "/"); len(parts) == 3 && parts[0] == "service" && ev.dependencyUnread(f.Entity, dependencyName(f)) {
		// An in-cluster dependency no listing has read (another
		// namespace): its own pods say whether it fails itself.
		out = append(out, FollowUp{Intent: intent.ListPods, Params: map[string]any{"namespace": parts[1]}})
	}
	if parts := strings.Split(f.Entity, "/"); len(parts) == 3 && parts[0] == "service" {
		// The Service itself: its endpoints, ports and traffic policy say
		// whether calls to it can reach a pod at all.
		out = append(out, FollowUp{Intent: intent.DescribeResource, Params: map[string]any{"kind": "service", "name": parts[2], "namespace": parts[1]}})
	}
	if ev.droppedConnections(f) {
		// Dropped on the path: the caller's egress policies and, for an
		// in-cluster dependency (service/<ns>/<name>), the callee's
		// ingress policies in its own namespace.
		if ns != "" {
			out = append(out, FollowUp{Intent: intent.DescribeResource, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": ns}})
		}
		if parts := strings.Split(f.Entity, "/"); len(parts) == 3 && parts[0] == "service" && parts[1] != ns {
			out = append(out, FollowUp{Intent: intent.DescribeResource, Params: map[string]any{"kind": "networkpolicy", "name": "*", "namespace": parts[1]}})
		}
	}
	return out, false
}

// providerName is the name an outside host's operator goes by
// (target.Provider).
func providerName(host string) string { return target.Provider(host) }

// maxExternalProviders bounds the outside providers ExternalProviders names.
const maxExternalProviders = 2

// ExternalProviders are the providers (providerName) of the hosts outside
// the cluster that failing lines name (a URL's host, the target of a failed
// call), the leading finding's own host first, then by how many failing
// lines name them; at most maxExternalProviders. Their status pages are
// the next evidence.
func (r Result) ExternalProviders() []string {
	if r.ev == nil {
		return nil
	}
	var out []string
	if len(r.Findings) > 0 && strings.HasPrefix(r.Findings[0].Entity, "host/") {
		if p := providerName(strings.TrimPrefix(r.Findings[0].Entity, "host/")); p != "" {
			out = append(out, p)
		}
	}
	count := map[string]int{}
	var order []string
	for _, l := range r.ev.Logs {
		if !isErrorLog(l.LogLine) && logLevel(l.LogLine) != "WARN" || !depErrRe.MatchString(l.Message) {
			continue
		}
		host := ""
		if u := urlHostRe.FindStringSubmatch(l.Message); u != nil {
			host = u[1]
		} else if m := depTargetRe.FindStringSubmatch(l.Message); m != nil {
			host, _, _ = strings.Cut(strings.TrimRight(m[1], ".:"), ":")
		}
		if strings.Count(host, ".") < 2 {
			continue
		}
		p := providerName(host)
		if p == "" {
			continue
		}
		if count[p] == 0 {
			order = append(order, p)
		}
		count[p]++
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	for _, p := range order {
		if len(out) >= maxExternalProviders {
			break
		}
		out = appendUnique(out, p)
	}
	return out
}

// dependencyName names the finding's failing dependency: a Service's
// short name (service/<ns>/<name>) or a host, "" when it has none.
func dependencyName(f Finding) string {
	parts := strings.Split(f.Entity, "/")
	name := parts[len(parts)-1]
	if len(parts) == 3 && parts[0] == "service" {
		return name
	}
	if len(parts) == 2 && parts[0] == "host" && len(name) >= 4 {
		return name
	}
	return ""
}

// droppedConnections: the finding's failing dependency (its second signal,
// the target its callers name) is reached by error lines that time out
// while connecting (dropTimeoutRe, the NetworkPolicy detector's phrases).
func (ev *Evidence) droppedConnections(f Finding) bool {
	if f.Mode != ModeDependencyFailure || len(f.Signals) < 2 || f.Signals[1] == "" {
		return false
	}
	target := strings.ToLower(f.Signals[1])
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) && logLevel(l.LogLine) != "WARN" {
			continue
		}
		if strings.Contains(strings.ToLower(l.Message), target) && dropTimeoutRe.MatchString(l.Message) {
			return true
		}
	}
	return false
}

// ErrorSignature is the most specific code symbol of the strongest
// abnormal entity's most frequent error (an exception's class name, an
// error code's constant), "" when its errors carry none: what an SRE
// searches the history for ("has this been seen, filed, accepted?").
func (r Result) ErrorSignature() string {
	if r.ev == nil {
		return ""
	}
	cs := r.ev.anomalyCandidates()
	if len(cs) == 0 || len(cs[0].errLines) == 0 {
		return ""
	}
	msg := templates(cs[0].errLines)[0].lines[0].Message
	best := ""
	for _, id := range reIdentifier.FindAllString(msg, -1) {
		// The last dotted part of a qualified name is the symbol itself
		// (org.apache.catalina.connector.ClientAbortException).
		if i := strings.LastIndexByte(id, '.'); i >= 0 && i < len(id)-1 {
			id = id[i+1:]
		}
		if len(id) >= 8 && codeSymbol(id) && len(id) > len(best) {
			best = id
		}
	}
	return best
}

// RefusedStatus is the HTTP status the strongest abnormal workload refuses
// its clients with, when its only abnormal error series are client errors
// (4xx) and none is a server error: whose requests they are is in the
// access log, the next evidence. "" otherwise.
func (r Result) RefusedStatus() string {
	if r.ev == nil {
		return ""
	}
	cs := r.ev.anomalyCandidates()
	if len(cs) == 0 || cs[0].kind != "workload" {
		return ""
	}
	code := ""
	for _, ch := range cs[0].changes {
		if _, server := signal.StatusError(ch.s.Labels); server {
			return ""
		}
		if signal.ClientError(ch.s.Labels) && code == "" {
			for _, k := range signal.CodeKeys {
				if v := ch.s.Labels[k]; len(v) == 3 && v[0] == '4' {
					code = v
					break
				}
			}
		}
	}
	return code
}

// maxProviderLines bounds the lines of other systems quoted about a
// failing outside provider.
const maxProviderLines = 2

// providerContext adds to f, a failure of the outside host host that the
// failing lines report, what other systems than their callers logged about
// the host or its provider (a registrar's or a watcher's record, a vendor
// notice) around the failure: at most maxProviderLines lines, one per
// template, nearest the onset first, each a claim quoted as data.
func (ev *Evidence) providerContext(f *Finding, host string, failing []LogLine, onset time.Time) {
	p := providerName(host)
	if p == "" || onset.IsZero() {
		return
	}
	var callers []string
	for _, l := range failing {
		callers = appendUnique(callers, l.Service)
	}
	names := []string{strings.ToLower(host), strings.ToLower(p)}
	lines := ev.nearestLines(onset, contextLookBack, maxProviderLines, func(l LogLine) bool {
		m := strings.ToLower(l.Message)
		return !slices.ContainsFunc(callers, func(c string) bool { return strings.EqualFold(c, l.Service) }) &&
			slices.ContainsFunc(names, func(n string) bool { return strings.Contains(m, n) })
	})
	for _, l := range lines {
		f.validated(fmt.Sprintf("What %s logged about %s (%s): %s", logOrigin(l), p, hhmm(l.Timestamp), quote(l.Message)), l.Cite)
	}
}

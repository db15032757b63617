package analysis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/target"
)

// ModeNodeHostFault: the host's own journal (kernel, kubelet, hardware
// monitors) reports faults on a node that runs the alerted workload: a
// disk's I/O errors, a memory controller's uncorrectable errors, a device
// that stopped answering. The node is the cause; its pods' errors are
// symptoms.
const ModeNodeHostFault = "node_host_fault"

// nodeFaultSlack is how long after the incident's onset a node's first
// fault line may come and still be its cause (journals and scrapes lag).
const nodeFaultSlack = 5 * time.Minute

// hostLine is a log line a node's host wrote about itself.
type hostLine struct {
	LogLine
	node string
}

// knownNodes are the node names in evidence: the nodes the node tools
// returned, the nodes pods are placed on, and the node the alert names.
func (ev *Evidence) knownNodes() []string {
	var out []string
	for _, n := range ev.Nodes {
		out = appendUnique(out, n.Name)
	}
	for _, p := range ev.Pods {
		if p.Node != "" {
			out = appendUnique(out, p.Node)
		}
	}
	return append(out, ev.alertedNodes()...)
}

// alertedNodes are the nodes the alert itself names (a node label, or a
// node as the alert's resource).
func (ev *Evidence) alertedNodes() []string {
	if ev.Alert == nil {
		return nil
	}
	var out []string
	if v := target.Lookup(ev.Alert.GetLabels(), target.Node); v != "" {
		out = append(out, v)
	}
	if strings.EqualFold(ev.Alert.GetResourceKind(), "node") && ev.Alert.GetResourceName() != "" {
		out = appendUnique(out, ev.Alert.GetResourceName())
	}
	// A host the alert names by a machine's name (no domain, not a pod's):
	// the machine the monitor watches, a node or the hypervisor under one.
	if v := target.Lookup(ev.Alert.GetLabels(), target.Host); v != "" && !strings.Contains(v, ".") && !facts.IsDeploymentPod(strings.ToLower(v)) && !ev.podNamed(v) {
		out = appendUnique(out, v)
	}
	return out
}

// podNamed: name is a pod's in the evidence (a listing's, or the pod of a
// log line that carries a namespace): a StatefulSet's pod ("casks-pg-0")
// that a log search reports as its host is no machine.
func (ev *Evidence) podNamed(name string) bool {
	for _, p := range ev.Pods {
		if strings.EqualFold(p.Name, name) {
			return true
		}
	}
	for _, l := range ev.Logs {
		if l.Namespace != "" && strings.EqualFold(l.Pod, name) {
			return true
		}
	}
	return false
}

// HostName is the name a node's host logs itself by: its first label when
// that is distinctive (six characters or more: "ip-10-55-3-103" of
// "ip-10-55-3-103.eu-west-1.compute.internal"), else the full name. A
// search for it finds the full name too.
func HostName(node string) string {
	if s := shortNode(node); len(s) >= 6 {
		return s
	}
	return node
}

// podInTrouble: a pod not Ready, restarted, or Failed.
func podInTrouble(p Pod) bool {
	return !podReady(p.Pod) || p.Restarts > 0 || strings.EqualFold(p.Phase, "Failed")
}

// nodeNamed is the node of nodes that name designates (the full name or
// its first label, as hosts often log their short name), "" when none.
func nodeNamed(name string, nodes []string) string {
	name = strings.TrimSuffix(strings.TrimSpace(name), ":")
	if name == "" {
		return ""
	}
	for _, n := range nodes {
		if strings.EqualFold(name, n) || strings.EqualFold(name, HostName(n)) {
			return n
		}
	}
	return ""
}

// hostOf is the node whose host wrote l: a line without a pod whose pod
// field or first word is a node's name (a journal shipped with the host
// as its source, a syslog line "<host> kernel: ..."). A pod's own lines
// are its application's, whatever node they name.
func hostOf(l LogLine, nodes []string) string {
	if n := nodeNamed(l.Pod, nodes); n != "" {
		return n
	}
	if l.Pod != "" {
		return ""
	}
	if n := nodeNamed(l.Host, nodes); n != "" {
		return n // the log store's record of the machine that wrote it
	}
	if n := nodeNamed(l.Service, nodes); n != "" {
		return n // a host journal shipped under the machine's name
	}
	if f := strings.Fields(l.Message); len(f) > 0 {
		return nodeNamed(f[0], nodes)
	}
	return ""
}

// reProgramTag: the leading "<program>: " (or "<host>: ") of a host's
// journal line: who wrote it, not what failed ("kernel:" says nothing of
// the fault).
var reProgramTag = regexp.MustCompile(`^(?:\S+?(?:\[\d+\])?:\s+)+`)

// infraEffect: a journal line of node whose first matching effect row,
// past the host's name and the program tags that start it, is a node, disk
// or network level fault.
func infraEffect(text, node string) bool {
	if f := strings.Fields(text); len(f) > 0 && nodeNamed(f[0], []string{node}) != "" {
		text = strings.TrimSpace(strings.TrimPrefix(text, f[0]))
	}
	fam, ok := familyOf(reProgramTag.ReplaceAllString(text, ""))
	return ok && fam.cat == catInfra
}

// nodeFaultLine: a host line that reports a fault: logged as an error or
// a warning (a host's own journal warns of what degrades it: a clock
// source marked unstable, a runtime killed and restarted).
func nodeFaultLine(l LogLine) bool {
	switch logLevel(l.LogLine) {
	case "ERROR", "FATAL", "WARN":
		return true
	}
	return false
}

func detectNodeHostFault(ev *Evidence) []Finding {
	nodes := ev.knownNodes()
	if len(nodes) == 0 {
		return nil
	}
	byNode := map[string][]hostLine{}
	severe := map[string]bool{}
	// A host's warning of a node-level fault (a NIC dropping packets, a
	// disk's I/O errors) on a node the alert itself names is as strong as
	// an error: the alert points at the machine, the host says what fails.
	alerted := map[string]bool{}
	for _, n := range ev.alertedNodes() {
		alerted[nodeNamed(n, nodes)] = true
	}
	for _, l := range ev.Logs {
		n := hostOf(l, nodes)
		if n == "" || !nodeFaultLine(l) || ev.absorbedRetry(l) {
			continue // a failure its own retry absorbed is no fault of the host
		}
		byNode[n] = append(byNode[n], hostLine{l, n})
		severe[n] = severe[n] || isErrorLog(l.LogLine) || alerted[n] && infraEffect(l.Message, n)
	}
	if len(byNode) == 0 {
		return nil
	}
	// The nodes that matter: the ones the alert names and the ones that
	// run the alerted workload; with no workload resolved, the ones that
	// run a pod in trouble.
	relevant := maps.Clone(alerted)
	targets := ev.targetPods()
	if _, name := splitEntity(ev.workloadEntity()); name == "" || len(targets) == 0 {
		targets = nil
		for _, p := range ev.Pods {
			if podInTrouble(p) {
				targets = append(targets, p)
			}
		}
	}
	onNode := map[string][]Pod{}
	for _, p := range targets {
		if p.Node != "" {
			relevant[p.Node] = true
			onNode[p.Node] = append(onNode[p.Node], p)
		}
	}
	onset, hasOnset := ev.incidentOnset()
	// A node whose host only warns is a candidate when it warned more than
	// once and the warnings are confined to it: the workload's pods on
	// other nodes, whose hosts logged nothing, are the control.
	confined := func(n string) bool {
		for m := range onNode {
			if m != n && len(byNode[m]) == 0 {
				return true
			}
		}
		return false
	}
	var cands []string
	for n, lines := range byNode {
		if !relevant[n] || !severe[n] && (len(lines) < 2 || !confined(n)) {
			continue
		}
		first := lines[0].Timestamp
		if hasOnset && first != nil && first.After(onset.Add(nodeFaultSlack)) {
			continue // the node's trouble began after the incident: not its cause
		}
		cands = append(cands, n)
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		if len(byNode[cands[i]]) != len(byNode[cands[j]]) {
			return len(byNode[cands[i]]) > len(byNode[cands[j]])
		}
		return cands[i] < cands[j]
	})
	n := cands[0]
	lines := byNode[n]
	var plain []LogLine
	sources := []string{}
	for _, l := range lines {
		plain = append(plain, l.LogLine)
		sources = appendUnique(sources, hostSource(l.LogLine))
	}
	cat := catInfra
	// The host ran out of something (disk, inodes, PIDs), not broke: its
	// first fault line says so, or most of its lines carry an unambiguous
	// capacity signature (no space left, out of memory), whatever line
	// came first.
	res := 0
	for _, l := range plain {
		if families[0].re.MatchString(l.Message) {
			res++
		}
	}
	if fam, ok := familyOf(plain[0].Message); ok && fam.cat == catResource || 2*res > len(plain) {
		cat = catResource
	}
	f := Finding{Mode: ModeNodeHostFault, Category: cat, Entity: "node/" + n, Score: 0.8}
	if !severe[n] {
		f.Score = 0.7 // warnings only: weaker than errors, the confinement carries it
	}
	reps := representative(plain, 4)
	f.Statement = fmt.Sprintf("Node %s reports faults in its own journal: %s from %s since %s (e.g. %s)",
		n, plural(len(lines), "fault line", "fault lines"), joinNames(sources), hhmm(lines[0].Timestamp), quote(reps[0].Message))
	for _, l := range reps {
		f.validated(fmt.Sprintf("%s log (%s on %s): %s", l.Cite.Source("logs"), hostSource(l), n, quote(l.Message)), citesOfLogs(sameSig(plain, l)))
	}
	// What the node's pods show: their own errors, their state.
	pods := onNode[n]
	var podLines []LogLine
	podOn := map[string]bool{}
	for _, p := range pods {
		podOn[p.Name] = true
	}
	for _, l := range ev.Logs {
		if podOn[l.Pod] && isErrorLog(l.LogLine) {
			podLines = append(podLines, l)
		}
	}
	for _, l := range representative(podLines, 2) {
		f.validated(fmt.Sprintf("%s log (%s on %s): %s", l.Cite.Source("logs"), l.Pod, n, quote(l.Message)), l.Cite)
	}
	var names []string
	troubled := 0
	for _, p := range pods {
		names = append(names, p.Name)
		if !podReady(p.Pod) || p.Restarts > 0 {
			troubled++
			f.validated(fmt.Sprintf("Pod %s on node %s: phase %s, Ready=%v, %d restarts", p.Name, n, p.Phase, podReady(p.Pod), p.Restarts), p.Cite)
		}
	}
	if len(names) > 0 {
		f.Statement += fmt.Sprintf("; it runs %s", joinNames(names))
	}
	if len(podLines) > 0 || troubled > 0 {
		f.Score += 0.05
		f.Statement += ", whose errors follow from it"
	}
	// Confined: the workload's pods on other nodes, whose hosts report
	// nothing, are the control.
	var elsewhere []string
	for m := range onNode {
		if m != n && len(byNode[m]) == 0 {
			elsewhere = append(elsewhere, m)
		}
	}
	if len(elsewhere) > 0 {
		sort.Strings(elsewhere)
		f.Score += 0.05
		f.inferred(fmt.Sprintf("The same workload's pods on %s, whose hosts report no fault, are the control: the failure follows the node", joinNames(elsewhere)))
	}
	if others := len(cands) - 1; others > 0 {
		f.inferred(fmt.Sprintf("%d other node(s) that matter report fewer faults", others))
	}
	f.explains(ModeNodeNetwork, "the node's own journal names the fault")
	f.Chain = []string{
		fmt.Sprintf("The host of node %s fails (%s)", n, quote(reps[0].Message)),
		"Pods placed on the node lose the device, disk or memory they run on",
		"Requests served by those pods fail or slow down",
	}
	f.Remediation = []string{
		fmt.Sprintf("Cordon and drain node %s so its pods move to healthy nodes", n),
		"Replace the instance (or have the provider repair the host) before it returns to service; keep replicas spread across nodes",
	}
	f.Signals = []string{"node", n}
	return []Finding{f}
}

// hostSource names what on the host wrote a line: the program before the
// first colon of a syslog line ("kernel", "kubelet"), else the log's
// service.
func hostSource(l LogLine) string {
	msg := l.Message
	if f := strings.Fields(msg); len(f) > 1 && strings.HasSuffix(f[1], ":") && !strings.Contains(f[0], ":") {
		msg = strings.Join(f[1:], " ") // "<host> kernel: ..."
	}
	if i := strings.Index(msg, ":"); i > 0 && i <= 24 && !strings.ContainsAny(msg[:i], " [(") {
		return msg[:i]
	}
	if l.Service != "" {
		return l.Service
	}
	return "the host"
}

// maxHostNodes bounds the nodes whose host logs one reading asks for.
const maxHostNodes = 3

// HostNodes are the nodes whose own logs (kernel, kubelet, hardware
// monitors) the reading should read: the nodes the alert names, then
// the nodes that run the alerted workload's pods in trouble, then its
// other pods' nodes; at most maxHostNodes.
func (r Result) HostNodes() []string {
	if r.ev == nil {
		return nil
	}
	ev := r.ev
	out := ev.alertedNodes()
	var troubled, rest []string
	targets := ev.targetPods()
	if _, name := splitEntity(ev.workloadEntity()); name == "" {
		targets = nil // every pod of the cluster is not the workload's
	}
	for _, p := range ev.Pods {
		if p.Node == "" {
			continue
		}
		bad := podInTrouble(p)
		switch {
		case bad:
			troubled = appendUnique(troubled, p.Node)
		case slices.ContainsFunc(targets, func(t Pod) bool { return t.Name == p.Name }):
			rest = appendUnique(rest, p.Node)
		}
	}
	for _, n := range append(troubled, rest...) {
		out = appendUnique(out, n)
	}
	if len(out) > maxHostNodes {
		out = out[:maxHostNodes]
	}
	return out
}

// ModeNodeSandbox: pods cannot get a sandbox (their network, their
// runtime) on one node while the same workloads run elsewhere: the node's
// network plugin or container runtime fails, whatever words its error
// uses (an address pool exhausted by leaked reservations, a plugin that
// crashed).
const ModeNodeSandbox = "node_sandbox_failure"

// reSandboxFailure: the kubelet's report that a pod's sandbox could not be
// created or its network set up.
var reSandboxFailure = regexp.MustCompile(`(?i)FailedCreatePodSandBox|failed to (create pod sandbox|setup network for sandbox|set up sandbox)`)

func detectNodeSandbox(ev *Evidence) []Finding {
	nodeOf := ev.podNodes()
	byNode := map[string][]Event{}
	pods := map[string][]string{}
	for _, e := range ev.Events {
		if !strings.EqualFold(e.InvolvedKind, "Pod") || !reSandboxFailure.MatchString(e.Reason+" "+e.Message) {
			continue
		}
		n := nodeOf[e.InvolvedName]
		if n == "" {
			return nil // a failing pod on an unknown node: not confined to one
		}
		byNode[n] = append(byNode[n], e)
		pods[n] = appendUnique(pods[n], e.InvolvedName)
	}
	if len(byNode) != 1 {
		return nil // none, or several nodes: the cluster's network, not one node's
	}
	var n string
	for k := range byNode {
		n = k
	}
	evs := byNode[n]
	count := 0
	for _, e := range evs {
		count += int(eventCount(e.Event))
	}
	// Elsewhere the same workloads run: the control.
	failingWL := map[string]bool{}
	for _, p := range ev.Pods {
		if slices.Contains(pods[n], p.Name) {
			failingWL[ev.workloadOf(p.Pod)] = true
		}
	}
	elsewhere := 0
	for _, p := range ev.Pods {
		if p.Node != "" && p.Node != n && failingWL[ev.workloadOf(p.Pod)] && podReady(p.Pod) {
			elsewhere++
		}
	}
	if elsewhere == 0 && count < 3 {
		return nil
	}
	f := Finding{Mode: ModeNodeSandbox, Category: catInfra, Entity: "node/" + n, Score: 0.8}
	f.Statement = fmt.Sprintf("Node %s cannot set up pod sandboxes: %s on %s (%s), e.g. %s",
		n, plural(count, "FailedCreatePodSandBox event", "FailedCreatePodSandBox events"), plural(len(pods[n]), "pod", "pods"), joinNames(pods[n]), quote(evs[0].Message))
	if elsewhere > 0 {
		f.Statement += fmt.Sprintf("; the same workloads run Ready on other nodes (%d pods)", elsewhere)
		f.Score += 0.04
	}
	for i, e := range evs {
		if i >= 3 {
			break
		}
		f.validated("Warning event "+eventLine(e), e.Cite)
	}
	// What the node's own journal says (its runtime, its address pool).
	nodes := ev.knownNodes()
	quoted := 0
	for _, l := range ev.Logs {
		if quoted < 3 && hostOf(l, nodes) == n {
			f.validated(fmt.Sprintf("%s log (%s on %s): %s", l.Cite.Source("logs"), hostSource(l), n, quote(l.Message)), l.Cite)
			quoted++
		}
	}
	f.explains(ModeNodeHostFault, "the node's sandbox failures are its own")
	f.Chain = []string{fmt.Sprintf("The network plugin or container runtime of node %s fails", n), "The kubelet cannot create sandboxes for pods placed there (FailedCreatePodSandBox)", "Those pods stay in ContainerCreating; the workload runs short of replicas"}
	f.Remediation = []string{fmt.Sprintf("Cordon and drain node %s, then repair its network plugin state (leaked address reservations, the plugin's daemon) or replace the node", n), "Alert on FailedCreatePodSandBox per node"}
	f.Signals = []string{"FailedCreatePodSandBox", n}
	return []Finding{f}
}

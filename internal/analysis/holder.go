package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// A row of the cause-to-effect table for a shared resource: a node whose
// disk, network or I/O is saturated is where the failure shows, not what
// caused it. Its holder is the workload on that node that uses the
// resource up: batch work (a Job's pod) that started there shortly before
// the onset, or, for a node's disk, a container there that keeps crashing
// (each crash leaves a dump or logs on the node's disk). The holder is the
// cause, a resource exhaustion, its workload the entity; the pods of the
// alerted workload there are its victims. A node that reports the pressure
// itself (DiskPressure, MemoryPressure, PIDPressure: the kubelet evicts)
// stays a node-level fault: the condition is the node's.

// ModeNodeHolder: a node's saturated resource, held by a workload on it.
const ModeNodeHolder = "node_holder"

// holderLookback: batch work that started this long before the onset is
// a suspect holder.
const holderLookback = 90 * time.Minute

// minHolderRestarts: a crash-looping holder restarted at least this often.
const minHolderRestarts = 3

// nodeHolder: the lead is about a node (a pressure condition, a
// confinement to that node); a workload on that node other than the
// alerted one holds its resource.
func (ev *Evidence) nodeHolder(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || !strings.HasPrefix(lead.Entity, "node/") || lead.Category != catInfra && lead.Category != catResource {
		return Finding{}, false
	}
	node := strings.TrimPrefix(lead.Entity, "node/")
	if ev.nodeUnderPressure(node) {
		// The node reports the pressure itself (its kubelet's condition,
		// its taint and evictions): a node-level fault, whoever filled it.
		return Finding{}, false
	}
	onset := sc.at
	if sc.hasOnset {
		onset = sc.onset
	}
	disk := containsFold(lead.Statement, "disk", "filesystem", "ephemeral", "storage", "i/o", "iops")
	_, alerted := splitEntity(ev.workloadEntity())
	type holder struct {
		entity, why string
		at          time.Time
		cite        Cite
	}
	var hs []holder
	for _, p := range ev.Pods {
		if p.Node != node || strings.EqualFold(p.OwnerKind, "DaemonSet") {
			continue // a DaemonSet runs on every node: no one node's holder
		}
		w := ev.workloadOf(p.Pod)
		if alerted != "" && strings.EqualFold(w, alerted) {
			continue // the alerted workload's pods there are the victims
		}
		start := p.StartTime
		if start == nil {
			start = p.CreatedAt
		}
		switch {
		case strings.EqualFold(p.OwnerKind, "Job") && p.OwnerName != "" && start != nil && !start.After(onset.Add(time.Minute)) && onset.Sub(*start) <= holderLookback:
			hs = append(hs, holder{"job/" + qualifiedName(p.Namespace, p.OwnerName), fmt.Sprintf("batch work: pod %s of Job %s started on %s at %s, %s before the onset", p.Name, p.OwnerName, node, hhmm(start), durHuman(onset.Sub(*start))), *start, p.Cite})
		case disk && podRestarts(p.Pod) >= minHolderRestarts && w != "":
			hs = append(hs, holder{deploymentEntity(p.Namespace, w), fmt.Sprintf("pod %s of %s on %s keeps crashing (%d restarts): each crash leaves its dump and logs on the node's disk", p.Name, w, node, podRestarts(p.Pod)), onset, p.Cite})
		}
	}
	if len(hs) == 0 {
		return Finding{}, false
	}
	// One holder only: two suspects on the node leave the node the finding.
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].entity < hs[j].entity })
	for _, h := range hs[1:] {
		if h.entity != hs[0].entity {
			return Finding{}, false
		}
	}
	h := hs[0]
	f := Finding{Mode: ModeNodeHolder, Detector: ModeNodeHolder, Category: catResource, Entity: h.entity, Score: min(0.95, lead.Score+0.05)}
	f.Statement = fmt.Sprintf("%s uses up node %s's shared resource (%s): %s", h.entity, node, h.why, strings.TrimSuffix(lead.Statement, "."))
	f.validated("The holder of the node's resource: "+h.why, h.cite)
	f.adoptLead(lead,
		[]string{fmt.Sprintf("%s runs on node %s", h.entity, node), "It uses up the node's shared resource (disk, network, I/O)", "The other pods on the node fail with it"},
		[]string{fmt.Sprintf("Stop or move %s off the shared node (limits, scheduling, a dedicated pool), then clean up what it left", h.entity)},
		[]string{"node", "holder"}, "the node's saturated resource is held by a workload on it")
	return f, true
}

// nodeUnderPressure reports whether the node reports a pressure condition
// (DiskPressure, MemoryPressure, PIDPressure) as true.
func (ev *Evidence) nodeUnderPressure(name string) bool {
	for _, n := range ev.Nodes {
		if n.Name != name {
			continue
		}
		for _, c := range nodePressures(n.Node) {
			if strings.HasSuffix(c, "Pressure") {
				return true
			}
		}
	}
	return false
}

// ModePressureHolder: several nodes report the same pressure and one
// workload, alone among those in evidence, runs on every one of them: it
// holds the resource (processes it leaves behind, memory it takes, disk
// it fills). One cause explains every node's condition; the nodes are
// where it shows.
const ModePressureHolder = "pressure_holder"

// maxHolderLines bounds the holder's own lines a finding quotes.
const maxHolderLines = 3

func detectPressureHolder(ev *Evidence) []Finding {
	byCond := map[string][]string{}
	for _, n := range ev.Nodes {
		if nodeReadyStatus(n.Node) != "True" {
			continue
		}
		for _, c := range nodePressures(n.Node) {
			if strings.HasSuffix(c, "Pressure") {
				byCond[c] = append(byCond[c], n.Name)
			}
		}
	}
	var out []Finding
	for _, cond := range sortedKeys(byCond) {
		nodes := byCond[cond]
		if len(nodes) < 2 {
			continue // one node: its own fault, whoever filled it (nodeHolder)
		}
		// The workloads with pods on every pressured node.
		on := map[string]map[string]bool{} // entity -> nodes
		pods := map[string][]Pod{}
		for _, p := range ev.Pods {
			if p.Node == "" || strings.EqualFold(p.OwnerKind, "DaemonSet") || !slices.Contains(nodes, p.Node) {
				continue
			}
			w := ev.workloadOf(p.Pod)
			if w == "" {
				continue
			}
			ent := deploymentEntity(p.Namespace, w)
			if on[ent] == nil {
				on[ent] = map[string]bool{}
			}
			on[ent][p.Node] = true
			pods[ent] = append(pods[ent], p)
		}
		var common []string
		for ent, ns := range on {
			if len(ns) == len(nodes) {
				common = append(common, ent)
			}
		}
		if len(common) != 1 {
			continue // none, or several suspects: the nodes stay the findings
		}
		ent := common[0]
		_, w := splitEntity(ent)
		f := Finding{Mode: ModePressureHolder, Category: catResource, Entity: ent, Score: 0.74}
		f.Statement = fmt.Sprintf("%s holds the resource behind %s on %d nodes: %s report %s, and %s is the one workload with pods on every one of them (%s)",
			w, cond, len(nodes), joinNames(nodes), cond, w, joinNames(podNames(pods[ent])))
		for _, n := range ev.Nodes {
			if slices.Contains(nodes, n.Name) {
				f.validated(fmt.Sprintf("Node %s: %s=True", n.Name, cond), n.Cite)
			}
		}
		// What its pods log: the processes, memory or files it keeps.
		own := map[string]bool{}
		for _, p := range pods[ent] {
			own[p.Name] = true
		}
		var lines []LogLine
		for _, l := range ev.Logs {
			if own[l.Pod] && (isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN") {
				lines = append(lines, l)
			}
		}
		for _, l := range representative(lines, maxHolderLines) {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), l.Pod, quote(l.Message)), l.Cite)
		}
		if len(lines) > 0 {
			f.Score += 0.04
		}
		f.explains(ModeNodePressure, fmt.Sprintf("the %s of every pressured node is explained by the one workload running on all of them", cond))
		f.Chain = []string{fmt.Sprintf("%s uses up a node resource wherever it runs", w), fmt.Sprintf("Each node it runs on reports %s", cond), "The kubelet evicts pods and refuses new work there; the workload itself fails"}
		f.Remediation = []string{fmt.Sprintf("Stop what %s leaks on its nodes (reap child processes, bound its memory or disk use), then restart its pods", w), "Set limits on the resource (pids, memory, ephemeral storage) so one workload cannot exhaust a node"}
		f.Signals = []string{cond, w}
		out = append(out, f)
	}
	return out
}

package analysis

import (
	"fmt"
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

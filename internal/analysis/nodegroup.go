package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A placement row over node groups: a workload whose failing pods (two or
// more) all run on nodes that share what they run (an OS image, a kernel,
// a container runtime, a kubelet version) while its pods that are fine all
// run on nodes that run something else fails through those nodes: an
// infrastructure fault of the node group (a new node image, a runtime
// upgrade), not of the workload. One node alone is confinedNode's.

// nodeSoftwareKeys: what a node runs, in the order a report names it.
var nodeSoftwareKeys = []string{"container_runtime", "os_image", "kernel", "kubelet"}

// confinedNodeGroup: the workload candidate's failing pods all run on
// nodes whose value of one software key differs from that of every node
// its fine pods run on (each side one value, two or more nodes in all).
func (ev *Evidence) confinedNodeGroup(top *candidate) (key, bad, fine string, badPods []string, ok bool) {
	if top.kind != "workload" {
		return "", "", "", nil, false
	}
	nodeOf := ev.podNodes()
	soft := map[string]map[string]string{}
	for _, n := range ev.Nodes {
		soft[n.Name] = n.Software
	}
	failing := top.errorPods()
	for _, p := range top.badPods {
		failing[p.Name] = true
	}
	if len(failing) == 0 {
		// No pod logged an error or is in a bad state: the pods whose
		// error or latency series moved.
		for _, ch := range top.changes {
			if p := labelOf(ch.s.Series, "pod"); p != "" && (ch.kind == "errors" || ch.kind == "latency") {
				failing[p] = true
			}
		}
	}
	var finePods []string
	for _, p := range ev.placedPods(top.name) {
		if !failing[p.Name] && podHealthy(p.Pod) {
			finePods = append(finePods, p.Name)
		}
	}
	for p := range failing {
		badPods = append(badPods, p)
	}
	sort.Strings(badPods)
	if len(badPods) < 2 || len(finePods) < 1 {
		return "", "", "", nil, false
	}
	valueOf := func(pods []string, k string) (string, map[string]bool) {
		v, nodes := "", map[string]bool{}
		for _, p := range pods {
			n := nodeOf[p]
			x := soft[n][k]
			if n == "" || x == "" || v != "" && x != v {
				return "", nil
			}
			v = x
			nodes[n] = true
		}
		return v, nodes
	}
	for _, k := range nodeSoftwareKeys {
		b, bn := valueOf(badPods, k)
		f, fn := valueOf(finePods, k)
		if b == "" || f == "" || b == f || len(bn)+len(fn) < 3 {
			continue
		}
		return k, b, f, badPods, true
	}
	return "", "", "", nil, false
}

// nodeGroupWords names a software key in a report.
func nodeGroupWords(key string) string {
	return map[string]string{"container_runtime": "container runtime", "os_image": "OS image", "kernel": "kernel", "kubelet": "kubelet"}[key]
}

// nodeGroupWhy is the vote's reason for the row.
func nodeGroupWhy(key, bad, fine string, badPods []string) string {
	return fmt.Sprintf("the failing pods (%s) all run on nodes with %s %s; the workload's pods on nodes with %s %s are fine", joinNames(badPods), nodeGroupWords(key), bad, nodeGroupWords(key), fine)
}

// ModeNodeGroup: a workload failing only on the nodes of one software.
const ModeNodeGroup = "node_group"

// nodeGroupRow: the lead is a fault of a workload whose failing pods all
// run on nodes of other software than its fine pods' nodes; the node
// group is the cause, an infrastructure fault, its first failing node the
// entity.
func (ev *Evidence) nodeGroupRow(lead Finding) (Finding, bool) {
	if lead.Healthy || lead.Category == catInfra {
		return Finding{}, false
	}
	_, name := splitEntity(lead.Entity)
	if name == "" {
		return Finding{}, false
	}
	for _, c := range ev.anomalyCandidates() {
		if c.kind != "workload" || !strings.EqualFold(c.name, facts.TrimReplicaSuffix(name)) && !strings.EqualFold(c.name, name) {
			continue
		}
		key, bad, fine, pods, ok := ev.confinedNodeGroup(c)
		if !ok {
			return Finding{}, false
		}
		node := ev.podNodes()[pods[0]]
		f := Finding{Mode: ModeNodeGroup, Detector: ModeNodeGroup, Category: catInfra, Entity: "node/" + node, Score: min(0.95, lead.Score+0.05)}
		f.Statement = fmt.Sprintf("%s fails only on the nodes that run %s %s (%s): %s", c.name, nodeGroupWords(key), bad, nodeGroupWhy(key, bad, fine, pods), strings.TrimSuffix(lead.Statement, "."))
		var cite Cite
		for _, n := range ev.Nodes {
			cite.merge(n.Cite)
		}
		f.validated("Placement: "+nodeGroupWhy(key, bad, fine, pods), cite)
		f.adoptLead(lead,
			[]string{fmt.Sprintf("Nodes run %s %s (a new node image or runtime)", nodeGroupWords(key), bad), "The workload's pods placed there fail; its pods elsewhere are fine"},
			[]string{fmt.Sprintf("Move the workload off the nodes with %s %s (or roll the node group back) and compare the nodes' defaults (limits, cgroups, runtime settings)", nodeGroupWords(key), bad)},
			[]string{"node", "placement"}, "the failure follows the nodes' software, not the workload")
		return f, true
	}
	return Finding{}, false
}

package analysis

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Several nodes under the same pressure and one workload alone on every
// one of them: it holds the resource (resource exhaustion, the workload);
// a DaemonSet runs everywhere and holds nothing in particular; one
// pressured node, or two workloads on every pressured node, leave the
// nodes the findings.
func TestPressureHolder(t *testing.T) {
	node := func(name string, pid bool) facts.Node {
		n := facts.Node{Name: name, Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}}
		if pid {
			n.Conditions = append(n.Conditions, facts.Condition{Type: "PIDPressure", Status: "True"})
		}
		return n
	}
	pod := func(name, workload, node, owner string) facts.Pod {
		p := healthyPod(name)
		p.Namespace, p.Workload, p.Node, p.OwnerKind = "quake", workload, node, owner
		return p
	}
	base := []facts.Pod{
		pod("probe-runner-1", "probe-runner", "n-1", "ReplicaSet"), pod("probe-runner-2", "probe-runner", "n-2", "ReplicaSet"),
		pod("archive-1", "archive", "n-2", "ReplicaSet"), pod("archive-2", "archive", "n-3", "ReplicaSet"),
		pod("log-agent-a", "log-agent", "n-1", "DaemonSet"), pod("log-agent-b", "log-agent", "n-2", "DaemonSet"),
	}
	tests := []struct {
		name  string
		nodes []facts.Node
		pods  []facts.Pod
		want  string
	}{
		{"one workload on both pressured nodes", []facts.Node{node("n-1", true), node("n-2", true), node("n-3", false)}, base, "deployment/quake/probe-runner"},
		{"one pressured node", []facts.Node{node("n-1", true), node("n-2", false), node("n-3", false)}, base, ""},
		{"two workloads on both", []facts.Node{node("n-1", true), node("n-2", true), node("n-3", false)}, append(base, pod("archive-3", "archive", "n-1", "ReplicaSet")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "KubeNodePIDPressure"}, []*evidencev1.EvidencePin{
				pin(t, "n", "get_node_health", "k8s", facts.KeyNodes, tc.nodes),
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, tc.pods),
			})
			fs := detectPressureHolder(ev)
			got := ""
			if len(fs) == 1 && fs[0].Category == catResource {
				got = fs[0].Entity
			}
			if got != tc.want || len(fs) > 1 {
				t.Fatalf("findings %+v, want %q", fs, tc.want)
			}
		})
	}
}

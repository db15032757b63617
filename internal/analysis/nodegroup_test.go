package analysis

import (
	"strings"
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A workload failing only on the nodes that run one container runtime
// while its pods on nodes of another are fine fails through those nodes
// (infrastructure); the same failure on nodes of both, or nodes that run
// the same software, is the workload's own.
func TestNodeGroupRow(t *testing.T) {
	node := func(name, runtime string) Node {
		return Node{Node: facts.Node{Name: name, Ready: true, Software: map[string]string{"container_runtime": runtime, "os_image": "Linux 2027.1"}}}
	}
	pod := func(name, node string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "music", Name: name, Node: node, Phase: "Running", Ready: true, Workload: "stream", OwnerKind: "ReplicaSet", OwnerName: "stream-5c8d7f9b6"}}
	}
	errLine := func(pod string) LogLine {
		return LogLine{LogLine: facts.LogLine{Namespace: "music", Service: "stream", Pod: pod, Level: "ERROR", Message: "accept tcp [::]:8080: accept4: too many open files"}}
	}
	lead := Finding{Mode: ModeAnomaly, Category: catResource, Score: 0.7, Entity: "deployment/music/stream", Statement: "stream ran out of file descriptors"}
	tests := []struct {
		name     string
		runtimes [4]string
		failing  []string
		want     bool
	}{
		{"failing only on the new runtime", [4]string{"containerd://2.0.1", "containerd://2.0.1", "containerd://1.7.22", "containerd://1.7.22"}, []string{"stream-5c8d7f9b6-a1", "stream-5c8d7f9b6-b2"}, true},
		{"failing on both runtimes", [4]string{"containerd://2.0.1", "containerd://1.7.22", "containerd://2.0.1", "containerd://1.7.22"}, []string{"stream-5c8d7f9b6-a1", "stream-5c8d7f9b6-b2"}, false},
		{"every node runs the same", [4]string{"containerd://2.0.1", "containerd://2.0.1", "containerd://2.0.1", "containerd://2.0.1"}, []string{"stream-5c8d7f9b6-a1", "stream-5c8d7f9b6-b2"}, false},
		{"one failing pod", [4]string{"containerd://2.0.1", "containerd://2.0.1", "containerd://1.7.22", "containerd://1.7.22"}, []string{"stream-5c8d7f9b6-a1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "StreamErrors", Namespace: "music", Service: "stream"}, nil)
			names := []string{"n1", "n2", "n3", "n4"}
			for i, n := range names {
				ev.Nodes = append(ev.Nodes, node(n, tc.runtimes[i]))
			}
			ev.Pods = []Pod{pod("stream-5c8d7f9b6-a1", "n1"), pod("stream-5c8d7f9b6-b2", "n2"), pod("stream-5c8d7f9b6-c3", "n3"), pod("stream-5c8d7f9b6-d4", "n4")}
			for _, p := range tc.failing {
				ev.Logs = append(ev.Logs, errLine(p))
			}
			f, ok := ev.nodeGroupRow(lead)
			if ok != tc.want {
				t.Fatalf("nodeGroupRow = %v (%s), want %v", ok, f.Statement, tc.want)
			}
			if ok && (f.Category != catInfra || !strings.HasPrefix(f.Entity, "node/n") || !strings.Contains(f.Statement, "containerd://2.0.1")) {
				t.Errorf("finding %s %s %q, want infrastructure on a node of the new runtime", f.Category, f.Entity, f.Statement)
			}
		})
	}
}

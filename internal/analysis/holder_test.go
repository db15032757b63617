package analysis

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A failure confined to one node whose network or disk is saturated is
// held by the batch work that started there just before (or, for a disk, a
// container there that keeps crashing): a resource exhaustion of that
// workload. A node that reports the pressure itself, a Job started long
// before, a DaemonSet, the alerted workload's own pods, or two suspects
// leave the node the finding.
func TestNodeHolder(t *testing.T) {
	alertAt := time.Date(2027, 8, 9, 6, 40, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { x := time.Date(2027, 8, 9, h, m, 0, 0, time.UTC); return &x }
	const node = "ip-10-1-2-3.compute.internal"
	victim := func(name string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "ingest", Name: name, Node: node, Phase: "Running", Ready: true, OwnerKind: "ReplicaSet", OwnerName: "frames-58f9c7d6b4", Workload: "frames", StartTime: at(1, 0)}}
	}
	job := func(name string, start *time.Time) Pod {
		return Pod{Pod: facts.Pod{Namespace: "ingest", Name: name + "-q7k2m", Node: node, Phase: "Running", Ready: true, OwnerKind: "Job", OwnerName: name, StartTime: start}}
	}
	crashing := Pod{Pod: facts.Pod{Namespace: "render", Name: "thumbs-78d9c6b5f4-7qrdk", Node: node, Phase: "Running", Restarts: 12, OwnerKind: "ReplicaSet", OwnerName: "thumbs-78d9c6b5f4", Workload: "thumbs", StartTime: at(1, 0)}}
	daemon := Pod{Pod: facts.Pod{Namespace: "logging", Name: "shipper-x2k9d", Node: node, Phase: "Running", Ready: true, OwnerKind: "DaemonSet", OwnerName: "shipper", StartTime: at(6, 10)}}
	network := Finding{Mode: ModeAnomaly, Category: catInfra, Score: 0.6, Entity: "node/" + node, Statement: "The failure is confined to node " + node + ": outbound bandwidth allowance exceeded"}
	disk := Finding{Mode: ModeAnomaly, Category: catInfra, Score: 0.6, Entity: "node/" + node, Statement: "node " + node + " filesystem /dev/sda1 nearly full"}
	pressure := []Node{{Node: facts.Node{Name: node, Ready: true, Conditions: []facts.Condition{{Type: "DiskPressure", Status: "True"}}}}}
	tests := []struct {
		name    string
		lead    Finding
		pods    []Pod
		nodes   []Node
		wantEnt string
	}{
		{"batch work started before the onset", network, []Pod{victim("frames-58f9c7d6b4-vj796"), job("archive-sync-29871440", at(6, 5)), daemon}, nil, "job/ingest/archive-sync-29871440"},
		{"a crashing container fills the node's disk", disk, []Pod{victim("frames-58f9c7d6b4-vj796"), crashing}, nil, "deployment/render/thumbs"},
		{"a crashing container does not hold the network", network, []Pod{victim("frames-58f9c7d6b4-vj796"), crashing}, nil, ""},
		{"the node reports the pressure", disk, []Pod{victim("frames-58f9c7d6b4-vj796"), job("archive-sync-29871440", at(6, 5))}, pressure, ""},
		{"a Job started hours before", network, []Pod{victim("frames-58f9c7d6b4-vj796"), job("archive-sync-29871440", at(2, 0))}, nil, ""},
		{"only the alerted workload and a DaemonSet", network, []Pod{victim("frames-58f9c7d6b4-vj796"), daemon}, nil, ""},
		{"two suspects", network, []Pod{job("archive-sync-29871440", at(6, 5)), job("reindex-29871441", at(6, 8))}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "FrameWritesSlow", Namespace: "ingest", Service: "frames", StartsAt: timestamppb.New(alertAt)}, nil)
			ev.Pods, ev.Nodes = tc.pods, tc.nodes
			f, ok := ev.nodeHolder(tc.lead, changeScan{at: alertAt, onset: *at(6, 20), hasOnset: true})
			if got := map[bool]string{true: f.Entity}[ok]; got != tc.wantEnt {
				t.Fatalf("holder %q (%s), want %q", got, f.Statement, tc.wantEnt)
			}
			if ok && (f.Category != catResource || f.Score <= tc.lead.Score) {
				t.Errorf("finding %s %.2f, want a resource exhaustion above the lead", f.Category, f.Score)
			}
		})
	}
}

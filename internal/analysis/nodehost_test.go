package analysis

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A node's own journal reporting faults (kernel, device, memory errors) on
// the node that runs the alerted workload makes the node the root cause,
// whichever way the host is named (a syslog line's first word, the log's
// pod field, the short or the full name) and whether the alert names the
// workload or the node. Warnings outside the node-level row, faults that
// begin after the incident, a node that runs nothing of the workload, and
// an application's own line that names a node are not.
func TestNodeHostFault(t *testing.T) {
	const full = "ip-10-9-4-21.ap-south-1.compute.internal"
	pod := func(name, node string, ready bool, restarts int32) facts.Pod {
		p := healthyPod(name)
		p.Namespace, p.Node, p.Ready, p.Restarts = "ledger", node, ready, restarts
		if !ready {
			p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
		}
		return p
	}
	nodes := []facts.Node{
		{Name: full, Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}},
		{Name: "pool-b-77x", Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}},
	}
	pods := []facts.Pod{pod("posting-api-6c9f-a1", full, false, 2), pod("posting-api-6c9f-b2", "pool-b-77x", true, 0)}
	line := func(min int, svc, podName, level, msg string) facts.LogLine {
		return facts.LogLine{Timestamp: at(min), Service: svc, Pod: podName, Level: level, Message: msg}
	}
	workloadAlert := &investigationv1.Alert{AlertName: "PostingLatencyHigh", Namespace: "ledger", Service: "posting-api", StartsAt: timestamppb.New(t0)}
	nodeAlert := &investigationv1.Alert{AlertName: "InstanceStoreDegraded", Service: "EC2", ResourceKind: "node", ResourceName: full, StartsAt: timestamppb.New(t0)}
	tests := []struct {
		name    string
		alert   *investigationv1.Alert
		pods    []facts.Pod
		lines   []facts.LogLine
		want    string // entity; "" = no finding
		wantCat investigationv1.RootCauseCategory
	}{
		{"syslog host prefix, full name", workloadAlert, pods, []facts.LogLine{
			line(-6, "node-journal", "", "ERROR", full+" kernel: blk_update_request: I/O error, dev nvme1n1, sector 88120"),
			line(-5, "node-journal", "", "ERROR", full+" kernel: EXT4-fs (nvme1n1p1): Remounting filesystem read-only"),
		}, "node/" + full, catInfra},
		{"pod field holds the short name", workloadAlert, pods, []facts.LogLine{
			line(-20, "journald", "ip-10-9-4-21", "WARN", "kernel: EDAC MC1: 4 CE memory read error on DIMM_B2"),
			line(-2, "journald", "ip-10-9-4-21", "CRIT", "kernel: mce: [Hardware Error]: Machine check events logged"),
		}, "node/" + full, catInfra},
		{"the alert names the node, no workload", nodeAlert, []facts.Pod{pod("positions-0", full, true, 0)}, []facts.LogLine{
			line(-3, "host-logs", full, "ERROR", "kernel: nvme nvme1: I/O 17 QID 2 timeout, aborting"),
			line(-1, "host-logs", full, "ERROR", "kernel: nvme nvme1: I/O 22 QID 2 timeout, aborting"),
		}, "node/" + full, catInfra},
		{"a host out of disk is a capacity fault", workloadAlert, pods, []facts.LogLine{
			line(-4, "node-journal", "", "ERROR", full+" kubelet: failed to write pod status: no space left on device"),
		}, "node/" + full, catResource},
		{"warnings outside the node row only", workloadAlert, pods, []facts.LogLine{
			line(-4, "node-journal", "", "WARN", full+" systemd: unit logrotate.service took longer than expected"),
		}, "", 0},
		{"faults after the incident began", workloadAlert, pods, []facts.LogLine{
			line(-30, "posting-api", "posting-api-6c9f-a1", "ERROR", "deadline exceeded calling ledger-db"),
			line(20, "node-journal", "", "ERROR", full+" kernel: blk_update_request: I/O error, dev nvme1n1"),
		}, "", 0},
		{"a node that runs nothing of the workload", workloadAlert, []facts.Pod{pod("posting-api-6c9f-b2", "pool-b-77x", false, 1)}, []facts.LogLine{
			line(-4, "node-journal", "", "ERROR", full+" kernel: blk_update_request: I/O error, dev nvme1n1"),
		}, "", 0},
		{"an application's line that names a node", workloadAlert, pods, []facts.LogLine{
			line(-4, "posting-api", "posting-api-6c9f-a1", "ERROR", full+" refused the connection: I/O error"),
		}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(tc.alert, []*evidencev1.EvidencePin{
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, tc.pods),
				pin(t, "n", "get_node_health", "k8s", facts.KeyNodes, nodes),
				pin(t, "l", "search_logs", "logs", facts.KeyLogLines, tc.lines),
			})
			fs := detectNodeHostFault(ev)
			if tc.want == "" {
				if len(fs) > 0 {
					t.Fatalf("finding %q, want none", fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Entity != tc.want || fs[0].Category != tc.wantCat {
				t.Fatalf("findings %+v, want one %v finding on %s", fs, tc.wantCat, tc.want)
			}
			var claims []string
			for _, c := range fs[0].Validated {
				claims = append(claims, c.Text)
			}
			first := tc.lines[0].Message
			if !strings.Contains(strings.Join(claims, "\n"), first[strings.Index(first, ":")+1:]) {
				t.Errorf("the host's first fault line is not quoted: %q", claims)
			}
		})
	}
}

// The nodes whose host logs a reading asks for: the alert's node first,
// then the nodes of the workload's pods in trouble, then its other pods'
// nodes, at most maxHostNodes; with no workload resolved, other
// workloads' healthy pods do not count.
func TestHostNodes(t *testing.T) {
	pod := func(name, node string, ready bool) facts.Pod {
		p := healthyPod(name)
		p.Node, p.Ready, p.Workload = node, ready, strings.SplitN(name, "-", 2)[0]
		if !ready {
			p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
		}
		return p
	}
	pods := []facts.Pod{pod("cart-1", "n-1", true), pod("cart-2", "n-2", false), pod("cart-3", "n-3", true), pod("cart-4", "n-4", true), pod("ledger-1", "n-9", true)}
	tests := []struct {
		name  string
		alert *investigationv1.Alert
		want  string
	}{
		{"workload: troubled first, bounded", &investigationv1.Alert{AlertName: "CartErrors", Namespace: "shop", Service: "cart"}, "n-2,n-1,n-3"},
		{"the alert's node leads", &investigationv1.Alert{AlertName: "HostDown", Namespace: "shop", Service: "cart", Labels: map[string]string{"node": "n-7"}}, "n-7,n-2,n-1"},
		{"no workload: only pods in trouble", &investigationv1.Alert{AlertName: "Synthetic"}, "n-2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, tc.alert, pin(t, "p", "list_pods", "k8s", facts.KeyPods, pods))
			if got := strings.Join(res.HostNodes(), ","); got != tc.want {
				t.Errorf("HostNodes = %s, want %s", got, tc.want)
			}
		})
	}
}

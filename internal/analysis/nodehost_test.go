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
// workload or the node. A lone warning, warnings on every node of the workload, faults that
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
	hostAlert := &investigationv1.Alert{AlertName: "seat p99 latency", Labels: map[string]string{"service": "posting-api", "host": "pool-b-77x"}, StartsAt: timestamppb.New(t0)}
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
		{"the log store's host field names the node (a hardware monitor's lines)", workloadAlert, pods, []facts.LogLine{
			{Timestamp: at(-7), Service: "bmc-events", Host: "ip-10-9-4-21", Level: "CRITICAL", Message: "SEL 0x0a41 | Fan 2 RPM | Lower Critical going low | Asserted"},
			{Timestamp: at(-3), Service: "kernel", Host: full, Level: "WARN", Message: "mce: CPU7: Core temperature above threshold, cpu clock throttled"},
		}, "node/" + full, catInfra},
		{"a host field on a pod's own line is the pod's", workloadAlert, pods, []facts.LogLine{
			{Timestamp: at(-7), Service: "posting-api", Pod: "posting-api-6c9f-a1", Host: full, Level: "ERROR", Message: "write failed: disk I/O error"},
		}, "", 0},
		{"a host out of disk is a capacity fault", workloadAlert, pods, []facts.LogLine{
			line(-4, "node-journal", "", "ERROR", full+" kubelet: failed to write pod status: no space left on device"),
		}, "node/" + full, catResource},
		{"most fault lines say the disk ran out, the first does not", workloadAlert, pods, []facts.LogLine{
			line(-9, "node-journal", "", "ERROR", full+" kernel: EXT4-fs warning (device sdb1): ext4_dx_add_entry: Directory index full!"),
			line(-6, "node-journal", "", "ERROR", full+" scanner: save LOG-77.tif: OSError: [Errno 28] No space left on device"),
			line(-5, "node-journal", "", "ERROR", full+" scanner: save LOG-78.tif: OSError: [Errno 28] No space left on device"),
		}, "node/" + full, catResource},
		{"one warning", workloadAlert, pods, []facts.LogLine{
			line(-4, "node-journal", "", "WARN", full+" systemd: unit logrotate.service took longer than expected"),
		}, "", 0},
		{"warnings confined to the node", workloadAlert, pods, []facts.LogLine{
			line(-9, "kernel", "ip-10-9-4-21", "WARN", "clocksource: timekeeping watchdog on CPU3: Marking clocksource 'tsc' as unstable"),
			line(-9, "kernel", "ip-10-9-4-21", "WARN", "clocksource: Switched to clocksource hpet"),
		}, "node/" + full, catInfra},
		{"warnings on every node of the workload", workloadAlert, pods, []facts.LogLine{
			line(-9, "kernel", "ip-10-9-4-21", "WARN", "clocksource: Switched to clocksource hpet"),
			line(-8, "kernel", "ip-10-9-4-21", "WARN", "clocksource: Switched to clocksource hpet"),
			line(-9, "kernel", "pool-b-77x", "WARN", "clocksource: Switched to clocksource hpet"),
		}, "", 0},
		{"faults after the incident began", workloadAlert, pods, []facts.LogLine{
			line(-30, "posting-api", "posting-api-6c9f-a1", "ERROR", "deadline exceeded calling ledger-db"),
			line(20, "node-journal", "", "ERROR", full+" kernel: blk_update_request: I/O error, dev nvme1n1"),
		}, "", 0},
		{"a node that runs nothing of the workload", workloadAlert, []facts.Pod{pod("posting-api-6c9f-b2", "pool-b-77x", false, 1)}, []facts.LogLine{
			line(-4, "node-journal", "", "ERROR", full+" kernel: blk_update_request: I/O error, dev nvme1n1"),
		}, "", 0},
		{"the alert's host label names the node; one warning of a network fault", hostAlert, pods, []facts.LogLine{
			line(-4, "node-problem-detector", "", "WARN", "pool-b-77x: NIC eth0 rx_dropped rising; TCP retransmits 14%"),
		}, "node/pool-b-77x", catInfra},
		{"one warning of no node-level fault on the alert's host", hostAlert, pods, []facts.LogLine{
			line(-4, "node-problem-detector", "", "WARN", "pool-b-77x: unit logrotate.service took longer than expected"),
		}, "", 0},
		{"one kernel warning of a resource limit on the alert's host", hostAlert, pods, []facts.LogLine{
			line(-4, "node-journal", "", "WARN", "pool-b-77x kernel: cgroup: fork rejected by pids controller in /kubepods.slice"),
		}, "", 0},
		{"a host journal shipped under the machine's name", hostAlert, pods, []facts.LogLine{
			line(-4, "pool-b-77x", "", "ERROR", "zed: pool tank DEGRADED; vdev sdc FAULTED"),
		}, "node/pool-b-77x", catInfra},
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

// Sandbox failures on one node while the same workload runs Ready
// elsewhere are the node's (infrastructure); on two nodes they are not one
// node's; a single event with no control is too little.
func TestNodeSandbox(t *testing.T) {
	pod := func(name, node string, ready bool) facts.Pod {
		p := healthyPod(name)
		p.Namespace, p.Node, p.Ready, p.Workload = "spray", node, ready, "planner"
		if !ready {
			p.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
		}
		return p
	}
	sandbox := func(pod string, count int32) facts.Event {
		return facts.Event{Namespace: "spray", Type: "Warning", Reason: "FailedCreatePodSandBox", InvolvedKind: "Pod", InvolvedName: pod, Count: count,
			Message: `Failed to create pod sandbox: rpc error: failed to setup network for sandbox "8c1f": no IP addresses available in range set`}
	}
	pods := []facts.Pod{pod("planner-a", "w-3", false), pod("planner-b", "w-1", true), pod("planner-c", "w-2", false)}
	tests := []struct {
		name   string
		events []facts.Event
		want   string
	}{
		{"one node, the workload Ready elsewhere", []facts.Event{sandbox("planner-a", 31)}, "node/w-3"},
		{"two nodes", []facts.Event{sandbox("planner-a", 31), sandbox("planner-c", 4)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "PlannerReplicasMismatch", Namespace: "spray", Service: "planner"}, []*evidencev1.EvidencePin{
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, pods),
				pin(t, "e", "get_events", "k8s", facts.KeyEvents, tc.events),
			})
			fs := detectNodeSandbox(ev)
			got := ""
			if len(fs) == 1 && fs[0].Category == catInfra {
				got = fs[0].Entity
			}
			if got != tc.want {
				t.Fatalf("findings %+v, want %q", fs, tc.want)
			}
		})
	}
	ev := NewEvidence(nil, []*evidencev1.EvidencePin{
		pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{pod("planner-a", "w-3", false)}),
		pin(t, "e", "get_events", "k8s", facts.KeyEvents, []facts.Event{sandbox("planner-a", 1)}),
	})
	if fs := detectNodeSandbox(ev); len(fs) > 0 {
		t.Errorf("one event, no control: %q", fs[0].Statement)
	}
}

// A host the alert names is a machine unless the evidence shows it is a
// pod (a StatefulSet's pod that a log search reports as its host): then
// its lines are its application's, not a node's journal.
func TestAlertedHostThatIsAPod(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "Postgres FATAL errors", Labels: map[string]string{"host": "casks-pg-0"}}
	ev := NewEvidence(alert, nil)
	if got := ev.alertedNodes(); len(got) != 1 || got[0] != "casks-pg-0" {
		t.Fatalf("alertedNodes = %v, want the host as a machine while nothing says otherwise", got)
	}
	ev.Logs = []LogLine{{LogLine: facts.LogLine{Namespace: "barrels", Pod: "casks-pg-0", Service: "postgres", Level: "ERROR", Message: "database is not accepting commands to avoid wraparound data loss"}}}
	if got := ev.alertedNodes(); len(got) != 0 {
		t.Errorf("alertedNodes = %v: a pod named as the alert's host read as a node", got)
	}
	ev.Logs = nil
	ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "barrels", Name: "casks-pg-0"}}}
	if got := ev.alertedNodes(); len(got) != 0 {
		t.Errorf("alertedNodes = %v: a listed pod read as a node", got)
	}
}

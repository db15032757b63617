package analysis

import (
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A node the alert names, down and cordoned, whose cordon and drain were
// recorded with a ticket (or planned-work words) before it went down, with
// the work not recorded as ended and every pod elsewhere Ready, is planned
// work in progress: healthy, the ticket quoted. Without the record, after
// the work ended, with failing pods elsewhere or not cordoned, the node's
// fault stands.
func TestNodeMaintenanceInProgress(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "Virtual machine is powered off", Annotations: map[string]string{"info": "Virtual machine rf-w07 on host esx-3 is powered off"}}
	down := facts.Node{Name: "rf-w07", Unschedulable: true, Conditions: []facts.Condition{{Type: "Ready", Status: "Unknown", Reason: "NodeStatusUnknown"}}}
	up := facts.Node{Name: "rf-w05", Ready: true, Conditions: []facts.Condition{{Type: "Ready", Status: "True"}}}
	drain := logAt(-30, "ops", "change-bot", "", "INFO", "kubectl cordon rf-w07 && kubectl drain rf-w07 --ignore-daemonsets (HW-2291)")
	planned := logAt(-30, "ops", "change-bot", "", "INFO", "scheduled maintenance: cordoned and drained node rf-w07 for a DIMM swap")
	bare := logAt(-30, "ops", "change-bot", "", "INFO", "kubectl drain rf-w07")
	ended := logAt(-5, "ops", "change-bot", "", "INFO", "maintenance HW-2291 completed")
	ok := healthyPod("api-5d9-a")
	ok.Node = "rf-w05"
	bad := ok
	bad.Name, bad.Ready, bad.Phase = "api-5d9-b", false, "Pending"
	bad.Conditions = []facts.Condition{{Type: "Ready", Status: "False"}}
	for _, tc := range []struct {
		name    string
		nodes   []facts.Node
		logs    []facts.LogLine
		pods    []facts.Pod
		healthy bool
	}{
		{"ticket, in progress", []facts.Node{down, up}, []facts.LogLine{drain}, []facts.Pod{ok}, true},
		{"planned words, in progress", []facts.Node{down, up}, []facts.LogLine{planned}, []facts.Pod{ok}, true},
		{"a drain nobody planned", []facts.Node{down, up}, []facts.LogLine{bare}, []facts.Pod{ok}, false},
		{"the work ended, the node still down", []facts.Node{down, up}, []facts.LogLine{drain, ended}, []facts.Pod{ok}, false},
		{"pods failing elsewhere", []facts.Node{down, up}, []facts.LogLine{drain}, []facts.Pod{ok, bad}, false},
		{"not cordoned", []facts.Node{{Name: "rf-w07", Conditions: down.Conditions}, up}, []facts.LogLine{drain}, []facts.Pod{ok}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, alert,
				pin(t, "n", "get_node_health", "k8s", facts.KeyNodes, tc.nodes),
				pin(t, "l", "search_logs", "logs", facts.KeyLogLines, tc.logs),
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, tc.pods))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeNodeMaintenance
			if got != tc.healthy {
				t.Fatalf("lead %s (%s), want node maintenance: %v", res.Findings[0].Mode, res.Findings[0].Statement, tc.healthy)
			}
			if tc.healthy && (d.GetCategory() != catHealthy || d.GetRootCauseEntity() != "node/rf-w07") {
				t.Errorf("diagnosis %v %s", d.GetCategory(), d.GetRootCauseEntity())
			}
		})
	}
}

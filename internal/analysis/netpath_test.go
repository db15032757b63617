package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A network element's record of its own fault (an edge router's CRC
// errors, a BGP session down with its routes removed, a host's routes
// flushed) beside a caller's transport failures is the path's fault,
// infrastructure, at that element; the callee its errors name is not the
// culprit. Application errors that are not transport failures, or no
// record, propose nothing.
func TestNetworkPath(t *testing.T) {
	call := func(min int, msg string) facts.LogLine {
		return errLine(min, "rate-sync-6d7c8b9a0-q1w2e", "rate-sync", msg)
	}
	cases := []struct {
		name   string
		record facts.LogLine
		calls  []facts.LogLine
		want   string
	}{
		{"router crc errors", facts.LogLine{Timestamp: at(1), Service: "edge-rtr-07", Level: "WARNING", Message: "xe-0/0/3: 2210 input errors (CRC/align) in last 60s"},
			[]facts.LogLine{call(3, "POST https://hub.partner.example/v2/rates: read timeout after 20s"), call(6, "POST https://hub.partner.example/v2/rates: read timeout after 20s")}, "device/edge-rtr-07"},
		{"bgp session down", facts.LogLine{Timestamp: at(0), Service: "calico-node", Level: "WARN", Message: "bird: BGP session down with 10.0.0.11; removing 120 routes learned via route reflector"},
			[]facts.LogLine{call(2, "dial tcp 10.244.2.31:8080: connect: no route to host"), call(4, "dial tcp 10.244.3.32:8080: connect: no route to host")}, "device/calico-node"},
		{"host routes flushed on a node", facts.LogLine{Timestamp: at(0), Service: "systemd-networkd", Level: "INFO", Message: "node-b2 eth0: Reconfiguring; removing foreign routing policy rules and routes"},
			[]facts.LogLine{call(2, "upstream planner: dial tcp 10.244.1.52:8080: i/o timeout"), call(4, "upstream planner: dial tcp 10.244.1.52:8080: i/o timeout")}, "node/node-b2"},
		{"application errors", facts.LogLine{Timestamp: at(1), Service: "edge-rtr-07", Level: "WARNING", Message: "xe-0/0/3: 2210 input errors (CRC/align) in last 60s"},
			[]facts.LogLine{call(3, "POST /v2/rates 422: rate plan RP-1 unknown"), call(6, "POST /v2/rates 422: rate plan RP-2 unknown")}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := append([]facts.LogLine{tc.record}, tc.calls...)
			nodes := []facts.Node{{Name: "node-b2", Ready: true}, {Name: "node-b3", Ready: true}}
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines), pin(t, "n", "get_node_health", "k8s", facts.KeyNodes, nodes))
			f := modeFinding(res, ModeNetworkPath)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("network path proposed: %s", f.Statement)
				}
				return
			}
			if f == nil || f.Entity != tc.want || f.Category != catInfra || res.Findings[0].Mode != ModeNetworkPath {
				t.Fatalf("findings %v, want the network path leading at %s", modesOf(res.Findings), tc.want)
			}
		})
	}
}

package analysis

import "testing"

func TestStateDown(t *testing.T) {
	step := func(at int, before, after float64) func(int) float64 {
		return func(i int) float64 {
			if i < at {
				return before
			}
			return after
		}
	}
	tests := []struct {
		name    string
		series  Series
		down    bool
		machine bool
	}{
		{"a link's status lost", mkSeries("meraki_uplink_status", map[string]string{"device": "mx-4", "uplink": "wan1"}, step(30, 1, 0)), true, true},
		{"a clock no longer synchronised", mkSeries("node_timex_sync_status", map[string]string{"instance": "sso-2:9100"}, step(10, 1, 0)), true, true},
		{"a workload's own target", mkSeries("up", map[string]string{"job": "bids", "pod": "bids-7c9-x2", "namespace": "auction"}, step(30, 1, 0)), true, false},
		{"a probe of an outside address", mkSeries("probe_success", map[string]string{"instance": "https://api.vendor.example/health"}, step(30, 1, 0)), true, false},
		{"the standby taking over (0 to 1)", mkSeries("meraki_uplink_status", map[string]string{"device": "mx-4", "uplink": "cellular"}, step(30, 0, 1)), false, true},
		{"back up at the end", mkSeries("node_timex_sync_status", map[string]string{"instance": "sso-2:9100"}, func(i int) float64 {
			if i >= 20 && i < 59 {
				return 0
			}
			return 1
		}), false, true},
		{"a blip of one point", mkSeries("node_timex_sync_status", map[string]string{"instance": "sso-2:9100"}, step(59, 1, 0)), false, true},
		{"a measure, not a state", mkSeries("node_load1", map[string]string{"instance": "sso-2:9100"}, step(30, 1.4, 0)), false, true},
		{"a counter of zeros and ones", mkSeries("link_flaps_total", map[string]string{"device": "mx-4"}, step(30, 1, 0)), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateDown(tc.series.Series); got != tc.down {
				t.Errorf("stateDown = %v, want %v", got, tc.down)
			}
			if got := failingSeries(tc.series); got != (tc.down && tc.machine) {
				t.Errorf("failingSeries = %v, want a machine's lost state (only) to count as failing", got)
			}
			if got := machineState(tc.series.Series); got != tc.machine {
				t.Errorf("machineState = %v, want %v", got, tc.machine)
			}
		})
	}
}

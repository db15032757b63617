package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func mkSeries(name string, labels map[string]string, vals func(i int) float64) Series {
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	s := facts.Series{Name: name, Labels: labels}
	for i := 0; i < 60; i++ {
		v := vals(i)
		s.Downsampled = append(s.Downsampled, facts.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		if i == 0 || v > s.Peak {
			s.Peak = v
		}
	}
	s.Count = len(s.Downsampled)
	s.Latest = s.Downsampled[59].V
	return Series{Series: s, Cite: Cite{PinIDs: []string{"pin_m"}, Sources: []string{"prometheus"}}}
}

func TestAlertConditionVetoesHealthy(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "ContainerMemoryHigh", Summary: "cart memory working set at 88% of its limit", Service: "cart", Namespace: "shop"}
	pod := map[string]string{"pod": "cart-7d9f8b6c4-x7gr9", "namespace": "shop"}
	creeping := mkSeries("container_memory_working_set_bytes", pod, func(i int) float64 { return 1e9 + float64(i)*4e6 })
	flat := mkSeries("container_memory_working_set_bytes", pod, func(i int) float64 { return 1.2e9 + float64(i%3)*1e6 })
	limit := mkSeries("kube_pod_container_resource_limits", map[string]string{"pod": "cart-7d9f8b6c4-x7gr9", "resource": "memory"}, func(int) float64 { return 1.3e9 })
	cache := mkSeries("cart_price_cache_entries", pod, func(i int) float64 { return 1000 + float64(i)*50 })
	healthy := healthyFinding(ModeHealthy, "deployment/shop/cart", 0.8)

	tests := []struct {
		name      string
		series    []Series
		wantLead  string
		wantVetod bool
	}{
		{"creeping memory near its limit: not healthy", []Series{creeping, limit, cache}, ModeConditionHolds, true},
		{"flat memory: healthy stands", []Series{flat, limit}, ModeHealthy, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = tc.series
			res := rank(ev, []Finding{healthy})
			if res.HealthVetoed != tc.wantVetod {
				t.Fatalf("vetoed = %v, want %v", res.HealthVetoed, tc.wantVetod)
			}
			if got := res.Findings[0].Mode; got != tc.wantLead {
				t.Fatalf("lead = %s, want %s", got, tc.wantLead)
			}
			if tc.wantVetod {
				lead := res.Findings[0]
				if lead.Category != catResource || lead.Score < minFaultScore {
					t.Errorf("condition finding %v %.2f: want resource exhaustion above the fault bar (near its limit)", lead.Category, lead.Score)
				}
				if !containsFold(lead.Statement, "cart_price_cache_entries") {
					t.Errorf("statement %q does not name what grows with it", lead.Statement)
				}
			}
		})
	}
}

func TestAlertSymptoms(t *testing.T) {
	for _, tc := range []struct {
		name, summary string
		want          string
	}{
		{"HighRequestLatency", "", "latency"},
		{"KafkaConsumerLagHigh", "", "saturation"},
		{"X", "error ratio above 5%", "errors"},
		{"HostHighCpuLoad", "", "cpu"},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: tc.name, Summary: tc.summary}, nil)
		got := ev.alertSymptoms()
		found := false
		for k := range got {
			if string(k) == tc.want {
				found = true
			}
		}
		if !found {
			t.Errorf("alertSymptoms(%s %q) = %v, want %s", tc.name, tc.summary, got, tc.want)
		}
	}
}

func TestDetectConditionCleared(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "HighErrorRate", Summary: "5xx ratio above 5%", Service: "cart"}
	lbl := map[string]string{"service": "cart"}
	episode := mkSeries("http_error_ratio", lbl, func(i int) float64 {
		if i >= 20 && i < 35 {
			return 0.3
		}
		return 0.01
	})
	still := mkSeries("http_error_ratio", lbl, func(i int) float64 {
		if i >= 20 {
			return 0.3
		}
		return 0.01
	})
	flat := mkSeries("http_error_ratio", lbl, func(int) float64 { return 0.01 })
	// A spike of hundreds from nothing, then a trickle of a few per
	// minute: back at the baseline, within 5% of the rise.
	trickle := mkSeries("http_error_ratio", lbl, func(i int) float64 {
		switch {
		case i < 20:
			return 0
		case i < 30:
			return 3
		}
		return 0.02
	})
	notBack := mkSeries("http_error_ratio", lbl, func(i int) float64 {
		switch {
		case i < 20:
			return 0
		case i < 30:
			return 3
		}
		return 0.5
	})
	other := mkSeries("http_error_ratio", map[string]string{"service": "search"}, func(i int) float64 {
		if i >= 20 {
			return 0.3
		}
		return 0.01
	})
	tests := []struct {
		name   string
		series []Series
		want   bool
	}{
		{"episode that ended", []Series{episode}, true},
		{"another service's errors do not count", []Series{episode, other}, true},
		{"still elevated", []Series{still}, false},
		{"no episode at all", []Series{flat}, false},
		{"a trickle after a spike from nothing is the baseline", []Series{trickle}, true},
		{"a sixth of the spike remains: not back", []Series{notBack}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = tc.series
			got := detectConditionCleared(ev)
			if (len(got) == 1) != tc.want {
				t.Fatalf("got %d findings, want cleared=%v", len(got), tc.want)
			}
			if tc.want && (!got[0].Healthy || len(got[0].PinIDs) == 0) {
				t.Errorf("finding %+v must be healthy and cite the series", got[0])
			}
		})
	}
}

// A remediation written just before the alerted signal came back makes the
// cleared reading a mitigation that outranks the faults the evidence still
// shows; a remediation long before, or none, does not. A window that opens
// inside the episode (errors from its first point, none at its end) is an
// episode too.
func TestConditionClearedAfterRemediation(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "CartErrorRatio", Summary: "cart 5xx ratio above 5%", Service: "cart", Namespace: "shop"}
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	lbl := map[string]string{"service": "cart"}
	episode := mkSeries("http_error_ratio", lbl, func(i int) float64 { // back at i=35 (10:35)
		if i >= 20 && i < 35 {
			return 0.3
		}
		return 0
	})
	openInside := mkSeries("http_error_ratio", lbl, func(i int) float64 {
		if i < 35 {
			return 0.3
		}
		return 0
	})
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	line := func(m int, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at(m), Service: "flag-audit", Level: level, Message: msg}}
	}
	flag := line(33, "INFO", "flag split-basket turned OFF in production (kill switch, INC-12)")
	tests := []struct {
		name      string
		series    Series
		logs      []LogLine
		mitigated bool
	}{
		{"kill switch just before the return", episode, []LogLine{flag}, true},
		{"the window opens inside the episode", openInside, []LogLine{flag}, true},
		{"no remediation: a transient episode", episode, nil, false},
		{"a rollback an hour before is not this return's cause", episode, []LogLine{line(-30, "INFO", "rolled back cart to r41")}, false},
		{"an error that names a rollback is no remediation", episode, []LogLine{line(33, "ERROR", "rollback of cart failed")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = []Series{tc.series}
			ev.Logs = tc.logs
			got := detectConditionCleared(ev)
			if len(got) != 1 {
				t.Fatalf("got %d findings, want a cleared reading", len(got))
			}
			f := got[0]
			_, all := f.Explains[explainsAll]
			if f.Overrides != tc.mitigated || all != tc.mitigated {
				t.Errorf("overrides=%v explains all=%v, want mitigated=%v (%s)", f.Overrides, all, tc.mitigated, f.Statement)
			}
			if tc.mitigated && !strings.Contains(f.Statement, "kill switch") {
				t.Errorf("statement %q does not quote the remediation", f.Statement)
			}
		})
	}
}

// A held condition becomes a growing-toward-exhaustion candidate only for
// a level (memory, CPU, a saturation gauge), not for the rate of a counter
// of events.
func TestConditionFindingIsALevel(t *testing.T) {
	ev := &Evidence{}
	gauge := held{what: "pool_active_connections at 96", s: Series{Series: facts.Series{Name: "pool_active_connections", Labels: map[string]string{}}}, kind: signal.Saturation, last: 96}
	flow := held{what: "rate(websocket_closed_connections_total[5m]) at 38", s: Series{Series: facts.Series{Name: "rate(websocket_closed_connections_total[5m])", Labels: map[string]string{}}}, kind: signal.Saturation, last: 38}
	if _, ok := ev.conditionFinding(gauge); !ok {
		t.Error("a saturation gauge still rising gives no candidate")
	}
	if f, ok := ev.conditionFinding(flow); ok {
		t.Errorf("the rate of a counter of events was read as a level filling up: %s", f.Statement)
	}
}

// The alert's own condition, read from the words it names and from an
// error rate that eased from its worst: a domain measure the alert names
// (by a plural or verb form of its words) still far above its level holds;
// one read the other way up (what is left, time to expiry) rising is a
// recovery; a measure the alert does not name is not its condition; an
// error rate still at 40% of its peak holds, one back under it does not.
func TestHeldConditionOfNamedAndEasedSignals(t *testing.T) {
	svc := map[string]string{"service": "booking"}
	rising := func(name string) Series {
		return mkSeries(name, svc, func(i int) float64 {
			if i < 30 {
				return 20
			}
			return 20 + float64(i-29)*35
		})
	}
	eased := func(end float64) Series {
		return mkSeries("rate(http_requests_total[5m])", map[string]string{"service": "booking", "code": "503"}, func(i int) float64 {
			switch {
			case i < 20:
				return 0
			case i < 35:
				return 460
			}
			return end
		})
	}
	tests := []struct {
		name   string
		alert  *investigationv1.Alert
		series Series
		holds  bool
	}{
		{"named domain gauge, plural form", &investigationv1.Alert{AlertName: "BookingDuplicateReservation", Service: "booking"}, rising("booking_duplicate_reservations"), true},
		{"named in the title, another vocabulary", &investigationv1.Alert{AlertName: "a81f", Title: "Courier outbox keeps growing", Service: "booking"}, rising("courier_outbox_pending_items"), true},
		{"inverse measure rising is a recovery", &investigationv1.Alert{AlertName: "LicenceExpiringSoon", Service: "booking"}, rising("licence_expiry_days"), false},
		{"a measure the alert does not name", &investigationv1.Alert{AlertName: "BookingDuplicateReservation", Service: "booking"}, rising("courier_outbox_pending_items"), false},
		{"errors eased to 40% of the peak still hold", &investigationv1.Alert{AlertName: "Booking5xx", Summary: "booking 503 ratio high", Service: "booking"}, eased(200), true},
		{"errors back under that share do not", &investigationv1.Alert{AlertName: "Booking5xx", Summary: "booking 503 ratio high", Service: "booking"}, eased(120), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(tc.alert, nil)
			ev.Series = []Series{tc.series}
			if h, holds := ev.heldCondition(); holds != tc.holds {
				t.Fatalf("held = %v (%q), want %v", holds, h.what, tc.holds)
			}
		})
	}
}

// A measure of what serves the load (its consumers, workers, replicas)
// that rises is capacity added, not the alerted backlog still holding.
func TestSupplyMeasureIsNotTheCondition(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "SettlementQueueBacklog", Summary: "settlement queue backlog above 5000", Service: "settle-worker"}
	rising := func(i int) float64 { return 4 + float64(i)*0.15 }
	drained := func(i int) float64 {
		if i < 30 {
			return 8000
		}
		return 3
	}
	tests := []struct {
		name   string
		series []Series
		holds  bool
	}{
		{"consumers rise while the backlog drained", []Series{mkSeries("rabbitmq_queue_consumers", map[string]string{"queue": "settle"}, rising), mkSeries("rabbitmq_queue_messages_ready", map[string]string{"queue": "settle"}, drained)}, false},
		{"workers of a pool rise", []Series{mkSeries("settle_pool_workers", nil, rising)}, false},
		{"the backlog itself still creeps", []Series{mkSeries("settle_queue_depth", nil, func(i int) float64 { return 4000 + float64(i)*40 })}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = tc.series
			if h, holds := ev.heldCondition(); holds != tc.holds {
				t.Errorf("heldCondition = %v (%s), want %v", holds, h.what, tc.holds)
			}
		})
	}
}

// A condition that still holds stands as health when a record written
// before the alert, about its target, says this effect is expected while an
// activity lasts, and nothing fails; a target to meet ("expected to stay
// under"), or an error anywhere, and the veto stands.
func TestExpectedEffectRecordKeepsHealth(t *testing.T) {
	alertAt := time.Date(2026, 2, 1, 10, 50, 0, 0, time.UTC)
	alert := &investigationv1.Alert{AlertName: "StandbyReplayLagHigh", Summary: "replay lag of ledger-standby-2 above 600 s", Service: "ledger-standby-2", StartsAt: timestamppb.New(alertAt)}
	lag := mkSeries("pg_replication_lag_seconds", map[string]string{"pod": "ledger-standby-2"}, func(i int) float64 { return 100 + float64(i)*20 })
	line := func(min int, svc, level, msg string) LogLine {
		ts := alertAt.Add(time.Duration(min) * time.Minute)
		return LogLine{LogLine: facts.LogLine{Timestamp: &ts, Service: svc, Level: level, Message: msg}}
	}
	started := "weekly base backup of ledger-standby-2 started (RB-7: replay lag up to 30 min on ledger-standby-2 is expected during the backup)"
	tests := []struct {
		name   string
		logs   []LogLine
		vetoed bool
	}{
		{"the record says the lag is expected during the backup", []LogLine{line(-40, "backup-runner", "INFO", started)}, false},
		{"a target to meet is not an expected effect", []LogLine{line(-40, "backup-runner", "INFO", "ledger-standby-2 replay lag is expected to stay under 60 s (RB-7)")}, true},
		{"an error elsewhere", []LogLine{line(-40, "backup-runner", "INFO", started), line(-5, "ledger-api", "ERROR", "read from standby failed: canceling statement due to conflict with recovery")}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = []Series{lag}
			ev.Logs = tc.logs
			res := rank(ev, []Finding{healthyFinding(ModeHealthy, "", 0.7)})
			if res.HealthVetoed != tc.vetoed {
				t.Fatalf("vetoed = %v, want %v (lead %s: %s)", res.HealthVetoed, tc.vetoed, res.Findings[0].Mode, res.Findings[0].Statement)
			}
		})
	}
}

// A collected heap's rise is its sawtooth unless the floors it returns to
// after each collection rise.
func TestAllocationRamp(t *testing.T) {
	saw := func(floorStep float64) func(i int) float64 {
		return func(i int) float64 { return 400e6 + float64(i/12)*floorStep + float64(i%12)*90e6 }
	}
	tests := []struct {
		name   string
		s      Series
		sawing bool
	}{
		{"collections back to the same floor", mkSeries("jvm_memory_used_bytes", map[string]string{"area": "heap"}, saw(0)), true},
		{"one allocation ramp, no collection", mkSeries("jvm_memory_used_bytes", map[string]string{"area": "heap"}, func(i int) float64 { return 400e6 + float64(i)*15e6 }), true},
		{"floors that rise after each collection", mkSeries("nodejs_heap_size_used_bytes", nil, saw(150e6)), false},
		{"not a collected heap", mkSeries("container_memory_working_set_bytes", nil, saw(0)), false},
	}
	for _, tc := range tests {
		if got := allocationRamp(tc.s); got != tc.sawing {
			t.Errorf("%s: allocationRamp = %v, want %v", tc.name, got, tc.sawing)
		}
	}
}

// A service whose requests and latency are flat but whose calls to its
// database grew two hundredfold is not quiet; with every rate of work
// rising together (announced demand) it is.
func TestQuietMetricsNeedsWorkInProportion(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "CellarListSlow", Service: "cellar", Namespace: "wine"}
	svc := map[string]string{"service": "cellar"}
	step := func(before, after float64) func(int) float64 {
		return func(i int) float64 {
			if i < 30 {
				return before
			}
			return after
		}
	}
	latency := mkSeries("cellar_request_duration_seconds", svc, step(0.2, 0.2))
	tests := []struct {
		name  string
		calls func(int) float64
		reqs  func(int) float64
		quiet bool
	}{
		{"calls per request grew", step(15, 3000), step(1.6, 1.6), false},
		{"all work grew together", step(15, 120), step(1.6, 13), true},
		{"nothing moved", step(15, 15), step(1.6, 1.6), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, nil)
			ev.Series = []Series{latency, mkSeries("db_client_operations_rate", svc, tc.calls), mkSeries("http_requests_rate", svc, tc.reqs)}
			got := len(detectQuietMetrics(ev)) > 0
			if got != tc.quiet {
				t.Errorf("quiet = %v, want %v", got, tc.quiet)
			}
		})
	}
}

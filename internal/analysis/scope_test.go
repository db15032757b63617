package analysis

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rcamesh/rcamesh/internal/facts"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func TestDetectNotPaged(t *testing.T) {
	tests := []struct {
		name     string
		alert    *investigationv1.Alert
		nonPaged []string
		want     bool
	}{
		{"env label staging", &investigationv1.Alert{AlertName: "X", Labels: map[string]string{"env": "staging"}}, nil, true},
		{"otel deployment.environment dev", &investigationv1.Alert{AlertName: "X", Labels: map[string]string{"deployment.environment": "DEV"}}, nil, true},
		{"env label prod", &investigationv1.Alert{AlertName: "X", Labels: map[string]string{"environment": "prod"}}, nil, false},
		{"explicit prod wins over a staging-looking namespace", &investigationv1.Alert{AlertName: "X", Namespace: "shop-staging", Labels: map[string]string{"env": "production"}}, nil, false},
		{"cluster name token", &investigationv1.Alert{AlertName: "X", Cluster: "eu-stg-2"}, nil, true},
		{"namespace token", &investigationv1.Alert{AlertName: "X", Namespace: "payments-qa"}, nil, true},
		{"a token inside a word is not one", &investigationv1.Alert{AlertName: "X", Namespace: "devices"}, nil, false},
		{"a name that also says production", &investigationv1.Alert{AlertName: "X", Cluster: "stage-lane-prod"}, nil, false},
		{"production cluster, qa namespace", &investigationv1.Alert{AlertName: "X", Cluster: "eu-prod-1", Namespace: "checkout-qa"}, nil, true},
		{"configured: every environment paged", &investigationv1.Alert{AlertName: "X", Labels: map[string]string{"env": "staging"}}, []string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(tc.alert, nil)
			ev.NonPaged = tc.nonPaged
			got := detectNotPaged(ev)
			if (len(got) > 0) != tc.want {
				t.Fatalf("findings %v, want finding=%v", got, tc.want)
			}
			if tc.want && (!got[0].Healthy || !got[0].Overrides || got[0].Explains[explainsAll] == "") {
				t.Errorf("finding %+v must be healthy, override and explain every fault", got[0])
			}
		})
	}
}

func TestNotPagedOutranksFaults(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "X", Labels: map[string]string{"env": "staging"}}, nil)
	fault := Finding{Mode: ModeCrashLoop, Category: catCode, Entity: "deployment/a/b", Score: 0.9}
	res := rank(ev, append(detectNotPaged(ev), fault))
	if !res.Healthy || res.Hypotheses[0].GetCategory() != catHealthy {
		t.Fatalf("lead = %v, want the not-paged verdict ahead of a 0.9 fault", res.Hypotheses[0])
	}
	if len(res.Hypotheses) < 2 {
		t.Fatal("the fault found there must still be reported as a hypothesis")
	}
}

func TestPlannedWorkEndedVariants(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 1, 3, m, 0, 0, time.UTC); return &x }
	for _, words := range [][2]string{
		{"Maintenance window CHG-101 started for db/orders-pg", "Maintenance window CHG-101 completed successfully"},
		{"load test LT-77 kicked off against checkout (announced in #ops)", "load test LT-77 finished, 0 failures"},
		{"chaos experiment CX-9 started: kill 1 of 3 replicas of cart", "chaos experiment CX-9 ended, steady state restored"},
		{"Game day GD-3 begins: zone b failover drill", "game day GD-3 concluded"},
		{"CHG-2291 approved: orders-pg minor upgrade 16.4 -> 16.6 with failover, window Sun 03:00-04:00 UTC", "orders-pg: all members on 16.6; CHG-2291 completed"},
		{"RFC-88 approved: broker patching, window 03:00-03:30", "RFC-88 closed: patching done on all brokers"},
	} {
		t.Run(words[0], func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "ErrorBudgetBurn", StartsAt: timestamppb.New(*at(40))}, nil)
			ev.Logs = []LogLine{
				{LogLine: facts.LogLine{Timestamp: at(1), Level: "INFO", Message: words[0], Service: "ops"}},
				{LogLine: facts.LogLine{Timestamp: at(5), Level: "ERROR", Message: "upstream connect error", Service: "api"}},
				{LogLine: facts.LogLine{Timestamp: at(20), Level: "INFO", Message: words[1], Service: "ops"}},
			}
			got := detectMaintenanceEnded(ev)
			if len(got) != 1 || !got[0].Healthy {
				t.Fatalf("got %v, want one healthy planned-work finding", got)
			}
			// An error after the planned work ended keeps it a live problem.
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(35), Level: "ERROR", Message: "upstream connect error", Service: "api"}})
			if got := detectMaintenanceEnded(ev); len(got) != 0 {
				t.Fatalf("errors after the end: got %v, want none", got)
			}
		})
	}
}

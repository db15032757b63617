package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Pods that read a ConfigMap only at start (a subPath mount, env vars),
// started before it changed, failing after: the stale copy is the cause.
// Without a change, with pods that all started after it, with fresh pods
// failing too, or with failures only before it, nothing is claimed.
func TestStaleConfig(t *testing.T) {
	ts := func(d, h, m int) *time.Time { x := time.Date(2026, 5, d, h, m, 0, 0, time.UTC); return &x }
	pod := func(name string, started *time.Time, settings ...string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "pay", Name: name, Phase: "Running", Ready: true, StartTime: started,
			Containers: []facts.Container{{Name: "app", Settings: settings}}}}
	}
	subPath := "mount /etc/app/upstream.yaml from configmap ledger-upstream subPath upstream.yaml"
	envFrom := "env LEDGER_HOST from configmap ledger-upstream key host"
	wholeMount := "mount /etc/app from configmap ledger-upstream"
	change := LogLine{LogLine: facts.LogLine{Timestamp: ts(4, 9, 0), Service: "argocd", Level: "INFO",
		Message: "synced pay/ledger-upstream: configmap updated, host ledger-a.internal.example -> ledger-b.internal.example"}}
	errAt := func(podName string, h, m int) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts(4, h, m), Pod: podName, Namespace: "pay", Service: "payout-api", Level: "ERROR",
			Message: "post ledger entry: dial tcp: lookup ledger-a.internal.example: no such host"}}
	}
	tests := []struct {
		name  string
		pods  []Pod
		logs  []LogLine
		want  bool
		named bool
	}{
		{"subPath, stale pods fail after the change, the fresh one does not",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), subPath), pod("payout-api-7d9c5-bbbbb", ts(4, 9, 30), subPath)},
			[]LogLine{change, errAt("payout-api-7d9c5-aaaaa", 10, 5)}, true, true},
		{"env from the ConfigMap",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), envFrom)},
			[]LogLine{change, errAt("payout-api-7d9c5-aaaaa", 10, 5)}, true, true},
		{"a whole-volume mount is refreshed",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), wholeMount)},
			[]LogLine{change, errAt("payout-api-7d9c5-aaaaa", 10, 5)}, false, false},
		{"no record of a change",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), subPath)},
			[]LogLine{errAt("payout-api-7d9c5-aaaaa", 10, 5)}, false, false},
		{"every pod started after the change",
			[]Pod{pod("payout-api-7d9c5-bbbbb", ts(4, 9, 30), subPath)},
			[]LogLine{change, errAt("payout-api-7d9c5-bbbbb", 10, 5)}, false, false},
		{"a pod started after the change fails too",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), subPath), pod("payout-api-7d9c5-bbbbb", ts(4, 9, 30), subPath)},
			[]LogLine{change, errAt("payout-api-7d9c5-aaaaa", 10, 5), errAt("payout-api-7d9c5-bbbbb", 10, 6)}, false, false},
		{"failures only before the change",
			[]Pod{pod("payout-api-7d9c5-aaaaa", ts(1, 8, 0), subPath)},
			[]LogLine{errAt("payout-api-7d9c5-aaaaa", 8, 5), change}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "PayoutErrors", Service: "payout-api", Namespace: "pay", StartsAt: timestamppb.New(*ts(4, 10, 10))}, nil)
			ev.Deployments = []Deployment{{Deployment: facts.Deployment{Namespace: "pay", Name: "payout-api"}}}
			ev.Pods = tc.pods
			ev.Logs = tc.logs
			got := detectStaleConfig(ev)
			if (len(got) == 1) != tc.want {
				t.Fatalf("detectStaleConfig = %d findings, want %v", len(got), tc.want)
			}
			if !tc.want {
				return
			}
			f := got[0]
			if f.Category != catConfig || f.Entity != "deployment/pay/payout-api" || f.Score < minFaultScore {
				t.Errorf("finding = %s %s %.2f", f.Category, f.Entity, f.Score)
			}
			if got := strings.Contains(f.Statement, "ledger-a.internal.example"); got != tc.named {
				t.Errorf("statement names the replaced host: %v, want %v (%s)", got, tc.named, f.Statement)
			}
			if _, ok := f.Explains[ModeDNSFailure]; !ok {
				t.Errorf("a stale copy whose failures name the replaced host explains the DNS failures: %v", f.Explains)
			}
		})
	}
}

package analysis

import (
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// hump is a metric at base that rises to top between samples from and to
// (exclusive), then returns to base.
func hump(base, top float64, n, from, to int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = base
		if i >= from && i < to {
			out[i] = top
		}
	}
	return out
}

func batchJob(name string, start, end int, cond string) facts.Resource {
	r := facts.Resource{Kind: "Job", Namespace: "etl", Name: name, CreatedAt: at(start), Owners: []string{"CronJob/" + strings.TrimSuffix(name, "-481516")}}
	if end >= 0 {
		r.CompletedAt = at(end)
	}
	if cond != "" {
		r.Conditions = []facts.Condition{{Type: cond, Status: "True"}}
	}
	return r
}

func TestBatchJobBreachIsHealthy(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "DBCPUHigh", Title: "quartz-db CPU above 75%", Labels: map[string]string{"dbinstanceidentifier": "quartz-db"}}
	cpu := func(vals []float64) facts.Series {
		return metric("rds_cpu_utilization", map[string]string{"instance": "quartz-db"}, vals...)
	}
	cases := []struct {
		name     string
		series   []facts.Series
		jobs     []facts.Resource
		logs     []facts.LogLine
		healthy  bool
		wantText []string
	}{
		{
			name:    "completed job explains a breach that returned to baseline",
			series:  []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 40))},
			jobs:    []facts.Resource{batchJob("rollup-481516", 9, 40, "Complete")},
			healthy: true, wantText: []string{"rollup-481516", "completed successfully"},
		},
		{
			name: "the same rise a day before is cited",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 40)),
				metric("rds_cpu_utilization:offset1d", map[string]string{"instance": "quartz-db"}, hump(0.2, 0.85, 60, 11, 38)...)},
			jobs:    []facts.Resource{batchJob("rollup-481516", 9, 40, "Complete")},
			logs:    []facts.LogLine{{Timestamp: at(40), Namespace: "etl", Pod: "rollup-481516-abcde", Level: "INFO", Message: "rollup finished, 0 errors"}},
			healthy: true, wantText: []string{"offset1d", "same rise", "rollup finished"},
		},
		{
			name:   "failed job is not expected behaviour",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 40))},
			jobs:   []facts.Resource{batchJob("rollup-481516", 9, 40, "Failed")},
		},
		{
			name:   "job still running (no completion)",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 40))},
			jobs:   []facts.Resource{batchJob("rollup-481516", 9, -1, "")},
		},
		{
			name:   "metric did not return to baseline",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 60))},
			jobs:   []facts.Resource{batchJob("rollup-481516", 9, 40, "Complete")},
		},
		{
			name:   "job started long before the rise",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 40, 55))},
			jobs:   []facts.Resource{batchJob("rollup-481516", 0, 55, "Complete")},
		},
		{
			name:   "errors logged after the job started",
			series: []facts.Series{cpu(hump(0.2, 0.9, 60, 10, 40))},
			jobs:   []facts.Resource{batchJob("rollup-481516", 9, 40, "Complete")},
			logs:   []facts.LogLine{{Timestamp: at(20), Namespace: "web", Service: "checkout", Level: "ERROR", Message: "query timeout on quartz-db"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pins := []*evidencev1.EvidencePin{
				pin(t, "cpu", "query_prometheus", "prometheus", facts.KeySeries, tc.series),
				pin(t, "jobs", "list_jobs", "k8s", facts.KeyResources, tc.jobs),
			}
			if len(tc.logs) > 0 {
				pins = append(pins, pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, tc.logs))
			}
			res, _ := analyze(t, alert, pins...)
			var found *Finding
			for i := range res.Findings {
				if res.Findings[i].Mode == ModeBatchJobBreach {
					found = &res.Findings[i]
				}
			}
			if !tc.healthy {
				if found != nil {
					t.Fatalf("unexpected batch-job finding: %s", found.Statement)
				}
				return
			}
			if found == nil || res.Findings[0].Mode != ModeBatchJobBreach || !found.Healthy {
				t.Fatalf("lead = %+v, want healthy %s", res.Findings, ModeBatchJobBreach)
			}
			if found.Entity != "job/etl/rollup-481516" {
				t.Errorf("entity = %s", found.Entity)
			}
			text := found.Statement
			for _, c := range found.Validated {
				text += "\n" + c.Text
			}
			for _, w := range tc.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("finding lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestAnnotateManagers(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "LoginErrors", Namespace: "auth"}
	secret := facts.Resource{Kind: "Secret", Namespace: "auth", Name: "login-db", ManagedBy: []string{"VaultSync/login-db-sync"}}
	mgr := facts.Resource{Kind: "VaultSync", Namespace: "auth", Name: "login-db-sync",
		Signals:    []string{"spec.backend.path=kv/login", "spec.pollEvery=72h", "spec.password=<redacted>", "status.lastSync=2026-01-01"},
		Conditions: []facts.Condition{{Type: "Ready", Status: "True", Reason: "Synced"}}}
	cases := []struct {
		name      string
		resources []facts.Resource
		entity    string
		want      []string
		absent    []string
	}{
		{name: "manager settings, timing first", resources: []facts.Resource{secret, mgr}, entity: "secret/auth/login-db",
			want: []string{"managed by VaultSync login-db-sync: pollEvery=72h, backend.path=kv/login", "Synced"}, absent: []string{"password", "lastSync"}},
		{name: "manager not described", resources: []facts.Resource{secret}, entity: "secret/auth/login-db", absent: []string{"managed by"}},
		{name: "other entity", resources: []facts.Resource{secret, mgr}, entity: "deployment/auth/login", absent: []string{"managed by"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(alert, []*evidencev1.EvidencePin{pin(t, "res", "describe_resource", "k8s", facts.KeyResources, tc.resources)})
			fs := []Finding{{Entity: tc.entity, Statement: "login fails"}}
			annotateManagers(ev, fs)
			text := fs[0].Statement
			for _, c := range fs[0].Validated {
				text += "\n" + c.Text
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("has %q:\n%s", a, text)
				}
			}
		})
	}
}

package tools

import (
	"strings"
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestToolsOverFakeBackend(t *testing.T) {
	tests := []struct {
		intent   string
		params   map[string]any
		severity evidencev1.Severity
		domain   evidencev1.Domain
		noData   bool
		sources  []string
		summary  string // substring
		check    func(t *testing.T, r *evidencev1.ToolResult, ts *testSet)
	}{
		{
			intent: "fetch_pod_logs", params: map[string]any{"pod": "cart-*"},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, domain: evidencev1.Domain_DOMAIN_COMPUTE,
			sources: []string{"k8s", "pod_logs"}, summary: "fatal condition",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if got := decode[string](t, r, facts.KeyResolvedPod); got != "cart-5d8f9-aaaaa" {
					t.Errorf("resolved_pod = %q, want newest matching pod cart-5d8f9-aaaaa", got)
				}
				lines := decode[[]facts.LogLine](t, r, facts.KeyLogLines)
				if len(lines) != 5 {
					t.Fatalf("log lines = %d, want 5 (previous + current)", len(lines))
				}
				if !lines[0].Previous || lines[1].Level != "ERROR" || lines[2].Level != "FATAL" || lines[4].Level != "WARN" {
					t.Errorf("lines = %+v", lines)
				}
				if lines[1].Timestamp == nil || !lines[1].Timestamp.Equal(time.Date(2026, 3, 10, 11, 57, 9, 0, time.UTC)) {
					t.Errorf("timestamp not parsed: %+v", lines[1])
				}
				if !strings.Contains(strings.Join(r.EvidenceSnippets, "\n"), "out of memory") {
					t.Errorf("snippets miss the OOM line: %q", r.EvidenceSnippets)
				}
			},
		},
		{
			intent: "fetch_pod_logs", params: map[string]any{"pod": "cart-5d8f9-aaaaa", "previous": false, "tail_lines": "50"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"pod_logs"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				last := ts.podLogs.calls[len(ts.podLogs.calls)-1]
				if last.Previous || last.TailLines != 50 {
					t.Errorf("options = %+v, want current container, tail 50", last)
				}
			},
		},
		{
			intent: "fetch_pod_logs", params: map[string]any{"pod": "web-1"},
			severity: evidencev1.Severity_SEVERITY_INFO, sources: []string{"pod_logs"}, summary: "no errors",
		},
		{
			intent: "fetch_pod_logs", params: map[string]any{"pod": "nomatch-*"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true, summary: "No pod",
		},
		{
			intent: "fetch_pod_logs", params: map[string]any{"pod": "cart-5d8f9-bbbbb"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true,
		},
		{
			intent: "check_pod_status", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			summary: "1 of 3 pods in namespace shop unhealthy; worst: cart-5d8f9-aaaaa",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				pods := decode[[]facts.Pod](t, r, facts.KeyPods)
				if len(pods) != 3 {
					t.Fatalf("pods = %d", len(pods))
				}
				p := pods[0]
				if p.Name != "cart-5d8f9-aaaaa" || !p.OOMKilled || p.Restarts != 7 || p.Ready || p.Reason != "CrashLoopBackOff" || p.Workload != "cart" {
					t.Errorf("worst pod = %+v", p)
				}
				c := p.Containers[0]
				if c.LastReason != "OOMKilled" || c.LastExitCode == nil || *c.LastExitCode != 137 || c.LimitsMemory != "256Mi" || len(c.Secrets) != 1 {
					t.Errorf("container = %+v", c)
				}
			},
		},
		{
			intent: "check_pod_status", params: map[string]any{"label_selector": "app=none"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true,
		},
		{
			intent: "list_pods", params: map[string]any{"namespace": "all", "unhealthy_only": true},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if pods := decode[[]facts.Pod](t, r, facts.KeyPods); len(pods) != 1 {
					t.Errorf("unhealthy pods = %d, want 1", len(pods))
				}
			},
		},
		{
			intent: "get_events", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				evs := decode[[]facts.Event](t, r, facts.KeyEvents)
				// e3 (two days old) is outside the window; warnings first, newest first.
				if len(evs) != 3 || evs[0].Reason != "BackOff" || evs[1].Reason != "NodeNotReady" || evs[2].Type != "Normal" {
					t.Errorf("events = %+v", evs)
				}
				if evs[0].Count != 7 || evs[0].Source != "kubelet" || evs[0].InvolvedKind != "Pod" {
					t.Errorf("event fields = %+v", evs[0])
				}
			},
		},
		{
			intent: "get_events", params: map[string]any{"involved_object": "pod/cart-5d8f9-aaaaa", "type": "warning"},
			severity: evidencev1.Severity_SEVERITY_HIGH, sources: []string{"k8s"}, summary: "BackOff x7",
		},
		{
			intent: "get_events", params: map[string]any{"since_minutes": 5},
			severity: evidencev1.Severity_SEVERITY_HIGH, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if evs := decode[[]facts.Event](t, r, facts.KeyEvents); len(evs) != 2 {
					t.Errorf("events in last 5m = %d, want 2", len(evs))
				}
			},
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "pod", "name": "cart-5d8f9-aaaaa"},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				res := decode[[]facts.Resource](t, r, facts.KeyResources)
				if len(res) != 1 || len(res[0].Events) != 2 || len(res[0].Signals) == 0 {
					t.Fatalf("resource = %+v", res)
				}
				if !strings.Contains(r.RawOutput, "Secrets (names only): cart-db") || strings.Contains(r.RawOutput, "s3cr3t") {
					t.Errorf("raw output must name secrets, never their values:\n%s", r.RawOutput)
				}
			},
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "deployment", "name": "cart"},
			severity: evidencev1.Severity_SEVERITY_HIGH, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				d := decode[[]facts.Deployment](t, r, facts.KeyDeployments)
				if len(d) != 1 || len(d[0].RolloutHistory) != 2 || d[0].RolloutHistory[0].Revision != "2" || d[0].UnavailableReplicas != 1 {
					t.Errorf("deployment = %+v", d)
				}
			},
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "service", "name": "cart"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_NETWORK, sources: []string{"k8s"}, summary: "1 of 3 selected pods not ready",
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "node", "name": "node-b"},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				res := decode[[]facts.Resource](t, r, facts.KeyResources)
				if len(res[0].Events) != 1 || res[0].Events[0].Reason != "NodeNotReady" {
					t.Errorf("node events = %+v", res[0].Events)
				}
			},
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "configmap", "name": "cart-config"},
			severity: evidencev1.Severity_SEVERITY_INFO, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				res := decode[[]facts.Resource](t, r, facts.KeyResources)
				if res[0].Data["TIMEOUT_MS"] != "500" || strings.Contains(res[0].Data["DB_URL"], "hunter2") {
					t.Errorf("configmap data = %v", res[0].Data)
				}
			},
		},
		{
			// Every ConfigMap of the namespace, read for their settings,
			// their secrets redacted all the same.
			intent: "describe_resource", params: map[string]any{"kind": "configmap", "name": "*"},
			severity: evidencev1.Severity_SEVERITY_INFO, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"k8s"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				res := decode[[]facts.Resource](t, r, facts.KeyResources)
				var cart *facts.Resource
				for i := range res {
					if !res[i].Listed || res[i].Kind != "ConfigMap" || res[i].Namespace != "shop" {
						t.Errorf("listed object %+v", res[i])
					}
					if res[i].Name == "cart-config" {
						cart = &res[i]
					}
				}
				if cart == nil || cart.Data["TIMEOUT_MS"] != "500" || strings.Contains(cart.Data["DB_URL"], "hunter2") || strings.Contains(r.RawOutput, "hunter2") {
					t.Errorf("listing = %+v", res)
				}
			},
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "PVC", "name": "data"},
			severity: evidencev1.Severity_SEVERITY_HIGH, domain: evidencev1.Domain_DOMAIN_STORAGE, sources: []string{"k8s"}, summary: "Pending",
		},
		{
			intent: "describe_resource", params: map[string]any{"kind": "ingress", "name": "missing"},
			severity: evidencev1.Severity_SEVERITY_INFO, domain: evidencev1.Domain_DOMAIN_NETWORK, noData: true, summary: "not found",
		},
		{
			intent: "query_prometheus", params: map[string]any{"query": "sum by (service) (rate(http_errors[5m]))"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_NETWORK, sources: []string{"prometheus"},
			summary: "returned 2 series",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				ss := decode[[]facts.Series](t, r, facts.KeySeries)
				if len(ss) != 2 || ss[0].Labels["service"] != "cart" || ss[0].Shape != "step" || len(ss[0].Anomalies) == 0 || ss[0].Peak != 25 || ss[0].Count != 60 {
					t.Errorf("series[0] = %+v", ss[0])
				}
				if len(ss[0].Downsampled) == 0 || len(ss[0].Downsampled) > 60 {
					t.Errorf("downsampled = %d points", len(ss[0].Downsampled))
				}
				if ss[1].Shape != "flat" || len(ss[1].Anomalies) != 0 {
					t.Errorf("series[1] = %+v", ss[1])
				}
				if !ts.metrics.last.Start.Equal(t0.Add(-time.Hour)) || !ts.metrics.last.End.Equal(t0) || ts.metrics.last.Step != 15*time.Second {
					t.Errorf("range = %+v", ts.metrics.last)
				}
				if q := decode[string](t, r, facts.KeyQuery); !strings.Contains(q, "http_errors") {
					t.Errorf("query = %q", q)
				}
			},
		},
		{
			intent: "query_prometheus", params: map[string]any{"query": "node_disk_io_time_seconds_total", "range_minutes": 30, "step": "60s"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_STORAGE, sources: []string{"prometheus"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if !ts.metrics.last.Start.Equal(t0.Add(-30*time.Minute)) || ts.metrics.last.Step != time.Minute {
					t.Errorf("range = %+v", ts.metrics.last)
				}
			},
		},
		{
			intent: "search_logs", params: map[string]any{"query": "Timeout", "level": "error"},
			severity: evidencev1.Severity_SEVERITY_HIGH, domain: evidencev1.Domain_DOMAIN_UNKNOWN, sources: []string{"logs"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.logs.last; q.Query != "Timeout" || len(q.Levels) == 0 || q.Levels[0] != "ERROR" || !q.End.Equal(t0) {
					t.Errorf("log query = %+v", q)
				}
				if hits := decode[[]facts.LogLine](t, r, facts.KeyLogLines); len(hits) != 2 {
					t.Errorf("hits = %d", len(hits))
				}
			},
		},
		{
			intent: "list_deployments", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_HIGH, sources: []string{"k8s"}, summary: "cart has 1/2 ready",
		},
		{
			intent: "get_node_health", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_CRITICAL, sources: []string{"k8s"}, summary: "1 of 2 nodes unhealthy",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				nodes := decode[[]facts.Node](t, r, facts.KeyNodes)
				if len(nodes) != 2 || !nodes[0].Ready || nodes[0].InstanceType != "m5.large" || nodes[1].Ready || len(nodes[1].Taints) != 1 {
					t.Errorf("nodes = %+v", nodes)
				}
			},
		},
		{
			intent: "get_deploy_history", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"deploys"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.changes.last; q.Service != "cart" || !q.Start.Equal(t0.Add(-time.Hour-DefaultConfig().ChangeLookback)) {
					t.Errorf("change query = %+v (want service from context, window widened by the change look-back)", q)
				}
				if d := decode[[]facts.Deploy](t, r, facts.KeyDeploys); len(d) != 1 || d[0].Revision != "r3" {
					t.Errorf("deploys = %+v", d)
				}
			},
		},
		{
			// Nothing of the alerted service shipped: the other services'
			// deploys around the incident are listed, as such.
			intent: "get_deploy_history", params: map[string]any{"service": "payments"},
			severity: evidencev1.Severity_SEVERITY_INFO, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"deploys"},
			summary: "other services deployed around the incident: cart r3",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.changes.last; q.Service != "" {
					t.Errorf("second query = %+v, want every service", q)
				}
				if d := decode[[]facts.Deploy](t, r, facts.KeyDeploys); len(d) != 1 || d[0].Service != "cart" {
					t.Errorf("deploys = %+v", d)
				}
			},
		},
		{
			intent: "get_commits", params: map[string]any{"hint": "requests time out"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, sources: []string{"commits"}, summary: "1 of 2 commits",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				c := decode[[]facts.Commit](t, r, facts.KeyCommits)
				if len(c) != 1 || c[0].SHA != "abc1234def" {
					t.Errorf("commits = %+v", c)
				}
			},
		},
		{
			// Nothing in the service's own history: another repository's
			// commit that names it in a file path, weeks back.
			intent: "get_commits", params: map[string]any{"service": "payments"},
			severity: evidencev1.Severity_SEVERITY_INFO, sources: []string{"commits"}, summary: "any repository, naming payments",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				c := decode[[]facts.Commit](t, r, facts.KeyCommits)
				if len(c) != 1 || c[0].SHA != "9c0ffee111" {
					t.Errorf("commits = %+v, want the platform commit naming payments", c)
				}
				if q := ts.changes.last; q.Service != "" || !q.Start.Before(t0.Add(-240*time.Hour)) {
					t.Errorf("widened query = %+v, want every repository over the configuration look-back", q)
				}
			},
		},
		{
			// A file's history: the commits that changed the files a stack
			// trace names, over the last year when no window is given.
			intent: "get_commits", params: map[string]any{"service": "cart", "path": "Quote.java, Other.kt"},
			severity: evidencev1.Severity_SEVERITY_INFO, sources: []string{"commits"}, summary: "1 commit to cart touching Quote.java, Other.kt",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				c := decode[[]facts.Commit](t, r, facts.KeyCommits)
				if len(c) != 1 || c[0].SHA != "fff0000aaa" {
					t.Errorf("commits = %+v, want only the one that changed Quote.java", c)
				}
				if q := ts.changes.last; q.Service != "cart" || q.Start.After(t0.Add(-360*24*time.Hour)) {
					t.Errorf("query = %+v, want cart's history over a year", q)
				}
			},
		},
		{
			// A path no commit touched: nothing, and no widening to other
			// repositories.
			intent: "get_commits", params: map[string]any{"service": "cart", "path": "ui/Missing.tsx"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true,
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.changes.last; q.Service != "cart" {
					t.Errorf("query = %+v, want no widening", q)
				}
			},
		},
		{
			intent: "get_commits", params: map[string]any{"service": "ledger"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true,
		},
		{
			// "*": every service's releases, not the session's service.
			intent: "get_deploy_history", params: map[string]any{"service": "*"},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_COMPUTE, sources: []string{"deploys"},
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.changes.last; q.Service != "" {
					t.Errorf("query service %q, want every service", q.Service)
				}
				if d := decode[[]facts.Deploy](t, r, facts.KeyDeploys); len(d) != 1 || d[0].Service != "cart" {
					t.Errorf("deploys = %+v", d)
				}
			},
		},
		{
			// "*": every service's history, not the session's service.
			intent: "get_commits", params: map[string]any{"service": "*"},
			severity: evidencev1.Severity_SEVERITY_INFO, sources: []string{"commits"}, summary: "to all services",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				if q := ts.changes.last; q.Service != "" {
					t.Errorf("query service %q, want every service", q.Service)
				}
				if c := decode[[]facts.Commit](t, r, facts.KeyCommits); len(c) != len(ts.changes.commits) {
					t.Errorf("commits = %d, want every service's %d", len(c), len(ts.changes.commits))
				}
			},
		},
		{
			intent: "get_commits", params: map[string]any{"change_type": "db_migration"},
			severity: evidencev1.Severity_SEVERITY_INFO, sources: []string{"commits"}, summary: "0 of 2 commits",
		},
		{
			intent: "get_commit_diff", params: map[string]any{"sha": "abc1234def"},
			severity: evidencev1.Severity_SEVERITY_INFO, domain: evidencev1.Domain_DOMAIN_UNKNOWN, sources: []string{"commits"}, summary: "+1 -1",
			check: func(t *testing.T, r *evidencev1.ToolResult, ts *testSet) {
				c := decode[[]facts.Commit](t, r, facts.KeyCommits)
				if len(c) != 1 || !c[0].HasDiff || !strings.Contains(c[0].Diff, "200ms") || c[0].Message == "" {
					t.Errorf("commit = %+v", c)
				}
			},
		},
		{
			intent: "get_commit_diff", params: map[string]any{"sha": "0000000"},
			severity: evidencev1.Severity_SEVERITY_INFO, noData: true,
		},
		{
			intent: "query_db_metrics", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, domain: evidencev1.Domain_DOMAIN_STORAGE, sources: []string{"aws_cloudwatch_metrics"},
		},
		{
			intent: "get_db_top_queries", params: map[string]any{"instance": "db1"},
			severity: evidencev1.Severity_SEVERITY_HIGH, domain: evidencev1.Domain_DOMAIN_STORAGE, sources: []string{"aws_performance_insights"}, summary: "Lock:tuple",
		},
		{
			intent: "get_db_events", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_HIGH, domain: evidencev1.Domain_DOMAIN_STORAGE, sources: []string{"aws_rds_events"}, summary: "failover",
		},
		{
			intent: "list_monitors", params: map[string]any{},
			severity: evidencev1.Severity_SEVERITY_MEDIUM, sources: []string{"datadog_monitors"}, summary: "1 of 2 monitors firing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.intent+"/"+mustStruct(t, tc.params).String(), func(t *testing.T) {
			ts := newTestSet()
			s := newService(t, ts.set, nil)
			r := run(t, s, tc.intent, tc.params).GetResult()
			if !r.GetSuccess() {
				t.Fatalf("failed: %s", r.GetError())
			}
			if r.GetSeverity() != tc.severity {
				t.Errorf("severity = %s, want %s (summary %q)", r.GetSeverity(), tc.severity, r.GetSummary())
			}
			if tc.domain != 0 && r.GetDomain() != tc.domain {
				t.Errorf("domain = %s, want %s", r.GetDomain(), tc.domain)
			}
			if r.GetNoData() != tc.noData {
				t.Errorf("no_data = %v, want %v (summary %q)", r.GetNoData(), tc.noData, r.GetSummary())
			}
			if strings.Join(r.GetSources(), ",") != strings.Join(tc.sources, ",") {
				t.Errorf("sources = %v, want %v", r.GetSources(), tc.sources)
			}
			if !strings.Contains(r.GetSummary(), tc.summary) {
				t.Errorf("summary %q does not contain %q", r.GetSummary(), tc.summary)
			}
			if r.GetSummary() == "" || r.GetMetadata() == nil {
				t.Errorf("empty summary or metadata")
			}
			if tc.check != nil {
				tc.check(t, r, ts)
			}
		})
	}
}

func TestReInvestigateService(t *testing.T) {
	ts := newTestSet()
	brain := &fakeBrain{}
	pub := &fakePublisher{}
	s := newService(t, ts.set, nil, func(d *Deps) { d.Brain = brain; d.Bus = pub })
	resp := run(t, s, "re_investigate_service", map[string]any{"service": "inventory"})
	if len(brain.reqs) != 1 {
		t.Fatalf("brain calls = %d", len(brain.reqs))
	}
	req := brain.reqs[0]
	if req.GetParentSessionId() != "sess-1" || req.GetService() != "inventory" || req.GetNamespace() != "shop" || req.GetInvestigationId() == "" {
		t.Errorf("start request = %v", req)
	}
	if req.GetContext().GetActiveService() != "inventory" {
		t.Errorf("sub-investigation context = %v", req.GetContext())
	}
	sub := decode[string](t, resp.GetResult(), "sub_investigation_id")
	if sub != req.GetInvestigationId() {
		t.Errorf("pin records %q, brain got %q", sub, req.GetInvestigationId())
	}
	if resp.GetPin().GetMetadata().GetFields()["sub_investigation_id"].GetStringValue() != sub {
		t.Errorf("pin metadata lacks sub_investigation_id")
	}
	if pub.count() != 1 {
		t.Errorf("published %d pin events, want 1", pub.count())
	}
	// Retrying derives the same sub-investigation id.
	run(t, s, "re_investigate_service", map[string]any{"service": "inventory"})
	if brain.reqs[1].GetInvestigationId() != req.GetInvestigationId() {
		t.Errorf("sub-investigation id not stable")
	}
}

func TestAvailability(t *testing.T) {
	ts := newTestSet()
	ts.set.Metrics = nil
	s := newService(t, ts.set, nil)
	resp, err := s.ListToolDefinitions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]*evidencev1.ToolDefinition{}
	for _, d := range resp.GetTools() {
		seen[d.GetIntent()] = d
	}
	for _, intent := range []string{"fetch_pod_logs", "describe_resource", "query_prometheus", "search_logs", "check_pod_status", "get_events", "re_investigate_service",
		"list_pods", "list_deployments", "get_node_health", "get_deploy_history", "get_commits", "get_commit_diff", "query_db_metrics", "get_db_top_queries", "get_db_events", "list_monitors", "get_status_page"} {
		d, ok := seen[intent]
		if !ok {
			t.Errorf("tool %s missing from the registry", intent)
			continue
		}
		if d.GetSlashCommand() == "" || d.GetLabel() == "" || d.GetIcon() == "" || d.GetDescription() == "" || len(d.GetIntegrations()) == 0 || d.GetUsage() == "" {
			t.Errorf("tool %s definition incomplete: %v", intent, d)
		}
	}
	if d := seen["query_prometheus"]; d.GetAvailable() || d.GetUnavailableReason() != "integration not configured: prometheus" {
		t.Errorf("query_prometheus available=%v reason=%q", d.GetAvailable(), d.GetUnavailableReason())
	}
	if d := seen["re_investigate_service"]; d.GetAvailable() || !strings.Contains(d.GetUnavailableReason(), "brain") {
		t.Errorf("re_investigate_service without brain client: %v", d)
	}
	if d := seen["fetch_pod_logs"]; !d.GetAvailable() {
		t.Errorf("fetch_pod_logs unavailable: %s", d.GetUnavailableReason())
	}
	slash := map[string]string{}
	for _, d := range resp.GetTools() {
		if other, dup := slash[d.GetSlashCommand()]; dup {
			t.Errorf("slash command %s used by %s and %s", d.GetSlashCommand(), other, d.GetIntent())
		}
		slash[d.GetSlashCommand()] = d.GetIntent()
	}
	ri, err := s.ResolveIntegrations(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ri.GetIntegrations() {
		if st.GetName() == backend.AreaMetrics && (st.GetAvailable() || st.GetReason() == "") {
			t.Errorf("prometheus status = %v", st)
		}
		if st.GetName() == backend.AreaPods && (!st.GetAvailable() || st.GetBackend() != "test:k8s") {
			t.Errorf("pods status = %v", st)
		}
	}
}

// A search that finds nothing widens to the scope's errors and warnings,
// unless it asks for exact answers: a targeted search (a standing record,
// a notice naming a day) that finds nothing says so.
func TestSearchLogsExactDoesNotWiden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		hits   int
		widen  bool
	}{
		{"widened", map[string]any{"query": `"known issue"`}, 2, true},
		{"exact", map[string]any{"query": `"known issue"`, "exact": true}, 0, false},
	} {
		ts := newTestSet()
		ts.logs.unqueried = true
		s := newService(t, ts.set, nil)
		r := run(t, s, "search_logs", tc.params).GetResult()
		hits := decode[[]facts.LogLine](t, r, facts.KeyLogLines)
		if len(hits) != tc.hits || strings.Contains(r.GetSummary(), "searched without") != tc.widen {
			t.Errorf("%s: %d hits, summary %q; want %d hits, widened %v", tc.name, len(hits), r.GetSummary(), tc.hits, tc.widen)
		}
	}
}

func TestFetchPodLogsFallsBackToOlderMatchingPod(t *testing.T) {
	ts := newTestSet()
	ts.podLogs.logs["shop/cart-5d8f9-aaaaa"] = ""
	ts.podLogs.logs["shop/cart-5d8f9-aaaaa#previous"] = ""
	ts.podLogs.logs["shop/cart-5d8f9-bbbbb"] = "2026-03-10T11:00:00Z ERROR db down\n"
	s := newService(t, ts.set, nil)
	r := run(t, s, "fetch_pod_logs", map[string]any{"pod": "cart"}).GetResult() // workload prefix
	if got := decode[string](t, r, facts.KeyResolvedPod); got != "cart-5d8f9-bbbbb" {
		t.Errorf("resolved_pod = %q, want the older pod that has logs", got)
	}
	if r.GetSeverity() != evidencev1.Severity_SEVERITY_HIGH || !strings.Contains(r.GetRawOutput(), "newer matching pods without logs: cart-5d8f9-aaaaa") {
		t.Errorf("severity %s raw %q", r.GetSeverity(), r.GetRawOutput())
	}
}

// The pods that logged may be the older ones of a larger replica set: the
// fetch walks past four newer silent pods to the one that has lines.
func TestFetchPodLogsWalksPastSeveralSilentPods(t *testing.T) {
	ts := newTestSet()
	ts.podLogs.logs["shop/cart-5d8f9-aaaaa"] = ""
	ts.podLogs.logs["shop/cart-5d8f9-aaaaa#previous"] = ""
	for i, name := range []string{"cart-5d8f9-ccccc", "cart-5d8f9-ddddd", "cart-5d8f9-eeeee"} {
		if _, err := ts.kube.CoreV1().Pods("shop").Create(t.Context(), healthyPod(name, t0.Add(-time.Duration(10+i)*time.Minute)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ts.podLogs.logs["shop/"+name] = ""
	}
	ts.podLogs.logs["shop/cart-5d8f9-bbbbb"] = "2026-03-10T11:00:00Z INFO season closed, sales paused\n"
	s := newService(t, ts.set, nil)
	r := run(t, s, "fetch_pod_logs", map[string]any{"pod": "cart"}).GetResult()
	if got := decode[string](t, r, facts.KeyResolvedPod); got != "cart-5d8f9-bbbbb" {
		t.Errorf("resolved_pod = %q, want the oldest pod, the only one with lines", got)
	}
	if r.GetNoData() || !strings.Contains(r.GetRawOutput(), "season closed") {
		t.Errorf("no_data %v raw %q", r.GetNoData(), r.GetRawOutput())
	}
}

func TestFetchPodLogsPreviousFallsBackToCurrent(t *testing.T) {
	tests := []struct {
		name      string
		previous  string // "" when the pod has no previous container log
		wantLabel string
		wantMsg   string
	}{
		{"no previous container: the current log", "", "current (no previous container log)", "starting cart"},
		{"previous container: only it", "2026-03-10T11:57:09Z ERROR crashed\n", "previous (terminated)", "crashed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestSet()
			if tc.previous == "" {
				delete(ts.podLogs.logs, "shop/cart-5d8f9-aaaaa#previous")
			} else {
				ts.podLogs.logs["shop/cart-5d8f9-aaaaa#previous"] = tc.previous
			}
			s := newService(t, ts.set, nil)
			r := run(t, s, "fetch_pod_logs", map[string]any{"pod": "cart-5d8f9-aaaaa", "previous": true}).GetResult()
			if r.GetNoData() {
				t.Fatalf("no data: %s", r.GetSummary())
			}
			raw := r.GetRawOutput()
			if !strings.Contains(raw, "=== "+tc.wantLabel) || !strings.Contains(raw, tc.wantMsg) {
				t.Errorf("raw output %q, want section %q with %q", raw, tc.wantLabel, tc.wantMsg)
			}
			if tc.previous != "" && strings.Contains(raw, "starting cart") {
				t.Errorf("current log read although the previous container had one: %q", raw)
			}
		})
	}
}

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		in, level, msg string
		ts             bool
	}{
		{"2026-03-10T11:57:09.123Z ERROR failed to connect", "ERROR", "ERROR failed to connect", true},
		{`{"ts":"2026-03-10T11:57:09Z","level":"warn","msg":"slow query","error":"deadline"}`, "WARN", "slow query: deadline", true},
		{"time=x level=error msg=boom", "ERROR", "time=x level=error msg=boom", false},
		// logfmt with its time first: the time is the line's.
		{`time=2027-07-14T10:09:05Z level=error msg="geocode failed" status=429`, "ERROR", `level=error msg="geocode failed" status=429`, true},
		{`ts="2027-07-14T10:09:05.120Z" level=warn msg=slow`, "WARN", "level=warn msg=slow", true},
		{"runtime=2027-07-14T10:09:05Z level=info msg=x", "INFO", "runtime=2027-07-14T10:09:05Z level=info msg=x", false},
		{"[2026-03-10 11:57:09] panic: nil map", "FATAL", "panic: nil map", true},
		{"Killed process 1 (java)", "FATAL", "Killed process 1 (java)", false},
		{"connection refused to 10.0.0.1:5432", "ERROR", "connection refused to 10.0.0.1:5432", false},
		{"GET /health 200", "", "GET /health 200", false},
		{"INFORMATIONAL banner", "", "INFORMATIONAL banner", false},
		// MongoDB's structured log: severity "s", time {"t":{"$date"}}.
		{`{"t":{"$date":"2026-03-10T11:57:09.000Z"},"s":"I","c":"REPL","msg":"Starting an election, since we've seen no PRIMARY"}`, "INFO", "Starting an election, since we've seen no PRIMARY c=REPL", true},
		// Python's logging as JSON; a level key whose value is no level is skipped.
		{`{"levelname":"WARNING","level":"x","message":"retrying"}`, "WARN", "retrying", false},
		// A leading lower-case level word: a setting's name is no error.
		{"info: http server listening port=8080 keepAliveTimeout=5000", "INFO", "info: http server listening port=8080 keepAliveTimeout=5000", false},
		{"warn: retry budget low", "WARN", "warn: retry budget low", false},
	}
	for _, tc := range tests {
		got := parseLogLine(tc.in)
		if got.Level != tc.level || got.Message != tc.msg || (got.Timestamp != nil) != tc.ts {
			t.Errorf("parseLogLine(%q) = level %q msg %q ts %v", tc.in, got.Level, got.Message, got.Timestamp)
		}
	}
}

func TestPromDomain(t *testing.T) {
	tests := map[string]evidencev1.Domain{
		"rate(http_requests_total{code=~\"5..\"}[5m])":       evidencev1.Domain_DOMAIN_NETWORK,
		"histogram_quantile(0.99, rate(latency_bucket[5m]))": evidencev1.Domain_DOMAIN_NETWORK,
		"sum(rate(coredns_dns_requests_total[5m]))":          evidencev1.Domain_DOMAIN_NETWORK,
		"node_filesystem_avail_bytes":                        evidencev1.Domain_DOMAIN_STORAGE,
		"rate(node_disk_io_time_seconds_total[5m])":          evidencev1.Domain_DOMAIN_STORAGE,
		"apiserver_request_duration_seconds_bucket":          evidencev1.Domain_DOMAIN_CONTROL_PLANE,
		"container_memory_working_set_bytes":                 evidencev1.Domain_DOMAIN_COMPUTE,
		"rate(container_cpu_usage_seconds_total[5m])":        evidencev1.Domain_DOMAIN_COMPUTE,
	}
	for q, want := range tests {
		if got := promDomain(q); got != want {
			t.Errorf("promDomain(%s) = %s, want %s", q, got, want)
		}
	}
}

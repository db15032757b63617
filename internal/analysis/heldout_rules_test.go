package analysis

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// General precedence rules: a specific story must yield when stronger
// evidence contradicts it. Names and numbers are invented.

func logAt(min int, ns, svc, pod, level, msg string) facts.LogLine {
	return facts.LogLine{Timestamp: at(min), Namespace: ns, Service: svc, Pod: pod, Level: level, Message: msg}
}

func TestMemoryCreepIsALeakNotHealthy(t *testing.T) {
	memAlert := &investigationv1.Alert{AlertName: "ContainerMemoryHigh", Namespace: "ledger", Pod: "quill-7c9d8f6b5-x2k4p", Labels: map[string]string{"namespace": "ledger", "pod": "quill-7c9d8f6b5-x2k4p"}}
	pod := func() facts.Pod {
		p := podOn("ledger", "quill-7c9d8f6b5-x2k4p", "node-a")
		p.Workload = "quill"
		p.Containers[0].LimitsMemory = "1Gi"
		return p
	}
	const gi = 1 << 30
	cases := []struct {
		name    string
		mem     []float64
		wantLed string
		healthy bool
	}{
		{"steady climb near the limit is a leak", ramp(0.80*gi, 0.90*gi, 31), ModeMemoryLeak, false},
		{"flat plateau near the limit stays healthy", flat(0.9*gi, 31), ModeHealthy, true},
		{"climb far below the limit is no leak finding", ramp(0.2*gi, 0.25*gi, 31), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			series := []facts.Series{
				metric("container_memory_working_set_bytes", map[string]string{"namespace": "ledger", "pod": "quill-7c9d8f6b5-x2k4p"}, tc.mem...),
				metric("quill_session_cache_entries", map[string]string{"pod": "quill-7c9d8f6b5-x2k4p"}, ramp(1000, 1600, 31)...),
				metric("container_memory_working_set_bytes", map[string]string{"namespace": "ledger", "pod": "inkwell-5b6c7d8e9-q1w2e"}, flat(0.1*gi, 31)...),
			}
			res, d := analyze(t, memAlert,
				pin(t, "pods", "check_pod_status", "k8s", facts.KeyPods, []facts.Pod{pod()}),
				pin(t, "mem", "query_prometheus", "prometheus", facts.KeySeries, series))
			if tc.wantLed == "" {
				for _, f := range res.Findings {
					if f.Mode == ModeMemoryLeak {
						t.Fatalf("leak finding far below the limit: %s", f.Statement)
					}
				}
				return
			}
			if len(res.Findings) == 0 || res.Findings[0].Mode != tc.wantLed {
				t.Fatalf("lead = %v, want %s", res.Findings, tc.wantLed)
			}
			if res.Healthy != tc.healthy {
				t.Fatalf("healthy = %v", res.Healthy)
			}
			if tc.wantLed == ModeMemoryLeak {
				all := text(d)
				for _, h := range []string{"quill_session_cache_entries", "limit", "inkwell"} {
					if !strings.Contains(all, h) {
						t.Errorf("diagnosis lacks %q:\n%s", h, all)
					}
				}
				if d.GetCategory() != catResource || d.GetRootCauseEntity() != "deployment/ledger/quill" {
					t.Errorf("category %v entity %s", d.GetCategory(), d.GetRootCauseEntity())
				}
			}
		})
	}
}

func TestUpstreamRateLimitIsTheDependencys(t *testing.T) {
	rl := func(min int) facts.LogLine {
		return logAt(min, "maps", "route-plan", "route-plan-6d5f4c3b2-a1b2c", "WARN", "upstream rate limited tilecast status=429 X-RateLimit-Limit: 50 X-RateLimit-Remaining: 0")
	}
	base := []facts.LogLine{
		logAt(0, "maps", "route-plan", "route-plan-6d5f4c3b2-a1b2c", "INFO", "tile ok upstream=tilecast ratelimit_limit=400"),
		logAt(1, "maps", "route-plan", "route-plan-6d5f4c3b2-a1b2c", "INFO", "lookup ok upstream=elevio took_ms=12"),
		rl(10), rl(11), rl(12), rl(13),
	}
	cases := []struct {
		name      string
		deploys   []facts.Deploy
		wantLead  bool
		wantWords []string
	}{
		{"quota cut, caller unchanged", []facts.Deploy{{Service: "route-plan", Revision: "aa11bb2", StartedAt: at(-3000)}}, true, []string{"tilecast", "429", "X-RateLimit-Limit", "elevio", "aa11bb2"}},
		{"caller released just before", []facts.Deploy{{Service: "route-plan", Revision: "cc33dd4", StartedAt: at(5)}}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil,
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, base),
				pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, tc.deploys))
			f := findingOf(t, res, ModeUpstreamRateLimit)
			if f.Category != catDependency || f.Entity != "service/tilecast" {
				t.Errorf("category %v entity %s", f.Category, f.Entity)
			}
			if !tc.wantLead {
				if f.Score >= 0.8 {
					t.Errorf("a release right before the 429s should weaken the finding: %.2f", f.Score)
				}
				return
			}
			if res.Findings[0].Mode != ModeUpstreamRateLimit {
				t.Fatalf("lead = %s", res.Findings[0].Mode)
			}
			all := text(d)
			for _, w := range tc.wantWords {
				if !strings.Contains(all, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestParseErrorsOnInputAreDataQualityUnlessReleased(t *testing.T) {
	bad := func(min int) facts.LogLine {
		return logAt(min, "intake", "csv-loader", "csv-loader-7f8e9d-zz1", "ERROR", "vendor=brightmill file=stock_0412.csv ValueError: could not convert string to float: '3,75' reason=parse_error")
	}
	logs := []facts.LogLine{
		logAt(0, "intake", "csv-loader", "csv-loader-7f8e9d-zz1", "INFO", "vendor=oakfield file=oak_0410.csv rows=900 imported=900"),
		bad(3), bad(4), bad(5), bad(6),
		logAt(7, "intake", "csv-loader", "csv-loader-7f8e9d-zz1", "INFO", "vendor=oakfield file=oak_0412.csv rows=900 imported=900"),
	}
	cases := []struct {
		name    string
		deploys []facts.Deploy
		mode    string
		cat     investigationv1.RootCauseCategory
		entity  string
	}{
		{"no release: the input changed", nil, ModeDataQuality, catData, "file/intake/stock_0412.csv"},
		{"release of the parser just before", []facts.Deploy{{Service: "csv-loader", Revision: "ee55ff6", PreviousRevision: "dd44ee5", StartedAt: at(0), FinishedAt: at(1)}}, ModeCodeException, catCode, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pins := []*evidencev1.EvidencePin{pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, logs)}
			if tc.deploys != nil {
				pins = append(pins, pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, tc.deploys))
			}
			res, d := analyze(t, nil, pins...)
			if res.Findings[0].Mode != tc.mode || d.GetCategory() != tc.cat {
				t.Fatalf("lead %s category %v, want %s %v", res.Findings[0].Mode, d.GetCategory(), tc.mode, tc.cat)
			}
			if tc.entity != "" {
				if d.GetRootCauseEntity() != tc.entity {
					t.Errorf("entity %s, want %s", d.GetRootCauseEntity(), tc.entity)
				}
				if all := text(d); !strings.Contains(all, "oakfield") {
					t.Errorf("peers processed cleanly not reported:\n%s", all)
				}
			}
		})
	}
}

func TestNodeClockSkew(t *testing.T) {
	pods := []facts.Pod{podOn("acct", "signin-5d4c3b2a1-aaaa1", "worker-3"), podOn("acct", "signin-5d4c3b2a1-bbbb2", "worker-1")}
	for i := range pods {
		pods[i].Workload = "signin"
	}
	offset := func(node string, v float64) facts.Series {
		return metric("node_timex_offset_seconds", map[string]string{"instance": node + ":9100"}, flat(v, 20)...)
	}
	reject := logAt(5, "acct", "signin", "signin-5d4c3b2a1-aaaa1", "WARN", "jwt rejected: token is not valid yet status=401")
	cases := []struct {
		name   string
		skew   float64
		expect bool
	}{
		{"node 300 s behind", -300, true},
		{"offsets within leeway", 0.2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil,
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, pods),
				pin(t, "m", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{offset("worker-3", tc.skew), offset("worker-1", 0.001)}),
				pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, []facts.LogLine{reject, reject, reject}))
			found := false
			for _, f := range res.Findings {
				found = found || f.Mode == ModeClockSkew
			}
			if found != tc.expect {
				t.Fatalf("clock-skew finding = %v, want %v", found, tc.expect)
			}
			if !tc.expect {
				return
			}
			if res.Findings[0].Mode != ModeClockSkew || d.GetCategory() != catInfra || d.GetRootCauseEntity() != "node/worker-3" {
				t.Fatalf("lead %s category %v entity %s", res.Findings[0].Mode, d.GetCategory(), d.GetRootCauseEntity())
			}
			all := text(d)
			for _, w := range []string{"clock", "not valid yet", "worker-1", "signin-5d4c3b2a1-bbbb2"} {
				if !strings.Contains(all, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestServiceSelectorMatchesNoPods(t *testing.T) {
	svc := facts.Resource{Kind: "Service", Namespace: "yard", Name: "crane-api", Signals: []string{
		"selector app=crane-api matches no pods: the service has no endpoints",
		"pods crane-api-6f5e4d-k1 carry app.kubernetes.io/name=crane-api instead (labels changed: the selector no longer matches them)",
	}}
	p := podOn("yard", "crane-api-6f5e4d-k1", "node-a")
	p.Workload = "crane-api"
	proxy := logAt(3, "edge", "edge-proxy", "edge-proxy-0", "WARN", `Service "yard/crane-api" does not have any active Endpoint.`)
	cases := []struct {
		name string
		res  facts.Resource
		want bool
	}{
		{"selector matches nothing", svc, true},
		{"service with endpoints", facts.Resource{Kind: "Service", Namespace: "yard", Name: "crane-api"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil,
				pin(t, "ing", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{tc.res}),
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{proxy, proxy}))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeNoEndpoints && res.Findings[0].Detector == "service_no_endpoints"
			if got != tc.want {
				t.Fatalf("no-endpoints lead = %v, want %v (%v)", got, tc.want, res.Findings)
			}
			if !tc.want {
				return
			}
			if d.GetCategory() != catConfig || d.GetRootCauseEntity() != "service/yard/crane-api" {
				t.Errorf("category %v entity %s", d.GetCategory(), d.GetRootCauseEntity())
			}
			all := text(d)
			for _, w := range []string{"selector", "app.kubernetes.io/name", "active Endpoint"} {
				if !strings.Contains(all, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestNetworkPolicyBlocksAHealthyDependency(t *testing.T) {
	timeout := func(min int) facts.LogLine {
		return logAt(min, "docks", "pier-sched", "pier-sched-7a6b5c-p1", "ERROR", "dial tcp 10.1.2.3:6379: i/o timeout (host=quay-cache.stores.svc.cluster.local)")
	}
	other := logAt(6, "billing", "tally", "tally-5c4b3a-t1", "INFO", "flushed batch to quay-cache.stores.svc.cluster.local:6379 took=3ms")
	policy := func(created int, allows string) facts.Resource {
		return facts.Resource{Kind: "NetworkPolicy", Namespace: "docks", Name: "lockdown-egress", CreatedAt: at(created),
			Signals: []string{"selects all pods in docks; restricts Egress", allows}}
	}
	cases := []struct {
		name string
		pol  facts.Resource
		want bool
	}{
		{"new policy omits the dependency", policy(-1, "egress allows only: namespaces kubernetes.io/metadata.name=kube-system on 53/UDP"), true},
		{"policy allows the dependency's port", policy(-1, "egress allows only: namespaces kubernetes.io/metadata.name=stores on 6379/TCP"), false},
		{"policy months older than the failure", policy(-90*24*60, "egress allows only: namespaces kubernetes.io/metadata.name=kube-system on 53/UDP"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, &investigationv1.Alert{AlertName: "PierSchedNotReady", Namespace: "docks"},
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{timeout(0), timeout(1), timeout(2), timeout(3), other}),
				pin(t, "np", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{tc.pol}))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeNetworkPolicy
			if got != tc.want {
				t.Fatalf("network-policy lead = %v, want %v (lead %s)", got, tc.want, res.Findings[0].Mode)
			}
			if !tc.want {
				return
			}
			if d.GetCategory() != catConfig || d.GetRootCauseEntity() != "networkpolicy/docks/lockdown-egress" {
				t.Errorf("category %v entity %s", d.GetCategory(), d.GetRootCauseEntity())
			}
			if all := text(d); !strings.Contains(all, "tally") || !strings.Contains(all, "i/o timeout") {
				t.Errorf("diagnosis lacks the healthy client or the timeout:\n%s", all)
			}
		})
	}
}

// Name lookups that time out from one namespace while the cluster DNS
// answers others are dropped by that namespace's egress policy: the lookup
// was a call to the DNS server on port 53, whatever name it asked for.
func TestNetworkPolicyDropsNameLookups(t *testing.T) {
	lookup := func(min int) facts.LogLine {
		return logAt(min, "tills", "till-sync", "till-sync-6d5c4b-q1", "ERROR", "cache: dial tcp: lookup kv.store-data.svc.cluster.local on 10.96.0.10:53: read udp 10.244.1.9:50112->10.96.0.10:53: i/o timeout")
	}
	policy := func(allows string) facts.Resource {
		return facts.Resource{Kind: "NetworkPolicy", Namespace: "tills", Name: "egress-baseline", CreatedAt: at(-2),
			Signals: []string{"selects all pods in tills; restricts Egress", allows}}
	}
	cases := []struct {
		name string
		pol  facts.Resource
		want bool
	}{
		{"allows the store but not DNS", policy("egress allows only: namespaces kubernetes.io/metadata.name=store-data on 6379/TCP"), true},
		{"allows DNS", policy("egress allows only: namespaces kubernetes.io/metadata.name=kube-system on 53/UDP"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, &investigationv1.Alert{AlertName: "TillSyncErrors", Namespace: "tills"},
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{lookup(0), lookup(1), lookup(2), lookup(3)}),
				pin(t, "np", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{tc.pol}))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeNetworkPolicy
			if got != tc.want {
				t.Fatalf("network-policy lead = %v, want %v (lead %s)", got, tc.want, res.Findings[0].Mode)
			}
			if tc.want && (d.GetCategory() != catConfig || d.GetRootCauseEntity() != "networkpolicy/tills/egress-baseline") {
				t.Errorf("category %v entity %s", d.GetCategory(), d.GetRootCauseEntity())
			}
		})
	}
}

func TestCompletedMaintenanceWindowIsHealthy(t *testing.T) {
	start := logAt(0, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 started: db/vault-pg patch upgrade")
	refused := func(min int) facts.LogLine {
		return logAt(min, "loans", "teller", "teller-5b4a3c-r1", "ERROR", "db: connection refused vault-pg:5432")
	}
	alertAt := func(min int) *investigationv1.Alert {
		return &investigationv1.Alert{AlertName: "TellerErrorBudgetBurn", Namespace: "loans", StartsAt: timestamppb.New(t0.Add(time.Duration(min) * time.Minute))}
	}
	cases := []struct {
		name  string
		end   facts.LogLine
		extra []facts.LogLine
		alert *investigationv1.Alert
		want  bool
	}{
		{"window completed, errors inside it", logAt(12, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 completed: successful"), nil, alertAt(20), true},
		{"window failed", logAt(12, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 completed: upgrade failed, rolled back"), nil, alertAt(20), false},
		{"errors continue after the window", logAt(12, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 completed: successful"), []facts.LogLine{refused(30)}, alertAt(20), false},
		// Fired during the window, read after it closed with no error
		// since: the planned work has ended, the condition is gone.
		{"alert fired during the window", logAt(12, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 completed: successful"), nil, alertAt(5), true},
		{"alert older than the window", logAt(12, "ops", "change-desk", "", "INFO", "maintenance window OPS-4411 completed: successful"), nil, alertAt(-5), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls := append([]facts.LogLine{start, refused(1), refused(3), refused(5), tc.end}, tc.extra...)
			res, d := analyze(t, tc.alert, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, ls))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeMaintenanceEnded
			if got != tc.want {
				if len(res.Findings) == 0 {
					t.Fatalf("maintenance lead = false, want %v (no findings)", tc.want)
				}
				t.Fatalf("maintenance lead = %v, want %v (lead %s: %s)", got, tc.want, res.Findings[0].Mode, res.Findings[0].Statement)
			}
			if tc.want && (d.GetCategory() != catHealthy || !strings.Contains(text(d), "OPS-4411") || d.GetRootCauseEntity() != "db/vault-pg") {
				t.Errorf("category %v entity %s:\n%s", d.GetCategory(), d.GetRootCauseEntity(), text(d))
			}
		})
	}
}

func TestCronJobOverlap(t *testing.T) {
	active := func(vals ...float64) facts.Series {
		return metric("kube_cronjob_status_active", map[string]string{"namespace": "depot", "cronjob": "tally-sweep"}, vals...)
	}
	info := func(policy string) facts.Series {
		return metric("kube_cronjob_info", map[string]string{"namespace": "depot", "cronjob": "tally-sweep", "concurrency_policy": policy, "schedule": "*/15 * * * *"}, flat(1, 20)...)
	}
	sessions := metric("pg_stat_activity_count", map[string]string{"application_name": "tally-sweep"}, ramp(8, 24, 20)...)
	cases := []struct {
		name   string
		series []facts.Series
		want   bool
	}{
		{"runs pile up under Allow", []facts.Series{active(step(1, 3, 20, 10)...), info("Allow"), sessions}, true},
		{"Forbid cannot overlap", []facts.Series{active(step(1, 3, 20, 10)...), info("Forbid"), sessions}, false},
		{"one run at a time", []facts.Series{active(flat(1, 20)...), info("Allow"), sessions}, false},
		{"OpenTelemetry's count of running jobs", []facts.Series{
			metric("k8s_cronjob_active_jobs", map[string]string{"k8s_namespace_name": "depot", "k8s_cronjob_name": "tally-sweep"}, step(1, 3, 20, 10)...), info("Allow"), sessions}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil, pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, tc.series))
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeCronJobOverlap
			if got != tc.want {
				t.Fatalf("overlap lead = %v, want %v (%v)", got, tc.want, res.Findings)
			}
			if !tc.want {
				return
			}
			if d.GetCategory() != catResource || d.GetRootCauseEntity() != "cronjob/depot/tally-sweep" {
				t.Errorf("category %v entity %s", d.GetCategory(), d.GetRootCauseEntity())
			}
			all := text(d)
			for _, w := range []string{"concurrencyPolicy", "Allow", "pg_stat_activity_count"} {
				if !strings.Contains(all, w) {
					t.Errorf("diagnosis lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// A quota shared with a consumer that started just before the first 429
// (a Job calling the same dependency, or with the same API key) is that
// consumer's exhaustion of it: resource exhaustion, the Job named, and
// the quota reading asks for the new pods' logs. A consumer that shares
// nothing with the 429s, or started long before, leaves the reading as the
// dependency's.
func TestQuotaSharedWithANewConsumer(t *testing.T) {
	rl := func(min int) facts.LogLine {
		return logAt(min, "solar", "quote-engine", "quote-engine-64b8d-aaaa1", "ERROR", `geocode failed target=maps.geo.example status=429 body="rate limit 50 req/s exceeded for key ak_live_sun_main"`)
	}
	lines := []facts.LogLine{rl(10), rl(11), rl(12), rl(13)}
	jobPod := func(startMin int) facts.Pod {
		return facts.Pod{Namespace: "solar", Name: "survey-backfill-x7k2p-q4r8z", OwnerKind: "Job", OwnerName: "survey-backfill-x7k2p", Phase: "Running", Ready: true, StartTime: at(startMin)}
	}
	callerPod := facts.Pod{Namespace: "solar", Name: "quote-engine-64b8d-aaaa1", Workload: "quote-engine", Phase: "Running", Ready: true, StartTime: at(-3000)}
	for _, tc := range []struct {
		name       string
		start      int
		jobLine    string
		wantCat    investigationv1.RootCauseCategory
		wantEntity string
	}{
		{"same key, started before", 6, "starting backfill leads=1284311 concurrency=48 key=ak_live_sun_main", catResource, "job/solar/survey-backfill-x7k2p"},
		{"same host, started before", 6, "geocoding via maps.geo.example", catResource, "job/solar/survey-backfill-x7k2p"},
		{"nothing shared", 6, "starting backfill leads=1284311", catDependency, "service/maps.geo.example"},
		{"started long before", -120, "starting backfill key=ak_live_sun_main", catDependency, "service/maps.geo.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append(slices.Clone(lines), logAt(tc.start, "solar", "survey-backfill", "survey-backfill-x7k2p-q4r8z", "INFO", tc.jobLine))
			res, _ := analyze(t, nil,
				pin(t, "logs", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, all),
				pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{callerPod, jobPod(tc.start)}))
			f := findingOf(t, res, ModeUpstreamRateLimit)
			if f.Category != tc.wantCat || f.Entity != tc.wantEntity {
				t.Errorf("category %v entity %s, want %v %s", f.Category, f.Entity, tc.wantCat, tc.wantEntity)
			}
			calls, _ := Result{Findings: []Finding{*f}, ev: res.ev}.LeadFollowUps()
			wantLogs := tc.start > 0
			if got := len(calls) == 1 && calls[0].Params["pod"] == "survey-backfill-x7k2p-q4r8z"; got != wantLogs {
				t.Errorf("follow-ups %v, want the new pod's logs: %v", calls, wantLogs)
			}
		})
	}
}

// findingOf is the result's finding of mode; the test fails without one.
func findingOf(t *testing.T, res Result, mode string) *Finding {
	t.Helper()
	for i := range res.Findings {
		if res.Findings[i].Mode == mode {
			return &res.Findings[i]
		}
	}
	t.Fatalf("no %s finding", mode)
	return nil
}

// A change record that announced planned work days before opens the
// window; the record closed under its own id, in other words, ends it; an
// alert that fired inside is explained. Closed as failed, it is not.
func TestAnnouncedWorkClosedUnderItsID(t *testing.T) {
	ts := func(s string) *time.Time { x, _ := time.Parse(time.RFC3339, s); return &x }
	line := func(at, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts(at), Service: svc, Level: level, Message: msg}}
	}
	announce := line("2026-03-13T05:00:00Z", "change-calendar", "INFO", "CHG-7781 announced: Sunday 05:00-05:30 UTC planned database failover test for wms-pg; approved by ops")
	errLine := line("2026-03-15T05:03:00Z", "pick-api", "ERROR", "pq: the database system is shutting down")
	for _, tc := range []struct {
		name  string
		close LogLine
		want  bool
	}{
		{"closed successfully", line("2026-03-15T05:28:00Z", "change-calendar", "INFO", "CHG-7781 closed: failover test successful, RTO 2m10s"), true},
		{"closed as failed", line("2026-03-15T05:28:00Z", "change-calendar", "INFO", "CHG-7781 closed: failover test failed, rolled back"), false},
		{"another record closed", line("2026-03-15T05:28:00Z", "change-calendar", "INFO", "CHG-7790 closed: successful"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "PickApi5xx", StartsAt: timestamppb.New(*ts("2026-03-15T05:04:00Z"))}, nil)
			ev.Logs = []LogLine{announce, errLine, tc.close}
			got := detectMaintenanceEnded(ev)
			if (len(got) == 1) != tc.want {
				t.Fatalf("findings %d, want %v", len(got), tc.want)
			}
			if tc.want && !strings.Contains(got[0].Statement, "CHG-7781") {
				t.Errorf("statement %q does not name the record", got[0].Statement)
			}
		})
	}
}

// Planned work with no error line at all explains an alert that fired
// inside its window (a latency check during a load test); not one that
// fired after the work ended.
func TestPlannedWorkWithoutErrors(t *testing.T) {
	ts := func(s string) *time.Time { x, _ := time.Parse(time.RFC3339, s); return &x }
	line := func(at, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts(at), Service: svc, Level: level, Message: msg}}
	}
	logs := []LogLine{
		line("2026-06-03T14:30:00Z", "perf-team", "INFO", "PERF-12 load test starting 15:00 UTC against rota-api, ramp to 800 rps for 30 min"),
		line("2026-06-03T15:05:00Z", "rota-api", "WARN", "rate limiter: client 10.1.2.3 over 500 rps, 429 returned"),
		line("2026-06-03T15:35:00Z", "perf-team", "INFO", "PERF-12 load test finished: p95 380ms at 800 rps"),
	}
	for _, tc := range []struct {
		fired string
		want  bool
	}{
		{"2026-06-03T15:20:00Z", true},
		{"2026-06-03T16:30:00Z", false},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "RotaLatency", StartsAt: timestamppb.New(*ts(tc.fired))}, nil)
		ev.Logs = logs
		if got := detectMaintenanceEnded(ev); (len(got) == 1) != tc.want {
			t.Errorf("alert at %s: findings %d, want %v", tc.fired, len(got), tc.want)
		}
	}
}

// A rolling restart under a change record is planned work like a
// failover: the consumers' rebalance errors inside it are its effect.
func TestRollingRestartIsPlannedWork(t *testing.T) {
	ts := func(s string) *time.Time { x, _ := time.Parse(time.RFC3339, s); return &x }
	line := func(at, svc, level, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: ts(at), Service: svc, Level: level, Message: msg}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ConsumerLag", StartsAt: timestamppb.New(*ts("2026-10-21T10:10:00Z"))}, nil)
	ev.Logs = []LogLine{
		line("2026-10-21T10:03:00Z", "change-calendar", "INFO", "CR-4410 started: rolling restart of ingest-worker for new client certificates"),
		line("2026-10-21T10:05:12Z", "ingest-worker", "ERROR", "CommitFailedException: the group has already rebalanced"),
		line("2026-10-21T10:11:00Z", "change-calendar", "INFO", "CR-4410 completed: all workers restarted, group stable"),
	}
	if got := detectMaintenanceEnded(ev); len(got) != 1 {
		t.Fatalf("findings %d, want the planned restart", len(got))
	}
}

// A detector that panics on unexpected evidence costs its own reading,
// said in the unknowns; the others' findings stand.
func TestDetectorPanicIsContained(t *testing.T) {
	boom := detectorFunc{name: "boom", fn: func(*Evidence) []Finding { var x []int; _ = x[3]; return nil }}
	fine := detectorFunc{name: "fine", fn: func(*Evidence) []Finding {
		return []Finding{{Mode: "fine", Category: catConfig, Score: 0.9, Entity: "deployment/lab/api", Statement: "a finding"}}
	}}
	res, err := AnalyzeWith(context.Background(), Input{Alert: &investigationv1.Alert{AlertName: "x"}}, []Detector{boom, fine})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) == 0 || res.Findings[0].Mode != "fine" {
		t.Fatalf("findings %+v, want the other detector's", res.Findings)
	}
	found := false
	for _, u := range res.Unknowns {
		found = found || strings.Contains(u, "detector boom failed")
	}
	if !found {
		t.Fatalf("unknowns %q do not say the detector failed", res.Unknowns)
	}
}

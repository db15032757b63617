package analysis

import (
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func errLine(min int, pod, svc, msg string) facts.LogLine {
	return facts.LogLine{Timestamp: at(min), Namespace: "shop", Service: svc, Pod: pod, Level: "ERROR", Message: msg}
}

func TestCodeExceptionAfterRelease(t *testing.T) {
	panicMsg := "panic: runtime error: invalid memory address or nil pointer dereference at pricing/discount.go:88"
	var lines []facts.LogLine
	for i := 0; i < 6; i++ {
		lines = append(lines, errLine(2+i, "cart-5f6d7c8b9-ab12c", "cart", panicMsg))
	}
	deploys := []facts.Deploy{{Service: "cart", Namespace: "shop", Revision: "c0ffee1", PreviousRevision: "bead001", StartedAt: at(-3), FinishedAt: at(-1)}}
	commits := []facts.Commit{
		{SHA: "c0ffee1aa22bb33cc", Service: "cart", Message: "discounts per region", ChangeTypes: []string{facts.ChangeFeature}, Files: []facts.CommitFile{{Path: "pricing/discount.go"}}, Timestamp: at(-90)},
		{SHA: "d15ea5e0011223344", Service: "cart", Message: "rename helper", ChangeTypes: []string{facts.ChangeRefactor}, Files: []facts.CommitFile{{Path: "util/names.go"}}, Timestamp: at(-120)},
	}
	cases := []struct {
		name     string
		deploys  []facts.Deploy
		rollback bool
		w        want
	}{
		{"release then exceptions", deploys, false, want{mode: ModeCodeException, category: catCode, entity: "commit/c0ffee1", has: []string{"nil pointer", "discount.go", "c0ffee1"}, ruledOut: []string{"d15ea5e"}}},
		{"rollback ended them", append(append([]facts.Deploy(nil), deploys...), facts.Deploy{Service: "cart", Revision: "bead001", PreviousRevision: "c0ffee1", IsRollback: true, StartedAt: at(10), FinishedAt: at(11)}), true,
			want{mode: ModeCodeException, category: catHealthy, entity: "commit/c0ffee1", healthy: true, has: []string{"rollback", "bead001", "stays broken"}}},
		{"no release: latent bug", nil, false, want{mode: ModeCodeException, category: catCode, entity: "deployment/shop/cart"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pins := []*evidencev1.EvidencePin{
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines),
				pin(t, "com", "get_commits", "commits", facts.KeyCommits, commits),
			}
			if tc.deploys != nil {
				pins = append(pins, pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, tc.deploys))
			}
			res, d := analyze(t, nil, pins...)
			if tc.deploys == nil {
				// Without a release the exception finding is weak (0.6) but
				// still the only explanation.
				if res.Findings[0].Mode != ModeCodeException {
					t.Fatalf("lead = %s", res.Findings[0].Mode)
				}
				return
			}
			check(t, res, d, tc.w)
		})
	}
}

func TestSignatureCulprits(t *testing.T) {
	many := func(n int, pod, svc, msg string) []facts.LogLine {
		var out []facts.LogLine
		for i := 0; i < n; i++ {
			out = append(out, errLine(i, pod, svc, msg))
		}
		return out
	}
	cases := []struct {
		name string
		pins func(t *testing.T) []*evidencev1.EvidencePin
		w    want
	}{
		{"volume full names the PVC with the least space", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, many(4, "tsdb-2", "tsdb", "flush failed: write /data/part: no space left on device")),
				pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{
					metric("kubelet_volume_stats_available_bytes", map[string]string{"namespace": "shop", "persistentvolumeclaim": "data-tsdb-2"}, ramp(9e9, 2e6, 12)...),
					metric("kubelet_volume_stats_capacity_bytes", map[string]string{"namespace": "shop", "persistentvolumeclaim": "data-tsdb-2"}, ramp(1e11, 1e11, 12)...),
					metric("kubelet_volume_stats_available_bytes", map[string]string{"namespace": "shop", "persistentvolumeclaim": "data-tsdb-0"}, ramp(4e10, 4e10, 12)...),
					metric("kubelet_volume_stats_capacity_bytes", map[string]string{"namespace": "shop", "persistentvolumeclaim": "data-tsdb-0"}, ramp(1e11, 1e11, 12)...),
				})}
		}, want{mode: ModeVolumeFull, category: catResource, entity: "persistentvolumeclaim/shop/data-tsdb-2", has: []string{"no space left on device", "data-tsdb-0 40% free"}}},
		{"rejected credentials name the Secret the pods read", func(t *testing.T) []*evidencev1.EvidencePin {
			p := healthyPod("orders-7d8f9c6b5-xx1yy")
			p.Containers[0].Secrets = []string{"orders-db-creds", "orders-tls"}
			return []*evidencev1.EvidencePin{
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{p}),
				pin(t, "l", "search_logs", "logs", facts.KeyLogLines, append([]facts.LogLine{{Timestamp: at(-5), Namespace: "shop", Service: "vault-sync", Level: "INFO", Message: "rotated credential orders-db: new version 12"}},
					many(3, "orders-7d8f9c6b5-xx1yy", "orders", `FATAL: password authentication failed for user "orders_rw"`)...)),
			}
		}, want{mode: ModeCredentials, category: catConfig, entity: "secret/shop/orders-db-creds", has: []string{"rotated", "orders_rw"}}},
		{"unparsable records name the topic", func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{
				pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, many(5, "enrich-6c7d8e9f0-aa1bb", "enrich", "RecordDeserializationException: error deserializing key/value for partition payments-3 at offset 4411")),
				pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{
					metric("kafka_consumergroup_lag", map[string]string{"namespace": "shop", "consumergroup": "enrich", "topic": "payments", "partition": "3"}, ramp(10, 90000, 12)...),
					metric("kafka_consumergroup_lag", map[string]string{"namespace": "shop", "consumergroup": "enrich", "topic": "payments", "partition": "1"}, ramp(10, 12, 12)...),
				})}
		}, want{mode: ModeDataQuality, category: catData, entity: "topic/shop/payments", has: []string{"payments-3", "partition 3"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil, tc.pins(t)...)
			check(t, res, d, tc.w)
		})
	}
}

func TestHealthyShapes(t *testing.T) {
	done := healthyPod("report-29001-abcde")
	done.Phase, done.Ready, done.OwnerKind, done.OwnerName = "Succeeded", false, "Job", "report-29001"
	done.Conditions = []facts.Condition{{Type: "Ready", Status: "False", Reason: "PodCompleted"}}
	done.Containers = []facts.Container{{Name: "report", State: "terminated", Reason: "Completed", ExitCode: i32(0)}}
	failed := done
	failed.Containers = []facts.Container{{Name: "report", State: "terminated", Reason: "Error", ExitCode: i32(2)}}
	alert := &investigationv1.Alert{Labels: map[string]string{"service": "menu", "namespace": "shop"}}
	cases := []struct {
		name    string
		alert   *investigationv1.Alert
		pins    func(t *testing.T) []*evidencev1.EvidencePin
		healthy bool
		w       want
	}{
		{"completed job pod", nil, func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{done})}
		}, true, want{mode: ModeHealthy, healthy: true, category: catHealthy, entity: "job/shop/report-29001", has: []string{"Succeeded", "PodCompleted", "exit=0"}}},
		{"completed job pod quoted by its last lines", nil, func(t *testing.T) []*evidencev1.EvidencePin {
			var lines []facts.LogLine
			for i, m := range []string{"starting export", "calendar loaded", "exchange closed today: no prices published", "nothing to export; exiting 0"} {
				lines = append(lines, facts.LogLine{Timestamp: at(i), Namespace: "shop", Pod: "report-29001-abcde", Level: "INFO", Message: m})
			}
			return []*evidencev1.EvidencePin{pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{done}), pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, lines)}
		}, true, want{mode: ModeHealthy, healthy: true, category: catHealthy, entity: "job/shop/report-29001", has: []string{"exchange closed today", "nothing to export; exiting 0"}}},
		{"failed job pod is not healthy", nil, func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{failed})}
		}, false, want{}},
		{"traffic dip that follows last week", alert, func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{
				metric("svc:requests:rate5m", map[string]string{"service": "menu", "namespace": "shop"}, ramp(40, 15, 12)...),
				metric("svc:requests:rate5m_offset1w", map[string]string{"service": "menu", "namespace": "shop"}, ramp(42, 14, 12)...),
				metric("http_errors_total", map[string]string{"service": "menu", "namespace": "shop"}, ramp(100, 100, 12)...),
			})}
		}, true, want{mode: ModeHealthy, healthy: true, category: catHealthy, entity: "deployment/shop/menu", has: []string{"offset1w"}}},
		{"errors rising are not quiet", alert, func(t *testing.T) []*evidencev1.EvidencePin {
			return []*evidencev1.EvidencePin{pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{
				metric("svc:requests:rate5m", map[string]string{"service": "menu", "namespace": "shop"}, ramp(40, 15, 12)...),
				metric("svc:requests:rate5m_offset1w", map[string]string{"service": "menu", "namespace": "shop"}, ramp(42, 14, 12)...),
				metric("http_error_ratio", map[string]string{"service": "menu", "namespace": "shop"}, step(0.01, 0.3, 12, 4)...),
			})}
		}, false, want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, tc.alert, tc.pins(t)...)
			if !tc.healthy {
				for _, f := range res.Findings {
					if f.Healthy && f.Score >= minFaultScore && (f.Detector == "completed_pod" || f.Detector == "quiet_metrics") {
						t.Fatalf("healthy finding on a failure: %s", f.Statement)
					}
				}
				return
			}
			check(t, res, d, tc.w)
		})
	}
}

func TestDNSZoneMisconfiguration(t *testing.T) {
	lookup := func(min int) facts.LogLine {
		return errLine(min, "sync-5d6c7b8a9-qq1ww", "sync", "dial tcp: lookup store-db.crm.svc.cluster.local on 10.0.0.10:53: no such host")
	}
	server := facts.LogLine{Timestamp: at(3), Namespace: "kube-system", Pod: "dns-0", Level: "INFO", Message: `[INFO] 10.1.2.3:4000 - 1 "A IN store-db.crm.svc.cluster.local. udp 70 false 512" NXDOMAIN qr,rd,ra 120 0.001s`}
	corefile := func(zone string) facts.Resource {
		return facts.Resource{Kind: "ConfigMap", Namespace: "kube-system", Name: "dns-config", Data: map[string]string{"Corefile": ".:53 {\n  kubernetes " + zone + " in-addr.arpa ip6.arpa {\n  }\n}\n"}}
	}
	cases := []struct {
		name string
		zone string
		w    want
	}{
		{"zone does not cover the cluster domain", "corp.lan", want{mode: ModeDNSFailure, category: catConfig, entity: "configmap/kube-system/dns-config", has: []string{"NXDOMAIN", "Corefile", "no such host"}}},
		{"zone covers it: the name itself is missing", "cluster.local", want{mode: ModeDNSFailure, category: catConfig, entity: "service/crm/store-db"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, nil,
				pin(t, "l", "search_logs", "logs", facts.KeyLogLines, []facts.LogLine{lookup(1), lookup(2), lookup(4)}),
				pin(t, "s", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, []facts.LogLine{server}),
				pin(t, "c", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{corefile(tc.zone)}))
			check(t, res, d, tc.w)
		})
	}
}

func TestSteadyMemoryIsNotALeak(t *testing.T) {
	pod := func(restarts int32, lastReason string) facts.Pod {
		p := healthyPod("builder-6b7c8d9f5-zz9yy")
		p.Workload = "builder"
		p.Containers[0].LimitsMemory = "1Gi"
		p.Containers[0].RestartCount = restarts
		p.Containers[0].LastReason = lastReason
		p.Containers[0].RuntimeLimits = []string{"-Xmx700m"}
		return p
	}
	alert := &investigationv1.Alert{AlertName: "ContainerMemoryHigh", Pod: "builder-6b7c8d9f5-zz9yy", Namespace: "shop", Summary: "memory working set above 85% of limit",
		Labels: map[string]string{"service": "reporting-team"}}
	ws := func(vals ...float64) facts.Series {
		return metric("container_memory_working_set_bytes", map[string]string{"namespace": "shop", "pod": "builder-6b7c8d9f5-zz9yy"}, vals...)
	}
	flat := []float64{9.1e8, 9.2e8, 9.1e8, 9.15e8, 9.2e8, 9.1e8, 9.12e8, 9.18e8, 9.1e8, 9.2e8, 9.15e8, 9.1e8}
	cases := []struct {
		name    string
		p       facts.Pod
		s       facts.Series
		healthy bool
	}{
		{"flat plateau under a runtime cap", pod(0, ""), ws(flat...), true},
		{"growing working set", pod(0, ""), ws(ramp(5e8, 9.9e8, 12)...), false},
		{"already OOM-killed", pod(2, "OOMKilled"), ws(flat...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, d := analyze(t, alert,
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, []facts.Pod{tc.p}),
				pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, []facts.Series{tc.s}))
			var steady *Finding
			for i := range res.Findings {
				if res.Findings[i].Detector == "steady_memory" {
					steady = &res.Findings[i]
				}
			}
			if (steady != nil) != tc.healthy {
				t.Fatalf("steady finding = %v, want %v", steady != nil, tc.healthy)
			}
			if tc.healthy {
				check(t, res, d, want{mode: ModeHealthy, healthy: true, category: catHealthy, entity: "deployment/shop/builder", has: []string{"-Xmx700m", "no OOM kill"}})
			}
		})
	}
}

// Exceptions whose own words name bad input (a date out of range, a value
// that does not parse) with no release before them are the data's; the
// same exceptions right after a release are the release's.
func TestCodeExceptionOnBadInput(t *testing.T) {
	msgs := []string{
		"failed to process message id=m-5f21 redelivered=True error=\"ValueError: day is out of range for month: birth_date='1987-02-31'\"",
		"TypeError: cannot parse amount '12,50' in row 88 of partner feed",
		"java.lang.IllegalArgumentException: invalid timestamp '2026-13-01T00:00' in field shipped_at",
	}
	for _, msg := range msgs {
		var lines []facts.LogLine
		for i := 0; i < 5; i++ {
			lines = append(lines, errLine(2+i, "licence-issuer-7d9f8-x1", "licence-issuer", msg))
		}
		res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
		if res.Findings[0].Mode != ModeCodeException || res.Findings[0].Category != catData {
			t.Errorf("%q without a release: lead %s %s, want the exception read as data", msg, res.Findings[0].Mode, res.Findings[0].Category)
		}
		deploys := []facts.Deploy{{Service: "licence-issuer", Namespace: "shop", Revision: "abc1234", PreviousRevision: "abc0000", StartedAt: at(-3), FinishedAt: at(-1)}}
		res, _ = analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines), pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, deploys))
		if res.Findings[0].Category != catCode {
			t.Errorf("%q right after a release: lead %s %s, want the release's code defect", msg, res.Findings[0].Mode, res.Findings[0].Category)
		}
	}
}

// A date out of range whose failures start with a new day (00:00 UTC)
// is the calendar reaching a day the code mishandles; the same error
// starting mid-day, or another error at midnight, is not.
func TestCalendarTriggered(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2028, 2, 29, h, m, 0, 0, time.UTC); return &x }
	tests := []struct {
		msg   string
		first *time.Time
		want  bool
	}{
		{"POST /vouchers 500 ValueError: day is out of range for month", at(0, 0), true},
		{"java.time.DateTimeException: Invalid date 'February 29' as '2029' is not a leap year; month out of range", at(0, 3), true},
		{"renewal: year 10000 is out of range", at(0, 2), true},
		{"ValueError: day is out of range for month", at(14, 20), false},
		{"KeyError: 'voucher_code'", at(0, 0), false},
		{"ValueError: day is out of range for month", nil, false},
	}
	for _, tc := range tests {
		if got := calendarTriggered(tc.msg, tc.first); got != tc.want {
			t.Errorf("calendarTriggered(%q, %v) = %v, want %v", tc.msg, tc.first, got, tc.want)
		}
	}
}

// A date out of range computed from a real day (a year added to
// 2028-02-29) is the code's, with or without a release; a quoted day that
// does not exist is bad input.
func TestComputedDate(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"renewal failed start=2028-02-29: ValueError: day is out of range for month", true},
		{"ValueError: day is out of range for month: birth_date='1987-02-31'", false},
		{"ValueError: day is out of range for month", false},
		{"parse failed for 2026-04-31 and 2026-05-01: month out of range", false},
		{"invoice 2026-01-15 rejected: amount out of range", false},
	}
	for _, tc := range tests {
		if got := computedDate(tc.msg); got != tc.want {
			t.Errorf("computedDate(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

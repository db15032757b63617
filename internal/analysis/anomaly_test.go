package analysis

import (
	"context"
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// healthOnly are the detectors that judge health; with only them, every
// fault is one "no detector knows", which is what the fallback is for.
func healthOnly(t *testing.T) []Detector {
	t.Helper()
	var out []Detector
	for _, n := range []string{"restart_recovered", "old_rollout", "rollout_recovered", "pending_recovered", "node_flap", "storage_recovered", "k8s_healthy", "completed_pod", "quiet_metrics", "steady_memory", "db_healthy"} {
		d, err := NewDetector(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func lines(n int, ns, svc, pod, level, msg string) []facts.LogLine {
	var out []facts.LogLine
	for i := 0; i < n; i++ {
		out = append(out, facts.LogLine{Timestamp: at(i), Namespace: ns, Service: svc, Pod: pod, Level: level, Message: strings.ReplaceAll(msg, "{i}", string(rune('0'+i%10)))})
	}
	return out
}

func crashing(ns, name, node string, restarts int32) facts.Pod {
	return facts.Pod{Namespace: ns, Name: name, Node: node, Phase: "Running", StartTime: at(-30),
		Containers: []facts.Container{{Name: "app", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: restarts}},
		Conditions: []facts.Condition{{Type: "Ready", Status: "False"}}}
}

func podOn(ns, name, node string) facts.Pod {
	p := healthyPod(name)
	p.Namespace, p.Node = ns, node
	return p
}

type fallbackCase struct {
	name     string
	pins     func(t *testing.T) []*evidencev1.EvidencePin
	category investigationv1.RootCauseCategory
	entity   string   // want root_cause_entity
	has      []string // in root cause + claims + chain
	// maxConf: the confidence must stay at or below it; minConf: at or above.
	maxConf, minConf float64
}

func runFallback(t *testing.T, detectors []Detector, tc fallbackCase) {
	t.Helper()
	in := Input{Alert: &investigationv1.Alert{AlertName: "SomethingWrong"}, Pins: tc.pins(t)}
	res, err := AnalyzeWith(context.Background(), in, detectors)
	if err != nil {
		t.Fatal(err)
	}
	d := Diagnose(in, res)
	txt := d.GetRootCause() + "\n" + strings.Join(d.GetCausalChain(), "\n")
	for _, c := range append(append([]*investigationv1.Claim{}, d.GetValidatedClaims()...), d.GetNonValidatedClaims()...) {
		txt += "\n" + c.GetClaim()
	}
	if d.GetCategory() != tc.category {
		t.Errorf("category = %v, want %v\nroot cause: %s", d.GetCategory(), tc.category, d.GetRootCause())
	}
	if tc.entity != "" && d.GetRootCauseEntity() != tc.entity {
		t.Errorf("entity = %q, want %q", d.GetRootCauseEntity(), tc.entity)
	}
	for _, h := range tc.has {
		if !strings.Contains(strings.ToLower(txt), strings.ToLower(h)) {
			t.Errorf("diagnosis lacks %q:\n%s", h, txt)
		}
	}
	if tc.maxConf > 0 && d.GetConfidence() > tc.maxConf {
		t.Errorf("confidence %.2f > %.2f", d.GetConfidence(), tc.maxConf)
	}
	if d.GetConfidence() < tc.minConf {
		t.Errorf("confidence %.2f < %.2f", d.GetConfidence(), tc.minConf)
	}
	if tc.category != catHealthy {
		if len(d.GetHypotheses()) == 0 || d.GetHypotheses()[0].GetDetector() != ModeAnomaly {
			t.Errorf("the lead is not the anomaly summary: %v", d.GetHypotheses())
		}
		for _, c := range d.GetValidatedClaims() {
			if len(c.GetPinIds()) == 0 {
				t.Errorf("claim without pins: %q", c.GetClaim())
			}
		}
		if d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_UNSPECIFIED {
			t.Errorf("analysis decided the status %v; the conclusion gate's owner decides", d.GetStatus())
		}
	}
}

// below is the delivery gate: uncorroborated fallback answers stay under it.
const below = 0.69

func TestAnomalyFallbackCategories(t *testing.T) {
	logs := func(ls ...[]facts.LogLine) func(t *testing.T) []*evidencev1.EvidencePin {
		return func(t *testing.T) []*evidencev1.EvidencePin {
			var all []facts.LogLine
			for _, l := range ls {
				all = append(all, l...)
			}
			return []*evidencev1.EvidencePin{pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, all)}
		}
	}
	cases := []fallbackCase{
		// ---- dependency_failure ----
		{name: "dependency: vendor API deadline exceeded", category: catDependency, entity: "host/geo.tilemaps-vendor.example", maxConf: below,
			pins: logs(lines(6, "maps", "route-finder", "route-finder-7c9d8-x1", "ERROR", "GET https://geo.tilemaps-vendor.example/v2/lookup?q={i} failed: context deadline exceeded")),
			has:  []string{"geo.tilemaps-vendor.example", "6 error log lines", "route-finder"}},
		{name: "dependency: gRPC upstream reset from two callers", category: catDependency, entity: "service/finance/ledger-core", maxConf: below,
			pins: logs(
				lines(4, "shop", "checkout", "checkout-5d-aa", "ERROR", "rpc error: code = Unavailable desc = upstream connect error or disconnect/reset before headers, target=ledger-core.finance.svc.cluster.local"),
				lines(3, "shop", "refunds", "refunds-6f-bb", "ERROR", "rpc error: code = Unavailable desc = upstream connect error or disconnect/reset before headers, target=ledger-core.finance.svc.cluster.local")),
			has: []string{"ledger-core", "checkout", "refunds"}},
		{name: "dependency: peer resets on a host:port", category: catDependency, entity: "service/inventory-rpc", maxConf: below,
			pins: logs(lines(5, "shop", "cart", "cart-1", "ERROR", "failed to call inventory-rpc:50051: connection reset by peer")),
			has:  []string{"inventory-rpc", "connection reset by peer"}},
		// ---- data_quality ----
		{name: "data: unparseable event payloads", category: catData, entity: "deployment/ingest/event-sink", maxConf: below,
			pins: logs(lines(8, "ingest", "event-sink", "event-sink-0", "ERROR", "failed to parse event payload at offset 14{i}2: invalid character 'x' looking for beginning of value")),
			has:  []string{"event-sink", "8 error log lines", "invalid character"}},
		{name: "data: not-null constraint on imported rows", category: catData, entity: "deployment/crm/contact-import", maxConf: below,
			pins: logs(lines(5, "crm", "contact-import", "contact-import-2", "ERROR", `row 18{i}2 rejected: null value in column "customer_id" violates not-null constraint`)),
			has:  []string{"contact-import", "not-null constraint"}},
		{name: "data: bad date format in a CSV feed", category: catData, entity: "deployment/erp/order-loader", maxConf: below,
			pins: logs(lines(4, "erp", "order-loader", "order-loader-1", "ERROR", "CSV import line {i}: invalid date '31/02/2025' in field order_date")),
			has:  []string{"order-loader", "invalid date"}},
		// ---- code_defect: exceptions right after a release ----
		{name: "code: JS TypeError after a deploy", category: catCode, entity: "deployment/web/storefront-bff",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(6, "web", "storefront-bff", "storefront-bff-9-a", "ERROR", "TypeError: Cannot read properties of undefined (reading 'currency') at formatPrice (price.js:41)")),
					pin(t, "dp", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "storefront-bff", Revision: "r812", PreviousRevision: "r811", StartedAt: at(-6), FinishedAt: at(-4)}}),
				}
			},
			has: []string{"TypeError", "r811 -> r812", "4 min before"}},
		{name: "code: Java IllegalStateException after a rollout", category: catCode, entity: "deployment/billing/ledger-closer",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "lg", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, lines(5, "billing", "ledger-closer", "ledger-closer-6b-q", "ERROR", "java.lang.IllegalStateException: entry {i} already finalized at com.acme.billing.Ledger.close(Ledger.java:212)")),
					pin(t, "dp", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "ledger-closer", Revision: "v3.4.0", PreviousRevision: "v3.3.2", StartedAt: at(-12), FinishedAt: at(-10)}}),
				}
			},
			has: []string{"IllegalStateException", "v3.4.0"}},
		{name: "code: Go nil map panic after a deploy", category: catCode, entity: "deployment/edge/router-api",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(4, "edge", "router-api", "router-api-1", "FATAL", "panic: assignment to entry in nil map goroutine 11{i} [running]: main.(*Router).Register(router.go:77)")),
					pin(t, "dp", "get_deploy_history", "deploys", facts.KeyDeploys, []facts.Deploy{{Service: "router-api", Revision: "b77", PreviousRevision: "b76", StartedAt: at(-3), FinishedAt: at(-1)}}),
				}
			},
			has: []string{"nil map", "b77"}},
		// ---- configuration_error ----
		{name: "config: required setting not set, pods crash", category: catConfig, entity: "deployment/pay/payout-worker",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "lg", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, lines(3, "pay", "payout-worker", "payout-worker-5c-k", "FATAL", "startup aborted: required setting PAYOUT_REGION is not set")),
					pin(t, "pd", "list_pods", "k8s", facts.KeyPods, []facts.Pod{crashing("pay", "payout-worker-5c-k", "n1", 6)}),
				}
			},
			has: []string{"PAYOUT_REGION", "6 container restarts", "CrashLoopBackOff"}},
		{name: "config: rules file missing", category: catConfig, entity: "deployment/risk/tally", maxConf: below,
			pins: logs(lines(4, "risk", "tally", "tally-0", "ERROR", "load rules: open /etc/tally/rules.yaml: no such file or directory")),
			has:  []string{"rules.yaml"}},
		{name: "config: permission denied on a bucket", category: catConfig, entity: "deployment/docs/archiver", maxConf: below,
			pins: logs(lines(5, "docs", "archiver", "archiver-1", "ERROR", "upload invoice {i}: 403 Forbidden: caller lacks permission storage.objects.create on bucket invoices-archive")),
			has:  []string{"403 Forbidden", "archiver"}},
		// ---- resource_exhaustion ----
		{name: "resource: worker pool saturated and queue grows", category: catResource, entity: "deployment/media/transcoder", minConf: 0.7,
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(6, "media", "transcoder", "transcoder-2", "ERROR", "task {i} rejected: worker pool saturated (64/64 busy)")),
					pin(t, "pm", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{
						metric("transcode_queue_length", map[string]string{"service": "transcoder", "namespace": "media"}, 20, 22, 19, 21, 20, 300, 900, 1800, 2600, 3400, 4100, 5000),
					}),
				}
			},
			has: []string{"worker pool saturated", "transcode_queue_length", "from 20", "5000"}},
		{name: "resource: pending jobs metric alone", category: catResource, entity: "deployment/etl/nightly-batch", maxConf: below,
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "pm", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{
						metric("jobs_pending", map[string]string{"service": "nightly-batch", "namespace": "etl"}, 10, 12, 11, 10, 12, 400, 1200, 2100, 3000, 3900, 4500, 5200),
					}),
				}
			},
			has: []string{"jobs_pending", "from 10"}},
		{name: "resource: too many open files", category: catResource, entity: "deployment/chat/socket-hub", maxConf: below,
			pins: logs(lines(5, "chat", "socket-hub", "socket-hub-3", "ERROR", "accept tcp [::]:8443: accept4: too many open files; retrying in 1s")),
			has:  []string{"too many open files"}},
		{name: "resource: volume resize hits the storage quota", category: catResource, entity: "persistentvolumeclaim/data/pg-data-0", maxConf: below,
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Namespace: "data", Type: "Warning", Reason: "VolumeResizeFailed", Message: "resize volume pg-data-0 failed: requested storage exceeded quota: storage-quota", InvolvedKind: "PersistentVolumeClaim", InvolvedName: "pg-data-0", Count: 5, FirstSeen: at(-10), LastSeen: at(0)}}),
				}
			},
			has: []string{"VolumeResizeFailed x5", "pg-data-0"}},
		// ---- infrastructure ----
		{name: "infra: kernel soft lockups on one node, its pods fail", category: catInfra, entity: "node/pool-b-7",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "pd", "list_pods", "k8s", facts.KeyPods, []facts.Pod{crashing("grid", "solver-a", "pool-b-7", 2), crashing("grid", "solver-b", "pool-b-7", 3), podOn("grid", "solver-c", "pool-b-2"), podOn("grid", "solver-d", "pool-b-3")}),
					pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "KernelOops", Message: "kernel: BUG: soft lockup - CPU#3 stuck for 23s", InvolvedKind: "Node", InvolvedName: "pool-b-7", Count: 4, FirstSeen: at(-5), LastSeen: at(0)}}),
				}
			},
			has: []string{"pool-b-7", "KernelOops", "soft lockup"}},
		{name: "infra: I/O errors on a node's disk", category: catInfra, entity: "node/store-3",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{
					pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "DiskIOError", Message: "blk_update_request: I/O error, dev nvme1n1, sector 88123", InvolvedKind: "Node", InvolvedName: "store-3", Count: 7, FirstSeen: at(-8), LastSeen: at(0)}}),
				}
			},
			has: []string{"store-3", "DiskIOError", "x7"}},
		// ---- inconclusive: unknown, still naming the signal ----
		{name: "unknown: one odd error line", category: catUnknown, entity: "deployment/shop/web", maxConf: 0.5,
			pins: logs([]facts.LogLine{{Namespace: "shop", Service: "web", Level: "ERROR", Message: "request failed: something odd", Timestamp: at(0)}}),
			has:  []string{"something odd", "does not establish"}},
		{name: "unknown: config and data readings tie", category: catUnknown, entity: "deployment/ops/reconciler", maxConf: 0.5,
			pins: logs(
				lines(3, "ops", "reconciler", "reconciler-0", "ERROR", "invalid value for setting sync_mode"),
				lines(3, "ops", "reconciler", "reconciler-0", "ERROR", "failed to decode record: unexpected end of JSON input")),
			has: []string{"competing readings"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFallback(t, healthOnly(t), tc) })
	}
}

// With every detector, failure modes no detector knows still get the
// evidence-driven summary; known ones keep their detector.
func TestAnomalyFallbackWithAllDetectors(t *testing.T) {
	cases := []fallbackCase{
		{name: "bad date format", category: catData, entity: "deployment/erp/order-loader", maxConf: below,
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(4, "erp", "order-loader", "order-loader-1", "ERROR", "CSV import line {i}: invalid date '31/02/2025' in field order_date"))}
			}},
		{name: "too many open files", category: catResource, entity: "deployment/chat/socket-hub", maxConf: below,
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(5, "chat", "socket-hub", "socket-hub-3", "ERROR", "accept tcp [::]:8443: accept4: too many open files; retrying in 1s"))}
			}},
		{name: "node I/O errors", category: catInfra, entity: "node/store-3",
			pins: func(t *testing.T) []*evidencev1.EvidencePin {
				return []*evidencev1.EvidencePin{pin(t, "ev", "get_events", "k8s", facts.KeyEvents, []facts.Event{{Type: "Warning", Reason: "DiskIOError", Message: "blk_update_request: I/O error, dev nvme1n1, sector 88123", InvolvedKind: "Node", InvolvedName: "store-3", Count: 7, FirstSeen: at(-8), LastSeen: at(0)}})}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFallback(t, DefaultDetectors(), tc) })
	}
}

// The fallback never overrides a healthy verdict nor a confident detector,
// and absence of data stays unknown without a made-up entity.
func TestAnomalyFallbackBoundaries(t *testing.T) {
	t.Run("healthy stays healthy", func(t *testing.T) {
		_, d := analyze(t, &investigationv1.Alert{AlertName: "WebHealthCheck", State: "ok"},
			pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("web-1"), healthyPod("web-2")}),
			pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
			pin(t, "m", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{metric("http_requests_total:rate", map[string]string{"service": "web"}, 10, 11, 10, 12, 11, 10)}))
		if d.GetCategory() != catHealthy {
			t.Fatalf("category = %v: %s", d.GetCategory(), d.GetRootCause())
		}
	})
	t.Run("a confident detector keeps the lead", func(t *testing.T) {
		_, d := analyze(t, nil, pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(6, "shop", "api", "api-1", "ERROR", "x509: certificate has expired or is not yet valid")))
		if len(d.GetHypotheses()) == 0 || d.GetHypotheses()[0].GetDetector() == ModeAnomaly {
			t.Fatalf("fallback took over a known signature: %s", d.GetRootCause())
		}
	})
	t.Run("no data stays undetermined", func(t *testing.T) {
		_, d := analyze(t, &investigationv1.Alert{AlertName: "X"}, noData("n1", "list_pods"))
		if d.GetCategory() != catUnknown || d.GetRootCauseEntity() != "" || !strings.HasPrefix(d.GetRootCause(), "Undetermined") {
			t.Fatalf("got %v %q %q", d.GetCategory(), d.GetRootCauseEntity(), d.GetRootCause())
		}
	})
}

func TestLogTemplate(t *testing.T) {
	cases := []struct{ a, b string }{
		{"order 1234 failed after 35ms", "order 98 failed after 2ms"},
		{`user "alice" not found (id 9f8e7d6c-1a2b-3c4d-5e6f-aabbccddeeff)`, `user "bob" not found (id 00000000-1111-2222-3333-444444444444)`},
		{"dial 10.0.3.7:5432 refused", "dial 10.0.9.1:5432 refused"},
	}
	for _, c := range cases {
		if logTemplate(c.a) != logTemplate(c.b) {
			t.Errorf("%q and %q fold to %q and %q", c.a, c.b, logTemplate(c.a), logTemplate(c.b))
		}
	}
	if logTemplate("cache miss") == logTemplate("cache hit") {
		t.Error("different messages must not fold together")
	}
}

func TestDownstreamHost(t *testing.T) {
	cases := []struct{ msg, self, want string }{
		{"GET https://api.vendor.example/v1 failed: timeout", "svc", "api.vendor.example"},
		{"failed to call inventory-rpc:50051: connection reset by peer", "cart", "inventory-rpc"},
		{"dial tcp 10.1.2.3:443: connect: connection refused", "svc", ""},
		{"cart:8080 timeout talking to itself", "cart", ""},
		{"invalid value for setting sync_mode", "svc", ""},
		{"redis:6379 i/o timeout", "svc", "redis"},
		{"job failed: timeout after attempt:12", "svc", ""},
		// A cloud SDK's error chain: the innermost API that failed.
		{"upload failed: operation error S3: PutObject, get identity: get credentials: failed to refresh cached credentials, operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 503, api error ServiceUnavailable", "uploader", "api:sts"},
		{"operation error DynamoDB: GetItem, exceeded maximum number of attempts, 3, ThrottlingException: Rate exceeded", "orders", "api:dynamodb"},
		// Prose after "upstream" names no peer.
		{"upstream timed out (110: Operation timed out) while reading response header from upstream", "ingress-nginx", ""},
		{"upstream prematurely closed connection while reading response header", "ingress-nginx", ""},
		{"probe syd-2: TCP connect to 198.51.100.60:443 timed out (trace stops at hop 7 upstream of probe)", "uptime-probe", ""},
		{`connect() failed (111: Connection refused) while connecting to upstream, upstream: "http://10.244.13.53:8080/v1/sessions"`, "ingress-nginx", ""},
	}
	for _, c := range cases {
		if got := downstreamHost(c.msg, c.self); got != c.want {
			t.Errorf("downstreamHost(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

func TestAnomalyFallbackRulesOutAlternatives(t *testing.T) {
	in := Input{Pins: []*evidencev1.EvidencePin{
		pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("tally-7d-a1")}),
		pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes()),
		pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, lines(5, "shop", "tally", "tally-7d-a1", "ERROR", "accept4: too many open files")),
	}}
	res, err := AnalyzeWith(context.Background(), in, healthOnly(t))
	if err != nil {
		t.Fatal(err)
	}
	d := Diagnose(in, res)
	if d.GetCategory() != catResource || len(d.GetRuledOut()) == 0 {
		t.Fatalf("category %v, ruled out %v", d.GetCategory(), d.GetRuledOut())
	}
	var alts []string
	for _, r := range d.GetRuledOut() {
		alts = append(alts, r.GetAlternative()+": "+r.GetReason())
	}
	if !strings.Contains(strings.ToLower(strings.Join(alts, "\n")), "node") {
		t.Errorf("ready nodes should rule out a node failure: %v", alts)
	}
}

func TestAnomalyFallbackVersusWeakFinding(t *testing.T) {
	weak := func(score float64) Detector {
		return detectorFunc{name: "weak_probe", fn: func(ev *Evidence) []Finding {
			return []Finding{{Mode: "weak_probe", Category: catConfig, Entity: "deployment/shop/web", Score: score, Statement: "a weak reading", Sources: []string{"logs"}}}
		}}
	}
	cases := []struct {
		name      string
		score     float64
		logs      []facts.LogLine
		wantLead  string
		wantCateg investigationv1.RootCauseCategory
	}{
		{"strong unfamiliar evidence beats a weak finding", 0.3, lines(8, "shop", "web", "web-1", "ERROR", "accept4: too many open files"), ModeAnomaly, catResource},
		{"a weak finding stronger than thin evidence stays", 0.58, []facts.LogLine{{Namespace: "shop", Service: "web", Level: "ERROR", Message: "request failed: something odd", Timestamp: at(0)}}, "weak_probe", catConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pins: []*evidencev1.EvidencePin{pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, tc.logs)}}
			res, err := AnalyzeWith(context.Background(), in, []Detector{weak(tc.score)})
			if err != nil {
				t.Fatal(err)
			}
			d := Diagnose(in, res)
			if got := d.GetHypotheses()[0].GetDetector(); got != tc.wantLead {
				t.Errorf("lead = %s, want %s (%s)", got, tc.wantLead, d.GetRootCause())
			}
			if d.GetCategory() != tc.wantCateg {
				t.Errorf("category = %v, want %v", d.GetCategory(), tc.wantCateg)
			}
		})
	}
}

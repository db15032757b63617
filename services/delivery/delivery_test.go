package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func record(session, fingerprint, rootCause string, conf float64) *investigationv1.InvestigationRecord {
	return &investigationv1.InvestigationRecord{
		InvestigationId: "inv-" + session,
		SessionId:       session,
		Alert: &investigationv1.Alert{Fingerprint: fingerprint, AlertName: "HighErrorRate", Title: "High 5xx rate on api",
			AlertSource: "alertmanager", Severity: "critical", Namespace: "shop", Service: "api"},
		Diagnosis: &investigationv1.Diagnosis{
			RootCause:       rootCause,
			Category:        investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT,
			RootCauseEntity: "deployment/shop/api",
			Confidence:      conf,
			Status:          investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED,
			CausalChain:     []string{"deploy dep-7 shipped a nil check regression", "api pods panic", "5xx rate rises"},
			ValidatedClaims: []*investigationv1.Claim{{Claim: "api panics on nil order", Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: []string{"pin-logs-1"}}},
			NonValidatedClaims: []*investigationv1.Claim{{Claim: "traffic also rose", Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE,
				PinIds: []string{"pin-metric-2"}}},
			RuledOut:         []*investigationv1.RuledOut{{Alternative: "database failover", Reason: "no database events in the window", PinIds: []string{"pin-db-3"}}},
			RemediationSteps: []string{"roll back dep-7", "add a nil check"},
			Unknowns:         []string{"why the canary did not catch it"},
			Hypotheses:       []*investigationv1.Hypothesis{{Id: "h1", Statement: "dep-7 introduced a nil pointer defect", Confidence: 0.9, PinIds: []string{"pin-logs-1"}}},
			CriticReview: &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: 1, Threshold: 0.8,
				Objections: []*investigationv1.Objection{{Check: "regression_before_deploy", Passed: true, Detail: "deploy 12m before onset"}}},
		},
		Stages: []*investigationv1.StageRecord{{Name: "extract_alert", StartedAt: timestamppb.New(t0), DurationMs: 12, Status: "ok"},
			{Name: "gather_evidence", StartedAt: timestamppb.New(t0.Add(time.Second)), DurationMs: 4200, Status: "ok"}},
		ToolCalls: []*investigationv1.ToolCallRecord{
			{Intent: "fetch_pod_logs", PinId: "pin-logs-1", Success: true, DurationMs: 120, Iteration: 1, Origin: "seed"},
			{Intent: "query_prometheus", PinId: "pin-metric-2", Success: true, DurationMs: 80, Iteration: 1, Origin: "plan"},
			{Intent: "get_db_events", PinId: "pin-db-3", Success: true, NoData: true, Iteration: 2, Origin: "model"},
			{Intent: "search_logs", Success: false, Error: "es query failed: Authorization: Bearer abcdefghijklmnopqrstuvwxyz", Iteration: 2, Origin: "model"},
		},
		GuardrailTrips: []*investigationv1.GuardrailTrip{{Guardrail: "max_stagnant_iterations", Owner: "brain", Limit: 2, Value: 2, Detail: "tool access stripped"}},
		ModelCalls:     []*investigationv1.ModelCallRecord{{Purpose: "diagnose", PromptTokens: 1000, CompletionTokens: 200}},
		Loops:          3,
		WallMs:         5400,
	}
}

type env struct {
	svc   *Service
	cl    deliveryv1.DeliveryServiceClient
	clock *clock
	conn  *grpc.ClientConn
}

func newEnv(t *testing.T, b *bus.Bus, mut func(*Config)) *env {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 4*time.Millisecond
	if mut != nil {
		mut(&cfg)
	}
	c := &clock{t: t0}
	s, err := New(cfg, Deps{Bus: b, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	s.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return &env{svc: s, cl: deliveryv1.NewDeliveryServiceClient(cc), clock: c, conn: cc}
}

// hook is a scripted HTTP destination.
type hook struct {
	srv    *httptest.Server
	hits   atomic.Int32
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	script []int // status per hit; the last repeats
}

func newHook(t *testing.T, script ...int) *hook {
	h := &hook{script: script}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(h.hits.Add(1))
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.heads = append(h.heads, r.Header.Clone())
		h.mu.Unlock()
		code := h.script[min(n, len(h.script))-1]
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "status %d", code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) url(path string) string { return h.srv.URL + path }

func deliver(t *testing.T, e *env, rec *investigationv1.InvestigationRecord) *investigationv1.Report {
	t.Helper()
	return deliverResp(t, e, rec).GetReport()
}

func deliverResp(t *testing.T, e *env, rec *investigationv1.InvestigationRecord) *deliveryv1.DeliverReportResponse {
	t.Helper()
	resp, err := e.cl.DeliverReport(context.Background(), &deliveryv1.DeliverReportRequest{Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.GetLimits().GetConfidenceGate(), e.svc.Config().ConfidenceGate; got != want {
		t.Errorf("live confidence gate %v, want %v", got, want)
	}
	return resp
}

func TestDestinationsRetries(t *testing.T) {
	const secretPath = "/services/T0SECRET/B0SECRET/xyzSECRETtoken"
	cases := []struct {
		name    string
		script  []int
		kind    string
		ok      bool
		tries   int32
		code    int32
		maxTry  int
		noRetry bool
	}{
		{name: "slack 500 then 200", script: []int{500, 200}, kind: KindSlack, ok: true, tries: 2, code: 200},
		{name: "webhook 503 twice then 200", script: []int{503, 503, 200}, kind: KindWebhook, ok: true, tries: 3, code: 200},
		{name: "webhook 429 then 200", script: []int{429, 200}, kind: KindWebhook, ok: true, tries: 2, code: 200},
		{name: "slack 400 is not retried", script: []int{400}, kind: KindSlack, ok: false, tries: 1, code: 400},
		{name: "webhook 404 is not retried", script: []int{404}, kind: KindWebhook, ok: false, tries: 1, code: 404},
		{name: "500 forever stops at max tries", script: []int{500}, kind: KindWebhook, ok: false, tries: 3, code: 500, maxTry: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHook(t, tc.script...)
			e := newEnv(t, nil, func(c *Config) {
				if tc.kind == KindSlack {
					c.SlackWebhookURL = h.url(secretPath)
				} else {
					c.WebhookURLs = []string{h.url(secretPath)}
					c.WebhookSecret = "sign-key"
				}
				if tc.maxTry > 0 {
					c.MaxTries = tc.maxTry
				}
			})
			rep := deliver(t, e, record("s-"+strings.ReplaceAll(tc.name, " ", "-"), "fp-"+tc.name, "deploy dep-7 broke api", 0.9))
			if len(rep.GetAttempts()) != 1 {
				t.Fatalf("attempts %v", rep.GetAttempts())
			}
			a := rep.GetAttempts()[0]
			if a.GetOk() != tc.ok || a.GetTries() != tc.tries || a.GetStatusCode() != tc.code || a.GetDestination() != tc.kind {
				t.Fatalf("attempt %+v, want ok=%t tries=%d code=%d dest=%s", a, tc.ok, tc.tries, tc.code, tc.kind)
			}
			if int32(h.hits.Load()) != tc.tries {
				t.Errorf("server saw %d requests, want %d", h.hits.Load(), tc.tries)
			}
			if strings.Contains(a.GetError(), "SECRET") {
				t.Errorf("attempt error leaks the URL: %s", a.GetError())
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			body := h.bodies[len(h.bodies)-1]
			if tc.kind == KindSlack {
				var msg struct {
					Text   string `json:"text"`
					Blocks []struct {
						Type     string                  `json:"type"`
						Text     *struct{ Text string }  `json:"text"`
						Fields   []struct{ Text string } `json:"fields"`
						Elements []struct{ Text string } `json:"elements"`
					} `json:"blocks"`
				}
				if err := json.Unmarshal(body, &msg); err != nil {
					t.Fatal(err)
				}
				var types []string
				for _, b := range msg.Blocks {
					types = append(types, b.Type)
				}
				if len(types) < 3 || types[0] != "header" || types[len(types)-1] != "context" || !containsType(types, "section") {
					t.Errorf("block types %v", types)
				}
				if !strings.Contains(msg.Blocks[0].Text.Text, "High 5xx rate on api") || len(msg.Blocks[2].Fields) != 4 ||
					!strings.Contains(msg.Blocks[2].Fields[1].Text, "90%") {
					t.Errorf("slack payload %s", body)
				}
			} else {
				var wh map[string]any
				if err := json.Unmarshal(body, &wh); err != nil {
					t.Fatal(err)
				}
				if wh["session_id"] == "" || wh["root_cause"] != "deploy dep-7 broke api" || wh["markdown"] == "" || wh["diagnosis"] == nil {
					t.Errorf("webhook payload %s", body)
				}
				if sig := h.heads[0].Get("X-Rcamesh-Signature"); !strings.HasPrefix(sig, "sha256=") {
					t.Errorf("signature header %q", sig)
				}
				if h.heads[0].Get("Idempotency-Key") == "" {
					t.Error("no idempotency key")
				}
			}
		})
	}
}

func containsType(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestNetworkErrorRetriedAndScrubbed(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close() // nothing listens: connection refused
	e := newEnv(t, nil, func(c *Config) { c.WebhookURLs = []string{"http://" + addr + "/hook/SECRETPATH"}; c.MaxTries = 3 })
	rep := deliver(t, e, record("net", "fp-net", "x", 0.9))
	a := rep.GetAttempts()[0]
	if a.GetOk() || a.GetTries() != 3 || a.GetStatusCode() != 0 {
		t.Fatalf("attempt %+v", a)
	}
	if strings.Contains(a.GetError(), "SECRETPATH") || a.GetError() == "" {
		t.Errorf("error %q", a.GetError())
	}
}

func TestConfidenceGateAndDedup(t *testing.T) {
	for _, withBus := range []bool{false, true} {
		t.Run(fmt.Sprintf("bus=%t", withBus), func(t *testing.T) {
			var b *bus.Bus
			if withBus {
				b = bustest.New(t)
			}
			h := newHook(t, 200)
			e := newEnv(t, b, func(c *Config) { c.SlackWebhookURL = h.url("/services/a/b/c"); c.DedupWindow = time.Hour })

			lowResp := deliverResp(t, e, record("gate-low", "fp-1", "maybe the cache", 0.69))
			low := lowResp.GetReport()
			if !low.GetSilent() || len(low.GetAttempts()) != 0 || h.hits.Load() != 0 {
				t.Fatalf("below the gate: silent=%t attempts=%v hits=%d", low.GetSilent(), low.GetAttempts(), h.hits.Load())
			}
			if trips := lowResp.GetTrips(); len(trips) != 1 || trips[0].GetKind() != GuardrailConfidenceGate || trips[0].GetOwner() != "delivery" || trips[0].GetLimit() != 0.7 {
				t.Errorf("gate trips %v", trips)
			}
			// A 0-100 confidence is normalised.
			if pct := deliver(t, e, record("gate-pct", "fp-pct", "x", 85)); pct.GetSilent() || pct.GetConfidence() != 0.85 {
				t.Errorf("percent confidence: silent=%t conf=%v", pct.GetSilent(), pct.GetConfidence())
			}
			hits := h.hits.Load()

			first := deliver(t, e, record("inc-1", "fp-1", "deploy dep-7 broke api", 0.9))
			if first.GetSilent() || first.GetDeduplicated() || h.hits.Load() != hits+1 {
				t.Fatalf("first: %+v hits %d", first, h.hits.Load())
			}
			e.clock.add(10 * time.Minute)
			againResp := deliverResp(t, e, record("inc-2", "fp-1", "A bad release of api (dep-7) causes errors", 0.95))
			again := againResp.GetReport()
			if !again.GetDeduplicated() || len(again.GetAttempts()) != 0 || h.hits.Load() != hits+1 {
				t.Fatalf("re-investigation re-posted: dedup=%t hits=%d", again.GetDeduplicated(), h.hits.Load())
			}
			if trips := againResp.GetTrips(); len(trips) != 1 || trips[0].GetKind() != GuardrailDedup {
				t.Errorf("dedup trips %v", trips)
			}
			// Re-delivering the same session is idempotent too.
			if r := deliver(t, e, record("inc-1", "fp-1", "deploy dep-7 broke api", 0.9)); !r.GetDeduplicated() {
				t.Error("same session re-posted")
			}
			// No fingerprint: derived from the alert identity, not its wording.
			r1 := record("d-1", "", "x", 0.9)
			r2 := record("d-2", "", "y", 0.9)
			r2.Alert.Title = "different wording"
			if deliver(t, e, r1).GetDeduplicated() || !deliver(t, e, r2).GetDeduplicated() {
				t.Error("derived fingerprint dedup")
			}
			e.clock.add(time.Hour)
			later := deliver(t, e, record("inc-3", "fp-1", "deploy dep-7 broke api", 0.9))
			if later.GetDeduplicated() || len(later.GetAttempts()) != 1 {
				t.Fatalf("after the window: dedup=%t attempts=%v", later.GetDeduplicated(), later.GetAttempts())
			}
		})
	}
}

func TestFailedDeliveryReleasesClaim(t *testing.T) {
	h := newHook(t, 400, 200)
	e := newEnv(t, nil, func(c *Config) { c.WebhookURLs = []string{h.url("/x")} })
	if r := deliver(t, e, record("f-1", "fp-f", "x", 0.9)); r.GetAttempts()[0].GetOk() {
		t.Fatal("first delivery should fail")
	}
	r := deliver(t, e, record("f-2", "fp-f", "x", 0.9))
	if r.GetDeduplicated() || !r.GetAttempts()[0].GetOk() {
		t.Fatalf("retry after a failed delivery: %+v", r)
	}
}

func TestMarkdownAndRedaction(t *testing.T) {
	e := newEnv(t, nil, func(c *Config) { c.ReportBaseURL = "https://rcamesh.example.com/ui" })
	rec := record("md-1", "fp-md", "api leaked DB creds password=hunter2 in logs via https://hooks.slack.com/services/T1/B2/abcdefSECRET", 0.9)
	rep := deliver(t, e, rec)
	md := rep.GetMarkdown()
	for _, want := range []string{
		"# RCA: High 5xx rate on api", "| **Status** | CONCLUDED |", "| **Confidence** | 90% |", "| **Category** | code defect |",
		"| **Culprit** | deployment/shop/api |", "## Root cause", "## Causal chain", "1. deploy dep-7 shipped", "## Validated claims",
		"api panics on nil order — pins: `pin-logs-1`", "## Non-validated claims", "traffic also rose (tentative) — pins: `pin-metric-2`",
		"## Ruled out", "**database failover**: no database events in the window — pins: `pin-db-3`", "## Remediation", "1. roll back dep-7",
		"## Critic review", "- [x] regression_before_deploy", "## Evidence", "| `pin-logs-1` | fetch_pod_logs |", "| `pin-db-3` | get_db_events | - | no data |",
		"## Timeline", "### Stages", "| gather_evidence |", "### Tool calls", "### Guardrail trips", "| max_stagnant_iterations | brain | 2 / 2 |",
		"## Unknowns", "why the canary did not catch it", "## Cost", "| 4 | 3 | 1 | 1200 | 5.4s |",
		"https://rcamesh.example.com/ui/session/md-1", "[REDACTED]",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, secret := range []string{"hunter2", "abcdefSECRET", "abcdefghijklmnopqrstuvwxyz"} {
		if strings.Contains(md, secret) || strings.Contains(rep.GetDiagnosis().GetRootCause(), secret) {
			t.Errorf("secret %q leaked", secret)
		}
	}
	if rec.GetDiagnosis().GetRootCause() == rep.GetDiagnosis().GetRootCause() {
		t.Error("the caller's record must not be modified, the stored diagnosis must be redacted")
	}
}

func TestEvidenceTableFromStream(t *testing.T) {
	b := bustest.New(t)
	ctx := context.Background()
	pins := []*evidencev1.EvidencePin{
		{Id: "p-oom", SessionId: "ev-1", SourceTool: "check_pod_status", Claim: "api pod OOMKilled (exit 137)", Version: 1,
			ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC},
		{Id: "p-oom", SessionId: "ev-1", SourceTool: "check_pod_status", Claim: "api pod OOMKilled (exit 137)", Version: 2, Confidence: 95,
			ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED, CausalRole: evidencev1.CausalRole_CAUSAL_ROLE_ROOT_CAUSE},
		{Id: "p-bad", SessionId: "ev-1", SourceTool: "search_logs", Claim: "token=abc123secret | pipe", Version: 2,
			ValidationStatus: evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED, CausalRole: evidencev1.CausalRole_CAUSAL_ROLE_INFORMATIONAL},
	}
	for _, p := range pins {
		kind := evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED
		if p.GetVersion() > 1 {
			kind = evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED
		}
		if _, err := b.PublishPin(ctx, &evidencev1.PinEvent{Kind: kind, SessionId: "ev-1", Pin: p}); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, b, nil)
	md := deliver(t, e, record("ev-1", "fp-ev", "api ran out of memory", 0.8)).GetMarkdown()
	for _, want := range []string{
		"| `p-oom` | check_pod_status | api pod OOMKilled (exit 137) | validated | root cause | 95 |",
		"| `p-bad` | search_logs | token=[REDACTED] \\| pipe | rejected | informational |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("evidence table lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "`p-oom`") != 1 {
		t.Error("pin versions must collapse to one row")
	}
}

func TestGetAndListReports(t *testing.T) {
	for _, withBus := range []bool{false, true} {
		t.Run(fmt.Sprintf("bus=%t", withBus), func(t *testing.T) {
			var b *bus.Bus
			if withBus {
				b = bustest.New(t)
			}
			e := newEnv(t, b, nil)
			ctx := context.Background()
			if _, err := e.cl.GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: "none"}); status.Code(err) != codes.NotFound {
				t.Fatalf("missing report: %v", err)
			}
			if _, err := e.cl.GetReport(ctx, &deliveryv1.GetReportRequest{}); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("no session: %v", err)
			}
			for i, s := range []string{"a.b", "c d", "e/f"} {
				e.clock.add(time.Minute)
				resp, err := e.cl.DeliverReport(ctx, &deliveryv1.DeliverReportRequest{Record: record(s, fmt.Sprintf("fp-%d", i), "rc "+s, 0.9), DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.GetReport().GetAttempts()) != 0 {
					t.Error("dry run sent")
				}
			}
			got, err := e.cl.GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: "c d"})
			if err != nil || got.GetReport().GetDiagnosis().GetRootCause() != "rc c d" {
				t.Fatalf("get: %v %v", got, err)
			}
			list, err := e.cl.ListReports(ctx, &deliveryv1.ListReportsRequest{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(list.GetReports()); n != 2 || list.GetReports()[0].GetSessionId() != "e/f" || list.GetReports()[1].GetSessionId() != "c d" {
				t.Fatalf("list %v", list.GetReports())
			}
			if _, err := e.cl.ListReports(ctx, &deliveryv1.ListReportsRequest{Limit: -1}); status.Code(err) != codes.InvalidArgument {
				t.Errorf("negative limit: %v", err)
			}
			for _, req := range []*deliveryv1.DeliverReportRequest{{SessionId: "x"}, {Record: &investigationv1.InvestigationRecord{}},
				{SessionId: "x", Record: &investigationv1.InvestigationRecord{SessionId: "y"}}} {
				if _, err := e.cl.DeliverReport(ctx, req); status.Code(err) != codes.InvalidArgument {
					t.Errorf("%v: %v", req, err)
				}
			}
		})
	}
}

func TestGateway(t *testing.T) {
	e := newEnv(t, nil, nil)
	deliver(t, e, record("gw-1", "fp-gw", "rc", 0.9))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := runtime.NewServeMux()
	if err := e.svc.RegisterGateway(ctx, mux, e.conn); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v4/session/gw-1/report", 200, "gw-1"},
		{"/api/v4/session/nope/report", 404, "no report"},
		{"/api/v4/reports?limit=5", 200, "gw-1"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, leak string }{
		{"password=hunter2 ok", "hunter2"},
		{`{"api_key": "k-123456789"}`, "k-123456789"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl", "eyJzdWIi"},
		{"postgres://app:s3cr3tpw@db:5432/orders", "s3cr3tpw"},
		{"key AKIAABCDEFGHIJKLMNOP used", "AKIAABCDEFGHIJKLMNOP"},
		{"slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"},
		{"https://hooks.slack.com/services/T000/B000/XXXXSECRET", "XXXXSECRET"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"},
	} {
		out := redact(tc.in)
		if strings.Contains(out, tc.leak) || !strings.Contains(out, redactionMark) {
			t.Errorf("redact(%q) = %q", tc.in, out)
		}
	}
	for _, keep := range []string{"Tokens: 1200", "pod api-1 OOMKilled (exit 137)", "password authentication failed for user app"} {
		if redact(keep) != keep {
			t.Errorf("redact changed harmless %q to %q", keep, redact(keep))
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		mut   func(*Config)
		field string
	}{
		{func(c *Config) { c.ConfidenceGate = 1.2 }, "delivery.confidence-gate"},
		{func(c *Config) { c.MaxTries = 0 }, "delivery.max-tries"},
		{func(c *Config) { c.BackoffBase = 0 }, "delivery.backoff-base"},
		{func(c *Config) { c.BackoffMax = time.Nanosecond }, "delivery.backoff-max"},
		{func(c *Config) { c.SlackWebhookURL = "ftp://hooks/T/SECRETX" }, "delivery.slack-webhook-url"},
		{func(c *Config) { c.WebhookURLs = []string{"not a url SECRETX"} }, "delivery.webhook-url[0]"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) || strings.Contains(err.Error(), "SECRETX") {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	c := DefaultConfig()
	c.SlackWebhookURL = "https://hooks.slack.com/services/T/B/SECRETX"
	if strings.Contains(fmt.Sprint(c), "SECRETX") || strings.Contains(c.LogValue().String(), "SECRETX") {
		t.Error("config formatting leaks the webhook URL")
	}
	if d := DefaultConfig(); d.ConfidenceGate != 0.70 || d.MaxTries != 4 {
		t.Errorf("defaults %+v", d)
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	s, err := New(Config{ConfidenceGate: 0.7, MaxTries: 5, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		HTTPTimeout: time.Second, MaxMarkdownBytes: 4096, OutboxInterval: time.Second, OutboxMaxAge: time.Hour, OutboxMaxRounds: 1}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for try, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 9: time.Second} {
		for i := 0; i < 50; i++ {
			d := s.backoff(try)
			if d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want in [%s,%s]", try, d, want/2, want)
			}
		}
	}
}

func TestSecretsNeverLogged(t *testing.T) {
	h := newHook(t, 503)
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := DefaultConfig()
	cfg.BackoffBase, cfg.BackoffMax, cfg.MaxTries = time.Millisecond, time.Millisecond, 2
	cfg.SlackWebhookURL = h.url("/services/T9/B9/LOGSECRET")
	s, err := New(cfg, Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("config", "delivery", s.Config())
	resp, err := s.DeliverReport(context.Background(), &deliveryv1.DeliverReportRequest{Record: record("log-1", "fp-log", "x", 0.9)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetReport().GetAttempts()[0].GetTries() != 2 {
		t.Fatalf("attempts %v", resp.GetReport().GetAttempts())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "LOGSECRET") || !strings.Contains(logs.String(), "destination=slack") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

func TestGateBoundary(t *testing.T) {
	e := newEnv(t, nil, nil)
	if r := deliver(t, e, record("edge", "fp-edge", "x", 0.70)); r.GetSilent() {
		t.Error("a report at the gate is paged")
	}
	e2 := newEnv(t, nil, func(c *Config) { c.ConfidenceGate = 0.9 })
	if r := deliver(t, e2, record("edge2", "fp-edge2", "x", 0.85)); !r.GetSilent() {
		t.Error("gate is configurable")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

package brain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/bus/bustest"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/intake"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mut   func(*Config)
		field string
	}{
		{"defaults", func(*Config) {}, ""},
		{"loops", func(c *Config) { c.MaxLoops = 0 }, "brain.max-loops"},
		{"stagnant", func(c *Config) { c.MaxStagnantIterations = 0 }, "brain.max-stagnant-iterations"},
		{"budget", func(c *Config) { c.ContextBudgetChars = 10 }, "brain.context-budget-chars"},
		{"tool calls", func(c *Config) { c.MaxToolCalls = 0 }, "brain.max-tool-calls"},
		{"wall", func(c *Config) { c.MaxWall = 0 }, "brain.max-wall"},
		{"stalled", func(c *Config) { c.MaxStalledRetrievals = 0 }, "brain.max-stalled-retrievals"},
		{"dedup", func(c *Config) { c.DedupWindow = 0 }, "brain.dedup-window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want mention of %s", err, tc.field)
			}
		})
	}
	d := DefaultConfig()
	if d.MaxLoops != 20 || d.MaxStagnantIterations != 2 || d.MaxStalledRetrievals != 3 {
		t.Errorf("defaults drifted from the design: %+v", d)
	}
}

// TestPipelineEndToEnd runs an alert through every stage with fake services
// over real gRPC and the embedded bus.
func TestPipelineEndToEnd(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	h.run(h.svc)
	ctx := testCtx(t)
	resp, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert), Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != statusCompleted || resp.GetDiagnosis() == nil {
		t.Fatalf("status %q diagnosis %v", resp.GetStatus(), resp.GetDiagnosis())
	}
	if resp.GetAlert().GetPod() != "cart-7d9f-abcde" {
		t.Errorf("alert pod = %q", resp.GetAlert().GetPod())
	}
	rr, err := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId()})
	if err != nil {
		t.Fatal(err)
	}
	rec := rr.GetRecord()
	for _, stg := range pipelineStages {
		if got := stageStatus(rec, stg); got != "ok" {
			t.Errorf("stage %s status %q (stages %v)", stg, got, rec.GetStages())
		}
	}
	if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED {
		t.Errorf("diagnosis status %v (%s)", rec.GetDiagnosis().GetStatus(), rec.GetDiagnosis().GetStopReason())
	}
	if got := h.tools.intents(); strings.Join(got, ",") != "check_pod_status,fetch_pod_logs" {
		t.Errorf("tool calls %v", got)
	}
	for _, c := range h.tools.Calls() {
		if c.GetTriggeredBy() != evidencev1.TriggeredBy_TRIGGERED_BY_AUTOMATED_PIPELINE || c.GetInvestigationId() != rec.GetInvestigationId() {
			t.Errorf("call %s: triggered_by %v investigation %q", c.GetIntent(), c.GetTriggeredBy(), c.GetInvestigationId())
		}
		rc := c.GetContext()
		if rc.GetActiveNamespace() != "shop" || rc.GetActivePod() != "cart-7d9f-abcde" || rc.GetTimeWindow() == nil {
			t.Errorf("call %s context %v", c.GetIntent(), rc)
		}
	}
	if rec.GetLoops() != 1 || len(rec.GetToolCalls()) != 2 || rec.GetToolCalls()[0].GetIteration() != 1 {
		t.Errorf("loops %d tool calls %v", rec.GetLoops(), rec.GetToolCalls())
	}
	if strings.Join(rec.GetEvidenceSources(), ",") != "src_check_pod_status,src_fetch_pod_logs" {
		t.Errorf("evidence sources %v", rec.GetEvidenceSources())
	}
	if strings.Join(rec.GetIntegrations(), ",") != "kubernetes" {
		t.Errorf("integrations %v", rec.GetIntegrations())
	}
	g := rec.GetGuardrails()
	if g.GetMaxLoops() != 20 || g.GetToolBudget() != 10 {
		t.Errorf("guardrails snapshot %v", g)
	}
	if len(rec.GetHypothesisRounds()) != 1 || len(rec.GetReviews()) != 1 {
		t.Errorf("hypothesis rounds %d reviews %d", len(rec.GetHypothesisRounds()), len(rec.GetReviews()))
	}
	kinds := lifecycleKinds(t, b, resp.GetSessionId())
	for _, k := range []string{"alert_received", "started", "diagnosed", "completed"} {
		if count(kinds, k) != 1 {
			t.Errorf("lifecycle %s seen %d times in %v", k, count(kinds, k), kinds)
		}
	}
	if count(kinds, "stage") != len(pipelineStages) {
		t.Errorf("stage events %d, want %d", count(kinds, "stage"), len(pipelineStages))
	}
	pins, err := h.client.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: resp.GetSessionId()})
	if err != nil || len(pins.GetPins()) != 2 || pins.GetSequence() == 0 {
		t.Fatalf("pins %v seq %d err %v", pins.GetPins(), pins.GetSequence(), err)
	}
	sess, err := h.client.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: resp.GetSessionId()})
	if err != nil || sess.GetSession().GetState() != sessCompleted || sess.GetAlert().GetFingerprint() != resp.GetFingerprint() {
		t.Fatalf("session %v err %v", sess, err)
	}
	diag, err := h.client.GetDiagnosis(ctx, &brainv1.GetDiagnosisRequest{SessionId: resp.GetSessionId()})
	if err != nil || diag.GetDiagnosis() == nil || diag.GetInvestigationId() != rec.GetInvestigationId() {
		t.Fatalf("diagnosis %v err %v", diag, err)
	}
	report, err := h.svc.Report(ctx, rec.GetInvestigationId())
	if err != nil {
		t.Fatal(err)
	}
	score := score.Record(rec, pins.GetPins(), "scn-1", report)
	if score["scenario_id"] != "scn-1" || !strings.Contains(score["report"].(string), "Incident report") ||
		len(score["tools_called"].([]any)) != 2 || score["root_cause_category"] == "" {
		t.Errorf("scoring %v", score)
	}
	call0 := score["tools_called"].([]any)[0].(map[string]any)
	if call0["intent"] != "check_pod_status" || call0["params"].(map[string]any)["namespace"] != "shop" {
		t.Errorf("first tool call %v", call0)
	}
	list, err := h.client.ListSessions(ctx, &brainv1.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 1 {
		t.Fatalf("sessions %v err %v", list, err)
	}
}

func TestSubmitAlertInvalid(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := testCtx(t)
	tests := []struct {
		name, payload, source, want string
	}{
		{"no alerts", `{"version":"4","alerts":[]}`, "", "alerts[] is empty"},
		{"unknown format", `{"foo":1}`, "", "unknown alert format"},
		{"unknown source", `{"title":"x"}`, "nagios", "unknown source"},
		{"hint mismatch", `{"title":"x"}`, "pagerduty", "event.data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, tc.payload), Source: tc.source})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want InvalidArgument naming %q", err, tc.want)
			}
		})
	}
	if _, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("nil payload: %v", err)
	}
	list, err := h.client.ListSessions(ctx, &brainv1.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 0 {
		t.Fatalf("invalid alerts created sessions: %v %v", list, err)
	}
	for _, call := range []func() error{
		func() error {
			_, err := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: "nope"})
			return err
		},
		func() error {
			_, err := h.client.GetDiagnosis(ctx, &brainv1.GetDiagnosisRequest{SessionId: "nope"})
			return err
		},
		func() error {
			_, err := h.client.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: "nope"})
			return err
		},
		func() error {
			_, err := h.client.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: "nope"})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("want NotFound naming the session, got %v", err)
		}
	}
}

func TestNoiseShortCircuit(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	h.run(h.svc)
	ctx := testCtx(t)
	payload := `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"Watchdog","severity":"none"}}]}`
	resp, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, payload), Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetNoise() || resp.GetStatus() != statusNoise {
		t.Fatalf("resp %v", resp)
	}
	if n := len(h.tools.Calls()); n != 0 {
		t.Fatalf("noise ran %d tools", n)
	}
	rec, err := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: resp.GetSessionId()})
	if err != nil || rec.GetRecord().GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE {
		t.Fatalf("record %v err %v", rec, err)
	}
	sess, _ := h.client.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: resp.GetSessionId()})
	if sess.GetSession().GetState() != sessNoise {
		t.Errorf("session state %q", sess.GetSession().GetState())
	}
	if kinds := lifecycleKinds(t, b, resp.GetSessionId()); count(kinds, "noise") != 1 || count(kinds, "started") != 0 {
		t.Errorf("lifecycle %v", kinds)
	}
}

// TestDedupStorm: 10 identical alerts at once make one investigation; 9 attach.
func TestDedupStorm(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	resps := make([]*brainv1.SubmitAlertResponse, 10)
	errs := make([]error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i], errs[i] = h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert)})
		}()
	}
	wg.Wait()
	attached, sessions := 0, map[string]bool{}
	for i := range 10 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if resps[i].GetAttached() {
			attached++
		}
		sessions[resps[i].GetSessionId()] = true
	}
	if attached != 9 || len(sessions) != 1 {
		t.Fatalf("attached %d sessions %v", attached, sessions)
	}
	var sid string
	for s := range sessions {
		sid = s
	}
	sess, err := h.client.GetSession(ctx, &brainv1.GetSessionRequest{SessionId: sid})
	if err != nil || sess.GetSession().GetAttachedAlerts() != 9 || len(sess.GetInvestigationIds()) != 1 {
		t.Fatalf("session %v err %v", sess, err)
	}
	if kinds := lifecycleKinds(t, b, sid); count(kinds, "alert_attached") != 9 || count(kinds, "alert_received") != 1 {
		t.Errorf("lifecycle %v", kinds)
	}
	// The one queued investigation runs once the consumer starts.
	h.run(h.svc)
	waitFor(t, "the investigation", func() bool {
		r, err := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: sid})
		return err == nil && r.GetRecord().GetState() == stateCompleted
	})
	r, _ := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: sid})
	if r.GetRecord().GetAttachedAlerts() != 9 {
		t.Errorf("record attached alerts %d", r.GetRecord().GetAttachedAlerts())
	}
	if n := len(h.tools.Calls()); n != 2 {
		t.Errorf("tools ran %d times for one investigation", n)
	}
}

// TestCriticLoop: GATHER_MORE runs the requested intents with inferred
// parameters, then ACCEPT; a refused conclusion runs the missing intents once.
func TestCriticLoop(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.critic.review = func(round int32, _ *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
		if round == 1 {
			return &investigationv1.CriticReview{Score: 0.5, Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Round: round,
				Objections: []*investigationv1.Objection{{Check: "evidence_not_concrete", RequestedIntents: []string{"get_events"}}}}
		}
		return &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: round}
	}
	h.critic.accept = func(n int, req *criticv1.AcceptConclusionRequest) *criticv1.AcceptConclusionResponse {
		if n == 1 {
			return &criticv1.AcceptConclusionResponse{Reason: "plan incomplete", MissingIntents: []string{"query_prometheus"}, BlockingGaps: []string{"no metrics"}}
		}
		return &criticv1.AcceptConclusionResponse{Accepted: true, Reason: "sufficient"}
	}
	alerts, err := intake.Parse([]byte(crashAlert), "")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.tools.intents(), ","); got != "check_pod_status,fetch_pod_logs,get_events,query_prometheus" {
		t.Fatalf("calls %s", got)
	}
	ev := h.tools.Calls()[2]
	if ev.GetParams().AsMap()["namespace"] != "shop" || ev.GetParams().AsMap()["kind"] != "Pod" {
		t.Errorf("inferred get_events params %v", ev.GetParams().AsMap())
	}
	if q := h.tools.Calls()[3].GetParams().AsMap()["query"]; q != "exit code 137" {
		t.Errorf("required query inferred as %v", q)
	}
	if rec.GetLoops() != 3 || rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED {
		t.Fatalf("loops %d status %v (%s)", rec.GetLoops(), rec.GetDiagnosis().GetStatus(), rec.GetDiagnosis().GetStopReason())
	}
	if rec.GetToolCalls()[2].GetOrigin() != originCritic || rec.GetToolCalls()[2].GetIteration() != 2 {
		t.Errorf("critic call record %v", rec.GetToolCalls()[2])
	}
}

func TestConclusionRefusedEndsNeedsReview(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.critic.accept = func(n int, _ *criticv1.AcceptConclusionRequest) *criticv1.AcceptConclusionResponse {
		return &criticv1.AcceptConclusionResponse{Reason: "gaps remain", BlockingGaps: []string{"deploy timing unknown"}}
	}
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	d := rec.GetDiagnosis()
	if d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW || !strings.Contains(strings.Join(d.GetUnknowns(), ";"), "deploy timing unknown") {
		t.Fatalf("status %v unknowns %v", d.GetStatus(), d.GetUnknowns())
	}
}

func TestEscalation(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.critic.review = func(round int32, _ *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
		return &investigationv1.CriticReview{Score: 0.3, Action: investigationv1.CriticAction_CRITIC_ACTION_ESCALATE, Round: round, Summary: "conflicting evidence"}
	}
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_ESCALATED {
		t.Fatalf("status %v", rec.GetDiagnosis().GetStatus())
	}
}

// gatherForever asks for a new intent every round.
func gatherForever(round int32, _ *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
	return &investigationv1.CriticReview{Score: 0.4, Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Round: round,
		Objections: []*investigationv1.Objection{{Check: "more", RequestedIntents: []string{fmt.Sprintf("probe_%d", round)}}}}
}

func TestRulesGuardrails(t *testing.T) {
	tests := []struct {
		name      string
		cfg       func(*Config)
		tools     func(*fakeTools)
		guardrail investigationv1.Guardrail
		loops     int32
		calls     int
	}{
		{"loop cap", func(c *Config) { c.MaxLoops = 3; c.MaxStalledRetrievals = 10 }, nil, GuardrailMaxLoops, 3, 4},
		{"stagnation", func(c *Config) { c.MaxStalledRetrievals = 10 }, func(f *fakeTools) { f.alwaysReplay = true }, GuardrailStagnation, 2, 3},
		{"stalled retrievals", nil, func(f *fakeTools) { f.noData = true }, GuardrailStalledRetrievals, 3, 4},
		{"max tool calls", func(c *Config) { c.MaxToolCalls = 3; c.MaxStalledRetrievals = 10 }, nil, GuardrailMaxToolCalls, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := newHarness(t, harnessOpts{cfg: &cfg})
			if tc.tools != nil {
				tc.tools(h.tools)
			}
			h.critic.review = gatherForever
			alerts, _ := intake.Parse([]byte(crashAlert), "")
			rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
			if err != nil {
				t.Fatal(err)
			}
			if !hasTrip(rec, tc.guardrail) {
				t.Fatalf("no %s trip: %v", tc.guardrail, rec.GetGuardrailTrips())
			}
			if rec.GetLoops() != tc.loops {
				t.Errorf("loops %d, want %d", rec.GetLoops(), tc.loops)
			}
			if n := len(h.tools.Calls()); n != tc.calls {
				t.Errorf("tool calls %d, want %d (%v)", n, tc.calls, h.tools.intents())
			}
			if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW || len(rec.GetDiagnosis().GetUnknowns()) == 0 {
				t.Errorf("status %v unknowns %v", rec.GetDiagnosis().GetStatus(), rec.GetDiagnosis().GetUnknowns())
			}
		})
	}
}

// TestResumeAfterRestart kills a brain mid-investigation (a tool call blocks)
// and checks that another instance resumes it from the checkpoint.
func TestResumeAfterRestart(t *testing.T) {
	b := bustest.NewConfig(t, func() bus.Config { c := bus.DefaultConfig(); c.AckWait = 2e9; return c }())
	h := newHarness(t, harnessOpts{bus: b, plan: []string{"check_pod_status", "fetch_pod_logs", "get_events"}})
	entered := make(chan struct{}, 1)
	// The second tool call blocks until its caller goes away.
	h.tools.exec = func(ctx context.Context, req *toolsv1.ExecuteToolRequest, n int) (*toolsv1.ExecuteToolResponse, error) {
		if req.GetIntent() == "fetch_pod_logs" && n == 2 {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, nil
	}
	stopA := h.run(h.svc)
	ctx := testCtx(t)
	resp, err := h.client.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Payload: mustStruct(t, crashAlert)})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	stopA() // the first brain dies mid-call

	svcB := h.newService(harnessOpts{bus: b})
	h.run(svcB)
	st, err := svcB.waitFinal(ctx, resp.GetInvestigationId())
	if err != nil {
		t.Fatal(err)
	}
	rec := st.rec
	if got := strings.Join(h.tools.intents(), ","); got != "check_pod_status,fetch_pod_logs,fetch_pod_logs,get_events" {
		t.Fatalf("tool calls %s (the first must not rerun, the interrupted one must)", got)
	}
	if n := len(rec.GetToolCalls()); n != 3 {
		t.Errorf("record holds %d tool calls: %v", n, rec.GetToolCalls())
	}
	if stageStatus(rec, stageResolve) != "ok" || countStages(rec, stageResolve) != 1 || countStages(rec, stagePlan) != 1 {
		t.Errorf("stages %v", rec.GetStages())
	}
	if rec.GetState() != stateCompleted || rec.GetLoops() != 1 {
		t.Errorf("state %s loops %d", rec.GetState(), rec.GetLoops())
	}
	kinds := lifecycleKinds(t, b, resp.GetSessionId())
	if count(kinds, "started") != 2 || count(kinds, "completed") != 1 {
		t.Errorf("lifecycle %v", kinds)
	}
}

func countStages(rec *investigationv1.InvestigationRecord, name string) int {
	n := 0
	for _, s := range rec.GetStages() {
		if s.GetName() == name {
			n++
		}
	}
	return n
}

func TestStreamEvents(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	ctx := testCtx(t)
	sid := "sess-stream"
	pub := func(kind evidencev1.LifecycleEventKind, msg string) {
		if _, err := b.PublishLifecycle(ctx, &evidencev1.LifecycleEvent{Kind: kind, SessionId: sid, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	pubPin := func(id string) {
		if _, err := b.PublishPin(ctx, &evidencev1.PinEvent{Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: sid,
			Pin: &evidencev1.EvidencePin{Id: id, SessionId: sid, Version: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	pub(evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STARTED, "one")
	pubPin("p1")
	pub(evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE, "two")

	recv := func(stream grpc.ServerStreamingClient[brainv1.StreamEventsResponse], n int) []*evidencev1.SessionEvent {
		var out []*evidencev1.SessionEvent
		for range n {
			m, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m.GetEvent())
		}
		return out
	}
	// Replay only.
	st, err := h.client.StreamEvents(ctx, &brainv1.StreamEventsRequest{SessionId: sid, NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := recv(st, 3)
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("no_follow stream did not end: %v", err)
	}
	// From a sequence, pins only.
	st2, err := h.client.StreamEvents(ctx, &brainv1.StreamEventsRequest{SessionId: sid, PinsOnly: true, NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := recv(st2, 1); got[0].GetPin().GetPin().GetId() != "p1" {
		t.Fatalf("pins only: %v", got)
	}
	// Follow from after the first event: history then live.
	fctx, cancel := context.WithCancel(ctx)
	st3, err := h.client.StreamEvents(fctx, &brainv1.StreamEventsRequest{SessionId: sid, FromSequence: evs[0].GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	hist := recv(st3, 2)
	if hist[0].GetSequence() != evs[1].GetSequence() {
		t.Fatalf("follow started at %d, want %d", hist[0].GetSequence(), evs[1].GetSequence())
	}
	pub(evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_COMPLETED, "live")
	live := recv(st3, 1)
	if live[0].GetLifecycle().GetMessage() != "live" {
		t.Fatalf("live event %v", live[0])
	}
	cancel()
	if _, err := st3.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
}

func TestStartInvestigationMergesPinsIntoParent(t *testing.T) {
	b := bustest.New(t)
	h := newHarness(t, harnessOpts{bus: b})
	ctx := testCtx(t)
	req := &brainv1.StartInvestigationRequest{SessionId: "sub-1", ParentSessionId: "parent-1", Service: "payments", Namespace: "pay", Wait: true}
	resp, err := h.client.StartInvestigation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != stateCompleted || resp.GetDiagnosis() == nil {
		t.Fatalf("resp %v", resp)
	}
	again, err := h.client.StartInvestigation(ctx, req)
	if err != nil || again.GetInvestigationId() != resp.GetInvestigationId() {
		t.Fatalf("not idempotent: %v %v", again, err)
	}
	if n := len(h.tools.Calls()); n != 2 {
		t.Errorf("the repeated request ran tools again: %d calls", n)
	}
	pins, err := h.svc.Pins(ctx, "parent-1")
	if err != nil || len(pins) != 2 {
		t.Fatalf("parent pins %v err %v", pins, err)
	}
	ref := pins[0].GetMetadata().GetFields()["parent_ref"].GetStructValue().GetFields()
	if ref["session_id"].GetStringValue() != "sub-1" || ref["investigation_id"].GetStringValue() != resp.GetInvestigationId() {
		t.Errorf("parent reference %v", ref)
	}
	rec, _ := h.client.GetRecord(ctx, &brainv1.GetRecordRequest{SessionId: "sub-1"})
	if rec.GetRecord().GetParentSessionId() != "parent-1" || rec.GetRecord().GetAlert().GetService() != "payments" {
		t.Errorf("record %v", rec.GetRecord())
	}
	if _, err := h.client.StartInvestigation(ctx, &brainv1.StartInvestigationRequest{SessionId: "x"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("missing service: %v", err)
	}
}

func TestSubInvestigationDoesNotRecurse(t *testing.T) {
	h := newHarness(t, harnessOpts{plan: []string{"check_pod_status", intentReinvestigate}})
	resp, err := h.svc.StartInvestigation(testCtx(t), &brainv1.StartInvestigationRequest{SessionId: "s", Service: "api", Namespace: "ns", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.tools.intents(), ","); got != "check_pod_status" {
		t.Fatalf("sub-investigation ran %s (%v)", got, resp)
	}
}

func TestGatewaySubmitAlert(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.run(h.svc)
	ctx := testCtx(t)
	cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	mux := runtime.NewServeMux()
	if err := h.svc.RegisterGateway(ctx, mux, cc); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/api/v4/alerts/alertmanager", crashAlert)
	if code != 200 || !strings.Contains(body, `"sessionId"`) {
		t.Fatalf("%d %s", code, body)
	}
	code, body = post("/api/v4/alerts", `{"foo": 1}`)
	if code != 400 || !strings.Contains(body, "unknown alert format") {
		t.Fatalf("%d %s", code, body)
	}
}

// TestExhaustedRequestsWidenScope: when the critic only asks for calls that
// already ran, the supervisor runs the router's next unexecuted tools instead.
// TestExhaustedRequestsWidenScope: the critic decides whether the scope
// widens (WidenScope); the brain completes a widening it decided with the
// router's selection and never widens on its own.
func TestExhaustedRequestsWidenScope(t *testing.T) {
	for _, widen := range []bool{true, false} {
		t.Run(fmt.Sprint("widen=", widen), func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.critic.review = func(round int32, _ *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
				if round == 1 {
					return &investigationv1.CriticReview{Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Round: round, WidenScope: widen,
						Objections: []*investigationv1.Objection{{Check: "weak", RequestedIntents: []string{"check_pod_status"}}}}
				}
				return &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: round}
			}
			alerts, _ := intake.Parse([]byte(crashAlert), "")
			rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
			if err != nil {
				t.Fatal(err)
			}
			want := "check_pod_status,fetch_pod_logs,check_pod_status" // the repeated request, then the stagnation breaker
			if widen {
				want = "check_pod_status,fetch_pod_logs,get_events,query_prometheus"
			}
			if got := strings.Join(h.tools.intents(), ","); got != want {
				t.Fatalf("calls %s, want %s", got, want)
			}
			if o := rec.GetToolCalls()[len(rec.GetToolCalls())-1].GetOrigin(); (o == originExpand) != widen {
				t.Errorf("last call's origin %q with widen=%v", o, widen)
			}
			if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED {
				t.Errorf("status %v", rec.GetDiagnosis().GetStatus())
			}
		})
	}
}

// BenchmarkInvestigateRules measures one rules-mode investigation through
// fake services over real gRPC (no bus): the brain's own overhead.
func BenchmarkInvestigateRules(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.svc.Investigate(ctx, alerts[0], ""); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWallTimeBreaker(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxWall = time.Minute
	var mu sync.Mutex
	clock := time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	h := newHarness(t, harnessOpts{cfg: &cfg, now: now, plan: []string{"a", "b", "c", "d", "e", "f"}})
	h.tools.exec = func(context.Context, *toolsv1.ExecuteToolRequest, int) (*toolsv1.ExecuteToolResponse, error) {
		mu.Lock()
		clock = clock.Add(25 * time.Second) // every tool call takes 25s
		mu.Unlock()
		return nil, nil
	}
	h.critic.review = gatherForever
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if !hasTrip(rec, GuardrailMaxWall) || rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW {
		t.Fatalf("trips %v status %v", rec.GetGuardrailTrips(), rec.GetDiagnosis().GetStatus())
	}
	if n := len(h.tools.Calls()); n != 3 {
		t.Errorf("%d tool calls, want 3 (75s > 1m)", n)
	}
	if rec.GetWallMs() < 75_000 {
		t.Errorf("wall_ms %d", rec.GetWallMs())
	}
}

// The critic's rejection limit is the outcome even when the answer also
// says accepted (issue 15: the critic failed open at its own limit).
func TestRejectionLimitEndsNeedsReview(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.critic.accept = func(n int, _ *criticv1.AcceptConclusionRequest) *criticv1.AcceptConclusionResponse {
		return &criticv1.AcceptConclusionResponse{Accepted: true, LimitReached: true, Reason: "evaluator rejection limit reached (3 of 3)", BlockingGaps: []string{"answer cites tool names, not pins"}}
	}
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if st := rec.GetDiagnosis().GetStatus(); st != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW {
		t.Fatalf("status %v (%s), want NEEDS_REVIEW at the critic's limit", st, rec.GetDiagnosis().GetStopReason())
	}
	found := false
	for _, u := range rec.GetDiagnosis().GetUnknowns() {
		if strings.Contains(u, "cites tool names") {
			found = true
		}
	}
	if !found {
		t.Errorf("the remaining gap is not among the unknowns: %v", rec.GetDiagnosis().GetUnknowns())
	}
}

// TestEvidenceModelOncePerEvidenceState: the follow-ups, the review, the
// proposed diagnosis and the diagnose stage share one analysis of the pins
// while the pins do not change; a round that brings new pins analyses again.
func TestEvidenceModelOncePerEvidenceState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rounds int32
		want   int64
	}{
		{"accepted in round 1", 1, 1},
		{"a second round with new evidence", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.critic.review = func(round int32, _ *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
				if round < tc.rounds {
					return &investigationv1.CriticReview{Score: 0.5, Action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, Round: round,
						Objections: []*investigationv1.Objection{{Check: "evidence_not_concrete", RequestedIntents: []string{"get_events"}}}}
				}
				return &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: round}
			}
			alerts, _ := intake.Parse([]byte(crashAlert), "")
			rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
			if err != nil {
				t.Fatal(err)
			}
			h.critic.mu.Lock()
			accepts := h.critic.accepts
			h.critic.mu.Unlock()
			if rec.GetLoops() != tc.rounds || accepts != 1 || stageStatus(rec, stageDiagnose) != "ok" {
				t.Fatalf("loops %d, %d conclusion requests, diagnose %q", rec.GetLoops(), accepts, stageStatus(rec, stageDiagnose))
			}
			if got := h.svc.analyses.Load(); got != tc.want {
				t.Fatalf("analysis ran %d times over %d evidence states", got, tc.want)
			}
		})
	}
}

// TestNextCallsTellTheCritic: the rules loop tells the critic, per intent,
// whether a call for it now would be new or repeat a call made; the critic
// decides scope widening from that account.
func TestNextCallsTellTheCritic(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	var next *criticv1.NextCalls
	h.critic.review = func(round int32, req *criticv1.ReviewHypothesesRequest) *investigationv1.CriticReview {
		if round == 1 {
			next = req.GetNextCalls()
		}
		return &investigationv1.CriticReview{Score: 0.9, Action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, Round: round}
	}
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	if _, err := h.svc.Investigate(testCtx(t), alerts[0], ""); err != nil {
		t.Fatal(err)
	}
	if next == nil {
		t.Fatal("the rules loop sent no account of its next calls")
	}
	ran := h.tools.intents()[0]
	if !slices.Contains(next.GetRepeatIntents(), ran) || slices.Contains(next.GetFreshIntents(), ran) {
		t.Errorf("%s ran in round 1 but is not a repeat: %v", ran, next)
	}
	if !slices.Contains(next.GetFreshIntents(), "get_events") {
		t.Errorf("get_events has not run but is not new: %v", next)
	}
}

// The category prior the brain weighs: embedded by default, off on
// request, a team's own model file, and a clear error for a file that is
// not there; an evaluation's left-out sets are left out.
func TestCategoryPriorSetting(t *testing.T) {
	t.Parallel()
	conn, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	deps := Deps{Router: routerv1.NewRouterServiceClient(conn), Tools: toolsv1.NewToolsServiceClient(conn),
		Critic: criticv1.NewCriticServiceClient(conn), Delivery: deliveryv1.NewDeliveryServiceClient(conn)}
	build := func(setting string, without ...string) (*Service, error) {
		c := DefaultConfig()
		c.CategoryPrior, c.CategoryPriorWithout = setting, without
		return New(c, deps)
	}
	s, err := build("embedded")
	if err != nil || s.prior == nil || s.prior.Incidents() == 0 {
		t.Fatalf("embedded prior: %v", err)
	}
	all := s.prior.Incidents()
	left, err := build("embedded", s.prior.Sets[0])
	if err != nil || left.prior.Incidents() >= all {
		t.Fatalf("leaving out %s: %v, %d incidents of %d", s.prior.Sets[0], err, left.prior.Incidents(), all)
	}
	if s, err := build("off"); err != nil || s.prior != nil {
		t.Fatalf("off: %v %v", s.prior, err)
	}
	if _, err := build(filepath.Join(t.TempDir(), "missing.json.gz")); err == nil || !strings.Contains(err.Error(), "brain.category-prior") {
		t.Fatalf("missing model file: %v", err)
	}
}

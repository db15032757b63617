package critic

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

const (
	catCode   = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT
	catDep    = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE
	catRes    = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION
	catHealth = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY
)

func validated(p *evidencev1.EvidencePin, role evidencev1.CausalRole) *evidencev1.EvidencePin {
	p.ValidationStatus = statusValidated
	p.CausalRole = role
	p.Version = 2
	return p
}

// incident builds a code-defect incident on service api with a deploy at
// deployAt and a 5xx step starting at t0.
func incident(t *testing.T, deployAt time.Time) []*evidencev1.EvidencePin {
	return []*evidencev1.EvidencePin{
		validated(newPin("m1", "query_prometheus", series(t, "http_5xx_rate", "api", "step", tp(t0))), roleCascading),
		validated(newPin("d1", "get_deploy_history", md(t, facts.KeyDeploys, []facts.Deploy{{ID: "dep-7", Service: "api", Revision: "a1b2c3d", StartedAt: tp(deployAt)}})), roleRoot),
		validated(newPin("l1", "fetch_pod_logs", md(t, facts.KeyLogLines, []facts.LogLine{{Level: "ERROR", Service: "api", Pod: "api-7d9f8b6c5-x2x1z",
			Message: "panic: runtime error: nil pointer dereference", Timestamp: tp(t0.Add(time.Minute))}})), roleRoot),
		validated(newPin("c1", "get_commits", md(t, facts.KeyCommits, []facts.Commit{{SHA: "a1b2c3d4e5f6", Service: "api", Message: "refactor order handler"}})), roleCorrelated),
	}
}

func codeHyp(conf float64) *investigationv1.Hypothesis {
	return &investigationv1.Hypothesis{Id: "h1", Statement: "Deploy dep-7 of api introduced a nil pointer defect", Category: catCode,
		Entity: "deployment/shop/api", Confidence: conf, PinIds: []string{"m1", "d1", "l1", "c1"}}
}

func objection(r *investigationv1.CriticReview, check string) *investigationv1.Objection {
	for _, o := range r.GetObjections() {
		if o.GetCheck() == check {
			return o
		}
	}
	return nil
}

func hasTrip(trips []*investigationv1.GuardrailTrip, kind investigationv1.Guardrail) *investigationv1.GuardrailTrip {
	for _, tr := range trips {
		if tr.GetKind() == kind {
			return tr
		}
	}
	return nil
}

func TestReviewHypotheses(t *testing.T) {
	dbPins := func() []*evidencev1.EvidencePin {
		pins := incident(t, t0.Add(-10*time.Minute))
		pins[2] = validated(newPin("l1", "fetch_pod_logs", md(t, facts.KeyLogLines, []facts.LogLine{{Level: "ERROR", Service: "api",
			Message: "dial tcp orders-db:5432: connect: connection refused", Timestamp: tp(t0)}})), roleCascading)
		return append(pins, validated(newPin("db1", "get_db_events", md(t, facts.KeyDBEvents, []facts.DBEvent{{Time: tp(t0.Add(-2 * time.Minute)),
			SourceID: "orders-db", Message: "Multi-AZ instance failover started"}})), roleRoot))
	}
	dbHyp := &investigationv1.Hypothesis{Id: "h2", Statement: "orders-db failover broke api's database connections", Category: catDep,
		Entity: "database/orders-db", Confidence: 0.6, PinIds: []string{"db1", "l1"}}

	cases := []struct {
		name     string
		cfg      func(*Config)
		hyps     []*investigationv1.Hypothesis
		pins     []*evidencev1.EvidencePin
		round    int32
		action   investigationv1.CriticAction
		failed   []string // checks that must not pass
		intents  []string // requested intents that must be present
		lead     string   // leading hypothesis id after review
		trips    []investigationv1.Guardrail
		summary  string
		minScore float64
		maxScore float64
	}{
		{name: "strong hypothesis is accepted", hyps: []*investigationv1.Hypothesis{codeHyp(0.85)}, pins: incident(t, t0.Add(-10*time.Minute)),
			action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, lead: "h1", minScore: 0.8, maxScore: 1, summary: "ACCEPT"},
		{name: "threshold is configurable", cfg: func(c *Config) { c.Threshold = 0.99 }, hyps: []*investigationv1.Hypothesis{codeHyp(0.85)},
			pins: incident(t, t0.Add(-10*time.Minute)), action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, lead: "h1",
			trips: []investigationv1.Guardrail{GuardrailThreshold}, maxScore: 0.99},
		{name: "regression before the deploy re-ranks", hyps: []*investigationv1.Hypothesis{codeHyp(0.9),
			{Id: "h3", Statement: "capacity saturation on api", Category: catRes, Entity: "deployment/shop/api-worker", Confidence: 0.5, PinIds: []string{"m1"}}},
			pins: incident(t, t0.Add(15*time.Minute)), action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE,
			failed: []string{CheckRegressionBeforeDeploy}, intents: []string{"query_prometheus"}, lead: "h3", maxScore: 0.6, summary: "before deploy dep-7"},
		{name: "dependency is a better explanation", hyps: []*investigationv1.Hypothesis{codeHyp(0.8), dbHyp}, pins: dbPins(),
			action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, failed: []string{CheckDependencyBetter},
			intents: []string{"re_investigate_service", "query_db_metrics"}, lead: "h2", maxScore: 0.6, summary: "orders-db"},
		{name: "dependency hypothesis survives", hyps: []*investigationv1.Hypothesis{dbHyp}, pins: dbPins(),
			action: investigationv1.CriticAction_CRITIC_ACTION_ACCEPT, lead: "h2", minScore: 0.8},
		{name: "accused metrics normal", hyps: []*investigationv1.Hypothesis{{Id: "h4", Statement: "cart leaks memory", Category: catRes,
			Entity: "deployment/shop/cart", Confidence: 0.9, PinIds: []string{"cm"}}},
			pins:   []*evidencev1.EvidencePin{validated(newPin("cm", "query_prometheus", series(t, "container_memory_working_set_bytes", "cart", "flat", nil)), roleInfo)},
			action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, failed: []string{CheckAccusedMetricsNormal},
			intents: []string{"re_investigate_service"}, lead: "h4", maxScore: 0.6},
		{name: "rounds exhausted escalates", hyps: []*investigationv1.Hypothesis{codeHyp(0.9)}, pins: incident(t, t0.Add(15*time.Minute)), round: 3,
			action: investigationv1.CriticAction_CRITIC_ACTION_ESCALATE, trips: []investigationv1.Guardrail{GuardrailThreshold, GuardrailMaxRounds},
			summary: "conflicting evidence", lead: "h1"},
		{name: "round limit is configurable", cfg: func(c *Config) { c.MaxRounds = 1 }, hyps: []*investigationv1.Hypothesis{codeHyp(0.9)},
			pins: incident(t, t0.Add(15*time.Minute)), round: 1, action: investigationv1.CriticAction_CRITIC_ACTION_ESCALATE, trips: []investigationv1.Guardrail{GuardrailMaxRounds}},
		{name: "no hypothesis gathers more", action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, failed: []string{CheckNoHypothesis}, intents: []string{"fetch_pod_logs"}},
		{name: "healthy hypothesis contradicted by failures", hyps: []*investigationv1.Hypothesis{{Id: "h5", Statement: "api is healthy", Category: catHealth,
			Entity: "deployment/shop/api", Confidence: 0.9, PinIds: []string{"m1"}}}, pins: incident(t, t0.Add(-10*time.Minute)),
			action: investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE, failed: []string{CheckAccusedMetricsNormal}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			muts := []func(*Config){}
			if tc.cfg != nil {
				muts = append(muts, tc.cfg)
			}
			s := newTestService(t, nil, muts...)
			cl := serve(t, s)
			resp, err := cl.ReviewHypotheses(context.Background(), &criticv1.ReviewHypothesesRequest{SessionId: "rv",
				Hypotheses: &investigationv1.HypothesisSet{Hypotheses: tc.hyps}, Round: tc.round, Pins: tc.pins,
				Alert: &investigationv1.Alert{Service: "api", Namespace: "shop"}})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.GetReview()
			if r.GetAction() != tc.action {
				t.Fatalf("action %s, want %s; score %.3f; summary %s", r.GetAction(), tc.action, r.GetScore(), r.GetSummary())
			}
			if r.GetScore() < 0 || r.GetScore() > 1 || r.GetScore() < tc.minScore || tc.maxScore > 0 && r.GetScore() > tc.maxScore {
				t.Errorf("score %.3f outside [%v,%v]", r.GetScore(), tc.minScore, tc.maxScore)
			}
			if r.GetThreshold() != s.cfg.Threshold {
				t.Errorf("threshold %v", r.GetThreshold())
			}
			for _, c := range tc.failed {
				o := objection(r, c)
				if o == nil || o.GetPassed() {
					t.Errorf("check %s should fail: %+v", c, o)
				}
			}
			var intents []string
			for _, o := range r.GetObjections() {
				intents = append(intents, o.GetRequestedIntents()...)
			}
			for _, i := range tc.intents {
				if !containsStr(intents, i) {
					t.Errorf("requested intents %v lack %s", intents, i)
				}
			}
			if tc.lead != "" && r.GetLeadingHypothesisId() != tc.lead {
				t.Errorf("leading %q, want %q", r.GetLeadingHypothesisId(), tc.lead)
			}
			if tc.lead != "" && len(tc.hyps) > 1 && tc.lead != tc.hyps[0].GetId() {
				rr := resp.GetReranked().GetHypotheses()
				if len(rr) != len(tc.hyps) || rr[0].GetId() != tc.lead || rr[1].GetConfidence() >= tc.hyps[0].GetConfidence() {
					t.Errorf("reranked %v", rr)
				}
			}
			for _, name := range tc.trips {
				tr := hasTrip(resp.GetTrips(), name)
				if tr == nil || tr.GetOwner() != "critic" {
					t.Errorf("trip %s missing: %v", name, resp.GetTrips())
				}
			}
			if tc.action == investigationv1.CriticAction_CRITIC_ACTION_ACCEPT && len(resp.GetTrips()) != 0 {
				t.Errorf("accepted review tripped: %v", resp.GetTrips())
			}
			if !strings.Contains(r.GetSummary(), tc.summary) {
				t.Errorf("summary %q lacks %q", r.GetSummary(), tc.summary)
			}
		})
	}
}

func TestEvidenceNotConcrete(t *testing.T) {
	s := newTestService(t, nil)
	pins := []*evidencev1.EvidencePin{validated(newPin("x", "fetch_pod_logs", nil, claim("errors went up")), roleCascading)}
	resp := s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{{Id: "h", Category: catCode,
		Entity: "deployment/shop/api", Confidence: 0.9, PinIds: []string{"x"}}}}, nil, 1, pins, nil, nil)
	o := objection(resp.GetReview(), CheckEvidenceNotConcrete)
	if o == nil || o.GetPassed() || !containsStr(o.GetRequestedIntents(), "get_commits") {
		t.Fatalf("concrete check: %+v", o)
	}
}

func TestAcceptConclusion(t *testing.T) {
	pins := incident(t, t0.Add(-10*time.Minute))
	good := &investigationv1.Diagnosis{RootCause: "deploy dep-7 introduced a nil pointer defect in api", Category: catCode, Confidence: 0.9,
		RootCauseEntity: "deployment/shop/api", Hypotheses: []*investigationv1.Hypothesis{codeHyp(0.9)}}
	plan := &investigationv1.TaskPlan{Actions: []*investigationv1.PlannedAction{{Intent: "query_prometheus"}, {Intent: "fetch_pod_logs"}, {Intent: "get_deploy_history"}}}
	all := []string{"query_prometheus", "fetch_pod_logs", "get_deploy_history"}
	rejectedPins := []*evidencev1.EvidencePin{newPin("bad", "fetch_pod_logs", nil, failedCall("timeout"))}
	rejectedPins[0].ValidationStatus = statusRejected

	cases := []struct {
		name       string
		cfg        func(*Config)
		session    string
		executed   []string
		proposed   *investigationv1.Diagnosis
		pins       []*evidencev1.EvidencePin
		rejections int32
		accepted   bool
		limit      bool
		missing    []string
		gap        string
		trip       investigationv1.Guardrail
	}{
		{name: "complete and supported", executed: all, proposed: good, pins: pins, accepted: true},
		{name: "planned tools missing", executed: all[:1], proposed: good, pins: pins, missing: []string{"fetch_pod_logs", "get_deploy_history"}},
		{name: "leading hypothesis cites no validated pin", executed: all, pins: rejectedPins, gap: "cites no validated pin",
			proposed: &investigationv1.Diagnosis{RootCause: "x", Category: catCode, Confidence: 0.9, Hypotheses: []*investigationv1.Hypothesis{{Id: "h", PinIds: []string{"bad"}}}}},
		{name: "category unsupported", executed: all, pins: pins, gap: "category unsupported",
			proposed: &investigationv1.Diagnosis{RootCause: "api ran out of memory", Category: catRes, Confidence: 0.9, Hypotheses: []*investigationv1.Hypothesis{{Id: "h", PinIds: []string{"m1"}}}}},
		{name: "unknown category", executed: all, pins: pins, gap: "category unsupported",
			proposed: &investigationv1.Diagnosis{RootCause: "something", Confidence: 0.9, Hypotheses: []*investigationv1.Hypothesis{{Id: "h", PinIds: []string{"m1"}}}}},
		{name: "culprit not in evidence", executed: all, pins: pins, gap: "culprit deployment/shop/ghost",
			proposed: &investigationv1.Diagnosis{RootCause: "ghost crashed", Category: catCode, RootCauseEntity: "deployment/shop/ghost", Confidence: 0.9, Hypotheses: []*investigationv1.Hypothesis{codeHyp(0.9)}}},
		{name: "no diagnosis", executed: all, gap: "no diagnosis proposed"},
		{name: "a confidence below the gate hands over with gaps", executed: all, pins: pins, gap: "culprit deployment/shop/ghost", accepted: true, trip: GuardrailConclude,
			proposed: &investigationv1.Diagnosis{RootCause: "ghost crashed", Category: catCode, RootCauseEntity: "deployment/shop/ghost", Confidence: 0.5, Hypotheses: []*investigationv1.Hypothesis{codeHyp(0.5)}}},
		{name: "the same at the gate is held to proof", executed: all, pins: pins, gap: "culprit deployment/shop/ghost", trip: GuardrailEvidence,
			proposed: &investigationv1.Diagnosis{RootCause: "ghost crashed", Category: catCode, RootCauseEntity: "deployment/shop/ghost", Confidence: 0.7, Hypotheses: []*investigationv1.Hypothesis{codeHyp(0.7)}}},
		{name: "open gaps within the configured allowance", cfg: func(c *Config) { c.MaxBlockingGaps = 1 }, executed: all, pins: pins, gap: "culprit deployment/shop/ghost", accepted: true,
			proposed: &investigationv1.Diagnosis{RootCause: "ghost crashed", Category: catCode, RootCauseEntity: "deployment/shop/ghost", Confidence: 0.9, Hypotheses: []*investigationv1.Hypothesis{codeHyp(0.9)}}},
		{name: "rejection limit reached", executed: all[:1], proposed: good, pins: pins, rejections: 2, accepted: false, limit: true, missing: []string{"fetch_pod_logs"}},
		{name: "rejection limit configurable", cfg: func(c *Config) { c.EvaluatorRejectionLimit = 1 }, executed: all[:1], proposed: good, pins: pins, accepted: false, limit: true},
		{name: "escalation hands over with gaps", executed: all, pins: pins, accepted: true,
			proposed: &investigationv1.Diagnosis{RootCause: "conflicting evidence", Status: investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_ESCALATED}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			muts := []func(*Config){}
			if tc.cfg != nil {
				muts = append(muts, tc.cfg)
			}
			s := newTestService(t, nil, muts...)
			cl := serve(t, s)
			resp, err := cl.AcceptConclusion(context.Background(), &criticv1.AcceptConclusionRequest{SessionId: tc.session, Plan: plan,
				ExecutedIntents: tc.executed, Proposed: tc.proposed, Pins: tc.pins, Rejections: tc.rejections})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetAccepted() != tc.accepted || resp.GetLimitReached() != tc.limit {
				t.Fatalf("accepted=%t limit=%t, want %t/%t; reason %s; gaps %v", resp.GetAccepted(), resp.GetLimitReached(), tc.accepted, tc.limit, resp.GetReason(), resp.GetBlockingGaps())
			}
			for _, m := range tc.missing {
				if !containsStr(resp.GetMissingIntents(), m) {
					t.Errorf("missing %v lacks %s", resp.GetMissingIntents(), m)
				}
			}
			if tc.gap != "" && !strings.Contains(strings.Join(resp.GetBlockingGaps(), "|"), tc.gap) {
				t.Errorf("gaps %v lack %q", resp.GetBlockingGaps(), tc.gap)
			}
			if resp.GetLimits().GetEvaluatorRejectionLimit() != int32(s.cfg.EvaluatorRejectionLimit) || resp.GetLimits().MaxBlockingGaps == nil {
				t.Errorf("live limits not reported: %v", resp.GetLimits())
			}
			if tc.accepted && !tc.limit && tc.proposed.GetStatus() == 0 && tc.proposed.GetConfidence() >= s.cfg.ConcludeConfidence && len(resp.GetBlockingGaps()) > s.cfg.MaxBlockingGaps {
				t.Errorf("accepted with gaps %v", resp.GetBlockingGaps())
			}
			wantHandover := tc.accepted && len(resp.GetBlockingGaps()) > s.cfg.MaxBlockingGaps
			if resp.GetHandover() != wantHandover || (wantHandover && resp.GetHandoverStatus() == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_UNSPECIFIED) {
				t.Errorf("handover=%t (%v), want %t", resp.GetHandover(), resp.GetHandoverStatus(), wantHandover)
			}
			if tc.trip != 0 && hasTrip(resp.GetTrips(), tc.trip) == nil {
				t.Errorf("no %s trip: %v", tc.trip, resp.GetTrips())
			}
			tr := hasTrip(resp.GetTrips(), GuardrailRejectionLimit)
			if tc.limit != (tr != nil) {
				t.Errorf("rejection trip %v, want %t", tr, tc.limit)
			}
			if tr != nil && (tr.GetOwner() != "critic" || tr.GetValue() < tr.GetLimit()) {
				t.Errorf("trip %+v", tr)
			}
		})
	}
}

func TestAcceptConclusionIsStateless(t *testing.T) {
	s := newTestService(t, nil)
	req := &criticv1.AcceptConclusionRequest{SessionId: "cnt", Proposed: &investigationv1.Diagnosis{RootCause: "x", Confidence: 0.9}}
	for i := 0; i < 3; i++ {
		resp, err := s.AcceptConclusion(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetAccepted() || resp.GetLimitReached() {
			t.Fatalf("call %d: the caller's count (0) decides, got accepted=%t limit=%t", i, resp.GetAccepted(), resp.GetLimitReached())
		}
		if tr := hasTrip(resp.GetTrips(), GuardrailEvidence); tr == nil || tr.GetOwner() != "critic" {
			t.Errorf("evidence sufficiency trip missing: %v", resp.GetTrips())
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mut   func(*Config)
		field string
	}{
		{func(c *Config) { c.Threshold = 0 }, "critic.threshold"},
		{func(c *Config) { c.Threshold = 1.5 }, "critic.threshold"},
		{func(c *Config) { c.MaxRounds = 0 }, "critic.max-rounds"},
		{func(c *Config) { c.EvaluatorRejectionLimit = 0 }, "critic.evaluator-rejection-limit"},
		{func(c *Config) { c.MinIndependentSources = 0 }, "critic.min-sources"},
		{func(c *Config) { c.ChangeWindow = 0 }, "critic.change-window"},
		{func(c *Config) { c.MaxSessions = 0 }, "critic.max-sessions"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v", tc.field, err)
		}
		if _, err := New(c, Deps{}); err == nil {
			t.Errorf("%s: New accepted an invalid config", tc.field)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Threshold != 0.80 || c.MaxRounds != 3 || c.EvaluatorRejectionLimit != 3 {
		t.Errorf("defaults %+v", c)
	}
}

func TestAccusedResolution(t *testing.T) {
	s := newTestService(t, nil)
	win := &evidencev1.TimeWindow{Start: timestamppb.New(t0.Add(-time.Hour)), End: timestamppb.New(t0)}
	logs := func(id string, at ...time.Time) *evidencev1.EvidencePin {
		var lines []facts.LogLine
		for _, a := range at {
			lines = append(lines, facts.LogLine{Level: "ERROR", Service: "api", Timestamp: tp(a), Message: "upstream 203.0.113.9:443 returned 502: x509: certificate has expired"})
		}
		p := validated(newPin(id, "fetch_pod_logs", md(t, facts.KeyLogLines, lines)), roleCascading)
		p.TimeWindow = win
		return p
	}
	cases := []struct {
		name   string
		hyp    *investigationv1.Hypothesis
		pins   []*evidencev1.EvidencePin
		passed bool
		detail string
	}{
		{name: "a commit is judged by its service's metrics",
			hyp:  &investigationv1.Hypothesis{Id: "h", Category: catCode, Entity: "commit/a1b2c3d4e5f6a7b8", PinIds: []string{"m1", "c1"}, Confidence: 0.8},
			pins: incident(t, t0.Add(-10*time.Minute)), passed: true, detail: "metrics of a1b2c3d4e5f6a7b8/api are abnormal"},
		{name: "an external dependency is judged by errors naming it",
			hyp:  &investigationv1.Hypothesis{Id: "h", Category: catDep, Entity: "service/203.0.113.9", PinIds: []string{"l"}, Confidence: 0.8},
			pins: []*evidencev1.EvidencePin{logs("l", t0.Add(-30*time.Minute))}, passed: true, detail: "errors name it"},
		{name: "healthy with errors still logged at the end of the window",
			hyp:  &investigationv1.Hypothesis{Id: "h", Category: catHealth, Entity: "deployment/shop/api", PinIds: []string{"l"}, Confidence: 0.8},
			pins: []*evidencev1.EvidencePin{logs("l", t0.Add(-3*time.Minute), t0.Add(-2*time.Minute), t0.Add(-time.Minute))}, detail: "still logs errors"},
		{name: "healthy after errors that stopped long before the end",
			hyp: &investigationv1.Hypothesis{Id: "h", Category: catHealth, Entity: "deployment/shop/api", PinIds: []string{"l", "ok"}, Confidence: 0.8},
			pins: []*evidencev1.EvidencePin{logs("l", t0.Add(-50*time.Minute), t0.Add(-49*time.Minute), t0.Add(-48*time.Minute)),
				validated(newPin("ok", "check_pod_status", healthyPod(t, "api-7d9f8b6c5-abcde")), roleInfo)}, passed: true, detail: "healthy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.review(&investigationv1.HypothesisSet{Hypotheses: []*investigationv1.Hypothesis{tc.hyp}}, nil, 1, tc.pins, nil, nil)
			o := objection(resp.GetReview(), CheckAccusedMetricsNormal)
			if o.GetPassed() != tc.passed || !strings.Contains(o.GetDetail(), tc.detail) {
				t.Fatalf("objection %+v", o)
			}
		})
	}
}

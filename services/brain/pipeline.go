package brain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/metrics"
)

// Pipeline stage names, in order (the record's stages and the checkpoint
// use them).
const (
	stageResolve  = "resolve_integrations"
	stageExtract  = "extract_alert"
	stagePlan     = "plan_actions"
	stageGather   = "gather_evidence"
	stageDiagnose = "diagnose"
	stageDeliver  = "deliver"
)

var pipelineStages = []string{stageResolve, stageExtract, stagePlan, stageGather, stageDiagnose, stageDeliver}

// errNoise short-circuits the pipeline after extract_alert.
var errNoise = errors.New("noise")

// errDegraded marks a stage that ended with a degraded result (model failure).
var errDegraded = errors.New("degraded")

// runPipeline runs the pipeline stages that have not completed yet,
// checkpointing after each: a redelivered investigation resumes at the first
// stage its checkpoint does not mark done. It returns an error only when the
// state could not be saved or ctx ended (the work item is then redelivered).
func (s *Service) runPipeline(ctx context.Context, st *invState) error {
	sid, invID := st.rec.GetSessionId(), st.rec.GetInvestigationId()
	st.runStart = s.now()
	st.baseWallMs = st.rec.GetWallMs()
	resumed := st.rec.GetState() == stateRunning
	if resumed {
		// The checkpoint may hold lean pins: re-read the full ones.
		st.refreshPins(ctx, s)
	}
	st.rec.State = stateRunning
	if st.rec.Guardrails == nil {
		st.rec.Guardrails = s.guardrails()
	}
	if st.rc == nil {
		st.rc = routerContext(st.rec.GetAlert(), sid, invID, nil)
	}
	if err := s.checkpoint(ctx, st); err != nil {
		return err
	}
	s.setSessionState(ctx, st, sessRunning)
	msg := "investigation started"
	if !resumed {
		metrics.InvestigationsStarted.Inc()
	}
	metrics.ActiveInvestigations.Inc()
	defer metrics.ActiveInvestigations.Dec()
	if resumed {
		msg = "investigation resumed from its checkpoint"
	}
	s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STARTED, "", msg,
		map[string]any{"resumed": resumed, "model": s.modelName()})

	for _, name := range pipelineStages {
		if st.done[name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if name == stageDeliver {
			// Never deliver a silent "completed" built on nothing.
			if stage, ferr := emptyFailure(st); ferr != nil {
				return s.fail(ctx, st, stage, ferr)
			}
		}
		start := s.now()
		detail, err := s.runStageWithRetry(ctx, name, st)
		if ctx.Err() != nil {
			// Interrupted: the stage reruns from its checkpointed progress on redelivery.
			_ = s.checkpoint(ctx, st)
			return ctx.Err()
		}
		if isDependencyFailure(err) {
			// The dependency stayed unavailable through every retry.
			st.rec.Stages = append(st.rec.Stages, &investigationv1.StageRecord{
				Name: name, StartedAt: timestamppb.New(start), DurationMs: s.now().Sub(start).Milliseconds(), Status: "failed", Detail: err.Error(),
			})
			return s.fail(ctx, st, name, err)
		}
		status := "ok"
		switch {
		case errors.Is(err, errNoise):
			status = "noise"
		case errors.Is(err, errDegraded):
			status = "degraded"
		case err != nil:
			status = "failed"
			detail = err.Error()
			s.log.WarnContext(ctx, "stage failed", "stage", name, "investigation_id", invID, "err", err)
		}
		st.rec.Stages = append(st.rec.Stages, &investigationv1.StageRecord{
			Name: name, StartedAt: timestamppb.New(start), DurationMs: s.now().Sub(start).Milliseconds(), Status: status, Detail: detail,
		})
		st.done[name] = true
		s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_STAGE, name, status+": "+detail,
			map[string]any{"status": status, "duration_ms": s.now().Sub(start).Milliseconds()})
		if errors.Is(err, errNoise) {
			for _, rest := range pipelineStages {
				st.done[rest] = true
			}
			break
		}
		if err := s.checkpoint(ctx, st); err != nil {
			s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_FAILED, name,
				"checkpoint failed: "+err.Error(), nil)
			metrics.ObserveInvestigation(metrics.OutcomeFailed, metrics.EnumLabel(st.rec.GetDiagnosis().GetCategory().String(), "ROOT_CAUSE_CATEGORY_"), s.now().Sub(st.runStart))
			return err
		}
	}
	return s.finish(ctx, st)
}

func (s *Service) runStage(ctx context.Context, name string, st *invState) (string, error) {
	switch name {
	case stageResolve:
		return s.stageResolveIntegrations(ctx, st)
	case stageExtract:
		return s.stageExtractAlert(ctx, st)
	case stagePlan:
		return s.stagePlanActions(ctx, st)
	case stageGather:
		if s.model != nil {
			return s.modelLoop(ctx, st)
		}
		return s.rulesLoop(ctx, st)
	case stageDiagnose:
		return s.stageDiagnose(ctx, st)
	case stageDeliver:
		return s.stageDeliver(ctx, st)
	}
	return "", fmt.Errorf("unknown stage %q", name)
}

func (s *Service) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.CallTimeout)
}

// ---- stage 1: resolve_integrations ----

func (s *Service) stageResolveIntegrations(ctx context.Context, st *invState) (string, error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Tools.ResolveIntegrations(cctx, &toolsv1.ResolveIntegrationsRequest{})
	if err != nil {
		return "", unavailable("tools", fmt.Errorf("tools.ResolveIntegrations: %w", err))
	}
	var avail, unavail []string
	for _, in := range resp.GetIntegrations() {
		if in.GetAvailable() {
			avail = append(avail, in.GetName())
		} else {
			unavail = append(unavail, in.GetName()+" ("+in.GetReason()+")")
		}
	}
	st.rec.Integrations = avail
	detail := fmt.Sprintf("%d available: %s", len(avail), strings.Join(avail, ", "))
	if len(unavail) > 0 {
		detail += "; unavailable: " + strings.Join(unavail, ", ")
	}
	return detail, nil
}

// ---- stage 2: extract_alert ----

func (s *Service) stageExtractAlert(ctx context.Context, st *invState) (string, error) {
	a := st.rec.GetAlert()
	if a == nil {
		return "", errors.New("the investigation has no alert")
	}
	if a.GetIsNoise() {
		st.rec.Diagnosis = &investigationv1.Diagnosis{
			RootCause: "Not investigated: " + a.GetNoiseReason(), Status: investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE,
			StopReason: "noise: " + a.GetNoiseReason(),
		}
		return a.GetNoiseReason(), errNoise
	}
	scope, err := s.resolveScope(ctx, st)
	if err != nil {
		return "", err
	}
	a = st.rec.GetAlert()
	parts := []string{fmt.Sprintf("%s [%s] from %s", a.GetAlertName(), firstNonEmpty(a.GetSeverity(), "unknown severity"), firstNonEmpty(a.GetAlertSource(), a.GetFormat().String()))}
	if a.GetNamespace() != "" || a.GetService() != "" {
		parts = append(parts, "namespace="+a.GetNamespace()+" service="+a.GetService())
	}
	if a.GetResourceName() != "" {
		parts = append(parts, a.GetResourceKind()+"/"+a.GetResourceName())
	}
	if w := a.GetIncidentWindow(); w != nil {
		parts = append(parts, "window "+w.GetStart().AsTime().Format(time.RFC3339)+" .. "+w.GetEnd().AsTime().Format(time.RFC3339))
	}
	if scope != "" {
		parts = append(parts, scope)
	}
	return strings.Join(parts, "; "), nil
}

// ---- stage 3: plan_actions ----

func (s *Service) stagePlanActions(ctx context.Context, st *invState) (string, error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Router.PlanActions(cctx, &routerv1.PlanActionsRequest{
		SessionId: st.rec.GetSessionId(), Alert: st.rec.GetAlert(),
	})
	if err != nil {
		if isUnavailable(err) {
			return "", unavailable("router", fmt.Errorf("router.PlanActions: %w", err))
		}
		st.rec.Plan = &investigationv1.TaskPlan{Rationale: "plan unavailable: " + err.Error(), Fallback: true}
		return "", fmt.Errorf("router.PlanActions: %w", err)
	}
	s.tripsFrom(ctx, st, resp.GetTrips())
	limitsFrom(st, resp.GetLimits())
	plan := proto.CloneOf(resp.GetPlan())
	if plan == nil {
		plan = &investigationv1.TaskPlan{}
	}
	if st.isSub() {
		// A sub-investigation never re-dispatches another one (no recursion).
		kept := plan.Actions[:0]
		for _, a := range plan.GetActions() {
			if a.GetIntent() != intentReinvestigate {
				kept = append(kept, a)
			}
		}
		plan.Actions = kept
	}
	st.rec.Plan = plan
	intents := make([]string, 0, len(plan.GetActions()))
	for _, a := range plan.GetActions() {
		intents = append(intents, a.GetIntent())
	}
	detail := fmt.Sprintf("%d actions: %s", len(intents), strings.Join(intents, ", "))
	if plan.GetFallback() {
		detail += " (fallback ranking)"
	}
	return detail, nil
}

const intentReinvestigate = string(intent.ReinvestigateService)

func (st *invState) isSub() bool {
	return st.rec.GetParentSessionId() != ""
}

// ---- stage 4: gather_evidence: the rules loop (loop_rules.go) or the
// model loop (loop_model.go), both over the loop core (round.go) ----

// ---- stage 5: diagnose ----

func (s *Service) stageDiagnose(ctx context.Context, st *invState) (string, error) {
	st.refreshPins(ctx, s)
	in, res, aerr := s.evidence(ctx, st)
	var d *investigationv1.Diagnosis
	if aerr != nil {
		d = &investigationv1.Diagnosis{
			RootCause: "Analysis failed: " + aerr.Error(), Category: investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN,
			Unknowns: []string{"the evidence could not be analysed: " + aerr.Error()},
		}
	} else {
		if rr := st.lastReranked(); len(rr) > 0 {
			res.Hypotheses = rr
		}
		d = analysis.Diagnose(in, res)
		if d == nil {
			d = &investigationv1.Diagnosis{Category: investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN}
		}
	}
	if md := st.modelDiagnosis(); md != nil {
		d = mergeModelDiagnosis(d, md)
	}
	st.applyOutcome(d)
	st.rec.Diagnosis = d
	s.publishLifecycle(ctx, st.rec.GetSessionId(), st.rec.GetInvestigationId(), evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_DIAGNOSED,
		stageDiagnose, d.GetRootCause(), map[string]any{
			"status": d.GetStatus().String(), "category": d.GetCategory().String(), "entity": d.GetRootCauseEntity(),
			"confidence": d.GetConfidence(), "stop_reason": d.GetStopReason(),
		})
	detail := fmt.Sprintf("%s %s (%.2f): %s", d.GetStatus(), categoryName(d.GetCategory()), d.GetConfidence(), truncateRunes(d.GetRootCause(), 160))
	if aerr != nil {
		return detail, fmt.Errorf("analysis: %w", aerr)
	}
	return detail, nil
}

// lastReranked returns the critic's ranking of the last hypothesis round.
func (st *invState) lastReranked() []*investigationv1.Hypothesis {
	rounds := st.rec.GetHypothesisRounds()
	if len(rounds) == 0 {
		return nil
	}
	return rounds[len(rounds)-1].GetHypotheses()
}

// applyOutcome sets the loop's verdict on the diagnosis.
func (st *invState) applyOutcome(d *investigationv1.Diagnosis) {
	status := investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED
	if v, ok := investigationv1.DiagnosisStatus_value[st.loop.Status]; ok && v != 0 {
		status = investigationv1.DiagnosisStatus(v)
	}
	if st.loop.Degraded {
		status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_DEGRADED
	}
	d.Status = status
	d.StopReason = st.loop.StopReason
	if st.loop.Degraded && st.loop.DegradedReason != "" {
		d.StopReason = "degraded: " + st.loop.DegradedReason
	}
	if st.review != nil {
		d.CriticReview = st.review
	}
	for _, u := range st.loop.Unknowns {
		d.Unknowns = appendUnique(d.Unknowns, u)
	}
	if status == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW && len(d.Unknowns) == 0 {
		d.Unknowns = append(d.Unknowns, "the investigation stopped before the conclusion was accepted: "+st.loop.StopReason)
	}
}

// ---- stage 6: deliver ----

func (s *Service) stageDeliver(ctx context.Context, st *invState) (string, error) {
	s.finalizeRecord(ctx, st)
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	resp, err := s.clients.Delivery.DeliverReport(cctx, &deliveryv1.DeliverReportRequest{
		SessionId: st.rec.GetSessionId(), Record: st.rec, DryRun: s.cfg.DryRunDelivery,
	})
	if err != nil {
		return "", unavailable("delivery", fmt.Errorf("delivery.DeliverReport: %w", err))
	}
	s.tripsFrom(ctx, st, resp.GetTrips())
	limitsFrom(st, resp.GetLimits())
	r := resp.GetReport()
	st.report = r.GetMarkdown()
	st.silent = r.GetSilent()
	var ok, failed []string
	for _, a := range r.GetAttempts() {
		if a.GetOk() {
			ok = append(ok, a.GetDestination())
		} else {
			failed = append(failed, a.GetDestination()+" ("+a.GetError()+")")
		}
	}
	detail := fmt.Sprintf("report %d chars, silent=%v, deduplicated=%v", len(st.report), r.GetSilent(), r.GetDeduplicated())
	if len(ok) > 0 {
		detail += "; delivered to " + strings.Join(ok, ", ")
	}
	if len(failed) > 0 {
		detail += "; failed: " + strings.Join(failed, ", ")
	}
	return detail, nil
}

// finish closes the record, updates the session and publishes COMPLETED.
func (s *Service) finish(ctx context.Context, st *invState) error {
	s.finalizeRecord(ctx, st)
	if st.rec.GetDiagnosis().GetStatus() == investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE {
		st.rec.State = stateNoise
	} else {
		st.rec.State = stateCompleted
	}
	st.rec.FinishedAt = timestamppb.New(s.now())
	sessState := sessCompleted
	switch {
	case st.rec.GetState() == stateNoise:
		sessState = sessNoise
	case st.silent:
		sessState = sessSilent
	}
	s.setSessionState(ctx, st, sessState)
	d := st.rec.GetDiagnosis()
	kind := evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_COMPLETED
	if st.rec.GetState() == stateNoise {
		kind = evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_NOISE
	}
	s.publishLifecycle(ctx, st.rec.GetSessionId(), st.rec.GetInvestigationId(), kind, "",
		fmt.Sprintf("%s: %s", d.GetStatus(), d.GetRootCause()),
		map[string]any{"status": d.GetStatus().String(), "confidence": d.GetConfidence(), "loops": st.rec.GetLoops(),
			"tool_calls": len(st.rec.GetToolCalls()), "wall_ms": st.rec.GetWallMs(), "silent": st.silent})
	metrics.ObserveInvestigation(metrics.EnumLabel(d.GetStatus().String(), "DIAGNOSIS_STATUS_"),
		metrics.EnumLabel(d.GetCategory().String(), "ROOT_CAUSE_CATEGORY_"), time.Duration(st.rec.GetWallMs())*time.Millisecond)
	// The final checkpoint comes last: whoever waits for it sees every event.
	if err := s.checkpoint(ctx, st); err != nil {
		return err
	}
	s.markClosed(ctx, st.rec.GetInvestigationId())
	return nil
}

// finalizeRecord fills the derived fields of the record.
func (s *Service) finalizeRecord(ctx context.Context, st *invState) {
	st.rec.WallMs = st.wallMs(s.now())
	st.rec.EvidenceSources = evidenceSources(st.pins)
	var tokens int64
	for _, m := range st.rec.GetModelCalls() {
		tokens += m.GetPromptTokens() + m.GetCompletionTokens()
	}
	st.rec.Tokens = tokens
	if store, err := s.store(ctx); err == nil {
		if e, _, err := store.getSession(ctx, st.rec.GetSessionId()); err == nil {
			st.rec.AttachedAlerts = e.GetSession().GetAttachedAlerts()
		}
	}
}

// evidenceSources is the union of the sources of pins that returned data.
func evidenceSources(pins []*evidencev1.EvidencePin) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range pins {
		if p.GetNoData() || (!p.GetSuccess() && p.GetError() != "") {
			continue
		}
		for _, src := range p.GetSources() {
			if src != "" && !seen[src] {
				seen[src] = true
				out = append(out, src)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (s *Service) setSessionState(ctx context.Context, st *invState, state string) {
	store, err := s.store(ctx)
	if err != nil {
		return
	}
	d := st.rec.GetDiagnosis()
	_, err = store.updateSession(ctx, st.rec.GetSessionId(), func() *sessionEntry {
		return newSessionEntry(st.rec.GetSessionId(), st.rec.GetAlert(), st.rc, s.now())
	}, func(se *sessionEntry) {
		addInvestigation(se, st.rec.GetInvestigationId())
		// A sub-investigation inside its parent's session does not decide the session's state.
		owner := !st.isSub() || len(se.GetInvestigationIds()) <= 1
		if owner {
			se.Session.State = state
		}
		if owner && d != nil && state != sessRunning {
			se.Session.Confidence = d.GetConfidence()
			se.Session.Category = d.GetCategory()
			se.Session.RootCause = d.GetRootCause()
		}
		if n := int32(len(st.pins)); n > se.Session.Pins {
			se.Session.Pins = n
		}
	})
	if err != nil {
		s.log.WarnContext(ctx, "session update failed", "session_id", st.rec.GetSessionId(), "err", err)
	}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func categoryName(c investigationv1.RootCauseCategory) string {
	if c == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED {
		return "unknown"
	}
	return strings.ToLower(strings.TrimPrefix(c.String(), "ROOT_CAUSE_CATEGORY_"))
}

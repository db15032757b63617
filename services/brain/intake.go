package brain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/server"
)

// Submit statuses (SubmitAlertResponse.status).
const (
	statusQueued    = "queued"
	statusRunning   = "running"
	statusCompleted = "completed"
	statusAttached  = "attached"
	statusNoise     = "noise"
	statusResolved  = "resolved"
	statusFailed    = "failed"
)

// finalStatus is the submit status of a final investigation.
func finalStatus(rec *investigationv1.InvestigationRecord) string {
	if rec.GetState() == stateFailed {
		return statusFailed
	}
	return statusCompleted
}

// SubmitAlert parses, de-duplicates and queues an alert.
func (s *Service) SubmitAlert(ctx context.Context, req *brainv1.SubmitAlertRequest) (*brainv1.SubmitAlertResponse, error) {
	if req.GetPayload() == nil {
		return nil, status.Error(codes.InvalidArgument, "payload is required: the alert body as a JSON object")
	}
	raw, err := protojson.Marshal(req.GetPayload())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "payload: %v", err)
	}
	alerts, err := intake.Parse(raw, req.GetSource())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(alerts) > s.cfg.MaxAlertsPerRequest {
		// Refused whole, before anything is stored or queued.
		return nil, server.TooLarge(fmt.Sprintf("the request carries %d alerts; the limit is %d per request (-brain.max-alerts-per-request): split it, or group alerts at the source (Alertmanager group_by)",
			len(alerts), s.cfg.MaxAlertsPerRequest))
	}
	if _, err := s.store(ctx); err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	alerts = groupIncident(alerts)
	primary := 0
	for i, a := range alerts {
		if !a.GetIsNoise() {
			primary = i
			break
		}
	}
	var out *brainv1.SubmitAlertResponse
	for i, a := range alerts {
		resp, err := s.submitOne(ctx, a, req.GetSessionId(), req.GetWait() && i == primary)
		if err != nil {
			return nil, err
		}
		if i == primary {
			out = resp
		}
	}
	return out, nil
}

func (s *Service) submitOne(ctx context.Context, a *investigationv1.Alert, sessionID string, wait bool) (*brainv1.SubmitAlertResponse, error) {
	store, err := s.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	now := s.now()
	fp := a.GetFingerprint()
	if a.GetResolved() {
		// A resolution of an open incident: attach it there. One that
		// ends no open incident is investigated below (why it fired,
		// whether anything still fails).
		if e, ok, err := store.lookupFingerprint(ctx, fp, now, s.cfg.DedupWindow); err == nil && ok {
			s.publishLifecycle(ctx, e.SessionID, e.InvestigationID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_ATTACHED,
				"", "resolved: "+a.GetTitle(), map[string]any{"fingerprint": fp, "resolved": true})
			return &brainv1.SubmitAlertResponse{SessionId: e.SessionID, InvestigationId: e.InvestigationID, Fingerprint: fp,
				Attached: true, Noise: true, Alert: a, Status: statusResolved}, nil
		}
	}
	if a.GetIsNoise() {
		sid := sessionID
		if sid == "" {
			sid = "noise-" + strings.TrimPrefix(s.deriveSessionID(fp, now), "inc-")
		}
		st, err := s.recordNoise(ctx, a, sid, investigationID(sid, fp, "noise"))
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "record noise: %v", err)
		}
		return &brainv1.SubmitAlertResponse{SessionId: sid, InvestigationId: st.rec.GetInvestigationId(), Fingerprint: fp,
			Noise: true, Alert: a, Status: statusNoise, Diagnosis: st.rec.GetDiagnosis()}, nil
	}

	sid := sessionID
	if sid == "" {
		sid = s.deriveSessionID(fp, now)
	}
	claim, err := store.claimFingerprint(ctx, fp, now, s.cfg.DedupWindow, s.cfg.FailedDedupWindow, func(prev *fpEntry) fpEntry {
		return s.freshEntry(sid, fp, now, prev)
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "fingerprint dedup: %v", err)
	}
	if claim.attached {
		e := claim.entry
		if _, err := store.updateSession(ctx, e.SessionID, func() *sessionEntry { return newSessionEntry(e.SessionID, a, nil, now) },
			func(se *sessionEntry) { se.Session.AttachedAlerts++ }); err != nil {
			return nil, status.Errorf(codes.Unavailable, "attach alert: %v", err)
		}
		s.publishLifecycle(ctx, e.SessionID, e.InvestigationID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_ATTACHED,
			"", "alert attached to the open investigation: "+a.GetTitle(), map[string]any{"fingerprint": fp, "count": e.Count})
		resp := &brainv1.SubmitAlertResponse{SessionId: e.SessionID, InvestigationId: e.InvestigationID, Fingerprint: fp,
			Attached: true, Alert: a, Status: statusAttached}
		if wait {
			fin, err := s.waitFinal(ctx, e.InvestigationID)
			if err != nil {
				return nil, waitErr(err)
			}
			resp.Diagnosis = fin.rec.GetDiagnosis()
		}
		return resp, nil
	}

	invID := claim.entry.InvestigationID
	st := s.newState(a, sid, invID, "", nil)
	rollback := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = store.fingerprints.Delete(dctx, fp)
		_ = store.records.Delete(dctx, invID)
		_ = store.open.Delete(dctx, invID)
	}
	// Intake is atomic through the open index: indexed first, then saved,
	// then queued; a failure rolls every step back, and a crash in between
	// leaves an index entry the sweeper resolves (re-queues the saved
	// investigation, or releases the fingerprint of one never saved).
	if err := s.markOpen(ctx, store, invID, sid, fp); err != nil {
		rollback()
		return nil, status.Errorf(codes.Unavailable, "index investigation: %v", err)
	}
	if _, err := store.updateSession(ctx, sid, func() *sessionEntry { return newSessionEntry(sid, a, st.rc, now) },
		func(se *sessionEntry) { addInvestigation(se, invID) }); err != nil {
		rollback()
		return nil, status.Errorf(codes.Unavailable, "create session: %v", err)
	}
	if err := s.checkpoint(ctx, st); err != nil {
		rollback()
		return nil, status.Errorf(codes.Unavailable, "create investigation: %v", err)
	}
	s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED, "",
		a.GetTitle(), map[string]any{"fingerprint": fp, "format": a.GetFormat().String(), "severity": a.GetSeverity()})
	resp := &brainv1.SubmitAlertResponse{SessionId: sid, InvestigationId: invID, Fingerprint: fp, Alert: a, Status: statusQueued}
	if wait && s.bus == nil {
		if err := s.runPipeline(ctx, st); err != nil {
			return nil, waitErr(err)
		}
		resp.Status, resp.Diagnosis = finalStatus(st.rec), st.rec.GetDiagnosis()
		return resp, nil
	}
	if err := s.enqueue(ctx, workItem{SessionID: sid, InvestigationID: invID}, 0); err != nil {
		rollback()
		return nil, status.Errorf(codes.Unavailable, "queue investigation: %v", err)
	}
	if wait {
		fin, err := s.waitFinal(ctx, invID)
		if err != nil {
			return nil, waitErr(err)
		}
		resp.Status, resp.Diagnosis = finalStatus(fin.rec), fin.rec.GetDiagnosis()
	}
	return resp, nil
}

func waitErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "cancelled while waiting for the diagnosis")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "deadline exceeded while waiting for the diagnosis; the investigation continues")
	}
	return status.Errorf(codes.Internal, "investigation: %v", err)
}

func newSessionEntry(sid string, a *investigationv1.Alert, rc *evidencev1.RouterContext, now time.Time) *sessionEntry {
	return &sessionEntry{
		Session: &brainv1.SessionSummary{
			SessionId: sid, Title: a.GetTitle(), State: sessReceived, CreatedAt: timestamppb.New(now),
			Namespace: a.GetNamespace(), Service: a.GetService(),
		},
		Alert:   a,
		Context: rc,
	}
}

func addInvestigation(se *sessionEntry, invID string) {
	for _, id := range se.InvestigationIds {
		if id == invID {
			return
		}
	}
	se.InvestigationIds = append(se.InvestigationIds, invID)
}

// Investigate runs one investigation of alert to completion in this process
// (no queue, no de-duplication) and returns its record. The CLI and the
// evaluation use it. An empty sessionID is derived from the fingerprint.
func (s *Service) Investigate(ctx context.Context, alert *investigationv1.Alert, sessionID string) (*investigationv1.InvestigationRecord, error) {
	if alert == nil {
		return nil, errors.New("brain: investigate: nil alert")
	}
	a := proto.CloneOf(alert)
	if a.GetFingerprint() == "" {
		a.Fingerprint = intake.Fingerprint(a)
	}
	now := s.now()
	sid := sessionID
	if sid == "" {
		sid = s.deriveSessionID(a.GetFingerprint(), now)
	}
	invID := investigationID(sid, a.GetFingerprint(), now.Format(time.RFC3339Nano))
	if a.GetIsNoise() {
		st, err := s.recordNoise(ctx, a, sid, invID)
		if err != nil {
			return nil, fmt.Errorf("brain: investigate: %w", err)
		}
		return st.rec, nil
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, err
	}
	st := s.newState(a, sid, invID, "", nil)
	if _, err := store.updateSession(ctx, sid, func() *sessionEntry { return newSessionEntry(sid, a, st.rc, now) },
		func(se *sessionEntry) { addInvestigation(se, invID) }); err != nil {
		return nil, fmt.Errorf("brain: investigate: %w", err)
	}
	s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED, "", a.GetTitle(),
		map[string]any{"fingerprint": a.GetFingerprint()})
	if err := s.runPipeline(ctx, st); err != nil {
		return st.rec, fmt.Errorf("brain: investigate: %w", err)
	}
	return st.rec, nil
}

// StartInvestigation starts an investigation of a service (re_investigate_service).
func (s *Service) StartInvestigation(ctx context.Context, req *brainv1.StartInvestigationRequest) (*brainv1.StartInvestigationResponse, error) {
	sid := strings.TrimSpace(req.GetSessionId())
	if sid == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	svc, ns := strings.TrimSpace(req.GetService()), strings.TrimSpace(req.GetNamespace())
	if svc == "" && ns == "" {
		return nil, status.Error(codes.InvalidArgument, "service or namespace is required: name what to investigate")
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	parent := strings.TrimSpace(req.GetParentSessionId())
	if parent == "" {
		parent = sid
	}
	invID := strings.TrimSpace(req.GetInvestigationId())
	if invID == "" {
		invID = investigationID("sub", sid, parent, ns, svc)
	}
	if existing, err := store.loadState(ctx, invID); err == nil {
		// Idempotent: the same request again returns the same investigation.
		resp := &brainv1.StartInvestigationResponse{SessionId: existing.rec.GetSessionId(), InvestigationId: invID, Status: existing.rec.GetState()}
		if req.GetWait() && !isFinal(existing.rec.GetState()) {
			fin, err := s.waitFinal(ctx, invID)
			if err != nil {
				return nil, waitErr(err)
			}
			existing = fin
		}
		resp.Status, resp.Diagnosis = existing.rec.GetState(), existing.rec.GetDiagnosis()
		return resp, nil
	} else if !errors.Is(err, errNotFound) {
		return nil, status.Errorf(codes.Unavailable, "load investigation: %v", err)
	}
	now := s.now()
	a := serviceAlert(svc, ns, req.GetContext())
	st := s.newState(a, sid, invID, parent, req.GetContext())
	if _, err := store.updateSession(ctx, sid, func() *sessionEntry { return newSessionEntry(sid, a, st.rc, now) },
		func(se *sessionEntry) { addInvestigation(se, invID) }); err != nil {
		return nil, status.Errorf(codes.Unavailable, "session: %v", err)
	}
	if !req.GetWait() {
		if err := s.markOpen(ctx, store, invID, sid, ""); err != nil {
			return nil, status.Errorf(codes.Unavailable, "index investigation: %v", err)
		}
	}
	if err := s.checkpoint(ctx, st); err != nil {
		return nil, status.Errorf(codes.Unavailable, "create investigation: %v", err)
	}
	resp := &brainv1.StartInvestigationResponse{SessionId: sid, InvestigationId: invID, Status: statusQueued}
	if req.GetWait() {
		// Inline: a caller waiting inside another investigation must not wait
		// on the shared queue that investigation occupies.
		if err := s.runPipeline(ctx, st); err != nil {
			return nil, waitErr(err)
		}
		resp.Status, resp.Diagnosis = st.rec.GetState(), st.rec.GetDiagnosis()
		return resp, nil
	}
	if err := s.enqueue(ctx, workItem{SessionID: sid, InvestigationID: invID}, 0); err != nil {
		_ = store.records.Delete(context.WithoutCancel(ctx), invID)
		_ = store.open.Delete(context.WithoutCancel(ctx), invID)
		return nil, status.Errorf(codes.Unavailable, "queue investigation: %v", err)
	}
	return resp, nil
}

// serviceAlert is the synthetic alert of a service investigation.
func serviceAlert(svc, ns string, rc *evidencev1.RouterContext) *investigationv1.Alert {
	target := svc
	if target == "" {
		target = "namespace " + ns
	}
	a := &investigationv1.Alert{
		Format:       investigationv1.AlertFormat_ALERT_FORMAT_GENERIC,
		AlertName:    "ServiceInvestigation",
		Title:        "Investigate " + target,
		Severity:     "warning",
		AlertSource:  "rcamesh",
		State:        "firing",
		Namespace:    ns,
		Service:      svc,
		Labels:       map[string]string{"alertname": "ServiceInvestigation"},
		Annotations:  map[string]string{"summary": "Investigation of " + target + " requested from another investigation"},
		Summary:      "Investigation of " + target + " requested from another investigation",
		ResourceKind: "service",
		ResourceName: svc,
	}
	if svc != "" {
		a.Labels["service"] = svc
	}
	if ns != "" {
		a.Labels["namespace"] = ns
	}
	if rc.GetTimeWindow() != nil {
		a.IncidentWindow = rc.GetTimeWindow()
		a.StartsAt = rc.GetTimeWindow().GetStart()
	}
	if svc == "" {
		a.ResourceKind, a.ResourceName = "namespace", ns
	}
	a.Fingerprint = intake.Fingerprint(a)
	return a
}

// newState builds the initial state of an investigation.
func (s *Service) newState(a *investigationv1.Alert, sid, invID, parent string, extra *evidencev1.RouterContext) *invState {
	now := s.now()
	rec := &investigationv1.InvestigationRecord{
		InvestigationId: invID,
		SessionId:       sid,
		ParentSessionId: parent,
		Alert:           a,
		StartedAt:       timestamppb.New(now),
		State:           stateQueued,
		Guardrails:      s.guardrails(),
	}
	return &invState{rec: rec, rc: routerContext(a, sid, invID, extra), done: map[string]bool{}, runStart: now}
}

func (s *Service) guardrails() *investigationv1.Guardrails {
	return &investigationv1.Guardrails{
		MaxLoops:              int32(s.cfg.MaxLoops),
		MaxStagnantIterations: int32(s.cfg.MaxStagnantIterations),
		ContextBudgetChars:    s.cfg.ContextBudgetChars,
		MaxToolCalls:          int32(s.cfg.MaxToolCalls),
		MaxWallMs:             s.cfg.MaxWall.Milliseconds(),
		MaxStalledRetrievals:  int32(s.cfg.MaxStalledRetrievals),
		ModelMaxRetries:       s.modelRetries,
	}
}

// recordNoise stores a noise session and its record: no tool runs.
func (s *Service) recordNoise(ctx context.Context, a *investigationv1.Alert, sid, invID string) (*invState, error) {
	store, err := s.store(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	st := s.newState(a, sid, invID, "", nil)
	st.rec.State = stateNoise
	st.rec.FinishedAt = timestamppb.New(now)
	st.rec.Stages = append(st.rec.Stages, &investigationv1.StageRecord{
		Name: stageExtract, StartedAt: timestamppb.New(now), Status: "noise", Detail: a.GetNoiseReason(),
	})
	st.rec.Diagnosis = &investigationv1.Diagnosis{
		RootCause:  "Not investigated: " + a.GetNoiseReason(),
		Category:   investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED,
		Status:     investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE,
		StopReason: "noise: " + a.GetNoiseReason(),
	}
	for _, stg := range pipelineStages {
		st.done[stg] = true
	}
	if _, err := store.updateSession(ctx, sid, func() *sessionEntry { return newSessionEntry(sid, a, st.rc, now) },
		func(se *sessionEntry) {
			addInvestigation(se, invID)
			se.Session.State = sessNoise
			se.Session.RootCause = st.rec.Diagnosis.RootCause
		}); err != nil {
		return nil, err
	}
	if err := s.checkpoint(ctx, st); err != nil {
		return nil, err
	}
	s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_ALERT_RECEIVED, "", a.GetTitle(),
		map[string]any{"fingerprint": a.GetFingerprint()})
	s.publishLifecycle(ctx, sid, invID, evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_NOISE, stageExtract, a.GetNoiseReason(),
		map[string]any{"fingerprint": a.GetFingerprint()})
	return st, nil
}

// routerContext is the context every tool call of the investigation carries.
func routerContext(a *investigationv1.Alert, sid, invID string, extra *evidencev1.RouterContext) *evidencev1.RouterContext {
	rc := &evidencev1.RouterContext{
		ActiveNamespace: a.GetNamespace(),
		ActiveService:   a.GetService(),
		ActivePod:       a.GetPod(),
		TimeWindow:      a.GetIncidentWindow(),
		SessionId:       sid,
		IncidentId:      invID,
		LastAgentPhase:  "automated_pipeline",
		Extra:           map[string]string{},
	}
	if extra != nil {
		merged := proto.CloneOf(extra)
		if a.GetNamespace() != "" {
			merged.ActiveNamespace = a.GetNamespace()
		}
		if a.GetService() != "" {
			merged.ActiveService = a.GetService()
			if !strings.HasPrefix(merged.GetActivePod(), a.GetService()) {
				merged.ActivePod = ""
			}
		}
		if merged.TimeWindow == nil {
			merged.TimeWindow = rc.TimeWindow
		}
		merged.SessionId, merged.IncidentId, merged.LastAgentPhase = sid, invID, rc.LastAgentPhase
		if merged.Extra == nil {
			merged.Extra = map[string]string{}
		}
		rc = merged
	}
	if c := a.GetCluster(); c != "" {
		setIfEmpty(rc.Extra, "cluster", c)
	}
	if k, n := a.GetResourceKind(), a.GetResourceName(); k != "" && n != "" {
		setIfEmpty(rc.Extra, "resource_kind", k)
		setIfEmpty(rc.Extra, "resource_name", n)
		setIfEmpty(rc.Extra, k, n)
	}
	if a.GetNamespace() != "" {
		rc.DiscoveredNamespaces = appendUnique(rc.DiscoveredNamespaces, a.GetNamespace())
	}
	if a.GetService() != "" {
		rc.DiscoveredServices = appendUnique(rc.DiscoveredServices, a.GetService())
	}
	if a.GetPod() != "" {
		rc.PodNames = appendUnique(rc.PodNames, a.GetPod())
	}
	return rc
}

func setIfEmpty(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok && v != "" {
		m[k] = v
	}
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (s *Service) windowIndex(now time.Time) int64 {
	return now.Unix() / int64(s.cfg.DedupWindow/time.Second)
}

func (s *Service) deriveSessionID(fp string, now time.Time) string {
	f := fp
	if len(f) > 16 {
		f = f[:16]
	}
	return "inc-" + f + "-" + strconv.FormatInt(s.windowIndex(now), 36)
}

func investigationID(parts ...string) string { return "inv-" + shortHash(parts...) }

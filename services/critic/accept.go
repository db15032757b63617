package critic

import (
	"context"
	"fmt"
	"strings"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// categoryKinds are the signal kinds that support a root-cause category.
var categoryKinds = map[investigationv1.RootCauseCategory][]string{
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION: {kindOOM, kindSaturation, kindScheduling, kindDisk, kindDB, kindQuota},
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT:         {kindCode, kindCrash, kindChange, kindCommit, kindHTTP5xx, kindErrors},
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CONFIGURATION_ERROR: {kindConfig, kindImage, kindChange, kindCommit, kindCrash, kindCert, kindProbe, kindDNS, kindQuota, kindAvailable},
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE:  {kindConnection, kindTimeout, kindDNS, kindDB, kindHTTP5xx, kindCert, kindLatency},
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_INFRASTRUCTURE:      {kindNode, kindDisk, kindStorage, kindDB, kindScheduling, kindDNS, kindCert, kindSaturation},
	investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DATA_QUALITY:        {kindErrors, kindCode, kindHTTP5xx, kindDB},
}

// AcceptConclusion is the evaluator gate: the loop may stop only when every
// planned tool ran and the evidence supports the claim, so that a fluent
// answer without evidence is never the outcome. At the rejection limit it
// refuses with limit_reached: the investigation ends NEEDS_REVIEW.
func (s *Service) AcceptConclusion(ctx context.Context, req *criticv1.AcceptConclusionRequest) (*criticv1.AcceptConclusionResponse, error) {
	pins := req.GetPins()
	if len(pins) == 0 && req.GetSessionId() != "" {
		if p, err := s.sessionPins(ctx, req.GetSessionId()); err == nil {
			pins = p
		} else {
			s.log.WarnContext(ctx, "critic: session pins unavailable for acceptance", "session", req.GetSessionId(), "err", err)
		}
	}
	resp := &criticv1.AcceptConclusionResponse{Limits: s.cfg.Limits()}

	executed := map[string]bool{}
	for _, i := range req.GetExecutedIntents() {
		executed[i] = true
	}
	avail := s.availability(ctx, req.GetSessionId())
	for _, a := range req.GetPlan().GetActions() {
		// A planned tool that cannot run here can never be waited for.
		if a.GetIntent() != "" && !executed[a.GetIntent()] && (avail == nil || avail[a.GetIntent()]) {
			resp.MissingIntents = appendUnique(resp.MissingIntents, a.GetIntent())
		}
	}
	resp.BlockingGaps = s.gaps(req.GetProposed(), pins)

	// A conclusion that hands over to a human needs the plan run, not proof:
	// one proposed for review, or one left open whose confidence is below
	// the gate.
	handover, lowConfidence := false, false
	switch p := req.GetProposed(); p.GetStatus() {
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW, investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_ESCALATED,
		investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE:
		handover = p != nil
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_UNSPECIFIED:
		lowConfidence = p != nil && p.GetConfidence() < s.cfg.ConcludeConfidence
		handover = lowConfidence
	}
	sufficient := len(resp.BlockingGaps) <= s.cfg.MaxBlockingGaps
	if len(resp.MissingIntents) == 0 && (sufficient || handover) {
		resp.Accepted = true
		if handover && !sufficient {
			resp.Handover = true
			resp.HandoverStatus = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW
			if !lowConfidence {
				resp.HandoverStatus = req.GetProposed().GetStatus()
			}
		}
		switch {
		case !sufficient && lowConfidence:
			resp.Reason = fmt.Sprintf("accepted for review: confidence %.2f below %.2f hands over to a human with %d open gap(s)",
				req.GetProposed().GetConfidence(), s.cfg.ConcludeConfidence, len(resp.BlockingGaps))
			resp.Trips = append(resp.Trips, guardrail.Trip(GuardrailConclude, resp.Reason, s.cfg.ConcludeConfidence, req.GetProposed().GetConfidence(), s.now()))
		case !sufficient:
			resp.Reason = fmt.Sprintf("accepted as %s: hands over to a human with %d open gap(s)", req.GetProposed().GetStatus().String(), len(resp.BlockingGaps))
		case len(resp.BlockingGaps) > 0:
			resp.Reason = fmt.Sprintf("accepted with %d open gap(s), at most %d allowed", len(resp.BlockingGaps), s.cfg.MaxBlockingGaps)
		default:
			resp.Reason = "accepted: every planned tool ran and the evidence supports the conclusion"
		}
		return resp, nil
	}

	// Refused. The caller counts refusals (stateless, so a restart or a new
	// investigation in the same session starts from the caller's count).
	count := req.GetRejections() + 1
	var why []string
	if len(resp.MissingIntents) > 0 {
		why = append(why, "planned tools not run yet: "+strings.Join(resp.MissingIntents, ", "))
	}
	if len(resp.BlockingGaps) > 0 {
		why = append(why, "evidence gaps: "+strings.Join(resp.BlockingGaps, "; "))
	}
	if count >= int32(s.cfg.EvaluatorRejectionLimit) {
		// The owner's decision is the outcome: the conclusion is not
		// accepted; the investigation stops as NEEDS_REVIEW.
		resp.Accepted = false
		resp.LimitReached = true
		resp.Reason = fmt.Sprintf("evaluator rejection limit reached (%d of %d): stop as NEEDS_REVIEW; %s", count, s.cfg.EvaluatorRejectionLimit, strings.Join(why, "; "))
		resp.Trips = append(resp.Trips, guardrail.Trip(GuardrailRejectionLimit,
			fmt.Sprintf("conclusion refused %d time(s); remaining: %s", count, strings.Join(why, "; ")),
			float64(s.cfg.EvaluatorRejectionLimit), float64(count), s.now()))
		return resp, nil
	}
	resp.Reason = fmt.Sprintf("refused (%d of %d): %s", count, s.cfg.EvaluatorRejectionLimit, strings.Join(why, "; "))
	if !sufficient {
		resp.Trips = append(resp.Trips, guardrail.Trip(GuardrailEvidence, "conclusion refused: "+strings.Join(resp.BlockingGaps, "; "),
			float64(s.cfg.MaxBlockingGaps), float64(len(resp.BlockingGaps)), s.now()))
	}
	return resp, nil
}

// gaps lists what keeps the evidence from supporting the proposed diagnosis.
func (s *Service) gaps(d *investigationv1.Diagnosis, pins []*evidencev1.EvidencePin) []string {
	if d == nil {
		return []string{"no diagnosis proposed"}
	}
	var gaps []string
	if strings.TrimSpace(d.GetRootCause()) == "" {
		gaps = append(gaps, "the diagnosis states no root cause")
	}
	views, byID := makeViews(pins)
	var lead *investigationv1.Hypothesis
	if len(d.GetHypotheses()) > 0 {
		lead = d.GetHypotheses()[0]
	}
	var cited []*pinView
	if lead != nil {
		for _, id := range lead.GetPinIds() {
			if v := byID[id]; v != nil && v.validated {
				cited = append(cited, v)
			}
		}
		if len(cited) == 0 {
			gaps = append(gaps, fmt.Sprintf("leading hypothesis %s cites no validated pin", lead.GetId()))
		}
	} else {
		// Without hypotheses, the claims carry the citations.
		for _, c := range d.GetValidatedClaims() {
			for _, id := range c.GetPinIds() {
				if v := byID[id]; v != nil && v.validated {
					cited = append(cited, v)
				}
			}
		}
		if len(cited) == 0 {
			gaps = append(gaps, "no hypothesis and no validated claim cites a validated pin")
		}
	}

	cat := d.GetCategory()
	switch cat {
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED, investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNKNOWN:
		gaps = append(gaps, "category unsupported: the root-cause category is unknown")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY:
		ok := false
		for _, v := range views {
			if !v.validated {
				continue
			}
			if v.prof.healthy || v.pin.GetNoData() {
				ok = true
			}
			for _, o := range v.prof.obs {
				ok = ok || o.healthy
			}
			for _, sv := range v.prof.series {
				ok = ok || sv.normal
			}
		}
		if !ok {
			gaps = append(gaps, "category unsupported: no validated pin shows the system healthy")
		}
		var accused []string
		if lead != nil && lead.GetEntity() != "" {
			accused = accusedNames(lead, nil)
		} else if d.GetRootCauseEntity() != "" {
			accused = accusedNames(&investigationv1.Hypothesis{Entity: d.GetRootCauseEntity()}, nil)
		}
		for _, f := range currentFailures(accused, views) {
			gaps = append(gaps, fmt.Sprintf("category unsupported: pin %s shows %s failing now", f.pin, f.detail))
		}
	default:
		kinds := categoryKinds[cat]
		// The cited pins first; any validated pin may carry the signal.
		support := append([]*pinView(nil), cited...)
		for _, v := range views {
			if v.validated {
				support = append(support, v)
			}
		}
		ok := false
		for _, v := range support {
			for _, k := range kinds {
				if v.prof.roots[k] != "" || v.prof.symptoms[k] != "" {
					ok = true
				}
			}
			if len(v.prof.deploys) > 0 && containsStr(kinds, kindChange) || len(v.prof.commits) > 0 && containsStr(kinds, kindCommit) {
				ok = true
			}
			if cat == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE && len(v.prof.downstream) > 0 {
				ok = true
			}
		}
		if !ok {
			gaps = append(gaps, fmt.Sprintf("category unsupported: no validated evidence shows %s signals (%s)",
				strings.TrimPrefix(cat.String(), "ROOT_CAUSE_CATEGORY_"), strings.Join(kinds, ", ")))
		}
	}

	if ent := d.GetRootCauseEntity(); ent != "" && cat != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY {
		accused := accusedNames(&investigationv1.Hypothesis{Entity: ent}, nil)
		seen := false
		for _, v := range views {
			if v.validated && (matchesAny(accused, v.prof.names) || mentions(v.pin, accused)) {
				seen = true
				break
			}
		}
		if !seen {
			gaps = append(gaps, fmt.Sprintf("culprit %s appears in no validated pin", ent))
		}
	}
	return gaps
}

// mentions reports whether a pin's text names one of the accused.
func mentions(p *evidencev1.EvidencePin, accused []string) bool {
	text := strings.ToLower(p.GetClaim() + "\n" + strings.Join(p.GetSupportingEvidence(), "\n") + "\n" + textutil.Truncate(p.GetRawOutput(), 64<<10))
	for _, a := range accused {
		if len(a) >= 3 && strings.Contains(text, a) {
			return true
		}
	}
	return false
}

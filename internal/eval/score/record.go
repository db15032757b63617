package score

import (
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// Record is the scoring object of the benchmarks' format ("What the engine
// reports for scoring") for one investigation: built from its record, its
// pins and the report markdown the delivery service rendered for it.
func Record(rec *investigationv1.InvestigationRecord, pins []*evidencev1.EvidencePin, scenarioID, report string) map[string]any {
	d := rec.GetDiagnosis()
	hyps := make([]any, 0, len(d.GetHypotheses()))
	for _, h := range d.GetHypotheses() {
		hyps = append(hyps, map[string]any{
			"id": h.GetId(), "entity": h.GetEntity(), "category": categoryName(h.GetCategory()),
			"confidence": h.GetConfidence(), "pin_ids": strs(h.GetPinIds()), "statement": h.GetStatement(),
			"detector": h.GetDetector(),
		})
	}
	claimList := func(cs []*investigationv1.Claim) []any {
		out := make([]any, 0, len(cs))
		for _, c := range cs {
			out = append(out, map[string]any{"claim": c.GetClaim(), "status": claimStatus(c.GetStatus()), "pin_ids": strs(c.GetPinIds())})
		}
		return out
	}
	ruled := make([]any, 0, len(d.GetRuledOut()))
	for _, r := range d.GetRuledOut() {
		text := r.GetAlternative()
		if r.GetReason() != "" {
			text += ": " + r.GetReason()
		}
		ruled = append(ruled, map[string]any{"text": text, "alternative": r.GetAlternative(), "reason": r.GetReason(), "pin_ids": strs(r.GetPinIds())})
	}
	calls := make([]any, 0, len(rec.GetToolCalls()))
	for _, c := range rec.GetToolCalls() {
		calls = append(calls, map[string]any{
			"intent": c.GetIntent(), "params": structMap(c.GetParams()), "pin_id": c.GetPinId(),
			"iteration": c.GetIteration(), "origin": c.GetOrigin(), "replayed": c.GetReplayed(), "no_data": c.GetNoData(),
		})
	}
	sources := rec.GetEvidenceSources()
	pinIDs := make([]any, 0, len(pins))
	// What each pin said, for an audit of what the tools returned.
	summaries := make([]any, 0, len(pins))
	for _, p := range pins {
		pinIDs = append(pinIDs, p.GetId())
		summaries = append(summaries, map[string]any{"id": p.GetId(), "tool": p.GetSourceTool(), "claim": p.GetClaim(), "time_window": p.GetTimeWindow().String()})
	}
	trips := make([]any, 0, len(rec.GetGuardrailTrips()))
	for _, t := range rec.GetGuardrailTrips() {
		trips = append(trips, map[string]any{"guardrail": t.GetGuardrail(), "owner": t.GetOwner(), "detail": t.GetDetail()})
	}
	return map[string]any{
		"scenario_id":          scenarioID,
		"session_id":           rec.GetSessionId(),
		"investigation_id":     rec.GetInvestigationId(),
		"status":               diagStatus(d.GetStatus()),
		"root_cause":           d.GetRootCause(),
		"root_cause_category":  categoryName(d.GetCategory()),
		"root_cause_entity":    d.GetRootCauseEntity(),
		"hypotheses":           hyps,
		"validated_claims":     claimList(d.GetValidatedClaims()),
		"non_validated_claims": claimList(d.GetNonValidatedClaims()),
		"causal_chain":         strs(d.GetCausalChain()),
		"ruled_out":            ruled,
		"remediation_steps":    strs(d.GetRemediationSteps()),
		"unknowns":             strs(d.GetUnknowns()),
		"confidence":           d.GetConfidence(),
		"stop_reason":          d.GetStopReason(),
		"tools_called":         calls,
		"evidence_sources":     strs(sources),
		"pins":                 pinIDs,
		"pin_summaries":        summaries,
		"guardrail_trips":      trips,
		"loops":                rec.GetLoops(),
		"llm_calls":            len(rec.GetModelCalls()),
		"tokens":               rec.GetTokens(),
		"wall_ms":              rec.GetWallMs(),
		"report":               report,
	}
}

func strs(in []string) []any {
	out := make([]any, 0, len(in))
	for _, s := range in {
		out = append(out, s)
	}
	return out
}

func claimStatus(c investigationv1.ClaimStatus) string {
	switch c {
	case investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED:
		return "supported"
	case investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE:
		return "tentative"
	case investigationv1.ClaimStatus_CLAIM_STATUS_REJECTED:
		return "rejected"
	case investigationv1.ClaimStatus_CLAIM_STATUS_CONFLICTING:
		return "conflicting"
	}
	return "unspecified"
}

func diagStatus(s investigationv1.DiagnosisStatus) string {
	switch s {
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED:
		return "concluded"
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW:
		return "needs_review"
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_ESCALATED:
		return "escalated"
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_DEGRADED:
		return "degraded"
	case investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NOISE:
		return "noise"
	}
	return "unspecified"
}

func categoryName(c investigationv1.RootCauseCategory) string {
	if c == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED {
		return "unknown"
	}
	return strings.ToLower(strings.TrimPrefix(c.String(), "ROOT_CAUSE_CATEGORY_"))
}

func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return map[string]any{}
	}
	return s.AsMap()
}

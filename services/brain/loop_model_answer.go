package brain

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/llm"
)

// ParseCategory maps "resource_exhaustion" (any case, with or without the
// enum prefix) to the enum; unknown text maps to UNSPECIFIED.
func ParseCategory(s string) investigationv1.RootCauseCategory {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.NewReplacer(" ", "_", "-", "_").Replace(t)
	t = strings.TrimPrefix(t, "ROOT_CAUSE_CATEGORY_")
	if v, ok := investigationv1.RootCauseCategory_value["ROOT_CAUSE_CATEGORY_"+t]; ok {
		return investigationv1.RootCauseCategory(v)
	}
	return investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED
}

// parseModelDiagnosis reads the model's final answer: a JSON object (also
// fenced or embedded in prose, via llm.ParseFinalAnswer), else labelled
// sections ("ROOT_CAUSE: ..."). It needs a non-empty root cause.
func parseModelDiagnosis(text string) (*investigationv1.Diagnosis, bool) {
	if obj, err := llm.ParseFinalAnswer(text); err == nil {
		if d := diagnosisFromMap(obj); d.GetRootCause() != "" {
			return d, true
		}
	}
	if d := diagnosisFromSections(text); d.GetRootCause() != "" {
		return d, true
	}
	return nil, false
}

func diagnosisFromMap(m map[string]any) *investigationv1.Diagnosis {
	d := &investigationv1.Diagnosis{
		RootCause:        str(m["root_cause"]),
		Category:         ParseCategory(str(m["root_cause_category"])),
		RootCauseEntity:  str(m["root_cause_entity"]),
		CausalChain:      strList(m["causal_chain"]),
		RemediationSteps: strList(firstOf(m, "remediation_steps", "remediation", "next_actions")),
	}
	if d.Category == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED {
		d.Category = ParseCategory(str(m["category"]))
	}
	d.Confidence, _ = strconv.ParseFloat(strings.TrimSuffix(str(m["confidence"]), "%"), 64)
	if d.Confidence > 1 {
		d.Confidence /= 100
	}
	d.Confidence = max(0, min(1, d.Confidence))
	d.ValidatedClaims = claims(m["validated_claims"], investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED)
	d.NonValidatedClaims = claims(m["non_validated_claims"], investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE)
	if list, ok := m["ruled_out"].([]any); ok {
		for _, e := range list {
			switch t := e.(type) {
			case string:
				d.RuledOut = append(d.RuledOut, &investigationv1.RuledOut{Alternative: t})
			case map[string]any:
				d.RuledOut = append(d.RuledOut, &investigationv1.RuledOut{
					Alternative: firstNonEmpty(str(t["alternative"]), str(t["text"]), str(t["claim"])),
					Reason:      str(t["reason"]), PinIds: strList(t["pin_ids"]),
				})
			}
		}
	}
	return d
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func claims(v any, status investigationv1.ClaimStatus) []*investigationv1.Claim {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	var out []*investigationv1.Claim
	for _, e := range list {
		switch t := e.(type) {
		case string:
			if t != "" {
				out = append(out, &investigationv1.Claim{Claim: t, Status: status, PinIds: pinRefs(t)})
			}
		case map[string]any:
			c := firstNonEmpty(str(t["claim"]), str(t["text"]))
			if c == "" {
				continue
			}
			ids := strList(firstOf(t, "pin_ids", "evidence", "pins"))
			if len(ids) == 0 {
				ids = pinRefs(c)
			}
			out = append(out, &investigationv1.Claim{Claim: c, Status: status, PinIds: ids})
		}
	}
	return out
}

var pinRefRE = regexp.MustCompile(`\bpin[ _:]+([A-Za-z0-9_.:-]+)`)

func pinRefs(s string) []string {
	var out []string
	for _, m := range pinRefRE.FindAllStringSubmatch(s, -1) {
		out = appendUnique(out, strings.TrimRight(m[1], ".,;:)"))
	}
	return out
}

func str(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(t)
	}
	return strings.TrimSpace(fmt.Sprint(v))
}

func strList(v any) []string {
	switch t := v.(type) {
	case []any:
		var out []string
		for _, e := range t {
			switch x := e.(type) {
			case map[string]any:
				if s := firstNonEmpty(str(x["text"]), str(x["claim"]), str(x["step"])); s != "" {
					out = append(out, s)
				}
			default:
				if s := str(x); s != "" {
					out = append(out, s)
				}
			}
		}
		return out
	case string:
		if strings.TrimSpace(t) == "" {
			return nil
		}
		return []string{strings.TrimSpace(t)}
	}
	return nil
}

var sectionRE = regexp.MustCompile(`(?m)^\s*\**(ROOT_CAUSE_CATEGORY|ROOT_CAUSE_ENTITY|ROOT_CAUSE|VALIDATED_CLAIMS|NON_VALIDATED_CLAIMS|CAUSAL_CHAIN|REMEDIATION_STEPS|REMEDIATION|RULED_OUT|CONFIDENCE)\**\s*:\s*(.*)$`)

// diagnosisFromSections reads "ROOT_CAUSE: ..." style labelled sections.
func diagnosisFromSections(text string) *investigationv1.Diagnosis {
	locs := sectionRE.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		return &investigationv1.Diagnosis{}
	}
	d := &investigationv1.Diagnosis{}
	for i, loc := range locs {
		label := text[loc[2]:loc[3]]
		inline := strings.TrimSpace(text[loc[4]:loc[5]])
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := text[loc[1]:end]
		var items []string
		for _, line := range strings.Split(body, "\n") {
			l := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•"))
			if l != "" {
				items = append(items, l)
			}
		}
		all := items
		if inline != "" {
			all = append([]string{inline}, items...)
		}
		switch label {
		case "ROOT_CAUSE":
			d.RootCause = strings.Join(all, " ")
		case "ROOT_CAUSE_CATEGORY":
			d.Category = ParseCategory(inline)
		case "ROOT_CAUSE_ENTITY":
			d.RootCauseEntity = inline
		case "VALIDATED_CLAIMS", "NON_VALIDATED_CLAIMS":
			status := investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED
			if label == "NON_VALIDATED_CLAIMS" {
				status = investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE
			}
			for _, c := range all {
				cl := &investigationv1.Claim{Claim: c, Status: status, PinIds: pinRefs(c)}
				if status == investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED {
					d.ValidatedClaims = append(d.ValidatedClaims, cl)
				} else {
					d.NonValidatedClaims = append(d.NonValidatedClaims, cl)
				}
			}
		case "CAUSAL_CHAIN":
			d.CausalChain = all
		case "REMEDIATION_STEPS", "REMEDIATION":
			d.RemediationSteps = all
		case "RULED_OUT":
			for _, r := range all {
				d.RuledOut = append(d.RuledOut, &investigationv1.RuledOut{Alternative: r})
			}
		case "CONFIDENCE":
			f, _ := strconv.ParseFloat(strings.TrimSuffix(inline, "%"), 64)
			if f > 1 {
				f /= 100
			}
			d.Confidence = max(0, min(1, f))
		}
	}
	return d
}

// mergeModelDiagnosis lays the model's conclusion over the rules diagnosis:
// the model's root cause, category, entity, chain, claims, ruled-out and
// remediation win where present; the rules hypotheses stay, led by the
// model's own.
func mergeModelDiagnosis(rules, model *investigationv1.Diagnosis) *investigationv1.Diagnosis {
	d := proto.CloneOf(rules)
	if model.GetRootCause() == "" {
		return d
	}
	d.RootCause = model.GetRootCause()
	if model.GetCategory() != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED {
		d.Category = model.GetCategory()
	}
	if model.GetRootCauseEntity() != "" {
		d.RootCauseEntity = model.GetRootCauseEntity()
	}
	if len(model.GetCausalChain()) > 0 {
		d.CausalChain = model.GetCausalChain()
	}
	if len(model.GetValidatedClaims()) > 0 {
		d.ValidatedClaims = model.GetValidatedClaims()
	}
	if len(model.GetNonValidatedClaims()) > 0 {
		d.NonValidatedClaims = model.GetNonValidatedClaims()
	}
	if len(model.GetRuledOut()) > 0 {
		d.RuledOut = model.GetRuledOut()
	}
	if len(model.GetRemediationSteps()) > 0 {
		d.RemediationSteps = model.GetRemediationSteps()
	}
	if model.GetConfidence() > 0 {
		d.Confidence = model.GetConfidence()
	}
	var pins []string
	for _, c := range model.GetValidatedClaims() {
		for _, id := range c.GetPinIds() {
			pins = appendUnique(pins, id)
		}
	}
	h := &investigationv1.Hypothesis{
		Id: "model", Statement: d.GetRootCause(), Category: d.GetCategory(), Entity: d.GetRootCauseEntity(),
		Confidence: d.GetConfidence(), PinIds: pins, Detector: "model", CausalChain: d.GetCausalChain(), Remediation: d.GetRemediationSteps(),
	}
	d.Hypotheses = append([]*investigationv1.Hypothesis{h}, d.GetHypotheses()...)
	return d
}

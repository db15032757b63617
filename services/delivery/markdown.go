package delivery

import (
	"fmt"
	"math"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func enumText(name, prefix string) string {
	s := strings.TrimPrefix(name, prefix)
	if s == "UNSPECIFIED" || s == "" {
		return "unspecified"
	}
	return strings.ToLower(strings.ReplaceAll(s, "_", " "))
}

func statusText(s investigationv1.DiagnosisStatus) string {
	return strings.ToUpper(enumText(s.String(), "DIAGNOSIS_STATUS_"))
}

func categoryText(c investigationv1.RootCauseCategory) string {
	return enumText(c.String(), "ROOT_CAUSE_CATEGORY_")
}

// normConfidence maps a 0-1 or 0-100 confidence to 0-1.
func normConfidence(c float64) float64 {
	if math.IsNaN(c) || c < 0 {
		return 0
	}
	if c > 1 {
		c /= 100
	}
	return math.Min(c, 1)
}

// cell makes text safe for one markdown table cell.
func cell(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func pinRefs(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "`" + strings.ReplaceAll(id, "`", "'") + "`"
	}
	return " — pins: " + strings.Join(q, ", ")
}

func fmtDur(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	if d < time.Second {
		return d.String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// reportTitle is the one-line title of a report.
func reportTitle(rec *investigationv1.InvestigationRecord) string {
	a := rec.GetAlert()
	for _, t := range []string{a.GetTitle(), a.GetAlertName(), a.GetSummary()} {
		if t = oneLine(t); t != "" {
			return t
		}
	}
	if rc := oneLine(rec.GetDiagnosis().GetRootCause()); rc != "" {
		return rc
	}
	return "Investigation " + rec.GetSessionId()
}

// renderMarkdown renders the human-readable report. The caller redacts it.
func renderMarkdown(rec *investigationv1.InvestigationRecord, pins []*evidencev1.EvidencePin, link string) string {
	d := rec.GetDiagnosis()
	a := rec.GetAlert()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# RCA: %s\n\n", oneLine(reportTitle(rec)))
	if rec.GetState() == stateFailed {
		w("> **Investigation FAILED**: %s\n>\n> What was gathered before the failure is below; nothing here is a conclusion.\n\n", oneLine(rec.GetFailureReason()))
	}
	w("| | |\n|---|---|\n")
	status := statusText(d.GetStatus())
	if rec.GetState() == stateFailed {
		status = "FAILED"
	}
	w("| **Status** | %s |\n", status)
	w("| **Confidence** | %.0f%% |\n", normConfidence(d.GetConfidence())*100)
	w("| **Category** | %s |\n", categoryText(d.GetCategory()))
	w("| **Culprit** | %s |\n", cell(d.GetRootCauseEntity(), 200))
	if a != nil {
		alert := a.GetAlertName()
		if a.GetAlertSource() != "" {
			alert += " (" + a.GetAlertSource() + ")"
		}
		w("| **Alert** | %s |\n", cell(alert, 200))
		if a.GetSeverity() != "" {
			w("| **Severity** | %s |\n", cell(a.GetSeverity(), 40))
		}
		scope := strings.Trim(strings.Join([]string{a.GetCluster(), a.GetNamespace(), a.GetService()}, "/"), "/")
		if scope != "" {
			w("| **Scope** | %s |\n", cell(scope, 200))
		}
	}
	w("| **Session** | `%s` |\n", cell(rec.GetSessionId(), 120))
	if rec.GetInvestigationId() != "" {
		w("| **Investigation** | `%s` |\n", cell(rec.GetInvestigationId(), 120))
	}
	if rec.GetAttachedAlerts() > 0 {
		w("| **Attached alerts** | %d |\n", rec.GetAttachedAlerts())
	}
	if link != "" {
		w("| **Link** | %s |\n", link)
	}
	if d.GetStopReason() != "" {
		w("| **Stop reason** | %s |\n", cell(d.GetStopReason(), 300))
	}

	if related := relatedAlerts(a); len(related) > 0 {
		w("\n## Alerts in this incident\n\n")
		w("- %s\n", oneLine(a.GetAlertName()))
		for _, r := range related {
			w("- %s\n", oneLine(r))
		}
	}

	qb := &quoteBook{d: d}
	w("\n## Root cause\n\n")
	if rc := strings.TrimSpace(d.GetRootCause()); rc != "" {
		w("%s\n", qb.refs(rc))
	} else {
		w("_No root cause was determined._\n")
	}

	if chain := d.GetCausalChain(); len(chain) > 0 {
		w("\n## Causal chain\n\n")
		for i, step := range chain {
			w("%d. %s\n", i+1, qb.refs(oneLine(step)))
		}
	}
	b.WriteString(qb.block())

	w("\n## Validated claims\n\n")
	if len(d.GetValidatedClaims()) == 0 {
		w("_None._\n")
	}
	for _, c := range d.GetValidatedClaims() {
		w("- %s%s\n", inlineQuotes(oneLine(c.GetClaim())), pinRefs(c.GetPinIds()))
	}
	if len(d.GetNonValidatedClaims()) > 0 {
		w("\n## Non-validated claims\n\n")
		for _, c := range d.GetNonValidatedClaims() {
			w("- %s (%s)%s\n", inlineQuotes(oneLine(c.GetClaim())), enumText(c.GetStatus().String(), "CLAIM_STATUS_"), pinRefs(c.GetPinIds()))
		}
	}

	if hs := d.GetHypotheses(); len(hs) > 0 {
		w("\n## Hypotheses considered\n\n")
		for i, h := range hs {
			w("%d. %s (%s, %.0f%%)%s\n", i+1, inlineQuotes(oneLine(h.GetStatement())), categoryText(h.GetCategory()), normConfidence(h.GetConfidence())*100, pinRefs(h.GetPinIds()))
		}
	}

	if ro := d.GetRuledOut(); len(ro) > 0 {
		w("\n## Ruled out\n\n")
		for _, r := range ro {
			w("- **%s**: %s%s\n", oneLine(r.GetAlternative()), inlineQuotes(oneLine(r.GetReason())), pinRefs(r.GetPinIds()))
		}
	}

	w("\n## Remediation\n\n")
	if len(d.GetRemediationSteps()) == 0 {
		w("_No remediation proposed._\n")
	}
	for i, s := range d.GetRemediationSteps() {
		w("%d. %s\n", i+1, oneLine(s))
	}

	if cr := d.GetCriticReview(); cr != nil {
		w("\n## Critic review\n\n")
		w("Round %d: **%s**, score %.2f (threshold %.2f). %s\n\n", cr.GetRound(), enumText(cr.GetAction().String(), "CRITIC_ACTION_"), cr.GetScore(), cr.GetThreshold(), oneLine(cr.GetSummary()))
		for _, o := range cr.GetObjections() {
			mark := "x"
			if !o.GetPassed() {
				mark = " "
			}
			w("- [%s] %s: %s%s\n", mark, o.GetCheck(), oneLine(o.GetDetail()), pinRefs(o.GetPinIds()))
		}
	}

	w("\n## Evidence\n\n")
	writeEvidence(&b, rec, pins)

	w("\n## Timeline\n\n")
	writeTimeline(&b, rec)

	w("\n## Unknowns\n\n")
	if len(d.GetUnknowns()) == 0 {
		w("_None recorded._\n")
	}
	for _, u := range d.GetUnknowns() {
		w("- %s\n", oneLine(u))
	}

	w("\n## Cost\n\n")
	tokens := rec.GetTokens()
	if tokens == 0 {
		for _, m := range rec.GetModelCalls() {
			tokens += m.GetPromptTokens() + m.GetCompletionTokens()
		}
	}
	wall := rec.GetWallMs()
	if wall == 0 && rec.GetStartedAt() != nil && rec.GetFinishedAt() != nil {
		wall = rec.GetFinishedAt().AsTime().Sub(rec.GetStartedAt().AsTime()).Milliseconds()
	}
	w("| Tool calls | Loops | Model calls | Tokens | Wall time |\n|---|---|---|---|---|\n")
	w("| %d | %d | %d | %d | %s |\n", len(rec.GetToolCalls()), rec.GetLoops(), len(rec.GetModelCalls()), tokens, fmtDur(wall))
	return b.String()
}

func writeEvidence(b *strings.Builder, rec *investigationv1.InvestigationRecord, pins []*evidencev1.EvidencePin) {
	if len(pins) > 0 {
		b.WriteString("| Pin | Tool | Claim | Status | Role | Confidence |\n|---|---|---|---|---|---|\n")
		for _, p := range pins {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %.0f |\n", cell(p.GetId(), 80), cell(p.GetSourceTool(), 40), cell(p.GetClaim(), 160),
				enumText(p.GetValidationStatus().String(), "VALIDATION_STATUS_"), enumText(p.GetCausalRole().String(), "CAUSAL_ROLE_"), p.GetConfidence())
		}
		return
	}
	// Without the pin stream, the tool calls name the pins they produced.
	n := 0
	for _, tc := range rec.GetToolCalls() {
		if tc.GetPinId() == "" {
			continue
		}
		if n == 0 {
			b.WriteString("| Pin | Tool | Claim | Status | Role | Confidence |\n|---|---|---|---|---|---|\n")
		}
		n++
		st := "ok"
		switch {
		case !tc.GetSuccess():
			st = "failed: " + tc.GetError()
		case tc.GetNoData():
			st = "no data"
		}
		fmt.Fprintf(b, "| `%s` | %s | - | %s | - | - |\n", cell(tc.GetPinId(), 80), cell(tc.GetIntent(), 40), cell(st, 120))
	}
	if n == 0 {
		b.WriteString("_No evidence pins._\n")
	}
}

func writeTimeline(b *strings.Builder, rec *investigationv1.InvestigationRecord) {
	if st := rec.GetStages(); len(st) > 0 {
		b.WriteString("### Stages\n\n| Stage | Started | Duration | Status | Detail |\n|---|---|---|---|---|\n")
		for _, s := range st {
			started := "-"
			if s.GetStartedAt() != nil {
				started = s.GetStartedAt().AsTime().UTC().Format("15:04:05")
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(s.GetName(), 40), started, fmtDur(s.GetDurationMs()), cell(s.GetStatus(), 20), cell(s.GetDetail(), 160))
		}
		b.WriteString("\n")
	}
	if tcs := rec.GetToolCalls(); len(tcs) > 0 {
		b.WriteString("### Tool calls\n\n| # | Iteration | Tool | Origin | Result | Pin | Duration |\n|---|---|---|---|---|---|---|\n")
		for i, tc := range tcs {
			res := "ok"
			switch {
			case !tc.GetSuccess():
				res = "error: " + tc.GetError()
			case tc.GetReplayed():
				res = "replayed"
			case tc.GetNoData():
				res = "no data"
			}
			pin := "-"
			if tc.GetPinId() != "" {
				pin = "`" + cell(tc.GetPinId(), 80) + "`"
			}
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %s |\n", i+1, tc.GetIteration(), cell(tc.GetIntent(), 40), cell(tc.GetOrigin(), 16), cell(res, 120), pin, fmtDur(tc.GetDurationMs()))
		}
		b.WriteString("\n")
	}
	b.WriteString("### Guardrail trips\n\n")
	if len(rec.GetGuardrailTrips()) == 0 {
		b.WriteString("_None._\n")
		return
	}
	b.WriteString("| Guardrail | Owner | Value / Limit | Detail |\n|---|---|---|---|\n")
	for _, t := range rec.GetGuardrailTrips() {
		fmt.Fprintf(b, "| %s | %s | %g / %g | %s |\n", cell(t.GetGuardrail(), 40), cell(t.GetOwner(), 20), t.GetValue(), t.GetLimit(), cell(t.GetDetail(), 200))
	}
}

// relatedAlerts are the other alerts of a grouped incident, in order (the
// brain carries them as related_alert_N annotations on the primary).
func relatedAlerts(a *investigationv1.Alert) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := a.GetAnnotations()[fmt.Sprintf("related_alert_%d", i)]
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

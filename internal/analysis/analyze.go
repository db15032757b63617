package analysis

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
)

// Input is what Analyze reads: the alert and the evidence pins.
type Input struct {
	Alert *investigationv1.Alert
	Pins  []*evidencev1.EvidencePin
	// NonPaged lists environments that are not paged (nil: the package
	// default NonPagedEnvironments).
	NonPaged []string
	// Prior is the category prior weighed with the mechanism reading
	// (prior.go); nil: the mechanism reading alone.
	Prior *catprior.Model
}

// Result is the ranked analysis.
type Result struct {
	Hypotheses []*investigationv1.Hypothesis // ranked, best first; each cites pin ids
	Claims     []*investigationv1.Claim      // supported/tentative/rejected, each citing pin ids
	RuledOut   []*investigationv1.RuledOut
	Unknowns   []string
	Healthy    bool // evidence shows the system never failed or recovered
	// Sources are the evidence sources behind the leading hypothesis,
	// primary first.
	Sources []string
	// Composite is true when the leading explanation combines two
	// concurrent faults (Hypotheses[0] and Hypotheses[1]).
	Composite bool
	// Findings are the raw detector outputs, ranked (for audits and tests).
	Findings []Finding
	// HealthVetoed: a healthy reading was set aside because the alert's own
	// condition still holds at the end of the window.
	HealthVetoed bool
	// ev is the evidence the analysis decoded, reused by Diagnose (nil when
	// the Result was built by hand).
	ev *Evidence
}

// Thresholds of the ranking.
const (
	// minFaultScore: a fault finding below it cannot lead.
	minFaultScore = 0.6
	// explainedPenalty multiplies the score of a finding another strong
	// finding explains as a symptom.
	explainedPenalty = 0.5
)

// Analyze runs every registered detector.
func Analyze(ctx context.Context, in Input) (Result, error) {
	return AnalyzeWith(ctx, in, DefaultDetectors())
}

// AnalyzeWith runs the given detectors over the pins and ranks the findings.
func AnalyzeWith(ctx context.Context, in Input, detectors []Detector) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("analysis: %w", err)
	}
	ev := NewEvidence(in.Alert, in.Pins)
	ev.NonPaged = in.NonPaged
	ev.prior = in.Prior
	var findings []Finding
	for _, d := range detectors {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("analysis: detector %s: %w", d.Name(), err)
		}
		findings = append(findings, d.Detect(ctx, ev)...)
	}
	annotateManagers(ev, findings)
	findings = deferReleaseFailures(findings)
	ev.liftToOwners(findings)
	ev.specExplained(findings)
	var context []LogLine
	contextRead := false
	for i := range findings {
		if findings[i].Healthy && findings[i].Category == catHealthy && findings[i].Mode != ModeMaintenanceEnded {
			if !contextRead {
				context, contextRead = ev.healthContext(), true // once, for every healthy reading
				context = append(context, ev.precursorLines(context)...)
				context = append(context, ev.outcomeLines(context)...)
			}
			findings[i].explainWith(context, ev.alertTime())
		}
	}
	if lf, ok := ev.boundSetByChange(findings); ok {
		findings = append(findings, lf)
	}
	res := rank(ev, findings)
	res.ev = ev
	for _, e := range ev.DetectorErrors {
		// A detector that failed is a reading missing, said so: the others
		// stand, and nothing gathered is lost.
		res.Unknowns = append(res.Unknowns, e)
	}
	return res, nil
}

func rank(ev *Evidence, findings []Finding) Result {
	var res Result
	// Symptoms explained by a strong finding lose weight.
	explained := map[string]string{}
	for _, f := range findings {
		if f.Score >= minFaultScore && (!f.Healthy || f.Overrides) {
			for m, why := range f.Explains {
				if _, ok := explained[m]; !ok {
					explained[m] = why
				}
			}
		}
	}
	_, all := explained[explainsAll]
	for i := range findings {
		if _, ok := explained[findings[i].Mode]; (ok || all) && !findings[i].Healthy {
			self := false
			for m := range findings[i].Explains {
				if m == findings[i].Mode {
					self = true
				}
			}
			if !self {
				findings[i].Score *= explainedPenalty
			}
		}
	}
	sortFindings(findings, true)
	if len(findings) > 0 && findings[0].Healthy && !findings[0].Overrides {
		// Healthy means the alert's own condition no longer holds.
		what, c, holds := "", Cite{}, false
		if h, ok := ev.heldCondition(); ok {
			what, c, holds = h.what, h.s.Cite, true
			if cf, ok := ev.conditionFinding(h); ok {
				findings = append(findings, cf)
			}
		} else if act := ev.activeAbnormal(); len(act) > 0 {
			// Not a series but an object: a failed rollout condition or a
			// controller still failing on the workload's behalf.
			what, c, holds = act[0].text, act[0].cite, true
		}
		if rec, ok := ev.expectedRecord(); holds && ok {
			// The record that announced the activity says this effect is
			// expected while it lasts: the condition holds as announced.
			holds = false
			findings[0].explainWith([]LogLine{rec}, ev.alertTime())
			findings[0].inferred("The alert's condition still holds (" + what + "), as the record written before it says it would while the activity lasts")
		}
		if holds {
			for i := range findings {
				if f := findings[i]; f.Healthy && f.HoldsExpected && f.Score >= minFaultScore {
					// A reading that accounts for the condition holding
					// leads: the condition is what it expects.
					copy(findings[1:i+1], findings[:i])
					findings[0] = f
					findings[0].inferred("The alert's condition still holds (" + what + "), as this reading expects")
					holds = false
					break
				}
			}
		}
		if holds {
			for i := range findings {
				if findings[i].Healthy && !findings[i].Overrides {
					findings[i].Score *= explainedPenalty
				}
			}
			sortFindings(findings, false) // health vetoed: no precedence among weak findings
			res.HealthVetoed = true
			res.RuledOut = append(res.RuledOut, &investigationv1.RuledOut{Alternative: "healthy (no active failure)", Reason: "the alert's own condition still holds: " + what, PinIds: c.PinIDs})
		}
	}
	res.Findings = findings
	if len(findings) == 0 {
		res.Unknowns = append(res.Unknowns, "no detector matched the evidence: the failure mode is not recognised from the data gathered")
		res.Unknowns = append(res.Unknowns, ev.unknowns(nil)...)
		return res
	}
	lead := findings[0]
	leads := []Finding{lead}
	if !lead.Healthy && lead.Score >= minFaultScore {
		for _, f := range findings[1:] {
			if f.Healthy || f.Repetition || f.Score < minFaultScore || f.Mode == lead.Mode || f.Entity != lead.Entity && !sameDomain(f, lead) {
				continue
			}
			if _, ok := lead.Explains[f.Mode]; ok {
				continue
			}
			if _, ok := f.Explains[lead.Mode]; ok {
				continue
			}
			if overlapping(lead, f) {
				continue
			}
			leads = append(leads, f)
			res.Composite = true
			break
		}
	}
	res.Healthy = lead.Healthy
	if !lead.Healthy && lead.Score < minFaultScore {
		res.Unknowns = append(res.Unknowns, fmt.Sprintf("the strongest signal (%s, confidence %.2f) is weak; the root cause is not established", lead.Mode, lead.Score))
	}
	// Hypotheses: one per detector, entity and category; the same story
	// seen through several series (or pods) is one hypothesis, the
	// strongest, not a list of near-copies.
	seenHyp := map[string]bool{}
	for _, f := range findings {
		key := f.Detector + "\x00" + f.Entity + "\x00" + f.Category.String()
		if seenHyp[key] {
			continue
		}
		seenHyp[key] = true
		h := &investigationv1.Hypothesis{
			Id:          fmt.Sprintf("h%d", len(res.Hypotheses)+1),
			Statement:   f.Statement,
			Category:    f.Category,
			Entity:      f.Entity,
			Confidence:  confidence(f),
			PinIds:      f.PinIDs,
			Detector:    f.Detector,
			CausalChain: f.Chain,
			Remediation: f.Remediation,
			Signals:     f.Signals,
		}
		res.Hypotheses = append(res.Hypotheses, h)
	}
	for _, l := range leads {
		res.Sources = appendUnique(res.Sources, l.Sources...)
		for _, c := range l.Validated {
			res.Claims = append(res.Claims, &investigationv1.Claim{Claim: c.Text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: c.PinIDs})
		}
		for _, c := range l.Inferred {
			res.Claims = append(res.Claims, &investigationv1.Claim{Claim: c.Text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: c.PinIDs})
		}
	}
	if !lead.Healthy {
		if text, c, ok := ev.alertedSymptom(lead); ok {
			// The effect as the alerted target shows it, beside a cause
			// found elsewhere: what the page was about.
			res.Claims = append(res.Claims, &investigationv1.Claim{Claim: text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: c.PinIDs})
		}
	}
	res.RuledOut = append(res.RuledOut, ev.ruleOut(leads, findings)...)
	for _, r := range res.RuledOut {
		res.Claims = append(res.Claims, &investigationv1.Claim{Claim: r.Alternative + ": " + r.Reason, Status: investigationv1.ClaimStatus_CLAIM_STATUS_REJECTED, PinIds: r.PinIds})
	}
	res.Unknowns = append(res.Unknowns, ev.unknowns(leads)...)
	return res
}

// sortFindings ranks faults above the fault bar first, then (healthFirst)
// positive health evidence among the weak findings, then by score.
func sortFindings(findings []Finding, healthFirst bool) {
	sort.SliceStable(findings, func(i, j int) bool {
		a, b := findings[i], findings[j]
		af := !a.Healthy && a.Score >= minFaultScore
		bf := !b.Healthy && b.Score >= minFaultScore
		if af != bf {
			return af
		}
		if healthFirst && a.Healthy != b.Healthy {
			return a.Healthy // among weak findings, positive health evidence ranks first
		}
		return a.Score > b.Score
	})
}

func sameDomain(a, b Finding) bool {
	return strings.HasPrefix(a.Entity, "db/") == strings.HasPrefix(b.Entity, "db/")
}

// overlapping: two findings about the same pods/pins are one failure seen
// twice (e.g. a rollout and its crashing pods), not two faults.
func overlapping(a, b Finding) bool {
	if a.Entity == b.Entity && !strings.HasPrefix(a.Entity, "db/") {
		return true
	}
	if strings.HasPrefix(a.Entity, "db/") {
		return false
	}
	shared := 0
	for _, p := range b.PinIDs {
		for _, q := range a.PinIDs {
			if p == q {
				shared++
			}
		}
	}
	return len(b.PinIDs) > 0 && shared*2 >= len(b.PinIDs)
}

// confidence maps a finding's score and corroboration to 0-1.
func confidence(f Finding) float64 {
	c := f.Score
	if len(f.Sources) >= 2 {
		c += 0.03
	}
	if len(f.Validated) >= 3 {
		c += 0.02
	}
	return math.Round(math.Min(c, 0.97)*100) / 100
}

// unknowns lists what could not be checked.
func (ev *Evidence) unknowns(leads []Finding) []string {
	var out []string
	if ev.InstructionLines > 0 {
		out = append(out, fmt.Sprintf("%s addressed to the investigator were set aside as data, not evidence", plural(ev.InstructionLines, "log line", "log lines")))
	}
	var intents []string
	for i := range ev.NoData {
		intents = append(intents, i)
	}
	sort.Strings(intents)
	for _, i := range intents {
		out = append(out, fmt.Sprintf("%s returned no data (checked, nothing found)", i))
	}
	var failed []string
	for i := range ev.Failed {
		failed = append(failed, i)
	}
	sort.Strings(failed)
	for _, i := range failed {
		out = append(out, fmt.Sprintf("%s could not be checked: %s", i, strings.Join(ev.Failed[i], "; ")))
	}
	for _, l := range leads {
		for _, c := range l.Inferred {
			if containsFold(c.Text, "not available", "no datapoints", "unconfirmed") {
				out = append(out, c.Text)
			}
		}
	}
	if len(ev.DecodeErrors) > 0 {
		out = append(out, fmt.Sprintf("%d evidence pins had unreadable facts", len(ev.DecodeErrors)))
	}
	return out
}

// alertedSymptom is the alerted workload's own most frequent error line,
// when the lead's entity is another object (a cause found elsewhere: a
// dependency, a cut, a node) and no claim of the lead quotes it yet.
func (ev *Evidence) alertedSymptom(lead Finding) (string, Cite, bool) {
	_, name := splitEntity(ev.workloadEntity())
	name = strings.ToLower(name)
	if ev.Alert != nil && name == "" {
		name = strings.ToLower(ev.Alert.GetService())
	}
	if len(name) < 3 || strings.HasSuffix(strings.ToLower(lead.Entity), "/"+name) {
		return "", Cite{}, false
	}
	for _, c := range ev.anomalyCandidates() {
		if c.kind != "workload" || !strings.EqualFold(c.name, name) || len(c.errLines) == 0 {
			continue
		}
		t := templates(c.errLines)[0]
		rep := t.lines[0]
		head := rep.Message[:min(len(rep.Message), 60)]
		for _, v := range lead.Validated {
			if strings.Contains(v.Text, head) {
				return "", Cite{}, false
			}
		}
		var cite Cite
		for _, l := range t.lines {
			cite.merge(l.Cite)
		}
		return fmt.Sprintf("What the alerted %s shows (%s of one kind): %s", c.name, plural(len(t.lines), "error line", "error lines"), quote(rep.Message)), cite, true
	}
	return "", Cite{}, false
}

package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// The category prior (internal/catprior) weighed with the mechanism
// reading. The detectors know the mechanisms they were written for; on an
// incident none of them knows, their reading is often a guess from the
// nearest family, while the words of the whole evidence (what the logs,
// events, commits and objects say) still tell the kind of failure. The
// category is the one with the highest prior score after the mechanism
// reading's category gains its weight (below): a sure mechanism reading
// stands unless the wording weighs clearly against it; no mechanism
// reading (unknown) and the wording decides, health included: when no
// detector established a failure and the words do not weigh clearly toward
// a fault (log-odds of no action needed above unknownHealthyLogOdds), the
// diagnosis is "most likely no action needed", with a low confidence and
// left for review. A healthy conclusion is left
// alone, and a fault a detector established is never called healthy from
// words.
const (
	// The weight (in the prior's log-odds) of the mechanism reading's
	// category is mechanismBonus plus mechanismPerConfidence times the
	// reading's confidence: a detector sure of its mechanism weighs more.
	// Chosen with the prior's settings by leave-one-set-out validation on
	// our own sets (README, method): a flat 5 lost more readings the
	// detectors had right than it corrected, a flat 30 corrected fewer on
	// the sets' first, blind runs, and a flat 15 overrode a sure reading
	// of a database failover by 0.9.
	mechanismBonus         = 5.0
	mechanismPerConfidence = 15.0
	// overrideMargin: the wording overrides a mechanism reading only when
	// its category scores at least this much (log-odds) above the
	// reading's with its weight: a reading within the margin is too close
	// to call, and a term more or less (an incident's own names, another
	// set learned) must not flip it.
	overrideMargin = 1.0
	// minPriorTerms: fewer known terms than this and the prior says
	// nothing (too little text to weigh).
	minPriorTerms = 8
	// unknownHealthyLogOdds: with no mechanism reading, the log-odds of
	// no action needed against a fault above which the diagnosis reads
	// "most likely no action needed". Below the model's own boundary (0):
	// naive Bayes sums dozens of terms, so an incident with no failure
	// mechanism whose words lean only mildly to a fault is no fault more
	// often than not. On the development sets' runtime readings (every
	// set scored with a prior that left it out), no fault without a
	// mechanism reading weighed above -16.8 and the six no-action
	// incidents between -12.6 and 0 read as faults at the boundary 0.
	unknownHealthyLogOdds = -14.0
)

// priorTerms is the document the prior reads, built once per evidence
// model (a round's diagnoses share it; nil ev: built each time): every
// pin's facts (values, not field names), and for each term the pins it
// occurs in (up to three). The alert itself is not read: its words are
// its envelope's and its rule's (a PagerDuty body, a Grafana title), which
// say how it was sent, not what failed; the same incident told in another
// format must read the same.
func (ev *Evidence) priorTerms(pins []*evidencev1.EvidencePin) (catprior.Terms, map[string][]string) {
	if ev == nil {
		return evidenceTerms(pins)
	}
	ev.priorOnce.Do(func() { ev.priorDoc, ev.priorWhere = evidenceTerms(pins) })
	return ev.priorDoc, ev.priorWhere
}

func evidenceTerms(pins []*evidencev1.EvidencePin) (catprior.Terms, map[string][]string) {
	doc := catprior.Terms{}
	where := map[string][]string{}
	for _, p := range pins {
		if p == nil {
			continue
		}
		pt := pinTerms(p)
		for t := range pt {
			doc[t] = struct{}{}
			if len(where[t]) < 3 {
				where[t] = append(where[t], p.GetId())
			}
		}
	}
	return doc, where
}

// pinTerms are the terms of a pin's facts: what the inspected systems
// said, not what was asked of them nor the engine's summaries of it.
func pinTerms(p *evidencev1.EvidencePin) catprior.Terms {
	t := catprior.Terms{}
	for k, v := range p.GetMetadata().GetFields() {
		if factKeys[k] {
			addFacts(t, k, v)
		}
	}
	return t
}

// toolWords are the facts' fields the tools write themselves (a
// describe's findings, a commit's change types as the tools classify it,
// an edit's dotted field paths): the engine's words, left out.
var toolWords = map[string]bool{"signals": true, "change_types": true, "fields": true}

// pathLines are the facts' fields of "path=value" lines: the path is the
// object's format (a key), the value what was set.
var pathLines = map[string]bool{"spec": true, "notes": true}

// addFacts adds the terms of a fact's strings under key (toolWords left
// out, pathLines by their values, instruction-like messages not at all).
func addFacts(t catprior.Terms, key string, v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		s := k.StringValue
		if key == "message" && instructionLike(s) {
			return // data that addresses the reader, set aside as the detectors do (untrusted.go)
		}
		if pathLines[key] {
			if i := strings.IndexByte(s, '='); i >= 0 {
				s = s[i+1:]
			}
		}
		t.AddText(s)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			addFacts(t, key, e)
		}
	case *structpb.Value_StructValue:
		for kk, vv := range k.StructValue.GetFields() {
			if !toolWords[kk] {
				addFacts(t, kk, vv)
			}
		}
	}
}

// factKeys are the pin metadata keys that hold what the inspected systems
// returned (facts); the others (the query run, filters dropped, a pod a
// wildcard resolved to) are the engine's own words, the monitors are
// mostly the alert's rule as its payload describes it (the envelope's
// words, like the alert's), and the series' names are the exporter's
// vocabulary (the detectors read them as signals): the same incident told
// in OpenTelemetry's names must read the same.
var factKeys = map[string]bool{
	facts.KeyPods: true, facts.KeyEvents: true, facts.KeyNodes: true, facts.KeyDeployments: true,
	facts.KeyResources: true, facts.KeyLogLines: true, facts.KeyDeploys: true,
	facts.KeyCommits: true, facts.KeyTopQueries: true, facts.KeyDBEvents: true,
	facts.KeyStatusIncidents: true, facts.KeyObjectChanges: true,
}

// categoryOf maps a prior category name to the contract's enum.
func categoryOf(name string) investigationv1.RootCauseCategory {
	v, ok := investigationv1.RootCauseCategory_value["ROOT_CAUSE_CATEGORY_"+strings.ToUpper(name)]
	if !ok {
		return catUnknown
	}
	return investigationv1.RootCauseCategory(v)
}

// priorReading is the prior's reading of the evidence's document and
// where each term occurs; false when the prior has too little to weigh
// (fewer than minPriorTerms known terms, or one category).
func priorReading(in Input, ev *Evidence) (catprior.Reading, map[string][]string, bool) {
	doc, where := ev.priorTerms(in.Pins)
	r := in.Prior.Score(doc)
	return r, where, r.Known >= minPriorTerms && len(r.Scores) >= 2
}

// priorBasis says what a reading rests on: the incidents weighed, the
// terms known, every category's score and the log-odds of no action.
func priorBasis(m *catprior.Model, r catprior.Reading) string {
	vs := make([]string, 0, len(r.Scores))
	for _, s := range r.Scores {
		vs = append(vs, fmt.Sprintf("%s %.1f", categoryPhrase(s.Category), s.Score))
	}
	return fmt.Sprintf("the wording of the evidence weighed against %d labelled incidents (%d of its terms known; scores: %s; no action needed against a fault: %.1f)", m.Incidents(), r.Known, strings.Join(vs, ", "), r.Healthy)
}

// applyPrior weighs the diagnosis's fault category against the prior and
// says so in the diagnosis: the category it settles on, the terms that
// decided it and the pins they occur in. A healthy diagnosis, or no prior,
// is left as it is.
func applyPrior(in Input, ev *Evidence, d *investigationv1.Diagnosis) {
	if in.Prior == nil || d == nil || d.GetCategory() == catHealthy {
		return
	}
	r, where, ok := priorReading(in, ev)
	if !ok {
		return
	}
	unknown := d.GetCategory() == catUnknown || d.GetCategory() == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED
	if unknown && r.Healthy > unknownHealthyLogOdds && len(r.HealthyTop) > 0 && !ev.anyFailingSeries() {
		// No detector established a failure, and the words do not say
		// fault clearly (they lean to activity that needed no action,
		// planned, approved, a drill, or weigh near the boundary): most
		// likely nothing to do, left for review with a low confidence.
		words, pins := citeTerms(r.HealthyTop, where)
		d.RootCause = strings.TrimSuffix(strings.TrimSpace(d.GetRootCause()), ".") + fmt.Sprintf(". No detector established a failure, and the evidence's wording reads as activity that needed no action rather than a fault (terms: %s): most likely no action needed; review before closing.", strings.Join(words, ", "))
		d.Category = catHealthy
		d.Confidence = min(d.GetConfidence(), nothingFoundConfidence)
		d.Status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW
		d.NonValidatedClaims = append(d.NonValidatedClaims, &investigationv1.Claim{
			Claim: fmt.Sprintf("No action needed, from the wording of the evidence weighed against %d labelled incidents: log-odds %.1f for no action needed against a fault; deciding terms: %s",
				in.Prior.Incidents(), r.Healthy, strings.Join(words, ", ")),
			Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: pins,
		})
		d.ValidatedClaims = append(d.ValidatedClaims, decidingLines(ev, r.HealthyTop, d)...)
		d.ValidatedClaims = append(d.ValidatedClaims, ev.contextClaims(claimsText(d.ValidatedClaims, d.NonValidatedClaims))...)
		return
	}
	reading := categoryWord(d.GetCategory())
	bonus := mechanismBonus + mechanismPerConfidence*min(max(d.GetConfidence(), 0), 1)
	best, bestScore := "", 0.0
	for _, s := range r.Scores {
		v := s.Score
		if s.Category == reading {
			v += bonus
		}
		if best == "" || v > bestScore {
			best, bestScore = s.Category, v
		}
	}
	for _, s := range r.Scores {
		if s.Category == reading && best != reading && bestScore-(s.Score+bonus) < overrideMargin {
			// The wording beats the mechanism reading by less than the
			// margin: too close to call, the mechanism stands.
			best, bestScore = reading, s.Score+bonus
		}
	}
	var top []catprior.Term
	for _, s := range r.Scores {
		if s.Category == best {
			top = s.Top
		}
	}
	words, pins := citeTerms(top, where)
	basis := priorBasis(in.Prior, r)
	if best == reading {
		claim := fmt.Sprintf("The category prior agrees that this is a %s: %s; deciding terms: %s", categoryPhrase(best), basis, strings.Join(words, ", "))
		if lead := r.Scores[0]; lead.Category != reading && lead.Score > bestScore-bonus {
			// The wording leans elsewhere, by less than a mechanism
			// reading weighs: said, not acted on.
			claim = fmt.Sprintf("The category prior leans to %s (%.1f against %.1f for %s), by less than the mechanism reading weighs (%.1f): %s", categoryPhrase(lead.Category), lead.Score, bestScore-bonus, categoryPhrase(reading), bonus, basis)
		}
		d.NonValidatedClaims = append(d.NonValidatedClaims, &investigationv1.Claim{
			Claim: claim, Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: pins,
		})
		d.ValidatedClaims = append(d.ValidatedClaims, decidingLines(ev, top, d)...)
		return
	}
	var sentence string
	if unknown {
		sentence = fmt.Sprintf("No detector established the mechanism; the evidence's wording reads most like a %s (terms: %s)", categoryPhrase(best), strings.Join(words, ", "))
	} else {
		sentence = fmt.Sprintf("The evidence's wording reads as a %s rather than the %s the mechanism reading names (terms: %s)", categoryPhrase(best), categoryPhrase(reading), strings.Join(words, ", "))
	}
	d.RootCause = strings.TrimSuffix(strings.TrimSpace(d.GetRootCause()), ".") + ". " + sentence + "."
	d.Category = categoryOf(best)
	d.NonValidatedClaims = append(d.NonValidatedClaims, &investigationv1.Claim{
		Claim:  fmt.Sprintf("Category %s from %s; deciding terms: %s", categoryPhrase(best), basis, strings.Join(words, ", ")),
		Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: pins,
	})
	d.ValidatedClaims = append(d.ValidatedClaims, decidingLines(ev, top, d)...)
}

// notePriorOnHealth says what the prior reads of a healthy diagnosis
// (a tentative claim with its scores and its log-odds of no action needed
// against a fault), without changing it: a healthy conclusion rests on the
// detectors' reading of recovery, plans or scope.
func notePriorOnHealth(in Input, ev *Evidence, d *investigationv1.Diagnosis) {
	if in.Prior == nil || d == nil || d.GetCategory() != catHealthy {
		return
	}
	r, where, ok := priorReading(in, ev)
	if !ok {
		return
	}
	words, pins := citeTerms(r.HealthyTop, where)
	if r.Healthy < 0 {
		words, pins = citeTerms(r.Scores[0].Top, where)
	}
	d.NonValidatedClaims = append(d.NonValidatedClaims, &investigationv1.Claim{
		Claim:  fmt.Sprintf("The category prior, not weighed against a healthy reading: %s; telling terms: %s", priorBasis(in.Prior, r), strings.Join(words, ", ")),
		Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: pins,
	})
}

// maxDecidingLines bounds the lines quoted for the deciding terms.
const maxDecidingLines = 3

// decidingLines quotes the evidence lines (log lines, events, commit
// messages, as the evidence model decoded them: lines that address the
// reader are already set aside) that carry the most weight of the
// deciding terms, each with its pins: where the words that decided the
// category were written. Lines the diagnosis already quotes are not
// repeated.
func decidingLines(ev *Evidence, top []catprior.Term, d *investigationv1.Diagnosis) []*investigationv1.Claim {
	if ev == nil || len(top) == 0 {
		return nil
	}
	weight := map[string]float64{}
	for _, t := range top {
		weight[t.Term] = t.Weight
	}
	known := claimsText(d.GetValidatedClaims(), d.GetNonValidatedClaims())
	type line struct {
		text  string
		pins  []string
		w     float64
		terms []string
	}
	seen := map[string]bool{}
	// consider weighs a line by the deciding terms it carries; ok when it
	// carries some and is neither quoted already nor seen before.
	consider := func(text, who string, c Cite) (l line, ok bool) {
		text = strings.TrimSpace(text)
		key := strings.ToLower(text[:min(len(text), 80)])
		if text == "" || seen[key] || strings.Contains(known, text[:min(len(text), 60)]) {
			return line{}, false
		}
		seen[key] = true
		tt := catprior.Terms{}
		tt.AddText(text)
		l = line{text: quote(text), pins: c.PinIDs}
		for t := range tt {
			if w, ok := weight[t]; ok {
				l.w += w
				l.terms = append(l.terms, t)
			}
		}
		if l.w <= 0 {
			return line{}, false
		}
		slices.Sort(l.terms)
		if who != "" {
			l.text = who + ": " + l.text
		}
		return l, true
	}
	var lines []line
	keep := func(l line, ok bool) {
		if ok {
			lines = append(lines, l)
		}
	}
	for _, l := range ev.Logs {
		keep(consider(l.Message, firstNonEmptyStr(l.Service, l.Pod, l.Host), l.Cite))
	}
	for _, e := range ev.Events {
		keep(consider(e.Message, strings.Trim(e.InvolvedKind+"/"+e.InvolvedName+" "+e.Reason, "/ "), e.Cite))
	}
	for _, c := range ev.Commits {
		keep(consider(c.Message, "commit "+c.SHA, c.Cite))
	}
	// What a commit changed (its summary, the lines its diff adds or
	// removes) is where a setting's or a call's own words are written:
	// the best of them (the first of equals) is quoted besides the lines
	// above.
	var detail line
	best := func(l line, ok bool) {
		if ok && l.w > detail.w {
			detail = l
		}
	}
	for _, c := range ev.Commits {
		best(consider(c.Summary, "commit "+c.SHA+" summary", c.Cite))
		for _, dl := range changedLines(c.Diff) {
			best(consider(clip(dl, 240), "commit "+c.SHA+" changes", c.Cite))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].w > lines[j].w })
	lines = lines[:min(len(lines), maxDecidingLines)]
	if detail.w > 0 {
		lines = append(lines, detail)
	}
	var out []*investigationv1.Claim
	for _, l := range lines {
		out = append(out, &investigationv1.Claim{
			Claim:  fmt.Sprintf("Where the deciding terms (%s) were written: %s", strings.Join(l.terms, ", "), l.text),
			Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: l.pins,
		})
	}
	return out
}

// changedLines are the lines a unified diff adds or removes, without
// their sign.
func changedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || len(l) < 2 || (l[0] != '+' && l[0] != '-') {
			continue
		}
		if t := strings.TrimSpace(l[1:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// citeTerms are the first five deciding terms and up to six pins they
// occur in.
func citeTerms(top []catprior.Term, where map[string][]string) (words, pins []string) {
	for i, t := range top {
		if i >= 5 {
			break
		}
		words = append(words, t.Term)
		for _, id := range where[t.Term] {
			if !slices.Contains(pins, id) && len(pins) < 6 {
				pins = append(pins, id)
			}
		}
	}
	return words, pins
}

// categoryPhrase is a category name in words ("code defect").
func categoryPhrase(name string) string {
	if name == "" {
		return "unknown failure"
	}
	return strings.ReplaceAll(name, "_", " ")
}

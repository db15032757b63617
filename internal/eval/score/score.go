package score

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Fold lower-cases s and folds every run of non-alphanumeric characters to
// one space (README: "after lower-casing and folding punctuation to spaces").
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// Matcher tests keywords against one text, folding it once.
type Matcher struct {
	folded string
	tokens map[string]bool
}

// NewMatcher prepares text for keyword matching.
func NewMatcher(text string) *Matcher {
	f := Fold(text)
	m := &Matcher{folded: f, tokens: map[string]bool{}}
	for _, t := range strings.Fields(f) {
		m.tokens[t] = true
	}
	return m
}

// Match reports whether keyword appears as a phrase (a substring of the
// folded text) or all its alphanumeric tokens appear among the text's tokens.
// An empty keyword matches.
func (m *Matcher) Match(keyword string) bool {
	k := Fold(keyword)
	if k == "" {
		return true
	}
	if strings.Contains(m.folded, k) {
		return true
	}
	for _, t := range strings.Fields(k) {
		if !m.tokens[t] {
			return false
		}
	}
	return true
}

// MatchKeyword is Match on a one-off text.
func MatchKeyword(text, keyword string) bool { return NewMatcher(text).Match(keyword) }

// ScoredText is the text the keyword rules read: root cause, validated and
// non-validated claims, causal chain and the report.
func ScoredText(r Result) string {
	parts := []string{r.RootCause}
	for _, group := range [][]Text{r.ValidatedClaims, r.NonValidatedClaims, r.CausalChain} {
		for _, t := range group {
			parts = append(parts, string(t))
		}
	}
	parts = append(parts, r.Report)
	return reEngineID.ReplaceAllString(strings.Join(parts, "\n"), " ")
}

// reEngineID matches the identifiers the engine itself mints (pin,
// investigation and session ids): references, not diagnosis text. Left in,
// a numeric keyword ("201", "503") would match inside a pin's hex digits.
var reEngineID = regexp.MustCompile(`\b(?:pin_[0-9a-f]{8,}|inv-[0-9a-f]{8,}|inc-[0-9a-f]{8,}-[a-z0-9]+)\b`)

// ReasoningText is the text the ruling-out keywords read: the scored text plus
// the ruled-out entries (which the report normally renders anyway).
func ReasoningText(r Result) string {
	parts := []string{ScoredText(r)}
	for _, t := range r.RuledOut {
		parts = append(parts, string(t))
	}
	return strings.Join(parts, "\n")
}

// Category names (answer.yml root_cause_category values).
const (
	CategoryHealthy           = "healthy"
	CategoryDependencyFailure = "dependency_failure"
)

func normCategory(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "root_cause_category_")
	return strings.ReplaceAll(s, " ", "_")
}

// AcceptedCategories are the categories that satisfy rule 2: the expected one,
// and dependency_failure too when the scenario's failure mode is a DNS
// failure (README: "for the DNS scenario, dependency_failure is accepted").
func AcceptedCategories(a Answer) []string {
	out := []string{normCategory(a.RootCauseCategory)}
	if isDNSFailureMode(a.FailureMode) && out[0] != CategoryDependencyFailure {
		out = append(out, CategoryDependencyFailure)
	}
	return out
}

func isDNSFailureMode(mode string) bool {
	for _, t := range strings.Fields(Fold(mode)) {
		if t == "dns" {
			return true
		}
	}
	return false
}

// Score grades one result against its answer.
func Score(a Answer, r Result) Report {
	rep := Report{ScenarioID: r.ScenarioID}
	text := NewMatcher(ScoredText(r))
	got := normCategory(r.RootCauseCategory)

	// Axis 1.
	if strings.TrimSpace(r.RootCause) != "" {
		rep.Axis1.add(Check{Name: "root_cause", Pass: true})
	} else {
		rep.Axis1.add(Check{Name: "root_cause", Reason: "root cause is empty"})
	}
	accepted := AcceptedCategories(a)
	if contains(accepted, got) {
		rep.Axis1.add(Check{Name: "category", Pass: true, Reason: "got " + got})
	} else {
		rep.Axis1.add(Check{Name: "category", Reason: fmt.Sprintf("expected %s, got %q", strings.Join(accepted, " or "), got)})
	}
	var missing []string
	for _, k := range a.RequiredKeywords {
		if !text.Match(k) {
			missing = append(missing, k)
		}
	}
	rep.Axis1.add(listCheck("required_keywords", missing, "missing keywords"))
	var bad []string
	for _, c := range a.ForbiddenCategories {
		if normCategory(c) == got {
			bad = append(bad, "category "+got)
		}
	}
	for _, k := range a.ForbiddenKeywords {
		if text.Match(k) {
			bad = append(bad, "keyword "+k)
		}
	}
	rep.Axis1.add(listCheck("forbidden", bad, "forbidden content present"))
	consulted := map[string]bool{}
	for _, s := range r.EvidenceSources {
		consulted[strings.ToLower(strings.TrimSpace(s))] = true
	}
	var notConsulted []string
	for _, s := range a.RequiredEvidenceSources {
		if !consulted[strings.ToLower(strings.TrimSpace(s))] {
			notConsulted = append(notConsulted, s)
		}
	}
	rep.Axis1.add(listCheck("evidence_sources", notConsulted, "required evidence sources not consulted"))
	rep.Axis1.finish()
	rep.Pass = rep.Axis1.Pass

	// Trajectory.
	executed := ExecutedActions(r.ToolsCalled)
	var notCalled []string
	for _, act := range a.OptimalTrajectory {
		if !executed[normAction(act)] {
			notCalled = append(notCalled, act)
		}
	}
	rep.Trajectory.add(listCheck("optimal_trajectory", notCalled, "actions not executed"))
	if a.MaxInvestigationLoops > 0 && r.Loops > a.MaxInvestigationLoops {
		rep.Trajectory.add(Check{Name: "loops", Reason: fmt.Sprintf("used %d loops, budget %d", r.Loops, a.MaxInvestigationLoops)})
	} else {
		rep.Trajectory.add(Check{Name: "loops", Pass: true, Reason: fmt.Sprintf("used %d loops", r.Loops)})
	}
	rep.Trajectory.finish()

	// Axis 2.
	rep.Axis2Applicable = len(a.RulingOutKeywords) > 0 || len(a.RequiredQueries) > 0
	reasoning := NewMatcher(ReasoningText(r))
	var missingRO []string
	for _, k := range a.RulingOutKeywords {
		if !reasoning.Match(k) {
			missingRO = append(missingRO, k)
		}
	}
	rep.Axis2.add(listCheck("ruling_out_keywords", missingRO, "missing ruling-out keywords"))
	var notQueried []string
	for _, q := range a.RequiredQueries {
		if !executed[normAction(q)] {
			notQueried = append(notQueried, q)
		}
	}
	rep.Axis2.add(listCheck("required_queries", notQueried, "queries not made"))
	rep.Axis2.finish()

	rep.Entity = ScoreEntities(a, r)
	rep.NoFault = normCategory(a.RootCauseCategory) == CategoryHealthy
	rep.FalsePositive = rep.NoFault && got != CategoryHealthy
	return rep
}

func listCheck(name string, items []string, what string) Check {
	if len(items) == 0 {
		return Check{Name: name, Pass: true}
	}
	return Check{Name: name, Reason: what + ": " + strings.Join(items, ", ")}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ScoreEntities computes the ranking metrics of the culprit among the
// result's hypotheses (their entities, best first; the root cause entity
// leads when no hypothesis carries one).
func ScoreEntities(a Answer, r Result) EntityScore {
	var es EntityScore
	if strings.TrimSpace(a.RootCauseEntity) == "" {
		return es
	}
	es.Applicable = true
	accept := append([]string{a.RootCauseEntity}, a.AcceptableEntities...)
	ranked := RankedEntities(r)
	for i, e := range ranked {
		if entityMatches(e, accept) {
			es.Rank = i + 1
			break
		}
	}
	if es.Rank > 0 {
		es.MRR = 1 / float64(es.Rank)
		if es.Rank <= 1 {
			es.AC1 = 1
		}
		if es.Rank <= 3 {
			es.AC3 = 1
		}
		hits := 0.0
		for k := 1; k <= 5; k++ {
			if es.Rank <= k {
				hits++
			}
		}
		es.Avg5 = hits / 5
	}
	max := a.RootCauseRankMax
	if max <= 0 {
		max = 1
	}
	es.Pass = es.Rank > 0 && es.Rank <= max
	return es
}

// RankedEntities lists distinct entities in rank order.
func RankedEntities(r Result) []string {
	var out []string
	seen := map[string]bool{}
	add := func(e string) {
		k := strings.ToLower(strings.TrimSpace(e))
		if k == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, e)
	}
	for _, h := range r.Hypotheses {
		add(h.Entity)
	}
	if len(out) == 0 {
		add(r.RootCauseEntity)
	}
	return out
}

// entityMatches compares kind/name or kind/namespace/name loosely: equal
// after normalisation, or the same kind and the same final name.
func entityMatches(got string, accept []string) bool {
	g := strings.ToLower(strings.TrimSpace(got))
	gk, gn := kindName(g)
	for _, a := range accept {
		w := strings.ToLower(strings.TrimSpace(a))
		if w == "" {
			continue
		}
		if g == w {
			return true
		}
		wk, wn := kindName(w)
		if gk != "" && gk == wk && gn == wn {
			return true
		}
	}
	return false
}

func kindName(e string) (string, string) {
	parts := strings.Split(e, "/")
	if len(parts) < 2 {
		return "", e
	}
	return parts[0], parts[len(parts)-1]
}

// Summary aggregates reports.
type Summary struct {
	Scenarios        int      `json:"scenarios"`
	Axis1Passed      int      `json:"axis1_passed"`
	TrajectoryPassed int      `json:"trajectory_passed"`
	Axis2Applicable  int      `json:"axis2_applicable"`
	Axis2Passed      int      `json:"axis2_passed"`
	EntityScenarios  int      `json:"entity_scenarios"`
	AC1              float64  `json:"ac1"`
	AC3              float64  `json:"ac3"`
	Avg5             float64  `json:"avg5"`
	MRR              float64  `json:"mrr"`
	NoFault          int      `json:"no_fault"`
	FalsePositives   int      `json:"false_positives"`
	Failed           []string `json:"failed,omitempty"`
}

// Summarize aggregates per-scenario reports; entity metrics are means over
// the scenarios that name an entity.
func Summarize(reports []Report) Summary {
	var s Summary
	for _, r := range reports {
		s.Scenarios++
		if r.Axis1.Pass {
			s.Axis1Passed++
		} else {
			s.Failed = append(s.Failed, r.ScenarioID)
		}
		if r.Trajectory.Pass {
			s.TrajectoryPassed++
		}
		if r.Axis2Applicable {
			s.Axis2Applicable++
			if r.Axis2.Pass {
				s.Axis2Passed++
			}
		}
		if r.Entity.Applicable {
			s.EntityScenarios++
			s.AC1 += r.Entity.AC1
			s.AC3 += r.Entity.AC3
			s.Avg5 += r.Entity.Avg5
			s.MRR += r.Entity.MRR
		}
		if r.NoFault {
			s.NoFault++
			if r.FalsePositive {
				s.FalsePositives++
			}
		}
	}
	if s.EntityScenarios > 0 {
		n := float64(s.EntityScenarios)
		s.AC1, s.AC3, s.Avg5, s.MRR = s.AC1/n, s.AC3/n, s.Avg5/n, s.MRR/n
	}
	sort.Strings(s.Failed)
	return s
}

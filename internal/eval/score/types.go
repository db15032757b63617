// Package score grades one investigation result against a scenario's ground
// truth with the rules of the opensre synthetic suite
// (its README, "Scoring, as the suite's authors score it"): axis 1 (root cause,
// category, required and forbidden keywords, required evidence sources),
// trajectory (optimal actions executed within the loop budget), axis 2
// (ruling-out keywords, required queries), plus entity ranking metrics
// (AC@1, AC@3, Avg@5, MRR) and a false-positive flag for no-fault scenarios.
package score

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Answer is a scenario's ground truth (answer.yml). model_response is
// deliberately not read: a diagnosis must be built from evidence.
type Answer struct {
	RootCauseCategory       string   `yaml:"root_cause_category" json:"root_cause_category"`
	RequiredKeywords        []string `yaml:"required_keywords" json:"required_keywords,omitempty"`
	ForbiddenCategories     []string `yaml:"forbidden_categories" json:"forbidden_categories,omitempty"`
	ForbiddenKeywords       []string `yaml:"forbidden_keywords" json:"forbidden_keywords,omitempty"`
	RequiredEvidenceSources []string `yaml:"required_evidence_sources" json:"required_evidence_sources,omitempty"`
	OptimalTrajectory       []string `yaml:"optimal_trajectory" json:"optimal_trajectory,omitempty"`
	MaxInvestigationLoops   int      `yaml:"max_investigation_loops" json:"max_investigation_loops,omitempty"`
	RulingOutKeywords       []string `yaml:"ruling_out_keywords" json:"ruling_out_keywords,omitempty"`
	RequiredQueries         []string `yaml:"required_queries" json:"required_queries,omitempty"`
	// rcamesh's additions to the opensre keys.
	RootCauseEntity    string   `yaml:"root_cause_entity" json:"root_cause_entity,omitempty"`
	AcceptableEntities []string `yaml:"acceptable_entities" json:"acceptable_entities,omitempty"`
	RootCauseRankMax   int      `yaml:"root_cause_rank_max" json:"root_cause_rank_max,omitempty"`
	// FailureMode is the scenario's failure_mode (scenario.yml, not
	// answer.yml); the caller copies it in. It decides the DNS category
	// allowance of README rule 2.
	FailureMode string `yaml:"failure_mode" json:"failure_mode,omitempty"`
}

// ParseAnswer decodes answer.yml bytes. Unknown keys are ignored.
func ParseAnswer(b []byte) (Answer, error) {
	var a Answer
	if len(bytes.TrimSpace(b)) == 0 {
		return a, fmt.Errorf("score: empty answer")
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("score: parse answer: %w", err)
	}
	if strings.TrimSpace(a.RootCauseCategory) == "" {
		return a, fmt.Errorf("score: answer has no root_cause_category")
	}
	return a, nil
}

// Text is a claim, chain step or ruled-out entry: the engine may emit a plain
// string or an object with a claim/text field (ruled-out objects carry
// alternative and reason).
type Text string

// UnmarshalJSON accepts a string or an object.
func (t *Text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		*t = ""
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("score: text: %w", err)
		}
		*t = Text(s)
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("score: text must be a string or an object: %w", err)
	}
	var parts []string
	for _, k := range []string{"claim", "text", "alternative", "reason", "statement"} {
		if s, ok := obj[k].(string); ok && s != "" {
			parts = append(parts, s)
		}
	}
	*t = Text(strings.Join(parts, ": "))
	return nil
}

// Hypothesis is one ranked hypothesis of the result.
type Hypothesis struct {
	Statement  string   `json:"statement,omitempty"`
	Entity     string   `json:"entity,omitempty"`
	Category   string   `json:"category,omitempty"`
	Confidence float64  `json:"confidence,omitempty"`
	PinIDs     []string `json:"pin_ids,omitempty"`
}

// ToolCall is one executed tool call.
type ToolCall struct {
	Intent string         `json:"intent"`
	Params map[string]any `json:"params,omitempty"`
}

// Result is what the engine reports for one scenario (Record builds it).
type Result struct {
	ScenarioID         string       `json:"scenario_id"`
	RootCause          string       `json:"root_cause"`
	RootCauseCategory  string       `json:"root_cause_category"`
	RootCauseEntity    string       `json:"root_cause_entity,omitempty"`
	Hypotheses         []Hypothesis `json:"hypotheses,omitempty"`
	ValidatedClaims    []Text       `json:"validated_claims,omitempty"`
	NonValidatedClaims []Text       `json:"non_validated_claims,omitempty"`
	CausalChain        []Text       `json:"causal_chain,omitempty"`
	RuledOut           []Text       `json:"ruled_out,omitempty"`
	RemediationSteps   []Text       `json:"remediation_steps,omitempty"`
	Confidence         float64      `json:"confidence"`
	ToolsCalled        []ToolCall   `json:"tools_called,omitempty"`
	EvidenceSources    []string     `json:"evidence_sources,omitempty"`
	Loops              int          `json:"loops"`
	LLMCalls           int          `json:"llm_calls"`
	Tokens             int64        `json:"tokens"`
	WallMS             int64        `json:"wall_ms"`
	Report             string       `json:"report,omitempty"`
}

// ParseResult decodes one scoring JSON object.
func ParseResult(b []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("score: parse result: %w", err)
	}
	return r, nil
}

// Check is one graded condition.
type Check struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
}

// Axis is a group of checks; it passes when every check passes.
type Axis struct {
	Pass   bool    `json:"pass"`
	Checks []Check `json:"checks"`
}

func (a *Axis) add(c Check) { a.Checks = append(a.Checks, c) }

func (a *Axis) finish() {
	a.Pass = true
	for _, c := range a.Checks {
		if !c.Pass {
			a.Pass = false
		}
	}
}

// Failures returns the reasons of the failed checks.
func (a Axis) Failures() []string {
	var out []string
	for _, c := range a.Checks {
		if !c.Pass {
			out = append(out, c.Name+": "+c.Reason)
		}
	}
	return out
}

// EntityScore ranks the culprit among the result's hypotheses.
type EntityScore struct {
	// Applicable is false when the answer names no root_cause_entity.
	Applicable bool    `json:"applicable"`
	Rank       int     `json:"rank"` // 1-based; 0 = not found
	AC1        float64 `json:"ac1"`
	AC3        float64 `json:"ac3"`
	Avg5       float64 `json:"avg5"`
	MRR        float64 `json:"mrr"`
	// Pass: found within root_cause_rank_max (default 1).
	Pass bool `json:"pass"`
}

// Report is the grade of one scenario.
type Report struct {
	ScenarioID string `json:"scenario_id"`
	// Pass is the suite's scenario verdict: axis 1 holds.
	Pass       bool `json:"pass"`
	Axis1      Axis `json:"axis1"`
	Trajectory Axis `json:"trajectory"`
	// Axis2Applicable is false when the answer has neither ruling-out
	// keywords nor required queries.
	Axis2Applicable bool        `json:"axis2_applicable"`
	Axis2           Axis        `json:"axis2"`
	Entity          EntityScore `json:"entity"`
	// NoFault: the expected category is healthy; FalsePositive: the result
	// still reported a fault.
	NoFault       bool `json:"no_fault"`
	FalsePositive bool `json:"false_positive"`
}

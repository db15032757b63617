// Package sast triages static-analysis findings: SARIF 2.1.0
// intake, one investigation per finding (the analyser of javaflow, the
// skeptical evaluator and the bounded loop of claims, evidence and
// unknowns), and the outputs (JSON, markdown, SARIF with the verdict in
// suppressions).
package sast

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxSARIFBytes caps a SARIF document.
const MaxSARIFBytes = 64 << 20

// Finding is one SARIF result to triage.
type Finding struct {
	Index     int    `json:"index"` // position in the SARIF (run-major)
	Run       int    `json:"run"`
	Result    int    `json:"result"`
	RuleID    string `json:"ruleId"`
	Message   string `json:"message,omitempty"`
	File      string `json:"file"`
	StartLine int    `json:"startLine"`
	StartCol  int    `json:"startColumn,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	CWEs      []int  `json:"cwes,omitempty"`
	Category  string `json:"category"`
	// Err is set when the result cannot be triaged (bad location...).
	Err string `json:"error,omitempty"`
}

type sarifLog struct {
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool struct {
		Driver struct {
			Name  string      `json:"name"`
			Rules []sarifRule `json:"rules"`
		} `json:"driver"`
	} `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifRule struct {
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties"`
}

type sarifResult struct {
	RuleID    string `json:"ruleId"`
	RuleIndex *int   `json:"ruleIndex"`
	Rule      *struct {
		ID string `json:"id"`
	} `json:"rule"`
	Message struct {
		Text string `json:"text"`
	} `json:"message"`
	Locations []struct {
		PhysicalLocation *struct {
			ArtifactLocation *struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region *struct {
				StartLine   int `json:"startLine"`
				StartColumn int `json:"startColumn"`
				EndLine     int `json:"endLine"`
			} `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
	Properties json.RawMessage `json:"properties"`
}

// ErrSARIF marks a document that is not usable SARIF.
var ErrSARIF = errors.New("invalid SARIF")

var cweRe = regexp.MustCompile(`(?i)\bCWE[-_ ]?(\d{1,5})\b`)

// cweEquivalent are the OWASP scorecard's CWE equivalences.
var cweEquivalent = map[int]int{23: 22, 35: 22, 80: 79, 326: 327, 329: 327, 696: 327, 338: 330}

// categoryOfCWE maps a CWE to the analyser's category.
var categoryOfCWE = map[int]string{
	89: "sqli", 78: "cmdi", 22: "pathtraver", 79: "xss", 90: "ldapi", 643: "xpathi",
	501: "trustbound", 330: "weakrand", 328: "hash", 327: "crypto", 614: "securecookie", 1004: "httponly",
}

// CWEOfCategory is the inverse of categoryOfCWE.
var CWEOfCategory = map[string]int{}

func init() {
	for c, k := range categoryOfCWE {
		CWEOfCategory[k] = c
	}
	CWEOfCategory["samesite"] = 352
}

// NormalizeCWE applies the scorecard equivalences.
func NormalizeCWE(c int) int {
	if e, ok := cweEquivalent[c]; ok {
		return e
	}
	return c
}

func cwesIn(raw json.RawMessage) []int {
	if len(raw) == 0 {
		return nil
	}
	var props map[string]any
	if json.Unmarshal(raw, &props) != nil {
		return nil
	}
	var out []int
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case string:
			for _, m := range cweRe.FindAllStringSubmatch(x, -1) {
				if n, err := strconv.Atoi(m[1]); err == nil {
					out = append(out, n)
				}
			}
		case []any:
			for _, e := range x {
				visit(e)
			}
		}
	}
	visit(props["cwe"])
	visit(props["tags"])
	return out
}

// ParseSARIF reads the findings of a SARIF 2.1.0 document. A document that
// cannot be decoded is an error; a result with a bad location is returned
// with Err set so that the others go on.
func ParseSARIF(b []byte) ([]Finding, error) {
	if len(b) > MaxSARIFBytes {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrSARIF, len(b), MaxSARIFBytes)
	}
	var log sarifLog
	if err := json.Unmarshal(b, &log); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSARIF, err)
	}
	if log.Version != "" && log.Version != "2.1.0" {
		return nil, fmt.Errorf("%w: version %q (want 2.1.0)", ErrSARIF, log.Version)
	}
	if log.Runs == nil {
		return nil, fmt.Errorf("%w: no runs", ErrSARIF)
	}
	var out []Finding
	for ri, run := range log.Runs {
		rules := map[string]sarifRule{}
		for _, r := range run.Tool.Driver.Rules {
			rules[r.ID] = r
		}
		for xi, res := range run.Results {
			f := Finding{Index: len(out), Run: ri, Result: xi, RuleID: res.RuleID, Message: res.Message.Text}
			if f.RuleID == "" && res.Rule != nil {
				f.RuleID = res.Rule.ID
			}
			var rule sarifRule
			if res.RuleIndex != nil && *res.RuleIndex >= 0 && *res.RuleIndex < len(run.Tool.Driver.Rules) {
				rule = run.Tool.Driver.Rules[*res.RuleIndex]
				if f.RuleID == "" {
					f.RuleID = rule.ID
				}
			} else {
				rule = rules[f.RuleID]
			}
			seen := map[int]bool{}
			for _, c := range append(cwesIn(res.Properties), cwesIn(rule.Properties)...) {
				c = NormalizeCWE(c)
				if !seen[c] {
					seen[c] = true
					f.CWEs = append(f.CWEs, c)
				}
			}
			f.Category = categorize(f.RuleID, f.CWEs)
			switch {
			case len(res.Locations) == 0 || res.Locations[0].PhysicalLocation == nil ||
				res.Locations[0].PhysicalLocation.ArtifactLocation == nil || res.Locations[0].PhysicalLocation.ArtifactLocation.URI == "":
				f.Err = "the result has no file location"
			default:
				pl := res.Locations[0].PhysicalLocation
				f.File = pl.ArtifactLocation.URI
				if pl.Region == nil || pl.Region.StartLine < 1 {
					f.Err = "the result has no start line"
				} else {
					f.StartLine, f.StartCol, f.EndLine = pl.Region.StartLine, pl.Region.StartColumn, pl.Region.EndLine
				}
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// Categories are the OWASP categories the analyser has checklists for.
var Categories = []string{"cmdi", "crypto", "hash", "ldapi", "pathtraver", "securecookie", "sqli", "trustbound", "weakrand", "xpathi", "xss"}

func categorize(rule string, cwes []int) string {
	r := strings.ToLower(rule)
	for _, c := range Categories {
		if r == c {
			return c
		}
	}
	if strings.Contains(r, "samesite") {
		return "samesite"
	}
	for _, c := range cwes {
		if k, ok := categoryOfCWE[c]; ok {
			return k
		}
	}
	return ""
}

package sast

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
)

// Markdown is the triage report.
func Markdown(rs []Result) string {
	var b strings.Builder
	sum := Summary(rs)
	fmt.Fprintf(&b, "# SAST triage\n\n%d findings: %d TRUE_POSITIVE, %d FALSE_POSITIVE, %d NEEDS_REVIEW\n\n",
		len(rs), sum[javaflow.TruePositive], sum[javaflow.FalsePositive], sum[javaflow.NeedsReview])
	b.WriteString("| # | rule | location | verdict | reason |\n|---|---|---|---|---|\n")
	for i, r := range rs {
		fmt.Fprintf(&b, "| %d | %s | %s:%d | %s | %s |\n", i+1, r.Finding.RuleID, r.Finding.File, r.Finding.StartLine, r.Verdict, mdCell(r.Reason))
	}
	for i, r := range rs {
		fmt.Fprintf(&b, "\n## %d. %s at %s:%d: %s\n\n%s\n", i+1, r.Finding.RuleID, r.Finding.File, r.Finding.StartLine, r.Verdict, r.Reason)
		if r.Error != "" {
			fmt.Fprintf(&b, "\n**Error:** %s\n", r.Error)
		}
		cites := map[string]Citation{}
		for _, c := range r.Evidence {
			cites[c.ID] = c
		}
		if len(r.Claims) > 0 {
			b.WriteString("\n**Claims**\n\n")
			for _, c := range r.Claims {
				fmt.Fprintf(&b, "- [%s] %s (%s)\n", c.Status, c.Text, strings.Join(c.Evidence, ", "))
			}
		}
		if len(r.Evidence) > 0 {
			b.WriteString("\n**Evidence**\n\n")
			for _, c := range r.Evidence {
				fmt.Fprintf(&b, "- %s `%s:%d`: %s\n\n  ```java\n  %s\n  ```\n", c.ID, c.File, c.StartLine, c.Note, strings.TrimSpace(c.Snippet))
			}
		}
		if len(r.Unknowns) > 0 {
			b.WriteString("\n**Unknowns**\n\n")
			for _, u := range r.Unknowns {
				fmt.Fprintf(&b, "- %s\n", u)
			}
		}
		if len(r.NextFetches) > 0 {
			b.WriteString("\n**Next fetches**\n\n")
			for _, u := range r.NextFetches {
				fmt.Fprintf(&b, "- %s\n", u)
			}
		}
		fmt.Fprintf(&b, "\nStop: %s; cost: %d tool calls, %d iterations, %.1f ms\n", r.StopReason, r.Cost.ToolCalls, r.Cost.Iterations, r.Cost.WallMS)
	}
	return b.String()
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

// AnnotateSARIF returns the input SARIF with each triaged result carrying
// the verdict: a suppression (with justification) for FALSE_POSITIVE, an
// under-review suppression for NEEDS_REVIEW, and rcamesh/* properties on
// every result.
func AnnotateSARIF(in []byte, rs []Result) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(in, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSARIF, err)
	}
	byPos := map[[2]int]Result{}
	for _, r := range rs {
		byPos[[2]int{r.Finding.Run, r.Finding.Result}] = r
	}
	runs, _ := doc["runs"].([]any)
	for ri, run := range runs {
		rm, _ := run.(map[string]any)
		results, _ := rm["results"].([]any)
		for xi, res := range results {
			m, ok := res.(map[string]any)
			if !ok {
				continue
			}
			r, ok := byPos[[2]int{ri, xi}]
			if !ok {
				continue
			}
			props, _ := m["properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
			}
			props["rcamesh/verdict"] = r.Verdict
			props["rcamesh/reason"] = r.Reason
			props["rcamesh/stopReason"] = r.StopReason
			if len(r.Claims) > 0 {
				props["rcamesh/claims"] = r.Claims
			}
			if len(r.Evidence) > 0 {
				props["rcamesh/evidence"] = r.Evidence
			}
			if len(r.Unknowns) > 0 {
				props["rcamesh/unknowns"] = r.Unknowns
			}
			if r.Error != "" {
				props["rcamesh/error"] = r.Error
			}
			m["properties"] = props
			sups, _ := m["suppressions"].([]any)
			switch r.Verdict {
			case javaflow.FalsePositive:
				sups = append(sups, map[string]any{"kind": "external", "status": "accepted", "justification": "rcamesh triage: false positive: " + r.Reason})
			case javaflow.NeedsReview:
				sups = append(sups, map[string]any{"kind": "external", "status": "underReview", "justification": "rcamesh triage: needs review: " + r.Reason})
			}
			if sups != nil {
				m["suppressions"] = sups
			}
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// Verdicts renders one JSON line per result: the reference scorer's format
// ({"test"...} is the caller's; here the finding's location and CWE).
func Verdicts(rs []Result) []map[string]any {
	out := make([]map[string]any, 0, len(rs))
	for _, r := range rs {
		m := map[string]any{"file": r.Finding.File, "line": r.Finding.StartLine, "ruleId": r.Finding.RuleID, "verdict": r.Verdict}
		if c := primaryCWE(r.Finding); c != 0 {
			m["cwe"] = c
		}
		out = append(out, m)
	}
	return out
}

func primaryCWE(f Finding) int {
	if c, ok := CWEOfCategory[f.Category]; ok {
		return c
	}
	cs := append([]int(nil), f.CWEs...)
	sort.Ints(cs)
	if len(cs) > 0 {
		return cs[0]
	}
	return 0
}

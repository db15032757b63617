package sast

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
)

// Citation is a piece of raw code evidence.
type Citation struct {
	ID        string `json:"id"`
	File      string `json:"file"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Snippet   string `json:"snippet"`
	Note      string `json:"note,omitempty"`
}

// Claim is an atomic assertion with the citations that show it.
type Claim struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Status   string   `json:"status"` // supported | tentative | rejected | conflicting
	Evidence []string `json:"evidence"`
}

// Package is the evidence package the agent submits to the evaluator.
type Package struct {
	Category string     `json:"category"`
	Verdict  string     `json:"verdict"`
	Analysis string     `json:"analysis"`
	Claims   []Claim    `json:"claims"`
	Evidence []Citation `json:"evidence"`
	Unknowns []string   `json:"unknowns,omitempty"`
}

// Rejection is one refusal of the evaluator.
type Rejection struct {
	BlockingGaps  []string `json:"blockingGaps"`
	RequiredFetch []string `json:"requiredNextFetches,omitempty"`
}

// Verification is the evaluator's answer.
type Verification struct {
	Passed bool      `json:"verificationPassed"`
	Reject Rejection `json:"rejection,omitempty"`
}

// checkItem is one false-positive criterion of a category's checklist: the
// claim that answers it and the raw code its evidence must show.
type checkItem struct {
	claim    string
	question string
	shows    *regexp.Regexp // a cited snippet must match
	verdicts string         // which verdicts need it: "TP", "FP" or "TP,FP"
}

var (
	reSource = regexp.MustCompile(`getParameter|getHeader|getQueryString|getCookies|getReader|getInputStream|getRequestURI|getPathInfo|getPart|getTheParameter|getTheCookie|getParameterValues|getParameterMap|getParameterNames|getHeaders|getHeaderNames|getValue\(\)`)
	reAlg    = regexp.MustCompile(`getInstance|getProperty|=|getCipher|return`)
	reRandom = regexp.MustCompile(`(?i)random`)
	reCookie = regexp.MustCompile(`setSecure|setHttpOnly|addCookie|Cookie`)
)

var taintChecklist = []checkItem{
	{"source", "is the source attacker-controlled?", reSource, "TP,FP"},
	{"path", "does the value reach the sink on a feasible path?", nil, "TP"},
	{"sanitiser", "is it sanitised or replaced on the way?", nil, "TP"},
}

// Checklists are the per-category false-positive criteria.
var checklists = map[string][]checkItem{
	"weakrand":     {{"algorithm", "is the generator a predictable one?", reRandom, "TP,FP"}},
	"hash":         {{"algorithm", "is the configuration that decides the algorithm read from a file that says otherwise?", reAlg, "TP,FP"}},
	"crypto":       {{"algorithm", "is the configuration that decides the algorithm read from a file that says otherwise?", reAlg, "TP,FP"}},
	"securecookie": {{"flag", "is the API called with a safe argument?", reCookie, "TP,FP"}},
	"httponly":     {{"flag", "is the API called with a safe argument?", reCookie, "TP,FP"}},
	"samesite":     {{"flag", "is a SameSite attribute set?", reCookie, "TP"}},
}

func checklist(cat string) []checkItem {
	if javaflow.TaintCategories[cat] {
		return taintChecklist
	}
	return checklists[cat]
}

// SourceReader reads a file of the repository for the evaluator, which
// re-reads every cited snippet.
type SourceReader func(path string) ([]string, error)

// Evaluate is the skeptical evaluator: it assumes the agent missed
// something and rejects unless the raw code in the evidence shows every
// claim, and every item of the category's checklist is answered.
func Evaluate(p Package, read SourceReader) Verification {
	var gaps, fetch []string
	if p.Verdict != javaflow.TruePositive && p.Verdict != javaflow.FalsePositive {
		gaps = append(gaps, "verdict "+p.Verdict+" is not a final verdict")
		return Verification{Reject: Rejection{BlockingGaps: gaps}}
	}
	if len(p.Unknowns) > 0 {
		for _, u := range p.Unknowns {
			gaps = append(gaps, "open unknown: "+u)
		}
	}
	cites := map[string]Citation{}
	for _, c := range p.Evidence {
		cites[c.ID] = c
		lines, err := read(c.File)
		if err != nil {
			gaps = append(gaps, fmt.Sprintf("evidence %s: %s cannot be read: %v", c.ID, c.File, err))
			fetch = append(fetch, "fetch_code "+c.File)
			continue
		}
		if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > len(lines) {
			gaps = append(gaps, fmt.Sprintf("evidence %s: lines %d-%d are not in %s", c.ID, c.StartLine, c.EndLine, c.File))
			continue
		}
		if strings.Join(lines[c.StartLine-1:c.EndLine], "\n") != c.Snippet {
			gaps = append(gaps, fmt.Sprintf("evidence %s: the snippet is not the raw code of %s:%d-%d", c.ID, c.File, c.StartLine, c.EndLine))
			fetch = append(fetch, fmt.Sprintf("fetch_code %s:%d-%d", c.File, c.StartLine, c.EndLine))
		}
	}
	byID := map[string]Claim{}
	for _, cl := range p.Claims {
		byID[cl.ID] = cl
		if cl.Status != "supported" {
			gaps = append(gaps, "claim "+cl.ID+" is "+cl.Status+", not supported")
		}
		if len(cl.Evidence) == 0 {
			gaps = append(gaps, "claim "+cl.ID+" cites no code")
		}
		for _, id := range cl.Evidence {
			if _, ok := cites[id]; !ok {
				gaps = append(gaps, "claim "+cl.ID+" cites missing evidence "+id)
			}
		}
	}
	v := "TP"
	if p.Verdict == javaflow.FalsePositive {
		v = "FP"
	}
	items := checklist(p.Category)
	if items == nil {
		gaps = append(gaps, "no checklist for category "+p.Category)
	}
	for _, it := range items {
		if !strings.Contains(it.verdicts, v) {
			continue
		}
		cl, ok := byID[it.claim]
		if !ok {
			if v == "FP" && it.claim == "source" {
				if _, ok := byID["sanitiser"]; ok { // a sanitised flow answers it
					continue
				}
			}
			gaps = append(gaps, "checklist: "+it.question+" (no "+it.claim+" claim)")
			continue
		}
		if it.shows != nil && (it.claim != "source" || v == "TP") {
			shown := false
			for _, id := range cl.Evidence {
				if c, ok := cites[id]; ok && it.shows.MatchString(c.Snippet) {
					shown = true
				}
			}
			if !shown {
				gaps = append(gaps, "checklist: "+it.question+" (the "+it.claim+" claim's evidence does not show it)")
			}
		}
	}
	if len(gaps) > 0 {
		return Verification{Reject: Rejection{BlockingGaps: gaps, RequiredFetch: fetch}}
	}
	return Verification{Passed: true}
}

// Package checklist holds the false-positive criteria of SAST triage per
// finding category: what the critic's evaluator requires a
// verdict to answer with code, and what the model agent is told to answer.
package checklist

import (
	"regexp"

	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
)

// Item is one false-positive criterion: the claim that answers it and the
// raw code its evidence must show.
type Item struct {
	// Claim is the id of the claim that answers the item.
	Claim    string
	Question string
	// Shows must match a cited snippet of the claim (nil: any cited code).
	Shows *regexp.Regexp
	// Verdicts that need the item: "TP", "FP" or "TP,FP".
	Verdicts string
}

var (
	reSource = regexp.MustCompile(`getParameter|getHeader|getQueryString|getCookies|getReader|getInputStream|getRequestURI|getPathInfo|getPart|getTheParameter|getTheCookie|getParameterValues|getParameterMap|getParameterNames|getHeaders|getHeaderNames|getValue\(\)`)
	reAlg    = regexp.MustCompile(`getInstance|getProperty|=|getCipher|return`)
	reRandom = regexp.MustCompile(`(?i)random`)
	reCookie = regexp.MustCompile(`setSecure|setHttpOnly|addCookie|Cookie`)
)

// taint serves every injection category: is the source attacker-controlled,
// does the value reach the sink on a feasible path, is it sanitised or
// replaced on the way.
var taint = []Item{
	{"source", "is the source attacker-controlled?", reSource, "TP,FP"},
	{"path", "does the value reach the sink on a feasible path?", nil, "TP"},
	{"sanitiser", "is it sanitised or replaced on the way?", nil, "TP"},
}

// others are the criteria of the categories that are not data flows.
var others = map[string][]Item{
	"weakrand":     {{"algorithm", "is the generator a predictable one?", reRandom, "TP,FP"}},
	"hash":         {{"algorithm", "is the configuration that decides the algorithm read from a file that says otherwise?", reAlg, "TP,FP"}},
	"crypto":       {{"algorithm", "is the configuration that decides the algorithm read from a file that says otherwise?", reAlg, "TP,FP"}},
	"securecookie": {{"flag", "is the API called with a safe argument?", reCookie, "TP,FP"}},
	"httponly":     {{"flag", "is the API called with a safe argument?", reCookie, "TP,FP"}},
	"samesite":     {{"flag", "is a SameSite attribute set?", reCookie, "TP"}},
}

// For is the checklist of a category (nil: none).
func For(category string) []Item {
	if javaflow.TaintCategories[category] {
		return taint
	}
	return others[category]
}

package sast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/redact"
	"github.com/rcamesh/rcamesh/internal/sast/checklist"
)

// ModelAnalyst is the model agent of the triage: the model drives the same
// code tools (list_files, search_codebase, fetch_code) and its evidence
// package goes to the same evaluator. Each Analyse call is one model turn:
// tool calls are run and reported as retrieval; a JSON package is returned
// for evaluation.
type ModelAnalyst struct {
	Model llm.Provider
}

const modelSystem = `You triage one static-analysis finding in a Java repository. You are read-only.
Work from code, never from names or comments. Discovery first: list and search before guessing names.
The invariant: if your verdict relies on an assumption or missing evidence, your next action is a tool call (retrieval), not a verdict.
When every question of the checklist is answered by code you have fetched, answer with one JSON object only:
{"verdict":"TRUE_POSITIVE|FALSE_POSITIVE|NEEDS_REVIEW","analysis":"...","claims":[{"id":"<checklist id>","text":"...","status":"supported|tentative","evidence":[{"file":"path","startLine":N,"endLine":M}]}],"unknowns":["..."]}
A skeptical evaluator re-reads every cited line and rejects claims the raw code does not show.`

var modelTools = []llm.ToolSchema{
	{Name: "list_files", Description: "List repository files under a folder whose names match a glob.", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "glob": map[string]any{"type": "string"}}}},
	{Name: "search_codebase", Description: "Search lines matching a regular expression in a folder or file-name glob.", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"pattern": map[string]any{"type": "string"}, "scope": map[string]any{"type": "string"}}, "required": []string{"pattern"}}},
	{Name: "fetch_code", Description: "Fetch source by symbol (Class, Class.method) or path:start-end.", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"identifier": map[string]any{"type": "string"}}, "required": []string{"identifier"}}},
}

type modelClaim struct {
	ID       string `json:"id"`
	Text     string `json:"text"`
	Status   string `json:"status"`
	Evidence []struct {
		File      string `json:"file"`
		StartLine int    `json:"startLine"`
		EndLine   int    `json:"endLine"`
		Snippet   string `json:"snippet"`
	} `json:"evidence"`
}

type modelPackage struct {
	Verdict  string       `json:"verdict"`
	Analysis string       `json:"analysis"`
	Claims   []modelClaim `json:"claims"`
	Unknowns []string     `json:"unknowns"`
}

var fenceRe = regexp.MustCompile("(?s)```(?:json)?\\s*(\\{.*\\})\\s*```")

func (m *ModelAnalyst) opening(ctx context.Context, st *State) []llm.Message {
	f := st.Finding
	var b strings.Builder
	fmt.Fprintf(&b, "Finding: rule %s (category %s, CWE %v) at %s:%d\nScanner message: %s\n", f.RuleID, f.Category, f.CWEs, f.File, f.StartLine, f.Message)
	if code, err := st.Tools.lines(f.File, f.StartLine-30, f.StartLine+10, ""); err == nil {
		fmt.Fprintf(&b, "\nSource around the finding (%s:%d-%d):\n%s\n", code.File, code.StartLine, code.EndLine, numbered(code))
	}
	b.WriteString("\nChecklist (answer each with a claim of that id):\n")
	for _, it := range checklist.For(f.Category) {
		fmt.Fprintf(&b, "- %s: %s\n", it.Claim, it.Question)
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: modelSystem}, {Role: llm.RoleUser, Content: redact.Text(b.String())}}
}

func numbered(c Code) string {
	var b strings.Builder
	for i, l := range strings.Split(c.Text, "\n") {
		fmt.Fprintf(&b, "%5d  %s\n", c.StartLine+i, l)
	}
	return b.String()
}

// Analyse implements Analyst.
func (m *ModelAnalyst) Analyse(ctx context.Context, st *State) (Package, error) {
	if len(st.Messages) == 0 {
		st.Messages = m.opening(ctx, st)
	}
	if n := len(st.History); n > st.seenRejections {
		rej := st.History[n-1]
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleUser, Content: "The evaluator rejected your package. Blocking gaps:\n- " +
			strings.Join(rej.BlockingGaps, "\n- ") + "\nRequired next fetches: " + strings.Join(rej.RequiredFetch, "; ")})
		st.seenRejections = n
	}
	resp, err := m.Model.Complete(ctx, llm.Request{Messages: st.Messages, Tools: modelTools, Purpose: "sast-triage"})
	if err != nil {
		return Package{}, fmt.Errorf("model: %w", err)
	}
	msg := resp.Message
	st.Messages = append(st.Messages, msg)
	if len(msg.ToolCalls) > 0 {
		st.Tools.LastAdded = 0
		added := 0
		for _, tc := range msg.ToolCalls {
			out := m.runTool(ctx, st, tc)
			added += st.Tools.LastAdded
			st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: redact.Text(out)})
		}
		st.Tools.LastAdded = added
		return Package{}, errRetrieve
	}
	text := msg.Content
	if mm := fenceRe.FindStringSubmatch(text); mm != nil {
		text = mm[1]
	}
	var mp modelPackage
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &mp); err != nil {
		st.Tools.LastAdded = 0
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleUser, Content: "Your answer is not the JSON object asked for: " + err.Error()})
		return Package{}, errRetrieve
	}
	return m.pkg(st, mp), nil
}

func (m *ModelAnalyst) runTool(ctx context.Context, st *State, tc llm.ToolCall) string {
	var a map[string]string
	if err := json.Unmarshal([]byte(tc.Arguments), &a); err != nil {
		return "error: arguments are not a JSON object of strings: " + err.Error()
	}
	var out any
	var err error
	switch tc.Name {
	case "list_files":
		out, err = st.Tools.ListFiles(ctx, a["path"], a["glob"])
	case "search_codebase":
		out, err = st.Tools.SearchCodebase(ctx, a["pattern"], a["scope"])
	case "fetch_code":
		var c Code
		c, err = st.Tools.FetchCode(ctx, a["identifier"])
		if err == nil {
			return fmt.Sprintf("%s:%d-%d %s\n%s", c.File, c.StartLine, c.EndLine, c.Symbol, numbered(c))
		}
	default:
		err = errors.New("unknown tool " + tc.Name)
	}
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func (m *ModelAnalyst) pkg(st *State, mp modelPackage) Package {
	p := Package{Category: st.Finding.Category, Verdict: mp.Verdict, Analysis: mp.Analysis, Unknowns: mp.Unknowns}
	for _, c := range mp.Claims {
		cl := Claim{ID: c.ID, Text: c.Text, Status: c.Status}
		for _, e := range c.Evidence {
			end := e.EndLine
			if end < e.StartLine {
				end = e.StartLine
			}
			cite := Citation{File: e.File, StartLine: e.StartLine, EndLine: end, Snippet: e.Snippet}
			if cite.Snippet == "" { // the agent quotes the raw lines it cites
				if cc, err := st.Tools.Cite(e.File, e.StartLine, end, ""); err == nil {
					cite.Snippet = cc.Snippet
				}
			}
			cite.ID = fmt.Sprintf("E%d", len(p.Evidence)+1)
			p.Evidence = append(p.Evidence, cite)
			cl.Evidence = append(cl.Evidence, cite.ID)
		}
		p.Claims = append(p.Claims, cl)
	}
	return p
}

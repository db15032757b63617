package sast

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/lang"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// Code-tool caps.
const (
	MaxListed       = 500
	MaxMatches      = 200
	MaxFetchedLines = 400
	MaxSearchFiles  = 20000
)

// Tools are the read-only code tools over one repository:
// list_files, search_codebase and fetch_code. Each call is counted and
// traced; retrieved content is what the evaluator re-reads.
type Tools struct {
	repo *repo.Repo
	prog *javaflow.Program

	Calls     int
	LastAdded int // new lines of evidence the last retrieval added
	Trace     []TraceEntry
	fetched   map[string]bool
}

// NewTools serves r.
func NewTools(r *repo.Repo, p *javaflow.Program) *Tools {
	return &Tools{repo: r, prog: p, fetched: map[string]bool{}}
}

func (t *Tools) trace(action, detail string) {
	t.Calls++
	t.Trace = append(t.Trace, TraceEntry{Action: action, Detail: detail})
}

// ListFiles lists files under dir whose name matches glob.
func (t *Tools) ListFiles(_ context.Context, dir, glob string) ([]string, error) {
	t.trace("list_files", dir+" "+glob)
	fs, err := t.repo.Files(dir, glob, MaxListed+1)
	if err != nil {
		return nil, err
	}
	if len(fs) > MaxListed {
		fs = fs[:MaxListed]
	}
	return fs, nil
}

// Match is one search hit.
type Match struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// SearchCodebase finds lines matching a regular expression in files under
// scope (a folder, or a glob on base names such as "*.java").
func (t *Tools) SearchCodebase(ctx context.Context, pattern, scope string) ([]Match, error) {
	t.trace("search_codebase", pattern+" in "+scope)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("search_codebase: pattern: %w", err)
	}
	dir, glob := scope, ""
	if strings.ContainsAny(scope, "*?[") {
		dir, glob = path.Dir(scope), path.Base(scope)
		if dir == "." {
			dir = ""
		}
	}
	files, err := t.repo.Files(dir, glob, MaxSearchFiles)
	if err != nil {
		return nil, err
	}
	var out []Match
	for _, f := range files {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		b, err := t.repo.Read(f)
		if err != nil {
			continue
		}
		for i, l := range strings.Split(string(b), "\n") {
			if re.MatchString(l) {
				out = append(out, Match{File: f, Line: i + 1, Text: strings.TrimSpace(l)})
				if len(out) >= MaxMatches {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// Code is fetched source.
type Code struct {
	File      string `json:"file"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Text      string `json:"text"`
	Symbol    string `json:"symbol,omitempty"`
}

var linesRe = regexp.MustCompile(`^(.+):(\d+)(?:-(\d+))?$`)

// FetchCode fetches "path", "path:a-b" or a symbol ("Class", "Class.method",
// "method") resolved through the parser.
func (t *Tools) FetchCode(ctx context.Context, ident string) (Code, error) {
	t.trace("fetch_code", ident)
	ident = strings.TrimSpace(ident)
	if m := linesRe.FindStringSubmatch(ident); m != nil {
		a, _ := strconv.Atoi(m[2])
		b := a
		if m[3] != "" {
			b, _ = strconv.Atoi(m[3])
		}
		return t.lines(m[1], a, b, "")
	}
	if _, err := t.repo.Resolve(ident); err == nil && strings.Contains(ident, "/") || strings.HasSuffix(ident, ".java") {
		return t.lines(ident, 1, MaxFetchedLines, "")
	}
	return t.symbol(ctx, ident)
}

func (t *Tools) lines(p string, a, b int, sym string) (Code, error) {
	src, err := t.repo.Read(p)
	if err != nil {
		return Code{}, err
	}
	rel, _ := t.repo.Resolve(p)
	ls := strings.Split(string(src), "\n")
	if a < 1 {
		a = 1
	}
	if b > len(ls) {
		b = len(ls)
	}
	if a > len(ls) {
		return Code{}, fmt.Errorf("%s: line %d beyond the end (%d lines)", rel, a, len(ls))
	}
	if b < a {
		b = a
	}
	if b-a+1 > MaxFetchedLines {
		b = a + MaxFetchedLines - 1
	}
	added := 0
	for i := a; i <= b; i++ {
		k := fmt.Sprintf("%s:%d", rel, i)
		if !t.fetched[k] {
			t.fetched[k] = true
			added++
		}
	}
	t.LastAdded = added
	return Code{File: rel, StartLine: a, EndLine: b, Text: strings.Join(ls[a-1:b], "\n"), Symbol: sym}, nil
}

func (t *Tools) symbol(ctx context.Context, ident string) (Code, error) {
	parts := strings.Split(ident, ".")
	cls, member := parts[0], ""
	if len(parts) >= 2 {
		cls, member = parts[len(parts)-2], parts[len(parts)-1]
		if !isUpper(cls) {
			cls, member = parts[len(parts)-1], ""
		}
	}
	var cands []string
	if isUpper(cls) {
		cands = t.repo.ByBase(cls + ".java")
	}
	if len(cands) == 0 {
		all, err := t.repo.Files("", "*.java", MaxSearchFiles)
		if err != nil {
			return Code{}, err
		}
		cands = all
		if !isUpper(cls) {
			member, cls = cls, ""
		}
	}
	for _, c := range cands {
		f, err := t.prog.Load(ctx, c)
		if err != nil {
			continue
		}
		g := lang.ForFile(c)
		for _, s := range g.Symbols(f.Tree.RootNode(), f.Src) {
			if (member == "" && s.Kind == "class" && s.Name == cls) ||
				(member != "" && s.Name == member && (cls == "" || s.Container == cls)) {
				return t.lines(c, s.StartLine, s.EndLine, s.Kind+" "+strings.Trim(s.Container+"."+s.Name, "."))
			}
		}
	}
	t.LastAdded = 0
	return Code{}, fmt.Errorf("fetch_code: symbol %q not found", ident)
}

func isUpper(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

// Lines reads a file for the evaluator (not a tool call of the agent).
func (t *Tools) Lines(p string) ([]string, error) {
	b, err := t.repo.Read(p)
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// Cite makes a citation of raw lines.
func (t *Tools) Cite(p string, a, b int, note string) (Citation, error) {
	ls, err := t.Lines(p)
	if err != nil {
		return Citation{}, err
	}
	if a < 1 || b > len(ls) || b < a {
		return Citation{}, fmt.Errorf("%s:%d-%d: no such lines", p, a, b)
	}
	return Citation{File: p, StartLine: a, EndLine: b, Snippet: strings.Join(ls[a-1:b], "\n"), Note: note}, nil
}

// account books the analyser's own reads as fetch_code and search calls.
func (t *Tools) account(a *javaflow.Analysis) {
	for _, f := range a.Files {
		if !t.fetched[f] {
			t.fetched[f] = true
			t.trace("fetch_code", f)
		}
	}
	for i := 0; i < a.Searches; i++ {
		t.Calls++
	}
	if a.Searches > 0 {
		t.Trace = append(t.Trace, TraceEntry{Action: "search_codebase", Detail: fmt.Sprintf("%d class/resource look-ups", a.Searches)})
	}
}

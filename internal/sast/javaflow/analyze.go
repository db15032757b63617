package javaflow

import (
	"context"
	"fmt"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/rcamesh/rcamesh/internal/sast/lang"
)

// Verdicts.
const (
	TruePositive  = "TRUE_POSITIVE"
	FalsePositive = "FALSE_POSITIVE"
	NeedsReview   = "NEEDS_REVIEW"
)

// Target is where a finding points.
type Target struct {
	File      string
	StartLine int
	StartCol  int // 0: unknown
	EndLine   int // 0: StartLine
	Category  string
}

// Claim is one checkable assertion with the steps that show it.
type Claim struct {
	ID     string // checklist item it answers (source, path, sanitiser, algorithm, flag, reach)
	Text   string
	Status string // supported | tentative | rejected
	Steps  []Step
}

// Analysis is the analyser's result for one finding.
type Analysis struct {
	Verdict  string
	Reason   string
	Claims   []Claim
	Unknowns []string
	Next     []string // recommended next fetches
	Sink     Step
	Files    []string // files read
	Searches int
	Steps    int

	assumed []*Val // tainted values at the sink that come from the method's parameters
}

// sinkNames are the call names (or constructed classes) of each category's
// sinks, used to find the sink at a finding's location.
var sinkNames = map[string][]string{
	"sqli":         {"executeQuery", "executeUpdate", "execute", "prepareCall", "prepareStatement", "addBatch", "queryForObject", "queryForList", "queryForMap", "queryForRowSet", "queryForLong", "queryForInt", "query", "batchUpdate", "update", "executeLargeUpdate", "createQuery", "createNativeQuery", "createSQLQuery"},
	"cmdi":         {"exec", "ProcessBuilder", "command", "start"},
	"pathtraver":   {"File", "FileInputStream", "FileOutputStream", "FileReader", "FileWriter", "RandomAccessFile", "get", "of", "newInputStream", "newOutputStream", "newBufferedReader", "newBufferedWriter", "readAllBytes", "readAllLines", "write", "delete", "copy", "move", "exists", "createFile", "lines", "getResource"},
	"xss":          {"print", "println", "write", "format", "printf", "append"},
	"ldapi":        {"search", "lookup", "list"},
	"xpathi":       {"compile", "evaluate", "selectNodes", "selectSingleNode"},
	"trustbound":   {"setAttribute", "putValue", "setValue"},
	"weakrand":     {"Random", "random", "nextInt", "nextLong", "nextFloat", "nextDouble", "nextGaussian", "nextBytes", "nextBoolean", "ints", "doubles"},
	"hash":         {"getInstance", "digest", "update"},
	"crypto":       {"getInstance", "getCipher", "doFinal", "init"},
	"securecookie": {"addCookie", "setSecure"},
	"httponly":     {"addCookie", "setHttpOnly"},
	"samesite":     {"addCookie", "setHeader", "addHeader"},
}

// TaintCategories decide by data flow from sources to the sink.
var TaintCategories = map[string]bool{"sqli": true, "cmdi": true, "pathtraver": true, "xss": true, "ldapi": true, "xpathi": true, "trustbound": true}

func callName(f *File, n *sitter.Node) string {
	switch n.Type() {
	case "method_invocation":
		return text(f, n.ChildByFieldName("name"))
	case "object_creation_expression", "local_variable_declaration":
		return lastSeg(text(f, n.ChildByFieldName("type")))
	}
	return ""
}

// findSink locates the sink call of a finding.
func findSink(f *File, t Target) (*sitter.Node, string) {
	end := t.EndLine
	if end < t.StartLine {
		end = t.StartLine
	}
	names := map[string]bool{}
	for _, n := range sinkNames[t.Category] {
		names[n] = true
	}
	var exact, onLine, inRegion []*sitter.Node
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		sl, el := lang.Line(n), lang.EndLine(n)
		if el < t.StartLine || sl > end {
			return
		}
		if n.Type() == "method_invocation" || n.Type() == "object_creation_expression" || (n.Type() == "local_variable_declaration" && t.Category == "weakrand") {
			nm := callName(f, n)
			match := names[nm] || len(names) == 0
			if match {
				// a method invocation starts at its receiver; the name's
				// position is where scanners point as well
				pos := []sitter.Point{n.StartPoint()}
				if nn := n.ChildByFieldName("name"); nn != nil {
					pos = append(pos, nn.StartPoint())
				}
				for _, p := range pos {
					if t.StartCol > 0 && int(p.Row)+1 == t.StartLine && int(p.Column)+1 == t.StartCol {
						exact = append(exact, n)
						break
					}
				}
				if sl == t.StartLine {
					onLine = append(onLine, n)
				} else if sl >= t.StartLine && sl <= end {
					inRegion = append(inRegion, n)
				}
			}
		}
		for i := 0; i < int(n.NamedChildCount()); i++ {
			walk(n.NamedChild(i))
		}
	}
	walk(f.Tree.RootNode())
	pickInner := func(ns []*sitter.Node) *sitter.Node {
		best := ns[0]
		for _, n := range ns[1:] {
			if n.EndByte()-n.StartByte() < best.EndByte()-best.StartByte() {
				best = n
			}
		}
		return best
	}
	switch {
	case len(exact) > 0:
		return pickInner(exact), "exact"
	case len(onLine) > 0:
		return onLine[len(onLine)-1], "line"
	case len(inRegion) > 0:
		return inRegion[len(inRegion)-1], "region"
	}
	return nil, ""
}

func enclosing(n *sitter.Node, types ...string) *sitter.Node {
	for p := n.Parent(); p != nil; p = p.Parent() {
		for _, t := range types {
			if p.Type() == t {
				return p
			}
		}
	}
	return nil
}

// Analyze runs the analyser on one finding.
func Analyze(ctx context.Context, prog *Program, t Target) (*Analysis, error) {
	f, err := prog.Load(ctx, t.File)
	if err != nil {
		return nil, err
	}
	if t.StartLine < 1 || t.StartLine > len(f.Lines) {
		return nil, fmt.Errorf("%s: line %d outside the file (%d lines)", f.Path, t.StartLine, len(f.Lines))
	}
	sink, how := findSink(f, t)
	a := &Analysis{}
	if sink == nil {
		a.Verdict = NeedsReview
		a.Reason = "no " + t.Category + " sink call found at the finding's location"
		a.Unknowns = []string{"which call at " + f.Path + ":" + fmt.Sprint(t.StartLine) + " is the sink"}
		a.Next = []string{fmt.Sprintf("fetch_code %s:%d-%d", f.Path, t.StartLine-5, t.StartLine+5)}
		a.Files = []string{f.Path}
		return a, nil
	}
	in := newInterp(ctx, prog, f, sink)
	a.Sink = Step{File: f.Path, Line: lang.Line(sink), What: "sink: " + oneLine(text(f, sink))}
	if how != "exact" {
		in.unknown(fmt.Sprintf("the finding's column did not name a call; the %s sink %s() on its %s was taken", t.Category, callName(f, sink), how))
	}
	if !in.runEnclosing(f, sink) {
		a.Verdict = NeedsReview
		a.Reason = "the sink is not inside a method"
		a.Files = []string{f.Path}
		return a, nil
	}
	a.Steps = in.steps
	judge(a, in, f, sink, t.Category)
	if a.Verdict == NeedsReview && len(a.assumed) > 0 {
		// retrieval: the verdict relies on who calls the method
		in.callers(a, f, sink, t.Category)
	}
	for p := range in.Files {
		a.Files = append(a.Files, p)
	}
	sortStrings(a.Files)
	a.Searches = in.Searches
	return a, nil
}

func newInterp(ctx context.Context, prog *Program, f *File, sink *sitter.Node) *Interp {
	return &Interp{ctx: ctx, prog: prog, sinkFile: f.Path, sinkStart: sink.StartByte(), sinkEnd: sink.EndByte(), sinkName: callName(f, sink),
		Files: map[string]bool{f.Path: true}, statics: map[string]*Obj{}, classes: map[string]classRef{}}
}

// runEnclosing interprets the method holding node, its parameters bound to
// request sources (servlet request types) or to assumed taint (callers not
// analysed). False when node is not inside a method.
func (in *Interp) runEnclosing(f *File, node *sitter.Node) bool {
	m := enclosing(node, "method_declaration", "constructor_declaration")
	cls := enclosing(node, "class_declaration", "enum_declaration", "interface_declaration")
	if m == nil || cls == nil {
		return false
	}
	cname := text(f, cls.ChildByFieldName("name"))
	this := objv(&Obj{Class: cname, Fields: map[string]*Val{}})
	fr := &frame{file: f, class: cls, cname: cname, this: this}
	e := newEnv()
	mname := text(f, m.ChildByFieldName("name"))
	k := 0
	if p := m.ChildByFieldName("parameters"); p != nil {
		for i := 0; i < int(p.NamedChildCount()); i++ {
			c := p.NamedChild(i)
			if c.Type() != "formal_parameter" && c.Type() != "spread_parameter" {
				continue
			}
			typ := text(f, c.ChildByFieldName("type"))
			name := text(f, c.ChildByFieldName("name"))
			switch {
			case strings.Contains(typ, "ServletRequest") || strings.HasSuffix(typ, "HttpRequest"):
				e.vars[name] = objv(&Obj{Class: "HttpServletRequest", Source: true})
			case strings.Contains(typ, "ServletResponse"):
				e.vars[name] = objv(&Obj{Class: "HttpServletResponse"})
			default:
				e.vars[name] = &Val{K: kindOfType(typ), T: &Taint{Assumed: true, Param: k + 1,
					Trail: []Step{step(f, c, "enters as parameter "+name+" of "+mname+"()")}}}
			}
			k++
		}
	}
	if body := m.ChildByFieldName("body"); body != nil {
		in.exec(fr, e, body)
	}
	return true
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

package javaflow

import (
	"fmt"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// maxCallSites bounds the callers analysed for one finding.
const maxCallSites = 8

// callers closes the unknown "do the callers pass attacker input": it
// searches the repository for calls of the method holding the sink and
// interprets each caller up to the call, then judges the argument at the
// parameter's position. One caller passing attacker input makes the finding
// real; every caller passing values the attacker does not control makes it
// a false positive; no caller leaves it for review.
func (in *Interp) callers(a *Analysis, f *File, sink *sitter.Node, cat string) {
	m := enclosing(sink, "method_declaration", "constructor_declaration")
	if m == nil || m.Type() != "method_declaration" {
		return
	}
	mname := text(f, m.ChildByFieldName("name"))
	arity := paramCount(m)
	params := map[int]bool{}
	for _, v := range a.assumed {
		if v.T.Param > 0 {
			params[v.T.Param-1] = true
		}
	}
	in.Searches++ // search_codebase for the method's call sites
	files, err := in.prog.Repo.Files("", "*.java", 20000)
	if err != nil {
		return
	}
	type site struct {
		f *File
		n *sitter.Node
	}
	var sites []site
	for _, p := range files {
		b, err := in.prog.Repo.Read(p)
		if err != nil || !strings.Contains(string(b), mname+"(") {
			continue
		}
		cf, err := in.prog.Load(in.ctx, p)
		if err != nil {
			continue
		}
		var walk func(n *sitter.Node)
		walk = func(n *sitter.Node) {
			if len(sites) >= maxCallSites {
				return
			}
			if n.Type() == "method_invocation" && text(cf, n.ChildByFieldName("name")) == mname && len(argList(n)) == arity {
				if enclosing(n, "method_declaration") != m {
					sites = append(sites, site{cf, n})
				}
			}
			for i := 0; i < int(n.NamedChildCount()); i++ {
				walk(n.NamedChild(i))
			}
		}
		walk(cf.Tree.RootNode())
	}
	if len(sites) == 0 {
		a.Unknowns = append(a.Unknowns, "no caller of "+mname+"() in the repository: it may be an entry point of a framework")
		return
	}
	var clean []Step
	for _, s := range sites {
		in.Files[s.f.Path] = true
		ci := newInterp(in.ctx, in.prog, s.f, s.n)
		if !ci.runEnclosing(s.f, s.n) || !ci.Sink.Reached {
			a.Unknowns = append(a.Unknowns, fmt.Sprintf("whether the call of %s() at %s:%d runs", mname, s.f.Path, lineOf(s.n)))
			continue
		}
		for p := range ci.Files {
			in.Files[p] = true
		}
		call := Step{File: s.f.Path, Line: lineOf(s.n), What: "calls " + mname + "(): " + oneLine(text(s.f, s.n))}
		var unsafe *Val
		undecided := false
		for idx := range params {
			for _, l := range leaves(arg(ci.Sink.Args, idx), map[*Obj]bool{}, nil) {
				switch {
				case contains(l.San, cat):
				case l.T.Assumed:
					undecided = true
				default:
					unsafe = l
				}
			}
		}
		switch {
		case unsafe != nil:
			tr := append(append([]Step(nil), unsafe.T.Trail...), call)
			tr = append(tr, a.assumed[0].T.Trail...)
			a.Verdict = TruePositive
			a.Reason = "a caller of " + mname + "() passes attacker-controlled input that reaches the " + cat + " sink without a " + cat + " sanitiser"
			a.Claims = []Claim{
				{ID: "reach", Text: "the sink call runs on a feasible path of the method", Status: "supported", Steps: []Step{a.Sink}},
				{ID: "source", Text: "the value comes from an attacker-controlled request source in a caller", Status: "supported", Steps: []Step{tr[0]}},
				{ID: "path", Text: "it is passed to " + mname + "() and flows to the sink's arguments", Status: "supported", Steps: append(tr, a.Sink)},
				{ID: "sanitiser", Text: "no sanitiser for " + cat + " is applied on the way", Status: "supported", Steps: []Step{call, a.Sink}},
			}
			a.Unknowns = nil
			a.Next = nil
			return
		case undecided:
			a.Unknowns = append(a.Unknowns, fmt.Sprintf("whether the callers of the method calling %s() at %s:%d pass attacker input", mname, s.f.Path, lineOf(s.n)))
		default:
			clean = append(clean, call)
		}
	}
	if len(clean) == len(sites) {
		a.Verdict = FalsePositive
		a.Reason = fmt.Sprintf("every caller of %s() (%d) passes values the attacker does not control", mname, len(sites))
		a.Claims = []Claim{
			{ID: "reach", Text: "the sink call runs on a feasible path of the method", Status: "supported", Steps: []Step{a.Sink}},
			{ID: "source", Text: a.Reason, Status: "supported", Steps: append(clean, a.Sink)},
		}
		a.Unknowns = nil
		a.Next = nil
	}
}

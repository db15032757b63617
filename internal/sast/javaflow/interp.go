package javaflow

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/rcamesh/rcamesh/internal/sast/lang"
)

// limits of one analysis.
const (
	maxDepth     = 6
	maxSteps     = 200000
	maxDecisions = 40
)

// env is a method's local variables.
type env struct {
	vars map[string]*Val
	dead bool
}

func newEnv() *env { return &env{vars: map[string]*Val{}} }

func (e *env) clone() *env {
	n := &env{vars: make(map[string]*Val, len(e.vars)), dead: e.dead}
	for k, v := range e.vars {
		n.vars[k] = v
	}
	return n
}

// joinEnvs merges the live environments (dead ones contribute nothing).
func joinEnvs(es ...*env) *env {
	var live []*env
	for _, e := range es {
		if e != nil && !e.dead {
			live = append(live, e)
		}
	}
	if len(live) == 0 {
		return &env{vars: map[string]*Val{}, dead: true}
	}
	out := live[0].clone()
	for _, e := range live[1:] {
		for k, v := range e.vars {
			if old, ok := out.vars[k]; ok {
				out.vars[k] = join(old, v)
			} else {
				out.vars[k] = v
			}
		}
	}
	return out
}

type frame struct {
	file   *File
	class  *sitter.Node
	cname  string
	this   *Val
	ret    *Val
	breaks []*[]*env // innermost last: environments at break statements
	conts  []*[]*env
}

// SinkObs is what the interpreter saw at the sink node.
type SinkObs struct {
	Reached bool
	Recv    *Val
	Args    []*Val
	Result  *Val
}

// Interp runs one analysis (one finding).
type Interp struct {
	ctx       context.Context
	prog      *Program
	sinkFile  string
	sinkStart uint32
	sinkEnd   uint32
	sinkName  string

	Sink      SinkObs
	Decisions []Step
	Files     map[string]bool // files read (fetch_code calls)
	Searches  int             // class and resource look-ups (search calls)
	Unknowns  []string

	statics map[string]*Obj
	classes map[string]classRef
	depth   int
	steps   int
}

func (in *Interp) decide(f *File, n *sitter.Node, what string) {
	in.decideAt(f.Path, lang.Line(n), what)
}

func (in *Interp) decideAt(file string, line int, what string) {
	if len(in.Decisions) >= maxDecisions {
		return
	}
	s := Step{File: file, Line: line, What: what}
	for _, d := range in.Decisions {
		if d == s {
			return
		}
	}
	in.Decisions = append(in.Decisions, s)
}

func (in *Interp) unknown(u string) {
	for _, x := range in.Unknowns {
		if x == u {
			return
		}
	}
	if len(in.Unknowns) < 10 {
		in.Unknowns = append(in.Unknowns, u)
	}
}

func text(f *File, n *sitter.Node) string { return lang.Text(n, f.Src) }

func step(f *File, n *sitter.Node, what string) Step {
	return Step{File: f.Path, Line: lang.Line(n), What: what}
}

// ---------- statements ----------

func (in *Interp) execBlock(fr *frame, e *env, n *sitter.Node) *env {
	for i := 0; i < int(n.NamedChildCount()); i++ {
		if e.dead {
			return e
		}
		e = in.exec(fr, e, n.NamedChild(i))
	}
	return e
}

func (in *Interp) exec(fr *frame, e *env, n *sitter.Node) *env {
	if n == nil || e.dead {
		return e
	}
	in.steps++
	if in.steps > maxSteps || in.ctx.Err() != nil {
		in.unknown("analysis step budget exhausted")
		e.dead = true
		return e
	}
	f := fr.file
	switch n.Type() {
	case "block", "program", "constructor_body":
		return in.execBlock(fr, e, n)
	case "local_variable_declaration":
		typ := text(f, n.ChildByFieldName("type"))
		for i := 0; i < int(n.NamedChildCount()); i++ {
			d := n.NamedChild(i)
			if d.Type() != "variable_declarator" {
				continue
			}
			name := text(f, d.ChildByFieldName("name"))
			v := unknownOf(kindOfType(typ))
			if val := d.ChildByFieldName("value"); val != nil {
				v = in.eval(fr, e, val)
				if v.T != nil {
					v = withTaint(v, v.T.with(step(f, d, "assigned to "+name)))
				}
			}
			e.vars[name] = v
			in.observe(fr, n, nil, nil, v)
		}
		return e
	case "expression_statement":
		for i := 0; i < int(n.NamedChildCount()); i++ {
			in.eval(fr, e, n.NamedChild(i))
		}
		return e
	case "if_statement":
		cond := in.eval(fr, e, n.ChildByFieldName("condition"))
		cons, alt := n.ChildByFieldName("consequence"), n.ChildByFieldName("alternative")
		if cond.K == KBool && cond.Con {
			if cond.B {
				in.decide(f, n, "condition "+text(f, n.ChildByFieldName("condition"))+" is always true: only the then-branch runs")
				return in.exec(fr, e, cons)
			}
			in.decide(f, n, "condition "+text(f, n.ChildByFieldName("condition"))+" is always false: only the else-branch runs")
			if alt == nil {
				return e
			}
			return in.exec(fr, e, alt)
		}
		a := in.exec(fr, e.clone(), cons)
		b := e
		if alt != nil {
			b = in.exec(fr, e.clone(), alt)
		}
		return joinEnvs(a, b)
	case "switch_expression", "switch_statement":
		return in.execSwitch(fr, e, n)
	case "while_statement":
		cond := in.eval(fr, e, n.ChildByFieldName("condition"))
		if cond.K == KBool && cond.Con && !cond.B {
			return e
		}
		return in.loop(fr, e, n.ChildByFieldName("body"), nil)
	case "do_statement":
		return in.loop(fr, e, n.ChildByFieldName("body"), nil)
	case "for_statement":
		for i := 0; i < int(n.ChildCount()); i++ {
			c := n.Child(i)
			if n.FieldNameForChild(i) == "init" {
				e = in.exec(fr, e, c)
				if c.Type() != "local_variable_declaration" {
					in.eval(fr, e, c)
				}
			}
		}
		return in.loop(fr, e, n.ChildByFieldName("body"), nil)
	case "enhanced_for_statement":
		coll := in.eval(fr, e, n.ChildByFieldName("value"))
		name := text(f, n.ChildByFieldName("name"))
		elem := elementOf(coll)
		return in.loop(fr, e, n.ChildByFieldName("body"), func(le *env) { le.vars[name] = elem })
	case "try_statement", "try_with_resources_statement":
		pre := e.clone()
		if res := n.ChildByFieldName("resources"); res != nil {
			for i := 0; i < int(res.NamedChildCount()); i++ {
				r := res.NamedChild(i)
				if r.Type() == "resource" && r.ChildByFieldName("value") != nil {
					e.vars[text(f, r.ChildByFieldName("name"))] = in.eval(fr, e, r.ChildByFieldName("value"))
				}
			}
		}
		body := in.exec(fr, e, n.ChildByFieldName("body"))
		outs := []*env{body}
		var fin *sitter.Node
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			switch c.Type() {
			case "catch_clause":
				ce := joinEnvs(pre, body)
				if ce.dead {
					ce = pre.clone()
				}
				ce.dead = false
				outs = append(outs, in.exec(fr, ce, c.ChildByFieldName("body")))
			case "finally_clause":
				fin = c
			}
		}
		out := joinEnvs(outs...)
		if fin != nil && fin.NamedChildCount() > 0 {
			out = in.exec(fr, out, fin.NamedChild(0))
		}
		return out
	case "return_statement":
		if n.NamedChildCount() > 0 {
			fr.ret = join(fr.ret, in.eval(fr, e, n.NamedChild(0)))
		}
		e.dead = true
		return e
	case "throw_statement":
		if n.NamedChildCount() > 0 {
			in.eval(fr, e, n.NamedChild(0))
		}
		e.dead = true
		return e
	case "break_statement":
		if l := len(fr.breaks); l > 0 {
			*fr.breaks[l-1] = append(*fr.breaks[l-1], e.clone())
		}
		e.dead = true
		return e
	case "continue_statement":
		if l := len(fr.conts); l > 0 {
			*fr.conts[l-1] = append(*fr.conts[l-1], e.clone())
		}
		e.dead = true
		return e
	case "labeled_statement":
		for i := 0; i < int(n.NamedChildCount()); i++ {
			if c := n.NamedChild(i); c.Type() != "identifier" {
				e = in.exec(fr, e, c)
			}
		}
		return e
	case "synchronized_statement":
		return in.exec(fr, e, n.ChildByFieldName("body"))
	case "local_class_declaration", "class_declaration", "line_comment", "block_comment", ";", "empty_statement":
		return e
	default:
		// an expression used as a statement in some grammar versions
		in.eval(fr, e, n)
		return e
	}
}

// loop runs a loop body once from the state before it (the body may run
// zero or more times): the result joins the entry, the body's end, its
// breaks and continues.
func (in *Interp) loop(fr *frame, e *env, body *sitter.Node, bind func(*env)) *env {
	var breaks, conts []*env
	fr.breaks = append(fr.breaks, &breaks)
	fr.conts = append(fr.conts, &conts)
	be := e.clone()
	if bind != nil {
		bind(be)
	}
	be = in.exec(fr, be, body)
	// a second pass lets values flow around the loop once
	if !be.dead {
		be2 := be.clone()
		if bind != nil {
			bind(be2)
		}
		be = joinEnvs(be, in.exec(fr, be2, body))
	}
	fr.breaks = fr.breaks[:len(fr.breaks)-1]
	fr.conts = fr.conts[:len(fr.conts)-1]
	all := append([]*env{e, be}, breaks...)
	all = append(all, conts...)
	return joinEnvs(all...)
}

func (in *Interp) execSwitch(fr *frame, e *env, n *sitter.Node) *env {
	f := fr.file
	sel := in.eval(fr, e, n.ChildByFieldName("condition"))
	body := n.ChildByFieldName("body")
	if body == nil {
		return e
	}
	type group struct {
		labels  []*Val
		isDef   bool
		stmts   []*sitter.Node
		rule    bool
		node    *sitter.Node
		labelTx string
	}
	var groups []group
	for i := 0; i < int(body.NamedChildCount()); i++ {
		g := body.NamedChild(i)
		if g.Type() != "switch_block_statement_group" && g.Type() != "switch_rule" {
			continue
		}
		gr := group{rule: g.Type() == "switch_rule", node: g}
		for j := 0; j < int(g.NamedChildCount()); j++ {
			c := g.NamedChild(j)
			if c.Type() == "switch_label" {
				gr.labelTx = text(f, c)
				if c.NamedChildCount() == 0 || strings.HasPrefix(strings.TrimSpace(text(f, c)), "default") {
					gr.isDef = true
				}
				for k := 0; k < int(c.NamedChildCount()); k++ {
					gr.labels = append(gr.labels, in.eval(fr, e, c.NamedChild(k)))
				}
				continue
			}
			gr.stmts = append(gr.stmts, c)
		}
		groups = append(groups, gr)
	}
	run := func(start int, st *env) *env {
		var breaks []*env
		fr.breaks = append(fr.breaks, &breaks)
		for i := start; i < len(groups) && !st.dead; i++ {
			for _, s := range groups[i].stmts {
				if st.dead {
					break
				}
				if groups[i].rule && s.Type() != "block" && s.Type() != "expression_statement" && s.Type() != "throw_statement" {
					in.eval(fr, st, s)
					continue
				}
				st = in.exec(fr, st, s)
			}
			if groups[i].rule {
				break
			}
		}
		fr.breaks = fr.breaks[:len(fr.breaks)-1]
		return joinEnvs(append([]*env{st}, breaks...)...)
	}
	if sel.Con {
		def := -1
		for i, g := range groups {
			if g.isDef && def < 0 {
				def = i
			}
			for _, l := range g.labels {
				if sameConst(sel, l) || (l.Con && sel.Con && (l.K == KChar || l.K == KInt) && (sel.K == KChar || sel.K == KInt) && l.I == sel.I) {
					in.decide(f, g.node, "switch on "+text(f, n.ChildByFieldName("condition"))+" = "+sel.String()+": only "+strings.TrimSpace(g.labelTx)+" runs")
					return run(i, e)
				}
			}
		}
		if def >= 0 {
			in.decide(f, groups[def].node, "switch on "+text(f, n.ChildByFieldName("condition"))+" = "+sel.String()+": only the default case runs")
			return run(def, e)
		}
		return e
	}
	outs := []*env{}
	hasDef := false
	for i, g := range groups {
		hasDef = hasDef || g.isDef
		outs = append(outs, run(i, e.clone()))
	}
	if !hasDef {
		outs = append(outs, e)
	}
	return joinEnvs(outs...)
}

// ---------- expressions ----------

func withTaint(v *Val, t *Taint) *Val {
	c := *v
	c.T = t
	return &c
}

func kindOfType(t string) Kind {
	switch t {
	case "String", "java.lang.String":
		return KStr
	case "int", "long", "short", "byte", "Integer", "Long":
		return KInt
	case "boolean", "Boolean":
		return KBool
	case "char", "Character":
		return KChar
	}
	return KUnknown
}

func elementOf(coll *Val) *Val {
	if coll == nil {
		return unknown
	}
	var out *Val
	if coll.O != nil {
		for _, x := range coll.O.List {
			out = join(out, x)
		}
		for _, x := range coll.O.Map {
			out = join(out, x)
		}
		out = join(out, coll.O.MapAny)
	}
	if coll.T != nil {
		out = join(out, tainted(coll.T, coll.San))
	}
	if out == nil {
		return unknown
	}
	if out.Con { // several iterations: the element is any of them
		c := *out
		return &c
	}
	return out
}

func (in *Interp) eval(fr *frame, e *env, n *sitter.Node) *Val {
	if n == nil {
		return unknown
	}
	in.steps++
	if in.steps > maxSteps {
		return unknown
	}
	f := fr.file
	switch n.Type() {
	case "string_literal":
		return str(unquoteJava(text(f, n)))
	case "text_block":
		return str(strings.Trim(text(f, n), `"`))
	case "character_literal":
		s := unquoteJava(text(f, n))
		r := []rune(s)
		if len(r) == 1 {
			return charv(int64(r[0]))
		}
		return unknownOf(KChar)
	case "decimal_integer_literal", "hex_integer_literal", "octal_integer_literal", "binary_integer_literal":
		t := strings.TrimRight(strings.ReplaceAll(text(f, n), "_", ""), "lL")
		if i, err := strconv.ParseInt(t, 0, 64); err == nil {
			return intv(i)
		}
		return unknownOf(KInt)
	case "decimal_floating_point_literal":
		return unknown
	case "true":
		return boolv(true)
	case "false":
		return boolv(false)
	case "null_literal":
		return &Val{K: KNull, Con: true}
	case "parenthesized_expression":
		if n.NamedChildCount() > 0 {
			return in.eval(fr, e, n.NamedChild(0))
		}
		return unknown
	case "cast_expression":
		return in.eval(fr, e, n.ChildByFieldName("value"))
	case "identifier":
		return in.lookup(fr, e, text(f, n))
	case "this":
		if fr.this != nil {
			return fr.this
		}
		return unknown
	case "field_access":
		return in.fieldAccess(fr, e, n)
	case "scoped_identifier", "type_identifier", "scoped_type_identifier":
		return classv(lastSeg(text(f, n)))
	case "array_access":
		arr := in.eval(fr, e, n.ChildByFieldName("array"))
		idx := in.eval(fr, e, n.ChildByFieldName("index"))
		return index(arr, idx)
	case "array_initializer":
		o := &Obj{Class: "[]"}
		for i := 0; i < int(n.NamedChildCount()); i++ {
			o.List = append(o.List, in.eval(fr, e, n.NamedChild(i)))
		}
		return objv(o)
	case "array_creation_expression":
		if v := n.ChildByFieldName("value"); v != nil {
			return in.eval(fr, e, v)
		}
		for i := 0; i < int(n.NamedChildCount()); i++ {
			if c := n.NamedChild(i); c.Type() == "dimensions_expr" {
				in.eval(fr, e, c)
			}
		}
		return objv(&Obj{Class: "[]", ListLost: true})
	case "assignment_expression":
		return in.assign(fr, e, n)
	case "binary_expression":
		return in.binary(fr, e, n)
	case "unary_expression":
		v := in.eval(fr, e, n.ChildByFieldName("operand"))
		op := text(f, n.ChildByFieldName("operator"))
		switch {
		case op == "!" && v.K == KBool && v.Con:
			return boolv(!v.B)
		case op == "-" && v.K == KInt && v.Con:
			return intv(-v.I)
		}
		return unknownOf(v.K)
	case "update_expression":
		// i++ / --i: the variable becomes unknown
		for i := 0; i < int(n.NamedChildCount()); i++ {
			if c := n.NamedChild(i); c.Type() == "identifier" {
				if _, ok := e.vars[text(f, c)]; ok {
					e.vars[text(f, c)] = unknownOf(KInt)
				}
			}
		}
		return unknownOf(KInt)
	case "ternary_expression":
		cond := in.eval(fr, e, n.ChildByFieldName("condition"))
		if cond.K == KBool && cond.Con {
			if cond.B {
				in.decide(f, n, "condition "+text(f, n.ChildByFieldName("condition"))+" is always true: the ternary yields "+text(f, n.ChildByFieldName("consequence")))
				return in.eval(fr, e, n.ChildByFieldName("consequence"))
			}
			in.decide(f, n, "condition "+text(f, n.ChildByFieldName("condition"))+" is always false: the ternary yields "+text(f, n.ChildByFieldName("alternative")))
			return in.eval(fr, e, n.ChildByFieldName("alternative"))
		}
		return join(in.eval(fr, e, n.ChildByFieldName("consequence")), in.eval(fr, e, n.ChildByFieldName("alternative")))
	case "instanceof_expression":
		in.eval(fr, e, n.ChildByFieldName("left"))
		return unknownOf(KBool)
	case "method_invocation":
		return in.call(fr, e, n)
	case "object_creation_expression":
		return in.newObj(fr, e, n)
	case "lambda_expression", "method_reference", "class_literal":
		return unknown
	}
	return unknown
}

func lastSeg(s string) string {
	if i := strings.IndexByte(s, '<'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func unquoteJava(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	if len(s) >= 2 {
		return s[1 : len(s)-1]
	}
	return s
}

func isUpperIdent(s string) bool {
	for _, r := range s {
		return unicode.IsUpper(r)
	}
	return false
}

func (in *Interp) lookup(fr *frame, e *env, name string) *Val {
	if v, ok := e.vars[name]; ok {
		return v
	}
	if fr.this != nil && fr.this.O != nil {
		if v, ok := fr.this.O.Fields[name]; ok {
			return v
		}
	}
	if st := in.classStatics(fr.file, fr.cname, fr.class); st != nil {
		if v, ok := st.Fields[name]; ok {
			return v
		}
	}
	if isUpperIdent(name) {
		return classv(name)
	}
	return &Val{K: KPkg, S: name}
}

func (in *Interp) fieldAccess(fr *frame, e *env, n *sitter.Node) *Val {
	f := fr.file
	obj := in.eval(fr, e, n.ChildByFieldName("object"))
	field := text(f, n.ChildByFieldName("field"))
	switch obj.K {
	case KPkg:
		if isUpperIdent(field) {
			return classv(field)
		}
		return &Val{K: KPkg, S: field}
	case KClass:
		if cf, cls := in.findClass(f, obj.S); cls != nil {
			if st := in.classStatics(cf, obj.S, cls); st != nil {
				if v, ok := st.Fields[field]; ok {
					return v
				}
			}
		}
		if isUpperIdent(field) && strings.ToUpper(field) != field {
			return classv(field)
		}
		return unknown
	}
	if field == "length" && obj.O != nil && !obj.O.ListLost && obj.O.Class == "[]" {
		return intv(int64(len(obj.O.List)))
	}
	if obj.O != nil && obj.O.Fields != nil {
		if v, ok := obj.O.Fields[field]; ok {
			return v
		}
	}
	if obj.T != nil {
		return tainted(obj.T, obj.San)
	}
	return unknown
}

func index(arr, idx *Val) *Val {
	if arr.O != nil {
		o := arr.O
		if idx.Con && idx.K == KInt && !o.ListLost && idx.I >= 0 && int(idx.I) < len(o.List) {
			return o.List[idx.I]
		}
		return elementOf(arr)
	}
	if arr.T != nil {
		return tainted(arr.T, arr.San)
	}
	return unknown
}

func (in *Interp) assign(fr *frame, e *env, n *sitter.Node) *Val {
	f := fr.file
	left := n.ChildByFieldName("left")
	op := text(f, n.ChildByFieldName("operator"))
	right := in.eval(fr, e, n.ChildByFieldName("right"))
	if op != "=" && op != "" {
		old := in.eval(fr, e, left)
		right = arith(strings.TrimSuffix(op, "="), old, right)
	}
	switch left.Type() {
	case "identifier":
		name := text(f, left)
		if right.T != nil {
			right = withTaint(right, right.T.with(step(f, n, "assigned to "+name)))
		}
		if _, ok := e.vars[name]; ok {
			e.vars[name] = right
		} else if fr.this != nil && fr.this.O != nil && fr.this.O.Fields != nil && hasKey(fr.this.O.Fields, name) {
			fr.this.O.Fields[name] = right
		} else if st := in.classStatics(f, fr.cname, fr.class); st != nil && hasKey(st.Fields, name) {
			st.Fields[name] = right
		} else {
			e.vars[name] = right
		}
	case "field_access":
		obj := in.eval(fr, e, left.ChildByFieldName("object"))
		field := text(f, left.ChildByFieldName("field"))
		if obj.O != nil {
			if obj.O.Fields == nil {
				obj.O.Fields = map[string]*Val{}
			}
			obj.O.Fields[field] = right
		} else if obj.K == KClass {
			if cf, cls := in.findClass(f, obj.S); cls != nil {
				if st := in.classStatics(cf, obj.S, cls); st != nil {
					st.Fields[field] = right
				}
			}
		}
	case "array_access":
		arr := in.eval(fr, e, left.ChildByFieldName("array"))
		idx := in.eval(fr, e, left.ChildByFieldName("index"))
		if arr.O != nil {
			o := arr.O
			if idx.Con && idx.K == KInt && idx.I >= 0 && idx.I < 4096 && !o.ListLost {
				for int(idx.I) >= len(o.List) {
					o.List = append(o.List, &Val{K: KNull, Con: true})
				}
				o.List[idx.I] = right
			} else {
				o.ListLost = true
				o.List = append(o.List, right)
			}
		}
	}
	return right
}

func hasKey(m map[string]*Val, k string) bool {
	_, ok := m[k]
	return ok
}

func (in *Interp) binary(fr *frame, e *env, n *sitter.Node) *Val {
	f := fr.file
	op := text(f, n.ChildByFieldName("operator"))
	l := in.eval(fr, e, n.ChildByFieldName("left"))
	if op == "&&" && l.K == KBool && l.Con && !l.B {
		return boolv(false)
	}
	if op == "||" && l.K == KBool && l.Con && l.B {
		return boolv(true)
	}
	r := in.eval(fr, e, n.ChildByFieldName("right"))
	return arith(op, l, r)
}

func toStr(v *Val) (string, bool) {
	if !v.Con {
		if v.K == KNull {
			return "null", true
		}
		return "", false
	}
	switch v.K {
	case KStr:
		return v.S, true
	case KInt:
		return strconv.FormatInt(v.I, 10), true
	case KChar:
		return string(rune(v.I)), true
	case KBool:
		return strconv.FormatBool(v.B), true
	}
	return "", false
}

func num(v *Val) (int64, bool) {
	if v.Con && (v.K == KInt || v.K == KChar) {
		return v.I, true
	}
	return 0, false
}

// arith applies a binary operator.
func arith(op string, l, r *Val) *Val {
	if op == "+" && (l.K == KStr || r.K == KStr) {
		t, san := deepTaint(l, r)
		if ls, ok := toStr(l); ok && t == nil {
			if rs, ok := toStr(r); ok {
				return str(ls + rs)
			}
		}
		return &Val{K: KStr, T: t, San: san}
	}
	a, aok := num(l)
	b, bok := num(r)
	if aok && bok {
		switch op {
		case "+":
			return intv(a + b)
		case "-":
			return intv(a - b)
		case "*":
			return intv(a * b)
		case "/":
			if b != 0 {
				return intv(a / b)
			}
		case "%":
			if b != 0 {
				return intv(a % b)
			}
		case "<":
			return boolv(a < b)
		case ">":
			return boolv(a > b)
		case "<=":
			return boolv(a <= b)
		case ">=":
			return boolv(a >= b)
		case "==":
			return boolv(a == b)
		case "!=":
			return boolv(a != b)
		}
	}
	switch op {
	case "&&", "||":
		if l.K == KBool && l.Con && r.K == KBool && r.Con {
			if op == "&&" {
				return boolv(l.B && r.B)
			}
			return boolv(l.B || r.B)
		}
		if op == "&&" && r.K == KBool && r.Con && !r.B {
			return boolv(false)
		}
		if op == "||" && r.K == KBool && r.Con && r.B {
			return boolv(true)
		}
		return unknownOf(KBool)
	case "==", "!=":
		if l.K == KBool && l.Con && r.K == KBool && r.Con {
			return boolv((l.B == r.B) == (op == "=="))
		}
		if l.K == KNull && r.K == KNull {
			return boolv(op == "==")
		}
		return unknownOf(KBool)
	case "<", ">", "<=", ">=", "instanceof":
		return unknownOf(KBool)
	}
	t, san := deepTaint(l, r)
	return &Val{K: KInt, T: t, San: san}
}

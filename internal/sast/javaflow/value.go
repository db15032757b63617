// Package javaflow is the offline, deterministic analyser of SAST triage
// for Java: an abstract interpreter over the tree-sitter syntax tree that
// follows values from request sources to a finding's sink within the
// method and through the helper methods it calls (same file or other
// classes of the repository), folds constant conditions (if, switch,
// ternary), keeps containers' keys and positions apart, applies
// sanitisers and safe APIs, and reads the properties files that decide
// algorithms. Each value carries the trail of code steps that made it
// tainted, and the interpreter records the decisions it took, so that a
// verdict is backed by cited code.
package javaflow

import (
	"sort"
	"strconv"
)

// Kind is an abstract value's kind.
type Kind int

// Value kinds.
const (
	KUnknown Kind = iota
	KStr
	KInt
	KBool
	KChar
	KNull
	KObj
	KClass // a reference to a class (static receiver)
	KPkg   // a package name segment
)

// Step is one cited code step: where, and what happened there.
type Step struct {
	File string
	Line int
	What string
}

// Taint is the trail of an attacker-controlled value.
type Taint struct {
	Trail   []Step
	Assumed bool // from an entry parameter whose callers were not analysed
	Param   int  // that parameter's position + 1
}

const maxTrail = 14

func (t *Taint) with(s Step) *Taint {
	if t == nil {
		return nil
	}
	n := &Taint{Assumed: t.Assumed, Param: t.Param}
	tr := append([]Step(nil), t.Trail...)
	if len(tr) > 0 && tr[len(tr)-1] == s {
		n.Trail = tr
		return n
	}
	tr = append(tr, s)
	if len(tr) > maxTrail { // keep the source and the latest steps
		tr = append(tr[:1], tr[len(tr)-maxTrail+1:]...)
	}
	n.Trail = tr
	return n
}

// Val is an abstract value. Vals are immutable; Objs are shared and mutable
// (containers, builders, objects), as in Java.
type Val struct {
	K   Kind
	S   string // KStr, KClass, KPkg
	I   int64  // KInt, KChar
	B   bool   // KBool
	Con bool   // the scalar value is known
	T   *Taint
	San []string // categories this tainted value is sanitised for
	O   *Obj
}

// Obj is a heap object.
type Obj struct {
	Class       string // simple class name
	Source      bool   // a request object: its getters are sources
	Str         *Val   // StringBuilder content
	List        []*Val // list, array, enumeration
	ListLost    bool   // positions unknown: every element may be any
	Map         map[string]*Val
	MapAny      *Val // values stored under unknown keys
	Fields      map[string]*Val
	Props       map[string]string
	PropsFile   string
	PropsLine   map[string]int
	PropsLoaded bool
	Res         string // a resource stream's name
	Alg         *Val   // algorithm of a Cipher/MessageDigest/SecureRandom
	AlgStep     Step
}

var unknown = &Val{K: KUnknown}

func str(s string) *Val     { return &Val{K: KStr, S: s, Con: true} }
func intv(i int64) *Val     { return &Val{K: KInt, I: i, Con: true} }
func boolv(b bool) *Val     { return &Val{K: KBool, B: b, Con: true} }
func charv(c int64) *Val    { return &Val{K: KChar, I: c, Con: true} }
func objv(o *Obj) *Val      { return &Val{K: KObj, O: o} }
func classv(n string) *Val  { return &Val{K: KClass, S: n} }
func unknownOf(k Kind) *Val { return &Val{K: k} }

func (v *Val) isStrConst() bool { return v != nil && v.K == KStr && v.Con }

// String renders a constant for citations.
func (v *Val) String() string {
	if v == nil {
		return "?"
	}
	switch {
	case v.K == KStr && v.Con:
		return strconv.Quote(v.S)
	case v.K == KInt && v.Con:
		return strconv.FormatInt(v.I, 10)
	case v.K == KChar && v.Con:
		return strconv.QuoteRune(rune(v.I))
	case v.K == KBool && v.Con:
		return strconv.FormatBool(v.B)
	case v.K == KNull:
		return "null"
	case v.K == KObj && v.O != nil:
		return "a " + v.O.Class
	}
	if v.T != nil {
		return "a tainted value"
	}
	return "an unknown value"
}

func sameConst(a, b *Val) bool {
	if !a.Con || !b.Con || a.K != b.K {
		return false
	}
	switch a.K {
	case KStr:
		return a.S == b.S
	case KInt, KChar:
		return a.I == b.I
	case KBool:
		return a.B == b.B
	}
	return false
}

// join is the value that may be a or b.
func join(a, b *Val) *Val {
	if a == nil {
		return b
	}
	if b == nil || a == b {
		return a
	}
	if a.K == KNull && b.K != KNull {
		a, b = b, a
	}
	out := &Val{K: KUnknown}
	if a.K == b.K {
		out.K = a.K
		if sameConst(a, b) {
			out.S, out.I, out.B, out.Con = a.S, a.I, a.B, true
		}
		if a.K == KClass || a.K == KPkg {
			out.S = a.S
		}
	}
	switch {
	case a.T != nil && b.T != nil:
		out.T = a.T
		out.San = intersect(a.San, b.San)
	case a.T != nil:
		out.T, out.San = a.T, a.San
	case b.T != nil:
		out.T, out.San = b.T, b.San
	}
	switch {
	case a.O != nil && b.O != nil:
		out.K = KObj
		out.O = joinObj(a.O, b.O)
	case a.O != nil:
		out.K, out.O = KObj, a.O
	case b.O != nil && (a.K == KNull || a.K == KUnknown):
		out.K, out.O = KObj, b.O
	}
	return out
}

func joinObj(a, b *Obj) *Obj {
	if a == b {
		return a
	}
	o := &Obj{Source: a.Source || b.Source, Str: join(a.Str, b.Str), Res: a.Res}
	if a.Class == b.Class {
		o.Class = a.Class
	} else {
		o.Class = a.Class + "|" + b.Class
	}
	if len(a.List) == len(b.List) && !a.ListLost && !b.ListLost {
		for i := range a.List {
			o.List = append(o.List, join(a.List[i], b.List[i]))
		}
	} else {
		o.ListLost = true
		o.List = append(append([]*Val(nil), a.List...), b.List...)
	}
	if a.Map != nil || b.Map != nil {
		o.Map = map[string]*Val{}
		for k, v := range a.Map {
			o.Map[k] = v
		}
		for k, v := range b.Map {
			o.Map[k] = join(o.Map[k], v)
		}
	}
	o.MapAny = join(a.MapAny, b.MapAny)
	if a.Fields != nil || b.Fields != nil {
		o.Fields = map[string]*Val{}
		for k, v := range a.Fields {
			o.Fields[k] = v
		}
		for k, v := range b.Fields {
			o.Fields[k] = join(o.Fields[k], v)
		}
	}
	if a.Alg != nil || b.Alg != nil {
		o.Alg = join(a.Alg, b.Alg)
		o.AlgStep = a.AlgStep
	}
	if a.PropsFile == b.PropsFile {
		o.Props, o.PropsFile, o.PropsLine, o.PropsLoaded = a.Props, a.PropsFile, a.PropsLine, a.PropsLoaded
	}
	return o
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

func addSan(s []string, c string) []string {
	for _, x := range s {
		if x == c {
			return s
		}
	}
	out := append(append([]string(nil), s...), c)
	sort.Strings(out)
	return out
}

// leaves appends the tainted values reachable from v (through containers,
// builders and object fields).
func leaves(v *Val, seen map[*Obj]bool, out []*Val) []*Val {
	if v == nil {
		return out
	}
	if v.T != nil {
		out = append(out, v)
	}
	o := v.O
	if o == nil || seen[o] {
		return out
	}
	seen[o] = true
	out = leaves(o.Str, seen, out)
	for _, e := range o.List {
		out = leaves(e, seen, out)
	}
	keys := make([]string, 0, len(o.Map))
	for k := range o.Map {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = leaves(o.Map[k], seen, out)
	}
	out = leaves(o.MapAny, seen, out)
	fk := make([]string, 0, len(o.Fields))
	for k := range o.Fields {
		fk = append(fk, k)
	}
	sort.Strings(fk)
	for _, k := range fk {
		out = leaves(o.Fields[k], seen, out)
	}
	return out
}

// deepTaint is the taint reaching v (nil if none) and the categories every
// tainted part of it is sanitised for.
func deepTaint(vs ...*Val) (*Taint, []string) {
	var t *Taint
	var san []string
	first := true
	seen := map[*Obj]bool{}
	for _, v := range vs {
		for _, l := range leaves(v, seen, nil) {
			if first {
				t, san, first = l.T, l.San, false
				continue
			}
			san = intersect(san, l.San)
			if t.Assumed && !l.T.Assumed {
				t = l.T
			}
		}
	}
	return t, san
}

func tainted(t *Taint, san []string) *Val {
	return &Val{K: KUnknown, T: t, San: san}
}

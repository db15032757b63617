// Package logquery parses the log search language the tools speak (the
// Lucene/query_string subset Elasticsearch, OpenSearch and Datadog share)
// into a tree that a backend evaluates or translates: bare words and
// "quoted phrases" that must all appear, `a OR b` alternatives, `AND`,
// `NOT x` or `-x` exclusions, `field:value` terms and parentheses that
// group. AND binds tighter than OR ("a b OR c" is (a AND b) OR c), as in
// query_string.
package logquery

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Expr is a parsed query: a tree of And, Or, Not and Term. The empty
// query parses to nil, which matches everything.
type Expr interface{ isExpr() }

// And holds when every part holds.
type And []Expr

// Or holds when one part holds.
type Or []Expr

// Not holds when its part does not.
type Not struct{ X Expr }

// Term is one word or phrase, lower-cased, optionally on a named field
// ("" is free text); a trailing * is a prefix.
type Term struct {
	Field string
	Text  string
}

func (And) isExpr()  {}
func (Or) isExpr()   {}
func (Not) isExpr()  {}
func (Term) isExpr() {}

// maxDepth bounds the nesting of parentheses a query may carry.
const maxDepth = 32

// Parse reads q. An unterminated quote, an unbalanced parenthesis or
// nesting past maxDepth is an error.
func Parse(q string) (Expr, error) {
	toks, err := tokenize(q)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i].s)
	}
	return e, nil
}

type token struct {
	s      string
	quoted bool
	paren  bool
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() (token, bool) {
	if p.i >= len(p.toks) {
		return token{}, false
	}
	return p.toks[p.i], true
}

func (t token) op(name string) bool { return !t.quoted && !t.paren && t.s == name }

func (p *parser) or(depth int) (Expr, error) {
	var alts Or
	for {
		e, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		if e != nil {
			alts = append(alts, e)
		}
		t, ok := p.peek()
		if !ok || !(t.op("OR") || t.op("||")) {
			break
		}
		p.i++
	}
	switch len(alts) {
	case 0:
		return nil, nil
	case 1:
		return alts[0], nil
	}
	return alts, nil
}

func (p *parser) and(depth int) (Expr, error) {
	var all And
	for {
		t, ok := p.peek()
		if !ok || t.paren && t.s == ")" || t.op("OR") || t.op("||") {
			break
		}
		if t.op("AND") || t.op("&&") {
			p.i++
			continue
		}
		e, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		if e != nil {
			all = append(all, e)
		}
	}
	switch len(all) {
	case 0:
		return nil, nil
	case 1:
		return all[0], nil
	}
	return all, nil
}

func (p *parser) unary(depth int) (Expr, error) {
	t, _ := p.peek()
	p.i++
	switch {
	case t.op("NOT"):
		if _, ok := p.peek(); !ok {
			return nil, errors.New("NOT at the end of the query")
		}
		x, err := p.unary(depth)
		if err != nil || x == nil {
			return nil, err
		}
		return Not{x}, nil
	case t.paren && t.s == "(":
		if depth >= maxDepth {
			return nil, fmt.Errorf("parentheses nested deeper than %d", maxDepth)
		}
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c, ok := p.peek(); !ok || !(c.paren && c.s == ")") {
			return nil, errors.New("unbalanced parenthesis: ( without )")
		}
		p.i++
		return x, nil
	case t.paren:
		return nil, errors.New("unbalanced parenthesis: ) without (")
	}
	s, neg := t.s, false
	term := Term{}
	if !t.quoted {
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			neg, s = true, s[1:]
		}
		if k := strings.Index(s, ":"); k > 0 && !strings.Contains(s[:k], "/") {
			term.Field = strings.ToLower(strings.TrimPrefix(s[:k], "@"))
			s = strings.Trim(s[k+1:], `"`)
		}
	}
	term.Text = strings.ToLower(s)
	if neg {
		return Not{term}, nil
	}
	return term, nil
}

func tokenize(q string) ([]token, error) {
	var out []token
	var b strings.Builder
	inQuote, fieldQuote := false, false
	flush := func(quoted bool) {
		if b.Len() > 0 || quoted {
			out = append(out, token{s: b.String(), quoted: quoted})
			b.Reset()
		}
	}
	for _, r := range q {
		switch {
		case r == '"' && inQuote:
			if fieldQuote {
				b.WriteRune(r)
				flush(false) // field:"value" is parsed as a field term
			} else {
				flush(true)
			}
			inQuote, fieldQuote = false, false
		case r == '"':
			if strings.HasSuffix(b.String(), ":") {
				b.WriteRune(r)
				fieldQuote = true
			} else {
				flush(false)
			}
			inQuote = true
		case inQuote:
			b.WriteRune(r)
		case unicode.IsSpace(r):
			flush(false)
		case r == '(' || r == ')':
			flush(false)
			out = append(out, token{s: string(r), paren: true})
		default:
			b.WriteRune(r)
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quote")
	}
	flush(false)
	return out, nil
}

// Match evaluates e with holds deciding each term.
func Match(e Expr, holds func(Term) bool) bool {
	switch x := e.(type) {
	case nil:
		return true
	case And:
		for _, p := range x {
			if !Match(p, holds) {
				return false
			}
		}
		return true
	case Or:
		for _, p := range x {
			if Match(p, holds) {
				return true
			}
		}
		return false
	case Not:
		return !Match(x.X, holds)
	case Term:
		return holds(x)
	}
	return false
}

// Contains reports whether s holds t's text, case-insensitively (a
// trailing * is a prefix, which containment already covers; * alone and
// the empty text hold everywhere).
func (t Term) Contains(s string) bool {
	txt := strings.TrimSuffix(t.Text, "*")
	return txt == "" || strings.Contains(strings.ToLower(s), txt)
}

// maxClauses bounds the conjunctive normal form LineFilters builds.
const maxClauses = 64

// LineFilters translates e into a chain of line filters, each a
// case-insensitive regular expression a line must match (or, negated,
// must not): the conjunctive normal form of e, one filter per clause.
// Loki's line filters chain as AND, and one filter's alternation is an
// OR; a clause that mixes a word with an exclusion ("a OR NOT b") has no
// line-filter form and is an error, as is a form past maxClauses. A
// field term filters on its value.
func LineFilters(e Expr) ([]LineFilter, error) {
	cs, err := cnf(e)
	if err != nil {
		return nil, err
	}
	var out []LineFilter
clauses:
	for _, c := range cs {
		var pos, neg []string
		for _, l := range c {
			txt := strings.TrimSuffix(l.t.Text, "*")
			if txt == "" {
				if !l.neg {
					continue clauses // a clause holding everywhere filters nothing
				}
				return nil, errors.New("a query that excludes everything")
			}
			if l.neg {
				neg = append(neg, regexp.QuoteMeta(txt))
			} else {
				pos = append(pos, regexp.QuoteMeta(txt))
			}
		}
		switch {
		case len(pos) > 0 && len(neg) > 0:
			return nil, errors.New("an alternative between a word and an exclusion has no line-filter form")
		case len(pos) > 0:
			out = append(out, LineFilter{Regexp: "(?i)" + alternation(pos)})
		case len(neg) == 1:
			out = append(out, LineFilter{Regexp: "(?i)" + neg[0], Exclude: true})
		case len(neg) > 1:
			return nil, errors.New("an alternative between exclusions has no line-filter form")
		}
	}
	return out, nil
}

// LineFilter is one line filter: lines must match Regexp, or, with
// Exclude, must not.
type LineFilter struct {
	Regexp  string
	Exclude bool
}

func alternation(alts []string) string {
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, "|") + ")"
}

type literal struct {
	t   Term
	neg bool
}

// cnf is e in conjunctive normal form: clauses (ANDed) of literals (ORed).
func cnf(e Expr) ([][]literal, error) {
	switch x := e.(type) {
	case nil:
		return nil, nil
	case Term:
		return [][]literal{{{t: x}}}, nil
	case Not:
		switch y := x.X.(type) {
		case Term:
			return [][]literal{{{t: y, neg: true}}}, nil
		case Not:
			return cnf(y.X)
		case And: // NOT (a AND b) = NOT a OR NOT b
			var alts Or
			for _, p := range y {
				alts = append(alts, Not{p})
			}
			return cnf(alts)
		case Or: // NOT (a OR b) = NOT a AND NOT b
			var all And
			for _, p := range y {
				all = append(all, Not{p})
			}
			return cnf(all)
		}
	case And:
		var out [][]literal
		for _, p := range x {
			c, err := cnf(p)
			if err != nil {
				return nil, err
			}
			out = append(out, c...)
			if len(out) > maxClauses {
				return nil, fmt.Errorf("query too complex: more than %d line filters", maxClauses)
			}
		}
		return out, nil
	case Or:
		out := [][]literal{{}}
		for _, p := range x {
			c, err := cnf(p)
			if err != nil {
				return nil, err
			}
			if len(c) == 0 {
				return nil, nil // an alternative that holds everywhere
			}
			if len(out)*len(c) > maxClauses {
				return nil, fmt.Errorf("query too complex: more than %d line filters", maxClauses)
			}
			var next [][]literal
			for _, a := range out {
				for _, b := range c {
					next = append(next, append(append([]literal(nil), a...), b...))
				}
			}
			out = next
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown query node %T", e)
}

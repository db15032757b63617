// Package alertexpr reads the alert's own condition: the PromQL expression
// a Prometheus-compatible rule evaluates, as the alert carries it (an
// `expr` or `query` annotation, or a description that is nothing but the
// expression), split into the measured expression and its threshold. The
// router queries the measured expression over the incident window; the
// analysis reads that series as the alerted signal and judges whether the
// condition still holds. Parsing uses the Prometheus parser itself.
package alertexpr

import (
	"net/url"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Expr is an alert's condition.
type Expr struct {
	// Measure is the expression whose value the rule compares (the whole
	// expression when it has no comparison with a number).
	Measure string
	// Op is the comparison (">", ">=", "<", "<=", "==", "!=") and
	// Threshold the number it compares with; Op is "" when the rule states
	// none.
	Op        string
	Threshold float64
	// From is the annotation the expression was read from.
	From string
}

// Holds reports whether v satisfies the condition; ok is false when the
// expression states no threshold.
func (e Expr) Holds(v float64) (holds, ok bool) {
	switch e.Op {
	case ">":
		return v > e.Threshold, true
	case ">=":
		return v >= e.Threshold, true
	case "<":
		return v < e.Threshold, true
	case "<=":
		return v <= e.Threshold, true
	case "==":
		return v == e.Threshold, true
	case "!=":
		return v != e.Threshold, true
	}
	return false, false
}

// exprKeys are the annotation keys that hold a rule's expression, first
// wins; texts that are only an expression are read after them.
var exprKeys = []string{"expr", "expression", "query", "promql", "alert_query", "rule_expr", "condition"}

// maxLen bounds the text parsed.
const maxLen = 4096

// Find returns the condition of an alert from its annotations (and texts,
// by field name), ok false when none of them is a PromQL expression that
// selects series.
func Find(annotations map[string]string, texts map[string]string) (Expr, bool) {
	for _, k := range exprKeys {
		for ak, v := range annotations {
			if strings.EqualFold(ak, k) {
				if e, ok := Parse(v); ok {
					e.From = ak
					return e, true
				}
			}
		}
	}
	// A Prometheus rule's generator URL carries its expression
	// (/graph?g0.expr=...), as Alertmanager forwards it.
	urlKeys := make([]string, 0, len(annotations))
	for k := range annotations {
		urlKeys = append(urlKeys, k)
	}
	sort.Strings(urlKeys)
	for _, k := range urlKeys {
		if e, ok := fromURL(annotations[k]); ok {
			e.From = k
			return e, true
		}
	}
	keys := make([]string, 0, len(annotations)+len(texts))
	vals := map[string]string{}
	for k, v := range annotations {
		keys = append(keys, "annotation:"+k)
		vals["annotation:"+k] = v
	}
	for k, v := range texts {
		keys = append(keys, k)
		vals[k] = v
	}
	sort.Strings(keys)
	for _, k := range keys {
		if e, ok := Parse(vals[k]); ok {
			e.From = k
			return e, true
		}
	}
	return Expr{}, false
}

// Parse reads s as a PromQL expression that selects at least one series;
// a top-level comparison with a number becomes Op and Threshold.
func Parse(s string) (Expr, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxLen {
		return Expr{}, false
	}
	bare := !strings.ContainsAny(s, "({[")
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(s)
	if err != nil {
		return Expr{}, false
	}
	selects, metricNames := false, true
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if v, ok := n.(*parser.VectorSelector); ok {
			selects = true
			if !strings.Contains(v.Name, "_") {
				metricNames = false
			}
		}
		return nil
	})
	if !selects {
		return Expr{}, false
	}
	if bare && (!metricNames || !topComparison(expr)) {
		// Without a selector's braces or a function's parentheses, only
		// metric names (with an underscore) compared with a number read
		// as an expression: a word of prose is no series.
		return Expr{}, false
	}
	out := Expr{Measure: expr.String()}
	for {
		p, ok := expr.(*parser.ParenExpr)
		if !ok {
			break
		}
		expr = p.Expr
	}
	if b, ok := expr.(*parser.BinaryExpr); ok && b.Op.IsComparisonOperator() {
		if n, ok := unparen(b.RHS).(*parser.NumberLiteral); ok {
			out.Measure, out.Op, out.Threshold = b.LHS.String(), b.Op.String(), n.Val
		} else if n, ok := unparen(b.LHS).(*parser.NumberLiteral); ok {
			out.Measure, out.Op, out.Threshold = b.RHS.String(), flip(b.Op.String()), n.Val
		}
	}
	return out, true
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// flip turns "5 < x" into "x > 5".
func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// topComparison: e (unparenthesised) compares with a number at its top.
func topComparison(e parser.Expr) bool {
	b, ok := unparen(e).(*parser.BinaryExpr)
	if !ok || !b.Op.IsComparisonOperator() {
		return false
	}
	_, l := unparen(b.LHS).(*parser.NumberLiteral)
	_, r := unparen(b.RHS).(*parser.NumberLiteral)
	return l || r
}

// fromURL reads the expression a Prometheus graph URL carries in its
// g0.expr (or expr) query parameter.
func fromURL(raw string) (Expr, bool) {
	if !strings.Contains(raw, "expr=") || len(raw) > 2*maxLen {
		return Expr{}, false
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return Expr{}, false
	}
	q := u.Query()
	for _, k := range []string{"g0.expr", "expr"} {
		if v := q.Get(k); v != "" {
			return Parse(v)
		}
	}
	return Expr{}, false
}

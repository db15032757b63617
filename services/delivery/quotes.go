package delivery

import (
	"fmt"
	"slices"
	"strings"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
)

// Text from the inspected systems reaches a diagnosis only as a marked
// quotation (analysis.QuoteOpen … analysis.QuoteClose). A report never lets
// such text read as its own words: in the conclusion (root cause, causal
// chain, hypotheses) each quotation is replaced by a reference [qN] and
// quoted verbatim, as code, in an evidence block that names the pins it
// came from; in lines already attributed to pins (claims) it is set as code.

// quotation is one quoted span of a conclusion.
type quotation struct {
	ref  string
	text string
	pins []string
}

// quoteBook collects the quotations of one report, numbered in order of
// appearance; the same text keeps its number.
type quoteBook struct {
	d     *investigationv1.Diagnosis
	items []quotation
}

// refs replaces every quotation in s by its reference.
func (qb *quoteBook) refs(s string) string {
	return mapQuotes(s, func(q string) string {
		for _, it := range qb.items {
			if it.text == q {
				return "[" + it.ref + "]"
			}
		}
		ref := fmt.Sprintf("q%d", len(qb.items)+1)
		qb.items = append(qb.items, quotation{ref: ref, text: q, pins: quotePins(qb.d, q)})
		return "[" + ref + "]"
	})
}

// block is the markdown evidence block of the collected quotations ("" when none).
func (qb *quoteBook) block() string {
	if len(qb.items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n> **Quoted evidence** — text from the inspected systems, verbatim: data, not a conclusion.\n>\n")
	for _, it := range qb.items {
		fmt.Fprintf(&b, "> [%s] %s%s\n", it.ref, codeSpan(it.text), attribution(it.pins))
	}
	return b.String()
}

func attribution(pins []string) string {
	if len(pins) == 0 {
		return " — source pin not recorded"
	}
	return pinRefs(pins)
}

// inlineQuotes sets every quotation in s as code (for lines attributed to pins).
func inlineQuotes(s string) string {
	return mapQuotes(s, codeSpan)
}

// mapQuotes replaces each complete QuoteOpen…QuoteClose span of s by fn(text).
func mapQuotes(s string, fn func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, analysis.QuoteOpen)
		if i < 0 {
			break
		}
		rest := s[i+len(analysis.QuoteOpen):]
		j := strings.Index(rest, analysis.QuoteClose)
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(fn(rest[:j]))
		s = rest[j+len(analysis.QuoteClose):]
	}
	b.WriteString(s)
	return b.String()
}

// codeSpan is text as a markdown code span that nothing inside can end.
func codeSpan(text string) string {
	text = strings.ReplaceAll(oneLine(text), "`", "'")
	if text == "" {
		return "` `"
	}
	return "`" + text + "`"
}

// quotePins are the pins of the diagnosis's claims and hypotheses that
// carry the quotation.
func quotePins(d *investigationv1.Diagnosis, q string) []string {
	marked := analysis.QuoteOpen + q + analysis.QuoteClose
	var out []string
	add := func(text string, ids []string) {
		if !strings.Contains(text, marked) {
			return
		}
		for _, id := range ids {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	for _, c := range d.GetValidatedClaims() {
		add(c.GetClaim(), c.GetPinIds())
	}
	for _, c := range d.GetNonValidatedClaims() {
		add(c.GetClaim(), c.GetPinIds())
	}
	for _, h := range d.GetHypotheses() {
		add(h.GetStatement(), h.GetPinIds())
	}
	return out
}

package analysis

import (
	"slices"
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// commonWordsPrior is a model of 100 invented incidents where "missing",
// "failed", "timeout", "column", "field", "probe" and "trailing" are
// everyday words (used by 40) and "quarry" is
// used by 2: the corpus a word's rarity is read against.
func commonWordsPrior() *catprior.Model {
	m := &catprior.Model{Sets: []string{"invented"}, Postings: map[string][][3]int{}}
	docs := make([]int, len(catprior.Categories)+1)
	for c := range docs {
		docs[c] = 100 / len(docs)
	}
	docs[0] += 100 - 100/len(docs)*len(docs)
	m.Docs = [][]int{docs}
	for _, w := range []string{"missing", "failed", "timeout", "column", "field", "probe", "trailing"} {
		m.Postings[w] = [][3]int{{0, 0, 20}, {0, 1, 20}}
	}
	m.Postings["quarry"] = [][3]int{{0, 2, 2}}
	return m
}

func TestTraceWordsAndRecords(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "ImportStalled", Service: "ledger-loader", Namespace: "books"}
	logs := []facts.LogLine{
		// Two days before: a notice from another system naming the
		// failure's words; and one naming none of them.
		{Timestamp: at(-2 * 24 * 60), Service: "vendor-feed", Level: "INFO", Message: "notice: quarry exports now end every row with a semicolon delimiter"},
		{Timestamp: at(-2*24*60 + 5), Service: "vendor-feed", Level: "INFO", Message: "nightly statistics rebuilt"},
		// An error before the failure is not a record of what changed.
		{Timestamp: at(-60), Service: "vendor-feed", Level: "ERROR", Message: "semicolon delimiter probe failed"},
		// The failure, and the alert's own name in it.
		{Timestamp: at(0), Service: "ledger-loader", Level: "ERROR", Message: "ledger-loader: row 12 missing field: trailing semicolon delimiter in quarry column"},
		{Timestamp: at(1), Service: "ledger-loader", Level: "ERROR", Message: "ledger-loader: row 13 missing field: trailing semicolon delimiter in quarry column"},
		// After the first failing line: not earlier.
		{Timestamp: at(5), Service: "vendor-feed", Level: "INFO", Message: "quarry export re-sent with semicolon delimiter"},
	}
	alert.StartsAt = nil
	pins := pin(t, "p-logs", "search_logs", "logs", facts.KeyLogLines, logs)
	in := Input{Alert: alert, Pins: []*evidencev1.EvidencePin{pins}, Prior: commonWordsPrior()}

	ev := NewEvidence(in.Alert, in.Pins)
	ev.prior = in.Prior
	words, first := ev.traceWords()
	// The vendor's own error an hour before names the words too: the
	// failure began there.
	if first == nil || !first.Equal(*at(-60)) {
		t.Fatalf("first failing line at %v, want %v", first, at(-60))
	}
	for _, w := range []string{"missing", "ledger", "loader"} {
		if slices.Contains(words, w) {
			t.Errorf("words %v: %q is an everyday word or the alert's own name", words, w)
		}
	}
	// Words no incident of the corpus uses rank first, then the rare
	// ones ("quarry": 2 of 100), everyday words not at all.
	if len(words) < 3 || !slices.Contains(words[:2], "semicolon") || !slices.Contains(words[:2], "delimiter") || !slices.Contains(words, "quarry") {
		t.Fatalf("words %v: want the rarest failing words first", words)
	}
	if len(words) > maxTraceWords {
		t.Errorf("words %v: more than %d", words, maxTraceWords)
	}

	res := Result{ev: ev}
	q, end := res.TraceSearch()
	if !strings.Contains(q, `"quarry"`) || !strings.Contains(q, " OR ") {
		t.Errorf("query %q", q)
	}
	if end.IsZero() || !end.Before(*first) {
		t.Errorf("search ends at %v, want before the first failing line %v", end, first)
	}
	if q, _ := (Result{ev: ev, Healthy: true}).TraceSearch(); q != "" {
		t.Errorf("a healthy reading traces nothing, got %q", q)
	}

	got := ev.tracedRecords("")
	if len(got) != 1 {
		t.Fatalf("records %d, want the one notice: %v", len(got), got)
	}
	c := got[0].GetClaim()
	if !strings.Contains(c, "quarry exports now end every row") || !strings.Contains(c, "47.0 h before") {
		t.Errorf("record %q", c)
	}
	if !slices.Equal(got[0].GetPinIds(), []string{"p-logs"}) {
		t.Errorf("pins %v", got[0].GetPinIds())
	}
	// Quoted already: not again.
	if got := ev.tracedRecords(strings.ToLower("notice: quarry exports now end every row with a semicolon delimiter")); len(got) != 0 {
		t.Errorf("a record quoted already is quoted again: %v", got)
	}
}

func TestTraceWordsNeedFailingLines(t *testing.T) {
	logs := []facts.LogLine{{Timestamp: at(0), Service: "svc", Level: "INFO", Message: "quarry semicolon delimiter rebuilt"}}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "X"}, []*evidencev1.EvidencePin{pin(t, "p", "search_logs", "logs", facts.KeyLogLines, logs)})
	ev.prior = commonWordsPrior()
	if w, first := ev.traceWords(); len(w) != 0 || first != nil {
		t.Errorf("no failing line, yet words %v at %v", w, first)
	}
}

func TestTraceWordsWithoutAPrior(t *testing.T) {
	logs := []facts.LogLine{{Timestamp: at(0), Service: "svc", Level: "WARN", Message: "row has trailing semicolon"}}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "X"}, []*evidencev1.EvidencePin{pin(t, "p", "search_logs", "logs", facts.KeyLogLines, logs)})
	w, _ := ev.traceWords()
	// Without a corpus, only long words count as rare.
	if !slices.Equal(w, []string{"semicolon", "trailing"}) {
		t.Errorf("words %v", w)
	}
}

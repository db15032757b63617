package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// Tracing the failure's words back. What fails is named in the failing
// lines by words of its own (a "separator", a topic's name, a column, a
// field limit); the record that changed it often came days before, from
// another system, in an INFO line that names the same thing (a vendor's
// notice, a topic's retention altered, a partner onboarded). An SRE greps
// the history for those words. The words are the failing lines' rarest:
// rare in incident evidence at large (the category prior's incidents are
// the corpus) and not the alert's own names, which other searches read.

const (
	// maxTraceWords bounds the words one trace search asks for.
	maxTraceWords = 4
	// traceCommonShare: a word more than this share of incidents use is
	// everyday vocabulary ("error", "timeout"), not what fails.
	traceCommonShare = 0.05
	// minTraceWord is the shortest word worth searching for.
	minTraceWord = 4
	// traceRecent bounds how far before the alert the failing lines that
	// name the words are read (older warnings are history, not this
	// failure).
	traceRecent = 24 * time.Hour
	// maxTracedRecords bounds the earlier records the report quotes.
	maxTracedRecords = 2
)

// failingLine is one line of the failure: a log line at warning level or
// above, or a Warning event.
type failingLine struct {
	text string
	at   *time.Time
}

// failingLines are the failure's lines around the alert: error and warning
// log lines and Warning events of traceRecent before the alert or after.
func (ev *Evidence) failingLines() []failingLine {
	at := ev.alertTime()
	recent := func(t *time.Time) bool {
		return at == nil || t == nil || !t.Before(at.Add(-traceRecent))
	}
	var out []failingLine
	for _, l := range ev.Logs {
		switch logLevel(l.LogLine) {
		case "ERROR", "FATAL", "WARN":
			if recent(l.Timestamp) {
				out = append(out, failingLine{l.Message, l.Timestamp})
			}
		}
	}
	for _, e := range ev.Events {
		if strings.EqualFold(e.Type, "Warning") && recent(e.LastSeen) {
			t := e.FirstSeen
			if t == nil {
				t = e.LastSeen
			}
			out = append(out, failingLine{e.Reason + " " + e.Message, t})
		}
	}
	return out
}

// alertNameWords are the words of the names the alert carries (service,
// workload, pod, namespace, the machine, database or queue its labels
// name: recordNames): searched for by the context searches already.
func (ev *Evidence) alertNameWords() map[string]bool {
	out := map[string]bool{}
	a := ev.Alert
	if a == nil {
		return out
	}
	names := append([]string{a.GetService(), a.GetNamespace(), a.GetPod(), a.GetLabels()["deployment"], a.GetLabels()["workload"], a.GetLabels()["app"]}, recordNames(a)...)
	for _, n := range names {
		for _, w := range textutil.NameWords(n) {
			out[w] = true
		}
		out[strings.ToLower(n)] = true
	}
	return out
}

// traceWords are the failing lines' rarest words, most telling first, and
// the time of the first failing line that uses one of them (nil when
// none is timed): what to search the history for, and up to when.
func (ev *Evidence) traceWords() ([]string, *time.Time) {
	ev.traceOnce.Do(func() { ev.traceW, ev.traceFirst = ev.findTraceWords() })
	return ev.traceW, ev.traceFirst
}

// findTraceWords does traceWords' work once per evidence model.
func (ev *Evidence) findTraceWords() ([]string, *time.Time) {
	lines := ev.failingLines()
	if len(lines) == 0 {
		return nil, nil
	}
	names := ev.alertNameWords()
	count := map[string]int{}
	for _, l := range lines {
		t := catprior.Terms{}
		t.AddText(l.text)
		for w := range t {
			if len(w) >= minTraceWord && !names[w] && !hasDigit(w) && count[w] < 3 {
				count[w]++
			}
		}
	}
	type scored struct {
		w string
		s float64
	}
	var ws []scored
	for w, c := range count {
		r, ok := ev.rarity(w)
		if !ok {
			continue
		}
		ws = append(ws, scored{w, float64(c) * r})
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].s != ws[j].s {
			return ws[i].s > ws[j].s
		}
		return ws[i].w < ws[j].w
	})
	var out []string
	for _, s := range ws {
		if len(out) == maxTraceWords {
			break
		}
		if covered(out, s.w) {
			continue // a snake_case word's part, or the word of a part
		}
		out = append(out, s.w)
	}
	var first *time.Time
	for _, l := range lines {
		if l.at != nil && containsAny(strings.ToLower(l.text), out) && (first == nil || l.at.Before(*first)) {
			first = l.at
		}
	}
	return out, first
}

// hasDigit: w carries a digit (an id's fragment, a version, a counter's
// value: what differs between occurrences, not what fails).
func hasDigit(w string) bool { return strings.ContainsAny(w, "0123456789") }

// covered: w is a part of a word already chosen, or one of them a part of w.
func covered(chosen []string, w string) bool {
	for _, c := range chosen {
		if strings.Contains(c, w) || strings.Contains(w, c) {
			return true
		}
	}
	return false
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return len(words) == 0
}

// rarity is how telling a word is: the log of the inverse share of the
// prior's incidents that use it; false for everyday words. Without a
// prior, a long word counts as rare (weight 1) and a short one not.
func (ev *Evidence) rarity(w string) (float64, bool) {
	if ev.prior == nil || ev.prior.Incidents() == 0 {
		return 1, len(w) >= 6
	}
	n, df := float64(ev.prior.Incidents()), float64(ev.prior.DocFreq(w))
	if df > traceCommonShare*n {
		return 0, false
	}
	return math.Log((n + 1) / (df + 1)), true
}

// TraceSearch is the search for the failure's words over the history
// before the failure began: the words (quoted, any of them) and the end
// of the search (the first failing line that names one; zero when none
// is timed). Empty when the failing lines carry no rare word.
func (r Result) TraceSearch() (query string, end time.Time) {
	if r.ev == nil || r.Healthy {
		return "", time.Time{}
	}
	words, first := r.ev.traceWords()
	if len(words) == 0 {
		return "", time.Time{}
	}
	qs := make([]string, len(words))
	for i, w := range words {
		qs[i] = `"` + w + `"`
	}
	if first != nil {
		end = first.Add(-time.Second)
	}
	return strings.Join(qs, " OR "), end
}

// tracedRecords quotes the records written before the failure began that
// name its rarest words (not failing themselves, not quoted already):
// those naming the most of the words first, then the nearest to the
// failure. Each says which words it shares and how long before the first
// failing line it was written.
func (ev *Evidence) tracedRecords(known string) []*investigationv1.Claim {
	words, first := ev.traceWords()
	if len(words) == 0 || first == nil {
		return nil
	}
	type rec struct {
		l      LogLine
		shared []string
	}
	var recs []rec
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || !l.Timestamp.Before(*first) {
			continue
		}
		switch logLevel(l.LogLine) {
		case "ERROR", "FATAL":
			continue
		}
		low := strings.ToLower(l.Message)
		key := low[:min(len(low), 80)]
		if seen[key] || strings.Contains(known, low[:min(len(low), 60)]) {
			continue
		}
		var shared []string
		for _, w := range words {
			if strings.Contains(low, w) {
				shared = append(shared, w)
			}
		}
		if len(shared) == 0 {
			continue
		}
		seen[key] = true
		recs = append(recs, rec{l, shared})
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if len(recs[i].shared) != len(recs[j].shared) {
			return len(recs[i].shared) > len(recs[j].shared)
		}
		return recs[i].l.Timestamp.After(*recs[j].l.Timestamp)
	})
	var out []*investigationv1.Claim
	for _, r := range recs[:min(len(recs), maxTracedRecords)] {
		before := first.Sub(*r.l.Timestamp)
		out = append(out, &investigationv1.Claim{
			Claim: fmt.Sprintf("Earlier record naming what fails (%s), %s before the first failing line at %s: %s wrote %s",
				strings.Join(r.shared, ", "), durHuman(before), hhmm(first), logOrigin(r.l), quote(r.l.Message)),
			Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: r.l.Cite.PinIDs,
		})
	}
	return out
}

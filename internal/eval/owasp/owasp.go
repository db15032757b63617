// Package owasp is the OWASP Benchmark suite of `rcamesh eval`: it triages
// a scanner's SARIF over the benchmark's sources (read in place, from a
// configurable folder, never copied) and scores the verdicts with the
// benchmark's rule: per category TPR, FPR and score = TPR - FPR, and the
// mean of the categories, as OWASP's scorecard averages. A test case is
// matched by its file name only; the analyser never sees expected results.
package owasp

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/sast"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// Dir is the suite's folder under the benchmarks root.
const Dir = "owasp-benchmark"

// Case is one expected result.
type Case struct {
	Test     string
	Category string
	Real     bool
	CWE      int
}

// LoadExpected reads expected.csv.
func LoadExpected(path string) (map[string]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("owasp: %w", err)
	}
	defer f.Close()
	out := map[string]Case{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		p := strings.Split(l, ",")
		if len(p) < 4 {
			return nil, fmt.Errorf("owasp: %s: bad line %q", path, l)
		}
		cwe, err := strconv.Atoi(strings.TrimSpace(p[3]))
		if err != nil {
			return nil, fmt.Errorf("owasp: %s: bad CWE in %q", path, l)
		}
		out[p[0]] = Case{Test: p[0], Category: p[1], Real: p[2] == "true", CWE: cwe}
	}
	return out, sc.Err()
}

var testRe = regexp.MustCompile(`BenchmarkTest\d{5}`)

// TestOf is the test case a path belongs to ("" if none).
func TestOf(p string) string { return testRe.FindString(filepath.Base(p)) }

// Row is one category's score.
type Row struct {
	Category       string  `json:"category"`
	TP, FN, FP, TN int     `json:"-"`
	TPR            float64 `json:"tpr"`
	FPR            float64 `json:"fpr"`
	Score          float64 `json:"score"`
	NeedsReview    int     `json:"needsReview"`
	Counts         [4]int  `json:"counts"` // TP FN FP TN
}

// Table is a scored run.
type Table struct {
	Name        string  `json:"name"`
	Rows        []Row   `json:"rows"`
	TPR         float64 `json:"tpr"`
	FPR         float64 `json:"fpr"`
	Score       float64 `json:"score"`
	NeedsReview int     `json:"needsReview"`
	Findings    int     `json:"findings"`
	Cost        *CostSummary
}

// CostSummary is the per-finding cost of a triage run.
type CostSummary struct {
	MedianToolCalls  float64 `json:"medianToolCalls"`
	MedianIterations float64 `json:"medianIterations"`
	MedianWallMS     float64 `json:"medianWallMs"`
	MaxToolCalls     int     `json:"maxToolCalls"`
	TotalWall        string  `json:"totalWall"`
}

// Score scores flagged test cases (with NEEDS_REVIEW marks) against the
// expected results restricted to cases.
func Score(name string, exp map[string]Case, cases []string, flagged, review map[string]bool) Table {
	rows := map[string]*Row{}
	for _, t := range cases {
		c := exp[t]
		r := rows[c.Category]
		if r == nil {
			r = &Row{Category: c.Category}
			rows[c.Category] = r
		}
		switch {
		case c.Real && flagged[t]:
			r.TP++
		case c.Real:
			r.FN++
		case flagged[t]:
			r.FP++
		default:
			r.TN++
		}
		if review[t] {
			r.NeedsReview++
		}
	}
	tab := Table{Name: name}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := rows[k]
		if r.TP+r.FN > 0 {
			r.TPR = float64(r.TP) / float64(r.TP+r.FN)
		}
		if r.FP+r.TN > 0 {
			r.FPR = float64(r.FP) / float64(r.FP+r.TN)
		}
		r.Score = r.TPR - r.FPR
		r.Counts = [4]int{r.TP, r.FN, r.FP, r.TN}
		tab.Rows = append(tab.Rows, *r)
		tab.TPR += r.TPR
		tab.FPR += r.FPR
		tab.Score += r.Score
		tab.NeedsReview += r.NeedsReview
	}
	if n := float64(len(tab.Rows)); n > 0 {
		tab.TPR /= n
		tab.FPR /= n
		tab.Score /= n
	}
	return tab
}

// flaggedAsIs: a test case is flagged when a result in its file carries its CWE.
func flaggedAsIs(exp map[string]Case, fs []sast.Finding) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		t := TestOf(f.File)
		c, ok := exp[t]
		if !ok {
			continue
		}
		if hasCWE(f, c.CWE) {
			out[t] = true
		}
	}
	return out
}

func hasCWE(f sast.Finding, cwe int) bool {
	for _, x := range f.CWEs {
		if x == cwe {
			return true
		}
	}
	return false
}

// flaggedTriaged: within the scanner's output, a flagged test case stays
// flagged unless its verdict (TRUE_POSITIVE > NEEDS_REVIEW > FALSE_POSITIVE
// over its results of the right CWE) is FALSE_POSITIVE.
func flaggedTriaged(exp map[string]Case, rs []sast.Result) (flagged, review map[string]bool) {
	best := map[string]int{} // 3 TP, 2 NR, 1 FP
	rank := map[string]int{javaflow.TruePositive: 3, javaflow.NeedsReview: 2, javaflow.FalsePositive: 1}
	for _, r := range rs {
		t := TestOf(r.Finding.File)
		c, ok := exp[t]
		if !ok || !hasCWE(r.Finding, c.CWE) {
			continue
		}
		if k := rank[r.Verdict]; k > best[t] {
			best[t] = k
		}
	}
	flagged, review = map[string]bool{}, map[string]bool{}
	for t, k := range best {
		flagged[t] = k >= 2
		review[t] = k == 2
	}
	return flagged, review
}

// Options configure a suite run.
type Options struct {
	Root     string // the owasp-benchmark folder
	Parallel int
	Logger   *slog.Logger
	// Half selects the test cases scored: "" all, "a" or "b" a fixed
	// pseudo-random half of the public cases (by a hash of the name), to
	// check that a change does not fit one half only.
	Half string
	// Evaluator judges every package: the critic's EvaluateFinding over
	// gRPC, reading the suite folder (required).
	Evaluator sast.Evaluator
}

// Report is the suite's result.
type Report struct {
	Tables  []Table       `json:"tables"`
	Results []sast.Result `json:"-"`
	Semgrep []sast.Result `json:"-"`
}

// InHalf reports whether test t is in half h ("a"/"b"; "" = all).
func InHalf(t, h string) bool {
	if h == "" {
		return true
	}
	var x uint32 = 2166136261
	for i := 0; i < len(t); i++ {
		x ^= uint32(t[i])
		x *= 16777619
	}
	return (x%2 == 0) == (h == "a")
}

// Run triages findings-all.sarif and findings-semgrep.sarif.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Evaluator == nil {
		return nil, fmt.Errorf("owasp: an evaluator (the critic) is required")
	}
	exp, err := LoadExpected(filepath.Join(o.Root, "expected.csv"))
	if err != nil {
		return nil, err
	}
	r, err := repo.Open(o.Root, o.Root)
	if err != nil {
		return nil, err
	}
	var cases []string
	for t := range exp {
		if InHalf(t, o.Half) {
			cases = append(cases, t)
		}
	}
	sort.Strings(cases)
	tr := sast.NewTriager(r, o.Evaluator, o.Logger)
	if o.Parallel > 0 {
		tr.Parallel = o.Parallel
	}
	rep := &Report{}
	for _, in := range []struct {
		name, file string
	}{{"flag-all", "findings-all.sarif"}, {"semgrep", "findings-semgrep.sarif"}} {
		b, err := os.ReadFile(filepath.Join(o.Root, in.file))
		if err != nil {
			return nil, fmt.Errorf("owasp: %w", err)
		}
		fs, err := sast.ParseSARIF(b)
		if err != nil {
			return nil, fmt.Errorf("owasp: %s: %w", in.file, err)
		}
		// SARIF paths are relative to the suite folder
		var keep []sast.Finding
		for _, f := range fs {
			if t := TestOf(f.File); t == "" || InHalf(t, o.Half) {
				keep = append(keep, f)
			}
		}
		rep.Tables = append(rep.Tables, Score(in.name+" as is", exp, cases, flaggedAsIs(exp, keep), nil))
		start := time.Now()
		rs := tr.Run(ctx, keep)
		wall := time.Since(start)
		fl, rv := flaggedTriaged(exp, rs)
		tab := Score(in.name+" triaged", exp, cases, fl, rv)
		tab.Findings = len(rs)
		tab.Cost = costOf(rs, wall)
		rep.Tables = append(rep.Tables, tab)
		if in.name == "flag-all" {
			rep.Results = rs
		} else {
			rep.Semgrep = rs
		}
	}
	return rep, nil
}

func costOf(rs []sast.Result, wall time.Duration) *CostSummary {
	var tc, it, ms []float64
	c := &CostSummary{TotalWall: wall.Round(time.Millisecond).String()}
	for _, r := range rs {
		tc = append(tc, float64(r.Cost.ToolCalls))
		it = append(it, float64(r.Cost.Iterations))
		ms = append(ms, r.Cost.WallMS)
		if r.Cost.ToolCalls > c.MaxToolCalls {
			c.MaxToolCalls = r.Cost.ToolCalls
		}
	}
	c.MedianToolCalls, c.MedianIterations, c.MedianWallMS = sast.Median(tc), sast.Median(it), sast.Median(ms)
	return c
}

// Markdown renders a table.
func (t Table) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s\n\n| category | TP | FN | FP | TN | TPR | FPR | score | NEEDS_REVIEW |\n|---|---|---|---|---|---|---|---|---|\n", t.Name)
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.3f | %.3f | %+.3f | %d |\n", r.Category, r.TP, r.FN, r.FP, r.TN, r.TPR, r.FPR, r.Score, r.NeedsReview)
	}
	fmt.Fprintf(&b, "| **overall (mean of categories)** | | | | | **%.3f** | **%.3f** | **%+.3f** | %d |\n", t.TPR, t.FPR, t.Score, t.NeedsReview)
	if t.Cost != nil {
		fmt.Fprintf(&b, "\n%d findings; per finding median %.0f tool calls (max %d), %.0f iterations, %.1f ms wall; run %s\n",
			t.Findings, t.Cost.MedianToolCalls, t.Cost.MaxToolCalls, t.Cost.MedianIterations, t.Cost.MedianWallMS, t.Cost.TotalWall)
	}
	return b.String()
}

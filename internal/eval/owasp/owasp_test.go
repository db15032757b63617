package owasp

import (
	"context"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/modules"
)

func TestScoreRule(t *testing.T) {
	exp := map[string]Case{
		"BenchmarkTest00001": {Category: "sqli", Real: true, CWE: 89},
		"BenchmarkTest00002": {Category: "sqli", Real: false, CWE: 89},
		"BenchmarkTest00003": {Category: "xss", Real: true, CWE: 79},
		"BenchmarkTest00004": {Category: "xss", Real: false, CWE: 79},
	}
	cases := []string{"BenchmarkTest00001", "BenchmarkTest00002", "BenchmarkTest00003", "BenchmarkTest00004"}
	tab := Score("x", exp, cases, map[string]bool{"BenchmarkTest00001": true, "BenchmarkTest00003": true, "BenchmarkTest00004": true}, nil)
	// sqli: TPR 1 FPR 0 -> 1; xss: TPR 1 FPR 1 -> 0; mean 0.5
	if tab.Score != 0.5 || tab.Rows[0].Category != "sqli" || tab.Rows[0].Score != 1 || tab.Rows[1].Score != 0 {
		t.Fatalf("%+v", tab)
	}
}

func TestHalvesPartition(t *testing.T) {
	a, b := 0, 0
	for i := 1; i <= 1000; i++ {
		n := "BenchmarkTest" + string(rune('0'+i/10000%10)) + string(rune('0'+i/1000%10)) + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
		if InHalf(n, "a") == InHalf(n, "b") {
			t.Fatalf("%s in both or neither half", n)
		}
		if InHalf(n, "a") {
			a++
		} else {
			b++
		}
	}
	if a < 400 || b < 400 {
		t.Fatalf("unbalanced halves %d/%d", a, b)
	}
}

// TestOwaspSuite runs the whole public half (about 5 s on 2 cores) and
// holds the targets of issue 11: overall score >= 0.90, every category >=
// 0.75, NEEDS_REVIEW under 5%, Semgrep triaged not below Semgrep as is.
func TestOwaspSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the benchmark (seconds); run without -short")
	}
	root := benchdata.Dir(t, Dir)
	if root == "" {
		return
	}
	// the whole mesh in this process: every verdict is judged by the
	// critic over gRPC
	l, ev, err := modules.StartTriageMesh(context.Background(), root, t.TempDir(), "owasp-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	rep, err := Run(context.Background(), Options{Root: root, Evaluator: ev})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Table{}
	for _, tab := range rep.Tables {
		byName[tab.Name] = tab
	}
	all := byName["flag-all triaged"]
	if all.Score < 0.90 {
		t.Errorf("flag-all triaged score %.3f < 0.90", all.Score)
	}
	for _, r := range all.Rows {
		if r.Score < 0.75 {
			t.Errorf("category %s score %.3f < 0.75", r.Category, r.Score)
		}
	}
	if float64(all.NeedsReview) >= 0.05*float64(all.Findings) {
		t.Errorf("NEEDS_REVIEW %d of %d", all.NeedsReview, all.Findings)
	}
	if asIs := byName["flag-all as is"]; asIs.Score != 0 {
		t.Errorf("flag-all as is scores %.3f, want 0", asIs.Score)
	}
	if byName["semgrep triaged"].Score < byName["semgrep as is"].Score {
		t.Errorf("semgrep triaged %.3f < as is %.3f", byName["semgrep triaged"].Score, byName["semgrep as is"].Score)
	}
	if all.Cost == nil || all.Cost.MedianToolCalls == 0 {
		t.Errorf("cost not measured: %+v", all.Cost)
	}
}

// BenchmarkOwaspSuite triages the 1,370 findings of findings-all.sarif and
// the 708 of Semgrep (the whole suite, both SARIF files).
func BenchmarkOwaspSuite(b *testing.B) {
	root, ok := benchdata.Lookup(Dir)
	if !ok {
		b.Skip("benchmarks not found")
	}
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Root: root}); err != nil {
			b.Fatal(err)
		}
	}
}

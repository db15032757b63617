package sast

import (
	"context"
	"os"
	"testing"

	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// BenchmarkTriageExample triages the bundled example's ten findings (a
// fresh parse cache each time: the cold cost of a run).
func BenchmarkTriageExample(b *testing.B) {
	doc, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		b.Fatal(err)
	}
	fs, err := ParseSARIF(doc)
	if err != nil {
		b.Fatal(err)
	}
	r, err := repo.Open("../../examples/sast-demo", "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr := NewTriager(r, nil)
		tr.Parallel = 1
		_ = tr.Run(context.Background(), fs)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(fs)), "µs/finding")
}

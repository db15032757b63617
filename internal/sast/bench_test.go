package sast

import (
	"context"
	"os"
	"testing"

	"github.com/rcamesh/rcamesh/internal/sast/repo"
	"github.com/rcamesh/rcamesh/internal/sast/sasttest"
)

// BenchmarkTriageExample triages the bundled example's findings; every verdict judged by the critic over gRPC (in memory) (a
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
	ev := &CriticEvaluator{Client: sasttest.Critic(b, r.Root(), nil)}
	b.ReportAllocs()
	for b.Loop() {
		tr := NewTriager(r, ev, nil)
		tr.Parallel = 1
		_ = tr.Run(context.Background(), fs)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(fs)), "µs/finding")
}

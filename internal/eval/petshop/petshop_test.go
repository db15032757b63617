package petshop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/graphrca"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const metricsHeader = "microservice,a,a,b,b\nmetric,latency,requests,latency,requests\nstatistic,Average,Sum,Average,Sum\nunix_timestamp,,,,\n"

func TestReadMetricsAndGraph(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "m.csv"), metricsHeader+"100.0,0.5,10,,0\n400.0,0.7,12,0.1,3\n")
	f, err := ReadMetrics(filepath.Join(dir, "m.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Rows() != 2 || f.Times[1] != 400 {
		t.Fatalf("rows/times wrong: %+v", f.Times)
	}
	b := f.Cols[graphrca.Column{Node: "b", Metric: "latency", Stat: "Average"}]
	if b[0] == b[0] || b[1] != 0.1 { // NaN != NaN: an empty cell is no traffic, not 0
		t.Fatalf("empty cell must be NaN, got %v", b)
	}
	write(t, filepath.Join(dir, "g.csv"), ",a,b\na,0.0,1.0\nb,0.0,0.0\n")
	g, err := ReadGraph(filepath.Join(dir, "g.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Callees["a"]) != 1 || g.Callees["a"][0] != "b" || len(g.Callees["b"]) != 0 {
		t.Fatalf("edges wrong: %+v", g.Callees)
	}
}

func TestReadMetricsErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"short header", "microservice,a\nmetric,latency\n", "header line 3"},
		{"bad cell", metricsHeader + "1.0,x,1,1,1\n", `cell "x"`},
		{"ragged row", metricsHeader + "1.0,1,1\n", "3 cells"},
		{"no rows", metricsHeader, "no data rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.csv")
			write(t, p, tt.content)
			_, err := ReadMetrics(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want error containing %q, got %v", tt.want, err)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	outs := []Outcome{
		{Scenario: "s", Metric: "latency", Split: "test", Rank: 1, Ranking: []string{"x"}},
		{Scenario: "s", Metric: "latency", Split: "test", Rank: 3, Ranking: []string{"a", "b", "x"}},
		{Scenario: "s", Metric: "latency", Split: "train", Rank: 0},
		{Scenario: "s", Metric: "latency", Split: "train", Rank: 0, Ranking: []string{"a"}},
	}
	r := Pooled(outs, "")
	if r.AC1 != 0.25 || r.AC3 != 0.5 || r.Empty != 0.25 {
		t.Fatalf("pooled wrong: %+v", r)
	}
	// Avg@5 = mean over k=1..5 of AC@k = (1/4)(1 + 3/5) ... per incident: rank1 ->1, rank3 -> 3/5
	if want := (1 + 0.6) / 4; abs(r.Avg5-want) > 1e-9 {
		t.Fatalf("avg5 %.4f want %.4f", r.Avg5, want)
	}
	if want := (1 + 1.0/3) / 4; abs(r.MRR-want) > 1e-9 {
		t.Fatalf("mrr %.4f want %.4f", r.MRR, want)
	}
	if tr := Pooled(outs, "test"); tr.N != 2 || tr.AC1 != 0.5 {
		t.Fatalf("test split wrong: %+v", tr)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestAgainstAuthorsBaseline runs the engine on the dataset and holds every
// row to the dataset authors' stored baseline.
func TestAgainstAuthorsBaseline(t *testing.T) {
	dir := benchdata.Dir(t, "petshop")
	scs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := Evaluate(scs, graphrca.DefaultConfig())
	if s.Overall.N != 68 {
		t.Fatalf("want 68 incidents, got %d", s.Overall.N)
	}
	for _, r := range s.Pooled {
		u, ok := Upstream[[2]string{r.Group, r.Metric}]
		if !ok {
			t.Fatalf("no authors' row for %s/%s", r.Group, r.Metric)
		}
		if r.AC1 < u.AC1 || r.AC3 < u.AC3 {
			t.Errorf("%s/%s: AC@1 %.3f AC@3 %.3f behind the authors' %.3f / %.3f", r.Group, r.Metric, r.AC1, r.AC3, u.AC1, u.AC3)
		}
		if spec, ok := s.Specificity[r.Group][r.Metric]; ok && spec < u.Specificity {
			t.Errorf("%s/%s: specificity %.3f behind the authors' %.3f", r.Group, r.Metric, spec, u.Specificity)
		}
	}
	for _, name := range []string{"random", "most_frequent", "anomaly_size_only"} {
		for _, b := range s.Baselines[name] {
			for _, r := range s.Pooled {
				if r.Group == b.Group && r.Metric == b.Metric && r.AC1 < b.AC1 {
					t.Errorf("%s/%s: engine AC@1 %.3f behind trivial baseline %s %.3f", r.Group, r.Metric, r.AC1, name, b.AC1)
				}
			}
		}
	}
	md := s.Markdown()
	if !strings.Contains(md, "| low_traffic | latency |") {
		t.Fatalf("markdown lacks rows:\n%s", md)
	}
	t.Log("\n" + md)
}

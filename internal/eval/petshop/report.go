package petshop

import (
	"fmt"
	"math"
	"strings"

	"github.com/rcamesh/rcamesh/internal/graphrca"
)

// Summary is the whole PetShop evaluation.
type Summary struct {
	Outcomes    []Outcome                     `json:"outcomes"`
	Pooled      []Row                         `json:"pooled"`
	Test        []Row                         `json:"test"`
	Baselines   map[string][]Row              `json:"baselines"`
	Specificity map[string]map[string]float64 `json:"specificity"`
	Overall     Row                           `json:"overall"`
	OverallTest Row                           `json:"overall_test"`
}

// Evaluate ranks every incident with the engine and the trivial baselines
// and measures specificity on the no-issue periods.
func Evaluate(scs []Scenario, cfg graphrca.Config) Summary {
	outs := Run(scs, Engine(cfg))
	s := Summary{
		Outcomes:    outs,
		Pooled:      Table(outs, ""),
		Test:        Table(outs, "test"),
		Overall:     Pooled(outs, ""),
		OverallTest: Pooled(outs, "test"),
		Baselines: map[string][]Row{
			"random":            randomMean(scs, 200),
			"most_frequent":     Table(Run(scs, MostFrequentBaseline(scs)), ""),
			"anomaly_size_only": Table(Run(scs, AnomalySizeBaseline(cfg)), ""),
		},
		Specificity: map[string]map[string]float64{},
	}
	for i := range scs {
		g := GroupName(scs[i].Name)
		for _, m := range []string{graphrca.MetricLatency, graphrca.MetricAvailability} {
			v, n, err := Specificity(&scs[i], m, cfg)
			if err != nil || n == 0 {
				continue
			}
			if s.Specificity[g] == nil {
				s.Specificity[g] = map[string]float64{}
			}
			s.Specificity[g][m] = v
		}
	}
	return s
}

// randomMean averages the random baseline over many seeded draws: its
// expected value, not one lucky or unlucky shuffle.
func randomMean(scs []Scenario, draws int) []Row {
	var acc []Row
	for seed := 1; seed <= draws; seed++ {
		rows := Table(Run(scs, RandomBaseline(uint64(seed))), "")
		if acc == nil {
			acc = make([]Row, len(rows))
			copy(acc, rows)
			for i := range acc {
				acc[i].Empty, acc[i].AC1, acc[i].AC3, acc[i].Avg5, acc[i].MRR = 0, 0, 0, 0, 0
			}
		}
		for i, r := range rows {
			acc[i].Empty += r.Empty / float64(draws)
			acc[i].AC1 += r.AC1 / float64(draws)
			acc[i].AC3 += r.AC3 / float64(draws)
			acc[i].Avg5 += r.Avg5 / float64(draws)
			acc[i].MRR += r.MRR / float64(draws)
		}
	}
	return acc
}

// Markdown renders the summary as the README's tables.
func (s Summary) Markdown() string {
	var b strings.Builder
	find := func(rows []Row, g, m string) (Row, bool) {
		for _, r := range rows {
			if r.Group == g && r.Metric == m {
				return r, true
			}
		}
		return Row{}, false
	}
	fmt.Fprintf(&b, "| scenario | metric | n | empty | AC@1 | AC@3 | Avg@5 | authors' AC@1 | authors' AC@3 | random AC@1 (expected) | most-frequent AC@1 | anomaly-size AC@1 | specificity | authors' specificity |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range s.Pooled {
		u := Upstream[[2]string{r.Group, r.Metric}]
		rnd, _ := find(s.Baselines["random"], r.Group, r.Metric)
		mf, _ := find(s.Baselines["most_frequent"], r.Group, r.Metric)
		as, _ := find(s.Baselines["anomaly_size_only"], r.Group, r.Metric)
		spec := "n/a (no noissue file)"
		if v, ok := s.Specificity[r.Group][r.Metric]; ok && !math.IsNaN(v) {
			spec = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.3f |\n",
			r.Group, r.Metric, r.N, r.Empty, r.AC1, r.AC3, r.Avg5, u.AC1, u.AC3, rnd.AC1, mf.AC1, as.AC1, spec, u.Specificity)
	}
	fmt.Fprintf(&b, "\nPooled train+test: n=%d AC@1 %.3f, AC@3 %.3f, Avg@5 %.3f, MRR %.3f, empty %.3f. Test split only (culprits never seen in train): n=%d AC@1 %.3f, AC@3 %.3f, Avg@5 %.3f.\n",
		s.Overall.N, s.Overall.AC1, s.Overall.AC3, s.Overall.Avg5, s.Overall.MRR, s.Overall.Empty, s.OverallTest.N, s.OverallTest.AC1, s.OverallTest.AC3, s.OverallTest.Avg5)
	return b.String()
}

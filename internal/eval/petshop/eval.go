package petshop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/graphrca"
)

// Ranker ranks candidate nodes for one incident (best first).
type Ranker func(sc *Scenario, inc *Incident) ([]string, error)

// Engine ranks with graphrca, the method rcamesh ships.
func Engine(cfg graphrca.Config) Ranker {
	return func(sc *Scenario, inc *Incident) ([]string, error) {
		res, err := graphrca.Rank(problem(sc, inc.Window, inc.Target, TriggerRow(inc.Window, inc.Target.Timestamp)), cfg)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(res.Candidates))
		for _, c := range res.Candidates {
			out = append(out, c.Node)
		}
		return out, nil
	}
}

func problem(sc *Scenario, w graphrca.Frame, t Target, trigger int) graphrca.Problem {
	return graphrca.Problem{Graph: sc.Graph, Window: w, Baseline: sc.Baseline,
		TargetNode: t.Node, TargetMetric: t.Metric, TargetStat: t.Agg, TriggerRow: trigger}
}

// Outcome is one incident's ranking and its hit depth.
type Outcome struct {
	Scenario  string   `json:"scenario"`
	Split     string   `json:"split"`
	Incident  string   `json:"incident"`
	Metric    string   `json:"metric"`
	RootCause string   `json:"root_cause"`
	Ranking   []string `json:"ranking"`
	// Rank is the 1-based rank of the root cause among distinct nodes, 0 if absent.
	Rank int    `json:"rank"`
	Err  string `json:"error,omitempty"`
}

// Run ranks every incident.
func Run(scs []Scenario, rk Ranker) []Outcome {
	var out []Outcome
	for i := range scs {
		sc := &scs[i]
		for j := range sc.Incidents {
			inc := &sc.Incidents[j]
			o := Outcome{Scenario: sc.Name, Split: inc.Split, Incident: inc.Name, Metric: inc.Target.Metric, RootCause: inc.RootCause}
			ranking, err := rk(sc, inc)
			if err != nil {
				o.Err = err.Error()
			}
			o.Ranking = distinct(ranking)
			for k, n := range o.Ranking {
				if n == inc.RootCause {
					o.Rank = k + 1
					break
				}
			}
			out = append(out, o)
		}
	}
	return out
}

func distinct(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Row is one line of a results table.
type Row struct {
	Group  string  `json:"group"`
	Metric string  `json:"metric"`
	N      int     `json:"n"`
	Empty  float64 `json:"empty"`
	AC1    float64 `json:"ac1"`
	AC3    float64 `json:"ac3"`
	Avg5   float64 `json:"avg5"`
	MRR    float64 `json:"mrr"`
}

// GroupName pools temporal_traffic1 and 2 as the dataset authors do.
func GroupName(scenario string) string {
	if strings.HasPrefix(scenario, "temporal_traffic") {
		return "temporal_traffic"
	}
	return scenario
}

// Table aggregates outcomes per group and metric; split "" pools train and test.
func Table(outs []Outcome, split string) []Row {
	type key struct{ g, m string }
	acc := map[key][]Outcome{}
	var keys []key
	for _, o := range outs {
		if split != "" && o.Split != split {
			continue
		}
		k := key{GroupName(o.Scenario), o.Metric}
		if _, ok := acc[k]; !ok {
			keys = append(keys, k)
		}
		acc[k] = append(acc[k], o)
	}
	order := map[string]int{"low_traffic": 0, "high_traffic": 1, "temporal_traffic": 2}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].g != keys[j].g {
			return order[keys[i].g] < order[keys[j].g]
		}
		return keys[i].m > keys[j].m // latency before availability
	})
	var rows []Row
	for _, k := range keys {
		rows = append(rows, summarize(k.g, k.m, acc[k]))
	}
	return rows
}

// Pooled aggregates all outcomes of a split into one row.
func Pooled(outs []Outcome, split string) Row {
	var sel []Outcome
	for _, o := range outs {
		if split == "" || o.Split == split {
			sel = append(sel, o)
		}
	}
	return summarize("all", "all", sel)
}

func summarize(g, m string, os []Outcome) Row {
	r := Row{Group: g, Metric: m, N: len(os)}
	if len(os) == 0 {
		return r
	}
	for _, o := range os {
		if len(o.Ranking) == 0 {
			r.Empty++
		}
		if o.Rank == 1 {
			r.AC1++
		}
		if o.Rank >= 1 && o.Rank <= 3 {
			r.AC3++
		}
		for k := 1; k <= 5; k++ {
			if o.Rank >= 1 && o.Rank <= k {
				r.Avg5 += 1.0 / 5
			}
		}
		if o.Rank > 0 {
			r.MRR += 1 / float64(o.Rank)
		}
	}
	n := float64(len(os))
	r.Empty /= n
	r.AC1 /= n
	r.AC3 /= n
	r.Avg5 /= n
	r.MRR /= n
	return r
}

// Upstream is the dataset authors' stored baseline (README section 7):
// pooled train+test top-1 and top-3 per group and metric, and specificity.
var Upstream = map[[2]string]struct{ AC1, AC3, Empty, Specificity float64 }{
	{"low_traffic", "latency"}:           {0.571, 0.571, 0.21, 0.167},
	{"low_traffic", "availability"}:      {0.833, 1.000, 0.00, 1.000},
	{"high_traffic", "latency"}:          {0.571, 0.786, 0.14, 0.333},
	{"high_traffic", "availability"}:     {0.667, 1.000, 0.00, 1.000},
	{"temporal_traffic", "latency"}:      {1.000, 1.000, 0.00, 0.600},
	{"temporal_traffic", "availability"}: {0.750, 1.000, 0.00, 1.000},
}

// RandomBaseline ranks the target's dependencies uniformly at random
// (seeded, so runs are reproducible).
func RandomBaseline(seed uint64) Ranker {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(sc *Scenario, inc *Incident) ([]string, error) {
		c := candidates(sc, inc)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		return c, nil
	}
}

// MostFrequentBaseline ranks nodes by how often they were the culprit in
// the train split (ties and unseen nodes in name order).
func MostFrequentBaseline(scs []Scenario) Ranker {
	freq := map[string]int{}
	for _, sc := range scs {
		for _, inc := range sc.Incidents {
			if inc.Split == "train" {
				freq[inc.RootCause]++
			}
		}
	}
	return func(sc *Scenario, inc *Incident) ([]string, error) {
		c := candidates(sc, inc)
		sort.SliceStable(c, func(i, j int) bool {
			if freq[c[i]] != freq[c[j]] {
				return freq[c[i]] > freq[c[j]]
			}
			return c[i] < c[j]
		})
		return c, nil
	}
}

// AnomalySizeBaseline ranks every dependency by its own anomaly score, with
// no use of the call graph's structure.
func AnomalySizeBaseline(cfg graphrca.Config) Ranker {
	return func(sc *Scenario, inc *Incident) ([]string, error) {
		p := problem(sc, inc.Window, inc.Target, TriggerRow(inc.Window, inc.Target.Timestamp))
		scores := graphrca.Scores(p, cfg)
		c := candidates(sc, inc)
		sort.SliceStable(c, func(i, j int) bool { return scores[c[i]] > scores[c[j]] })
		return c, nil
	}
}

func candidates(sc *Scenario, inc *Incident) []string {
	return graphrca.Descendants(sc.Graph, inc.Target.Node)
}

// Specificity cuts each no-issue series at 50%, 60%, ... of its length
// (below N-3), treats the prefix as normal and the 5 rows from the cut as an
// incident window whose alert fires in the second row, and counts the cuts
// where the engine returns no root cause.
func Specificity(sc *Scenario, metric string, cfg graphrca.Config) (float64, int, error) {
	if sc.Baseline == nil {
		return math.NaN(), 0, fmt.Errorf("petshop: %s has no noissue data", sc.Name)
	}
	target := targetNode(sc)
	if target == "" {
		return math.NaN(), 0, fmt.Errorf("petshop: %s has no incident naming a target node", sc.Name)
	}
	n := sc.Baseline.Rows()
	var correct, total int
	step := n / 10
	if step < 1 {
		step = 1
	}
	// Cuts from 50% of the series up to N-3, in steps of 10% of N.
	for cut := n / 2; cut < n-3; cut += step {
		prefix := slice(*sc.Baseline, 0, cut)
		end := cut + 5
		if end > n {
			end = n
		}
		win := slice(*sc.Baseline, cut, end)
		p := graphrca.Problem{Graph: sc.Graph, Window: win, Baseline: &prefix,
			TargetNode: target, TargetMetric: metric, TargetStat: "Average", TriggerRow: 1}
		res, err := graphrca.Rank(p, cfg)
		if err != nil {
			return math.NaN(), 0, err
		}
		total++
		if len(res.Candidates) == 0 {
			correct++
		}
	}
	if total == 0 {
		return math.NaN(), 0, nil
	}
	return float64(correct) / float64(total), total, nil
}

// targetNode is the node the scenario's incidents alert on.
func targetNode(sc *Scenario) string {
	for _, inc := range sc.Incidents {
		return inc.Target.Node
	}
	return ""
}

func slice(f graphrca.Frame, from, to int) graphrca.Frame {
	out := graphrca.Frame{Times: f.Times[from:to], Cols: make(map[graphrca.Column][]float64, len(f.Cols))}
	for c, v := range f.Cols {
		if to <= len(v) {
			out.Cols[c] = v[from:to]
		}
	}
	return out
}

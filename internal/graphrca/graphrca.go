// Package graphrca ranks the likely root-cause nodes of a service graph from
// per-node metric tables: the target node's metric went bad, and the fault
// sits somewhere downstream of it along call edges.
//
// The method is an anomaly traversal (the classic approach for call graphs):
//
//  1. Gate: the target must itself be anomalous in the incident window,
//     measured against its own normal behaviour. If it is not, the ranking is
//     empty: rcamesh never blames a node for an alert the data does not show.
//  2. Every node the target depends on (transitively, caller -> callee) is
//     scored on the target's metric family: latency rises, availability drops.
//     A score is the change from the window's first (pre-fault) row to the
//     analysed row, in units of that column's normal noise. The pre-fault row
//     is the in-period reference, which keeps a baseline recorded at another
//     time from looking like an anomaly.
//  3. A latency or error fault propagates from callee to caller. So among the
//     anomalous nodes, the ones with no anomalous callee of their own explain
//     the rest; they rank first, ordered by score and by how much of the
//     target's change flows through them. Other anomalous nodes follow.
//
// Nothing here knows any node name: the graph and the tables are the input.
package graphrca

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Metric families the ranker understands.
const (
	MetricLatency      = "latency"
	MetricAvailability = "availability"
	MetricRequests     = "requests"
)

// Column identifies one series of the table.
type Column struct {
	Node   string
	Metric string
	Stat   string
}

// Frame is a time-indexed table; missing cells are NaN (no traffic).
type Frame struct {
	Times []int64
	Cols  map[Column][]float64
}

// Rows returns the number of rows.
func (f *Frame) Rows() int { return len(f.Times) }

// Graph is a call graph: Callees[a] lists the nodes a calls.
type Graph struct {
	Nodes   []string
	Callees map[string][]string
}

// Problem is one ranking task.
type Problem struct {
	Graph  Graph
	Window Frame
	// Baseline is normal operation; optional. Used for the noise scale of
	// each column and for the target gate.
	Baseline     *Frame
	TargetNode   string
	TargetMetric string // latency or availability
	TargetStat   string // e.g. Average
	// TriggerRow is the window row in which the alert fired.
	TriggerRow int
}

// Config holds the thresholds of the method.
type Config struct {
	// GateZ is the minimum robust z-score of the target for the alert to be
	// considered real.
	GateZ float64
	// NodeZ is the minimum score for a node to count as anomalous.
	NodeZ float64
	// RelFloor bounds the noise scale from below, relative to the level.
	RelFloor float64
	// MinShare is the smallest share of the target's impact a node must
	// account for to count as anomalous.
	MinShare float64
	// ExplainedFrac: a node whose anomalous callees account for at least
	// this fraction of its own impact is explained by them.
	ExplainedFrac float64
	// MaxRank caps the ranking length.
	MaxRank int
}

// DefaultConfig returns the thresholds used by rcamesh.
func DefaultConfig() Config {
	return Config{GateZ: 5, NodeZ: 4, RelFloor: 0.05, MinShare: 0.1, ExplainedFrac: 0.5, MaxRank: 5}
}

// Candidate is one ranked node.
type Candidate struct {
	Node   string  `json:"node"`
	Score  float64 `json:"score"`
	Column string  `json:"column"`
	// Root is true when no anomalous callee explains this node.
	Root   bool   `json:"root"`
	Reason string `json:"reason"`
}

// Result is a ranking and how it was reached.
type Result struct {
	Candidates  []Candidate `json:"candidates"`
	AnalysedRow int         `json:"analysed_row"`
	TargetScore float64     `json:"target_score"`
	// Empty explains an empty ranking.
	Empty string `json:"empty,omitempty"`
}

// ErrBadProblem reports an unusable input.
var ErrBadProblem = errors.New("graphrca: bad problem")

// Rank ranks root-cause candidates.
func Rank(p Problem, cfg Config) (Result, error) {
	if p.Window.Rows() < 2 {
		return Result{}, fmt.Errorf("%w: window has %d rows, need at least 2", ErrBadProblem, p.Window.Rows())
	}
	if p.TargetMetric != MetricLatency && p.TargetMetric != MetricAvailability {
		return Result{}, fmt.Errorf("%w: target metric %q is not latency or availability", ErrBadProblem, p.TargetMetric)
	}
	tcol := Column{p.TargetNode, p.TargetMetric, p.TargetStat}
	if _, ok := p.Window.Cols[tcol]; !ok {
		return Result{}, fmt.Errorf("%w: window has no column %s/%s/%s", ErrBadProblem, tcol.Node, tcol.Metric, tcol.Stat)
	}
	dir := 1.0
	if p.TargetMetric == MetricAvailability {
		dir = -1
	}

	// 1. Gate and pick the analysed row: the first row after the trigger
	// where the target is most clearly anomalous.
	first := p.TriggerRow + 1
	if first < 1 {
		first = 1
	}
	if first >= p.Window.Rows() {
		first = p.Window.Rows() - 1
	}
	bestRow, bestZ := -1, math.Inf(-1)
	for r := first; r < p.Window.Rows(); r++ {
		z := targetZ(p, tcol, r, dir, cfg)
		if z > bestZ {
			bestRow, bestZ = r, z
		}
		// The first clearly anomalous row after the trigger is the one the
		// fault shows in most directly; later rows see recovery and spread.
		if z >= cfg.GateZ {
			bestRow, bestZ = r, z
			break
		}
	}
	res := Result{AnalysedRow: bestRow, TargetScore: bestZ}
	if bestRow < 0 || bestZ < cfg.GateZ {
		res.Empty = fmt.Sprintf("target %s %s is not anomalous (score %.1f < %.1f)", p.TargetNode, p.TargetMetric, bestZ, cfg.GateZ)
		return res, nil
	}

	// 2. Score every dependency of the target.
	deps := descendants(p.Graph, p.TargetNode)
	scores := map[string]nodeScore{}
	// A dependency may show the fault a bucket before the target crosses
	// its gate: take each node's strongest row between the trigger and the
	// analysed row.
	for _, n := range deps {
		for r := first; r <= bestRow; r++ {
			if s, ok := nodeAnomaly(p, n, r, dir, cfg); ok && (scores[n].col == "" || s.z > scores[n].z) {
				s.row = r
				scores[n] = s
			}
		}
	}
	// A node can only be the cause of an effect it is big enough to
	// produce: its extra latency-seconds (or failed requests) must be a
	// fair share of the target's.
	tImpact := impact(p, p.TargetNode, tcol, bestRow, dir)
	anom := map[string]bool{}
	share := map[string]float64{}
	for n, s := range scores {
		if s.z < cfg.NodeZ {
			continue
		}
		sh := 1.0
		if tImpact > 0 {
			sh = impact(p, n, s.column, s.row, dir) / tImpact
		}
		share[n] = sh
		if sh >= cfg.MinShare {
			anom[n] = true
		}
	}

	// The anomaly must reach the target: keep the anomalous nodes joined to
	// it by a chain of anomalous callers.
	anom = connected(p.Graph, p.TargetNode, anom)

	// 3. Roots: anomalous nodes whose change is not accounted for by their
	// anomalous callees (a node with its own excess is a root even when a
	// callee also moved). Among roots, prefer the one that explains more of
	// the anomalous subgraph (more anomalous callers reach it through
	// anomalous nodes), then one whose callees were observed normal (the
	// fault is confirmed to be inside it rather than somewhere unobserved
	// behind it), then the larger excess.
	var cands []Candidate
	support := map[string]int{}
	confirmed := map[string]bool{}
	excess := map[string]float64{}
	for n := range anom {
		row := scores[n].row
		own := impact(p, n, scores[n].column, row, dir)
		fromCallees := 0.0
		for _, c := range p.Graph.Callees[n] {
			if s, ok := scores[c]; ok && s.z < cfg.NodeZ {
				confirmed[n] = true
			}
			if anom[c] {
				fromCallees += math.Max(0, impact(p, c, scores[c].column, row, dir))
			}
		}
		excess[n] = own - fromCallees
		if own > 0 && fromCallees < cfg.ExplainedFrac*own {
			// keep: root
		} else {
			excess[n] = math.Inf(-1)
		}
	}
	// Support counts only the callers a root actually accounts for: anomalous
	// callers without an excess of their own.
	explained := map[string]bool{}
	for n := range anom {
		if math.IsInf(excess[n], -1) {
			explained[n] = true
		}
	}
	for n := range anom {
		support[n] = explains(p.Graph, p.TargetNode, n, explained)
	}
	for n := range anom {
		s := scores[n]
		c := Candidate{Node: n, Score: s.z, Column: s.col, Root: !math.IsInf(excess[n], -1)}
		if c.Root {
			c.Reason = fmt.Sprintf("%s moved %.1f noise units, not accounted for by its callees; explains %d anomalous callers", s.col, s.z, support[n])
		} else {
			c.Reason = fmt.Sprintf("%s moved %.1f noise units, accounted for by anomalous callees", s.col, s.z)
		}
		cands = append(cands, c)
	}
	// A root's weight is the share of the target's impact it produces by
	// itself, raised for each anomalous caller it accounts for and when its
	// own callees were seen normal.
	weight := func(n string) float64 {
		if math.IsInf(excess[n], -1) {
			return math.Inf(-1)
		}
		w := excess[n]
		if tImpact > 0 {
			w /= tImpact
		}
		w *= 1 + 0.5*float64(support[n])
		if confirmed[n] {
			w *= 1.5
		}
		return w
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Root != b.Root {
			return a.Root
		}
		wa, wb := weight(a.Node), weight(b.Node)
		if wa != wb {
			return wa > wb
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Node < b.Node
	})
	if len(cands) == 0 {
		// The target is anomalous and none of its dependencies is. Name the
		// target itself only when its change stands out even against its
		// routine dips; otherwise say nothing rather than guess.
		if z, ok := columnZScaled(p, tcol, bestRow, dir, cfg, true); !ok || z < cfg.GateZ {
			res.Empty = fmt.Sprintf("target %s %s moved (score %.1f) but no dependency is anomalous and the change is within its routine dips", p.TargetNode, p.TargetMetric, bestZ)
			return res, nil
		}
		cands = append(cands, Candidate{Node: p.TargetNode, Score: bestZ, Column: colName(tcol), Root: true,
			Reason: "the target is anomalous and none of its dependencies is"})
	}
	if cfg.MaxRank > 0 && len(cands) > cfg.MaxRank {
		cands = cands[:cfg.MaxRank]
	}
	res.Candidates = cands
	return res, nil
}

type nodeScore struct {
	row    int
	z      float64
	col    string
	column Column
}

// impact is the directed change of col at row r times the node's request
// count there: extra latency-seconds for latency, extra failed requests
// (in percent-requests) for availability. Without a request column it is
// the plain change.
func impact(p Problem, node string, col Column, r int, dir float64) float64 {
	// Average x count is the additive quantity (total time, failed
	// requests); percentiles are not.
	col = Column{node, col.Metric, "Average"}
	w := p.Window.Cols[col]
	if r >= len(w) || math.IsNaN(w[r]) {
		return 0
	}
	ref := math.NaN()
	for i := 0; (i < p.TriggerRow || i == 0) && i < r; i++ {
		if !math.IsNaN(w[i]) {
			ref = w[i]
		}
	}
	if math.IsNaN(ref) {
		return 0
	}
	d := dir * (w[r] - ref)
	if req, ok := p.Window.Cols[Column{node, MetricRequests, "Sum"}]; ok && r < len(req) && !math.IsNaN(req[r]) {
		return d * req[r]
	}
	return d
}

func colName(c Column) string { return c.Node + " " + c.Metric + "/" + c.Stat }

// statsFor lists the statistics examined for a metric family.
func statsFor(metric string) []string {
	if metric == MetricAvailability {
		return []string{"Average"}
	}
	return []string{"Average", "p90", "p95", "p99", "p50"}
}

// nodeAnomaly scores one node at row r: the largest directed change from
// the pre-fault row over the examined statistics, in noise units.
func nodeAnomaly(p Problem, node string, r int, dir float64, cfg Config) (nodeScore, bool) {
	best, ok := nodeScore{z: math.Inf(-1)}, false
	for _, st := range statsFor(p.TargetMetric) {
		col := Column{node, p.TargetMetric, st}
		z, good := columnZ(p, col, r, dir, cfg)
		if !good {
			continue
		}
		if z > best.z {
			best, ok = nodeScore{z: z, col: colName(col), column: col}, true
		}
	}
	return best, ok
}

func targetZ(p Problem, col Column, r int, dir float64, cfg Config) float64 {
	z, ok := columnZ(p, col, r, dir, cfg)
	if !ok {
		return math.Inf(-1)
	}
	return z
}

// columnZ is the directed change of col at row r from the window's last
// valid row before the trigger, divided by the column's noise scale.
func columnZ(p Problem, col Column, r int, dir float64, cfg Config) (float64, bool) {
	return columnZScaled(p, col, r, dir, cfg, false)
}

func columnZScaled(p Problem, col Column, r int, dir float64, cfg Config, conservative bool) (float64, bool) {
	w, ok := p.Window.Cols[col]
	if !ok || r >= len(w) || math.IsNaN(w[r]) {
		return 0, false
	}
	ref := math.NaN()
	// The reference is the last valid row before the trigger's bucket: the
	// trigger bucket may already hold the fault.
	for i := 0; (i < p.TriggerRow || i == 0) && i < r; i++ {
		if !math.IsNaN(w[i]) {
			ref = w[i]
		}
	}
	var base []float64
	if p.Baseline != nil {
		base = finite(p.Baseline.Cols[col])
	}
	med, mad, tail := math.NaN(), math.NaN(), math.NaN()
	if len(base) >= 10 {
		med, mad, tail = medianMAD(base)
	}
	if math.IsNaN(ref) {
		if math.IsNaN(med) {
			return 0, false
		}
		ref = med
	}
	level := math.Abs(ref)
	if !math.IsNaN(med) {
		level = math.Max(level, math.Abs(med))
	}
	scale := 0.0
	if col.Metric == MetricLatency {
		// Latency noise grows with its level; availability is a bounded
		// percentage whose noise does not.
		scale = cfg.RelFloor * level
	}
	if !math.IsNaN(mad) {
		// 1.4826 MAD is sigma for a normal distribution, and so is half the
		// 95th percentile of absolute deviations. The conservative scale
		// takes the larger: it keeps a series that is flat most of the time
		// but dips routinely (an availability at 100% with small regular
		// losses) from having zero noise.
		scale = math.Max(scale, 1.4826*mad)
		if conservative {
			scale = math.Max(scale, tail/2)
		}
	}
	scale = math.Max(scale, absFloor(col.Metric))
	return dir * (w[r] - ref) / scale, true
}

func absFloor(metric string) float64 {
	switch metric {
	case MetricAvailability:
		return 0.1 // percentage points
	case MetricLatency:
		return 0.0005 // seconds
	}
	return 1e-9
}

func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

func medianMAD(xs []float64) (med, mad, q95dev float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med = quantile(s, 0.5)
	dev := make([]float64, len(s))
	for i, x := range s {
		dev[i] = math.Abs(x - med)
	}
	sort.Float64s(dev)
	return med, quantile(dev, 0.5), quantile(dev, 0.95)
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// connected keeps the anomalous nodes reachable from target through
// anomalous nodes only.
func connected(g Graph, target string, anom map[string]bool) map[string]bool {
	out := map[string]bool{}
	queue := []string{target}
	seen := map[string]bool{target: true}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, c := range g.Callees[x] {
			if anom[c] && !seen[c] {
				seen[c] = true
				out[c] = true
				queue = append(queue, c)
			}
		}
	}
	return out
}

// explains counts the anomalous nodes (other than the target) from which n
// is reachable along call edges through anomalous nodes only.
func explains(g Graph, target, n string, anom map[string]bool) int {
	// Reverse edges restricted to anomalous nodes.
	callers := map[string][]string{}
	for a, cs := range g.Callees {
		if !anom[a] {
			continue
		}
		for _, c := range cs {
			callers[c] = append(callers[c], a)
		}
	}
	seen := map[string]bool{n: true}
	queue := []string{n}
	count := 0
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, a := range callers[x] {
			if seen[a] || a == target {
				continue
			}
			seen[a] = true
			count++
			queue = append(queue, a)
		}
	}
	return count
}

// Descendants lists every node reachable from start along call edges.
func Descendants(g Graph, start string) []string { return descendants(g, start) }

// Scores returns each dependency's anomaly score at the row Rank would
// analyse (the trigger row + 1), without using the graph's structure.
func Scores(p Problem, cfg Config) map[string]float64 {
	dir := 1.0
	if p.TargetMetric == MetricAvailability {
		dir = -1
	}
	r := p.TriggerRow + 1
	if r >= p.Window.Rows() {
		r = p.Window.Rows() - 1
	}
	out := map[string]float64{}
	for _, n := range descendants(p.Graph, p.TargetNode) {
		if s, ok := nodeAnomaly(p, n, r, dir, cfg); ok {
			out[n] = s.z
		}
	}
	return out
}

// descendants lists every node reachable from start along call edges,
// excluding start, in breadth-first order.
func descendants(g Graph, start string) []string {
	seen := map[string]bool{start: true}
	queue := []string{start}
	var out []string
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		callees := append([]string(nil), g.Callees[n]...)
		sort.Strings(callees)
		for _, c := range callees {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

package tools

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/series"
)

// surveySmallCatalog: a Prometheus with at most this many metric names is
// surveyed whole (every series, in scope or not, competes on how much it
// changed); a bigger one only through the scope's label matchers.
const surveySmallCatalog = 300

// surveyDefaultMaxSeries bounds the range queries one survey runs.
const surveyDefaultMaxSeries = 150

// surveyScopeBonus ranks series of the alert's scope ahead of others with
// the same change.
const surveyScopeBonus = 500

// surveyScopeMatchers are the selectors that find a scope's series without
// assuming any metric name: the usual Kubernetes and service labels.
func surveyScopeMatchers(ns, svc, pod, node string) []string {
	var out []string
	q := func(v string) string { return strings.ReplaceAll(v, `"`, `\"`) }
	if node != "" {
		for _, l := range []string{"node", "kubernetes_node", "nodename", "hostname"} {
			out = append(out, fmt.Sprintf(`{%s=%q}`, l, q(node)))
		}
		out = append(out, fmt.Sprintf(`{instance=~"%s(:[0-9]+)?"}`, regexpQuote(node)))
	}
	if ns != "" && ns != "all" {
		out = append(out, fmt.Sprintf(`{namespace=%q}`, q(ns)), fmt.Sprintf(`{kube_namespace=%q}`, q(ns)), fmt.Sprintf(`{exported_namespace=%q}`, q(ns)))
	}
	if svc != "" {
		for _, l := range []string{"service", "app", "job", "deployment", "container", "app_kubernetes_io_name", "workload"} {
			out = append(out, fmt.Sprintf(`{%s=%q}`, l, q(svc)))
		}
		out = append(out, fmt.Sprintf(`{pod=~"%s-.*"}`, regexpQuote(strings.TrimRight(svc, "-*"))))
	}
	if pod != "" {
		p := strings.TrimSuffix(pod, "*")
		if p != pod {
			out = append(out, fmt.Sprintf(`{pod=~"%s.*"}`, regexpQuote(p)))
		} else {
			out = append(out, fmt.Sprintf(`{pod=%q}`, q(pod)))
		}
	}
	return out
}

// surveyTarget is one query of the survey: a raw series or a histogram's p99.
type surveyTarget struct {
	query   string
	name    string
	labels  map[string]string
	inScope bool
}

func selectorOf(name string, ls model.LabelSet, drop string) (string, map[string]string) {
	labels := map[string]string{}
	keys := make([]string, 0, len(ls))
	for k, v := range ls {
		if k == model.MetricNameLabel || string(k) == drop {
			continue
		}
		labels[string(k)] = string(v)
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}", labels
}

// surveyTargets turns discovered series into queries: every series as it is
// (counters stay counters; the analysis derives rates), histogram buckets
// folded into one p99 per label set.
func surveyTargets(sets []model.LabelSet, scoped map[string]bool) []surveyTarget {
	var out []surveyTarget
	seen := map[string]bool{}
	for _, ls := range sets {
		name := string(ls[model.MetricNameLabel])
		if name == "" {
			continue
		}
		key := ls.String()
		in := scoped[key]
		if strings.HasSuffix(name, "_bucket") {
			if _, ok := ls["le"]; ok {
				sel, labels := selectorOf(name, ls, "le")
				if seen[sel] {
					continue
				}
				seen[sel] = true
				base := strings.TrimSuffix(name, "_bucket")
				out = append(out, surveyTarget{
					query:   fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[5m])))", sel),
					name:    "histogram_quantile(0.99, " + base + ")",
					labels:  labels,
					inScope: in,
				})
				continue
			}
		}
		sel, labels := selectorOf(name, ls, "")
		if seen[sel] {
			continue
		}
		seen[sel] = true
		out = append(out, surveyTarget{query: sel, name: name, labels: labels, inScope: in})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].inScope != out[j].inScope {
			return out[i].inScope
		}
		return out[i].query < out[j].query
	})
	return out
}

func handleSurveyMetrics(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns, svc, pod := c.Params.String("namespace"), c.Params.String("service"), c.Params.String("pod")
	node := c.Params.String("node")
	maxSeries := int(c.Params.Int("max_series", surveyDefaultMaxSeries))
	if maxSeries <= 0 {
		maxSeries = surveyDefaultMaxSeries
	}
	step, err := s.promStep(c)
	if err != nil {
		return err
	}
	start, end := c.Window.Start, c.Window.End
	names, _, err := s.be.Metrics.LabelValues(ctx, model.MetricNameLabel, nil, start, end)
	if err != nil {
		return fmt.Errorf("survey: metric names: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace, r.Service = ns, svc
	scoped := map[string]bool{}
	var sets []model.LabelSet
	add := func(ls []model.LabelSet, inScope bool) {
		for _, l := range ls {
			k := l.String()
			if inScope {
				scoped[k] = true
			}
			sets = append(sets, l)
		}
	}
	for _, m := range surveyScopeMatchers(ns, svc, pod, node) {
		ls, _, err := s.be.Metrics.Series(ctx, []string{m}, start, end)
		if err != nil {
			return fmt.Errorf("survey: series %s: %w", m, err)
		}
		add(ls, true)
	}
	whole := len(names) <= surveySmallCatalog
	if whole {
		ls, _, err := s.be.Metrics.Series(ctx, []string{`{__name__=~".+"}`}, start, end)
		if err != nil {
			return fmt.Errorf("survey: every series: %w", err)
		}
		add(ls, false)
	}
	targets := surveyTargets(sets, scoped)
	total := len(targets)
	if len(targets) > maxSeries {
		targets = targets[:maxSeries]
	}
	r.Put("metric_names_total", len(names))
	r.Put("surveyed_queries", len(targets))
	var all []facts.Series
	scopedIdx := map[int]bool{}
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		val, _, err := s.be.Metrics.QueryRange(ctx, t.query, promv1.Range{Start: start, End: end, Step: step})
		if err != nil {
			r.Rawf("query %s failed: %v", t.query, err)
			continue
		}
		m, ok := val.(model.Matrix)
		if !ok {
			continue
		}
		// A cumulative counter (a counter's name and values that only grow,
		// but for a few resets) is surveyed as its rate: the shape of a
		// running total says nothing about when things changed.
		name := t.name
		if len(m) == 1 && counterLike(t.name, m[0].Values) {
			rq := fmt.Sprintf("rate(%s[5m])", t.query)
			if rv, _, err := s.be.Metrics.QueryRange(ctx, rq, promv1.Range{Start: start, End: end, Step: step}); err == nil {
				if rm, ok := rv.(model.Matrix); ok && len(rm) == 1 {
					m, name = rm, "rate("+t.name+"[5m])"
				}
			}
		}
		for _, ss := range m {
			pts := make([]facts.Point, 0, len(ss.Values))
			for _, sp := range ss.Values {
				pts = append(pts, facts.Point{T: sp.Timestamp.Time().UTC(), V: float64(sp.Value)})
			}
			labels := t.labels
			if len(m) > 1 {
				_, labels = seriesName(ss.Metric, t.query)
			}
			sr := series.Summarize(name, labels, pts)
			if sr.Count == 0 {
				continue
			}
			if sr.Unit == "" && name == t.name {
				sr.Unit = unitOf(t.name)
			}
			if name != t.name {
				sr.Unit = "per_second"
			}
			if t.inScope {
				scopedIdx[len(all)] = true
			}
			all = append(all, sr)
		}
	}
	win := fmt.Sprintf("%s..%s step %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), step)
	if len(all) == 0 {
		r.NoData = true
		r.Put(facts.KeySeries, []facts.Series{})
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("Metric survey found no series for %s over %s (%d metric names known).", surveyScope(ns, svc, pod, node), win, len(names))
		return nil
	}
	r.Source(s.be.Source(backend.AreaMetrics))
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	score := func(i int) float64 {
		v := seriesScore(all[i])
		if scopedIdx[i] {
			v += surveyScopeBonus
		}
		return v
	}
	sort.SliceStable(idx, func(a, b int) bool { return score(idx[a]) > score(idx[b]) })
	keep := min(len(idx), s.cfg.PromMaxSeries)
	out := make([]facts.Series, 0, keep)
	for _, i := range idx[:keep] {
		out = append(out, all[i])
	}
	if total > len(targets) || len(all) > keep {
		r.Put("series_total", max(total, len(all)))
	}
	r.Put(facts.KeySeries, out)
	changed := 0
	for i, sr := range out {
		line := seriesLine(sr)
		r.Rawf("%s", line)
		if sr.Shape != "" && sr.Shape != series.ShapeFlat {
			changed++
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
			if i < 10 {
				r.Snippet(line)
			}
		}
	}
	if changed == 0 {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
	}
	r.Summary = fmt.Sprintf("Metric survey of %s over %s: %d metric names known, %s queried, %d changed shape; most changed: %s (latest %s, peak %s).",
		surveyScope(ns, svc, pod, node), win, len(names), plural(len(out), "series", "series"), changed, describeSeries(out[0]), fmtNum(out[0].Latest), fmtNum(out[0].Peak))
	return nil
}

func surveyScope(ns, svc, pod, node string) string {
	var parts []string
	for _, kv := range [][2]string{{"namespace", ns}, {"service", svc}, {"pod", pod}, {"node", node}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if len(parts) == 0 {
		return "every series"
	}
	return strings.Join(parts, ", ")
}

// counterLike: a name Prometheus conventions reserve for counters and values
// that never fall but at up to two resets, and grow overall.
func counterLike(name string, vals []model.SamplePair) bool {
	if !(strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_sum")) || len(vals) < 3 {
		return false
	}
	drops := 0
	for i := 1; i < len(vals); i++ {
		if vals[i].Value < vals[i-1].Value {
			drops++
		}
	}
	return drops <= 2 && vals[len(vals)-1].Value != vals[0].Value
}

// regexpQuote escapes a label value for a PromQL regex matcher.
func regexpQuote(v string) string {
	return strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`), `"`, `\"`)
}

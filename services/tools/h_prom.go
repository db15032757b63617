package tools

import (
	"context"
	"fmt"
	"math"
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

var (
	promControlPlane = regexp.MustCompile(`(?i)apiserver|etcd|kube_scheduler|scheduler_|controller_manager|workqueue_|kube_node_status|kubelet_pleg|kube_state`)
	promStorage      = regexp.MustCompile(`(?i)disk|volume|_io_|io_time|iops|filesystem|_fs_|pvc|persistentvolume|storage|inode|read_bytes|write_bytes|blkio`)
	promNetwork      = regexp.MustCompile(`(?i)http|dns|coredns|latency|ingress|request|grpc|network|tcp|udp|connection|conntrack|envoy|istio|nginx|haproxy|_5xx|status_code|upstream|probe_|packet|bandwidth|socket`)
	promSecurity     = regexp.MustCompile(`(?i)auth_fail|unauthori[sz]ed|forbidden|tls_|cert|_denied`)
)

// promDomain infers the evidence domain from a PromQL expression.
func promDomain(q string) evidencev1.Domain {
	switch {
	case promControlPlane.MatchString(q):
		return evidencev1.Domain_DOMAIN_CONTROL_PLANE
	case promSecurity.MatchString(q):
		return evidencev1.Domain_DOMAIN_SECURITY
	case promStorage.MatchString(q):
		return evidencev1.Domain_DOMAIN_STORAGE
	case promNetwork.MatchString(q):
		return evidencev1.Domain_DOMAIN_NETWORK
	}
	return evidencev1.Domain_DOMAIN_COMPUTE
}

func unitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "_seconds") || strings.Contains(name, "_seconds_"):
		return "seconds"
	case strings.HasSuffix(name, "_bytes") || strings.Contains(name, "_bytes_"):
		return "bytes"
	case strings.HasSuffix(name, "_ratio"):
		return "ratio"
	case strings.HasSuffix(name, "_percent") || strings.HasSuffix(name, "_pct"):
		return "percent"
	}
	return ""
}

func (s *Service) promStep(c *Call) (time.Duration, error) {
	if st := c.Params.String("step"); st != "" {
		d, err := parseSince(st)
		if err != nil {
			return 0, &ParamError{c.Intent, "step", err.Error()}
		}
		if st == strings.TrimRight(st, "smhd") { // a bare number is seconds for step
			d = d / time.Minute * time.Second
		}
		if d <= 0 {
			return 0, &ParamError{c.Intent, "step", "must be > 0"}
		}
		if c.Window.Duration()/d > 11000 {
			return 0, &ParamError{c.Intent, "step", fmt.Sprintf("%s over %s exceeds 11000 points", d, c.Window.Duration())}
		}
		return d, nil
	}
	step := c.Window.Duration() / time.Duration(s.cfg.PromMaxPoints)
	if step < s.cfg.PromMinStep {
		step = s.cfg.PromMinStep
	}
	return step.Round(time.Second), nil
}

func seriesName(m model.Metric, query string) (string, map[string]string) {
	labels := map[string]string{}
	for k, v := range m {
		if k != model.MetricNameLabel {
			labels[string(k)] = string(v)
		}
	}
	if n, ok := m[model.MetricNameLabel]; ok {
		return string(n), labels
	}
	return query, labels
}

// seriesInteresting ranks series: anomalous and changed first, then by relative peak.
func seriesScore(s facts.Series) float64 {
	score := float64(len(s.Anomalies))
	if s.Shape != "" && s.Shape != series.ShapeFlat {
		score += 1000
	}
	den := math.Abs(s.Baseline)
	if den < 1e-9 {
		den = 1
	}
	return score + math.Abs(s.Peak-s.Baseline)/den
}

func handleQueryPrometheus(ctx context.Context, s *Service, c *Call, r *Result) error {
	query := c.Params.String("query")
	step, err := s.promStep(c)
	if err != nil {
		return err
	}
	val, warnings, err := s.be.Metrics.QueryRange(ctx, query, promv1.Range{Start: c.Window.Start, End: c.Window.End, Step: step})
	if err != nil {
		return fmt.Errorf("promql %q: %w", query, err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, promDomain(query)
	r.Put(facts.KeyQuery, query)
	r.Put("step_seconds", step.Seconds())
	for _, w := range warnings {
		r.Rawf("warning: %s", w)
	}
	var all []facts.Series
	add := func(m model.Metric, pts []facts.Point) {
		name, labels := seriesName(m, query)
		sr := series.Summarize(name, labels, pts)
		if sr.Count == 0 {
			return
		}
		if sr.Unit == "" {
			sr.Unit = unitOf(name)
		}
		all = append(all, sr)
	}
	switch v := val.(type) {
	case model.Matrix:
		for _, ss := range v {
			pts := make([]facts.Point, 0, len(ss.Values))
			for _, sp := range ss.Values {
				pts = append(pts, facts.Point{T: sp.Timestamp.Time().UTC(), V: float64(sp.Value)})
			}
			for _, h := range ss.Histograms {
				if h.Histogram != nil {
					pts = append(pts, facts.Point{T: h.Timestamp.Time().UTC(), V: float64(h.Histogram.Count)})
				}
			}
			add(ss.Metric, pts)
		}
	case model.Vector:
		for _, sm := range v {
			add(sm.Metric, []facts.Point{{T: sm.Timestamp.Time().UTC(), V: float64(sm.Value)}})
		}
	case *model.Scalar:
		add(model.Metric{}, []facts.Point{{T: v.Timestamp.Time().UTC(), V: float64(v.Value)}})
	case nil:
	default:
		return fmt.Errorf("promql %q: unsupported result type %s", query, val.Type())
	}
	win := fmt.Sprintf("%s..%s step %s", c.Window.Start.UTC().Format(time.RFC3339), c.Window.End.UTC().Format(time.RFC3339), step)
	if len(all) == 0 {
		r.NoData = true
		r.Put(facts.KeySeries, []facts.Series{})
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("PromQL %s returned no data over %s.", query, win)
		r.Rawf("no series")
		return nil
	}
	r.Source(s.be.Source(backend.AreaMetrics))
	sort.SliceStable(all, func(i, j int) bool { return seriesScore(all[i]) > seriesScore(all[j]) })
	total := len(all)
	if len(all) > s.cfg.PromMaxSeries {
		all = all[:s.cfg.PromMaxSeries]
		r.Put("series_total", total)
	}
	r.Put(facts.KeySeries, all)
	anomalous := 0
	for i, sr := range all {
		line := seriesLine(sr)
		r.Rawf("%s", line)
		if len(sr.Anomalies) > 0 {
			anomalous++
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
			if i < 10 {
				r.Snippet(line)
			}
		}
	}
	if anomalous == 0 {
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		for _, sr := range all[:min(3, len(all))] {
			r.Snippet(seriesLine(sr))
		}
	}
	top := all[0]
	r.Summary = fmt.Sprintf("PromQL %s returned %s over %s; %s: latest %s, peak %s", query, plural(total, "series", "series"), win, describeSeries(top), fmtNum(top.Latest), fmtNum(top.Peak))
	if top.PeakAt != nil {
		r.Summary += " at " + top.PeakAt.UTC().Format(time.RFC3339)
	}
	r.Summary += fmt.Sprintf(", mean %s, stddev %s", fmtNum(top.Mean), fmtNum(top.Stddev))
	if top.Shape != "" && top.Shape != series.ShapeFlat {
		r.Summary += ", shape " + top.Shape
		if top.OnsetAt != nil {
			r.Summary += " from " + top.OnsetAt.UTC().Format(time.RFC3339)
		}
	}
	r.Summary += fmt.Sprintf(". %d of %s have anomalous points (above mean+2σ or part of a significant change).", anomalous, plural(len(all), "series", "series"))
	return nil
}

func describeSeries(sr facts.Series) string {
	if len(sr.Labels) == 0 {
		return sr.Name
	}
	keys := make([]string, 0, len(sr.Labels))
	for k := range sr.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+sr.Labels[k])
	}
	return sr.Name + "{" + strings.Join(parts, ",") + "}"
}

func seriesLine(sr facts.Series) string {
	line := fmt.Sprintf("%s n=%d latest=%s peak=%s", describeSeries(sr), sr.Count, fmtNum(sr.Latest), fmtNum(sr.Peak))
	if sr.PeakAt != nil {
		line += "@" + sr.PeakAt.UTC().Format(time.RFC3339)
	}
	line += fmt.Sprintf(" min=%s mean=%s stddev=%s baseline=%s", fmtNum(sr.Min), fmtNum(sr.Mean), fmtNum(sr.Stddev), fmtNum(sr.Baseline))
	if sr.Shape != "" {
		line += " shape=" + sr.Shape
	}
	if sr.OnsetAt != nil {
		line += " onset=" + sr.OnsetAt.UTC().Format(time.RFC3339)
	}
	if len(sr.Anomalies) > 0 {
		line += fmt.Sprintf(" anomalies=%d first=%s", len(sr.Anomalies), sr.Anomalies[0].T.UTC().Format(time.RFC3339))
	}
	if sr.Unit != "" {
		line += " unit=" + sr.Unit
	}
	return line
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3g", v)
}

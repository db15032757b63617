package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// dbMetricNames are managed-database metrics (handled by the db detectors).
var dbMetricNames = map[string]bool{
	"cpuutilization": true, "databaseconnections": true, "freestoragespace": true, "freeablememory": true,
	"readiops": true, "writeiops": true, "readlatency": true, "writelatency": true, "replicalag": true,
	"transactionlogsgeneration": true, "networktransmitthroughput": true, "networkreceivethroughput": true,
	"diskqueuedepth": true, "commitlatency": true, "committhroughput": true, "swapusage": true, "binlogdiskusage": true,
	"maximumusedtransactionids": true, "readthroughput": true, "writethroughput": true, "db_load": true, "dbload": true,
	"burstbalance": true, "ebsiobalance%": true, "ebsbytebalance%": true, "cpucreditbalance": true, "oldestreplicationslotlag": true,
}

func isDBMetric(s facts.Series) bool { return dbMetricNames[strings.ToLower(s.Name)] }

// seriesKindOf classifies a series, using status-code labels too
// (http_requests_total{code="503"} is an error series).
func seriesKindOf(s facts.Series) string {
	for _, k := range []string{"code", "status", "status_code", "http_status"} {
		if v := s.Labels[k]; strings.HasPrefix(v, "5") {
			return "errors"
		}
	}
	return seriesKind(s.Name)
}

// counterSuffixes mark Prometheus counters (cumulative).
var counterSuffixes = []string{"_total", "_count", "_sum", "_bucket"}

// asRate turns a raw cumulative counter (monotonic, counter-like name) into
// its per-second increase, so shapes describe the rate, not the running sum.
// Other series are returned unchanged.
func asRate(s facts.Series) facts.Series {
	isCounter := false
	for _, suf := range counterSuffixes {
		if strings.HasSuffix(s.Name, suf) {
			isCounter = true
		}
	}
	pts := s.Downsampled
	if !isCounter || len(pts) < 3 {
		return s
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].V < pts[i-1].V {
			return s // a reset or a gauge: leave it
		}
	}
	out := facts.Series{Name: s.Name + ":rate", Labels: s.Labels, Unit: "per_second"}
	for i := 1; i < len(pts); i++ {
		dt := pts[i].T.Sub(pts[i-1].T).Seconds()
		if dt <= 0 {
			continue
		}
		out.Downsampled = append(out.Downsampled, facts.Point{T: pts[i].T, V: (pts[i].V - pts[i-1].V) / dt})
	}
	if len(out.Downsampled) == 0 {
		return s
	}
	out.Count = len(out.Downsampled)
	out.Latest = out.Downsampled[len(out.Downsampled)-1].V
	out.Peak, out.Min = out.Downsampled[0].V, out.Downsampled[0].V
	for i, p := range out.Downsampled {
		if p.V > out.Peak {
			out.Peak = p.V
			t := out.Downsampled[i].T
			out.PeakAt = &t
		}
		if p.V < out.Min {
			out.Min = p.V
		}
	}
	out.Baseline = out.Downsampled[0].V
	return out
}

func seriesKind(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "error") || strings.Contains(n, "5xx") || strings.Contains(n, "fail"):
		return "errors"
	case strings.Contains(n, "latency") || strings.Contains(n, "duration") || strings.Contains(n, "p99") || strings.Contains(n, "p95") || strings.Contains(n, "response_time"):
		return "latency"
	case strings.Contains(n, "request") || strings.Contains(n, "rps") || strings.Contains(n, "qps") || strings.Contains(n, "throughput") || strings.Contains(n, "traffic"):
		return "traffic"
	case strings.Contains(n, "cpu"):
		return "cpu"
	}
	return ""
}

// rise is the change of a series: head (baseline) to tail, and the ratio.
type rise struct {
	head, tail, peak, ratio float64
	onset                   *time.Time
	shape                   string
}

func riseOf(s facts.Series) rise {
	r := rise{head: seriesHead(s), tail: seriesTailMedian(s), peak: s.Peak, onset: onsetOf(s), shape: s.Shape}
	base := math.Max(math.Abs(r.head), 1e-9)
	r.ratio = r.tail / base
	if r.shape == "" {
		switch {
		case r.ratio > 1.5:
			r.shape = "step"
		case r.peak > 2*base && r.ratio < 1.3:
			r.shape = "spike"
		default:
			r.shape = "flat"
		}
	}
	return r
}

func labelOf(s facts.Series, keys ...string) string {
	for _, k := range keys {
		if v := s.Labels[k]; v != "" {
			return v
		}
	}
	return ""
}

func detectMetricRegression(ev *Evidence) []Finding {
	var out []Finding
	for _, s := range ev.Series {
		if isDBMetric(s.Series) {
			continue
		}
		kind := seriesKindOf(s.Series)
		if kind != "errors" && kind != "latency" {
			continue
		}
		s.Series = asRate(s.Series)
		r := riseOf(s.Series)
		threshold := 2.0
		if kind == "latency" {
			threshold = 1.5
		}
		if r.ratio < threshold || (r.shape != "step" && r.shape != "creep") {
			continue
		}
		svc := labelOf(s.Series, "service", "app", "job", "deployment")
		if svc == "" {
			svc = ev.alertField("service")
		}
		ns := labelOf(s.Series, "namespace")
		f := Finding{Mode: ModeDeployRegression, Score: 0.5, Entity: deploymentEntity(ns, svc)}
		what := fmt.Sprintf("%s of %s rose from %s to %s (%s)", s.Name, svc, num(r.head), num(r.tail), r.shape)
		if r.onset != nil {
			what += " starting " + hhmm(r.onset)
		}
		f.validated(what, s.Cite)
		// Deploy correlation.
		var before, after []Deploy
		for _, d := range ev.Deploys {
			if svc != "" && d.Service != "" && d.Service != svc {
				continue
			}
			t := d.FinishedAt
			if t == nil {
				t = d.StartedAt
			}
			if t == nil || r.onset == nil {
				continue
			}
			switch gap := r.onset.Sub(*t); {
			case gap >= -2*time.Minute && gap <= 30*time.Minute:
				before = append(before, d)
			case gap < -2*time.Minute:
				after = append(after, d)
			}
		}
		for _, d := range after {
			f.explains(ModeDeployRegression+":"+d.Revision, fmt.Sprintf("Deploy %s of %s at %s came after the onset at %s: a red herring, not the trigger", d.Revision, d.Service, hhmm(d.StartedAt), hhmm(r.onset)))
		}
		if len(before) > 0 {
			d := before[len(before)-1]
			f.validated(fmt.Sprintf("Deploy %s (%s -> %s) finished at %s, %s before the onset", d.Service, d.PreviousRevision, d.Revision, hhmm(d.FinishedAt), durHuman(r.onset.Sub(timeOf(d.FinishedAt)))), d.Cite)
			var commits []Commit
			for _, c := range ev.Commits {
				if strings.HasPrefix(c.SHA, d.Revision) || strings.HasPrefix(d.Revision, c.SHA) || (c.Service == d.Service && c.Timestamp != nil && d.StartedAt != nil && c.Timestamp.Before(*d.StartedAt) && !c.Removed) {
					commits = append(commits, c)
				}
			}
			culprit, ctype := pickCommit(commits, kind)
			f.Category = catCode
			f.Score = 0.75
			f.Statement = fmt.Sprintf("Release %s of %s (deployed %s) introduced a regression: %s", d.Revision, svc, hhmm(d.FinishedAt), what)
			if d.IsRollback {
				f.Statement = fmt.Sprintf("Rollback %s of %s (deployed %s) removed code and %s", d.Revision, svc, hhmm(d.FinishedAt), what)
			}
			if culprit != nil {
				f.Entity = "commit/" + culprit.SHA
				f.validated(fmt.Sprintf("Commit %s (%s): %s; change types %s", short(culprit.SHA), culprit.Author, clip(culprit.Message, 120), strings.Join(culprit.ChangeTypes, ", ")), culprit.Cite)
				switch ctype {
				case facts.ChangeDBMigration:
					f.Statement += fmt.Sprintf("; commit %s carries a database migration, consistent with a gradual latency creep (slow query / lock after the schema change)", short(culprit.SHA))
				case facts.ChangeTimeoutRetry, facts.ChangeConfig:
					f.Category = catConfig
					f.Statement += fmt.Sprintf("; commit %s changes %s settings", short(culprit.SHA), strings.ReplaceAll(ctype, "_", "/"))
				default:
					f.Statement += fmt.Sprintf("; commit %s (%s) is the most likely culprit", short(culprit.SHA), clip(culprit.Message, 80))
				}
				f.Score = 0.8
			}
			f.Chain = []string{fmt.Sprintf("Release %s rolls out at %s", d.Revision, hhmm(d.FinishedAt)), fmt.Sprintf("%s changes shape (%s) at %s", s.Name, r.shape, hhmm(r.onset))}
			f.Remediation = []string{fmt.Sprintf("Roll back %s to %s", svc, d.PreviousRevision), "Fix the offending change before re-deploying"}
			out = append(out, f)
			continue
		}
		// No deploy: traffic?
		for _, t := range ev.Series {
			if seriesKindOf(t.Series) != "traffic" || isDBMetric(t.Series) {
				continue
			}
			t.Series = asRate(t.Series)
			tr := riseOf(t.Series)
			if tr.ratio >= 1.5 {
				f.Mode = ModeTrafficSaturation
				f.Category = catResource
				f.Score = 0.65
				f.Statement = fmt.Sprintf("%s is saturated by traffic: %s rose from %s to %s with no deploy in the window, and %s", svc, t.Name, num(tr.head), num(tr.tail), what)
				f.validated(fmt.Sprintf("%s rose from %s to %s", t.Name, num(tr.head), num(tr.tail)), t.Cite)
				if ev.Queried("get_deploy_history") && len(ev.Deploys) == 0 {
					f.validated("No deploys in the window (deploy history queried)", Cite{PinIDs: ev.PinsOf("get_deploy_history")})
				}
				f.Chain = []string{"Request rate rises", "Capacity is exhausted", s.Name + " degrades"}
				f.Remediation = []string{"Scale out " + svc, "Add autoscaling on request rate / CPU"}
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// pickCommit chooses the commit whose change types best fit the anomaly:
// migrations for latency, timeout/retry and config for errors.
func pickCommit(commits []Commit, kind string) (*Commit, string) {
	prefs := []string{facts.ChangeTimeoutRetry, facts.ChangeConfig, facts.ChangeFeature, facts.ChangeDependencyBump, facts.ChangeDBMigration, facts.ChangeRefactor}
	if kind == "latency" {
		prefs = []string{facts.ChangeDBMigration, facts.ChangeTimeoutRetry, facts.ChangeDependencyBump, facts.ChangeFeature, facts.ChangeConfig, facts.ChangeRefactor}
	}
	for _, p := range prefs {
		for i := range commits {
			for _, ct := range commits[i].ChangeTypes {
				if ct == p {
					return &commits[i], p
				}
			}
			for _, fl := range commits[i].Files {
				if fl.ChangeType == p {
					return &commits[i], p
				}
			}
		}
	}
	if len(commits) > 0 {
		return &commits[len(commits)-1], ""
	}
	return nil, ""
}

func detectCPUThrottling(ev *Evidence) []Finding {
	var out []Finding
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "throttl") {
			continue
		}
		r := riseOf(s.Series)
		// A ratio metric (0-1) above 25%, or a counter-derived rate that rose.
		high := (r.tail <= 1 && r.tail >= 0.25) || (r.tail > 1 && r.ratio >= 2)
		if !high {
			continue
		}
		who := labelOf(s.Series, "pod", "container", "deployment", "service")
		f := Finding{Mode: ModeCPUThrottling, Category: catResource, Score: 0.6, Entity: "pod/" + labelOf(s.Series, "namespace") + "/" + who}
		if labelOf(s.Series, "pod") == "" {
			f.Entity = "service/" + who
		}
		f.Statement = fmt.Sprintf("CPU throttling of %s: %s at %s (baseline %s) — the CPU limit caps the container", who, s.Name, num(r.tail), num(r.head))
		f.validated(f.Statement, s.Cite)
		f.Remediation = []string{"Raise or remove the CPU limit of " + who, "Reduce CPU work per request"}
		f.Signals = []string{"CPU throttling"}
		out = append(out, f)
	}
	return out
}

func detectConsumerLag(ev *Evidence) []Finding {
	var out []Finding
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "lag") || strings.Contains(n, "replica") || isDBMetric(s.Series) {
			continue
		}
		if !(strings.Contains(n, "consumer") || strings.Contains(n, "kafka") || labelOf(s.Series, "consumergroup", "group", "topic") != "") {
			continue
		}
		r := riseOf(s.Series)
		if r.ratio < 3 || r.tail < 100 {
			continue
		}
		group := labelOf(s.Series, "consumergroup", "group", "consumer_group")
		topic := labelOf(s.Series, "topic")
		f := Finding{Mode: ModeConsumerLag, Category: catResource, Score: 0.65, Entity: "consumergroup/" + group}
		f.Statement = fmt.Sprintf("Kafka consumer group %s falls behind on topic %s: %s grew from %s to %s (%s)", group, topic, s.Name, num(r.head), num(r.tail), r.shape)
		f.validated(f.Statement, s.Cite)
		f.Chain = []string{"Producers write faster than the consumers process", "Lag accumulates", "Downstream data is stale"}
		f.Remediation = []string{"Scale consumers (partitions permitting) or fix the slow processing step", "Check consumer errors/rebalances"}
		f.Signals = []string{"consumer lag"}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

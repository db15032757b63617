package analysis

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
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

// seriesKindOf classifies a series, using status-code labels of any
// vocabulary too (http_requests_total{code="503"},
// {http_response_status_code="503"}, {grpc_code="Unavailable"} are error
// series): internal/signal decides, for the brain and the critic alike.
func seriesKindOf(s facts.Series) string {
	if _, bad := signal.StatusError(s.Labels); bad {
		return "errors"
	}
	// A PromQL expression result is named by its query: a 5xx selector in
	// it makes it an error series (an error ratio).
	if reExprErrors.MatchString(s.Name) {
		return "errors"
	}
	return seriesKind(s.Name)
}

var reExprErrors = regexp.MustCompile(`(?i)\b(?:code|status|status_code|http_status|response_code|http_status_code|http_response_status_code|status_class)\s*=~?\s*"5`)

// counterSuffixes mark Prometheus counters (cumulative).
var counterSuffixes = []string{"_total", "_count", "_sum", "_bucket"}

// rateWindow is the span asRate differences a counter over, like rate()[5m]:
// a raw counter sampled finer than it is scraped repeats values, and
// point-to-point differences would alternate between 0 and bursts.
const rateWindow = 5 * time.Minute

// asRate turns a raw cumulative counter (counter-like name, never falling
// except at a few resets to a lower value, as when a container restarts)
// into its per-second increase over rateWindow, so shapes describe the rate,
// not the running sum. Other series are returned unchanged.
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
	// Cumulative values with resets folded in (Prometheus counter semantics).
	cum := make([]float64, len(pts))
	offset, resets := 0.0, 0
	for i := range pts {
		if i > 0 && pts[i].V < pts[i-1].V {
			resets++
			offset += pts[i-1].V
		}
		cum[i] = pts[i].V + offset
	}
	if resets > 2 || resets*4 > len(pts) {
		return s // falls too often: a gauge
	}
	out := facts.Series{Name: s.Name + ":rate", Labels: s.Labels, Unit: "per_second"}
	j := 0
	for i := 1; i < len(pts); i++ {
		for j < i-1 && pts[i].T.Sub(pts[j+1].T) >= rateWindow {
			j++
		}
		dt := pts[i].T.Sub(pts[j].T).Seconds()
		if dt <= 0 {
			continue
		}
		if pts[i].T.Sub(pts[0].T) < rateWindow && len(pts) > 8 && pts[len(pts)-1].T.Sub(pts[0].T) >= 2*rateWindow {
			continue // not a full window yet
		}
		out.Downsampled = append(out.Downsampled, facts.Point{T: pts[i].T, V: (cum[i] - cum[j]) / dt})
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
	switch signal.Classify(name, nil) {
	case signal.Errors:
		return "errors"
	case signal.Latency:
		return "latency"
	case signal.Traffic:
		return "traffic"
	case signal.CPU:
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

// unsaturatedWithChange: a demand rise with no resource at its limit and
// a change before the onset stays below the fault threshold.
const unsaturatedWithChange = 0.5

// creepReleaseWindow: how long before a creeping regression's onset the
// service's own release is still its candidate cause.
const creepReleaseWindow = 2 * time.Hour

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
			if w, ok := facts.PodWorkload(labelOf(s.Series, "pod")); ok {
				svc = w
			}
		}
		if svc == "" {
			svc = ev.alertField("service")
		}
		if svc == "" {
			// A series that names no workload, and an alert that names
			// none either: no owner to blame and no release to tie it to.
			continue
		}
		ns := labelOf(s.Series, "namespace")
		if ns == "" {
			ns = ev.alertNamespace()
		}
		f := Finding{Mode: ModeDeployRegression, Score: 0.5, Entity: deploymentEntity(ns, svc)}
		what := fmt.Sprintf("%s of %s rose from %s to %s (%s)", s.Name, svc, num(r.head), num(r.tail), r.shape)
		if r.onset != nil {
			what += " starting " + hhmm(r.onset)
		}
		f.validated(what, s.Cite)
		// Deploy correlation.
		var before, after []Deploy
		for _, d := range ev.Deploys {
			if d.Service != "" && d.Service != svc {
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
			case gap >= -2*time.Minute && gap <= 30*time.Minute,
				// A gradual creep shows a release's effect as load builds:
				// the service's own release counts for longer.
				kind == "latency" && r.shape == "creep" && d.Service == svc && gap >= 0 && gap <= creepReleaseWindow:
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
			var errTexts []string
			for _, l := range ev.Logs {
				if isErrorLog(l.LogLine) && (svc == "" || l.Service == "" || strings.EqualFold(l.Service, svc) || strings.HasPrefix(l.Pod, svc+"-")) {
					errTexts = append(errTexts, l.Message)
				}
			}
			if sc, why := specificCommit(commits, errTexts); sc != nil && sc != culprit {
				culprit = sc
				for _, ct := range sc.ChangeTypes {
					ctype = ct
					break
				}
				f.inferred(fmt.Sprintf("Commit %s is singled out among the release's commits: %s", short(sc.SHA), why), sc.Cite)
			}
			f.Category = catCode
			f.Score = 0.75
			f.Statement = fmt.Sprintf("Release %s of %s (deployed %s) introduced a regression: %s", d.Revision, svc, hhmm(d.FinishedAt), what)
			if d.IsRollback {
				f.Statement = fmt.Sprintf("Rollback %s of %s (deployed %s) removed code and %s", d.Revision, svc, hhmm(d.FinishedAt), what)
			}
			if culprit != nil {
				f.Entity = "commit/" + short(culprit.SHA)
				f.validated(fmt.Sprintf("Commit %s (%s): %s; change types %s", short(culprit.SHA), culprit.Author, clip(culprit.Message, 120), strings.Join(culprit.ChangeTypes, ", ")), culprit.Cite)
				if culprit.Summary != "" {
					f.validated(fmt.Sprintf("Commit %s summary: %s", short(culprit.SHA), clip(culprit.Summary, 300)), culprit.Cite)
				}
				switch ctype {
				case facts.ChangeDBMigration:
					f.Statement += fmt.Sprintf("; commit %s carries a database migration, consistent with a gradual latency creep (slow query / lock after the schema change)", short(culprit.SHA))
					for _, ds := range ev.Series {
						n := strings.ToLower(ds.Name)
						if !containsFold(n, "scan", "idx", "index", "lock", "rows_fetched", "tup_") {
							continue
						}
						rs := asRate(ds.Series)
						rr := riseOf(rs)
						if rr.shape == "flat" || rr.onset == nil || rr.onset.Before(timeOf(d.StartedAt).Add(-2*time.Minute)) {
							continue
						}
						f.validated(fmt.Sprintf("%s%s went from %s to %s after the release (%s from %s)", ds.Name, labelSuffix(ds.Series, "relname", "table", "indexrelname"), num(rr.head), num(rr.tail), rr.shape, hhmm(rr.onset)), ds.Cite)
					}
				case facts.ChangeTimeoutRetry, facts.ChangeConfig:
					f.Category = catConfig
					f.Statement += fmt.Sprintf("; commit %s changes %s settings", short(culprit.SHA), strings.ReplaceAll(ctype, "_", "/"))
				default:
					f.Statement += fmt.Sprintf("; commit %s (%s) is the most likely culprit", short(culprit.SHA), clip(culprit.Message, 80))
					if commitKind(culprit.Commit) == changeConfig {
						// The category is the change's mechanism: a commit that
						// changes only settings or the build environment (a base
						// image, a toolchain) is configuration.
						f.Category = catConfig
						f.Statement += ", a configuration change (it changes settings or the build environment only)"
					}
				}
				f.Score = 0.8
			}
			f.Chain = []string{fmt.Sprintf("Release %s rolls out at %s", d.Revision, hhmm(d.FinishedAt)), fmt.Sprintf("%s changes shape (%s) at %s", s.Name, r.shape, hhmm(r.onset))}
			f.Remediation = []string{fmt.Sprintf("Roll back %s to %s", svc, d.PreviousRevision), "Fix the offending change before re-deploying"}
			if host, share := dependencyShare(errTexts, svc); share >= 0.5 && !namedInCommits(host, commits) {
				// Most of the service's errors are a downstream's failures
				// (its 5xx, refused or timed-out calls) and nothing the
				// release shipped names that downstream: the release is
				// coincident, the dependency's failure explains the errors.
				f.Score *= explainedPenalty
				f.inferred(fmt.Sprintf("%.0f%% of %s's error lines are failed calls to %s, which no commit of the release names: the release is coincident with the dependency's failure", 100*share, svc, host))
			}
			out = append(out, f)
			continue
		}
		// No deploy: traffic?
		for _, t := range ev.Series {
			if !demandSeries(t.Series, svc) {
				continue
			}
			t.Series = asRate(t.Series)
			tr := riseOf(t.Series)
			if tr.head <= 0 || (tr.onset != nil && r.onset != nil && tr.onset.After(r.onset.Add(5*time.Minute))) {
				continue // traffic that starts from nothing, or rises after the errors, is not demand that caused them
			}
			if tr.ratio >= 1.5 {
				f.Mode = ModeTrafficSaturation
				f.Category = catResource
				f.Score = 0.65
				satWhat, satCite, saturated := ev.saturationEvidence(svc)
				if saturated {
					f.validated("A resource is at its limit: "+satWhat, satCite)
				} else {
					// More traffic alone is not saturation: without a
					// resource at its limit the story stays weak.
					f.Score = 0.55
					f.Inferred = append(f.Inferred, Claim{Text: "No resource of " + svc + " is seen at its limit (CPU, pools, queues, throttling, autoscaler): saturation is not established"})
					if ch := ev.nearestChange(svc, r.onset); ch != nil && !ch.unrelated {
						// A change precedes the onset and no resource is at
						// its limit: more demand is context, and the change
						// is the stronger candidate (temporal precedence).
						f.Score = unsaturatedWithChange
						f.Inferred = append(f.Inferred, Claim{Text: "A change precedes the onset (" + ch.text + "): the rise in demand alone does not outrank it"})
					}
				}
				f.Statement = fmt.Sprintf("%s is saturated by traffic: %s rose from %s to %s with no deploy in the window, and %s", svc, t.Name, num(tr.head), num(tr.tail), what)
				f.validated(fmt.Sprintf("%s rose from %s to %s", t.Name, num(tr.head), num(tr.tail)), t.Cite)
				if ev.Queried("get_deploy_history") && len(ev.Deploys) == 0 {
					f.validated("No deploys in the window (deploy history queried)", Cite{PinIDs: ev.PinsOf("get_deploy_history")})
				}
				f.Chain = []string{"Request rate rises", "Capacity is exhausted", s.Name + " degrades"}
				f.Remediation = []string{"Scale out " + svc, "Add autoscaling on request rate / CPU"}
				if ev.autoscalerBlocked(&f, ns, svc, r.onset) {
					out = append(out, f)
					break
				}
				if hpa, cur, max, c, ok := ev.hpaAtMax(svc); ok {
					f.validated(fmt.Sprintf("HPA %s runs %s replicas, its configured max of %s, while it wants more: it cannot scale further", hpa, num(cur), num(max)), c)
					f.Statement += fmt.Sprintf("; the HPA %s is pinned at its max of %s replicas, so capacity cannot follow the traffic", hpa, num(max))
					f.Chain = []string{"Request rate rises", fmt.Sprintf("The HPA scales %s to its max of %s replicas", svc, num(max)), "The replicas saturate", s.Name + " degrades"}
					f.Remediation = []string{fmt.Sprintf("Raise the HPA max replicas of %s (cluster capacity permitting)", svc), "Shed or queue load at the edge during traffic peaks"}
					f.Score += 0.1
				}
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
	type group struct {
		svc, ns   string
		podOnly   bool
		series    []Series
		periods   map[string]Series // pod -> periods rate
		throttled map[string]Series // pod -> throttled periods rate
		onset     *time.Time
		tail      float64
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "throttl") && !(strings.Contains(n, "cfs_periods") && !strings.Contains(n, "throttl")) {
			continue
		}
		pod := labelOf(s.Series, "pod")
		svc := labelOf(s.Series, "service", "deployment", "container", "app")
		if pod != "" {
			if w := workloadOfPodName(ev, pod); w != "" {
				svc = w
			}
		}
		podOnly := false
		if svc == "" {
			svc, podOnly = pod, true
		}
		key := labelOf(s.Series, "namespace") + "/" + svc
		g := groups[key]
		if g == nil {
			g = &group{svc: svc, ns: labelOf(s.Series, "namespace"), podOnly: podOnly, periods: map[string]Series{}, throttled: map[string]Series{}}
			groups[key] = g
			order = append(order, key)
		}
		rs := Series{asRate(s.Series), s.Cite}
		if !strings.Contains(n, "throttl") {
			g.periods[pod] = rs
			continue
		}
		if strings.Contains(n, "periods") {
			g.throttled[pod] = rs
		}
		g.series = append(g.series, rs)
	}
	var out []Finding
	for _, key := range order {
		g := groups[key]
		if len(g.series) == 0 {
			continue
		}
		// Throttled share of CFS periods when both counters are known, else
		// the throttling rate itself.
		var ratios []float64
		var cite Cite
		var onset *time.Time
		for pod, t := range g.throttled {
			p, ok := g.periods[pod]
			if !ok || p.Latest <= 0 {
				continue
			}
			ratios = append(ratios, t.Latest/p.Latest)
			cite.merge(t.Cite)
			cite.merge(p.Cite)
			if o := onsetOf(t.Series); o != nil && (onset == nil || o.Before(*onset)) {
				onset = o
			}
		}
		high := false
		what := ""
		if len(ratios) > 0 {
			sort.Float64s(ratios)
			med := ratios[len(ratios)/2]
			high = med >= 0.25
			what = fmt.Sprintf("%s of CFS periods are throttled (median over %s)", pct(100*med), plural(len(ratios), "pod", "pods"))
		} else {
			for _, s := range g.series {
				r := riseOf(s.Series)
				if (r.tail <= 1 && r.tail >= 0.25) || (r.tail > 1 && r.ratio >= 2) {
					high = true
					what = fmt.Sprintf("%s at %s (baseline %s)", s.Name, num(r.tail), num(r.head))
					cite.merge(s.Cite)
					onset = onsetOf(s.Series)
					break
				}
			}
		}
		if !high {
			continue
		}
		ns := firstNonEmptyStr(g.ns, ev.alertNamespace())
		f := Finding{Mode: ModeCPUThrottling, Category: catResource, Score: 0.6, Entity: deploymentEntity(ns, g.svc)}
		if g.podOnly {
			f.Entity = "pod/" + ns + "/" + g.svc
		}
		f.Statement = fmt.Sprintf("CPU throttling of %s: %s — the CPU limit caps the containers", g.svc, what)
		f.validated(fmt.Sprintf("%s is throttled: %s", g.svc, what), cite)
		// The limit the pods run with.
		var limits []string
		var pc Cite
		for _, p := range ev.Pods {
			if ev.workloadOf(p.Pod) != g.svc {
				continue
			}
			for _, c := range p.Containers {
				if c.LimitsCPU != "" {
					limits = appendUnique(limits, c.LimitsCPU)
					pc.merge(p.Cite)
				}
			}
		}
		if len(limits) > 0 {
			f.validated(fmt.Sprintf("Pods of %s run with a CPU limit of %s", g.svc, strings.Join(limits, ", ")), pc)
			f.Statement += fmt.Sprintf(" (CPU limit %s)", strings.Join(limits, ", "))
		}
		// A release shortly before the throttling set that limit.
		for _, d := range ev.Deploys {
			if d.Service != g.svc || onset == nil || d.StartedAt == nil {
				continue
			}
			if gap := onset.Sub(*d.StartedAt); gap >= -2*time.Minute && gap <= 30*time.Minute && !d.IsRollback {
				f.Category = catConfig
				f.Score = 0.85
				f.validated(fmt.Sprintf("Deploy of %s %s -> %s started %s, %s before the throttling began at %s", g.svc, d.PreviousRevision, d.Revision, hhmm(d.StartedAt), durHuman(gap), hhmm(onset)), d.Cite)
				f.Statement = fmt.Sprintf("Release %s of %s (deployed %s) made its CPU limit too low for its load: %s", d.Revision, g.svc, hhmm(d.FinishedAt), strings.TrimPrefix(f.Statement, "CPU throttling of "+g.svc+": "))
				f.explains(ModeDeployRegression, "the latency rises because the release's CPU limit throttles the containers")
				f.Chain = []string{fmt.Sprintf("Release %s rolls out with a lower CPU limit", d.Revision), "The containers hit the limit and CFS throttles them", "Requests queue and latency rises"}
			}
		}
		if f.Category == catResource && onset != nil {
			// A change that lowered the CPU limit days before the load
			// arrived (a rightsizing commit or record): the setting, not
			// the demand, is what throttles.
			if text, c, ok := ev.cpuLimitChange(g.svc, *onset); ok {
				f.Category = catConfig
				f.Score = 0.8
				f.validated("A change before the throttling set the CPU limit: "+text, c)
				f.Statement += "; a change before it set that limit: " + text
				f.explains(ModeDeployRegression, "the latency rises because the CPU limit the change set throttles the containers")
				f.Chain = []string{"A change lowers the CPU limit", "Load arrives; the containers hit the limit and CFS throttles them", "Requests queue and latency rises"}
			}
		}
		if f.Category == catResource {
			// Not a release's limit: what grows with the CPU names what
			// the work is (goroutines, threads, connections left running).
			ev.growingWith(&f, g.svc)
		}
		f.Remediation = []string{"Raise (or remove) the CPU limit of " + g.svc + " to fit its load", "Reduce CPU work per request"}
		f.Signals = []string{"CPU throttling", "throttled"}
		out = append(out, f)
	}
	return out
}

// workloadOfPodName names the workload of a pod from the pod facts, else
// from the pod name's deployment suffixes.
func workloadOfPodName(ev *Evidence, pod string) string {
	for _, p := range ev.Pods {
		if p.Name == pod {
			return ev.workloadOf(p.Pod)
		}
	}
	parts := strings.Split(pod, "-")
	if len(parts) > 2 {
		return strings.Join(parts[:len(parts)-2], "-")
	}
	return ""
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

// alertNamespace is the alert's namespace label or field.
func (ev *Evidence) alertNamespace() string {
	ns := ev.alertField("namespace", "kube_namespace", "exported_namespace")
	if ns == "" && ev.Alert != nil {
		ns = ev.Alert.GetNamespace()
	}
	return ns
}

// hpaAtMax finds a HorizontalPodAutoscaler of the workload whose current
// replicas reached its max replicas (kube-state-metrics series).
func (ev *Evidence) hpaAtMax(svc string) (name string, cur, max float64, c Cite, ok bool) {
	var curS, maxS *Series
	for i := range ev.Series {
		s := &ev.Series[i]
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "horizontalpodautoscaler") && !strings.Contains(n, "hpa") {
			continue
		}
		h := labelOf(s.Series, "horizontalpodautoscaler", "hpa", "scaletargetref_name")
		if h == "" || (svc != "" && h != svc && !strings.HasPrefix(h, svc)) {
			continue
		}
		name = h
		switch {
		case strings.Contains(n, "current_replicas"):
			curS = s
		case strings.Contains(n, "max_replicas"):
			maxS = s
		}
	}
	if curS == nil || maxS == nil || maxS.Latest <= 0 || curS.Peak < maxS.Latest {
		return "", 0, 0, Cite{}, false
	}
	c = curS.Cite
	c.merge(maxS.Cite)
	return name, curS.Peak, maxS.Latest, c, true
}

// labelSuffix renders the first present label as {k=v}.
func labelSuffix(s facts.Series, keys ...string) string {
	for _, k := range keys {
		if v := s.Labels[k]; v != "" {
			return "{" + k + "=" + v + "}"
		}
	}
	return ""
}

// outboundWords mark a series counting calls the service makes (client
// side, to an upstream or vendor), not requests it receives.
var outboundWords = []string{"client", "upstream", "outbound", "egress", "downstream", "external", "vendor", "dependency", "outgoing"}

// demandSeries: t measures requests the service svc receives (its demand):
// a traffic series, server side, of svc (or unlabelled).
func demandSeries(t facts.Series, svc string) bool {
	if seriesKindOf(t) != "traffic" || isDBMetric(t) || signal.Subsystem(t.Name) != signal.SubsystemApp {
		return false // a runtime's, a datastore's or the platform's own activity is not demand
	}
	if containsFold(strings.ToLower(t.Name), outboundWords...) {
		return false
	}
	for _, k := range []string{"direction", "span_kind", "kind", "side"} {
		if v := strings.ToLower(t.Labels[k]); v == "outbound" || v == "client" || v == "egress" || v == "out" {
			return false
		}
	}
	if svc == "" {
		return true
	}
	if own := labelOf(t, "service", "app", "deployment", "job"); own != "" && !strings.EqualFold(own, svc) {
		return false
	}
	return true
}

// saturationEvidence finds a resource of svc at or near its limit: an
// autoscaler at its max, a queue, pool, pending or throttling series that
// grew, a utilisation at 85% or more, or error logs of capacity limits.
func (ev *Evidence) saturationEvidence(svc string) (string, Cite, bool) {
	if hpa, cur, max, c, ok := ev.hpaAtMax(svc); ok {
		return fmt.Sprintf("HPA %s at %s of max %s replicas", hpa, num(cur), num(max)), c, true
	}
	for _, x := range ev.Series {
		if own := labelOf(x.Series, "service", "app", "deployment", "container"); svc != "" && own != "" && !strings.EqualFold(own, svc) && !strings.HasPrefix(strings.ToLower(own), strings.ToLower(svc)) {
			continue
		}
		n := strings.ToLower(x.Name)
		rs := asRate(x.Series)
		rr := riseOf(rs)
		switch {
		case containsFold(n, "throttl", "queue", "pool", "pending", "inflight", "in_flight", "saturation", "rejected", "waiting") && !containsFold(n, "limit", "max", "capacity") && rr.ratio >= 1.5 && rr.tail > 0:
			return fmt.Sprintf("%s rose from %s to %s", x.Name, num(rr.head), num(rr.tail)), x.Cite, true
		case containsFold(n, "util", "percent", "pct", "usage_ratio", "saturation") && (rr.tail >= 85 && rr.tail <= 100 || rr.tail >= 0.85 && rr.tail <= 1):
			return fmt.Sprintf("%s at %s", x.Name, num(rr.tail)), x.Cite, true
		}
	}
	for _, h := range ev.limitsReached() {
		if own := labelOf(h.usage.Series, "service", "app", "deployment", "container", "job"); svc == "" || own == "" || strings.EqualFold(own, svc) || strings.HasPrefix(strings.ToLower(own), strings.ToLower(svc)) {
			return h.text(), h.usage.Cite, true
		}
	}
	capacity := capacityFamily.re
	for _, l := range ev.Logs {
		if isErrorLog(l.LogLine) && (svc == "" || l.Service == "" || strings.EqualFold(l.Service, svc) || strings.HasPrefix(l.Pod, svc+"-")) && capacity.MatchString(l.Message) && !reRemoteLimit.MatchString(l.Message) {
			return "log " + quote(l.Message), l.Cite, true
		}
	}
	return "", Cite{}, false
}

// reRemoteLimit: a limit another system enforces on us (its 429, its
// quota) is not our resource at its limit.
var reRemoteLimit = regexp.MustCompile(`(?i)\b429\b|rate[ -]?limit|too many requests|quota`)

// autoscalerBlocked rewrites a demand-saturation finding when the
// workload's autoscaler reports that it cannot scale (it cannot read its
// metric, or cannot act on its target): capacity could not follow the
// demand because of the autoscaler, which becomes the culprit. A change of
// the workload's configuration before the onset makes it a configuration
// error; without one the cause stays resource exhaustion, with the
// autoscaler named.
func (ev *Evidence) autoscalerBlocked(f *Finding, ns, svc string, onset *time.Time) bool {
	d, ok := ev.deploymentFor(ns, svc)
	if !ok {
		return false
	}
	var blocked []condOf
	for _, co := range workloadConditions(d) {
		// At its maximum the autoscaler scales; it is capped, not blocked
		// (the bound, and any change that set it, is limitchange.go's).
		if co.kind != "Deployment" && !strings.EqualFold(co.c.Type, "ScalingLimited") {
			blocked = append(blocked, co)
		}
	}
	if len(blocked) == 0 {
		return false
	}
	co := blocked[0]
	f.Mode = ModeAutoscalerBlocked
	f.Entity = strings.ToLower(co.kind) + "/" + qualifiedName(co.ns, co.name)
	f.validated("The autoscaler cannot scale: "+co.text(), d.Cite)
	f.Statement = fmt.Sprintf("Capacity of %s could not follow the demand: its autoscaler %s reports %s=%s (%s: %s), so the replicas stayed put while %s",
		svc, co.name, co.c.Type, co.c.Status, co.c.Reason, clip(co.c.Message, 200), strings.TrimPrefix(f.Statement, svc+" is saturated by traffic: "))
	f.Chain = []string{"The autoscaler of " + svc + " cannot compute or apply a replica count (" + co.c.Reason + ")", "Demand rises and the replica count stays put", "The replicas saturate"}
	f.Remediation = []string{fmt.Sprintf("Fix the autoscaler %s (%s), then scale %s out by hand until it scales again", co.name, co.c.Reason, svc)}
	f.Score = 0.7
	if ch := ev.nearestChange(svc, onset, co.c.Message); ch != nil && !ch.unrelated && (ch.kind == changeConfig || ch.kind == changeCapacity) {
		f.Category = catConfig
		f.validated("Change before the onset: "+ch.text, ch.cite)
		f.Chain = append([]string{"Change: " + ch.text}, f.Chain...)
		f.Score = 0.75
	}
	return true
}

// dependencyShare is the downstream host most of texts name with a
// transport or upstream failure, and the share of texts that name it.
func dependencyShare(texts []string, self string) (string, float64) {
	if len(texts) == 0 {
		return "", 0
	}
	count := map[string]int{}
	best := ""
	for _, t := range texts {
		if h := downstreamHost(t, self); h != "" {
			count[h]++
			if count[h] > count[best] || count[h] == count[best] && h < best {
				best = h
			}
		}
	}
	if best == "" {
		return "", 0
	}
	return best, float64(count[best]) / float64(len(texts))
}

// namedInCommits: a commit's message, summary or files name host (whole,
// its first label when that label is a distinctive name, or its
// provider's name).
func namedInCommits(host string, commits []Commit) bool {
	label, _, _ := strings.Cut(host, ".")
	prov := providerName(host) // "paygate" of eu.api.paygate.example
	for _, c := range commits {
		text := strings.ToLower(c.Message + " " + c.Summary)
		for _, f := range c.Files {
			text += " " + strings.ToLower(f.Path)
		}
		if strings.Contains(text, strings.ToLower(host)) || len(label) >= 4 && strings.Contains(text, strings.ToLower(label)) || prov != "" && strings.Contains(text, prov) {
			return true
		}
	}
	return false
}

// maxGrowing bounds the co-growing gauges a finding quotes.
const maxGrowing = 3

// growingWith quotes the gauges of workload (by its pods or its service
// label) that creep up over the window, other than its CPU and memory:
// what it accumulates (goroutines, threads, open connections, cache
// entries) names the work behind a resource running out.
func (ev *Evidence) growingWith(f *Finding, workload string) {
	var names []string
	for _, x := range ev.Series {
		n := strings.ToLower(x.Name)
		if isCounterName(x.Name) || containsFold(n, "cpu", "memory", "limit", "throttl") {
			continue
		}
		switch signal.Classify(x.Name, x.Labels) {
		case signal.Latency, signal.Errors, signal.Traffic, signal.Availability:
			continue // how requests fare, not what the workload holds
		}
		own := labelOf(x.Series, "service", "app", "deployment", "container")
		if p := labelOf(x.Series, "pod"); p != "" {
			own = workloadOfPodName(ev, p)
		}
		if !strings.EqualFold(own, workload) || containsName(names, x.Name) || len(names) >= maxGrowing {
			continue
		}
		if first, last, _, ok := creep(x); ok && last > 1.5*first {
			names = append(names, x.Name)
			f.validated(fmt.Sprintf("%s of %s grows with it (%s to %s)", x.Name, workload, num(first), num(last)), x.Cite)
		}
	}
}

// reCPUSetting: a record's words for a container's CPU limit.
var reCPUSetting = regexp.MustCompile(`(?i)\bcpu limit|limits\.cpu|limits cpu|\bcpu:\s*\d`)

// cpuLimitLookback: a CPU limit changed this long before throttling began
// (a rightsizing the evening before the morning's load) is its cause.
const cpuLimitLookback = 7 * 24 * time.Hour

// cpuLimitChange is the latest change before onset, within
// cpuLimitLookback, that names svc's CPU limit: a commit of the service
// whose text names it, or a line (not an error) that names the service
// and announces the change. The workload whose limit throttles stays the
// entity; the change is quoted.
func (ev *Evidence) cpuLimitChange(svc string, onset time.Time) (string, Cite, bool) {
	var at time.Time
	var text string
	var c Cite
	for _, cm := range ev.Commits {
		if cm.Removed || cm.Timestamp == nil || cm.Timestamp.After(onset) || onset.Sub(*cm.Timestamp) > cpuLimitLookback {
			continue
		}
		body := cm.Message + " " + cm.Summary
		if (cm.Service == svc || strings.Contains(strings.ToLower(body), strings.ToLower(svc))) && reCPUSetting.MatchString(body) && cm.Timestamp.After(at) {
			at, text, c = *cm.Timestamp, fmt.Sprintf("commit %s at %s: %s", short(cm.SHA), hhmmDay(cm.Timestamp, onset), quote(clip(cm.Message, 160))), cm.Cite
		}
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Timestamp.After(onset) || onset.Sub(*l.Timestamp) > cpuLimitLookback || isErrorLog(l.LogLine) {
			continue
		}
		m := l.Message
		if !strings.Contains(strings.ToLower(m), strings.ToLower(svc)) || !settingChangeRecord(m, reCPUSetting) {
			continue
		}
		if l.Timestamp.After(at) {
			at, text, c = *l.Timestamp, fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmmDay(l.Timestamp, onset), quote(clip(m, 200))), l.Cite
		}
	}
	return text, c, !at.IsZero()
}

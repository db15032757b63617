package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ModeBatchJobBreach: a resource threshold breach caused by a batch Job
// that ran normally and completed; the metric returned to its baseline.
const ModeBatchJobBreach = "batch_job_breach"

const (
	// batchStartSlack: how long before the metric's rise a Job may start
	// (and how long after it the rise may be first sampled).
	batchStartSlack = 15 * time.Minute
	// batchEndSlack: how far apart the Job's completion and the metric's
	// return may be.
	batchEndSlack = 10 * time.Minute
	// batchRiseFactor: the peak is at least this multiple of the baseline.
	batchRiseFactor = 1.8
	// batchReturnFrac: the latest value is within this fraction of the
	// rise above the baseline.
	batchReturnFrac = 0.25
)

var (
	// resourceMetricRe: saturation metrics a threshold alert is set on.
	resourceMetricRe = regexp.MustCompile(`(?i)(cpu|memory|mem_|iops|load|utili[sz]ation|disk|io_|throughput|connections|sessions)`)
	// offsetSeriesRe: a series recorded at an offset (the same metric a day
	// or a week before).
	offsetSeriesRe = regexp.MustCompile(`(?i)(offset|_1d|_7d|yesterday|previous|1d_ago|7d_ago)`)
	// thresholdAlertRe: the alert is a threshold breach.
	thresholdAlertRe = regexp.MustCompile(`(?i)(above|over|exceed|threshold|>|high)`)
	// completedLogRe: a run reporting its successful end.
	completedLogRe = regexp.MustCompile(`(?i)\b(completed|finished|done|succeeded)\b`)
)

// riseAndReturn is a series that rose well above its baseline and came
// back: onset is the first sample above half the rise, fall the first
// sample after the peak back below it.
type riseAndReturn struct {
	s           Series
	base, peak  float64
	onset, fall time.Time
}

func seriesRiseAndReturn(s Series) (riseAndReturn, bool) {
	pts := s.Downsampled
	if len(pts) < 5 {
		return riseAndReturn{}, false
	}
	first, last := pts[0].V, pts[len(pts)-1].V
	base := min(first, last)
	peak, peakAt := base, 0
	for i, p := range pts {
		if p.V > peak {
			peak, peakAt = p.V, i
		}
	}
	if base <= 0 || peak < base*batchRiseFactor {
		return riseAndReturn{}, false
	}
	if first-base > batchReturnFrac*(peak-base) || last-base > batchReturnFrac*(peak-base) {
		return riseAndReturn{}, false // did not start from, or return to, the baseline
	}
	half := base + (peak-base)/2
	r := riseAndReturn{s: s, base: base, peak: peak}
	for _, p := range pts[:peakAt+1] {
		if p.V >= half {
			r.onset = p.T
			break
		}
	}
	for _, p := range pts[peakAt:] {
		if p.V < half {
			r.fall = p.T
			break
		}
	}
	if r.onset.IsZero() || r.fall.IsZero() {
		return riseAndReturn{}, false
	}
	return r, true
}

func detectBatchJobBreach(ev *Evidence) []Finding {
	if ev.Alert == nil {
		return nil
	}
	alertText := strings.Join([]string{ev.Alert.GetAlertName(), ev.Alert.GetTitle(), ev.Alert.GetSummary(), ev.Alert.GetDescription()}, " ")
	if !resourceMetricRe.MatchString(alertText) || !thresholdAlertRe.MatchString(alertText) {
		return nil
	}
	var rises, offsets []riseAndReturn
	for _, s := range ev.Series {
		if !resourceMetricRe.MatchString(s.Name) {
			continue
		}
		r, ok := seriesRiseAndReturn(s)
		if !ok {
			continue
		}
		if offsetSeriesRe.MatchString(s.Name) || offsetSeriesRe.MatchString(s.Labels["offset"]) {
			offsets = append(offsets, r)
		} else {
			rises = append(rises, r)
		}
	}
	if len(rises) == 0 {
		return nil
	}
	sort.SliceStable(rises, func(i, j int) bool { return rises[i].peak/rises[i].base > rises[j].peak/rises[j].base })
	for _, rise := range rises {
		for _, job := range ev.Resources {
			if !strings.EqualFold(job.Kind, "Job") || job.CreatedAt == nil || job.CompletedAt == nil || !jobSucceeded(job) {
				continue
			}
			start, end := *job.CreatedAt, *job.CompletedAt
			if start.Before(rise.onset.Add(-batchStartSlack)) || start.After(rise.onset.Add(batchStartSlack)) {
				continue
			}
			if d := end.Sub(rise.fall); d > batchEndSlack || d < -batchEndSlack {
				continue
			}
			if errs := errorLogsAfter(ev, start); len(errs) > 0 {
				return nil // something failed during or after the run
			}
			return []Finding{batchJobFinding(ev, rise, job, offsets)}
		}
	}
	return nil
}

func jobSucceeded(r Resource) bool {
	complete := false
	for _, c := range r.Conditions {
		switch {
		case strings.EqualFold(c.Type, "Failed") && strings.EqualFold(c.Status, "True"):
			return false
		case strings.EqualFold(c.Type, "Complete") && strings.EqualFold(c.Status, "True"):
			complete = true
		}
	}
	return complete
}

func errorLogsAfter(ev *Evidence, t time.Time) []LogLine {
	var out []LogLine
	for _, l := range ev.Logs {
		if l.Timestamp != nil && !l.Timestamp.Before(t) && isErrorLog(l.LogLine) {
			out = append(out, l)
		}
	}
	return out
}

func batchJobFinding(ev *Evidence, rise riseAndReturn, job Resource, offsets []riseAndReturn) Finding {
	entity := "job/" + job.Namespace + "/" + job.Name
	f := healthyFinding(ModeBatchJobBreach, entity, 0.9)
	f.Overrides = true
	metric := seriesLabel(rise.s)
	f.validated(fmt.Sprintf("Job %s/%s started at %s and completed successfully at %s", job.Namespace, job.Name, hhmm(job.CreatedAt), hhmm(job.CompletedAt)), job.Cite)
	f.validated(fmt.Sprintf("%s rose from %s to %s at %s, while the Job ran, and was back at %s by %s", metric, num(rise.base), num(rise.peak), hhmm(&rise.onset), num(rise.s.Latest), hhmm(&rise.fall)), rise.s.Cite)
	for _, o := range offsets {
		f.validated(fmt.Sprintf("%s shows the same rise (%s to %s) at the same time of day: the breach recurs with the scheduled run", seriesLabel(o.s), num(o.base), num(o.peak)), o.s.Cite)
		f.Score += 0.05
		break
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || !completedLogRe.MatchString(l.Message) {
			continue
		}
		if d := l.Timestamp.Sub(*job.CompletedAt); d >= -batchEndSlack && d <= batchEndSlack && (strings.Contains(l.Pod, job.Name) || ev.logService(l) != "" && strings.HasPrefix(job.Name, ev.logService(l))) {
			f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
			break
		}
	}
	owner := ""
	for _, o := range job.Owners {
		if strings.HasPrefix(o, "CronJob/") {
			owner = " (run of " + o + ")"
		}
	}
	f.Statement = fmt.Sprintf("No active failure: the breach of %s (%s to %s from %s) is the batch Job %s/%s%s, which started at %s, completed successfully at %s, after which the metric returned to its baseline; expected load of a scheduled run",
		metric, num(rise.base), num(rise.peak), hhmm(&rise.onset), job.Namespace, job.Name, owner, hhmm(job.CreatedAt), hhmm(job.CompletedAt))
	f.Chain = []string{fmt.Sprintf("Batch Job %s starts", job.Name), "Its work loads the shared resource above the alert threshold", "The Job completes successfully", "The metric returns to its baseline"}
	f.Remediation = []string{"Resolve the alert; no action on the system is needed", "Exclude the scheduled run's window from the threshold monitor, or alert on sustained breaches outside it"}
	f.Signals = []string{"job", "completed"}
	for _, m := range []string{ModeTrafficSaturation, ModeAnomaly, ModeCPUQuery, ModeConnExhaustion, ModeDBIO, ModeDBMemory, ModeCPUThrottling} {
		f.explains(m, fmt.Sprintf("the load is the scheduled Job %s, which completed", job.Name))
	}
	return f
}

func seriesLabel(s Series) string {
	for _, k := range []string{"instance", "dbinstanceidentifier", "pod", "service"} {
		if v := s.Labels[k]; v != "" {
			return fmt.Sprintf("%s of %s", s.Name, v)
		}
	}
	return s.Name
}

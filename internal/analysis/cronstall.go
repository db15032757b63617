package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// A CronJob that stopped running is no failure of any pod: nothing
// crashes, every pod is healthy, and the work it should do does not
// happen. Two readings of its own facts say so, whatever its name or
// purpose:
//
//   - its run is still active longer than its schedule's period while its
//     concurrency policy forbids (or replaces) overlapping runs: every
//     scheduled run since is skipped behind the hung one;
//   - its schedule will not fire again for far longer than the cadence its
//     past runs kept (a field of the expression that excludes today: a
//     month or weekday range typed wrong).
//
// Either is a configuration of the CronJob that stops its work.

// ModeCronJobStalled: a CronJob whose configuration stops its runs.
const ModeCronJobStalled = "cronjob_stalled"

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func detectCronJobStalled(ev *Evidence) []Finding {
	now := ev.Now
	if now.IsZero() {
		return nil
	}
	var out []Finding
	for _, res := range ev.Resources {
		if !strings.EqualFold(res.Kind, "CronJob") {
			continue
		}
		var schedule, policy, lastScheduled string
		var suspended bool
		for _, sig := range res.Signals {
			switch {
			case strings.HasPrefix(sig, "schedule "):
				schedule = strings.TrimPrefix(sig, "schedule ")
			case strings.HasPrefix(sig, "concurrencyPolicy "):
				policy = strings.TrimPrefix(sig, "concurrencyPolicy ")
			case sig == "suspended":
				suspended = true
			case strings.HasPrefix(sig, "last scheduled "):
				lastScheduled = strings.TrimPrefix(sig, "last scheduled ")
			}
		}
		if suspended && schedule != "" && ev.Alert != nil && !ev.Alert.GetResolved() && ev.alertNamesBatch(res.Name) {
			// Stopped, while a check of its runs fires: the suspension is
			// what stops the work the alert expects.
			ent := "cronjob/" + qualifiedName(res.Namespace, res.Name)
			f := Finding{Mode: ModeCronJobStalled, Detector: ModeCronJobStalled, Category: catConfig, Score: 0.8, Entity: ent}
			f.Statement = fmt.Sprintf("CronJob %s is suspended (suspend: true), so its schedule %q starts no run, and the alert that expects its runs fires", qualifiedName(res.Namespace, res.Name), schedule)
			f.validated(fmt.Sprintf("CronJob %s: %s", qualifiedName(res.Namespace, res.Name), strings.Join(res.Signals, "; ")), res.Cite)
			for _, l := range ev.Logs {
				if containsFold(l.Message, res.Name) && containsFold(l.Message, "suspend") {
					f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
				}
			}
			f.inferred("The suspension was left in place (or set by mistake) while the runs are still expected")
			f.Chain = []string{"The CronJob is suspended", "No run starts at its schedule", "The check of its runs (a dead man's switch, a freshness alert) fires"}
			f.Remediation = []string{fmt.Sprintf("Resume it (kubectl patch cronjob %s -n %s -p '{\"spec\":{\"suspend\":false}}') and run the missed work once", res.Name, res.Namespace)}
			f.Signals = []string{"suspended", schedule}
			out = append(out, f)
			continue
		}
		if schedule == "" || suspended {
			continue // a suspended CronJob was stopped on purpose
		}
		sched, err := cronParser.Parse(schedule)
		if err != nil {
			continue
		}
		runs := ev.cronJobRuns(res.Namespace, res.Name)
		ent := "cronjob/" + qualifiedName(res.Namespace, res.Name)
		// A run active longer than the schedule's period behind a policy
		// that forbids overlap.
		if period := schedulePeriod(sched, now); period > 0 && policy != "Allow" && policy != "" {
			for _, j := range runs {
				if j.CompletedAt != nil || j.CreatedAt == nil || !jobActive(j) {
					continue
				}
				age := now.Sub(*j.CreatedAt)
				if age < 2*period {
					continue
				}
				f := Finding{Mode: ModeCronJobStalled, Detector: ModeCronJobStalled, Category: catConfig, Score: 0.7, Entity: ent}
				skipped := int(age / period)
				f.Statement = fmt.Sprintf("CronJob %s stopped doing its work: its run %s has been active for %s, longer than its schedule's period (%s, every %s), and concurrencyPolicy %s skips every scheduled run while it is (about %d skipped); nothing bounds the run's duration",
					res.Name, j.Name, durHuman(age), schedule, durHuman(period), policy, skipped)
				f.validated(fmt.Sprintf("Job %s (of CronJob %s) started %s and is still active", j.Name, res.Name, hhmmDay(j.CreatedAt, now)), j.Cite)
				f.validated(fmt.Sprintf("CronJob %s: schedule %s, concurrencyPolicy %s", res.Name, schedule, policy), res.Cite)
				ev.quoteCronEvents(&f, res.Namespace, res.Name, j.Name)
				f.Chain = []string{"A run of " + res.Name + " hangs and never completes", "concurrencyPolicy " + policy + " skips every scheduled run behind it", "The work the CronJob does stops; the alert on its output fires"}
				f.Remediation = []string{"Delete the hung Job " + j.Name + " so the schedule resumes", "Set activeDeadlineSeconds (and a timeout in the job's own calls) so a run cannot hang forever"}
				f.Signals = []string{"cronjob", "hung run"}
				f.Sources = []string{"k8s"}
				out = append(out, f)
				break
			}
		}
		// A schedule that will not fire again for far longer than the
		// cadence its runs kept.
		if cadence, last, ok := runCadence(runs); ok {
			next := sched.Next(now)
			if gap := next.Sub(now); gap > 10*cadence && gap > 48*time.Hour && now.Sub(last) > 2*cadence {
				f := Finding{Mode: ModeCronJobStalled, Detector: ModeCronJobStalled, Category: catConfig, Score: 0.7, Entity: ent}
				f.Statement = fmt.Sprintf("CronJob %s stopped running: its schedule %s will not fire again until %s (%s from now), while its runs came every %s until the last one at %s; the schedule expression excludes the dates it ran on",
					res.Name, schedule, next.UTC().Format("2006-01-02 15:04Z"), durHuman(gap), durHuman(cadence), hhmmDay(&last, now))
				f.validated(fmt.Sprintf("CronJob %s: schedule %s, next run %s", res.Name, schedule, next.UTC().Format(time.RFC3339)), res.Cite)
				if lastScheduled != "" {
					f.validated(fmt.Sprintf("CronJob %s status.lastScheduleTime %s", res.Name, lastScheduled), res.Cite)
				}
				ev.quoteCronEvents(&f, res.Namespace, res.Name, "")
				f.Chain = []string{"The schedule of " + res.Name + " was set to an expression that excludes the days it must run", "No run is scheduled", "The work the CronJob does stops; the alert on its output fires"}
				f.Remediation = []string{"Correct the schedule of CronJob " + res.Name + " (" + schedule + ") and trigger one run by hand"}
				f.Signals = []string{"cronjob", "schedule"}
				f.Sources = []string{"k8s"}
				out = append(out, f)
			}
		}
	}
	return out
}

// cronJobRuns are the Jobs a CronJob created, oldest first.
func (ev *Evidence) cronJobRuns(ns, name string) []Resource {
	var out []Resource
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "Job") || r.Namespace != ns {
			continue
		}
		owned := strings.HasPrefix(r.Name, name+"-")
		for _, o := range r.Owners {
			if strings.EqualFold(o, "CronJob/"+name) {
				owned = true
			}
		}
		if owned {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CreatedAt, out[j].CreatedAt
		return a != nil && (b == nil || a.Before(*b))
	})
	return out
}

// jobActive: the Job's summary counts an active pod.
func jobActive(j Resource) bool {
	for _, s := range j.Signals {
		if strings.Contains(s, "active=") && !strings.Contains(s, "active=0") {
			return true
		}
	}
	return false
}

// schedulePeriod is the time between the schedule's next two runs.
func schedulePeriod(s cron.Schedule, now time.Time) time.Duration {
	a := s.Next(now)
	return s.Next(a).Sub(a)
}

// runCadence is the median time between a CronJob's runs (three runs at
// least) and the time of its last.
func runCadence(runs []Resource) (time.Duration, time.Time, bool) {
	var ts []time.Time
	for _, r := range runs {
		if r.CreatedAt != nil {
			ts = append(ts, *r.CreatedAt)
		}
	}
	if len(ts) < 3 {
		return 0, time.Time{}, false
	}
	var gaps []time.Duration
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2], ts[len(ts)-1], gaps[len(gaps)/2] > 0
}

// quoteCronEvents adds the events of the CronJob (and of its run) to f.
func (ev *Evidence) quoteCronEvents(f *Finding, ns, name, job string) {
	n := 0
	for _, e := range ev.Events {
		if e.Namespace != "" && e.Namespace != ns || n >= 3 {
			continue
		}
		if e.InvolvedName == name || job != "" && e.InvolvedName == job {
			f.validated(fmt.Sprintf("Event on %s %s: %s: %s", e.InvolvedKind, e.InvolvedName, e.Reason, quote(e.Message)), e.Cite)
			n++
		}
	}
}

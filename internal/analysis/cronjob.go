package analysis

import (
	"fmt"
	"sort"
	"strings"
)

// ModeCronJobOverlap is a CronJob whose runs pile up: a run is still going
// when the next one starts (concurrencyPolicy Allow), so several runs load
// the same backend at once.
const ModeCronJobOverlap = "cronjob_overlap"

// detectCronJobOverlap: kube-state-metrics shows more than one active run of
// a CronJob at once, and growing; its concurrency policy (from the CronJob or
// kube_cronjob_info) allows overlap. Series of other components labelled
// with the CronJob's name that rise with it show what the runs exhaust.
func detectCronJobOverlap(ev *Evidence) []Finding {
	var out []Finding
	for _, s := range ev.Series {
		if n := strings.ToLower(s.Name); !strings.Contains(n, "cronjob_status_active") && !strings.Contains(n, "cronjob_active_jobs") {
			continue // kube-state-metrics' and OpenTelemetry's (k8s.cronjob.active_jobs) count of running jobs
		}
		cj := labelOf(s.Series, "cronjob")
		if cj == "" {
			continue
		}
		r := riseOf(s.Series)
		if s.Latest < 2 || s.Latest <= r.head {
			continue
		}
		ns := firstNonEmptyStr(labelOf(s.Series, "namespace"), ev.alertNamespace())
		policy, schedule := "", ""
		var pc Cite
		for _, o := range ev.Series {
			if labelOf(o.Series, "cronjob") == cj && labelOf(o.Series, "concurrency_policy") != "" {
				policy, schedule, pc = labelOf(o.Series, "concurrency_policy"), labelOf(o.Series, "schedule"), o.Cite
			}
		}
		for _, res := range ev.Resources {
			if strings.EqualFold(res.Kind, "CronJob") && res.Name == cj {
				for _, sig := range res.Signals {
					if i := strings.Index(sig, "concurrencyPolicy "); i >= 0 {
						policy, pc = strings.Fields(sig[i+len("concurrencyPolicy "):])[0], res.Cite
					}
				}
			}
		}
		if policy != "" && !strings.EqualFold(policy, "Allow") {
			continue // Forbid/Replace cannot overlap: the active count means something else
		}
		f := Finding{Mode: ModeCronJobOverlap, Category: catResource, Score: 0.72, Entity: "cronjob/" + ns + "/" + cj}
		what := fmt.Sprintf("runs of CronJob %s/%s overlap: %s rose from %s to %s active runs at once", ns, cj, s.Name, num(r.head), num(s.Latest))
		f.validated(what, s.Cite)
		stmt := "Overlapping CronJob runs: " + what
		if policy != "" {
			p := fmt.Sprintf("its concurrencyPolicy is %s", policy)
			if schedule != "" {
				p += fmt.Sprintf(" (schedule %s)", schedule)
			}
			f.validated(fmt.Sprintf("CronJob %s/%s: %s, so a new run starts while earlier ones are still running", ns, cj, p), pc)
			stmt += "; " + p + ", so every run that outlasts the schedule adds to the pile"
			f.Score += 0.1
		}
		// What the runs exhaust: other series labelled with the CronJob that rise.
		var with []string
		var wc Cite
		seen := map[string]bool{}
		for _, o := range ev.Series {
			if o.Name == s.Name || seen[o.Name] || labelOf(o.Series, "cronjob") != "" {
				continue
			}
			tagged := false
			for _, v := range o.Labels {
				if v == cj || strings.HasPrefix(v, cj+"-") {
					tagged = true
				}
			}
			if !tagged {
				continue
			}
			if ro := riseOf(o.Series); ro.head > 0 && ro.tail >= 1.5*ro.head {
				seen[o.Name] = true
				with = append(with, fmt.Sprintf("%s %s -> %s", o.Name, num(ro.head), num(ro.tail)))
				wc.merge(o.Cite)
			}
		}
		sort.Strings(with)
		if len(with) > 0 {
			if len(with) > 3 {
				with = with[:3]
			}
			f.validated("Load of the overlapping runs grows with them: "+strings.Join(with, "; "), wc)
			stmt += "; their load grows with them (" + strings.Join(with, "; ") + ")"
			f.Score += 0.05
		}
		f.Statement = stmt
		f.Chain = []string{fmt.Sprintf("A run of %s takes longer than its schedule interval", cj), "concurrencyPolicy Allow starts the next run anyway; runs pile up", "The overlapping runs exhaust the shared backend (sessions, CPU) and its other clients slow down and time out"}
		f.Remediation = []string{fmt.Sprintf("Set concurrencyPolicy: Forbid on CronJob %s/%s and stop the surplus runs", ns, cj), "Make each run fit its interval (batching, indexes) or lengthen the schedule"}
		f.Signals = []string{"cronjob", "concurrencyPolicy", cj}
		for _, m := range []string{ModeTrafficSaturation, ModeAnomaly, ModeConnExhaustion, ModeCPUQuery, ModeLockContention, ModeDeployRegression, ModeCodeException} {
			f.explains(m, fmt.Sprintf("the load comes from overlapping runs of CronJob %s", cj))
		}
		out = append(out, f)
	}
	return out
}

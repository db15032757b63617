package analysis

import (
	"fmt"

	"github.com/rcamesh/rcamesh/internal/facts"
	"math"
	"regexp"
	"sort"
	"strings"
)

// ---- a completed Job pod flagged as not ready ----

// detectCompletedPod: a pod that ran to completion (phase Succeeded, exit 0)
// is not Ready by design (reason PodCompleted); an alert on its readiness
// is noise from a rule that does not filter finished pods.
func detectCompletedPod(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		if !strings.EqualFold(p.Phase, "Succeeded") {
			continue
		}
		reason := ""
		for _, c := range p.Conditions {
			if c.Type == "Ready" && c.Status != "True" {
				reason = c.Reason
			}
		}
		exitOK := len(p.Containers) > 0
		var codes []string
		for _, c := range p.Containers {
			if c.ExitCode == nil || *c.ExitCode != 0 {
				exitOK = false
				continue
			}
			codes = append(codes, fmt.Sprintf("%s exit=0 (%s)", c.Name, firstNonEmptyStr(c.Reason, "Completed")))
		}
		if !exitOK {
			continue
		}
		// Only the alerted pod (or, with none named, any completed one).
		ap := ev.alertField("pod", "kube_pod", "pod_name")
		if ap != "" && ap != p.Name && (ev.Alert == nil || ev.Alert.GetPod() != p.Name) {
			continue
		}
		// An alert that names no pod is read as one on pods' state only if
		// its words say so: a business signal (a ratio, a count) is not a
		// readiness rule, whatever pod completed near it.
		if ap == "" && ev.Alert != nil && ev.Alert.GetPod() == "" && !reReadinessAlert.MatchString(ev.alertText()) && !ev.alertNamesRun(p.Pod) {
			continue
		}
		owner := p.OwnerName
		ent := podEntity(p.Pod)
		if strings.EqualFold(p.OwnerKind, "Job") && owner != "" {
			ent = "job/" + p.Namespace + "/" + owner
		}
		f := healthyFinding(ModeHealthy, ent, 0.86)
		f.Statement = fmt.Sprintf("No failure: pod %s completed its work — phase Succeeded, %s; it reports Ready=False with reason %s because a finished pod never serves, so the not-ready alert is expected noise",
			p.Name, strings.Join(codes, ", "), firstNonEmptyStr(reason, "PodCompleted"))
		f.validated(fmt.Sprintf("Pod %s: phase Succeeded, Ready=False (reason %s), %s", p.Name, firstNonEmptyStr(reason, "PodCompleted"), strings.Join(codes, ", ")), p.Cite)
		if owner != "" {
			f.validated(fmt.Sprintf("Pod %s is owned by %s %s", p.Name, p.OwnerKind, owner), p.Cite)
		}
		for _, e := range ev.Events {
			if strings.EqualFold(e.InvolvedKind, "Job") && e.InvolvedName == owner && containsFold(e.Reason+" "+e.Message, "complete") {
				f.validated("Event "+eventLine(e), e.Cite)
			}
		}
		// The run's own account of how it ended: its last lines.
		logs := ev.LogsFor(p.Name)
		for _, l := range logs[max(0, len(logs)-completedRunLines):] {
			f.validated(fmt.Sprintf("How the run ended, %s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
		f.inferred("The alerting rule matches pods of every phase; it should exclude Succeeded/Failed (completed) pods")
		f.Chain = []string{"The Job's pod ran and exited 0", "Kubernetes marks a completed pod not Ready (PodCompleted)", "A readiness alert without a phase filter fires on it"}
		f.Remediation = []string{"No action on the workload; add phase=\"Running\" (or exclude completed pods) to the alert rule"}
		f.Signals = []string{"completed", "Succeeded", "PodCompleted"}
		f.explains(ModeProbeFailure, "a completed pod is not Ready by design")
		out = append(out, f)
	}
	return out
}

// ---- a bare pod that completes its command and is restarted ----

// ModeBarePodCompletes: a pod no workload owns (run by hand: kubectl run)
// whose container finishes its command with exit 0 and is restarted,
// because a bare pod restarts by default: CrashLoopBackOff without a
// failure, and nothing serves from it.
const ModeBarePodCompletes = "bare_pod_completes"

func detectBarePodCompletes(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		if p.OwnerKind != "" || p.OwnerName != "" || len(p.Containers) == 0 {
			continue
		}
		looping, clean := false, true
		for _, c := range p.Containers {
			if c.RestartCount > 0 && (strings.Contains(c.Reason, "CrashLoopBackOff") || c.LastExitCode != nil) {
				looping = true
			}
			if c.LastExitCode == nil || *c.LastExitCode != 0 {
				clean = false
			}
		}
		if !looping || !clean {
			continue
		}
		f := healthyFinding(ModeBarePodCompletes, podEntity(p.Pod), 0.84)
		how := "by hand"
		if v := p.Labels["run"]; v != "" {
			how = "by hand (kubectl run: label run: " + v + ")"
		}
		f.Statement = fmt.Sprintf("No service failure: pod %s belongs to no workload (created %s); its container completes its command (exit 0, Completed) and the kubelet restarts it because a bare pod restarts always, hence CrashLoopBackOff after %s; a process that exits when done serves nothing",
			p.Name, how, plural(int(podRestarts(p.Pod)), "restart", "restarts"))
		f.validated(fmt.Sprintf("Pod %s: no owner, restart_count=%d, last exit 0 (Completed)", p.Name, podRestarts(p.Pod)), p.Cite)
		f.inferred("A one-off command run as a pod without --restart=Never (a leftover debug or maintenance pod)")
		f.Chain = []string{"A pod is created by hand to run a command", "The command finishes (exit 0)", "restartPolicy Always restarts it, with back-off: CrashLoopBackOff"}
		f.Remediation = []string{"No action on a service; delete the leftover pod (kubectl delete pod " + p.Name + " -n " + p.Namespace + ") and run one-off commands with --restart=Never or as a Job"}
		f.Signals = []string{"no owner", "exit 0", "Completed"}
		f.explains(ModeCrashLoop, "the bare pod completes its command and is restarted by default")
		out = append(out, f)
	}
	return out
}

// alertNamesRun: the alert's words name the batch the pod ran for (its
// Job's name without the run's number: a dead man's switch of the
// CronJob, a check-in monitor).
func (ev *Evidence) alertNamesRun(p facts.Pod) bool {
	name := p.OwnerName
	if name == "" {
		return false
	}
	if i := strings.LastIndexByte(name, '-'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		name = name[:i]
	}
	return ev.alertNamesBatch(name)
}

// alertNamesBatch: the alert's words, resource or service name or its
// labels and annotations name the batch (a CronJob's name, four characters
// or more), whole or by all the words of its name ("Monthly lesson
// invoices" names lesson-invoices).
func (ev *Evidence) alertNamesBatch(name string) bool {
	if len(name) < 4 || ev.Alert == nil {
		return false
	}
	text := ev.alertText() + " " + ev.Alert.GetResourceName() + " " + ev.Alert.GetService()
	for _, m := range []map[string]string{ev.Alert.GetLabels(), ev.Alert.GetAnnotations()} {
		for _, v := range m {
			text += " " + v
		}
	}
	if containsFold(text, name) {
		return true
	}
	words := map[string]bool{}
	for _, w := range metricWords(text) {
		words[w] = true
	}
	parts := metricWords(name)
	n := 0
	for _, p := range parts {
		if len(p) < 3 {
			continue
		}
		if !words[p] {
			return false
		}
		n++
	}
	return n >= 2
}

// reReadinessAlert: the words of an alert on pods' or jobs' state.
var reReadinessAlert = regexp.MustCompile(`(?i)ready|readiness|\bphase\b|unavailable|availability|\bpods?\b|container|\bjobs?\b|kube_`)

// completedRunLines: the last lines of a completed run quoted as its own
// account of how it ended.
const completedRunLines = 3

// ---- metrics say the service is fine ----

var seasonalRe = regexp.MustCompile(`(?i)[_:]?(offset_?[0-9]*[smhdw]?|[0-9]+[dw]_?ago|last_?week|yesterday|baseline|predicted|expected|seasonal)$`)

// detectQuietMetrics: the scope's own error and latency series are flat and
// nothing else failed. A traffic change that follows its seasonal baseline,
// or a synthetic check that failed once in one location, is explained.
// quietShiftRatio: a series of the alerted service that moved this many
// times its level is no quiet service.
const quietShiftRatio = 10

func detectQuietMetrics(ev *Evidence) []Finding {
	svc := ev.alertField("service", "workload_name", "kube_deployment", "app")
	if svc == "" && ev.Alert != nil {
		svc = ev.Alert.GetService()
	}
	if svc == "" || len(ev.Series) == 0 {
		return nil
	}
	var mine, errSeries, latSeries, traffic []Series
	for _, s := range ev.Series {
		if labelOf(s.Series, "service", "app", "job", "deployment") != svc {
			continue
		}
		mine = append(mine, s)
		rs := asRate(s.Series)
		switch seriesKindOf(s.Series) {
		case "errors":
			errSeries = append(errSeries, Series{rs, s.Cite})
		case "latency":
			latSeries = append(latSeries, Series{rs, s.Cite})
		case "traffic":
			traffic = append(traffic, Series{rs, s.Cite})
		}
	}
	if len(mine) == 0 || len(errSeries)+len(latSeries)+len(traffic) == 0 {
		return nil
	}
	// Any error or latency growth is not quiet.
	var errCite, latCite Cite
	maxErr := 0.0
	for _, s := range errSeries {
		r := riseOf(s.Series)
		if failingRise("errors", r) {
			return nil
		}
		maxErr = math.Max(maxErr, r.tail)
		errCite.merge(s.Cite)
	}
	for _, s := range latSeries {
		if failingRise("latency", riseOf(s.Series)) {
			return nil
		}
		latCite.merge(s.Cite)
	}
	for _, l := range ev.Logs {
		if isErrorLog(l.LogLine) && ev.logService(l) == svc {
			return nil
		}
	}
	// Nor is a service quiet whose other measurements moved by an order
	// of magnitude (work per request, a size), or whose rates of work
	// diverged by one (its calls to a database against the requests it
	// served): what it does changed, which no rise of demand explains.
	lo, hi := math.Inf(1), 0.0
	for _, s := range mine {
		kind := seriesKindOf(s.Series)
		if kind != "" && kind != "traffic" {
			continue
		}
		r := riseOf(asRate(s.Series))
		if r.head <= 0 {
			continue
		}
		if kind == "" && r.ratio >= quietShiftRatio && r.onset != nil {
			return nil
		}
		if kind == "traffic" {
			lo, hi = math.Min(lo, r.ratio), math.Max(hi, r.ratio)
		}
	}
	if hi >= quietShiftRatio*math.Max(lo, 1) {
		return nil
	}
	ns := ev.alertField("namespace", "kube_namespace")
	if ns == "" {
		ns = labelOf(mine[0].Series, "namespace")
	}
	f := healthyFinding(ModeHealthy, deploymentEntity(ns, svc), 0.66)
	var parts []string
	if len(errSeries) > 0 {
		parts = append(parts, fmt.Sprintf("its error series stay flat (at most %s/s)", num(maxErr)))
		f.validated(fmt.Sprintf("%s of %s: no rise in errors over the window (latest %s/s)", plural(len(errSeries), "error series", "error series"), svc, num(maxErr)), errCite)
	}
	if len(latSeries) > 0 {
		parts = append(parts, "latency is unchanged")
		f.validated(fmt.Sprintf("%s of %s: no rise in latency over the window", plural(len(latSeries), "latency series", "latency series"), svc), latCite)
	}
	// A traffic change that follows its seasonal baseline.
	for _, s := range mine {
		if !seasonalRe.MatchString(s.Name) {
			continue
		}
		base := seasonalRe.ReplaceAllString(s.Name, "")
		base = strings.TrimRight(base, "_:")
		for _, c := range mine {
			if c.Name == s.Name || !strings.HasPrefix(c.Name, base) || seasonalRe.MatchString(c.Name) {
				continue
			}
			rc, rb := riseOf(c.Series), riseOf(s.Series)
			if rb.tail <= 0 || math.Abs(rc.tail/rb.tail-1) > 0.25 {
				continue
			}
			cite := c.Cite
			cite.merge(s.Cite)
			what := fmt.Sprintf("%s went from %s to %s, in line with its seasonal baseline %s (%s to %s)", c.Name, num(rc.head), num(rc.tail), s.Name, num(rb.head), num(rb.tail))
			f.validated(what, cite)
			parts = append(parts, "the traffic change follows the usual pattern: "+what)
			f.Score += 0.14
			f.explains(ModeTrafficSaturation, "traffic follows its seasonal baseline")
			break
		}
	}
	// A synthetic check: every location passes now.
	var locs []string
	var lc Cite
	failingNow := false
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		loc := labelOf(s.Series, "location", "probe_location", "region")
		if loc == "" || !containsFold(n, "synthetic", "probe_success", "check") {
			continue
		}
		locs = appendUnique(locs, loc)
		lc.merge(s.Cite)
		if s.Latest < 1 {
			failingNow = true
		}
	}
	if len(locs) >= 2 && !failingNow {
		sort.Strings(locs)
		what := fmt.Sprintf("the synthetic test passes now in all %d locations (%s)", len(locs), strings.Join(locs, ", "))
		f.validated(what, lc)
		parts = append(parts, what)
		f.Score += 0.1
		var runs []LogLine
		for _, l := range ev.Logs {
			if containsFold(l.Message, "location=", "location:") {
				runs = append(runs, l)
			}
		}
		for _, l := range representative(runs, 2) {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	f.Statement = fmt.Sprintf("No failure detected on %s: %s", svc, strings.Join(parts, "; "))
	if ev.Queried("get_deploy_history") && len(ev.Deploys) == 0 {
		f.validated("No deploy of "+svc+" in the window (deploy history queried)", Cite{PinIDs: ev.PinsOf("get_deploy_history")})
		f.Statement += "; nothing was deployed"
	}
	f.Statement += ". The alert does not reflect a fault"
	f.Chain = []string{"The alert condition was met", "The service's own errors and latency stayed normal", "No fault to remediate"}
	f.Remediation = []string{"No action needed on the service; tune the alert (seasonality, retries, multiple locations) to avoid this noise"}
	f.Signals = []string{"normal"}
	return []Finding{f}
}

// ---- high but steady memory ----

var memAlertRe = regexp.MustCompile(`(?i)memory|heap|\boom\b|working.?set`)

// quantityBytes parses a Kubernetes memory quantity ("768Mi", "2Gi", "1G").
func quantityBytes(q string) float64 {
	q = strings.TrimSpace(q)
	mult := map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
	for _, suf := range []string{"Ki", "Mi", "Gi", "Ti", "k", "K", "M", "G", "T"} {
		if strings.HasSuffix(q, suf) {
			var v float64
			if _, err := fmt.Sscanf(strings.TrimSuffix(q, suf), "%g", &v); err == nil {
				return v * mult[suf]
			}
			return 0
		}
	}
	var v float64
	if _, err := fmt.Sscanf(q, "%g", &v); err != nil {
		return 0
	}
	return v
}

// detectSteadyMemory: a memory alert on pods whose working set is high but
// flat for the whole window, with no OOM kill and no restart, is a
// threshold set too close to a plateau the runtime holds by design (a heap
// capped by its flags), not a leak.
func detectSteadyMemory(ev *Evidence) []Finding {
	if ev.Alert == nil {
		return nil
	}
	a := ev.Alert
	text := a.GetAlertName() + " " + a.GetTitle() + " " + a.GetSummary() + " " + a.GetDescription()
	for _, v := range a.GetLabels() {
		text += " " + v
	}
	for _, v := range a.GetAnnotations() {
		text += " " + v
	}
	if !memAlertRe.MatchString(text) {
		return nil
	}
	workload := ""
	if p := firstNonEmptyStr(a.GetPod(), ev.alertField("pod", "kube_pod", "pod_name")); p != "" {
		workload = workloadOfPodName(ev, p)
	}
	if workload == "" {
		return nil
	}
	var pods []Pod
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) != workload {
			continue
		}
		if podRestarts(p.Pod) > 0 || !podHealthy(p.Pod) || ev.oomSignals(p).found() {
			return nil
		}
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil
	}
	var ws []Series
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "memory") || !containsFold(n, "working_set", "usage_bytes", "rss") {
			continue
		}
		if pod := labelOf(s.Series, "pod"); pod == "" || workloadOfPodName(ev, pod) != workload {
			continue
		}
		r := riseOf(s.Series)
		if r.head <= 0 || math.Abs(r.tail/r.head-1) > 0.1 || s.Peak > 1.15*r.head {
			return nil // growing or spiking: not steady
		}
		if _, _, _, creeping := creep(s); creeping {
			return nil // a slow, steady climb is a leak in progress, not a plateau
		}
		ws = append(ws, s)
	}
	if len(ws) == 0 {
		return nil
	}
	limit := 0.0
	var flags []string
	for _, p := range pods {
		for _, c := range p.Containers {
			if l := quantityBytes(c.LimitsMemory); l > limit {
				limit = l
			}
			flags = appendUnique(flags, c.RuntimeLimits...)
		}
	}
	ns := firstNonEmptyStr(pods[0].Namespace, ev.alertNamespace())
	f := healthyFinding(ModeHealthy, deploymentEntity(ns, workload), 0.84)
	var cite Cite
	peak := 0.0
	for _, s := range ws {
		cite.merge(s.Cite)
		peak = math.Max(peak, s.Peak)
	}
	what := fmt.Sprintf("the working set of %s stays flat at about %s", workload, bytesHuman(peak))
	if limit > 0 {
		what += fmt.Sprintf(" of its %s limit (%s)", bytesHuman(limit), pct(100*peak/limit))
	}
	what += " for the whole window"
	f.validated(fmt.Sprintf("%s: %s", plural(len(ws), "memory series", "memory series"), what), cite)
	f.validated(fmt.Sprintf("Pods %s: Running and Ready, 0 restarts, no OOM kill", joinNames(podNames(pods))), citesOfPods(pods))
	f.Statement = "No failure: " + what + ", with 0 restarts and no OOM kill"
	if len(flags) > 0 {
		f.validated(fmt.Sprintf("The runtime caps its own memory: %s", strings.Join(flags, " ")), citesOfPods(pods))
		f.Statement += fmt.Sprintf("; the runtime caps its memory itself (%s), so usage plateaus below the limit by design", strings.Join(flags, " "))
	}
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if strings.Contains(n, "gc") && strings.Contains(n, "pause") && labelOf(s.Series, "pod") != "" && workloadOfPodName(ev, labelOf(s.Series, "pod")) == workload {
			f.validated(fmt.Sprintf("%s shows regular garbage collection (%s)", s.Name, labelSuffix(s.Series, "gc")), s.Cite)
			break
		}
	}
	f.Statement += ". The memory alert's threshold sits below a steady plateau; it is not a leak"
	f.Chain = []string{"The runtime sizes its memory from its flags", "The working set settles at a steady plateau near the limit", "A memory alert with a threshold below the plateau fires"}
	f.Remediation = []string{"No action on the workload; alert on growth (or on OOM kills) instead of a fixed share of the limit"}
	f.Signals = []string{"steady", "memory"}
	f.explains(ModeOOMKilled, "no container was OOM-killed: usage is flat")
	return []Finding{f}
}

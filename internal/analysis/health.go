package analysis

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// Health and recovery detectors. A healthy verdict needs positive evidence
// (pods Ready, no current warnings, metrics normal or recovered); absence of
// data is "unknown", never healthy.

func healthyFinding(mode, entity string, score float64) Finding {
	return Finding{Mode: mode, Category: catHealthy, Entity: entity, Score: score, Healthy: true}
}

func (ev *Evidence) workloadEntity() string {
	w := ev.alertField("workload_name", "kube_deployment", "deployment")
	ns := ev.alertField("namespace", "kube_namespace")
	if ns == "" && ev.Alert != nil {
		ns = ev.Alert.GetNamespace()
	}
	if w == "" && ev.Alert != nil {
		// The alerted pod's own workload, when the pod is in evidence,
		// names the culprit better than a team-level service label.
		if pod := firstNonEmptyStr(ev.Alert.GetPod(), ev.alertField("pod", "kube_pod", "pod_name")); pod != "" {
			for _, p := range ev.Pods {
				if p.Name == pod {
					if wl := ev.workloadOf(p.Pod); wl != "" {
						return deploymentEntity(firstNonEmptyStr(p.Namespace, ns), wl)
					}
				}
			}
		}
	}
	if w == "" {
		w = ev.alertField("service")
	}
	if r := ev.Alert.GetResourceName(); w != "" && r != "" && r != w && !ev.knownWorkload(w) && ev.knownWorkload(r) {
		// A service label that names a platform or a team (Alerta's
		// service list), with the workload the evidence shows named as
		// the alert's resource.
		w = r
	}
	if w == "" && len(ev.Deployments) == 1 {
		w, ns = ev.Deployments[0].Name, ev.Deployments[0].Namespace
	}
	if w == "" && ev.Alert != nil {
		w = ev.Alert.GetService()
	}
	if w == "" {
		return ""
	}
	return deploymentEntity(ns, w)
}

// knownWorkload: a Deployment of that name, or a pod of a workload of that
// name, is in the evidence.
func (ev *Evidence) knownWorkload(name string) bool {
	for _, d := range ev.Deployments {
		if d.Name == name {
			return true
		}
	}
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) == name {
			return true
		}
	}
	return false
}

// monitorsOK adds a claim when every monitor is OK; it reports whether all
// queried monitors are OK (false when none were queried).
func (ev *Evidence) monitorsOK(f *Finding) bool {
	if len(ev.Monitors) == 0 {
		return false
	}
	var names []string
	var c Cite
	for _, m := range ev.Monitors {
		if !strings.EqualFold(m.State, "OK") {
			return false
		}
		names = append(names, fmt.Sprintf("%q", m.Name))
		c.merge(m.Cite)
	}
	f.validated(fmt.Sprintf("All %d monitors are OK: %s", len(ev.Monitors), strings.Join(names, ", ")), c)
	return true
}

func (ev *Evidence) recentWarnings() []Event {
	var out []Event
	for _, e := range ev.WarningEvents() {
		if ev.recent(lastEventTime([]Event{e}), recentWindow) {
			out = append(out, e)
		}
	}
	return out
}

func (ev *Evidence) allPodsHealthy() bool {
	if len(ev.Pods) == 0 {
		return false
	}
	for _, p := range ev.Pods {
		if _, sup := ev.superseded(p); sup {
			continue
		}
		if !podHealthy(p.Pod) {
			return false
		}
	}
	return true
}

func (ev *Evidence) nodesReady() (bool, int) {
	for _, n := range ev.Nodes {
		if nodeReadyStatus(n.Node) != "True" || len(nodePressures(n.Node)) > 0 {
			return false, len(ev.Nodes)
		}
	}
	return true, len(ev.Nodes)
}

func (ev *Evidence) errorLogs() []LogLine {
	var out []LogLine
	for _, l := range ev.Logs {
		if isErrorLog(l.LogLine) {
			out = append(out, l)
		}
	}
	return out
}

// podsSummary is a validated claim on the current pod state.
func (ev *Evidence) podsSummary(f *Finding) {
	var ready []string
	for _, p := range ev.Pods {
		if podHealthy(p.Pod) {
			ready = append(ready, fmt.Sprintf("%s (restarts %d)", p.Name, podRestarts(p.Pod)))
		}
	}
	if len(ready) > 0 {
		f.validated(fmt.Sprintf("%d of %d pods are currently Running and Ready: %s", len(ready), len(ev.Pods), strings.Join(ready, ", ")), citesOfPods(ev.Pods))
	}
}

func (ev *Evidence) deploymentsSummary(f *Finding) bool {
	ok := len(ev.Deployments) > 0
	for _, d := range ev.Deployments {
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d available, %d unavailable replicas", d.Name, d.Replicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas), d.Cite)
		if d.ReadyReplicas < d.Replicas || d.UnavailableReplicas > 0 {
			ok = false
		}
	}
	return ok
}

func (ev *Evidence) nodesSummary(f *Finding) {
	if len(ev.Nodes) == 0 {
		return
	}
	ok, n := ev.nodesReady()
	var c Cite
	for _, x := range ev.Nodes {
		c.merge(x.Cite)
	}
	if ok {
		f.validated(fmt.Sprintf("All %d nodes are currently Ready with no memory/disk/PID pressure", n), c)
	}
}

// ---- restarts that recovered ----

func detectRestartRecovered(ev *Evidence) []Finding {
	if !ev.allPodsHealthy() || len(ev.recentWarnings()) > 0 {
		return nil
	}
	var restarted []Pod
	for _, p := range ev.Pods {
		if podRestarts(p.Pod) > 0 {
			restarted = append(restarted, p)
		}
	}
	if len(restarted) == 0 {
		return nil
	}
	if correlatedCrash(restarted, len(ev.Pods)) {
		// Every replica went down in the same minute: a common cause (a
		// input, a clock, a dependency, a defect every copy shares), not
		// one pod's transient hiccup. Recovery does not make it healthy.
		return nil
	}
	f := healthyFinding(ModeRecovered, ev.workloadEntity(), 0.85)
	var parts []string
	for _, p := range restarted {
		evs := ev.EventsFor("Pod", p.Name)
		last := lastEventTime(evs)
		s := fmt.Sprintf("pod %s restarted %s", p.Name, plural(int(podRestarts(p.Pod)), "time", "times"))
		if last != nil {
			s += fmt.Sprintf(" (last restart event at %s, %s before the latest evidence)", hhmm(last), durHuman(ev.Now.Sub(*last)))
		}
		s += " and has been Running and Ready since; it is not currently restarting"
		parts = append(parts, s)
		f.validated(fmt.Sprintf("Pod %s: restart_count=%d, currently Running and Ready", p.Name, podRestarts(p.Pod)), p.Cite)
		for _, e := range evs {
			f.validated(fmt.Sprintf("Historical Warning event %s (last seen %s)", eventLine(e), hhmm(e.LastSeen)), e.Cite)
		}
		// What the container said before it restarted.
		var before []LogLine
		for _, l := range ev.LogsFor(p.Name) {
			lv := logLevel(l.LogLine)
			if lv != "WARN" && lv != "ERROR" && lv != "FATAL" {
				continue
			}
			if last != nil && l.Timestamp != nil && (l.Timestamp.After(last.Add(time.Minute)) || l.Timestamp.Before(last.Add(-30*time.Minute))) {
				continue
			}
			before = append(before, l)
		}
		for _, l := range representative(before, 2) {
			f.validated(fmt.Sprintf("Before the restart, %s logged (%s, %s): %s", p.Name, l.Cite.Source("logs"), logLevel(l.LogLine), quote(l.Message)), citesOfLogs(sameSig(before, l)))
		}
	}
	var clean []Pod
	for _, p := range ev.Pods {
		if podRestarts(p.Pod) == 0 && podHealthy(p.Pod) {
			clean = append(clean, p)
		}
	}
	f.Statement = "No active failure: " + strings.Join(parts, "; ")
	if len(clean) > 0 {
		f.Statement += fmt.Sprintf("; the other replicas (%s) have 0 restarts", joinNames(podNames(clean)))
		f.validated(fmt.Sprintf("Pods %s are Running and Ready with 0 restarts", joinNames(podNames(clean))), citesOfPods(clean))
	}
	if ev.monitorsOK(&f) {
		f.Statement += "; all monitors are OK"
	}
	f.Statement += ". The alert reflects a single transient restart that has self-resolved"
	for _, l := range ev.Logs {
		if containsFold(l.Message, "no further restart", "healthy", "started cleanly") {
			f.validated(fmt.Sprintf("%s log: %s", l.Cite.Source("logs"), quote(l.Message)), l.Cite)
		}
	}
	f.inferred("The restart was transient (a brief hiccup); nothing indicates it will recur")
	f.Chain = []string{"A container restarted once, long before the alert was evaluated", "It has been Running and Ready since", "A low-threshold restart alert fired on the historical restart"}
	f.Remediation = []string{"No action needed on the workload; tune the restart alert to require repeated restarts in a short window"}
	f.Signals = []string{"restart", "recovered"}
	return []Finding{f}
}

// correlatedCrash: two or more pods, every pod of the evidence, whose
// containers last terminated within two minutes of each other, with an
// error exit (not a graceful stop).
func correlatedCrash(restarted []Pod, total int) bool {
	if len(restarted) < 2 || len(restarted) < total {
		return false
	}
	var first, last time.Time
	for _, p := range restarted {
		var at *time.Time
		crashed := false
		for _, c := range p.Containers {
			if c.LastFinishedAt != nil && (at == nil || c.LastFinishedAt.After(*at)) {
				at = c.LastFinishedAt
				crashed = c.LastExitCode != nil && *c.LastExitCode != 0 && *c.LastExitCode != 143
			}
		}
		if at == nil || !crashed {
			return false
		}
		if first.IsZero() || at.Before(first) {
			first = *at
		}
		if at.After(last) {
			last = *at
		}
	}
	return last.Sub(first) <= 2*time.Minute
}

// ---- an old ReplicaSet's pod behind the alert ----

func detectOldRollout(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		if podHealthy(p.Pod) {
			continue
		}
		current, ok := ev.superseded(p)
		if !ok {
			continue
		}
		w := ev.workloadOf(p.Pod)
		d, _ := ev.deploymentFor(p.Namespace, w)
		var cur []Pod
		for _, o := range ev.Pods {
			if replicaSetOf(o.Pod) == current {
				cur = append(cur, o)
			}
		}
		terminating := podTerminating(p.Pod)
		var related []LogLine
		for _, l := range ev.Logs {
			if containsFold(l.Message, "rollout", p.Name) {
				related = append(related, l)
				if containsFold(l.Message, "terminat", "graceful shutdown") && containsFold(l.Message, p.Name) {
					terminating = true
				}
			}
		}
		for _, e := range ev.EventsFor("Pod", p.Name) {
			if containsFold(e.Message, "terminating") {
				terminating = true
			}
		}
		_, reason := waitingReason(p.Pod)
		f := healthyFinding(ModeRecovered, deploymentEntity(p.Namespace, w), 0.85)
		state := "terminating"
		if !terminating {
			state = "being scaled down"
		}
		f.Statement = fmt.Sprintf("No active workload failure: pod %s (%s, not Ready) belongs to the old ReplicaSet %s, which is %s after a completed rollout; the current ReplicaSet %s has %d pods Running and Ready and deployment %s reports %d desired, %d ready, %d available — the alert is not a current failure of the workload",
			p.Name, reason, replicaSetOf(p.Pod), state, current, len(cur), w, d.Replicas, d.ReadyReplicas, d.AvailableReplicas)
		f.validated(fmt.Sprintf("Pod %s of ReplicaSet %s: phase %s, %s, restart_count=%d, started %s (older than the current ReplicaSet's pods)", p.Name, replicaSetOf(p.Pod), p.Phase, reason, podRestarts(p.Pod), hhmm(p.StartTime)), p.Cite)
		f.validated(fmt.Sprintf("Pods of the current ReplicaSet %s (%s) are Running and Ready with 0 restarts", current, joinNames(podNames(cur))), citesOfPods(cur))
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d available, %d unavailable replicas", d.Name, d.Replicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas), d.Cite)
		for _, e := range ev.EventsFor("Pod", p.Name) {
			f.validated("Warning event on the old pod: "+eventLine(e), e.Cite)
		}
		for _, l := range related {
			f.validated(fmt.Sprintf("%s log: %s", l.Cite.Source("logs"), quote(l.Message)), l.Cite)
		}
		ev.monitorsOK(&f)
		f.inferred("The alert rule matches pods by deployment label without excluding pods of old ReplicaSets that are being torn down")
		f.Chain = []string{"A rollout replaced ReplicaSet " + replicaSetOf(p.Pod) + " with " + current, "The old pod is " + state + " and shows a restart/back-off state while it shuts down", "The alert picked up the old pod; the workload itself is healthy"}
		f.Remediation = []string{"No action needed on the workload; exclude terminating/old-ReplicaSet pods from the alert query"}
		f.Signals = []string{"ReplicaSet", "rollout", "terminating"}
		out = append(out, f)
	}
	return out
}

// ---- a rollout that failed and was rolled back ----

var rollbackWords = []string{"rollback", "rolled back", "roll back", "rollout undo"}

func detectRolloutRecovered(ev *Evidence) []Finding {
	var out []Finding
	for _, d := range ev.Deployments {
		if d.Replicas == 0 || d.ReadyReplicas < d.Replicas || d.UnavailableReplicas > 0 {
			continue
		}
		var deadline []Event
		for _, e := range ev.Events {
			if (e.Reason == "ProgressDeadlineExceeded" || containsFold(e.Message, "progress deadline")) && (e.InvolvedName == d.Name || strings.Contains(e.Message, d.Name)) {
				deadline = append(deadline, e)
			}
		}
		if len(deadline) == 0 {
			continue
		}
		var rb []LogLine
		for _, l := range ev.Logs {
			if containsFold(l.Message, rollbackWords...) {
				rb = append(rb, l)
			}
		}
		rbEvents := []Event{}
		for _, e := range ev.Events {
			if e.Reason == "DeploymentRollback" || containsFold(e.Message, rollbackWords...) {
				rbEvents = append(rbEvents, e)
			}
		}
		f := healthyFinding(ModeRecovered, deploymentEntity(d.Namespace, d.Name), 0.85)
		how := "has since recovered"
		if len(rb)+len(rbEvents) > 0 {
			how = "was rolled back"
			if len(rb) > 0 {
				how += fmt.Sprintf(" (%s at %s)", quote(rb[0].Message), hhmm(rb[0].Timestamp))
			}
		}
		f.Statement = fmt.Sprintf("No active failure: the rollout of deployment %s exceeded its progress deadline at %s and %s; the deployment now reports %d desired, %d ready, %d available, %d unavailable — it is not currently stuck",
			d.Name, hhmm(firstEventTime(deadline)), how, d.Replicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas)
		for _, e := range deadline {
			f.validated(fmt.Sprintf("Historical event %s (at %s)", eventLine(e), hhmm(e.LastSeen)), e.Cite)
		}
		for _, l := range rb {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
		for _, e := range rbEvents {
			f.validated("Event "+eventLine(e), e.Cite)
		}
		f.validated(fmt.Sprintf("Deployment %s reports %d desired, %d ready, %d available, %d unavailable replicas", d.Name, d.Replicas, d.ReadyReplicas, d.AvailableReplicas, d.UnavailableReplicas), d.Cite)
		if ev.allPodsHealthy() {
			ev.podsSummary(&f)
		}
		ev.monitorsOK(&f)
		f.inferred("The failed revision should be investigated separately, but production is no longer affected")
		f.Chain = []string{"A new revision was rolled out and did not become available", "ProgressDeadlineExceeded fired", "The deployment was rolled back to the previous revision", "The previous revision serves all replicas; the alert reflects the historical event"}
		f.Remediation = []string{"No production action needed; debug the failed revision before re-deploying", "Make the alert re-check the deployment's current availability"}
		f.Signals = []string{"rolled back", "ProgressDeadlineExceeded"}
		out = append(out, f)
	}
	return out
}

// ---- a Pending pod that got scheduled ----

func detectPendingRecovered(ev *Evidence) []Finding {
	var out []Finding
	for _, p := range ev.Pods {
		evs := ev.schedulingEvents(p.Name)
		if len(evs) == 0 || !podHealthy(p.Pod) {
			continue
		}
		f := healthyFinding(ModeRecovered, podEntity(p.Pod), 0.85)
		var scale, assigned []LogLine
		for _, l := range ev.Logs {
			if containsFold(l.Message, "autoscal", "scale-up", "scale up") {
				scale = append(scale, l)
			}
			if containsFold(l.Message, p.Name) && containsFold(l.Message, "assigned", "scheduled") {
				assigned = append(assigned, l)
			}
		}
		how := "capacity became available"
		if len(scale) > 0 {
			how = fmt.Sprintf("the cluster autoscaler added capacity (%s at %s)", quote(scale[0].Message), hhmm(scale[0].Timestamp))
		}
		f.Statement = fmt.Sprintf("No active failure: pod %s was Pending at %s (%s); %s and the pod was scheduled onto node %s; it is now Running and Ready with %s — capacity is not insufficient any more",
			p.Name, hhmm(firstEventTime(evs)), quote(evs[0].Message), how, p.Node, plural(int(podRestarts(p.Pod)), "restart", "restarts"))
		for _, e := range evs {
			f.validated(fmt.Sprintf("Historical event %s (at %s)", eventLine(e), hhmm(e.LastSeen)), e.Cite)
		}
		for _, l := range append(scale, assigned...) {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
		f.validated(fmt.Sprintf("Pod %s: phase %s, Ready, node %s, started %s", p.Name, p.Phase, p.Node, hhmm(p.StartTime)), p.Cite)
		for _, n := range ev.Nodes {
			if n.Name == p.Node {
				f.validated(fmt.Sprintf("Node %s is Ready with allocatable cpu %s, memory %s", n.Name, n.Allocatable["cpu"], n.Allocatable["memory"]), n.Cite)
			}
		}
		ev.nodesSummary(&f)
		ev.monitorsOK(&f)
		f.inferred("The scheduling pressure was transient; it may recur at the next traffic peak without pre-provisioned capacity")
		f.Chain = []string{"A new replica did not fit on the existing nodes (FailedScheduling)", "Capacity was added (" + how + ")", "The pod was scheduled and became Ready; the alert reflects the historical Pending state"}
		f.Remediation = []string{"No action needed; consider headroom or over-provisioning if scale-ups are frequent", "Make the alert re-check the pod's current phase"}
		f.Signals = []string{"autoscaler", "recovered"}
		out = append(out, f)
	}
	return out
}

// ---- a node flap and the warning burst it produced ----

func detectNodeFlap(ev *Evidence) []Finding {
	var nodeEvents []Event
	for _, e := range ev.Events {
		// A node that went NotReady, or rebooted (the kubelet's Rebooted
		// event after a reboot daemon's drain and restart), and is back.
		if e.Reason == "NodeNotReady" || e.Reason == "Rebooted" || (strings.EqualFold(e.InvolvedKind, "Node") && containsFold(e.Message, "NotReady", "has been rebooted")) {
			nodeEvents = append(nodeEvents, e)
		}
	}
	if len(nodeEvents) == 0 || len(ev.Nodes) == 0 {
		return nil
	}
	ok, n := ev.nodesReady()
	if !ok || !ev.allPodsHealthy() {
		return nil
	}
	node := nodeEvents[0].InvolvedName
	warnings := ev.WarningEvents()
	start, end := firstEventTime(warnings), lastEventTime(warnings)
	window := time.Duration(0)
	if start != nil && end != nil {
		window = end.Sub(*start)
	}
	if window > 30*time.Minute {
		return nil // not a short burst
	}
	f := healthyFinding(ModeRecovered, "node/"+node, 0.85)
	var reasons []string
	for _, e := range warnings {
		reasons = appendUnique(reasons, e.Reason)
		f.validated(fmt.Sprintf("Warning event %s (%s-%s)", eventLine(e), hhmm(e.FirstSeen), hhmm(e.LastSeen)), e.Cite)
	}
	var recoveredLogs []LogLine
	for _, l := range ev.Logs {
		if containsFold(l.Message, "recovered", "returned to ready", "heartbeat restored", "now ready") {
			recoveredLogs = append(recoveredLogs, l)
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
		}
	}
	what := "went NotReady briefly"
	if nodeEvents[0].Reason == "Rebooted" || containsFold(nodeEvents[0].Message, "has been rebooted") {
		what = "rebooted"
	}
	f.Statement = fmt.Sprintf("No active failure: node %s "+what+" at %s (a short node flap) and recovered; the burst of Warning events (%s) all fall within %s-%s (%s); the node is currently Ready, all %d nodes have no pressure and all %d pods are Running and Ready — a transient event, not a real failure",
		node, hhmm(firstEventTime(nodeEvents)), strings.Join(reasons, ", "), hhmm(start), hhmm(end), durHuman(window), n, len(ev.Pods))
	ev.nodesSummary(&f)
	ev.podsSummary(&f)
	ev.monitorsOK(&f)
	f.inferred("A brief kubelet-to-control-plane interruption made the node flap; the pod warnings are secondary effects of that window")
	f.Chain = []string{"Node " + shortNode(node) + " missed heartbeats for a few seconds (NotReady flap)", "Kubelet emitted secondary BackOff/Unhealthy warnings for pods on that node", "The node and the pods recovered on their own", "An event-burst alert aggregated the warnings"}
	f.Remediation = []string{"No action needed; require sustained warning activity in the burst alert", "Check the node's network/kubelet logs if flaps recur"}
	f.Signals = []string{"flap", "recovered", "transient"}
	return []Finding{f}
}

// ---- Kubernetes workload healthy ----

// unobservedHealthyShare: a healthy reading rests on two observations, the
// workload's state and the alert's own signal; when the signal was never
// observed, only one of the two supports it, and its confidence is that
// share of a full reading's (the gates' owners decide what it means).
const unobservedHealthyShare = 0.5

// plannedHealthyShare: a healthy reading whose alerted signal was not
// observed, explained by a record of planned work on its target, keeps
// this share of a full reading's confidence.
const plannedHealthyShare = 0.85

// reApproval: the words of a record that plans or approves work, as
// change calendars and tickets write them.
var reApproval = regexp.MustCompile(`(?i)\b(?:approved|scheduled|announced|planned)\b`)

// plannedRecord is the record of planned work on the alert's target made
// before the alert: a context line (it names the target, contextLines)
// that carries a record id and the words of a plan or an approval.
func (ev *Evidence) plannedRecord() (LogLine, bool) {
	at := ev.alertTime()
	if at == nil {
		return LogLine{}, false
	}
	for _, l := range ev.contextLines(*at) {
		if l.Timestamp != nil && !l.Timestamp.After(*at) && reRecordID.MatchString(l.Message) && (reApproval.MatchString(l.Message) || plannedRe.MatchString(l.Message)) {
			return l, true
		}
	}
	return LogLine{}, false
}

// stateFailing: a state that is not healthy whatever the logs and pods
// say: a resource that keeps running out, a node not Ready, another
// monitor failing (the alert's own rule, as its payload describes it, is
// the alert's state at delivery and says nothing of the condition now), a
// deployment short of replicas.
func (ev *Evidence) stateFailing() bool {
	if _, _, ok := ev.runningOut(); ok {
		return true
	}
	if ok, _ := ev.nodesReady(); !ok {
		return true
	}
	for _, m := range ev.Monitors {
		if !strings.EqualFold(m.State, "OK") && !m.FromAlert {
			return true
		}
	}
	for _, d := range ev.Deployments {
		if d.ReadyReplicas < d.Replicas || d.UnavailableReplicas > 0 {
			return true
		}
	}
	return false
}

func detectK8sHealthy(ev *Evidence) []Finding {
	if len(ev.Pods) == 0 || !ev.allPodsHealthy() {
		return nil
	}
	for _, p := range ev.Pods {
		if podRestarts(p.Pod) > 0 {
			return nil // restart_recovered owns this
		}
	}
	if len(ev.errorLogs()) > 0 || len(ev.persistentWarnings()) > 0 {
		return nil // an error, or a warning that keeps coming: something still fails
	}
	if ev.stateFailing() {
		return nil
	}
	for _, l := range ev.Logs {
		if logLevel(l.LogLine) == "WARN" && reInvalidValue.MatchString(l.Message) {
			return nil // warnings that values are impossible: the data is failing, whatever the pods say
		}
	}
	for _, n := range ev.Nodes {
		if n.Unschedulable && ev.namedByAlert([]string{n.Name}) {
			return nil // the node the alert is about is still cordoned: its condition holds
		}
	}
	ent := ev.workloadEntity()
	f := healthyFinding(ModeHealthy, ent, 0.7)
	var parts []string
	kinds := ev.alertSymptoms()
	unobserved := len(kinds) > 0 && len(ev.alertedSeries(kinds)) == 0
	if _, holds, measured := ev.alertExprHeld(); measured && !holds {
		unobserved = false // the alert's own expression, measured, no longer holds
	}
	if recent := ev.recentWarnings(); len(recent) > 0 {
		// A warning burst that left no trace: every pod Ready with 0
		// restarts and every node Ready. Weaker than a clean bill.
		f.Score = 0.62
		var reasons []string
		for _, e := range recent {
			reasons = appendUnique(reasons, e.Reason)
			f.validated("Warning event "+eventLine(e), e.Cite)
		}
		parts = append(parts, fmt.Sprintf("the %s (%s) between %s and %s left no lasting effect — transient, not a current failure",
			plural(len(recent), "recent Warning event", "recent Warning events"), strings.Join(reasons, ", "), hhmm(firstEventTime(recent)), hhmm(lastEventTime(recent))))
	}
	parts = append(parts, fmt.Sprintf("all %d pods are Running and Ready with 0 restarts", len(ev.Pods)))
	f.validated(fmt.Sprintf("All %d pods (%s) are Running and Ready with 0 restarts", len(ev.Pods), joinNames(podNames(ev.Pods))), citesOfPods(ev.Pods))
	if ev.deploymentsSummary(&f) {
		parts = append(parts, "the deployment has all desired replicas available")
		f.Score += 0.03
	}
	if len(ev.Nodes) > 0 {
		ev.nodesSummary(&f)
		parts = append(parts, fmt.Sprintf("all %d nodes are Ready with no pressure", len(ev.Nodes)))
		f.Score += 0.03
	}
	if ev.Queried("get_events") && len(ev.recentWarnings()) == 0 {
		if len(ev.WarningEvents()) == 0 {
			parts = append(parts, "there are no Warning events")
			f.validated("No Warning events were found", Cite{PinIDs: ev.PinsOf("get_events")})
		} else {
			parts = append(parts, "the only Warning events are old")
		}
	}
	if ev.monitorsOK(&f) {
		parts = append(parts, fmt.Sprintf("all %d monitors are OK", len(ev.Monitors)))
		f.Score += 0.03
	}
	if len(ev.Logs) > 0 {
		parts = append(parts, "logs show no errors")
		f.validated(fmt.Sprintf("%d log lines, none at ERROR level", len(ev.Logs)), citesOfLogs(ev.Logs))
	}
	name := strings.Trim(strings.TrimPrefix(ent, "deployment/"), "/")
	if name == "" {
		name = "the alert's target"
		if ev.Alert != nil && ev.Alert.GetAlertName() != "" {
			name = "the target of " + quote(ev.Alert.GetAlertName())
		}
	}
	f.Statement = fmt.Sprintf("No failure detected: %s is operating within normal parameters — %s. No anomaly detected", name, strings.Join(parts, ", "))
	planned, hasPlan := ev.plannedRecord()
	if unobserved && hasPlan {
		// The alert's signal was not observed, but a record of planned,
		// approved work on the alert's own target, made before the alert,
		// says why it fires (a replica still syncing, a volume being
		// migrated): the workload's state and the plan are two
		// observations.
		unobserved = false
		f.Score *= plannedHealthyShare
		f.validated(fmt.Sprintf("Planned work on the alert's target, %s log (%s, %s): %s", planned.Cite.Source("logs"), logOrigin(planned), hhmm(planned.Timestamp), quote(planned.Message)), planned.Cite)
		parts = append(parts, "and a record of planned work names the alert's target: "+quote(clip(planned.Message, 200))+" at "+hhmm(planned.Timestamp))
	}
	if unobserved {
		// The alert measures something (errors, latency, saturation) and no
		// series of it is in the evidence: healthy pods and nodes do not
		// show that its condition is gone. Below the gate: a human looks.
		f.Score *= unobservedHealthyShare
		f.inferred("The alert's own signal was not found in the evidence; healthy pods and nodes do not establish that its condition cleared")
		f.Statement += "; but the alert's own signal was not observed, so this is not a clean bill of health"
		f.Category = catUnknown // no verdict of health without the alerted signal
	}
	f.Chain = []string{"No active causal chain: all signals are normal"}
	f.Remediation = []string{"No action needed"}
	f.Signals = []string{"normal"}
	return []Finding{f}
}

// ---- managed database healthy / recovered ----

func detectStorageRecovered(ev *Evidence) []Finding {
	v := ev.db()
	st := v.change("FreeStorageSpace")
	top := math.Max(st.head, st.peak)
	if !st.ok || top <= 0 || st.min > 0.2*top || st.s.Latest < 0.5*top {
		return nil
	}
	rec := v.storageRecovery()
	f := healthyFinding(ModeRecovered, v.entity(), 0.75)
	if len(rec) > 0 {
		f.Score = 0.88
	}
	how := "storage was added"
	if len(rec) > 0 {
		how = "storage autoscaling expanded the volume (" + quote(rec[len(rec)-1].Message) + ")"
	}
	f.Statement = fmt.Sprintf("No active failure on %s: FreeStorageSpace dropped from %s to %s and has recovered to %s after %s",
		v.instance, bytesHuman(st.head), bytesHuman(st.min), bytesHuman(st.s.Latest), how)
	f.validated(fmt.Sprintf("CloudWatch FreeStorageSpace fell from %s to a minimum of %s and recovered to %s", bytesHuman(st.head), bytesHuman(st.min), bytesHuman(st.s.Latest)), st.s.Cite)
	for _, e := range v.events {
		f.validated(dbEventLine(e), e.Cite)
	}
	if wl := v.change("WriteLatency"); wl.ok && wl.peak > 3*math.Max(wl.head, 0.001) {
		s := fmt.Sprintf("WriteLatency peaked at %s during the dip and is back to %s (baseline %s)", num(wl.peak), num(wl.s.Latest), num(wl.head))
		f.Statement += "; " + s
		f.validated("CloudWatch "+s, wl.s.Cite)
	}
	f.Statement += "; the alert fired during the dip and the storage has recovered to a safe level"
	f.inferred("The write burst that consumed the storage may recur; autoscaling headroom should be checked")
	f.Chain = []string{"A write burst consumed free storage", "Storage autoscaling expanded the volume", "FreeStorageSpace and write latency recovered; no active failure remains"}
	f.Remediation = []string{"No immediate action; review the storage autoscaling maximum and the write burst that triggered it"}
	f.Signals = []string{"recovered", "autoscaling"}
	return []Finding{f}
}

func detectDBHealthy(ev *Evidence) []Finding {
	v := ev.db()
	if len(v.series) == 0 {
		return nil
	}
	cpu := v.change("CPUUtilization")
	if cpu.ok && (cpu.tail >= 80 || cpu.peak >= 90) {
		return nil
	}
	if lag := v.change("ReplicaLag"); lag.ok && lag.peak >= 60 {
		return nil
	}
	if st := v.change("FreeStorageSpace"); st.ok && st.min <= 0.2*math.Max(st.head, st.peak) {
		return nil
	}
	conns := v.change("DatabaseConnections")
	if max, _ := v.maxConnections(); max > 0 && conns.ok && conns.peak >= 0.8*max {
		return nil
	}
	var failures []DBEvent
	for _, e := range v.events {
		bad := containsFold(e.Message, "fail", "error", "ran out", "critically", "refused", "lag", "behind")
		for _, c := range e.Categories {
			if strings.EqualFold(c, "failure") || strings.EqualFold(c, "failover") || strings.EqualFold(c, "low storage") {
				bad = true
			}
		}
		if bad && v.current([]DBEvent{e}, ev) {
			failures = append(failures, e)
		}
	}
	if len(failures) > 0 {
		return nil
	}
	// Any other database fault signature vetoes health.
	for _, other := range []func(*Evidence) []Finding{detectDBMemory, detectDBIO, detectXIDWraparound, detectLockContention, detectCheckpointStorm, detectConnectionExhaustion, detectStorage, detectReplicationLag} {
		if len(other(ev)) > 0 {
			return nil
		}
	}
	f := healthyFinding(ModeHealthy, v.entity(), 0.72)
	var parts []string
	for _, name := range []string{"CPUUtilization", "DatabaseConnections", "FreeStorageSpace", "ReplicaLag", "WriteLatency", "ReadLatency"} {
		c := v.change(name)
		if !c.ok {
			continue
		}
		lo, hi := c.min, c.peak
		var s string
		switch name {
		case "CPUUtilization":
			s = fmt.Sprintf("CPU between %s and %s", pct(lo), pct(hi))
		case "FreeStorageSpace":
			s = fmt.Sprintf("FreeStorageSpace steady at %s", bytesHuman(c.s.Latest))
		case "ReplicaLag":
			s = fmt.Sprintf("ReplicaLag at most %s s", num(hi))
		default:
			s = fmt.Sprintf("%s between %s and %s", name, num(lo), num(hi))
		}
		parts = append(parts, s)
		f.validated("CloudWatch "+s, c.s.Cite)
	}
	if len(v.events) > 0 {
		var msgs []string
		for _, e := range v.events {
			msgs = append(msgs, quote(e.Message))
			f.validated(dbEventLine(e), e.Cite)
		}
		parts = append(parts, "RDS events show no error or failure (only "+strings.Join(msgs, ", ")+")")
	} else if ev.Queried("get_db_events") {
		parts = append(parts, "there are no RDS events, no error or failure")
	}
	if len(v.tops) > 0 {
		parts = append(parts, fmt.Sprintf("Performance Insights shows routine load (top SQL %s AAS, waits %s)", num(v.tops[0].Load), v.dominantWaits(2)))
		f.validated("Performance Insights top SQL: "+v.describeQuery(v.tops[0]), v.tops[0].Cite)
	}
	if len(f.Validated) == 0 {
		return nil // nothing positive to show
	}
	if cpu.ok && cpu.peak-cpu.min >= 20 {
		parts = append(parts, fmt.Sprintf("CPU oscillates with the traffic but stays well below its limits (peak %s)", pct(cpu.peak)))
	}
	f.Statement = fmt.Sprintf("No failure detected on %s: all metrics stay within normal bounds — %s", v.instance, strings.Join(parts, "; "))
	f.Chain = []string{"No active causal chain: metrics within normal bounds, no error events"}
	f.Remediation = []string{"No action needed; tune the alert threshold if it fires on normal load"}
	f.Signals = []string{"normal bounds"}
	return []Finding{f}
}

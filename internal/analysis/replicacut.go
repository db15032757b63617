package analysis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A replica cut is a row of the change ledger read from what the cluster
// recorded, not from who made it: a workload's replica count lowered to
// half or less in one step (a scale command on the wrong target, a
// manifest or an autoscaler's parameters that set a lower count). Its kind
// is capacity, the workload its entity. In the cause-to-effect table a cut
// before the onset explains the saturation that follows (queues full,
// throttling, latency) as its effect: the category is the change's
// (configuration), unless demand rose.

// reScaledDown: the deployment controller's event when it scales a
// ReplicaSet down, with the counts in either order (Kubernetes wrote "to N
// from M" before 1.28 and "from M to N" since).
var reScaledDown = regexp.MustCompile(`(?i)\bscaled down replica set (\S+) (?:to (\d+) from (\d+)|from (\d+) to (\d+))`)

// cutRatio: a count lowered to this share of what it was, or less, in one
// step is a cut; a rolling update steps down by its surge, a rollout's old
// ReplicaSet ends at zero.
const cutRatio = 0.5

// minCutFrom: a cut needs at least this many replicas before it.
const minCutFrom = 3

// isCut reports whether a count going from before to after is a cut; to
// zero only when toZero (a workload's desired count, or a ReplicaSet no
// rollout replaced).
func isCut(before, after float64, toZero bool) bool {
	if after < 1 {
		return toZero && before >= 1 && after == 0
	}
	return before >= minCutFrom && after <= cutRatio*before
}

// scaledUpBeside reports whether the deployment controller scaled up
// another ReplicaSet of workload within rolloutBeside of at: the cut of
// the old one is then a rollout's step.
func (ev *Evidence) scaledUpBeside(namespace, workload string, at *time.Time) bool {
	for _, e := range ev.Events {
		m := reScaledUp.FindStringSubmatch(e.Message)
		if m == nil || e.Namespace != namespace || facts.ReplicaSetDeployment(m[1]) != workload {
			continue
		}
		if t := firstEventTime([]Event{e}); t != nil && at != nil && absDur(t.Sub(*at)) <= rolloutBeside {
			return true
		}
	}
	return false
}

// reScaledUp: the deployment controller's event when it scales a
// ReplicaSet up.
var reScaledUp = regexp.MustCompile(`(?i)\bscaled up replica set (\S+)`)

// rolloutBeside: a scale-up this close to a ReplicaSet's scale-down is the
// same rollout.
const rolloutBeside = 10 * time.Minute

// replicaCuts are the ledger rows of replica cuts: from the deployment
// controller's ScalingReplicaSet events and from desired-replica series
// (kube-state-metrics' spec replicas, a StatefulSet's replicas) that drop
// in a step.
func (ev *Evidence) replicaCuts() []changeRef {
	ev.cutsOnce.Do(func() { ev.cuts = ev.findReplicaCuts() })
	return ev.cuts
}

// findReplicaCuts does the work replicaCuts caches: its readers copy the
// rows they change.
func (ev *Evidence) findReplicaCuts() []changeRef {
	ns := ev.alertNamespace()
	var out []changeRef
	seen := map[string]bool{}
	add := func(namespace, workload string, from, to float64, at *time.Time, how string, c Cite) {
		key := namespace + "/" + workload
		if at == nil || workload == "" || seen[key] {
			return
		}
		seen[key] = true
		related := namespace == "" || ns == "" || namespace == ns
		text := fmt.Sprintf("capacity change: replicas of %s cut from %s to %s at %s (%s)", workload, strconv.FormatFloat(from, 'f', -1, 64), strconv.FormatFloat(to, 'f', -1, 64), hhmm(at), how)
		if !related {
			text += " (another namespace)"
		}
		out = append(out, changeRef{text: text, at: at, kind: changeCapacity, cite: c, unrelated: !related,
			entity: "deployment/" + qualifiedName(namespace, workload), service: workload, cut: true})
	}
	for _, e := range ev.Events {
		m := reScaledDown.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		to, from := m[2], m[3]
		if to == "" {
			from, to = m[4], m[5]
		}
		f, _ := strconv.ParseFloat(from, 64)
		t, _ := strconv.ParseFloat(to, 64)
		workload := e.InvolvedName
		if !strings.EqualFold(e.InvolvedKind, "Deployment") || workload == "" {
			workload = facts.ReplicaSetDeployment(m[1])
		}
		at := firstEventTime([]Event{e})
		if !isCut(f, t, !ev.scaledUpBeside(e.Namespace, workload, at)) {
			continue
		}
		add(e.Namespace, workload, f, t, at, quote(e.Reason+": "+e.Message), e.Cite)
	}
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.HasSuffix(n, "spec_replicas") && n != "kube_statefulset_replicas" {
			continue
		}
		if s.OnsetAt == nil || !isCut(s.Baseline, s.Latest, true) {
			continue
		}
		workload := labelOf(s.Series, "deployment", "statefulset")
		add(labelOf(s.Series, "namespace"), workload, s.Baseline, s.Latest, s.OnsetAt, s.Name+" fell in a step", s.Cite)
	}
	return out
}

// reBacklog: a lead about work waiting (a queue, a backlog, a lag).
var reBacklog = regexp.MustCompile(`(?i)\b(queue|backlog|lag|messages?_ready|pending|unacked)`)

// ModeReplicaCut: a capacity failure of a workload whose replicas were cut
// before the onset.
const ModeReplicaCut = "replica_cut"

// demandRose reports whether a demand series of the workload at least
// doubled over the window.
func (ev *Evidence) demandRose(workload string) bool {
	for _, x := range ev.Series {
		if demandSeries(x.Series, workload) {
			if r := riseOf(asRate(x.Series)); r.head > 0 && r.ratio >= 2 {
				return true
			}
		}
	}
	return false
}

// cutChange is the change row of a replica cut: the lead is a capacity
// failure (resource category) of a workload, or the failure of a
// dependency (a server that times out) that is that workload, whose replicas were cut within
// changeVoteWindow before the onset while its demand did not rise. The
// saturation is the cut's effect; the cut, a configuration change of the
// workload, is the cause.
func (ev *Evidence) cutChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || lead.Category != catResource && lead.Category != catDependency {
		return Finding{}, false
	}
	onset := sc.at
	if sc.hasOnset {
		onset = sc.onset
	}
	_, leadName := splitEntity(lead.Entity)
	backlog := reBacklog.MatchString(lead.Statement)
	var best *changeRef
	for _, r := range ev.replicaCuts() {
		if r.unrelated || r.at.After(onset.Add(time.Minute)) || onset.Sub(*r.at) > changeVoteWindow {
			continue
		}
		if lead.Category == catDependency && !strings.EqualFold(r.service, leadName) {
			continue // a failing dependency is explained by its own cut only
		}
		if !strings.EqualFold(r.service, leadName) && !namesTarget(r.service, ev.targetNames()) && !(backlog && r.at != nil) {
			// A backlog that grows is its consumer's: a cut of a workload
			// in the alert's scope explains it too.
			continue
		}
		if ev.demandRose(r.service) {
			continue
		}
		if best == nil || r.at.After(*best.at) {
			rr := r
			best = &rr
		}
	}
	if best == nil {
		return Finding{}, false
	}
	f := Finding{Mode: ModeReplicaCut, Detector: ModeReplicaCut, Category: catConfig, Entity: best.entity, Score: min(0.95, lead.Score+0.05)}
	f.Statement = fmt.Sprintf("The %s, %s before the onset at %s, left too few pods for unchanged demand: %s",
		strings.TrimPrefix(best.text, "capacity change: "), durHuman(onset.Sub(*best.at)), hhmm(&onset), strings.TrimSuffix(lead.Statement, "."))
	f.validated("The change: "+best.text, best.cite)
	f.adoptLead(lead,
		[]string{"Change: " + best.text, "The remaining pods take the same demand and saturate"},
		[]string{"Restore the replica count (and find what set it: a scale command, a manifest, an autoscaler's parameters)"},
		[]string{"replicas", "change"}, "the saturation is the effect of the replica cut before it")
	return f, true
}

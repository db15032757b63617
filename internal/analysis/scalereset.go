package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- an apply that resets an autoscaled workload's scale ----

// ModeScaleReset: the Deployment controller scaled an autoscaled workload
// down to a fixed count (an apply of a manifest that sets replicas) while
// its autoscaler wants more: each apply resets the scale the autoscaler
// set, and the workload serves its load with a fraction of its replicas.
// Kubernetes documents it: a Deployment managed by an HPA should not set
// spec.replicas in its manifest.
const ModeScaleReset = "scale_reset"

var (
	// reRescaleSize: an autoscaler's event of the size it set.
	reRescaleSize = regexp.MustCompile(`(?i)new size:\s*(\d+)`)
	// reReplicasField: a change that sets a replicas count.
	reReplicasField = regexp.MustCompile(`(?i)\breplicas:\s*\d+`)
)

// scaleResetWindow: an autoscaler's rescale this close to a scale-down
// shows the two fighting over the count.
const scaleResetWindow = 30 * time.Minute

// detectScaleReset: a scale-down event of a Deployment's replica set to
// half its count or less (a cut, replicacut.go), with an autoscaler's rescale of the same
// workload to a larger size within scaleResetWindow: the count the
// controller applied is not the autoscaler's. The change that set the
// count (a commit whose text or diff sets replicas, the nearest before)
// is the culprit when known; the Deployment otherwise.
func detectScaleReset(ev *Evidence) []Finding {
	type down struct {
		e        Event
		from, to int
		at       time.Time
	}
	var downs []down
	for _, e := range ev.Events {
		m := reScaledDown.FindStringSubmatch(e.Message) // replicacut.go: either order
		if m == nil {
			continue
		}
		from, _ := strconv.Atoi(m[3] + m[4])
		to, _ := strconv.Atoi(m[2] + m[5])
		at := lastEventTime([]Event{e})
		if at == nil || to <= 0 || !isCut(float64(from), float64(to), false) {
			continue
		}
		downs = append(downs, down{e, from, to, *at})
	}
	sort.Slice(downs, func(i, j int) bool { return downs[i].at.Before(downs[j].at) })
	for _, d := range downs {
		wl := d.e.InvolvedName
		if !strings.EqualFold(d.e.InvolvedKind, "Deployment") || wl == "" {
			continue
		}
		var rescale *Event
		for i := range ev.Events {
			e := &ev.Events[i]
			m := reRescaleSize.FindStringSubmatch(e.Message)
			if m == nil || !strings.EqualFold(e.InvolvedKind, "HorizontalPodAutoscaler") || !sameWorkloadName(e.InvolvedName, wl) {
				continue
			}
			size, _ := strconv.Atoi(m[1])
			t := lastEventTime([]Event{*e})
			if t == nil || size <= d.to || absDur(t.Sub(d.at)) > scaleResetWindow {
				continue
			}
			rescale = e
			break
		}
		if rescale == nil {
			continue
		}
		ent := deploymentEntity(d.e.Namespace, wl)
		f := Finding{Mode: ModeScaleReset, Category: catConfig, Entity: ent, Score: 0.8, Settled: true}
		f.validated("Event "+eventLine(d.e), d.e.Cite)
		f.validated("Event "+eventLine(*rescale), rescale.Cite)
		again := 0
		for _, o := range downs {
			if o.at.After(d.at) && o.e.InvolvedName == wl {
				again++
				if again == 1 {
					f.validated("Event "+eventLine(o.e)+": reset again", o.e.Cite)
				}
			}
		}
		why := fmt.Sprintf("the Deployment controller scaled %s down from %d to %d replicas at %s while its autoscaler wants more (%s): a manifest applied with a fixed replicas count resets the autoscaler's scale", wl, d.from, d.to, hhmm(&d.at), quote(rescale.Message))
		if c, ok := ev.replicasCommit(wl, d.at); ok {
			f.Entity = "commit/" + short(c.SHA)
			f.validated(fmt.Sprintf("Commit %s sets a replicas count in %s's manifest: %s", short(c.SHA), wl, quote(clip(firstNonEmptyStr(c.Summary, c.Message), 200))), c.Cite)
			why += fmt.Sprintf("; commit %s (%s) put the count in the manifest", short(c.SHA), quote(clip(c.Message, 100)))
		}
		if t, text, c, ok := ev.failureSince(d.at); ok {
			f.validated(fmt.Sprintf("Failures follow from %s: %s", hhmm(&t), text), c)
			why += fmt.Sprintf("; failures follow from %s (%s)", hhmm(&t), text)
		}
		f.Statement = strings.ToUpper(why[:1]) + why[1:]
		f.Chain = []string{
			"The Deployment's manifest sets spec.replicas although an autoscaler manages it",
			fmt.Sprintf("Each apply sets %s back to %d replicas", wl, d.to),
			"The remaining replicas cannot serve the load until the autoscaler scales it up again",
		}
		f.Remediation = []string{
			fmt.Sprintf("Remove spec.replicas from %s's manifest (the autoscaler owns the count), or have the deployer ignore the field", wl),
			fmt.Sprintf("Scale %s back to the autoscaler's size now", wl),
		}
		f.Signals = []string{"scale_reset"}
		f.Sources = []string{"k8s"}
		return []Finding{f}
	}
	return nil
}

// sameWorkloadName: an autoscaler named after the workload (its name, or
// the workload's name with a suffix).
func sameWorkloadName(hpa, wl string) bool {
	return hpa == wl || strings.HasPrefix(hpa, wl+"-") || strings.HasPrefix(wl, hpa+"-")
}

// replicasCommit is the latest commit before at, within a day, that names
// the workload and sets a replicas count (its summary, message or diff).
func (ev *Evidence) replicasCommit(wl string, at time.Time) (Commit, bool) {
	var best Commit
	found := false
	for _, c := range ev.Commits {
		if c.Removed || c.Timestamp == nil || c.Timestamp.After(at) || at.Sub(*c.Timestamp) > 24*time.Hour {
			continue
		}
		text := c.Message + "\n" + c.Summary + "\n" + c.Diff
		named := strings.Contains(strings.ToLower(text), strings.ToLower(wl)) || strings.EqualFold(c.Service, wl)
		for _, fl := range c.Files {
			named = named || strings.Contains(strings.ToLower(fl.Path), strings.ToLower(wl))
		}
		if !named || !reReplicasField.MatchString(text) {
			continue
		}
		if !found || c.Timestamp.After(*best.Timestamp) {
			best, found = c, true
		}
	}
	return best, found
}

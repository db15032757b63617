package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// An abnormality that still holds contradicts "healthy" whatever the pods
// and nodes show: a workload whose rollout reports a failed condition, or a
// controller that keeps failing on the alerted workload's behalf into the
// last minutes of the evidence. Running, Ready pods of the old revision say
// nothing about a rollout that cannot create the new ones.

// conditionPolarity says which status of a condition type is the normal
// one, for the condition types the Kubernetes API and common controllers
// publish. A type that is not listed is not judged.
var conditionPolarity = map[string]string{
	// Normal when True.
	"available": "True", "progressing": "True", "ready": "True", "containersready": "True",
	"initialized": "True", "podscheduled": "True", "scalingactive": "True", "abletoscale": "True", "disruptionallowed": "True", "established": "True", "synced": "True",
	"healthy": "True", "bound": "True", "reconciled": "True", "accepted": "True", "programmed": "True",
	// Normal when False.
	"replicafailure": "False", "failed": "False", "degraded": "False", "stalled": "False",
	"memorypressure": "False", "diskpressure": "False", "pidpressure": "False", "networkunavailable": "False",
}

// abnormalCondition: the condition's status is the abnormal one for its type.
// An autoscaler limited by its maximum (ScalingLimited=True, reason
// TooManyReplicas) wants more replicas than it may have; limited by its
// minimum (TooFewReplicas) it is idle, which is normal.
func abnormalCondition(c facts.Condition) bool {
	if strings.EqualFold(c.Type, "ScalingLimited") {
		return strings.EqualFold(c.Status, "True") && strings.EqualFold(c.Reason, "TooManyReplicas")
	}
	want, ok := conditionPolarity[strings.ToLower(c.Type)]
	if !ok || c.Status == "" || strings.EqualFold(c.Status, "Unknown") {
		return false
	}
	return !strings.EqualFold(c.Status, want)
}

// recurringWindow: a Warning event seen this many times whose last
// occurrence is this close to the evidence's reference time is ongoing.
const (
	recurringCount  = 3
	recurringWithin = 5 * time.Minute
)

// activeFact is one reason the alerted workload is not healthy now.
type activeFact struct {
	text string
	cite Cite
}

// activeAbnormal lists the abnormal rollout conditions of the alerted
// workload and the Warning events about it (its ReplicaSets and pods
// included) that keep recurring up to the evidence's reference time.
func (ev *Evidence) activeAbnormal() []activeFact {
	ent := ev.workloadEntity()
	if ent == "" {
		return nil
	}
	ns, name := splitEntity(ent)
	var out []activeFact
	for _, d := range ev.Deployments {
		if d.Name != name || (ns != "" && d.Namespace != "" && d.Namespace != ns) {
			continue
		}
		for _, co := range workloadConditions(d) {
			out = append(out, activeFact{text: co.text(), cite: d.Cite})
		}
	}
	for _, e := range ev.WarningEvents() {
		if ns != "" && e.Namespace != "" && e.Namespace != ns {
			continue
		}
		if e.InvolvedName != name && !strings.HasPrefix(e.InvolvedName, name+"-") {
			continue
		}
		if eventCount(e.Event) < recurringCount || !ev.recent(lastEventTime([]Event{e}), recurringWithin) {
			continue
		}
		out = append(out, activeFact{
			text: fmt.Sprintf("Warning event %s still recurring at %s", eventLine(e), hhmm(lastEventTime([]Event{e}))),
			cite: e.Cite,
		})
	}
	return out
}

// splitEntity reads "kind/ns/name" or "kind/name" into namespace and name.
func splitEntity(ent string) (ns, name string) {
	parts := strings.Split(ent, "/")
	switch len(parts) {
	case 3:
		return parts[1], parts[2]
	case 2:
		return "", parts[1]
	}
	return "", ent
}

// condOf is one abnormal condition of a workload's rollout or of an object
// that acts on it (its autoscaler).
type condOf struct {
	kind, ns, name string
	c              facts.Condition
}

func (co condOf) text() string {
	return fmt.Sprintf("%s %s/%s condition %s=%s (%s): %s", co.kind, co.ns, co.name, co.c.Type, co.c.Status, co.c.Reason, quote(co.c.Message))
}

// workloadConditions are the abnormal conditions of a Deployment and of
// the autoscalers that target it.
func workloadConditions(d Deployment) []condOf {
	var out []condOf
	for _, c := range d.Conditions {
		if abnormalCondition(c) {
			out = append(out, condOf{kind: "Deployment", ns: d.Namespace, name: d.Name, c: c})
		}
	}
	for _, a := range d.Autoscalers {
		for _, c := range a.Conditions {
			if abnormalCondition(c) {
				out = append(out, condOf{kind: a.Kind, ns: a.Namespace, name: a.Name, c: c})
			}
		}
	}
	return out
}

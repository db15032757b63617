package analysis

import (
	"fmt"
	"strings"
	"time"
)

// The alert's own condition, for a resource measured against its bound:
// when the alert fired, a measurement of its target stood close to the
// bound published beside it (a filesystem nearly full, a pool nearly
// exhausted); if, for the last minutes of the window, it has stayed well
// below that level and below the limit threshold, the condition no longer
// holds. The alert's expression is not needed: the pair (measurement,
// bound) is the resource, and its share at the alert's start is what the
// alert saw.

const (
	// clearedDrop: how far (share of the bound) the resource must have
	// fallen below its level at the alert's start.
	clearedDrop = 0.1
	// alertedUtilization: the share of its bound a resource must have held
	// at the alert's start to be the resource the alert saw.
	alertedUtilization = 0.75
)

// targetSeries: a series of the alert's target, named by a label value the
// alert carries (its instance, node, pod, service, volume, queue).
func (ev *Evidence) targetSeries(s Series) bool {
	if ev.Alert == nil {
		return false
	}
	vals := map[string]bool{}
	for k, v := range ev.Alert.GetLabels() {
		switch strings.ToLower(k) {
		case "alertname", "severity", "job", "cluster", "env", "environment", "prometheus", "team", "priority", "region", "endpoint", "service_name_of_monitor":
			continue
		}
		if len(v) >= 4 && !strings.ContainsAny(v, " \n") {
			vals[v] = true
		}
	}
	for k, v := range s.Labels {
		if k != "__name__" && k != "job" && vals[v] {
			return true
		}
	}
	return false
}

// valueAt is the last value of the series at or before t.
func valueAt(s Series, t time.Time) (float64, bool) {
	var v float64
	ok := false
	for _, p := range s.Downsampled {
		if p.T.After(t) {
			break
		}
		v, ok = p.V, true
	}
	return v, ok
}

// clearedResource is a resource of the alert's target that was near its
// bound at the alert's start and has been well below it since.
type clearedResource struct {
	p            limitPair
	atAlert, now float64
	since        time.Time
	alertAt      time.Time
}

func (c clearedResource) text() string {
	return fmt.Sprintf("%s%s was at %.0f%% of %s when the alert fired (%s) and has stayed at or below %.0f%% since %s",
		c.p.usage.Name, labelSuffix(c.p.usage.Series, "instance", "node", "pod", "service", "mountpoint", "device", "pool", "persistentvolumeclaim"),
		100*c.atAlert, c.p.limit.Name, hhmm(&c.alertAt), 100*c.now, hhmm(&c.since))
}

// clearedResources lists the alert target's resources whose condition has
// cleared; held reports whether one of its resources is still at the level
// the alert saw (then nothing has cleared).
func (ev *Evidence) clearedResources() (out []clearedResource, held bool) {
	at := ev.alertTime()
	if at == nil {
		return nil, false
	}
	for _, p := range ev.limitPairs() {
		if !ev.targetSeries(p.usage) {
			continue
		}
		bound := currentValue(p.limit.Series)
		if bound <= 0 {
			continue
		}
		v, ok := valueAt(p.usage, *at)
		if !ok {
			continue
		}
		u0 := p.util(v, bound)
		if u0 < alertedUtilization || u0 > 1.05 {
			continue
		}
		pts := p.usage.Downsampled
		end := pts[len(pts)-1].T
		if end.Sub(*at) < clearedFor {
			return nil, true // not enough time after the alert to say
		}
		worst, since := 0.0, time.Time{}
		for i := len(pts) - 1; i >= 0 && end.Sub(pts[i].T) <= clearedFor; i-- {
			u := p.util(pts[i].V, bound)
			if u > worst {
				worst = u
			}
			since = pts[i].T
		}
		if worst > u0-clearedDrop || worst >= limitUtilization {
			return nil, true
		}
		// The earliest point after the alert from which it stayed low.
		for i := len(pts) - 1; i >= 0 && pts[i].T.After(*at); i-- {
			if p.util(pts[i].V, bound) > u0-clearedDrop {
				break
			}
			since = pts[i].T
		}
		out = append(out, clearedResource{p: p, atAlert: u0, now: p.util(currentValue(p.usage.Series), bound), since: since, alertAt: *at})
	}
	return out, false
}

// detectResourceCleared: the alert's resource condition no longer holds.
func detectResourceCleared(ev *Evidence) []Finding {
	cl, held := ev.clearedResources()
	if held || len(cl) == 0 {
		return nil
	}
	ent := ev.workloadEntity()
	if ent == "" {
		if n := firstNonEmptyStr(ev.alertField("node", "instance", "host", "hostname")); n != "" {
			ent = "node/" + n
		}
	}
	f := healthyFinding(ModeConditionCleared, ent, 0.75)
	var parts []string
	for _, c := range cl {
		f.validated(c.text(), c.p.usage.Cite)
		parts = append(parts, c.text())
	}
	f.Statement = "No active failure: the alert's own condition no longer holds: " + strings.Join(parts, "; ")
	f.Chain = []string{"The resource approached its bound", "It fell back well below the bound (reclaimed, cleaned up or expanded)", "The alert fired on the episode, which has ended"}
	f.Remediation = []string{"Resolve the alert; if the resource fills up regularly, find what fills it and what reclaims it"}
	f.Signals = []string{"cleared", cl[0].p.usage.Name}
	return []Finding{f}
}

package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// ModeMemoryLeak is memory that grows steadily toward its limit with no
// restart yet: a leak (an unbounded cache, retained objects) that ends in an
// OOM kill if nothing changes.
const ModeMemoryLeak = "memory_leak"

// Thresholds of the memory-creep rule.
const (
	// creepMinRise: total rise over the window, relative to the first value.
	creepMinRise = 0.04
	// creepMinUpSteps: fraction of consecutive samples that go up.
	creepMinUpSteps = 0.7
	// leakNearLimit: the working set at or above this share of its limit.
	leakNearLimit = 0.75
)

// creep reports whether a series grows steadily: most steps go up and the
// total rise is material. It returns the first and last value and the
// growth per minute.
func creep(s Series) (first, last, perMin float64, ok bool) {
	pts := s.Downsampled
	if len(pts) < 5 {
		return 0, 0, 0, false
	}
	up, steps := 0, 0
	for i := 1; i < len(pts); i++ {
		if d := pts[i].V - pts[i-1].V; d > 0 {
			up++
			steps++
		} else if d < 0 {
			steps++
		}
	}
	first, last = pts[0].V, pts[len(pts)-1].V
	if first <= 0 || steps == 0 || float64(up)/float64(steps) < creepMinUpSteps || (last-first)/first < creepMinRise {
		return first, last, 0, false
	}
	if span := pts[len(pts)-1].T.Sub(pts[0].T); span > 0 {
		perMin = (last - first) / span.Minutes()
	}
	return first, last, perMin, true
}

// isMemorySeries: a container/process memory series in bytes.
func isMemorySeries(s Series) bool {
	n := strings.ToLower(s.Name)
	if containsFold(n, "limit", "request", "node_memory", "available", "_total", "_count") {
		return false
	}
	return strings.Contains(n, "memory") && containsFold(n, "working_set", "usage_bytes", "rss") || containsFold(n, "heap_inuse", "heap_alloc", "heap_used")
}

// isCounterName: names of monotonic counters and histogram parts, which
// always grow and say nothing about retention.
func isCounterName(n string) bool {
	n = strings.ToLower(n)
	return strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_count") || strings.HasSuffix(n, "_bucket") || strings.Contains(n, "rate(") || strings.Contains(n, "cpu")
}

// detectMemoryLeak: a workload's working set creeps up steadily and already
// sits near its memory limit while its pods have not restarted. Gauges of the
// same pods that grow with it (cache entries, heap) name what is retained;
// other workloads whose memory stays flat rule out node-wide pressure.
func detectMemoryLeak(ev *Evidence) []Finding {
	type grow struct {
		s             Series
		first, last   float64
		perMin        float64
		pod, workload string
	}
	byWL := map[string][]grow{}
	var order []string
	flatOthers := map[string]Cite{}
	for _, s := range ev.Series {
		if !isMemorySeries(s) || !strings.Contains(strings.ToLower(s.Name), "memory") {
			continue
		}
		pod := labelOf(s.Series, "pod", "pod_name")
		if pod == "" {
			continue
		}
		wl := workloadOfPodName(ev, pod)
		if wl == "" {
			continue
		}
		first, last, perMin, ok := creep(s)
		if !ok {
			if r := riseOf(s.Series); r.head > 0 && math.Abs(r.tail/r.head-1) < 0.03 {
				c := flatOthers[wl]
				c.merge(s.Cite)
				flatOthers[wl] = c
			}
			continue
		}
		if _, seen := byWL[wl]; !seen {
			order = append(order, wl)
		}
		byWL[wl] = append(byWL[wl], grow{s: s, first: first, last: last, perMin: perMin, pod: pod, workload: wl})
	}
	var out []Finding
	for _, wl := range order {
		gs := byWL[wl]
		delete(flatOthers, wl)
		limit := 0.0
		var pods []Pod
		for _, p := range ev.Pods {
			if ev.workloadOf(p.Pod) != wl {
				continue
			}
			if podRestarts(p.Pod) > 0 || ev.oomSignals(p).found() {
				pods = nil
				limit = -1 // already restarting or OOM-killed: the OOM rules own it
				break
			}
			pods = append(pods, p)
			for _, c := range p.Containers {
				limit = math.Max(limit, quantityBytes(c.LimitsMemory))
			}
		}
		if limit < 0 {
			continue
		}
		var limitCite Cite
		if limit == 0 {
			for _, s := range ev.Series {
				n := strings.ToLower(s.Name)
				if strings.Contains(n, "limit") && containsFold(n, "memory", "resource_limits") && labelOf(s.Series, "resource") != "cpu" {
					if pod := labelOf(s.Series, "pod"); pod != "" && workloadOfPodName(ev, pod) == wl && s.Latest > limit {
						limit, limitCite = s.Latest, s.Cite
					}
				}
			}
		}
		best := gs[0]
		for _, g := range gs[1:] {
			if g.last > best.last {
				best = g
			}
		}
		if limit <= 0 || best.last < leakNearLimit*limit {
			continue
		}
		ns := firstNonEmptyStr(labelOf(best.s.Series, "namespace"), ev.alertNamespace())
		f := Finding{Mode: ModeMemoryLeak, Category: catResource, Score: 0.8, Entity: deploymentEntity(ns, wl)}
		share := best.last / limit
		eta := ""
		if best.perMin > 0 {
			eta = durHuman(time.Duration((limit-best.last)/best.perMin) * time.Minute)
		}
		var podsGrowing []string
		var cite Cite
		for _, g := range gs {
			podsGrowing = appendUnique(podsGrowing, g.pod)
			cite.merge(g.s.Cite)
		}
		cite.merge(limitCite)
		what := fmt.Sprintf("the memory working set of %s grows steadily from %s to %s (+%s/min) on %s, now %s of its %s limit",
			wl, bytesHuman(best.first), bytesHuman(best.last), bytesHuman(best.perMin), plural(len(podsGrowing), "pod", "pods"), pct(100*share), bytesHuman(limit))
		f.validated(fmt.Sprintf("%s (%s): %s", best.s.Name, best.pod, what), cite)
		// Gauges of the same pods that grow with memory: what is retained.
		var with []string
		var withCite Cite
		var flat []string
		var flatCite Cite
		seenName := map[string]bool{}
		for _, s := range ev.Series {
			pod := labelOf(s.Series, "pod")
			if pod == "" || workloadOfPodName(ev, pod) != wl || isCounterName(s.Name) || (isMemorySeries(s) && strings.Contains(strings.ToLower(s.Name), "memory")) || containsFold(s.Name, "limit", "restart") {
				continue
			}
			base := s.Name
			if seenName[base] {
				continue
			}
			if f0, l0, _, ok := creep(s); ok {
				seenName[base] = true
				with = append(with, fmt.Sprintf("%s (%s -> %s)", s.Name, num(f0), num(l0)))
				withCite.merge(s.Cite)
			} else if r := riseOf(s.Series); r.head > 0 && math.Abs(r.tail/r.head-1) < 0.1 {
				seenName[base] = true
				flat = append(flat, s.Name)
				flatCite.merge(s.Cite)
			}
		}
		sort.Strings(flat)
		statement := "Memory leak: " + what
		if eta != "" {
			statement += fmt.Sprintf("; at this rate it reaches the limit (OOM kill) in about %s", eta)
		}
		if len(with) > 0 {
			if len(with) > 4 {
				with = with[:4]
			}
			statement += "; growing with it: " + strings.Join(with, ", ")
			f.validated("Gauges of the same pods grow in step with memory (retained state): "+strings.Join(with, ", "), withCite)
			f.Score += 0.05
		}
		if len(flat) > 0 {
			if len(flat) > 4 {
				flat = flat[:4]
			}
			f.validated(fmt.Sprintf("Other signals of %s stay flat (%s): the growth is retention, not load", wl, strings.Join(flat, ", ")), flatCite)
		}
		if len(pods) > 0 {
			f.validated(fmt.Sprintf("Pods %s have not restarted yet (0 restarts, no OOM kill)", joinNames(podNames(pods))), citesOfPods(pods))
		}
		var others []string
		var oc Cite
		for o, c := range flatOthers {
			others = append(others, o)
			oc.merge(c)
		}
		sort.Strings(others)
		if len(others) > 0 {
			f.validated(fmt.Sprintf("Memory of other workloads stays flat (%s): not node-wide pressure", joinNames(others)), oc)
		}
		if d, ok := ev.lastDeployOf(wl); ok {
			f.inferred(fmt.Sprintf("The last deploy of %s (%s, %s) is the likely origin of the retention: the growth is steady, not a step at a release", wl, d.Revision, hhmm(d.StartedAt)), d.Cite)
		}
		f.Statement = statement
		f.Chain = []string{fmt.Sprintf("%s retains memory it never frees", wl), "The working set grows steadily toward the memory limit", "GC work and latency rise; the container will be OOM-killed at the limit"}
		f.Remediation = []string{fmt.Sprintf("Bound what %s retains (cache size or TTL) or roll back the change that added the retention", wl), "Restart the pods as a stop-gap before they reach the limit, and alert on memory growth rate"}
		f.Signals = []string{"memory creep", wl}
		f.explains(ModeHealthy, "memory is not steady: it creeps toward the limit")
		f.explains(ModeTrafficSaturation, "latency rises from GC pressure of a growing heap, not from load")
		out = append(out, f)
	}
	return out
}

// lastDeployOf returns the most recent deploy of a workload in evidence.
func (ev *Evidence) lastDeployOf(wl string) (Deploy, bool) {
	var best Deploy
	found := false
	for _, d := range ev.Deploys {
		if d.Service != "" && d.Service != wl || d.StartedAt == nil {
			continue
		}
		if !found || d.StartedAt.After(timeOf(best.StartedAt)) {
			best, found = d, true
		}
	}
	return best, found
}

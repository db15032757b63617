package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
)

// A signal extractor: resources at their limit, found by pairing each
// measurement with the limit the same exporter publishes beside it. The
// pairing reads the structure of the names and labels, not a catalogue of
// metrics: two series with the same labels whose names differ by one
// token, a usage word against a limit word (process_open_fds and
// process_max_fds, jvm_memory_used_bytes and jvm_memory_max_bytes,
// hikaricp_connections_active and hikaricp_connections_max), or a free
// word against the total (node_filesystem_files_free and
// node_filesystem_files); or one series name whose label says used
// against hard (kube_resourcequota{type="used"|"hard"}).

// limitWords name a bound; usageWords a current amount; freeWords what is
// left of a bound.
var (
	limitWords = map[string]bool{"max": true, "limit": true, "limits": true, "capacity": true, "hard": true, "allocatable": true, "quota": true, "maximum": true, "size": true, "total": true}
	usageWords = map[string]bool{"open": true, "used": true, "usage": true, "current": true, "active": true, "inuse": true, "in": true, "use": true, "allocated": true, "count": true, "busy": true, "consumed": true, "pending": true}
	freeWords  = map[string]bool{"free": true, "avail": true, "available": true, "remaining": true, "left": true, "idle": true}
	// limitLabelPairs: a label whose values tell usage from bound.
	limitLabelValues = map[string]string{"used": "hard", "usage": "limit", "current": "max", "allocated": "capacity"}
)

// limitUtilization is the share of its limit at which a resource counts as
// at its limit.
const limitUtilization = 0.9

// limitHit is a resource at or near its limit.
type limitHit struct {
	usage, limit Series
	// util is usage/limit at the tail (for a free measure, 1-free/total).
	util        float64
	used, bound float64
	// since is when utilisation first reached limitUtilization.
	since *time.Time
	// free: usage is what is left of the bound (inodes free).
	free bool
}

func (h limitHit) text() string {
	s := fmt.Sprintf("%s%s at %s of its limit %s %s (%.0f%%)", h.usage.Name, labelSuffix(h.usage.Series, "pod", "service", "instance", "node", "type", "area", "pool", "resource", "mountpoint"), num(h.used), h.limit.Name, num(h.bound), 100*h.util)
	if h.since != nil {
		s += " since " + hhmm(h.since)
	}
	return s
}

// limitsReached pairs series with their limits and returns those at
// limitUtilization or more at the end of the window, fullest first.
func (ev *Evidence) limitsReached() []limitHit {
	ev.limitsOnce.Do(func() { ev.limits = ev.pairLimits() })
	return ev.limits
}

// atItsLimit: s is the measurement of a limit reached.
func (ev *Evidence) atItsLimit(s Series) bool {
	for _, h := range ev.limitsReached() {
		if h.usage.Name == s.Name && labelKey(h.usage.Labels, "") == labelKey(s.Labels, "") {
			return true
		}
	}
	return false
}

// limitPair is a measurement and the bound published beside it; free
// says the measurement is what is left of the bound.
type limitPair struct {
	usage, limit Series
	free         bool
}

// util is the pair's share of its bound at one value of the measurement.
func (p limitPair) util(v, bound float64) float64 {
	if p.free {
		return 1 - v/bound
	}
	return v / bound
}

// pairLimits does the pairing limitsReached caches.
func (ev *Evidence) pairLimits() []limitHit {
	var out []limitHit
	for _, p := range ev.limitPairs() {
		if h, ok := pairHit(p.usage, p.limit, p.free); ok {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].util > out[j].util })
	return out
}

// limitPairs pairs every measurement with its bound (see the top of the
// file), each measurement once.
func (ev *Evidence) limitPairs() []limitPair {
	type keyed struct {
		s      Series
		tokens []string
		labels string
	}
	var all []keyed
	for _, s := range ev.Series {
		if strings.ContainsAny(s.Name, "([{ ") || len(s.Downsampled) == 0 && s.Count == 0 {
			continue // expressions are not raw measurements
		}
		name := strings.ToLower(signal.MetricName(s.Name))
		all = append(all, keyed{s: s, tokens: strings.Split(name, "_"), labels: labelKey(s.Labels, "")})
	}
	var out []limitPair
	seen := map[string]bool{}
	add := func(x, y Series, free bool) {
		if k := x.Name + labelKey(x.Labels, ""); !seen[k] {
			seen[k] = true
			out = append(out, limitPair{usage: x, limit: y, free: free})
		}
	}
	for i := range all {
		for j := range all {
			if i == j || all[i].labels != all[j].labels {
				continue
			}
			dx, dy := tokenDiff(all[i].tokens, all[j].tokens), tokenDiff(all[j].tokens, all[i].tokens)
			x, y := all[i].s, all[j].s
			switch {
			case oneLimitWord(dy) && (len(dx) == 0 || len(dx) == 1 && usageWords[dx[0]]):
				add(x, y, false)
			case len(dx) == 1 && freeWords[dx[0]] && (len(dy) == 0 || len(dy) == 1 && limitWords[dy[0]]):
				add(x, y, true)
			}
		}
	}
	// One name, a label telling usage from bound.
	for i := range all {
		for key, v := range all[i].s.Labels {
			bound, ok := limitLabelValues[strings.ToLower(v)]
			if !ok {
				continue
			}
			want := labelKey(all[i].s.Labels, key) + "|" + key + "=" + bound
			for j := range all {
				if i == j || all[j].s.Name != all[i].s.Name || !strings.EqualFold(all[j].s.Labels[key], bound) || labelKey(all[j].s.Labels, key)+"|"+key+"="+bound != want {
					continue
				}
				add(all[i].s, all[j].s, false)
			}
		}
	}
	return out
}

// pairHit measures usage (or free) against its bound at the end of the
// window.
func pairHit(x, y Series, free bool) (limitHit, bool) {
	bound := currentValue(y.Series)
	if bound <= 0 {
		return limitHit{}, false
	}
	used := currentValue(x.Series)
	util := used / bound
	if free {
		util = 1 - used/bound
		used = bound - used
	}
	if util < limitUtilization || util > 1.05 {
		return limitHit{}, false
	}
	h := limitHit{usage: x, limit: y, util: util, used: used, bound: bound, free: free}
	for _, p := range x.Downsampled {
		u := p.V / bound
		if free {
			u = 1 - p.V/bound
		}
		if u >= limitUtilization {
			t := p.T
			h.since = &t
			break
		}
	}
	return h, true
}

// oneLimitWord: the tokens a bound's name adds are one limit word, alone
// or with one qualifier (tomcat_threads_config_max_threads against
// tomcat_threads_busy_threads).
func oneLimitWord(tokens []string) bool {
	if len(tokens) == 0 || len(tokens) > 2 {
		return false
	}
	n := 0
	for _, t := range tokens {
		if limitWords[t] {
			n++
		} else if usageWords[t] || freeWords[t] {
			return false
		}
	}
	return n == 1
}

// tokenDiff: the tokens of a not in b.
func tokenDiff(a, b []string) []string {
	in := map[string]int{}
	for _, t := range b {
		in[t]++
	}
	var out []string
	for _, t := range a {
		if in[t] > 0 {
			in[t]--
			continue
		}
		out = append(out, t)
	}
	return out
}

// labelKey renders labels (except skip and the metric name) in a stable
// order.
func labelKey(labels map[string]string, skip string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != skip && k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte(',')
	}
	return b.String()
}

// currentValue is a series' value at the end of the window.
func currentValue(s facts.Series) float64 {
	if n := len(s.Downsampled); n > 0 {
		return s.Downsampled[n-1].V
	}
	return s.Latest
}

// ModeLimitReached: a resource of a workload rose to its published limit
// during the window (the hypothesis space's "resource at its limit").
const ModeLimitReached = "limit_reached"

// detectLimitReached makes a candidate of every measurement that rose to
// its published bound during the window (it was below limitUtilization at
// the window's start): the workload it belongs to ran out of it. A
// resource that sat at its bound all along is its normal state, not an
// incident's onset.
func detectLimitReached(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.limitsReached() {
		if h.since == nil || len(h.usage.Downsampled) == 0 || h.utilAt(0) >= limitUtilization {
			continue // at its bound from the start: its normal state
		}
		ent := ev.limitOwner(h)
		if ent == "" || seen[ent+h.usage.Name] {
			continue
		}
		seen[ent+h.usage.Name] = true
		f := Finding{Mode: ModeLimitReached, Category: catResource, Score: 0.62, Entity: ent}
		f.Statement = fmt.Sprintf("%s ran out of a resource: %s", strings.TrimPrefix(ent, "deployment/"), h.text())
		f.validated("A resource at its limit: "+h.text(), h.usage.Cite, h.limit.Cite)
		f.Chain = []string{"Demand on " + signal.MetricName(h.usage.Name) + " rises to its limit " + num(h.bound), "Work waits for or is refused the exhausted resource", "The alert fires"}
		f.Remediation = []string{"Find what holds the exhausted resource (slow calls, leaks, a burst) and raise the limit only if the demand is legitimate"}
		f.Signals = []string{"limit reached", signal.MetricName(h.usage.Name)}
		f.Sources = []string{"metrics"}
		out = append(out, f)
	}
	return out
}

// utilAt is the share of its bound the measurement's i-th sample used.
func (h limitHit) utilAt(i int) float64 {
	v := h.usage.Downsampled[i].V / h.bound
	if h.free {
		return 1 - v
	}
	return v
}

// limitOwner is the workload a limit hit's measurement belongs to: the
// owner of its pod, else its service, app or deployment label; "" when the
// measurement names none (a node's or the cluster's).
func (ev *Evidence) limitOwner(h limitHit) string {
	ns := firstNonEmptyStr(labelOf(h.usage.Series, "namespace", "exported_namespace"), ev.alertNamespace())
	if pod := labelOf(h.usage.Series, "pod", "pod_name"); pod != "" {
		for _, p := range ev.Pods {
			if p.Name == pod {
				if o := ev.ownerEntity(p); o != "" {
					return o
				}
			}
		}
		if w := workloadOfPodName(ev, pod); w != "" {
			return deploymentEntity(ns, w)
		}
	}
	if w := labelOf(h.usage.Series, "deployment", "app", "application", "service", "service_name"); w != "" {
		return deploymentEntity(ns, w)
	}
	return ""
}

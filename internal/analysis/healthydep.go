package analysis

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A topology row of the cause-to-effect table: a dependency its callers'
// errors name, whose own signals in the same evidence are normal (its
// server-side series move as before, its pods run and are ready, it logs
// no error), did not fail: what fails is the callers' side of the call (a
// timeout set in the wrong unit, a keep-alive or TLS setting, a proxy or
// route in between), a configuration error. A dependency outside the
// cluster, or one without signals of its own, keeps its vote.

// inClusterWorkload is the workload name a dependency's host names in the
// cluster (its Service's first label), or "" for an outside host.
func inClusterWorkload(entity, host string) string {
	if !strings.HasPrefix(entity, "service/") {
		return "" // a host or provider API outside the cluster
	}
	h := strings.ToLower(host)
	if i := strings.LastIndex(h, ":"); i > 0 {
		h = h[:i]
	}
	return strings.Split(h, ".")[0]
}

// dependencyNormal reports whether the dependency (an in-cluster Service,
// its entity and host as the callers name it) shows its own signals and
// all of them are normal: no abnormal series, error line, restart or
// unready pod of the workload of that name, and at least one series or pod
// of its own in the evidence. It returns the workload's name.
func (ev *Evidence) dependencyNormal(entity, host string) (string, bool) {
	w := inClusterWorkload(entity, host)
	if w == "" || len(w) < 3 {
		return "", false
	}
	own := 0
	for _, c := range ev.anomalyCandidates() {
		if c.kind == "workload" && strings.EqualFold(c.name, w) {
			if len(c.errLines) > 0 || c.restarts > 0 || len(c.notReady) > 0 || len(c.badPods) > 0 || len(c.conditions) > 0 {
				return "", false
			}
			for _, ch := range c.changes {
				if ch.r.shape != "flat" {
					return "", false
				}
			}
		}
	}
	for _, p := range ev.Pods {
		if strings.EqualFold(ev.workloadOf(p.Pod), w) {
			if !podHealthy(p.Pod) {
				return "", false
			}
			own++
		}
	}
	for _, s := range ev.Series {
		if ownSeries(s, w) {
			own++
		}
	}
	return w, own > 0
}

// ownSeries: s is a series of the workload w (its service, app, job or
// deployment label, or one of its pods).
func ownSeries(s Series, w string) bool {
	return strings.EqualFold(labelOf(s.Series, "service", "service_name", "app", "job", "deployment", "destination_workload", "destination_service_name"), w) ||
		strings.HasPrefix(strings.ToLower(labelOf(s.Series, "pod")), strings.ToLower(w)+"-")
}

// dependencyUnread: the dependency is an in-cluster workload of which no
// pod, series or log line was read (it runs in another namespace than the
// listings): whether it fails itself or its callers call it wrongly is
// still open.
func (ev *Evidence) dependencyUnread(entity, host string) bool {
	w := inClusterWorkload(entity, host)
	if len(w) < 3 {
		return false
	}
	for _, c := range ev.anomalyCandidates() {
		if c.kind == "workload" && strings.EqualFold(c.name, w) {
			return false
		}
	}
	for _, p := range ev.Pods {
		if strings.EqualFold(ev.workloadOf(p.Pod), w) {
			return false
		}
	}
	for _, s := range ev.Series {
		if ownSeries(s, w) {
			return false
		}
	}
	return true
}

// unreadDependencyScore caps a dependency finding whose dependency's own
// state no pin has read: below the critic's bar, so the loop reads it.
const unreadDependencyScore = 0.7

// callersSide turns a dependency finding whose dependency's own signals are
// normal into the callers' configuration error: the one calling workload
// its entity (the dependency when several call it).
func (ev *Evidence) callersSide(f *Finding, host string, lines []LogLine) {
	if ok, served := ev.servedOthers(host, lines); served && inClusterWorkload(f.Entity, host) == "" && externalHost(host) {
		// A peer outside the cluster that answers another client while
		// these calls fail: the callers' side of the call.
		callers := ev.blameCallers(f, lines, "")
		f.Statement = fmt.Sprintf("Calls from %s to %s fail while %s answers another client (%s at %s): the callers' side of the call (a trust store, TLS, DNS caching, proxy or client setting) is misconfigured; %s",
			joinNames(callers), host, host, logOrigin(ok), hhmm(ok.Timestamp), f.Statement)
		f.validated(fmt.Sprintf("%s serves another client meanwhile (%s, %s): %s", host, logOrigin(ok), hhmm(ok.Timestamp), quote(ok.Message)), ok.Cite)
		f.Remediation = append([]string{fmt.Sprintf("Compare the callers' settings for %s (trust store, TLS version, proxy, client options) with the client it answers", host)}, f.Remediation...)
		return
	}
	name, ok := ev.dependencyNormal(f.Entity, host)
	if !ok {
		if ev.dependencyUnread(f.Entity, host) && f.Score > unreadDependencyScore {
			f.Score = unreadDependencyScore
			f.inferred(fmt.Sprintf("the state of %s itself (its pods, series and logs) is not read yet", host))
		}
		return
	}
	callers := ev.blameCallers(f, lines, name)
	f.Statement = fmt.Sprintf("Calls from %s to %s fail while %s's own signals (its series, pods and logs) are normal: the callers' side of the call (a timeout, keep-alive, TLS or route setting) is misconfigured; %s",
		joinNames(callers), host, name, f.Statement)
	f.inferred(fmt.Sprintf("%s answers its other traffic normally: the failure is in how the callers call it", name))
	f.Remediation = append([]string{fmt.Sprintf("Check the callers' settings for calls to %s (timeouts and their units, keep-alive, TLS, proxy and route) against what it serves", host)}, f.Remediation...)
}

// blameCallers makes f the callers' configuration error: the workloads
// that logged the failing lines (not the dependency itself), the one
// caller its entity when there is one. It returns the callers.
func (ev *Evidence) blameCallers(f *Finding, lines []LogLine, dependency string) []string {
	var callers []string
	ns := ""
	for _, l := range lines {
		if svc := ev.logService(l); svc != "" && !strings.EqualFold(svc, dependency) {
			callers = appendUnique(callers, svc)
			ns = firstNonEmptyStr(ns, l.Namespace)
		}
	}
	f.Category = catConfig
	if len(callers) == 1 {
		f.Entity = deploymentEntity(firstNonEmptyStr(ns, ev.alertNamespace()), callers[0])
	}
	return callers
}

// A second topology row, for a peer outside the cluster: another client
// of the same host is served while the callers fail (a job with a newer
// trust store gets 200 from the partner whose certificate the service
// rejects). The peer works; what fails is the callers' side of the call.

// reRelay: a line or a source that relays the callers' own calls (a
// proxy's tunnel to the host is set up before the TLS handshake that
// fails): no other client.
var reRelay = regexp.MustCompile(`(?i)\bCONNECT\b|passthrough|tunnel|proxy|egress|ingress|gateway|envoy|nginx|haproxy|squid|sidecar`)

// reServed: a line that reports a call answered.
var reServed = regexp.MustCompile(`(?i)\b(?:200|201|202|204)\b|\bok\b|\bsucceeded\b|\bsuccess(?:ful(?:ly)?)?\b|\bcreated\b|\b(?:re)?connected\b|\bconnection (?:re-?)?established\b`)

// servedOthers finds a line, from a source none of the failing lines
// come from and at no error level, that names host and reports a call to
// it answered, between the first failure and 30 minutes after the last.
func (ev *Evidence) servedOthers(host string, failing []LogLine) (LogLine, bool) {
	host = strings.ToLower(host)
	if host == "" || len(failing) == 0 {
		return LogLine{}, false
	}
	sources := map[string]bool{}
	var first, last time.Time
	for _, l := range failing {
		sources[lineSource(l)] = true
		if l.Timestamp == nil {
			continue
		}
		if first.IsZero() || l.Timestamp.Before(first) {
			first = *l.Timestamp
		}
		if l.Timestamp.After(last) {
			last = *l.Timestamp
		}
	}
	if first.IsZero() {
		return LogLine{}, false
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || sources[lineSource(l)] || lineSource(l) == "" || ev.failingLine(l) || reRelay.MatchString(l.Message+" "+lineSource(l)) {
			continue
		}
		if l.Timestamp.Before(first) || l.Timestamp.After(last.Add(30*time.Minute)) {
			continue
		}
		if strings.Contains(strings.ToLower(l.Message), host) && reServed.MatchString(l.Message) {
			return l, true
		}
	}
	return LogLine{}, false
}

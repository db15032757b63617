package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
)

var (
	noPodsSignalRe = regexp.MustCompile(`(?i)selector (\S+) matches no pods|selector matches no pods`)
	noEndpointLog  = regexp.MustCompile(`(?i)(does not have any active endpoints?|no endpoints available for service|no available endpoints)`)
	labelPairRe    = regexp.MustCompile(`([a-z0-9./-]+)=([a-z0-9._-]+)`)
)

// detectServiceNoEndpoints: a Service whose selector matches no pod has no
// endpoints, so everything routed to it (ingress, clients) fails with 503 /
// connection errors while the pods themselves are healthy. When pods carry
// the selector's value under another label key, the labels changed under
// the Service (a rollout relabelled the pods). The culprit is the Service's
// selector (configuration), not the pods.
func detectServiceNoEndpoints(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "Service") {
			continue
		}
		var sel, near string
		match := false
		for _, sig := range r.Signals {
			if m := noPodsSignalRe.FindStringSubmatch(sig); m != nil {
				match, sel = true, m[1]
			}
			if strings.Contains(sig, "instead (labels changed") {
				near = sig
			}
		}
		key := r.Namespace + "/" + r.Name
		if !match || seen[key] {
			continue
		}
		seen[key] = true
		f := Finding{Mode: ModeNoEndpoints, Category: catConfig, Score: 0.85, Entity: "service/" + key}
		what := fmt.Sprintf("Service %s has no endpoints: its selector %s matches no pods", key, firstNonEmptyStr(sel, "(see the Service)"))
		f.validated(what, r.Cite)
		stmt := what
		if near != "" {
			f.validated(fmt.Sprintf("Service %s: %s", key, near), r.Cite)
			stmt += "; " + near
			f.Score += 0.05
		}
		// Who reports it: proxies and clients finding no endpoint.
		var lines []LogLine
		for _, l := range ev.Logs {
			if noEndpointLog.MatchString(l.Message) && (strings.Contains(l.Message, r.Name) || l.Service == r.Name) {
				lines = append(lines, l)
			}
		}
		stmt += f.quoteRouted(lines, "requests", 0.03)
		// The pods are healthy: the failure is routing, not the workload.
		var ready []Pod
		if near != "" {
			for _, p := range ev.Pods {
				if p.Namespace == r.Namespace && strings.Contains(near, p.Name) && podHealthy(p.Pod) {
					ready = append(ready, p)
				}
			}
		}
		if len(ready) > 0 {
			f.validated(fmt.Sprintf("The pods it should select are Running and Ready (%s): the workload is fine, only the selector misses it", joinNames(podNames(ready))), citesOfPods(ready))
			wl := ev.workloadOf(ready[0].Pod)
			if d, ok := ev.lastDeployOf(wl); ok {
				f.inferred(fmt.Sprintf("Deploy %s of %s at %s likely changed the pod labels the selector relied on", d.Revision, wl, hhmm(d.StartedAt)), d.Cite)
			}
		}
		// Sibling Services of the namespace that still have endpoints.
		var fine []string
		var fc Cite
		for _, o := range ev.Resources {
			if strings.EqualFold(o.Kind, "Service") && o.Namespace == r.Namespace && o.Name != r.Name && len(o.Signals) == 0 {
				fine = append(fine, o.Name)
				fc.merge(o.Cite)
			}
		}
		sort.Strings(fine)
		if len(fine) > 0 {
			f.validated(fmt.Sprintf("Other Services of %s have endpoints (%s)", r.Namespace, joinNames(fine)), fc)
		}
		var pairs []string
		for _, m := range labelPairRe.FindAllStringSubmatch(near, -1) {
			pairs = append(pairs, m[0])
		}
		f.Statement = stmt
		f.Chain = []string{"The pods' labels and the Service selector no longer agree", fmt.Sprintf("Service %s selects no pod and has no endpoints", key), "Requests routed to it get 503 / no endpoint, although the pods are healthy"}
		fix := fmt.Sprintf("Align the selector of Service %s with the pod labels", key)
		if len(pairs) > 0 {
			fix += " (" + strings.Join(pairs, ", ") + ")"
		}
		f.Remediation = []string{fix, "Change pod labels and Service selectors together, and alert on Services with zero endpoints"}
		f.Signals = []string{"no endpoints", "selector"}
		f.explains(ModeTrafficSaturation, "the errors come from a Service without endpoints, not from load")
		f.explains(ModeDependencyFailure, "the dependency is unreachable because its Service has no endpoints")
		f.explains(ModeAnomaly, "a Service without endpoints explains the failing requests")
		out = append(out, f)
	}
	return out
}

// detectServicePortUnserved: a Service whose port targets a port none of
// its selected pods declares routes every connection to a closed port: the
// endpoints look healthy, the pods are Ready, and the callers see refused
// connections or resets. The culprit is the Service's port mapping
// (configuration), not the pods nor the callers.
func detectServicePortUnserved(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "Service") {
			continue
		}
		detail := ""
		for _, sig := range r.Signals {
			if d, ok := strings.CutPrefix(sig, facts.SignalTargetPortUnserved); ok {
				detail = d
			}
		}
		key := r.Namespace + "/" + r.Name
		if detail == "" || seen[key] {
			continue
		}
		seen[key] = true
		f := Finding{Mode: ModePortUnserved, Category: catConfig, Score: 0.86, Entity: "service/" + key}
		what := fmt.Sprintf("Service %s: %s", key, detail)
		f.validated(what, r.Cite)
		stmt := "The targetPort of Service " + key + " is not served: " + detail
		// Who sees it: callers whose connections to the Service (its DNS
		// name) fail.
		var lines []LogLine
		for _, l := range ev.Logs {
			low := strings.ToLower(l.Message)
			if (isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN") && strings.Contains(low, strings.ToLower(r.Name)+"."+strings.ToLower(r.Namespace)) {
				lines = append(lines, l)
			}
		}
		stmt += f.quoteRouted(lines, "connections", 0.04)
		if c := ev.nearestChange(r.Name, ev.alertTime(), stmt); c != nil && !c.unrelated {
			f.inferred(fmt.Sprintf("Nearest change before the alert: %s", c.text), c.cite)
			for _, cm := range c.commits {
				f.validated(commitText(cm), cm.Cite)
			}
		}
		f.Statement = stmt
		f.Chain = []string{"The Service's targetPort and the port its pods listen on disagree", fmt.Sprintf("Service %s sends every connection to a port no pod serves", key), "Callers get refused or reset connections, although the pods are Running and Ready"}
		f.Remediation = []string{fmt.Sprintf("Set the targetPort of Service %s to the container port its pods declare (or to the port's name)", key), "Refer to container ports by name in Services so a port change in the pod spec cannot break the mapping"}
		f.Signals = []string{"targetPort", "connection refused"}
		f.explains(ModeDependencyFailure, "the dependency is unreachable because its Service targets a port its pods do not serve")
		f.explains(ModeTrafficSaturation, "the errors come from a Service port mapping, not from load")
		f.explains(ModeAnomaly, "a Service port no pod serves explains the failing connections")
		out = append(out, f)
	}
	return out
}

// quoteRouted quotes the log lines of callers whose what (requests,
// connections) routed to a Service fail: a claim with the most telling
// line, bonus added to the score; the statement's clause is returned, ""
// when there are none.
func (f *Finding) quoteRouted(lines []LogLine, what string, bonus float64) string {
	if len(lines) == 0 {
		return ""
	}
	rep := representative(lines, 1)[0]
	f.validated(fmt.Sprintf("%s log (%s): %s (%s)", rep.Cite.Source("logs"), logOrigin(rep), quote(rep.Message), plural(len(lines), "line", "lines")), citesOfLogs(lines))
	f.Score += bonus
	return fmt.Sprintf("; %s routed to it fail (e.g. %s)", what, quote(rep.Message))
}

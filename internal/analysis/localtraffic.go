package analysis

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// ModeLocalTraffic: a Service whose internal traffic policy is Local
// answers only the clients on the nodes of its ready endpoints; the calls
// of clients on every other node find no endpoint and time out or are
// refused, although the Service's pods are healthy.
const ModeLocalTraffic = "service_local_traffic"

// localTrafficOf reads a Service's Local-policy signal: its scope
// (internal or external) and the nodes of its ready endpoints.
func localTrafficOf(r Resource) (scope string, nodes []string, ok bool) {
	for _, sig := range r.Signals {
		rest, found := strings.CutPrefix(sig, facts.SignalLocalTraffic)
		if !found {
			continue
		}
		scope, list, _ := strings.Cut(rest, " nodes=")
		if list != "" {
			nodes = strings.Split(list, ",")
		}
		return scope, nodes, true
	}
	return "", nil, false
}

// namesService: text calls the Service by its cluster host name
// (<name>.<namespace>[.svc...]) or, inside its namespace, by a URL or
// address with its bare name.
func namesService(text, name, ns string) bool {
	low := strings.ToLower(text)
	name, ns = strings.ToLower(name), strings.ToLower(ns)
	return strings.Contains(low, name+"."+ns) || strings.Contains(low, "//"+name+"/") || strings.Contains(low, "//"+name+":")
}

func detectServiceLocalTraffic(ev *Evidence) []Finding {
	var out []Finding
	nodeOf := ev.podNodes()
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "Service") {
			continue
		}
		scope, nodes, ok := localTrafficOf(r)
		if !ok || scope != "internal" {
			continue
		}
		// The callers whose calls to the Service fail, by the node they
		// run on.
		var off, on []LogLine
		offPods := map[string]bool{}
		for _, l := range ev.Logs {
			if !(isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN") || !namesService(l.Message, r.Name, r.Namespace) {
				continue
			}
			n := nodeOf[l.Pod]
			switch {
			case n == "":
			case slices.Contains(nodes, n):
				on = append(on, l)
			default:
				off = append(off, l)
				offPods[l.Pod] = true
			}
		}
		if len(off) == 0 || len(on) > len(off) {
			continue // the failures do not follow the callers' placement
		}
		key := r.Namespace + "/" + r.Name
		f := Finding{Mode: ModeLocalTraffic, Category: catConfig, Score: 0.86, Entity: "service/" + key}
		f.validated(fmt.Sprintf("Service %s: internalTrafficPolicy: Local; its ready endpoints run on %s", key, joinNames(nodes)), r.Cite)
		pods := slices.Sorted(maps.Keys(offPods))
		var callerNodes []string
		for _, p := range pods {
			callerNodes = appendUnique(callerNodes, nodeOf[p])
		}
		sort.Strings(callerNodes)
		stmt := fmt.Sprintf("Service %s has internalTrafficPolicy: Local, so a client reaches only the endpoints on its own node: its ready endpoints run on %s, and the failing callers (%s) run on %s, where it has no local endpoints",
			key, joinNames(nodes), joinNames(pods), joinNames(callerNodes))
		stmt += f.quoteRouted(off, "calls", 0)
		if len(on) == 0 && len(nodes) > 0 {
			f.Score += 0.04
			f.inferred("No caller on a node with a local endpoint fails: the failures follow the callers' placement, not the Service's pods")
		}
		// What the node proxies say of the Service (no local endpoints).
		quoted := 0
		for _, l := range ev.Logs {
			if quoted < 2 && !offPods[l.Pod] && strings.Contains(strings.ToLower(l.Message), strings.ToLower(key)) {
				f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
				quoted++
			}
		}
		if c := ev.nearestChange(r.Name, ev.alertTime(), stmt); c != nil && !c.unrelated {
			f.inferred(fmt.Sprintf("Nearest change before the alert: %s", c.text), c.cite)
			for _, cm := range c.commits {
				f.validated(commitText(cm), cm.Cite)
			}
		}
		f.Statement = stmt
		f.explains(ModeDependencyFailure, "the dependency's pods are healthy; its Service's traffic policy keeps the callers on other nodes from reaching them")
		f.Chain = []string{fmt.Sprintf("Service %s is set to internalTrafficPolicy: Local", key), "kube-proxy on a node without a ready endpoint of it has no route for its cluster IP", "Clients on those nodes time out or are refused; clients beside an endpoint succeed"}
		f.Remediation = []string{fmt.Sprintf("Set internalTrafficPolicy of Service %s back to Cluster, or run an endpoint on every node its clients run on (a DaemonSet)", key), "Use Local only for node-local agents whose every client has an endpoint beside it"}
		f.Signals = []string{"internalTrafficPolicy", "Local", key}
		out = append(out, f)
	}
	return out
}

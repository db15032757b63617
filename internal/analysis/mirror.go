package analysis

import (
	"fmt"
	"regexp"
	"strings"
)

// A verdict derived from evidence: a workload that receives only mirrored
// traffic (a mesh route's mirror or request-mirror filter names it, no
// route sends it requests) answers no caller: its responses are discarded
// by the proxy. Its errors are a comparison's findings, not an outage; no
// production action is needed, and the report names the route.

// ModeMirrorOnly: the failing workload only receives mirrored traffic.
const ModeMirrorOnly = "mirror_only"

var (
	// reMirrorRef: a flattened spec line that names a mirror's target
	// (Istio's http[].mirror.host, the Gateway API's
	// requestMirror.backendRef.name).
	reMirrorRef = regexp.MustCompile(`(?i)mirror[a-z]*(?:\.[a-z]+)*\.(?:host|name)=([a-z0-9.-]+)`)
	// reRouteRef: a line that names a route's destination.
	reRouteRef = regexp.MustCompile(`(?i)(?:destination\.host|backendrefs\[\d+\]\.name|backend\.service\.name|service\.name)=([a-z0-9.-]+)`)
)

// mirrorOnly: some resource mirrors traffic to name and none routes to
// it; the route and its resource are returned.
func (ev *Evidence) mirrorOnly(name string) (string, Cite, bool) {
	short := func(h string) string { return strings.ToLower(strings.Split(h, ".")[0]) }
	name = strings.ToLower(name)
	route, cite, mirrored := "", Cite{}, false
	for _, r := range ev.Resources {
		for _, sig := range r.Signals {
			if m := reMirrorRef.FindStringSubmatch(sig); m != nil && short(m[1]) == name {
				mirrored = true
				route = r.Kind + " " + qualifiedName(r.Namespace, r.Name) + " (" + sig + ")"
				cite.merge(r.Cite)
			}
			if m := reRouteRef.FindStringSubmatch(sig); m != nil && short(m[1]) == name {
				return "", Cite{}, false // a route sends it real requests
			}
		}
	}
	return route, cite, mirrored
}

// mirrorFinding: the strongest candidate is a workload that only receives
// mirrored traffic.
func (ev *Evidence) mirrorFinding(top *candidate) (Finding, bool) {
	if top.kind != "workload" {
		return Finding{}, false
	}
	route, cite, ok := ev.mirrorOnly(top.name)
	if !ok {
		return Finding{}, false
	}
	f := healthyFinding(ModeMirrorOnly, top.entity, 0.7)
	f.Detector = ModeMirrorOnly
	f.Statement = fmt.Sprintf("No production action needed: %s only receives mirrored traffic (%s) and no route sends it requests; the proxy discards its responses, so its errors reach no caller", top.name, route)
	f.validated("Mirrored, not routed: "+route, cite)
	if len(top.errLines) > 0 {
		rep := templates(top.errLines)[0].lines[0]
		f.validated(fmt.Sprintf("Its errors (%s), on mirrored requests: %s", plural(len(top.errLines), "line", "lines"), quote(rep.Message)), rep.Cite)
	}
	f.Chain = []string{"A route mirrors a copy of its traffic to the workload", "The workload fails on the copies", "The proxy discards the mirrored responses: callers are served by the primary"}
	f.Remediation = []string{"No production action needed; fix the mirrored version before it takes real traffic"}
	f.Signals = []string{"mirror"}
	return f, true
}

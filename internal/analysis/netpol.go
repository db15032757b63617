package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ModeNetworkPolicy is traffic dropped by a NetworkPolicy: connections to a
// healthy dependency time out from the namespaces the policy covers.
const ModeNetworkPolicy = "network_policy_block"

var (
	// Connections that vanish (dropped packets), not refused ones.
	dropTimeoutRe = regexp.MustCompile(`(?i)(i/o timeout|dial tcp[^\n]{0,80}timeout|connect(ion)? timed? ?out|connect timeout|etimedout|no route to host)`)
	netpolNameRe  = regexp.MustCompile(`(?i)networkpolic(?:y|ies)\b[^a-z0-9]{1,4}"?([a-z0-9][a-z0-9-]*)/([a-z0-9][a-z0-9.-]*)`)
	// "<namespace> NetworkPolicy/<name>": how GitOps tools and kubectl
	// name a namespaced object they synced or applied.
	netpolKindNameRe = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9-]*)\s+networkpolic(?:y|ies)(?:\.networking\.k8s\.io)?/([a-z0-9][a-z0-9.-]*)`)
	netpolDenyRe     = regexp.MustCompile(`(?i)(policy denied|denied by (network ?)?policy|policy[- ]verdict[^\n]{0,40}(deny|denied|drop)|dropped by policy)`)
	svcHostRe        = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.svc(?:\.cluster\.local)?\b`)
)

// detectNetworkPolicyBlock: a workload's connections to a dependency time
// out, a NetworkPolicy of its namespace (or the dependency's) was created or
// changed shortly before the first timeout, and the dependency still serves
// other clients. The policy, not the dependency, is the cause: a
// configuration error.
func detectNetworkPolicyBlock(ev *Evidence) []Finding {
	var fails []LogLine
	callers := map[string]bool{}
	for _, l := range ev.Logs {
		if (isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN") && dropTimeoutRe.MatchString(l.Message) {
			fails = append(fails, l)
			callers[ev.logService(l)] = true
		}
	}
	if len(fails) < 3 {
		return nil
	}
	var first *time.Time
	for _, l := range fails {
		if l.Timestamp != nil && (first == nil || l.Timestamp.Before(*first)) {
			first = l.Timestamp
		}
	}
	nsOf := map[string]bool{}
	for _, l := range fails {
		if l.Namespace != "" {
			nsOf[l.Namespace] = true
		}
	}
	if a := ev.alertNamespace(); a != "" {
		nsOf[a] = true
	}
	// Dependencies the failing lines name by cluster DNS name. A name
	// lookup that times out was a call to the cluster DNS server (port
	// 53 in kube-system), not to the name it asked for.
	deps := map[string]string{} // short name -> namespace
	lookups := 0
	for _, l := range fails {
		if reLookupTimeout.MatchString(l.Message) {
			deps[clusterDNSWorkload] = clusterDNSNamespace
			lookups++
			continue
		}
		for _, m := range svcHostRe.FindAllStringSubmatch(l.Message, -1) {
			deps[strings.ToLower(m[1])] = strings.ToLower(m[2])
		}
	}
	// The policy: a change record naming it, or policy objects in evidence.
	type pol struct {
		ns, name string
		line     *LogLine
		cite     Cite
		created  *time.Time
		signals  []string
	}
	var pols []pol
	for i := range ev.Logs {
		l := ev.Logs[i]
		m := netpolNameRe.FindStringSubmatch(l.Message)
		if m == nil {
			m = netpolKindNameRe.FindStringSubmatch(l.Message)
		}
		if m == nil || !(nsOf[m[1]] || containsMap(deps, m[1])) {
			continue
		}
		if l.Timestamp != nil && first != nil && (l.Timestamp.After(first.Add(2*time.Minute)) || first.Sub(*l.Timestamp) > time.Hour) {
			continue
		}
		pols = append(pols, pol{ns: m[1], name: m[2], line: &ev.Logs[i], cite: l.Cite})
	}
	ports := map[string]bool{}
	for _, l := range fails {
		if reLookupTimeout.MatchString(l.Message) {
			ports["53"] = true
			continue
		}
		for _, m := range dialPortRe.FindAllStringSubmatch(l.Message, -1) {
			ports[m[1]] = true
		}
	}
	var objs []pol
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "NetworkPolicy") || !nsOf[r.Namespace] || !policyBlocks(r, deps, ports) {
			continue
		}
		if r.CreatedAt != nil && first != nil && (r.CreatedAt.After(first.Add(2*time.Minute)) || first.Sub(*r.CreatedAt) > time.Hour) {
			continue // older than the failure, or created after it
		}
		objs = append(objs, pol{ns: r.Namespace, name: r.Name, cite: r.Cite, created: r.CreatedAt, signals: r.Signals})
	}
	// A policy object in evidence outranks a log mention of one.
	pols = append(objs, pols...)
	if len(pols) == 0 {
		return nil
	}
	p := pols[0]
	f := Finding{Mode: ModeNetworkPolicy, Category: catConfig, Score: 0.8, Entity: "networkpolicy/" + p.ns + "/" + p.name}
	rep := representative(fails, 1)[0]
	var cs []string
	for c := range callers {
		if c != "" {
			cs = append(cs, c)
		}
	}
	sort.Strings(cs)
	stmt := fmt.Sprintf("NetworkPolicy %s/%s blocks the traffic of %s: %s time out (e.g. %s)", p.ns, p.name, joinNames(cs), plural(len(fails), "connection", "connections"), quote(rep.Message))
	f.validated(fmt.Sprintf("%s log (%s): %s (%s from %s)", rep.Cite.Source("logs"), logOrigin(rep), quote(rep.Message), plural(len(fails), "line", "lines"), hhmm(first)), citesOfLogs(fails))
	if len(p.signals) > 0 {
		f.validated(fmt.Sprintf("NetworkPolicy %s/%s: %s", p.ns, p.name, strings.Join(p.signals, "; ")), p.cite)
	}
	if p.created != nil && first != nil {
		stmt += fmt.Sprintf("; the policy was created at %s, %s before the first timeout", hhmm(p.created), durHuman(first.Sub(*p.created)))
		f.validated(fmt.Sprintf("NetworkPolicy %s/%s was created at %s; the first timeout follows at %s", p.ns, p.name, hhmm(p.created), hhmm(first)), p.cite)
		f.Score += 0.05
	}
	for i := range ev.Logs {
		if p.line == nil && netpolNameRe.MatchString(ev.Logs[i].Message) && strings.Contains(ev.Logs[i].Message, p.ns+"/"+p.name) {
			f.validated(fmt.Sprintf("%s log (%s): %s", ev.Logs[i].Cite.Source("logs"), logOrigin(ev.Logs[i]), quote(ev.Logs[i].Message)), ev.Logs[i].Cite)
			break
		}
	}
	if p.line != nil {
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", p.line.Cite.Source("logs"), logOrigin(*p.line), hhmm(p.line.Timestamp), quote(p.line.Message)), p.cite)
		if p.line.Timestamp != nil && first != nil {
			stmt += fmt.Sprintf("; the policy appeared at %s, %s before the first timeout", hhmm(p.line.Timestamp), durHuman(first.Sub(*p.line.Timestamp)))
			f.Score += 0.05
		}
	}
	var denies []LogLine
	for _, l := range ev.Logs {
		if netpolDenyRe.MatchString(l.Message) {
			denies = append(denies, l)
		}
	}
	if len(denies) > 0 {
		d := representative(denies, 1)[0]
		f.validated(fmt.Sprintf("The network plugin drops the traffic by policy (%s): %s", logOrigin(d), quote(d.Message)), citesOfLogs(denies))
		f.Score += 0.05
	}
	// The dependency still serves other clients: it is healthy.
	var names []string
	for d := range deps {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, dep := range names {
		var others []string
		var oc Cite
		for _, l := range ev.Logs {
			svc := ev.logService(l)
			if callers[svc] || isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" || !containsFold(l.Message, dep) {
				continue
			}
			if svc != "" && svc != dep {
				others = appendUnique(others, svc)
				oc.merge(l.Cite)
			}
		}
		if len(others) > 0 && len(others) <= 5 {
			f.validated(fmt.Sprintf("%s keeps serving other clients (%s): the dependency is healthy, the path from %s is blocked", dep, joinNames(others), joinNames(cs)), oc)
			stmt += fmt.Sprintf("; %s is healthy and still serves %s", dep, joinNames(others))
			f.Score += 0.05
		}
	}
	f.Statement = stmt
	f.Chain = []string{fmt.Sprintf("NetworkPolicy %s/%s takes effect in %s", p.ns, p.name, p.ns), "Packets to destinations the policy does not allow are dropped", "Connections time out (no refusal), readiness fails and requests error"}
	f.Remediation = []string{fmt.Sprintf("Allow the needed egress/ingress in NetworkPolicy %s/%s (or revert the change that added it)", p.ns, p.name), "Test default-deny policies against each workload's dependencies before syncing them"}
	f.Signals = []string{"networkpolicy", "timeout"}
	f.explains(ModeDependencyFailure, "the dependency is healthy; a NetworkPolicy drops the caller's traffic to it")
	if lookups > 0 {
		f.explains(ModeDNSFailure, "name lookups time out because the policy drops the caller's DNS traffic to the cluster DNS server")
	}
	f.explains(ModeTrafficSaturation, "errors come from dropped connections, not from load")
	f.explains(ModeProbeFailure, "readiness fails because the dependency is unreachable through the policy")
	f.explains(ModeAnomaly, "a NetworkPolicy dropping traffic explains the abnormal signals")
	return []Finding{f}
}

func containsMap(m map[string]string, ns string) bool {
	for _, v := range m {
		if v == ns {
			return true
		}
	}
	return false
}

// reLookupTimeout: a name lookup sent to a DNS server (port 53) that timed
// out: Go's resolver's words ("lookup x on 10.96.0.10:53: ... i/o
// timeout") and others' ("connection timed out; no servers could be
// reached").
var reLookupTimeout = regexp.MustCompile(`(?i)lookup \S+ on [0-9a-f.:\[\]]+:53\b[^\n]{0,120}(i/o timeout|timed? ?out)|no servers could be reached`)

var dialPortRe = regexp.MustCompile(`(?:\d+\.\d+\.\d+\.\d+|[a-z0-9.-]+):(\d{2,5})\b`)

// policyBlocks: the caller-side policy restricts egress and what it allows
// names neither the dependency's namespace nor its port.
func policyBlocks(r Resource, deps map[string]string, ports map[string]bool) bool {
	restricts := false
	allow := ""
	for _, sig := range r.Signals {
		l := strings.ToLower(sig)
		if strings.HasPrefix(l, "egress allows") {
			restricts = true
			allow += " " + l
		}
	}
	if !restricts {
		return false
	}
	for _, ns := range deps {
		if ns != "" && strings.Contains(allow, ns) {
			return false
		}
	}
	for p := range ports {
		if strings.Contains(allow, " "+p+"/") {
			return false
		}
	}
	return true
}

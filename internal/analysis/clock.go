package analysis

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// ModeClockSkew is a node whose clock drifted: time-bound checks (token
// nbf/iat/exp, certificate validity, signed requests) fail on the pods it
// runs and nowhere else.
const ModeClockSkew = "node_clock_skew"

// clockSkewMinSeconds: an offset beyond it breaks time-bound checks (token
// and signature validators allow a few seconds of leeway at most).
const clockSkewMinSeconds = 5.0

var (
	clockOffsetNameRe = regexp.MustCompile(`(?i)(timex_offset|clock_offset|clock_skew|ntp_offset|chrony.*offset|time_offset)`)
	clockSyncNameRe   = regexp.MustCompile(`(?i)(timex_sync_status|ntp_sync|clock_synchron|time_sync)`)
	clockLogRe        = regexp.MustCompile(`(?i)(not valid yet|not yet valid|used before (it was )?issued|issued (in|at) the future|\biat\b.{0,30}future|clock (skew|wrong|drift|is behind|is ahead|out of sync|not synchroni[sz]ed)|time (is )?out of sync|requesttimetooskewed|request time too skewed|signature not yet valid)`)
)

func nodeOfSeries(s Series) string {
	n := labelOf(s.Series, "node", "kubernetes_node", "nodename", "instance", "host")
	if i := strings.LastIndexByte(n, ':'); i > 0 {
		n = n[:i]
	}
	return n
}

// detectClockSkew: a node's clock offset is far from zero (time sync lost)
// and the time-bound checks of the pods on that node fail (tokens "not valid
// yet", skewed requests) while the same workload's pods on other nodes and
// the other nodes' clocks are fine. The culprit is the node, not the code,
// the configuration or the token issuer.
func detectClockSkew(ev *Evidence) []Finding {
	type skew struct {
		offset float64
		cite   Cite
	}
	skewed := map[string]skew{}
	var inSync []string
	var syncCite Cite
	unsynced := map[string]Cite{}
	for _, s := range ev.Series {
		node := nodeOfSeries(s)
		if node == "" {
			continue
		}
		switch {
		case clockOffsetNameRe.MatchString(s.Name):
			off := s.Latest
			if math.Abs(s.Min) > math.Abs(off) && math.Abs(s.Min) > math.Abs(s.Peak) {
				off = s.Min
			} else if math.Abs(s.Peak) > math.Abs(off) {
				off = s.Peak
			}
			if math.Abs(off) >= clockSkewMinSeconds {
				if cur, ok := skewed[node]; !ok || math.Abs(off) > math.Abs(cur.offset) {
					skewed[node] = skew{offset: off, cite: s.Cite}
				}
			} else if math.Abs(s.Latest) < 1 {
				inSync = appendUnique(inSync, node)
				syncCite.merge(s.Cite)
			}
		case clockSyncNameRe.MatchString(s.Name) && s.Latest == 0:
			unsynced[node] = s.Cite
		}
	}
	// Log lines of time-bound failures, and node-level clock lines.
	var lines []LogLine
	for _, l := range ev.Logs {
		if clockLogRe.MatchString(l.Message) {
			lines = append(lines, l)
		}
	}
	podNode := map[string]string{}
	for _, p := range ev.Pods {
		if p.Node != "" {
			podNode[p.Name] = p.Node
		}
	}
	// Nodes named by the failing lines: through the pod that logged, or in the text.
	byNode := map[string][]LogLine{}
	for _, l := range lines {
		node := podNode[l.Pod]
		if node == "" {
			for _, n := range ev.Nodes {
				if strings.Contains(l.Message, n.Name) || l.Service == n.Name {
					node = n.Name
				}
			}
			for n := range skewed {
				if strings.Contains(l.Message, n) {
					node = n
				}
			}
		}
		if node != "" {
			byNode[node] = append(byNode[node], l)
		}
	}
	var nodes []string
	for n := range skewed {
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		// No clock metric: a node whose own logs say its clock is wrong and
		// whose pods fail time-bound checks.
		for n, ls := range byNode {
			own, app := false, false
			for _, l := range ls {
				if l.Pod == "" && containsFold(l.Message, "clock") {
					own = true
				} else if l.Pod != "" {
					app = true
				}
			}
			if own && app {
				nodes = append(nodes, n)
			}
		}
	}
	sort.Strings(nodes)
	var out []Finding
	for _, node := range nodes {
		f := Finding{Mode: ModeClockSkew, Category: catInfra, Score: 0.7, Entity: "node/" + node}
		sk, hasMetric := skewed[node]
		what := fmt.Sprintf("the clock of node %s is out of sync", node)
		if hasMetric {
			dir := "behind"
			if sk.offset > 0 {
				dir = "ahead"
			}
			what = fmt.Sprintf("the clock of node %s is %s s %s (clock offset %s s)", node, num(math.Abs(sk.offset)), dir, num(sk.offset))
			f.validated("Node clock: "+what, sk.cite)
		}
		if c, ok := unsynced[node]; ok {
			f.validated(fmt.Sprintf("Time synchronisation of node %s is lost (sync status 0)", node), c)
			f.Score += 0.03
		}
		ls := byNode[node]
		var pods []string
		var nodeLines []LogLine
		for _, l := range ls {
			if l.Pod != "" {
				pods = appendUnique(pods, l.Pod)
			} else {
				nodeLines = append(nodeLines, l)
			}
		}
		sort.Strings(pods)
		for _, l := range nodeLines {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
			break
		}
		stmt := "Clock skew on node " + node + ": " + what
		if len(pods) > 0 {
			var appLines []LogLine
			for _, l := range ls {
				if l.Pod != "" {
					appLines = append(appLines, l)
				}
			}
			rep := representative(appLines, 1)[0]
			f.validated(fmt.Sprintf("Time-bound checks fail only on the pods of node %s (%s): %s, e.g. %s", node, joinNames(pods), plural(len(appLines), "line", "lines"), quote(rep.Message)), citesOfLogs(appLines))
			stmt += fmt.Sprintf("; the pods on it (%s) reject time-bound credentials (e.g. %s)", joinNames(pods), quote(rep.Message))
			f.Score += 0.12
			// The same workloads' pods on other nodes.
			var fine []string
			var fc Cite
			wls := map[string]bool{}
			for _, p := range ev.Pods {
				if containsStr(pods, p.Name) {
					wls[ev.workloadOf(p.Pod)] = true
				}
			}
			for _, p := range ev.Pods {
				if p.Node != "" && p.Node != node && wls[ev.workloadOf(p.Pod)] && !containsStr(pods, p.Name) {
					fine = append(fine, p.Name+" on "+p.Node)
					fc.merge(p.Cite)
				}
			}
			if len(fine) > 0 {
				f.validated(fmt.Sprintf("Pods of the same workload on other nodes log no such errors: %s", joinNames(fine)), fc)
				f.Score += 0.03
			}
		}
		if len(inSync) > 0 {
			var others []string
			for _, n := range inSync {
				if n != node {
					others = append(others, n)
				}
			}
			if len(others) > 0 {
				f.validated(fmt.Sprintf("The clocks of the other nodes are in sync (%s): not a cluster-wide time problem", joinNames(others)), syncCite)
			}
		}
		// Services whose logs show no error at all (the issuer of the
		// credentials keeps working).
		errs := map[string]bool{}
		seen := map[string]bool{}
		cites := map[string]Cite{}
		for _, l := range ev.Logs {
			svc := ev.logService(l)
			if svc == "" || l.Pod == "" {
				continue
			}
			seen[svc] = true
			c := cites[svc]
			c.merge(l.Cite)
			cites[svc] = c
			if isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" {
				errs[svc] = true
			}
		}
		var clean []string
		var cc Cite
		for s := range seen {
			if !errs[s] {
				clean = append(clean, s)
				cc.merge(cites[s])
			}
		}
		sort.Strings(clean)
		if len(clean) > 0 && len(clean) <= 5 {
			f.validated(fmt.Sprintf("Services logging without errors or warnings: %s (they are not the cause)", joinNames(clean)), cc)
		}
		f.Statement = stmt
		f.Chain = []string{fmt.Sprintf("Node %s loses time synchronisation and its clock drifts", node), "Pods on the node judge token/certificate validity windows with the wrong time", "Valid credentials are rejected on that node only, and requests routed there fail"}
		f.Remediation = []string{fmt.Sprintf("Cordon and drain node %s, then restore its time synchronisation (NTP/chrony, host time sync) before uncordoning", node), "Alert on node clock offset and sync status"}
		f.Signals = []string{"clock skew", node}
		f.explains(ModeTrafficSaturation, "the errors are credentials rejected by a skewed clock, not load")
		f.explains(ModeCodeException, "the rejections come from the node's clock, not from the code")
		f.explains(ModeDependencyFailure, "the credential issuer works; the node's clock misjudges its tokens")
		f.explains(ModeNodeNotReady, "the node's clock, not its readiness, breaks the pods")
		out = append(out, f)
	}
	return out
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

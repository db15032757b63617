package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A row of the cause-to-effect table for the source ports of outbound
// connections: a NAT gateway (AWS NAT Gateway, Cloud NAT, an Azure load
// balancer's SNAT) or a host's ephemeral range gives each connection to one
// destination a port of its own, and a client that opens a connection per
// request (keep-alive off, a new client per call) uses them up. The
// gateway's allocation errors, or the kernel's EADDRNOTAVAIL, are the
// mechanism; the client's connect timeouts to a healthy remote are the
// symptom. A resource exhaustion, whatever the remote's name suggests: the
// remote never saw the connections.

// ModeSourcePortExhaustion: outbound connections out of source ports.
const ModeSourcePortExhaustion = "source_port_exhaustion"

var (
	// reSourcePortAlloc: a record that a source port could not be
	// allocated (the gateway's metric or flow log, the kernel's error).
	reSourcePortAlloc = regexp.MustCompile(`(?i)\berror[_ ]?port[_ ]?allocation\b|\bport[ _]?allocation[ _](?:error|fail\w*)\b|\ballocation_status"?\s*[:=]\s*"?dropped\b|\bcannot assign requested address\b|\beaddrnotavail\b|\bnat_allocation_failed\b|\bsnat\b[^\n]{0,80}\b(?:exhaust\w*|ports? (?:in use|used up|allocation))|\bexhaust\w*\b[^\n]{0,40}\bsnat\b|\bephemeral ports?\b[^\n]{0,40}\b(?:exhaust\w*|run out|ran out|depleted)`)
	// reGatewayName: the gateway a record names.
	reGatewayName = regexp.MustCompile(`(?i)(?:nat_?gateway_?id|natgatewayid|gateway_name|nat[_ ]?gateway|router_nat)"?\s*[=:]\s*"?([\w.-]{3,})|\b(nat-[0-9a-z][\w-]{3,})`)
	// reConnectFailure: a connection that was never established.
	reConnectFailure = regexp.MustCompile(`(?i)\bconnect(?:ion)?(?::| to)?[^\n]{0,60}\b(?:timed? ?out|timeout)\b|\betimedout\b|\bcannot assign requested address\b|\bdial tcp[^\n]{0,80}\b(?:i/o timeout|timed? ?out)`)
)

func detectSourcePortExhaustion(ev *Evidence) []Finding {
	var signals []LogLine
	for _, l := range ev.Logs {
		if reSourcePortAlloc.MatchString(l.Message) {
			signals = append(signals, l)
		}
	}
	var sigSeries []Series
	for _, s := range ev.Series {
		if reSourcePortAlloc.MatchString(strings.ReplaceAll(s.Name, "_", " ")) && s.Peak > 0 {
			sigSeries = append(sigSeries, s)
		}
	}
	if len(signals) == 0 && len(sigSeries) == 0 {
		return nil
	}
	// The clients: the services whose connections fail to establish.
	byClient := map[string][]LogLine{}
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) || !reConnectFailure.MatchString(l.Message) {
			continue
		}
		svc := ev.logService(l)
		byClient[svc] = append(byClient[svc], l)
	}
	var clients []string
	for c := range byClient {
		if c != "" {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		return nil
	}
	sort.Slice(clients, func(i, j int) bool {
		if a, b := len(byClient[clients[i]]), len(byClient[clients[j]]); a != b {
			return a > b
		}
		return clients[i] < clients[j]
	})
	client := clients[0]
	failures := byClient[client]
	first := failures[0].Timestamp
	// The allocation records must belong to the incident: within an hour of
	// the first connect failure.
	near := func(t *time.Time) bool {
		return t == nil || first == nil || t.Sub(*first) < time.Hour && first.Sub(*t) < time.Hour
	}
	var sig []LogLine
	for _, l := range signals {
		if near(l.Timestamp) {
			sig = append(sig, l)
		}
	}
	if len(sig) == 0 && len(sigSeries) == 0 {
		return nil
	}
	gateway := ""
	for _, l := range sig {
		if m := reGatewayName.FindStringSubmatch(l.Message); m != nil {
			gateway = m[1] + m[2]
			break
		}
	}
	for _, s := range sigSeries {
		for k, v := range s.Labels {
			if gateway == "" && (strings.Contains(strings.ToLower(k), "gateway") || strings.Contains(strings.ToLower(k), "nat")) && v != "" {
				gateway = v
			}
		}
	}
	ns := failures[0].Namespace
	if ns == "" {
		ns = ev.alertField("namespace", "kube_namespace")
	}
	// Settled: the client's change that opens more connections is quoted
	// as its latest, and the row stays the exhausted resource's, as SNAT
	// and ephemeral port exhaustion are reported, whatever kind of change
	// preceded it.
	f := Finding{Mode: ModeSourcePortExhaustion, Category: catResource, Score: 0.86, Entity: deploymentEntity(ns, client), Settled: true}
	where := "the host's ephemeral port range"
	if gateway != "" {
		f.Entity = "natgateway/" + gateway
		where = "NAT gateway " + gateway
	}
	var evidence string
	switch {
	case len(sig) > 0:
		evidence = quote(sig[0].Message)
		f.validated(fmt.Sprintf("%s log (%s): %s", sig[0].Cite.Source("logs"), logOrigin(sig[0]), quote(sig[0].Message)), citesOfLogs(sig))
	default:
		s := sigSeries[0]
		evidence = fmt.Sprintf("%s peaked at %g", seriesLabel(s), s.Peak)
		f.validated(fmt.Sprintf("Metric %s: peak %g, latest %g", seriesLabel(s), s.Peak, s.Latest), s.Cite)
	}
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", failures[0].Cite.Source("logs"), logOrigin(failures[0]), logLevel(failures[0].LogLine), quote(failures[0].Message)), citesOfLogs(failures))
	f.Statement = fmt.Sprintf("%s's outbound connections run out of source ports at %s (%s): %s from %s since %s",
		client, where, evidence, plural(len(failures), "connection failure", "connection failures"), client, hhmm(first))
	if c := ev.latestCommitWithin(first, clientCommitLookback, func(c *Commit) bool { return !c.Removed && strings.EqualFold(c.Service, client) }); c != nil {
		f.Statement += fmt.Sprintf("; the latest change of %s before it is commit %s (%s)", client, short(c.SHA), clip(firstNonEmptyStr(c.Message, c.Summary), 80))
		f.inferred(fmt.Sprintf("Commit %s of %s precedes the first failure: how it opens connections (keep-alive, one client per call) decides how many ports it holds", short(c.SHA), client), c.Cite)
	}
	f.inferred(fmt.Sprintf("Each connection to one destination holds a source port until it closes (and through TIME_WAIT after): %s's connections fail before the remote sees them, so the remote is not at fault", client))
	f.Chain = []string{
		fmt.Sprintf("%s opens outbound connections faster than they are reused or released", client),
		fmt.Sprintf("%s has no source port left for new connections", where),
		fmt.Sprintf("%s's connects time out or fail and the alert fires", client),
	}
	f.Remediation = []string{
		fmt.Sprintf("Reuse connections in %s (keep-alive, one shared client and pool)", client),
		"Add source addresses or ports to the gateway (more public IPs, more ports per instance) while the client is fixed",
	}
	f.Signals = []string{"ports", "exhaustion", client}
	for _, m := range []string{ModeDependencyFailure, ModeAnomaly, ModeCodeException, ModeDeployRegression, ModeTrafficSaturation, ModeDNSFailure} {
		f.explains(m, fmt.Sprintf("%s's connect failures are the source ports it ran out of, not the remote's failure", client))
	}
	return []Finding{f}
}

// clientCommitLookback: how long before the first failure a client's
// commit is still its latest change worth quoting.
const clientCommitLookback = 7 * 24 * time.Hour

package analysis

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A row of the cause-to-effect table for the network path between a
// client and what it calls: a router, switch or host whose link, routes or
// connection tracking fail (CRC errors on an optic, a BGP session down and
// its routes withdrawn, a host's routes flushed, a neighbour table full,
// conntrack marking packets invalid) records it in its own log, while the
// clients see transport failures (timeouts, no route to host, resets) to a
// peer that never saw the calls. The path is the cause, an infrastructure
// fault; the callee is not the culprit, however its callers' errors name
// it.

// ModeNetworkPath: the network path between caller and callee fails.
const ModeNetworkPath = "network_path"

var (
	// reNetPathFault: a network element's record of its own fault.
	reNetPathFault = regexp.MustCompile(`(?i)\bcrc(?:/align)? errors?\b|\binput errors?\b|\binput crc\b|\brx power low\b|\blink (?:is )?down\b|\bcarrier (?:lost|down)\b|\bbgp session (?:down|closed|lost)\b|\bremoving \d+ routes\b|\bremoving (?:foreign )?routing\b|\broutes? (?:flushed|withdrawn|removed)\b|\bneighbou?r table overflow\b|\barp_cache\b|\bconntrack\b[^\n]{0,60}\b(?:invalid|insert_failed|table full|dropping)\b|\bpacket loss\b`)
	// reTransportFailure: a caller's call that failed in transport.
	reTransportFailure = regexp.MustCompile(`(?i)\bno route to host\b|\bi/o timeout\b|\bconnect(?:ion)? timed? ?out\b|\bconnection reset\b|\breset by peer\b|\betimedout\b|\beconnreset\b|\bread timeout\b|\btimed out\b`)
)

// netPathWindow: a network record this long before the first transport
// failure still belongs to the incident.
const netPathWindow = 2 * time.Hour

func detectNetworkPath(ev *Evidence) []Finding {
	records, client, fails := ev.recordsAndVictims(reNetPathFault, reTransportFailure)
	if client == "" {
		return nil
	}
	first, last := fails[0].Timestamp, fails[len(fails)-1].Timestamp
	var near []LogLine
	for _, l := range records {
		if l.Timestamp == nil || first == nil || (!l.Timestamp.Before(first.Add(-netPathWindow)) && (last == nil || !l.Timestamp.After(*last))) {
			near = append(near, l)
		}
	}
	if len(near) == 0 {
		return nil
	}
	rec := near[0]
	elem := ev.logService(rec)
	entity := "device/" + elem
	nodes := ev.knownNodes()
	for _, n := range nodes {
		if strings.Contains(rec.Message, n) || strings.EqualFold(elem, n) {
			entity = "node/" + n
			break
		}
	}
	if elem == "" && entity == "device/" {
		return nil
	}
	f := Finding{Mode: ModeNetworkPath, Category: catInfra, Score: 0.82, Entity: entity}
	f.Statement = fmt.Sprintf("The network path of %s fails: %s records %s, while %s's calls fail in transport (%s, e.g. %s)",
		client, elem, quote(rec.Message), client, plural(len(fails), "failure", "failures"), quote(fails[0].Message))
	for _, l := range representative(near, 2) {
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), quote(l.Message)), citesOfLogs(sameSig(near, l)))
	}
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", fails[0].Cite.Source("logs"), logOrigin(fails[0]), logLevel(fails[0].LogLine), quote(fails[0].Message)), citesOfLogs(fails))
	f.inferred(fmt.Sprintf("%s's calls fail before its peer answers (timeouts, no route, resets) while a network element on the path reports its own fault: the path drops them, not the peer", client))
	f.Chain = []string{
		fmt.Sprintf("A network element on the path fails (%s)", clip(rec.Message, 100)),
		"Packets between the caller and its peer are dropped or misrouted",
		fmt.Sprintf("%s's calls time out or are refused and the alert fires", client),
	}
	f.Remediation = []string{
		fmt.Sprintf("Repair or route around %s (the link, its optic, its routes or session, its connection tracking)", elem),
		"Then check the callers recover without a restart",
	}
	f.Signals = []string{"network", elem, client}
	for _, m := range []string{ModeDependencyFailure, ModeAnomaly, ModeCodeException, ModeDeployRegression, ModeTrafficSaturation} {
		f.explains(m, fmt.Sprintf("%s's transport failures are the path's, not the peer's", client))
	}
	return []Finding{f}
}

// recordsAndVictims are the lines that match rec (an element's record of
// its own fault) and, among the other services, the one with the most
// error lines that match fail, with those lines; client is "" when no
// service has two.
func (ev *Evidence) recordsAndVictims(rec, fail *regexp.Regexp) (records []LogLine, client string, fails []LogLine) {
	for _, l := range ev.Logs {
		if rec.MatchString(l.Message) {
			records = append(records, l)
		}
	}
	if len(records) == 0 {
		return nil, "", nil
	}
	recSvc := map[string]bool{}
	for _, l := range records {
		recSvc[ev.logService(l)] = true
	}
	byClient := map[string][]LogLine{}
	var clients []string
	for _, l := range ev.Logs {
		svc := ev.logService(l)
		if recSvc[svc] || !isErrorLog(l.LogLine) || !fail.MatchString(l.Message) {
			continue
		}
		if _, ok := byClient[svc]; !ok {
			clients = append(clients, svc)
		}
		byClient[svc] = append(byClient[svc], l)
	}
	for _, c := range clients {
		if client == "" || len(byClient[c]) > len(byClient[client]) {
			client = c
		}
	}
	if client == "" || len(byClient[client]) < 2 {
		return records, "", nil
	}
	return records, client, byClient[client]
}

package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// A row of the cause-to-effect table for an endpoint that moved: a
// failover, a replacement or a migration gives a name a new address and
// says so ("now resolves to 10.0.9.41 (was 10.0.3.18)"); a client that
// keeps connecting to the old address after that (it cached the name's
// address forever, as a JVM does by default with a security manager, or
// it never re-resolves its pool's connections) fails while the other
// clients follow the move. The client's resolution setting is the cause,
// a configuration error; the endpoint's move is the trigger, planned or
// not, and the endpoint itself serves.

// ModeStaleAddress: a client still connects to an endpoint's old address.
const ModeStaleAddress = "stale_address"

var (
	// reAddressMoved: a record that a name's address changed, old and new.
	reAddressMoved = regexp.MustCompile(`(?i)(?:now (?:resolves to |points to |is )?|new (?:ip|address)(?: is)?|moved to|->|→|to)\s*\(?\s*(\d{1,3}(?:\.\d{1,3}){3})\)?[^\n]{0,40}?\(?\b(?:was|previously|old(?: ip| address)?|from)\b:?\s*(\d{1,3}(?:\.\d{1,3}){3})|\bfrom\s+(\d{1,3}(?:\.\d{1,3}){3})\s+to\s+(\d{1,3}(?:\.\d{1,3}){3})\b|\b(\d{1,3}(?:\.\d{1,3}){3})\s*(?:->|→)\s*(\d{1,3}(?:\.\d{1,3}){3})\b`)
)

// movedAddress reads a record of an address change: old and new, ok when
// the text says one.
func movedAddress(text string) (old, new string, ok bool) {
	m := reAddressMoved.FindStringSubmatch(text)
	switch {
	case m == nil:
		return "", "", false
	case m[1] != "":
		return m[2], m[1], true
	case m[3] != "":
		return m[3], m[4], true
	default:
		return m[5], m[6], true
	}
}

func detectStaleAddress(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, rec := range ev.Logs {
		old, newAddr, ok := movedAddress(rec.Message)
		if !ok || old == newAddr || seen[old] || rec.Timestamp == nil {
			continue
		}
		seen[old] = true
		// The clients that fail on the old address after the move, and
		// those that reached the new one.
		failing := map[string][]LogLine{}
		var followed []LogLine
		for _, l := range ev.Logs {
			if l.Timestamp == nil || l.Timestamp.Before(*rec.Timestamp) || l.Message == rec.Message {
				continue
			}
			ips := reDottedIP.FindAllString(l.Message, -1)
			has := func(ip string) bool { return slices.Contains(ips, ip) }
			switch {
			case has(old) && isErrorLog(l.LogLine):
				svc := ev.logService(l)
				failing[svc] = append(failing[svc], l)
			case has(newAddr) && !isErrorLog(l.LogLine):
				followed = append(followed, l)
			}
		}
		var clients []string
		for c := range failing {
			if c != "" {
				clients = append(clients, c)
			}
		}
		if len(clients) == 0 {
			continue
		}
		sort.Slice(clients, func(i, j int) bool { return len(failing[clients[i]]) > len(failing[clients[j]]) })
		client := clients[0]
		lines := failing[client]
		if len(lines) < 2 {
			continue
		}
		ns := firstNonEmptyStr(lines[0].Namespace, ev.alertField("namespace", "kube_namespace"))
		f := Finding{Mode: ModeStaleAddress, Category: catConfig, Score: 0.84, Entity: deploymentEntity(ns, client)}
		f.Statement = fmt.Sprintf("%s keeps connecting to the old address %s after the endpoint moved to %s at %s: %s since (e.g. %s)",
			client, old, newAddr, hhmm(rec.Timestamp), plural(len(lines), "failure", "failures"), quote(lines[0].Message))
		f.validated(fmt.Sprintf("%s log (%s, %s) at %s: %s", rec.Cite.Source("logs"), logOrigin(rec), logLevel(rec.LogLine), hhmm(rec.Timestamp), quote(rec.Message)), rec.Cite)
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", lines[0].Cite.Source("logs"), logOrigin(lines[0]), logLevel(lines[0].LogLine), quote(lines[0].Message)), citesOfLogs(lines))
		if len(followed) > 0 {
			l := followed[0]
			f.validated(fmt.Sprintf("Another client reached the new address (%s, %s): %s", logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), citesOfLogs(followed))
			f.Score += 0.04
		}
		f.inferred(fmt.Sprintf("The endpoint serves at %s; %s still uses the address it resolved before the move: it caches the name's address (a DNS cache TTL such as the JVM's networkaddress.cache.ttl) or keeps connections it never re-resolves", newAddr, client))
		f.Chain = []string{
			fmt.Sprintf("The endpoint moves from %s to %s (%s)", old, newAddr, clip(rec.Message, 100)),
			fmt.Sprintf("%s keeps the old address and its connections to %s fail", client, old),
			"Its requests fail and the alert fires",
		}
		f.Remediation = []string{
			fmt.Sprintf("Restart %s now to resolve the name again", client),
			fmt.Sprintf("Bound %s's DNS cache (networkaddress.cache.ttl or its runtime's equivalent) and the lifetime of its pooled connections", client),
		}
		f.Signals = []string{"stale address", old, newAddr, client}
		for _, m := range []string{ModeFailover, ModeConnPoolExhaustion, ModeDependencyFailure, ModeAnomaly, ModeConnExhaustion} {
			f.explains(m, fmt.Sprintf("%s's failures are connections to the address the endpoint left", client))
		}
		out = append(out, f)
	}
	return out
}

// reDottedIP: an IPv4 address (ports and prefixes beside it excluded).
var reDottedIP = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}\b`)

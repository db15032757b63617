package analysis

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/rcamesh/rcamesh/internal/signal"
)

// A verdict derived from evidence: errors that are the clients' (requests
// the service refused as malformed, unauthorised or unknown: HTTP 4xx)
// while its server errors, its pods and its restarts are normal, are noise
// from callers (a scanner, a misconfigured client), not a failure of the
// service. The alert fired on them; no production action is needed on the
// service, and the report says whose requests they were.

// ModeClientNoise: the only abnormal signals are client errors.
const ModeClientNoise = "client_errors_only"

// clientNoise reads the anomaly summary's strongest candidate: a workload
// whose abnormal series are all client-error (4xx) series, none of them a
// server error, with no restarts, unready or failed pods and no abnormal
// rollout condition.
func (ev *Evidence) clientNoise(top *candidate) (Finding, bool) {
	if top.kind != "workload" || top.restarts > 0 || len(top.notReady) > 0 || len(top.badPods) > 0 || len(top.conditions) > 0 {
		return Finding{}, false
	}
	var client []seriesChange
	for _, ch := range top.changes {
		if _, server := signal.StatusError(ch.s.Labels); server {
			return Finding{}, false
		}
		if signal.ClientError(ch.s.Labels) {
			client = append(client, ch)
		}
	}
	// Refusals of the system's own callers (an authorisation policy, a
	// route, a client released with a bug) are a fault to fix; only
	// requests from outside, as the access log records them, are noise.
	who, sender, whoCite, outside := ev.clientErrorSenders()
	if !outside {
		return Finding{}, false
	}
	if len(client) == 0 && !linesName(top.errLines, sender) {
		// No client-error series: the service's own error lines must be
		// about the outside sender's requests (they name its address).
		return Finding{}, false
	}
	// Any other series of the workload that reports server errors must
	// be quiet too (a 5xx series that did not move is fine).
	for _, ch := range top.changes {
		if seriesKindOf(ch.s.Series) == "latency" && ch.r.tail > ch.r.head*2 {
			return Finding{}, false // slower for everyone: not only bad requests
		}
	}
	f := healthyFinding(ModeClientNoise, top.entity, 0.66)
	f.Detector = ModeClientNoise
	what := fmt.Sprintf("its error lines are about the requests of %s", sender)
	if len(client) > 0 {
		what = client[0].text()
	}
	f.Statement = fmt.Sprintf("No failure of %s: the errors are its clients' (HTTP 4xx, requests it refused), not its own: %s; no server error rose, no pod restarted or became unready", top.name, what)
	for _, ch := range client[:min(3, len(client))] {
		f.validated("Client errors (4xx): "+ch.text(), ch.s.Cite)
	}
	if len(top.errLines) > 0 {
		ts := templates(top.errLines)
		rep := ts[0].lines[0]
		f.validated(fmt.Sprintf("What the service logged about them (%d lines, %s): %s", len(top.errLines), logOrigin(rep), quote(rep.Message)), rep.Cite)
		f.Statement += "; it logged " + quote(clip(rep.Message, 160))
	}
	f.validated("The refused requests, as the access log recorded them: "+who, whoCite)
	f.Statement += "; the access log shows who sent them: " + who
	f.Chain = []string{"Clients send requests the service refuses (4xx)", "The error-count alert fires on the refusals", "The service itself serves its other requests normally"}
	f.Remediation = []string{"No action needed on the service; if the requests are unwanted (a scanner), block them at the edge", "Alert on server errors (5xx) and latency rather than on all errors"}
	f.Signals = []string{"client errors"}
	f.Sources = []string{"metrics"}
	if len(client) == 0 {
		f.Sources = []string{"logs"}
	}
	return f, true
}

// linesName: one of lines names addr (an IP address) as a whole token
// (not inside a longer address, a version or a host:port).
func linesName(lines []LogLine, addr string) bool {
	if addr == "" {
		return false
	}
	re := regexp.MustCompile(`(?:^|[^0-9.:])` + regexp.QuoteMeta(addr) + `(?:$|[^0-9.:])`)
	return slices.ContainsFunc(lines, func(l LogLine) bool { return re.MatchString(l.Message) })
}

// reAccessLog: a line of the NCSA common or combined access log format
// (nginx, Apache, Envoy's default, most ingress controllers): client,
// request, status, size, and in the combined form referer and user agent.
var reAccessLog = regexp.MustCompile(`^(\S+) \S+ \S+ (?:\[[^\]]+\] )?"(\S+) (\S+)[^"]*" (\d{3}) \S+(?: "[^"]*" "([^"]*)")?`)

// reRefusalLine: a request an edge (a WAF, a gateway, a rate limiter)
// answered, in a line of its own shape: the client's address, the quoted
// request, then its status ("denied 203.0.113.43 \"GET /p?page=9\"
// ua=\"Bot/3\" -> 403"); reUserAgent its user agent.
var (
	reRefusalLine = regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3})\b[^\n"]{0,40}"(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (\S+)[^"]*"[^\n]{0,120}?(?:->|=>|status[=:]\s*|code[=:]\s*|returned\s+)\s*(4\d\d)\b`)
	reUserAgent   = regexp.MustCompile(`(?i)\b(?:ua|user[-_]?agent)\s*[=:]\s*"([^"]*)"`)
)

// refusalLine reads a line of reRefusalLine as reAccessLog's groups
// (client, method, path, status, user agent); nil when it is not one.
func refusalLine(msg string) []string {
	m := reRefusalLine.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	agent := ""
	if u := reUserAgent.FindStringSubmatch(msg); u != nil {
		agent = u[1]
	}
	return []string{m[0], m[1], m[2], m[3], m[4], agent}
}

// clientErrorSenders summarises the access-log lines with a client-error
// status: the most frequent client and user agent, and a request path;
// ok only when that client is an address outside the private ranges.
func (ev *Evidence) clientErrorSenders() (who, client string, c Cite, ok bool) {
	type key struct{ client, agent string }
	counts := map[key]int{}
	example := map[key]string{}
	cites := map[key]Cite{}
	for _, l := range ev.Logs {
		m := reAccessLog.FindStringSubmatch(strings.TrimSpace(l.Message))
		if m == nil {
			m = refusalLine(l.Message)
		}
		if m == nil || m[4][0] != '4' || m[4] == "429" || m[4] == "408" {
			continue
		}
		k := key{m[1], m[5]}
		counts[k]++
		if _, ok := example[k]; !ok {
			example[k] = m[2] + " " + m[3] + " " + m[4]
		}
		c := cites[k]
		c.merge(l.Cite)
		cites[k] = c
	}
	var best key
	n := 0
	for k, c := range counts {
		if c > n || c == n && k.client < best.client {
			best, n = k, c
		}
	}
	if n == 0 {
		return "", "", Cite{}, false
	}
	if ip := net.ParseIP(best.client); ip == nil || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
		return "", "", Cite{}, false // a caller inside the system, or no address
	}
	who = fmt.Sprintf("%d requests from %s", n, best.client)
	if best.agent != "" && best.agent != "-" {
		who += fmt.Sprintf(" with user agent %s", quote(best.agent))
	}
	who += fmt.Sprintf(", e.g. %s", quote(example[best]))
	return who, best.client, cites[best], true
}

// A second reading of the same kind: errors that a record in the evidence
// (a ticket, by its id) names, for this workload and by the same specific
// identifier, with a disposition that accepts them (benign, won't fix, a
// known issue, expected, by design) are known noise, while no server error
// rose and no pod restarted or became unready. The record is quoted; the
// verdict is the team's own, found in the evidence, not the engine's
// guess.

// ModeKnownIssue: the errors are an issue a record accepts.
const ModeKnownIssue = "known_accepted_issue"

// reAcceptedDisposition: a record's words that accept what it describes.
var reAcceptedDisposition = regexp.MustCompile(`(?i)\b(benign|won'?t[ -]?fix|wontfix|known (issue|behaviou?r)|expected behaviou?r|harmless|by design|not a bug|accepted risk|false positive)\b`)

func (ev *Evidence) knownIssue(top *candidate) (Finding, bool) {
	if top.kind != "workload" || top.restarts > 0 || len(top.notReady) > 0 || len(top.badPods) > 0 || len(top.conditions) > 0 || len(top.errLines) == 0 {
		return Finding{}, false
	}
	for _, ch := range top.changes {
		if _, server := signal.StatusError(ch.s.Labels); server && ch.r.tail > 2*ch.r.head+0.01 {
			return Finding{}, false // server errors rose: not only the accepted errors
		}
	}
	ts := templates(top.errLines)
	var msgs []string
	for _, t := range ts {
		msgs = append(msgs, t.lines[0].Message)
	}
	for _, l := range ev.Logs {
		m := l.Message
		if !reRecordID.MatchString(m) || !reAcceptedDisposition.MatchString(m) || !namesTarget(m, []string{strings.ToLower(top.name)}) {
			continue
		}
		var ids []string
		for _, id := range sharedIdentifiers(m, msgs) {
			if codeSymbol(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		f := healthyFinding(ModeKnownIssue, top.entity, 0.66)
		f.Detector = ModeKnownIssue
		rep := ts[0].lines[0]
		f.Statement = fmt.Sprintf("No new failure of %s: its errors (%d lines, e.g. %s) are an issue a record accepts: %s; no server error rose, no pod restarted or became unready",
			top.name, len(top.errLines), quote(clip(rep.Message, 160)), quote(m))
		f.validated(fmt.Sprintf("The record (%s, %s) that accepts these errors: %s", logOrigin(l), hhmmDay(l.Timestamp, ev.Now), quote(m)), l.Cite)
		f.validated(fmt.Sprintf("The errors it names (%s), %d lines: %s", strings.Join(ids, ", "), len(top.errLines), quote(rep.Message)), rep.Cite)
		for _, ch := range top.changes {
			if signal.ClientError(ch.s.Labels) {
				f.validated("Client errors (4xx): "+ch.text(), ch.s.Cite)
				break
			}
		}
		f.Chain = []string{"The errors are an accepted, known behaviour (" + strings.Join(ids, ", ") + ")", "The error-count alert fires on them", "The service serves its requests normally"}
		f.Remediation = []string{"No action needed; tune the alert so the accepted errors do not page (exclude them from the count, or alert on server errors and latency)"}
		f.Signals = []string{"known issue"}
		f.Sources = []string{"logs"}
		return f, true
	}
	return Finding{}, false
}

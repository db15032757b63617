package analysis

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// A row of the cause-to-effect table for the path MTU: a tunnel or overlay
// (WireGuard, IPsec, VXLAN, GRE) whose MTU leaves no room for its own
// header, or a path that drops the ICMP "fragmentation needed" that path
// MTU discovery relies on, lets small packets through and silently drops
// full-size ones. Handshakes and small requests succeed; transfers large
// enough to fill a packet stall until they time out. The MTU record (the
// network agent's warning, the firewall's dropped ICMP, the change that set
// it) is the mechanism, a configuration of the path; the callers'
// timeouts are its symptom, not the remote's failure.

// ModeMTUBlackhole: full-size packets dropped on a path whose MTU is wrong.
const ModeMTUBlackhole = "mtu_blackhole"

var (
	// reMTURecord: a record of a path's MTU or of its discovery failing.
	reMTURecord = regexp.MustCompile(`(?i)\bmtu\b[^\n]{0,60}\b\d{3,5}\b|\b\d{3,5}\b[^\n]{0,20}\bmtu\b|\bfragmentation[ -]needed\b|\bpacket too big\b|\bfrag(?:mentation)?[ _-]?needed\b|\bicmp type 3 code 4\b`)
	// reStall: a transfer that stalled or timed out.
	reStall = regexp.MustCompile(`(?i)\b(?:timed? ?out|timeout|deadline exceeded|stall(?:s|ed)?|hung|hangs?)\b`)
)

func detectMTUBlackhole(ev *Evidence) []Finding {
	records, best, stalls := ev.recordsAndVictims(reMTURecord, reStall)
	if best == "" {
		return nil
	}
	rec := records[0]
	for _, l := range records {
		if isErrorLog(l.LogLine) || strings.EqualFold(l.Level, "WARN") || strings.EqualFold(l.Level, "WARNING") {
			rec = l // a warning says what is wrong; an info line only the value
			break
		}
	}
	comp := ev.logService(rec)
	ns := firstNonEmptyStr(rec.Namespace, ev.alertField("namespace", "kube_namespace"))
	f := Finding{Mode: ModeMTUBlackhole, Category: catConfig, Score: 0.8, Entity: deploymentEntity(ns, comp)}
	// The change that set the MTU: a commit whose words name it.
	for i := range ev.Commits {
		c := &ev.Commits[i]
		if c.Removed || (stalls[0].Timestamp != nil && c.Timestamp != nil && c.Timestamp.After(*stalls[0].Timestamp)) {
			continue
		}
		if textutil.ContainsWord(strings.ToLower(c.Message+"\n"+c.Summary+"\n"+c.Diff), "mtu") {
			f.Entity = "commit/" + short(c.SHA)
			f.validated(fmt.Sprintf("Commit %s (%s, %s): %s", short(c.SHA), firstNonEmptyStr(c.Service, "the repository"), hhmm(c.Timestamp), clip(firstNonEmptyStr(c.Summary, c.Message), 200)), c.Cite)
		}
	}
	f.Statement = fmt.Sprintf("Full-size packets are dropped on the path of %s (an MTU that leaves no room for a tunnel's header, or path MTU discovery blocked): %s logs %s, while %s stall or time out (e.g. %s)",
		best, comp, quote(rec.Message), plural(len(stalls), "transfer of "+best, "transfers of "+best), quote(stalls[0].Message))
	f.validated(fmt.Sprintf("%s log (%s): %s", rec.Cite.Source("logs"), logOrigin(rec), quote(rec.Message)), citesOfLogs(records))
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", stalls[0].Cite.Source("logs"), logOrigin(stalls[0]), logLevel(stalls[0].LogLine), quote(stalls[0].Message)), citesOfLogs(stalls))
	f.inferred("Small packets (handshakes, short answers) fit the path and pass; a packet filled to the interface's MTU does not and is dropped without an error the sender sees, so only large transfers stall")
	f.Chain = []string{
		fmt.Sprintf("The path's MTU is set larger than the path carries (%s)", clip(rec.Message, 100)),
		"Full-size packets are dropped; small ones pass",
		fmt.Sprintf("%s's large transfers stall until they time out and the alert fires", best),
	}
	f.Remediation = []string{
		"Set the interface or overlay MTU to the path's (leave room for the tunnel's header), or clamp the TCP MSS",
		"Let ICMP fragmentation-needed through every hop so path MTU discovery works",
	}
	f.Signals = []string{"mtu", comp, best}
	for _, m := range []string{ModeDependencyFailure, ModeAnomaly, ModeCodeException, ModeDeployRegression, ModeTrafficSaturation} {
		f.explains(m, fmt.Sprintf("%s's stalls are full-size packets the path drops", best))
	}
	return []Finding{f}
}

package analysis

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ---- demand that was announced, served without failing ----

// announcedDemandScore: a demand rise that a notice written ahead of it
// announced, served with no error anywhere and no resource at its limit,
// reads as expected load above an unsaturated traffic reading (0.55) and
// below a saturated one: capacity that ran out under announced demand is
// still an incident.
const announcedDemandScore = 0.64

// reDemandNotice: a notice of demand to come, as comms, capacity plans and
// runbooks write it: an expectation or a forecast ("expect", "forecast",
// "anticipated", "predicted") followed within a few words by what is
// expected, a demand noun or a multiple of the usual ("6x normal
// submissions", "6-8x", "three times"); or capacity raised ahead of it
// ("pre-scaled to 12 replicas").
var reDemandNotice = regexp.MustCompile(`(?i)\bpre-?scal(?:ed|ing)\b|\b(?:expect(?:ed|s|ing)?|forecasts?|forecasted|anticipated?|predicted)\b[^\n]{0,40}?(?:\b(?:traffic|load|requests|volume|spike|surge|peak|demand|rush|queue|visitors|users|orders)\b|\b\d+(?:[.,]\d+)?(?:\s*[-–]\s*\d+(?:[.,]\d+)?)?\s*(?:x|×)(?:\W|$)|\b(?:twice|double|triple|\w+ times)\b)`)

// SignalExpectedLoad marks a reading of health under demand announced
// ahead: the critic does not hold the service's traffic and latency, still
// up at the end of the window, against it (errors and saturation it
// still does).
const SignalExpectedLoad = "expected_load"

// detectAnnouncedDemand: the service's demand rose (a traffic series of
// its own at half again its start or more), nothing failed (no error line,
// no error series that rose, no resource of the service at its limit), and
// a notice written before the rise announced that demand: it names the
// alert's day (a deadline, a season opening, announced weeks ahead) or,
// written in the days before, the service. The alert fired on the load the
// notice announced, served: expected load, not a fault. Latency may rise
// under it; errors may not.
func detectAnnouncedDemand(ev *Evidence) []Finding {
	at := ev.alertTime()
	if at == nil || len(ev.errorLogs()) > 0 {
		return nil
	}
	ent := ev.workloadEntity()
	_, svc := splitEntity(ent)
	var demand *Series
	var dr rise
	for i, s := range ev.Series {
		if failingSeries(s) && seriesKindOf(s.Series) == "errors" {
			return nil
		}
		if !demandSeries(s.Series, svc) {
			continue
		}
		r := riseOf(asRate(s.Series))
		if r.head > 0 && r.ratio >= 1.5 && (demand == nil || r.ratio > dr.ratio) {
			demand, dr = &ev.Series[i], r
		}
	}
	if demand == nil {
		return nil
	}
	if _, _, saturated := ev.saturationEvidence(svc); saturated {
		return nil
	}
	onset := *at
	if dr.onset != nil && dr.onset.Before(onset) {
		onset = *dr.onset
	}
	// The notice names the alert's target, or the service whose demand
	// rose (an alert that names only a monitor's title).
	notice, ok := ev.demandNotice(onset, *at, labelOf(demand.Series, "service", "service_name", "app", "deployment", "job"))
	if !ok {
		return nil
	}
	if svc == "" {
		svc = labelOf(demand.Series, "service", "service_name", "app", "deployment", "job")
	}
	f := healthyFinding(ModeHealthy, ent, announcedDemandScore)
	// The alert's condition still holding (latency up under the load) is
	// what the notice announced: no veto of this reading.
	f.Overrides, f.HoldsExpected = true, true
	f.Explains = map[string]string{ModeTrafficSaturation: "the demand rise was announced before it and served without errors, no resource at its limit"}
	f.validated(fmt.Sprintf("%s rose from %s to %s", demand.Name, num(dr.head), num(dr.tail)), demand.Cite)
	f.validated(fmt.Sprintf("Demand announced ahead, %s log (%s, %s): %s", notice.Cite.Source("logs"), logOrigin(notice), hhmmDay(notice.Timestamp, *at), quote(notice.Message)), notice.Cite)
	f.validated(fmt.Sprintf("%d log lines, none at ERROR level; no error series rose", len(ev.Logs)), citesOfLogs(ev.Logs))
	f.inferred("No resource of " + orTarget(svc) + " is seen at its limit: the capacity held the announced load")
	f.Statement = fmt.Sprintf("Expected load on %s: %s rose from %s to %s as announced before it (%s at %s), and nothing failed: no error line, no error series rose, no resource at its limit",
		orTarget(svc), demand.Name, num(dr.head), num(dr.tail), quote(clip(notice.Message, 200)), hhmmDay(notice.Timestamp, *at))
	f.Chain = []string{"A notice announces demand for the day", "Demand rises as announced", "The alert's threshold is crossed while the service serves the load without errors"}
	f.Remediation = []string{"No action needed while the announced load lasts; watch for errors or a resource reaching its limit", "Tune the alert to the announced peak, or silence it for the announced window next time"}
	f.Signals = []string{SignalExpectedLoad}
	return []Finding{f}
}

// demandNotice is the latest non-error line written before onset that
// announces demand (reDemandNotice) and names the alert's day (at), or,
// written up to noticeLookBack before, names the alert's target (or one
// of also: the service whose demand rose).
func (ev *Evidence) demandNotice(onset, at time.Time, also ...string) (LogLine, bool) {
	names := appendUnique(ev.targetNames(), ev.alertIdentifiers()...)
	for _, n := range also {
		if n != "" {
			names = appendUnique(names, strings.ToLower(n))
		}
	}
	var best LogLine
	found := false
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Timestamp.After(onset) || isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" {
			continue
		}
		if !reDemandNotice.MatchString(l.Message) {
			continue
		}
		t := *l.Timestamp
		day := dayNotice(t, at, l.Message)
		near := !t.Before(at.Add(-noticeLookBack)) && namesTarget(l.Message, names)
		if !day && !near {
			continue
		}
		if !found || t.After(*best.Timestamp) {
			best, found = l, true
		}
	}
	return best, found
}

// orTarget is name, or "the alert's target" when empty.
func orTarget(name string) string {
	if name == "" {
		return "the alert's target"
	}
	return name
}

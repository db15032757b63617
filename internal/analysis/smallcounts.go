package analysis

import (
	"fmt"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A verdict derived from evidence, with absolute floors and not only
// ratios: an error ratio that crosses its threshold because its
// denominator is small (a handful of requests at night) rests on a handful
// of errors. When those few errors are all the workload shows (no restart,
// no unready pod, no slower responses, no change before them), no action
// is needed; the report gives the counts.

// ModeSmallCounts: the alert's ratio rests on a handful of errors over a
// small volume of requests.
const ModeSmallCounts = "small_counts"

const (
	// tinyErrorRate is the floor under which an error series' peak is a
	// handful of errors, not a failure rate (3 per minute).
	tinyErrorRate = 0.05
	// tinyErrorLines: at most this many error lines in the window.
	tinyErrorLines = 3
	// lowTrafficRate: a workload serving less than one request a second
	// makes any ratio of its requests jump by whole requests.
	lowTrafficRate = 1.0
)

// smallCounts reads the anomaly summary's strongest candidate: a workload
// whose only failures are a few error lines and error series whose peak is
// under tinyErrorRate, while its requests run under lowTrafficRate.
func (ev *Evidence) smallCounts(top *candidate) (Finding, bool) {
	if top.kind != "workload" || top.restarts > 0 || len(top.notReady) > 0 || len(top.badPods) > 0 || len(top.conditions) > 0 || len(top.dbEvents) > 0 || len(top.errLines) > tinyErrorLines {
		return Finding{}, false
	}
	for _, e := range top.events {
		if strings.EqualFold(e.Type, "Warning") {
			return Finding{}, false
		}
	}
	var errs []seriesChange
	for _, ch := range top.changes {
		switch seriesKindOf(ch.s.Series) {
		case "errors":
			if ch.r.peak > tinyErrorRate || ch.r.tail > tinyErrorRate {
				return Finding{}, false
			}
			errs = append(errs, ch)
		case "latency":
			if ch.r.tail > 2*ch.r.head {
				return Finding{}, false // slower for everyone
			}
		}
	}
	if len(errs) == 0 {
		return Finding{}, false
	}
	volume, seen := 0.0, false
	var volumeCite Cite
	for _, s := range ev.Series {
		if own := labelOf(s.Series, "service", "service_name", "app", "deployment", "job"); !strings.EqualFold(own, top.name) || !demandSeries(s.Series, "") {
			continue // the workload's own requests only
		}
		volume += meanRate(s.Series)
		volumeCite.merge(s.Cite)
		seen = true
	}
	if !seen || volume <= 0 || volume >= lowTrafficRate {
		return Finding{}, false
	}
	onset := errs[0].r.onset
	for _, l := range top.errLines {
		if l.Timestamp != nil && (onset == nil || l.Timestamp.Before(*onset)) {
			onset = l.Timestamp
		}
	}
	if ch := ev.nearestChange(top.name, onset, top.symptomTexts()...); ch != nil && !ch.unrelated {
		return Finding{}, false // a change before them: they may be its first effects
	}
	f := healthyFinding(ModeSmallCounts, top.entity, 0.66)
	f.Detector = ModeSmallCounts
	f.Statement = fmt.Sprintf("No failure of %s: the alert's ratio rests on a handful of errors over a small volume of requests (%s requests/s on average; error series peak at %s/s, %s): no pod restarted or became unready, responses did not slow down and nothing changed before them",
		top.name, num(volume), num(errs[0].r.peak), plural(len(top.errLines), "error line", "error lines"))
	for _, ch := range errs[:min(3, len(errs))] {
		f.validated("Errors: "+ch.text(), ch.s.Cite)
	}
	f.validated(fmt.Sprintf("Requests served by %s: %s per second on average over the window", top.name, num(volume)), volumeCite)
	if len(top.errLines) > 0 {
		rep := templates(top.errLines)[0].lines[0]
		f.validated(fmt.Sprintf("What it logged (%s): %s", plural(len(top.errLines), "line", "lines"), quote(rep.Message)), rep.Cite)
	}
	f.inferred("a ratio over few requests moves by whole requests: a few errors cross its threshold")
	f.Chain = []string{"Few requests are served (off-peak)", "A few of them fail, as some always do", "The error ratio crosses its threshold on a small denominator"}
	f.Remediation = []string{"No action needed; give the ratio alert a minimum request or error count (an absolute floor), or alert on an error budget burn rate"}
	f.Signals = []string{"small counts"}
	f.Sources = []string{"metrics"}
	return f, true
}

// meanRate is a series' mean per second: a counter's rate (asRate), or the
// gauge itself.
func meanRate(s facts.Series) float64 {
	r := asRate(s)
	if len(r.Downsampled) == 0 {
		return r.Mean
	}
	sum := 0.0
	for _, p := range r.Downsampled {
		sum += p.V
	}
	return sum / float64(len(r.Downsampled))
}

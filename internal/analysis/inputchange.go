package analysis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ModeInputChange: the data a service takes in changed shape before the
// failures: the columns of a file it imports came in another order or set,
// a count it loads fell to nothing, a value it loaded jumped by orders of
// magnitude from the one before. The input (the feed, the file, the host it
// came from) is the root cause, a data-quality fault; the service that
// fails on it is its symptom.
const ModeInputChange = "input_change"

// inputChangeLead: an input change this long before the first failure
// after it still explains it (a nightly import read by a morning batch).
const inputChangeLead = 24 * time.Hour

var (
	// reHeader: the column list an import line prints ("header:
	// donor_id,name,lat,lon" or "columns=[a, b]").
	reHeader = regexp.MustCompile(`(?i)\b(?:header|columns)\s*[:=]\s*['"\[]?([A-Za-z_][\w. -]*(?:\s*[,;|]\s*[A-Za-z_][\w. -]*)+)`)
	// reWithPrevious: a value printed beside the one it replaced
	// ("rows=0 (previous 1742118)", "EURINR=0.010870 (prev 92.31)").
	reWithPrevious = regexp.MustCompile(`(?i)([A-Za-z_][\w.-]*)\s*[=:]\s*(-?\d[\d,]*(?:\.\d+)?)\s*\((?:prev|previous|previously|was|before)[:=]?\s*(-?\d[\d,]*(?:\.\d+)?)\)`)
	// reFeedName: a feed named as such ("feed fx-daily-rates").
	reFeedName = regexp.MustCompile(`(?i)\bfeed\s+['"]?([a-z0-9][a-z0-9._-]{2,})`)
	// reDataFile: a data file's name.
	reDataFile = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9._-]*\.(?:csv|tsv|json|jsonl|ndjson|xml|parquet|avro|xlsx?|txt|dat|gz))\b`)
	// reFromHost: the host an input came from (a URL's, or "from <host>").
	reFromHost = regexp.MustCompile(`(?i)(?:[a-z]+://|\bfrom\s+)([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+)`)
)

// inputChange is one change of an input's shape.
type inputChange struct {
	at   time.Time
	what string
	line LogLine
}

// inputChanges reads the non-failure lines for changes of what a service
// took in: a column list that differs from the same template's previous
// one, and a value printed beside its previous one that fell to zero or
// moved tenfold or more.
func (ev *Evidence) inputChanges() []inputChange {
	var out []inputChange
	lastHeader := map[string][]string{} // service + template -> columns
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Message == "" || isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" {
			continue
		}
		if m := reHeader.FindStringSubmatch(l.Message); m != nil {
			cols := splitColumns(m[1])
			key := lineSource(l) + "\x00" + logTemplate(strings.Replace(l.Message, m[1], "", 1))
			if prev, ok := lastHeader[key]; ok && len(cols) >= 2 && strings.Join(prev, ",") != strings.Join(cols, ",") {
				out = append(out, inputChange{at: *l.Timestamp, line: l,
					what: fmt.Sprintf("its columns changed from %s to %s", strings.Join(prev, ","), strings.Join(cols, ","))})
			}
			lastHeader[key] = cols
		}
		for _, m := range reWithPrevious.FindAllStringSubmatch(l.Message, -1) {
			cur, err1 := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
			prev, err2 := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
			if err1 != nil || err2 != nil || prev == 0 {
				continue
			}
			r := cur / prev
			if r < 0 {
				r = -r
			}
			if cur == 0 || r >= 10 || r <= 0.1 {
				out = append(out, inputChange{at: *l.Timestamp, line: l,
					what: fmt.Sprintf("%s went from %s to %s", m[1], m[3], m[2])})
			}
		}
	}
	return out
}

// splitColumns splits a printed column list.
func splitColumns(s string) []string {
	var out []string
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '|' }) {
		if c = strings.Trim(strings.TrimSpace(c), `'"[]`); c != "" {
			out = append(out, strings.ToLower(c))
		}
	}
	return out
}

// inputEntity names the input of a change: a feed named as such, else a
// data file, else the host it came from, in the line or in what the same
// service logged within five minutes of it (that line is returned too);
// else the service that loaded it.
func (ev *Evidence) inputEntity(c inputChange) (string, *LogLine) {
	name := func(text string) string {
		if m := reFeedName.FindStringSubmatch(text); m != nil {
			return "feed/" + strings.TrimRight(m[1], ".:;,")
		}
		if m := reDataFile.FindStringSubmatch(text); m != nil {
			return "file/" + m[1]
		}
		if m := reFromHost.FindStringSubmatch(text); m != nil && !isIPLike(m[1]) {
			return "host/" + strings.ToLower(m[1])
		}
		return ""
	}
	if e := name(c.line.Message); e != "" {
		return e, nil
	}
	src := lineSource(c.line)
	for i := range ev.Logs {
		l := &ev.Logs[i]
		if l.Timestamp == nil || lineSource(*l) != src || absDur(l.Timestamp.Sub(c.at)) > 5*time.Minute {
			continue
		}
		if e := name(l.Message); e != "" {
			return e, l
		}
	}
	if svc := ev.logService(c.line); svc != "" {
		return deploymentEntity(firstNonEmptyStr(c.line.Namespace, ev.alertNamespace()), svc), nil
	}
	return "", nil
}

// detectInputChange: the latest input change that precedes failure lines
// (warnings or errors, any service) by at most inputChangeLead, with no
// failure of the same template before it.
func detectInputChange(ev *Evidence) []Finding {
	changes := ev.inputChanges()
	if len(changes) == 0 {
		return nil
	}
	groups := ev.failureGroups()
	var best *inputChange
	var after []LogLine
	for i := range changes {
		c := &changes[i]
		var lines []LogLine
		for _, g := range groups {
			if g.first.After(c.at) && g.first.Sub(c.at) <= inputChangeLead {
				lines = append(lines, g.lines...)
			}
		}
		if len(lines) > 0 && (best == nil || c.at.After(best.at)) {
			best, after = c, lines
		}
	}
	if best == nil {
		return nil
	}
	ent, named := ev.inputEntity(*best)
	if ent == "" {
		return nil
	}
	first := after[0]
	for _, l := range after {
		if l.Timestamp.Before(*first.Timestamp) {
			first = l
		}
	}
	f := Finding{Mode: ModeInputChange, Category: catData, Score: 0.62, Entity: ent}
	f.Statement = fmt.Sprintf("The input %s changed at %s (%s: %s), and failures followed from %s (e.g. %s)",
		ent, hhmm(&best.at), logOrigin(best.line), best.what, hhmm(first.Timestamp), quote(clip(first.Message, 160)))
	if named != nil {
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", named.Cite.Source("logs"), logOrigin(*named), hhmm(named.Timestamp), quote(named.Message)), named.Cite)
	}
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", best.line.Cite.Source("logs"), logOrigin(best.line), hhmm(&best.at), quote(best.line.Message)), best.line.Cite)
	for _, l := range representative(after, 2) {
		f.validated(fmt.Sprintf("%s log (%s, %s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), hhmm(l.Timestamp), quote(l.Message)), citesOfLogs(sameSig(after, l)))
	}
	f.inferred(fmt.Sprintf("The data taken in changed before the failures (%s); the services that read it fail on it", best.what))
	f.Chain = []string{
		fmt.Sprintf("The input %s changes shape: %s", ent, best.what),
		"The services that load or read it take the new shape as the old",
		fmt.Sprintf("Failures follow from %s", hhmm(first.Timestamp)),
	}
	f.Remediation = []string{
		fmt.Sprintf("Reload the last good version of %s and hold the new one", ent),
		"Validate the input's shape (columns, counts, value ranges) before loading it",
	}
	return []Finding{f}
}

// inputWords are the words a service that takes data in logs a load with,
// whatever it loads: what InputQuery searches for.
var inputWords = []string{"import", "imported", "fetched", "loaded", "upserted", "ingested", "header", "rows", "feed", "export"}

// InputQuery is the log search for the loads of data around an alert
// (inputWords, any of them).
func InputQuery() string {
	qs := make([]string, 0, len(inputWords))
	for _, w := range inputWords {
		qs = append(qs, `"`+w+`"`)
	}
	return strings.Join(qs, " OR ")
}

// InputsUnread: a reading that is not healthy, whose failures read as bad
// data (the table's data row) or whose lead is not established, and that
// found no change of an input: the loads of data around it are read next.
func (r Result) InputsUnread() bool {
	if r.ev == nil || len(r.Findings) == 0 || r.Findings[0].Healthy {
		return false
	}
	for _, f := range r.Findings {
		if f.Mode == ModeInputChange {
			return false
		}
	}
	if r.Findings[0].Score < minFaultScore {
		return true
	}
	for _, g := range r.ev.failureGroups() {
		if fam, ok := familyOf(g.lines[0].Message); ok && fam.cat == catData {
			return true
		}
	}
	return false
}

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
	// A range's first bound stands for it ("2,500..1,850,000 (previous
	// feed: 25..18,500)"); the previous one may be named by when it came
	// ("(yesterday 94,310)", "(last run: 12)").
	reWithPrevious = regexp.MustCompile(`(?i)([A-Za-z_][\w.-]*)\s*[=:]?\s*(-?\d[\d,]*(?:\.\d+)?)(?:\s*\.\.\s*-?\d[\d,]*(?:\.\d+)?)?\s*\(` + rePreviousWord + `\s*(-?\d[\d,]*(?:\.\d+)?)`)
	// reCountWithPrevious: a count and its unit beside the previous count
	// ("parsed 11,204 rows (yesterday 94,310)", "4,194,304 bytes (prev
	// 35,602,118 bytes)").
	reCountWithPrevious = regexp.MustCompile(`(?i)(-?\d[\d,]*(?:\.\d+)?)\s+([A-Za-z_][\w-]*)\s*\(` + rePreviousWord + `\s*(-?\d[\d,]*(?:\.\d+)?)`)
	// reMassChange: most of a load's values changed at once ("1,744 of
	// 1,812 prices changed by more than 50%").
	reMassChange = regexp.MustCompile(`(?i)(\d[\d,]*)\s+of\s+(\d[\d,]*)\s+([A-Za-z_][\w-]*)\s+(?:have\s+|were\s+)?(?:changed|moved|differ(?:ed)?|jumped|shifted)\b`)
	// reIgnoredField: a reader that met a field, column or key it does not
	// know and went on without it: the producer changed what it sends and
	// the change was dropped in silence ("unknown field quote_unit
	// (ignored)", "ignoring unrecognized column 'unit'").
	reIgnoredField = regexp.MustCompile(`(?i)\b(?:unknown|unrecogni[sz]ed|unexpected|unsupported|new)\s+(?:fields?|columns?|keys?|propert(?:y|ies)|attributes?)\b[^\n]{0,120}?\b(?:ignor|skipp|dropp|discard)|\b(?:ignor|skipp|dropp|discard)\w*\s+(?:\d+\s+)?(?:unknown|unrecogni[sz]ed|unexpected|unsupported)\s+(?:fields?|columns?|keys?|propert(?:y|ies)|attributes?)\b`)
	// reFeedName: a feed named as such ("feed fx-daily-rates").
	// rePreviousWord opens the previous value: "prev", "previous",
	// "previous feed:", "was", "before", "yesterday", "last run:".
	rePreviousWord = `(?:prev|previous(?:\s+[a-z]+)?|previously|was|before|yesterday|last\s+(?:run|import|load|file|feed|batch|night))\s*[:=]?`
	reFeedName     = regexp.MustCompile(`(?i)\bfeed\s+['"]?([a-z0-9][a-z0-9._-]{2,})(://)?|\b([a-z0-9][a-z0-9._-]*[-_]feed)\b`)
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
// one, a value printed beside its previous one that fell to zero or moved
// fivefold or more, and a field the reader did not know and dropped.
func (ev *Evidence) inputChanges() []inputChange {
	var out []inputChange
	lastHeader := map[string][]string{} // service + template -> columns
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Message == "" || isErrorLog(l.LogLine) {
			continue
		}
		// A warning may state a load's change (a count beside yesterday's,
		// a field dropped); it is not read for column lists, which a
		// failing parse prints too.
		warn := logLevel(l.LogLine) == "WARN"
		if reIgnoredField.MatchString(l.Message) {
			out = append(out, inputChange{at: *l.Timestamp, line: l,
				what: "a field it does not read came in and was dropped (" + clip(strings.TrimSpace(l.Message), 120) + ")"})
		}
		if m := reMassChange.FindStringSubmatch(l.Message); m != nil {
			n, err1 := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
			of, err2 := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
			if err1 == nil && err2 == nil && of >= 10 && n <= of && n/of >= 0.5 {
				out = append(out, inputChange{at: *l.Timestamp, line: l,
					what: fmt.Sprintf("%s of %s %s changed at once", m[1], m[2], m[3])})
			}
		}
		var moved []string
		for _, m := range reWithPrevious.FindAllStringSubmatch(l.Message, -1) {
			moved = append(moved, m[1], m[2], m[3])
		}
		for _, m := range reCountWithPrevious.FindAllStringSubmatch(l.Message, -1) {
			moved = append(moved, m[2], m[1], m[3])
		}
		for i := 0; i+2 < len(moved); i += 3 {
			cur, err1 := strconv.ParseFloat(strings.ReplaceAll(moved[i+1], ",", ""), 64)
			prev, err2 := strconv.ParseFloat(strings.ReplaceAll(moved[i+2], ",", ""), 64)
			if err1 != nil || err2 != nil || prev == 0 {
				continue
			}
			r := cur / prev
			if r < 0 {
				r = -r
			}
			if cur == 0 || r >= 5 || r <= 0.2 {
				out = append(out, inputChange{at: *l.Timestamp, line: l,
					what: fmt.Sprintf("%s went from %s to %s", moved[i], moved[i+2], moved[i+1])})
				break
			}
		}
		if warn {
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
		for _, m := range reFeedName.FindAllStringSubmatch(text, -1) {
			if m[2] == "" { // "feed sftp://..." names a scheme, not a feed
				return "feed/" + strings.TrimRight(firstNonEmptyStr(m[1], m[3]), ".:;,")
			}
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
	// No line fails after any change: the alert is the failure, when it
	// fired after one within the lead (a business signal that the data
	// moved, while every service runs as it should).
	at := ev.alertTime()
	if best == nil && at != nil && !ev.Alert.GetResolved() {
		var firstFailure time.Time // groups are sorted by their first line
		if len(groups) > 0 {
			firstFailure = groups[0].first
		}
		for i := range changes {
			c := &changes[i]
			failedBefore := !firstFailure.IsZero() && firstFailure.Before(c.at)
			if !failedBefore && at.After(c.at) && at.Sub(c.at) <= inputChangeLead && (best == nil || c.at.After(best.at)) {
				best = c
			}
		}
	}
	if best == nil {
		return nil
	}
	ent, named := ev.inputEntity(*best)
	if ent == "" {
		return nil
	}
	f := Finding{Mode: ModeInputChange, Category: catData, Score: 0.62, Entity: ent}
	if len(after) == 0 {
		f.Score = 0.58
		f.Statement = fmt.Sprintf("The input %s changed at %s (%s: %s), and the alert fired at %s with no service failing: the data moved, not the code that reads it",
			ent, hhmm(&best.at), logOrigin(best.line), best.what, hhmm(at))
	} else {
		first := after[0]
		for _, l := range after {
			if l.Timestamp.Before(*first.Timestamp) {
				first = l
			}
		}
		f.Statement = fmt.Sprintf("The input %s changed at %s (%s: %s), and failures followed from %s (e.g. %s)",
			ent, hhmm(&best.at), logOrigin(best.line), best.what, hhmm(first.Timestamp), quote(clip(first.Message, 160)))
	}
	if named != nil {
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", named.Cite.Source("logs"), logOrigin(*named), hhmm(named.Timestamp), quote(named.Message)), named.Cite)
	}
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", best.line.Cite.Source("logs"), logOrigin(best.line), hhmm(&best.at), quote(best.line.Message)), best.line.Cite)
	for _, l := range representative(after, 2) {
		f.validated(fmt.Sprintf("%s log (%s, %s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), hhmm(l.Timestamp), quote(l.Message)), citesOfLogs(sameSig(after, l)))
	}
	if len(after) > 0 {
		f.inferred(fmt.Sprintf("The data taken in changed before the failures (%s); the services that read it fail on it", best.what))
	} else {
		f.inferred(fmt.Sprintf("The data taken in changed before the alert (%s); the services that read it take it as it came, and what they compute from it moved", best.what))
	}
	f.Chain = []string{
		fmt.Sprintf("The input %s changes shape: %s", ent, best.what),
		"The services that load or read it take the new shape as the old",
	}
	if len(after) > 0 {
		f.Chain = append(f.Chain, "Failures follow")
	} else {
		f.Chain = append(f.Chain, "What they compute from it moves and the alert fires")
	}
	f.Remediation = []string{
		fmt.Sprintf("Reload the last good version of %s and hold the new one", ent),
		"Validate the input's shape (columns, counts, value ranges) before loading it",
	}
	return []Finding{f}
}

// inputWords are the words a service that takes data in logs a load with,
// whatever it loads: what InputQuery searches for.
var inputWords = []string{"import", "imported", "fetched", "loaded", "upserted", "ingested", "header", "rows", "feed", "export",
	"ignored", "ignoring", "unknown field", "previous", "yesterday"}

// InputQuery is the log search for the loads of data around an alert
// (inputWords, any of them).
func InputQuery() string {
	qs := make([]string, 0, len(inputWords))
	for _, w := range inputWords {
		qs = append(qs, `"`+w+`"`)
	}
	return strings.Join(qs, " OR ")
}

// InputsUnread: no reading at all, or one that is not healthy, whose failures read as bad
// data (the table's data row) or whose lead is not established, and that
// found no change of an input: the loads of data around it are read next.
func (r Result) InputsUnread() bool {
	if r.ev == nil {
		return false
	}
	if len(r.Findings) == 0 {
		return true // nothing established at all
	}
	if r.Findings[0].Healthy {
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

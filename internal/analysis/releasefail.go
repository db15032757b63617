package analysis

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ModeReleaseFailure: failures that began after a release, whose own words
// name what the release's commits changed (the file's stem, an identifier
// of its message). It is a code defect that throws nothing a signature
// knows: a value written in a new form that a consumer rejects, a slow path
// a new expression takes, a field a new mapper clears. The link to the
// change decides it, not the failure's wording; a release whose commits the
// failures do not name stays a red herring.
const ModeReleaseFailure = "release_failure"

// releaseFailureWindow: a release at most this long before a failure's
// first line is its suspect (a code path that only some input reaches runs
// hours or days after the release).
const releaseFailureWindow = 72 * time.Hour

// minStemLen: a word of a touched file's name or of a commit's identifier
// this long or longer links a failure line that contains it.
const minStemLen = 5

// reStemSplit splits a name into its words at case changes, digits and
// punctuation ("PremiumJson.java": premium, json, java).
var reStemSplit = regexp.MustCompile(`[A-Z]?[a-z]+|[A-Z]+(?:[a-z]+)?`)

// genericStems are words of file names and identifiers that name no code
// of their own (a language, a layer, a convention).
var genericStems = map[string]bool{
	"index": true, "utils": true, "util": true, "helpers": true, "helper": true, "common": true, "types": true, "model": true,
	"models": true, "service": true, "services": true, "handler": true, "handlers": true, "server": true, "client": true,
	"config": true, "settings": true, "values": true, "string": true, "strings": true, "value": true, "error": true, "errors": true,
	"tests": true, "build": true, "gradle": true, "docker": true, "dockerfile": true, "makefile": true, "kotlin": true,
	"python": true, "script": true, "module": true, "package": true, "class": true, "interface": true, "request": true,
	"response": true, "local": true, "default": true, "main": true, "update": true, "create": true, "delete": true,
	"before": true, "after": true, "support": true, "internal": true, "public": true, "source": true, "version": true,
}

// commitStems are the words the failures may name a commit by: the words
// of the names of the files it touched and of the identifiers its message
// and summary give (a dotted, snake_case or camelCase name), lower-cased,
// minStemLen letters or more, not generic.
func commitStems(c Commit) []string {
	var names []string
	for _, f := range c.Files {
		base := path.Base(f.Path)
		if i := strings.LastIndexByte(base, '.'); i > 0 {
			base = base[:i]
		}
		names = append(names, base)
	}
	names = append(names, reIdent.FindAllString(c.Message+" "+c.Summary, -1)...)
	var out []string
	for _, n := range names {
		for _, w := range reStemSplit.FindAllString(n, -1) {
			w = strings.ToLower(w)
			if len(w) >= minStemLen && !genericStems[w] {
				out = appendUnique(out, w)
			}
		}
	}
	return out
}

// stemsNamed are the stems some failure line names: a token of the line
// (a word, an identifier) that contains the stem ("annualPremium" names
// premium, "sanitize_comment" names sanitize).
func stemsNamed(stems []string, lines []LogLine) []string {
	var out []string
	for _, l := range lines {
		low := strings.ToLower(l.Message)
		for _, st := range stems {
			if !strings.Contains(low, st) {
				continue
			}
			for _, tok := range reIdentToken.FindAllString(low, -1) {
				if strings.Contains(tok, st) {
					out = appendUnique(out, st)
					break
				}
			}
		}
	}
	return out
}

// reIdentToken: a token of a log line as code names it (letters, digits,
// underscores).
var reIdentToken = regexp.MustCompile(`[a-z0-9_]+`)

// failureGroup is one template of failure lines (warnings and errors).
type failureGroup struct {
	first time.Time
	lines []LogLine
}

// failureGroups are the failure lines (WARN and above) up to contextAfter
// after the alert, by template, in order of their first line; read once
// (the release, input and health rows all read them). Callers do not
// change them.
func (ev *Evidence) failureGroups() []*failureGroup {
	ev.groupsOnce.Do(func() { ev.groups = ev.readFailureGroups() })
	return ev.groups
}

// readFailureGroups reads failureGroups from the logs.
func (ev *Evidence) readFailureGroups() []*failureGroup {
	at := ev.alertTime()
	byKey := map[string]*failureGroup{}
	var out []*failureGroup
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Message == "" {
			continue
		}
		if lv := logLevel(l.LogLine); lv != "WARN" && lv != "ERROR" && lv != "FATAL" {
			continue
		}
		if at != nil && l.Timestamp.After(at.Add(contextAfter)) {
			continue
		}
		k := logTemplate(reLevelPrefix.ReplaceAllString(l.Message, ""))
		g := byKey[k]
		if g == nil {
			g = &failureGroup{first: *l.Timestamp}
			byKey[k] = g
			out = append(out, g)
		}
		if l.Timestamp.Before(g.first) {
			g.first = *l.Timestamp
		}
		g.lines = append(g.lines, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].first.Before(out[j].first) })
	return out
}

// detectReleaseFailure: for each release (not a rollback) with commits, the
// failure templates whose first line follows it within
// releaseFailureWindow and names a stem of one of its commits, and the
// lines whose field a stem names took one new value from the release on
// (outputShifts); the commit named by the most lines is the culprit. Two
// lines at least, or one that names a file or identifier of the commit
// exactly (commitSpecificity); a shifted output counts as exact. The
// category is the commit's kind (a settings-only commit is configuration),
// or the capacity row when most lines read as a limit exhausted.
func detectReleaseFailure(ev *Evidence) []Finding {
	groups := ev.failureGroups()
	// A word of a service's or namespace's own name (the alert's target's,
	// the failing lines' sources', each release's service's) names the
	// service, not what a commit changed in it.
	failing := map[string]bool{}
	for _, n := range ev.targetNames() {
		for _, w := range reNameToken.FindAllString(strings.ToLower(n), -1) {
			failing[w] = true
		}
	}
	for _, g := range groups {
		for _, l := range g.lines {
			for _, n := range []string{lineSource(l), l.Namespace} {
				for _, w := range reNameToken.FindAllString(strings.ToLower(n), -1) {
					failing[w] = true
				}
			}
		}
	}
	var out []Finding
	for _, d := range ev.Deploys {
		start := d.StartedAt
		if start == nil {
			start = d.FinishedAt
		}
		if start == nil || d.IsRollback {
			continue
		}
		commits := ev.releaseCommits(d.Deploy)
		if len(commits) == 0 {
			continue
		}
		shifts := ev.outputShifts(*start)
		var best *Commit
		var bestLines []LogLine
		var bestStems []string
		bestExact := 0.0
		own := maps.Clone(failing)
		for _, n := range []string{d.Service, d.Namespace} {
			for _, w := range reNameToken.FindAllString(strings.ToLower(n), -1) {
				own[w] = true
			}
		}
		for i := range commits {
			c := &commits[i]
			stems := slices.DeleteFunc(commitStems(*c), func(w string) bool { return own[w] || own[w+"s"] || own[strings.TrimSuffix(w, "s")] })
			if len(stems) == 0 {
				continue
			}
			lines, named := shiftedLines(shifts, stems)
			shifted := len(lines) > 0
			for _, g := range groups {
				if g.first.Before(*start) || g.first.Sub(*start) > releaseFailureWindow {
					continue
				}
				if n := stemsNamed(stems, g.lines); len(n) > 0 {
					lines = append(lines, g.lines...)
					for _, w := range n {
						named = appendUnique(named, w)
					}
				}
			}
			if len(lines) == 0 {
				continue
			}
			exact, _ := commitSpecificity(*c, messagesOf(lines))
			if len(lines) < 2 && exact == 0 {
				continue
			}
			if shifted && exact == 0 {
				// An output the release altered from its first line after
				// it (one new value throughout): as precise as a name.
				exact = 1
			}
			if best == nil || len(lines) > len(bestLines) || len(lines) == len(bestLines) && exact > bestExact {
				best, bestLines, bestStems, bestExact = c, lines, named, exact
			}
		}
		if best == nil {
			continue
		}
		f := Finding{Mode: ModeReleaseFailure, Category: catCode, Score: 0.55, Entity: "commit/" + short(best.SHA)}
		if bestExact > 0 {
			f.Score = 0.62
		}
		if commitKind(best.Commit) == changeConfig {
			f.Category = catConfig
		}
		if exhausted := capacityLines(bestLines); exhausted*2 > len(bestLines) && f.Category != catConfig {
			// The mechanism is a capacity the change exhausts (ports,
			// connections, memory): the table's capacity row. A
			// configuration change the failing lines name set the bound
			// they hit (a concurrency cap, a pool size): the bound row,
			// configuration (limitchange.go).
			f.Category = catResource
		}
		first := bestLines[0]
		for _, l := range bestLines {
			if l.Timestamp.Before(*first.Timestamp) {
				first = l
			}
		}
		svc := firstNonEmptyStr(d.Service, "a service")
		f.Statement = fmt.Sprintf("Release %s of %s (deployed %s) introduced the failure: commit %s (%s) changed %s, and from %s, %s after the release, %s name it (e.g. %s)",
			d.Revision, svc, hhmm(start), short(best.SHA), clip(best.Message, 80), strings.Join(bestStems, ", "), hhmm(first.Timestamp), durHuman(first.Timestamp.Sub(*start)),
			plural(len(bestLines), "failure line", "failure lines"), quote(clip(first.Message, 160)))
		f.validated(fmt.Sprintf("Deploy %s (%s -> %s) started %s", svc, firstNonEmptyStr(d.PreviousRevision, "?"), d.Revision, hhmm(start)), d.Cite)
		f.validated(fmt.Sprintf("Commit %s (%s): %s", short(best.SHA), best.Author, clip(best.Message, 120)), best.Cite)
		if best.Summary != "" {
			f.validated(fmt.Sprintf("Commit %s summary: %s", short(best.SHA), clip(best.Summary, 300)), best.Cite)
		}
		for _, l := range representative(bestLines, 3) {
			f.validated(fmt.Sprintf("%s log (%s, %s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), hhmm(l.Timestamp), quote(l.Message)), citesOfLogs(sameSig(bestLines, l)))
		}
		f.inferred(fmt.Sprintf("The failures began after the release and name what its commit %s changed (%s)", short(best.SHA), strings.Join(bestStems, ", ")))
		f.Chain = []string{
			fmt.Sprintf("Release %s of %s ships commit %s", d.Revision, svc, short(best.SHA)),
			"The changed code runs on the inputs that reach it",
			fmt.Sprintf("Failures that name it follow from %s", hhmm(first.Timestamp)),
		}
		f.Remediation = []string{
			fmt.Sprintf("Roll back %s to %s", svc, firstNonEmptyStr(d.PreviousRevision, "the previous release")),
			fmt.Sprintf("Fix commit %s and add a test with the failing input", short(best.SHA)),
		}
		out = append(out, f)
	}
	return out
}

// outputShift is a numeric field of one template that took one value in
// every line after a release, a value it never took before ("score=0" in
// every line after it, 85 and 90 before): the output the change altered,
// a failure that logs no error.
type outputShift struct {
	field string    // the field's name, lower-cased
	lines []LogLine // the lines after the release
}

// outputShifts are the shifts of the fields of every template (any level)
// across a release at start, up to contextAfter after the alert, in order
// of their first line; two lines after it at least.
func (ev *Evidence) outputShifts(start time.Time) []outputShift {
	at := ev.alertTime()
	type key struct{ tmpl, field string }
	type values struct {
		vals  map[string]bool
		lines []LogLine
	}
	before, after := map[key]*values{}, map[key]*values{}
	var order []key
	for _, l := range ev.Logs {
		if l.Timestamp == nil || at != nil && l.Timestamp.After(at.Add(contextAfter)) {
			continue
		}
		// The template of the line with every field's value masked: the
		// fields' values are what is compared.
		tmpl := lineSource(l) + "\x00" + logTemplate(kvRe.ReplaceAllString(reLevelPrefix.ReplaceAllString(l.Message, ""), "$1=<v>"))
		for _, m := range kvRe.FindAllStringSubmatch(l.Message, -1) {
			if _, err := strconv.ParseFloat(m[2], 64); err != nil {
				continue
			}
			k := key{tmpl, strings.ToLower(m[1])}
			side := before
			if l.Timestamp.After(start) {
				side = after
			}
			if before[k] == nil && after[k] == nil {
				order = append(order, k)
			}
			v := side[k]
			if v == nil {
				v = &values{vals: map[string]bool{}}
				side[k] = v
			}
			v.vals[m[2]] = true
			v.lines = append(v.lines, l)
		}
	}
	var out []outputShift
	for _, k := range order {
		b, a := before[k], after[k]
		if b == nil || a == nil || len(a.vals) != 1 || len(a.lines) < 2 {
			continue
		}
		for v := range a.vals { // the one value after the release
			if !b.vals[v] {
				out = append(out, outputShift{field: k.field, lines: a.lines})
			}
		}
	}
	return out
}

// shiftedLines are the lines of the shifts whose field a stem names, and
// the stems named.
func shiftedLines(shifts []outputShift, stems []string) ([]LogLine, []string) {
	var out []LogLine
	var names []string
	for _, sh := range shifts {
		hit := false
		for _, st := range stems {
			if strings.Contains(sh.field, st) {
				names = appendUnique(names, st)
				hit = true
			}
		}
		if hit {
			out = append(out, sh.lines...)
		}
	}
	return out, names
}

// capacityLines counts the lines the cause-to-effect table reads as a
// capacity limit exhausted.
func capacityLines(lines []LogLine) int {
	n := 0
	for _, l := range lines {
		if fam, ok := familyOf(l.Message); ok && fam.cat == catResource {
			n++
		}
	}
	return n
}

// deferReleaseFailures: a release read from its link to the failures'
// words alone yields to any mechanism a detector established (a resource
// at its limit, a dependency down, a runtime exception): the link names
// the code the failures pass through, which the mechanism explains
// without the release. It is dropped then (a weak rival of another
// category would only make the established reading look contested); only
// where nothing else is established does it stand.
func deferReleaseFailures(findings []Finding) []Finding {
	other := false
	for _, f := range findings {
		if !f.Healthy && f.Mode != ModeReleaseFailure && f.Mode != ModeAnomaly && f.Score >= minFaultScore {
			other = true
			break
		}
	}
	if !other {
		return findings
	}
	return slices.DeleteFunc(findings, func(f Finding) bool { return f.Mode == ModeReleaseFailure })
}

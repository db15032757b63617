package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// A row of the cause-to-effect table for a shared store: a store (a cache,
// a database, a queue) whose own slow-operation records name the client
// that ran a blocking command is held by that client. The other clients'
// timeouts against the store are its victims, the store is where the
// failure shows, and the client's code that issues the command (the commit
// that added it, when the evidence singles one out) is the cause: a code
// defect. Redis's SLOWLOG, MySQL's and PostgreSQL's slow-query logs and
// MongoDB's slow operations all record the client by name.

// ModeSlowCommandHolder: a shared store blocked by one client's slow
// commands.
const ModeSlowCommandHolder = "slow_command_holder"

var (
	// reSlowRecord: a store's record of a slow operation.
	reSlowRecord = regexp.MustCompile(`(?i)\bslow[ _-]?(?:log|query|queries|command|op(?:eration)?s?|request)\b|\bslowlog\b`)
	// reSlowClient: the client a slow record names (Redis' CLIENT
	// SETNAME, MySQL's and PostgreSQL's user and application, MongoDB's
	// appName).
	reSlowClient = regexp.MustCompile(`(?i)\b(?:client[_ ]?name|name|application[_ ]?name|app[_ ]?name|appname|application|app|program)"?\s*[=:]\s*"?([A-Za-z][\w.-]{2,})"?`)
	// reSlowCommand: the command or statement a slow record quotes.
	reSlowCommand = regexp.MustCompile(`(?i)\b(?:cmd|command|query|statement|op|stmt)"?\s*[=:]\s*(?:"([^"\n]{2,200})"|'([^'\n]{2,200})'|(\S+(?: \S+)?))`)
	// reSlowDuration: the duration a slow record gives, with its unit.
	reSlowDuration = regexp.MustCompile(`(?i)\b(duration|took|elapsed|query_time|durationmillis|millis)(_us|_ms|_s)?"?\s*[=:]?\s*([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s|sec|seconds)?\b`)
)

// slowRecordDuration is the duration a slow record states, 0 when none.
func slowRecordDuration(msg string) time.Duration {
	m := reSlowDuration.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return 0
	}
	key, unit := strings.ToLower(m[1]), strings.ToLower(m[2]+m[4])
	switch {
	case unit == "" && key == "query_time":
		// MySQL's slow log counts seconds.
		return time.Duration(v * float64(time.Second))
	case unit == "" && strings.Contains(key, "millis"):
		return time.Duration(v * float64(time.Millisecond))
	case strings.Contains(unit, "us") || strings.Contains(unit, "µs"):
		return time.Duration(v * float64(time.Microsecond))
	case strings.Contains(unit, "ms"):
		return time.Duration(v * float64(time.Millisecond))
	case strings.Contains(unit, "s"):
		return time.Duration(v * float64(time.Second))
	}
	// A bare number: milliseconds, as slow-query logs count.
	return time.Duration(v * float64(time.Millisecond))
}

// minSlowHold: a slow record that blocks others lasts at least this long.
const minSlowHold = 500 * time.Millisecond

// knownWorkloads are the workload names the evidence knows: the services
// of logs, deploys and commits, and the pods' workloads.
func (ev *Evidence) knownWorkloads() []string {
	var out []string
	for _, l := range ev.Logs {
		out = appendUnique(out, ev.logService(l))
	}
	for _, d := range ev.Deploys {
		out = appendUnique(out, d.Service)
	}
	for _, c := range ev.Commits {
		out = appendUnique(out, c.Service)
	}
	for _, p := range ev.Pods {
		out = appendUnique(out, ev.workloadOf(p.Pod))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

func detectSlowCommandHolder(ev *Evidence) []Finding {
	known := ev.knownWorkloads()
	type held struct {
		client, store string
		lines         []LogLine
		commands      []string
	}
	var hs []*held
	for _, l := range ev.Logs {
		if l.Timestamp == nil || !reSlowRecord.MatchString(l.Message) || slowRecordDuration(l.Message) < minSlowHold {
			continue
		}
		store := ev.logService(l)
		var client string
		for _, m := range reSlowClient.FindAllStringSubmatch(l.Message, -1) {
			if c := m[1]; !strings.EqualFold(c, store) && slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, c) }) {
				client = c
				break
			}
		}
		if client == "" {
			continue
		}
		i := slices.IndexFunc(hs, func(h *held) bool { return h.client == client && h.store == store })
		if i < 0 {
			hs = append(hs, &held{client: client, store: store})
			i = len(hs) - 1
		}
		h := hs[i]
		h.lines = append(h.lines, l)
		if m := reSlowCommand.FindStringSubmatch(l.Message); m != nil {
			h.commands = appendUnique(h.commands, strings.TrimSpace(m[1]+m[2]+m[3]))
		}
	}
	var out []Finding
	for _, h := range hs {
		if len(h.lines) < 2 {
			continue
		}
		first := h.lines[0].Timestamp
		// The victims: other clients' timeouts and failures against the
		// store (or anything) from just before the first slow record on.
		var victims []LogLine
		var vsvcs []string
		for _, l := range ev.Logs {
			svc := ev.logService(l)
			if svc == h.client || svc == h.store || !isErrorLog(l.LogLine) || l.Timestamp == nil || l.Timestamp.Before(first.Add(-time.Minute)) || !depSymptom.MatchString(l.Message) {
				continue
			}
			victims = append(victims, l)
			vsvcs = appendUnique(vsvcs, svc)
		}
		if len(victims) == 0 {
			continue
		}
		ns := h.lines[0].Namespace
		for _, l := range victims {
			if ns == "" {
				ns = l.Namespace
			}
		}
		if ns == "" {
			ns = ev.alertField("namespace", "kube_namespace")
		}
		cmd := ""
		if len(h.commands) > 0 {
			cmd = h.commands[0]
		}
		f := Finding{Mode: ModeSlowCommandHolder, Category: catCode, Score: 0.82, Entity: deploymentEntity(ns, h.client)}
		what := "slow operations"
		if cmd != "" {
			what = quote(cmd)
		}
		f.Statement = fmt.Sprintf("%s blocks the shared store %s with %s: %s from %s since %s, while %s time out against it (e.g. %s)",
			h.client, h.store, what, plural(len(h.lines), "slow record", "slow records"), h.store, hhmm(first), strings.Join(vsvcs, ", "), quote(victims[0].Message))
		f.validated(fmt.Sprintf("%s log (%s): %s", h.lines[0].Cite.Source("logs"), logOrigin(h.lines[0]), quote(h.lines[0].Message)), citesOfLogs(h.lines))
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", victims[0].Cite.Source("logs"), logOrigin(victims[0]), logLevel(victims[0].LogLine), quote(victims[0].Message)), citesOfLogs(victims))
		// The client's change that issues the command: a commit of the
		// client before the first slow record whose words name the
		// command (its verb, its key pattern); else the commits its
		// latest release shipped, named so that their diffs are read.
		var cands []*Commit
		for i := range ev.Commits {
			c := &ev.Commits[i]
			if c.Removed || !strings.EqualFold(c.Service, h.client) || (c.Timestamp != nil && !c.Timestamp.Before(*first)) {
				continue
			}
			cands = append(cands, c)
		}
		if c, why := commandCommit(cands, h.commands); c != nil {
			f.Entity = "commit/" + short(c.SHA)
			f.Score = 0.88
			f.validated(fmt.Sprintf("Commit %s of %s (%s, %s): %s", short(c.SHA), h.client, c.Author, hhmm(c.Timestamp), clip(firstNonEmptyStr(c.Summary, c.Message), 220)), c.Cite)
			f.inferred(fmt.Sprintf("Commit %s is the change that issues the command: %s", short(c.SHA), why), c.Cite)
		} else if len(cands) > 0 {
			var shas []string
			for _, c := range cands[max(0, len(cands)-maxCulpritDiffs):] {
				shas = append(shas, short(c.SHA)+" ("+clip(firstNonEmptyStr(c.Message, c.Summary), 60)+")")
			}
			f.inferred(fmt.Sprintf("The latest commits of %s before the first slow record: %s", h.client, strings.Join(shas, "; ")))
		}
		if d, ok := ev.deployBefore(h.client, first); ok {
			f.validated(fmt.Sprintf("Deploy of %s %s -> %s finished %s, before the first slow record at %s", h.client, d.PreviousRevision, d.Revision, hhmm(d.FinishedAt), hhmm(first)), d.Cite)
		}
		f.inferred(fmt.Sprintf("A store serves one client's blocking command at the expense of every other client: %s's timeouts are the store's queue behind %s's commands, not a fault of the store", strings.Join(vsvcs, ", "), h.client))
		f.Chain = []string{
			fmt.Sprintf("%s issues %s against %s", h.client, what, h.store),
			fmt.Sprintf("%s blocks while it runs (%s)", h.store, plural(len(h.lines), "slow record", "slow records")),
			fmt.Sprintf("%s time out against %s and the alert fires", strings.Join(vsvcs, ", "), h.store),
		}
		f.Remediation = []string{
			fmt.Sprintf("Stop %s's %s (turn off the caller or roll it back)", h.client, what),
			"Replace the blocking command with an incremental one (a cursor scan, a bounded query) and add a test",
		}
		f.Signals = []string{"slow", "holder", h.store, h.client}
		for _, m := range []string{ModeDependencyFailure, ModeAnomaly, ModeTrafficSaturation, ModeCodeException, ModeDeployRegression, ModeLockContention} {
			f.explains(m, fmt.Sprintf("the timeouts against %s are its queue behind %s's slow commands", h.store, h.client))
		}
		out = append(out, f)
	}
	return out
}

// reCommandWord: a word of a command or its key pattern.
var reCommandWord = regexp.MustCompile(`[A-Za-z][\w:*-]{2,}`)

// commandCommit is the latest of the client's commits whose words (message,
// summary, diff) name a word of the slow commands (the verb KEYS as
// `Keys(`, the pattern `session:*`), and why.
func commandCommit(cands []*Commit, commands []string) (*Commit, string) {
	var best *Commit
	var why string
	for _, c := range cands {
		text := strings.ToLower(c.Message + "\n" + c.Summary + "\n" + c.Diff)
		for _, cmd := range commands {
			for _, w := range reCommandWord.FindAllString(cmd, 6) {
				lw := strings.ToLower(w)
				if !textutil.ContainsWord(text, lw) {
					continue
				}
				if best == nil || (c.Timestamp != nil && best.Timestamp != nil && c.Timestamp.After(*best.Timestamp)) {
					best, why = c, fmt.Sprintf("its change names %q of the slow command %s", w, quote(cmd))
				}
			}
		}
	}
	return best, why
}

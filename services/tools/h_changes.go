package tools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

var changeTypes = []string{facts.ChangeDBMigration, facts.ChangeTimeoutRetry, facts.ChangeConfig, facts.ChangeDependencyBump, facts.ChangeFeature, facts.ChangeRefactor}

// hintChangeTypes maps words of a free-text hint (the symptom being
// explained) to the commit change types that could cause it.
var hintChangeTypes = []struct {
	words []string
	types []string
}{
	{[]string{"db", "database", "sql", "query", "queries", "migration", "schema", "index", "lock", "postgres", "mysql", "rds", "table", "connection pool", "deadlock"}, []string{facts.ChangeDBMigration, facts.ChangeConfig}},
	{[]string{"timeout", "time out", "timed out", "retry", "retries", "latency", "deadline", "slow", "backoff", "circuit", "5xx", "504", "503", "throttl"}, []string{facts.ChangeTimeoutRetry, facts.ChangeConfig}},
	{[]string{"config", "configuration", "env", "flag", "setting", "configmap", "feature flag", "limit", "memory", "oom", "cpu", "replica"}, []string{facts.ChangeConfig}},
	{[]string{"dependency", "dependencies", "library", "bump", "upgrade", "version", "package", "module", "crash", "panic", "nil pointer", "segfault"}, []string{facts.ChangeDependencyBump, facts.ChangeFeature, facts.ChangeRefactor}},
	{[]string{"feature", "new endpoint", "logic", "regression", "bug", "exception", "error"}, []string{facts.ChangeFeature, facts.ChangeRefactor}},
}

// changeTypesForHint returns the change types a hint points at (nil: no filter).
func changeTypesForHint(hint string) []string {
	h := strings.ToLower(hint)
	set := map[string]bool{}
	for _, ct := range changeTypes {
		if strings.Contains(h, ct) || strings.Contains(h, strings.ReplaceAll(ct, "_", " ")) {
			set[ct] = true
		}
	}
	for _, m := range hintChangeTypes {
		for _, w := range m.words {
			if strings.Contains(h, w) {
				for _, t := range m.types {
					set[t] = true
				}
				break
			}
		}
	}
	return sortedKeys(set)
}

// changeWindow widens a window not set by the call backwards by ChangeLookback.
func (s *Service) changeWindow(c *Call) (time.Time, time.Time) {
	if c.Window.Origin == "params" {
		return c.Window.Start, c.Window.End
	}
	return c.Window.Start.Add(-s.cfg.ChangeLookback), c.Window.End
}

// otherDeploysBefore: how far before the incident window other services'
// deploys are listed when the alerted service shipped nothing.
const otherDeploysBefore = 2 * time.Hour

func handleGetDeployHistory(ctx context.Context, s *Service, c *Call, r *Result) error {
	start, end := s.changeWindow(c)
	q := backend.ChangeQuery{Service: c.Params.String("service"), Namespace: c.Params.String("namespace"), Start: start, End: end}
	if q.Service == "*" {
		q.Service = "" // every service's releases, whatever the session's service
	}
	deploys, err := s.be.Changes.Deploys(ctx, q)
	if err != nil {
		return fmt.Errorf("deploy history: %w", err)
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace, r.Service = q.Namespace, q.Service
	scope := first(q.Service, "all services")
	win := start.UTC().Format(time.RFC3339) + ".." + end.UTC().Format(time.RFC3339)
	if deploys == nil {
		deploys = []facts.Deploy{}
	}
	sort.SliceStable(deploys, func(i, j int) bool { return timeBefore(deploys[i].StartedAt, deploys[j].StartedAt) })
	if len(deploys) == 0 && q.Service != "" {
		// Nothing of this service shipped: what else shipped around the
		// incident is the next question (a dependency's release breaks its
		// callers), asked of the incident window only.
		others, err := s.be.Changes.Deploys(ctx, backend.ChangeQuery{Start: c.Window.Start.Add(-otherDeploysBefore), End: c.Window.End})
		if err == nil && len(others) > 0 {
			sort.SliceStable(others, func(i, j int) bool { return timeBefore(others[i].StartedAt, others[j].StartedAt) })
			r.Put(facts.KeyDeploys, others)
			r.Source(s.be.Source(backend.AreaDeploys))
			r.Severity = evidencev1.Severity_SEVERITY_INFO
			var names []string
			for _, d := range others {
				line := deployLine(d) + " (another service)"
				r.Rawf("%s", line)
				r.Snippet(line)
				names = append(names, first(d.Service, "?")+" "+d.Revision)
			}
			r.Summary = fmt.Sprintf("No deploys of %s between %s; other services deployed around the incident: %s.", scope, win, strings.Join(names, ", "))
			return nil
		}
	}
	r.Put(facts.KeyDeploys, deploys)
	if len(deploys) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("No deploys of %s between %s.", scope, win)
		return nil
	}
	r.Source(s.be.Source(backend.AreaDeploys))
	inIncident := 0
	for _, d := range deploys {
		line := deployLine(d)
		r.Rawf("%s", line)
		r.Snippet(line)
		if d.StartedAt != nil && !d.StartedAt.Before(c.Window.Start.Add(-time.Hour)) && !d.StartedAt.After(c.Window.End) {
			inIncident++
		}
		st := strings.ToLower(d.Status)
		switch {
		case strings.Contains(st, "fail") || strings.Contains(st, "error"):
			r.Escalate(evidencev1.Severity_SEVERITY_HIGH)
		case d.IsRollback:
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
	if inIncident > 0 {
		r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
	}
	last := deploys[len(deploys)-1]
	r.Summary = fmt.Sprintf("%s of %s between %s; latest %s revision %s at %s", plural(len(deploys), "deploy", "deploys"), scope, win, first(last.Service, scope), last.Revision, fmtTime(last.StartedAt))
	if last.IsRollback {
		r.Summary += " (a rollback)"
	}
	r.Summary += "."
	if inIncident > 0 {
		r.Summary += fmt.Sprintf(" %s started within an hour before or during the incident window.", plural(inIncident, "deploy", "deploys"))
	}
	return nil
}

func handleGetCommits(ctx context.Context, s *Service, c *Call, r *Result) error {
	start, end := s.changeWindow(c)
	q := backend.ChangeQuery{Service: c.Params.String("service"), Namespace: c.Params.String("namespace"), Start: start, End: end}
	if q.Service == "*" {
		q.Service = "" // every service's history, whatever the session's service
	}
	paths := pathNames(c.Params.String("path"))
	if len(paths) > 0 && c.Window.Origin != "params" {
		// A file's history (`git log -- File.java`): the code a stack
		// trace runs through may have been written long before the input
		// that first reaches it.
		start = end.Add(-pathCommitLookback)
		q.Start = start
	}
	commits, err := s.be.Changes.Commits(ctx, q)
	if err != nil {
		return fmt.Errorf("commit history: %w", err)
	}
	if len(paths) > 0 {
		commits = slices.DeleteFunc(commits, func(cm facts.Commit) bool { return !touchesAny(cm, paths) })
	}
	widened := false
	if len(commits) == 0 && q.Service != "" && len(paths) == 0 {
		// Nothing in the service's own history: what another repository
		// (a platform, policy or GitOps repository) changed that names it,
		// over the configuration look-back. A lowered autoscaler bound or
		// a tightened policy is committed there, often weeks before the
		// load or the client that meets it.
		wq := backend.ChangeQuery{Start: end.Add(-configCommitLookback), End: end}
		all, err := s.be.Changes.Commits(ctx, wq)
		if err != nil {
			return fmt.Errorf("commit history naming %s: %w", q.Service, err)
		}
		for _, cm := range all {
			if commitNames(cm, q.Service) {
				commits = append(commits, cm)
			}
		}
		if len(commits) > 0 {
			widened, start = true, wq.Start
		}
	}
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, evidencev1.Domain_DOMAIN_UNKNOWN
	r.Namespace, r.Service = q.Namespace, q.Service
	var want []string
	if ct := c.Params.String("change_type"); ct != "" {
		want = []string{ct}
	} else if h := c.Params.String("hint"); h != "" {
		want = changeTypesForHint(h)
	}
	sort.SliceStable(commits, func(i, j int) bool { return timeBefore(commits[i].Timestamp, commits[j].Timestamp) })
	var kept []facts.Commit
	for _, cm := range commits {
		if len(want) == 0 || hasAny(cm.ChangeTypes, want) || fileHasAny(cm.Files, want) {
			kept = append(kept, cm)
		}
	}
	if kept == nil {
		kept = []facts.Commit{}
	}
	r.Put(facts.KeyCommits, kept)
	r.Put("commits_total", len(commits))
	if len(want) > 0 {
		r.Put("change_types_filter", want)
	}
	scope := first(q.Service, "all services")
	if len(paths) > 0 {
		scope += " touching " + strings.Join(paths, ", ")
		r.Put("path_filter", paths)
	}
	if widened {
		scope = "any repository, naming " + q.Service
		r.Put("widened", "commits of any repository that name "+q.Service+" in a file path or message")
	}
	win := start.UTC().Format(time.RFC3339) + ".." + end.UTC().Format(time.RFC3339)
	if len(commits) == 0 {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("No commits to %s between %s.", scope, win)
		return nil
	}
	r.Source(s.be.Source(backend.AreaCommits))
	for _, cm := range commits {
		r.Rawf("%s %s %s [%s] %s", shortSHA(cm.SHA), fmtTime(cm.Timestamp), cm.Author, strings.Join(cm.ChangeTypes, ","), textutil.FirstLine(cm.Message))
		for _, f := range cm.Files {
			r.Rawf("    %s %s +%d -%d", f.ChangeType, f.Path, f.Additions, f.Deletions)
		}
		if cm.Summary != "" {
			r.Rawf("    %s", cm.Summary)
		}
	}
	for _, cm := range kept {
		r.Snippet(fmt.Sprintf("%s %s [%s] %s", shortSHA(cm.SHA), fmtTime(cm.Timestamp), strings.Join(cm.ChangeTypes, ","), first(cm.Summary, textutil.FirstLine(cm.Message))))
	}
	if len(want) == 0 {
		r.Summary = fmt.Sprintf("%s to %s between %s", plural(len(commits), "commit", "commits"), scope, win)
	} else {
		r.Summary = fmt.Sprintf("%d of %s to %s between %s are of type %s", len(kept), plural(len(commits), "commit", "commits"), scope, win, strings.Join(want, "/"))
	}
	if len(kept) > 0 {
		lastC := kept[len(kept)-1]
		r.Summary += fmt.Sprintf("; latest %s: %s", shortSHA(lastC.SHA), textutil.FirstLine(first(lastC.Message, lastC.Summary)))
		if len(want) > 0 {
			r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
		}
	}
	r.Summary = strings.TrimSuffix(r.Summary, ".") + "."
	return nil
}

// configCommitLookback: how far back commits of other repositories that
// name a service are read when its own history is empty.
const configCommitLookback = 30 * 24 * time.Hour

// pathCommitLookback: how far back a file's history is read when no window
// is given.
const pathCommitLookback = 365 * 24 * time.Hour

// pathNames are the file names of a comma-separated path parameter.
func pathNames(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" && len(out) < 20 {
			out = append(out, p)
		}
	}
	return out
}

// touchesAny: the commit changed a file that is one of paths, or whose
// path ends with one of them as whole path elements (`Validity.java`,
// `validity/Validity.java`).
func touchesAny(cm facts.Commit, paths []string) bool {
	for _, f := range cm.Files {
		for _, p := range paths {
			if f.Path == p || strings.HasSuffix(f.Path, "/"+strings.TrimPrefix(p, "/")) {
				return true
			}
		}
	}
	return false
}

// commitNames: cm is a commit of the service name (its own history past
// the window), a file path of cm names name (facts.Commit.PathNames), or
// its message or summary has name as a word.
func commitNames(cm facts.Commit, name string) bool {
	if strings.EqualFold(cm.Service, name) || cm.PathNames(name) {
		return true
	}
	name = strings.ToLower(name)
	for _, w := range strings.FieldsFunc(strings.ToLower(cm.Message+" "+cm.Summary), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		if strings.Trim(w, ".") == name && len(name) >= 3 {
			return true
		}
	}
	return false
}

func hasAny(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}

func fileHasAny(files []facts.CommitFile, want []string) bool {
	for _, f := range files {
		for _, w := range want {
			if f.ChangeType == w {
				return true
			}
		}
	}
	return false
}

func shortSHA(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

func handleGetCommitDiff(ctx context.Context, s *Service, c *Call, r *Result) error {
	sha := c.Params.String("sha")
	diff, err := s.be.Changes.CommitDiff(ctx, sha)
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_CODE, evidencev1.Domain_DOMAIN_UNKNOWN
	r.ResourceName = sha
	if err != nil {
		return fmt.Errorf("diff of commit %s: %w", sha, err)
	}
	cm := facts.Commit{SHA: sha}
	// Attach the commit's summary when the history knows it (prefix match on sha).
	if all, err := s.be.Changes.Commits(ctx, backend.ChangeQuery{Service: c.Params.String("service")}); err == nil {
		for _, x := range all {
			if strings.HasPrefix(x.SHA, sha) || strings.HasPrefix(sha, x.SHA) && len(x.SHA) >= 7 {
				cm = x
				break
			}
		}
	}
	cm.Diff = diff
	cm.HasDiff = strings.TrimSpace(diff) != ""
	r.Service = cm.Service
	r.Put(facts.KeyCommits, []facts.Commit{cm})
	if !cm.HasDiff {
		r.NoData = true
		r.Severity = evidencev1.Severity_SEVERITY_INFO
		r.Summary = fmt.Sprintf("Commit %s has no diff available.", shortSHA(sha))
		return nil
	}
	r.Source(s.be.Source(backend.AreaCommits))
	r.Raw.WriteString(diff)
	adds, dels, files := 0, 0, 0
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git"):
			files++
		case strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---"):
		case strings.HasPrefix(line, "+"):
			adds++
			if len(r.Snippets) < 20 && changeLineInteresting(line) {
				r.Snippet(line)
			}
		case strings.HasPrefix(line, "-"):
			dels++
			if len(r.Snippets) < 20 && changeLineInteresting(line) {
				r.Snippet(line)
			}
		}
	}
	if files == 0 {
		files = max(1, len(cm.Files))
	}
	r.Summary = fmt.Sprintf("Commit %s changes %s (+%d -%d)", shortSHA(sha), plural(files, "file", "files"), adds, dels)
	if len(cm.ChangeTypes) > 0 {
		r.Summary += " of type " + strings.Join(cm.ChangeTypes, "/")
	}
	if m := textutil.FirstLine(cm.Message); m != "" {
		r.Summary += ": " + m
	}
	r.Summary = strings.TrimSuffix(r.Summary, ".") + "."
	return nil
}

var diffKeywords = []string{"timeout", "retry", "retries", "pool", "limit", "memory", "cpu", "replica", "index", "alter table", "create table", "drop", "lock", "cache", "ttl", "max", "min", "deadline", "port", "host", "url", "version", "enabled", "disable"}

func changeLineInteresting(line string) bool {
	l := strings.ToLower(line)
	if strings.TrimSpace(strings.TrimLeft(l, "+-")) == "" {
		return false
	}
	for _, k := range diffKeywords {
		if strings.Contains(l, k) {
			return true
		}
	}
	return false
}

// deployLine is one deploy as the raw output and snippets print it.
func deployLine(d facts.Deploy) string {
	return fmt.Sprintf("%s %s/%s %s -> %s rollback=%v status=%s image=%s finished=%s", fmtTime(d.StartedAt), d.Namespace, d.Service,
		first(d.PreviousRevision, "?"), d.Revision, d.IsRollback, first(d.Status, "-"), d.Image, fmtTime(d.FinishedAt))
}

package analysis

import (
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A release is the culprit of failures that began after it and name what
// its commit changed (a touched file's stem, an identifier of its text),
// in the service it shipped or in one that consumes its output; not when
// the failures came first, when the release is too old, when nothing links
// them, for a rollback, or for one line linked only loosely. A commit of
// settings alone is configuration.
func TestDetectReleaseFailure(t *testing.T) {
	base := time.Date(2026, 5, 19, 12, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := base.Add(time.Duration(m) * time.Minute); return &x }
	deploy := func(svc, rev string, m int, rollback bool) Deploy {
		return Deploy{Deploy: facts.Deploy{Service: svc, Namespace: "web", Revision: rev, PreviousRevision: "prev", StartedAt: at(m), FinishedAt: at(m + 5), IsRollback: rollback}}
	}
	commit := func(sha, svc, msg string, m int, files ...string) Commit {
		c := Commit{Commit: facts.Commit{SHA: sha, Service: svc, Message: msg, Timestamp: at(m)}}
		for _, f := range files {
			c.Files = append(c.Files, facts.CommitFile{Path: f})
		}
		return c
	}
	line := func(svc, level string, m int, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at(m), Service: svc, Namespace: "web", Level: level, Message: msg}}
	}
	slow := []LogLine{
		line("page-render", "WARN", 100, "slow request GET /pages/881 took 10.0s; 97% of time in sanitize_comment (regex)"),
		line("page-render", "WARN", 103, "slow request GET /pages/881 took 9.4s; 97% of time in sanitize_comment (regex)"),
		line("page-render", "INFO", 104, "GET /pages/12 200 40ms"),
	}
	rejected := []LogLine{
		line("policy-store", "ERROR", 20, "rejecting quote Q-1: field annualPremium '1.2E+3' does not match schema"),
		line("policy-store", "ERROR", 24, "rejecting quote Q-2: field annualPremium '1.2E+3' does not match schema"),
	}
	tests := []struct {
		name     string
		deploys  []Deploy
		commits  []Commit
		logs     []LogLine
		alertMin int
		want     string // entity, "" for no finding
		cat      investigationv1.RootCauseCategory
	}{
		{"a touched file's stem in the failing service's lines",
			[]Deploy{deploy("page-render", "7.8.0", 0, false)}, []Commit{commit("c4e19a07aa", "page-render", "comments: trim whitespace before rendering", -60, "render/sanitize.py")},
			slow, 105, "commit/c4e19a0", catCode},
		{"a camelCase field of a consumer's errors names the producer's file",
			[]Deploy{deploy("quote-engine", "21.3.0", 10, false), deploy("broker-portal", "8.0.1", 15, false)},
			[]Commit{commit("f3a9c1e7bb", "quote-engine", "serialize amounts via the default formatter", -30, "src/main/java/quote/PremiumJson.java"), commit("99aa00bbcc", "broker-portal", "fonts: fall back to system fonts", -20, "web/fonts.css")},
			rejected, 30, "commit/f3a9c1e", catCode},
		{"a settings-only commit is configuration",
			[]Deploy{deploy("page-render", "7.8.1", 0, false)}, []Commit{{Commit: facts.Commit{SHA: "d00d00d00d", Service: "page-render", Message: "tune sanitizer limits", Timestamp: at(-10), ChangeTypes: []string{facts.ChangeConfig},
				Files: []facts.CommitFile{{Path: "deploy/sanitize_limits.yaml", ChangeType: facts.ChangeConfig}}}}},
			slow, 105, "commit/d00d00d", catConfig},
		{"a capacity the change exhausts is the capacity row",
			[]Deploy{deploy("ad-scanner", "6.4.0", 0, false)}, []Commit{commit("08b3d6f0aa", "ad-scanner", "scanner: per-request HTTP client", -30, "scanner/fetch.go")},
			[]LogLine{line("ad-scanner", "ERROR", 16, "fetch landing page: dial tcp 10.30.4.12:3128: connect: cannot assign requested address"),
				line("ad-scanner", "ERROR", 18, "fetch landing page: dial tcp 10.30.4.12:3128: connect: cannot assign requested address")}, 30, "commit/08b3d6f", catResource},
		{"a word of the service's own name links nothing",
			[]Deploy{deploy("visit-notifier", "3.1.0", 0, false)}, []Commit{commit("2c9d7b0aaa", "visit-notifier", "templates: add parking hint", -30, "templates/visit_confirmed.txt")},
			[]LogLine{line("visit-notifier", "ERROR", 10, "send to visits-sms failed: upstream connect error"), line("visit-notifier", "ERROR", 12, "send to visits-sms failed: upstream connect error")},
			30, "", 0},
		{"an output the release altered: one new value of a field its file names",
			[]Deploy{deploy("quiz-grader", "7.0.0", 0, false)}, []Commit{commit("c04d9e2aaa", "quiz-grader", "grader: use int counters", -30, "internal/grade/score.go")},
			[]LogLine{line("quiz-grader", "INFO", -5, "graded attempt 1: correct=17 total=20 score=85 passed=true"),
				line("quiz-grader", "INFO", 5, "graded attempt 2: correct=17 total=20 score=0 passed=false"),
				line("quiz-grader", "INFO", 9, "graded attempt 3: correct=18 total=20 score=0 passed=false")},
			30, "commit/c04d9e2", catCode},
		{"values that still vary after the release are no shift",
			[]Deploy{deploy("quiz-grader", "7.0.0", 0, false)}, []Commit{commit("c04d9e2aaa", "quiz-grader", "grader: use int counters", -30, "internal/grade/score.go")},
			[]LogLine{line("quiz-grader", "INFO", -5, "graded attempt 1: correct=17 total=20 score=85 passed=true"),
				line("quiz-grader", "INFO", 5, "graded attempt 2: correct=17 total=20 score=0 passed=false"),
				line("quiz-grader", "INFO", 9, "graded attempt 3: correct=18 total=20 score=90 passed=true")},
			30, "", 0},
		{"a shifted field the commit does not name",
			[]Deploy{deploy("quiz-grader", "7.0.0", 0, false)}, []Commit{commit("c04d9e2aaa", "quiz-grader", "grader: use int counters", -30, "internal/grade/score.go")},
			[]LogLine{line("quiz-grader", "INFO", -5, "graded attempt 1: latency_ms=85"),
				line("quiz-grader", "INFO", 5, "graded attempt 2: latency_ms=3"),
				line("quiz-grader", "INFO", 9, "graded attempt 3: latency_ms=3")},
			30, "", 0},
		{"a red herring release: nothing names its commit",
			[]Deploy{deploy("page-render", "7.8.0", 0, false)}, []Commit{commit("e1e1e1e1e1", "page-render", "theme: darker header", -60, "static/theme.css")},
			slow, 105, "", 0},
		{"the failures came before the release",
			[]Deploy{deploy("page-render", "7.8.0", 101, false)}, []Commit{commit("c4e19a07aa", "page-render", "comments: trim whitespace", 90, "render/sanitize.py")},
			slow, 105, "", 0},
		{"a release older than the window",
			[]Deploy{deploy("page-render", "7.8.0", 100-4*24*60, false)}, []Commit{commit("c4e19a07aa", "page-render", "comments: trim whitespace", 50-4*24*60, "render/sanitize.py")},
			slow, 105, "", 0},
		{"a rollback ships no defect",
			[]Deploy{deploy("page-render", "7.7.9", 0, true)}, []Commit{commit("c4e19a07aa", "page-render", "comments: trim whitespace", -60, "render/sanitize.py")},
			slow, 105, "", 0},
		{"one line linked loosely only",
			[]Deploy{deploy("page-render", "7.8.0", 0, false)}, []Commit{commit("c4e19a07aa", "page-render", "comments: trim whitespace", -60, "render/sanitize.py")},
			slow[:1], 105, "", 0},
		{"one line naming an identifier of the commit exactly",
			[]Deploy{deploy("page-render", "7.8.0", 0, false)}, []Commit{commit("c4e19a07aa", "page-render", "comments: new sanitize_comment pattern", -60, "render/sanitize.py")},
			slow[:1], 105, "commit/c4e19a0", catCode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "x", StartsAt: timestamppb.New(*at(tc.alertMin))}, nil)
			ev.Deploys, ev.Commits, ev.Logs = tc.deploys, tc.commits, tc.logs
			fs := detectReleaseFailure(ev)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %q (%s), want none", fs[0].Entity, fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Entity != tc.want || fs[0].Category != tc.cat {
				t.Fatalf("findings %+v, want one on %s (%s)", fs, tc.want, tc.cat)
			}
		})
	}
}

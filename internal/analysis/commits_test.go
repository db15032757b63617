package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestSpecificCommit(t *testing.T) {
	c := func(sha, msg string, files ...string) Commit {
		cm := Commit{Commit: facts.Commit{SHA: sha, Message: msg}}
		for _, f := range files {
			cm.Files = append(cm.Files, facts.CommitFile{Path: f})
		}
		return cm
	}
	release := []Commit{
		c("aaa1111", "refactor: rename helpers", "pkg/util/strings.go"),
		c("bbb2222", "feat: regional rounding", "billing/rounding.go", "billing/rounding_test.go"),
		c("ccc3333", "chore: bump deps", "go.mod"),
	}
	tests := []struct {
		name    string
		commits []Commit
		errs    []string
		want    string
	}{
		{"stack frame names a touched file", release, []string{"panic: nil map at billing/rounding.go:57"}, "bbb2222"},
		{"java frame", []Commit{c("j1", "x", "src/main/java/x/QuoteCache.java"), c("j2", "y", "README.md")}, []string{"at x.QuoteCache.get(QuoteCache.java:88)"}, "j1"},
		{"identifier of the change quoted by the error", []Commit{c("k1", "read bin_zone from the order payload", "app/picker.py"), c("k2", "docs", "docs/x.md")}, []string{"KeyError: 'bin_zone'"}, "k1"},
		{"nothing names a commit", release, []string{"connection refused"}, ""},
		{"two commits named equally: no choice", []Commit{c("t1", "x", "a/handler.go"), c("t2", "y", "b/handler.go")}, []string{"panic in handler.go:10"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := specificCommit(tc.commits, tc.errs)
			sha := ""
			if got != nil {
				sha = got.SHA
			}
			if sha != tc.want {
				t.Fatalf("specificCommit = %q (%s), want %q", sha, why, tc.want)
			}
			if got != nil && why == "" {
				t.Error("no reason given")
			}
		})
	}
}

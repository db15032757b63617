package owasp

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/sast"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
	"github.com/rcamesh/rcamesh/internal/sast/sasttest"
)

// rewrite blanks comments and renames the test cases' habitual identifiers
// (same lengths, so the SARIF columns stay valid): the verdicts must not
// move, or the analyser would be reading names rather than code.
var renames = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bparam\b`), "input"},
	{regexp.MustCompile(`\bbar\b`), "val"},
	{regexp.MustCompile(`\bdoSomething\b`), "transformIt"},
	{regexp.MustCompile(`\bBenchmarkTest(\d{5})\b`), "ZzzzzzzzzzzzZ$1"},
}

var blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
var lineComment = regexp.MustCompile(`(?m)^(\s*)//.*$`)

func blank(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, s)
}

func rewrite(src string) string {
	src = blockComment.ReplaceAllStringFunc(src, blank)
	src = lineComment.ReplaceAllStringFunc(src, blank)
	for _, r := range renames {
		src = r.re.ReplaceAllString(src, r.with)
	}
	return src
}

// TestVerdictsIgnoreNames triages every public test case twice, as shipped
// and rewritten (comments blanked, identifiers and test names renamed), and
// requires the same verdict for each.
func TestVerdictsIgnoreNames(t *testing.T) {
	if testing.Short() {
		t.Skip("reads and rewrites the benchmark (seconds); run without -short")
	}
	root := benchdata.Dir(t, Dir)
	if root == "" {
		return
	}
	tmp := t.TempDir()
	err := filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := string(b)
		if strings.HasSuffix(p, ".java") && strings.Contains(rel, "testcode") {
			out = rewrite(out)
		}
		dst := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(out), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "findings-all.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	fs0, err := sast.ParseSARIF(doc)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := repo.Open(root, "")
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := repo.Open(tmp, "")
	if err != nil {
		t.Fatal(err)
	}
	a := sast.NewTriager(orig, &sast.CriticEvaluator{Client: sasttest.Critic(t, orig.Root(), nil)}, nil).Run(context.Background(), fs0)
	b := sast.NewTriager(renamed, &sast.CriticEvaluator{Client: sasttest.Critic(t, renamed.Root(), nil)}, nil).Run(context.Background(), fs0)
	diff := 0
	for i := range a {
		if a[i].Verdict != b[i].Verdict {
			diff++
			if diff <= 5 {
				t.Errorf("%s: %s as shipped, %s renamed (%s)", a[i].Finding.File, a[i].Verdict, b[i].Verdict, b[i].Reason)
			}
		}
	}
	if diff > 0 {
		t.Errorf("%d of %d verdicts depend on names or comments", diff, len(a))
	}
}

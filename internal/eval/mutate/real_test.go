package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpensreScenarioRewrite rewrites real suite scenarios and checks that
// no entity name survives in the answer's keywords.
func TestOpensreScenarioRewrite(t *testing.T) {
	root := os.Getenv("RCAMESH_BENCHMARKS")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "benchmarks")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "opensre-synthetic", "*", "0*"))
	if len(dirs) == 0 {
		t.Skip("opensre suite not present")
	}
	for _, d := range dirs {
		dst := t.TempDir()
		mapping, err := Scenario(d, dst, DefaultOptions(7))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(mapping) == 0 {
			t.Errorf("%s: nothing renamed", d)
		}
		ans, err := os.ReadFile(filepath.Join(dst, "answer.yml"))
		if err != nil {
			t.Fatal(err)
		}
		for old := range mapping {
			if len(old) > 6 && strings.Contains(string(ans), old) {
				t.Errorf("%s: answer still names %q", filepath.Base(d), old)
			}
		}
	}
}

// Package scenarios bundles the scenarios rcamesh ships: the demo that
// `rcamesh investigate` runs by default, and our own evaluation corpus.
// They are our own writing; the third-party suites are read from
// ../shared/benchmarks and never copied here.
package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed all:demo
var bundled embed.FS

// Demo is the name of the bundled demo scenario.
const Demo = "demo"

// Extract writes the bundled scenario name into a new folder under dir and
// returns its path.
func Extract(name, dir string) (string, error) {
	sub, err := fs.Sub(bundled, name)
	if err != nil {
		return "", fmt.Errorf("scenarios: %s: %w", name, err)
	}
	if _, err := fs.Stat(sub, "alert.json"); err != nil {
		return "", fmt.Errorf("scenarios: no bundled scenario %q", name)
	}
	out := filepath.Join(dir, name)
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(out, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("scenarios: extract %s: %w", name, err)
	}
	return out, nil
}

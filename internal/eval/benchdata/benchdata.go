// Package benchdata locates the shared benchmark suites (opensre-synthetic,
// petshop, ...) that tests read in place: $RCAMESH_BENCHMARKS, else
// ../shared/benchmarks next to the repository root. Tests call Dir, which
// skips the test when the folder is absent on a developer machine and fails
// it under CI, where the suites are part of the contract.
package benchdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvVar names the variable that overrides the benchmarks folder. A
// relative value is taken from the repository root.
const EnvVar = "RCAMESH_BENCHMARKS"

// module is the repository's module path: its go.mod marks the root.
const module = "github.com/rcamesh/rcamesh"

// Root is the benchmarks folder, whether or not it exists.
func Root() (string, error) {
	if p := strings.TrimSpace(os.Getenv(EnvVar)); p != "" {
		if filepath.IsAbs(p) {
			return filepath.Clean(p), nil
		}
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		return filepath.Join(root, p), nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "shared", "benchmarks"), nil
}

// RepoRoot is the nearest folder, from the working directory up, whose
// go.mod declares the repository's module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("benchdata: %w", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declares(b, module) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("benchdata: no go.mod of " + module + " above the working directory")
		}
		dir = parent
	}
}

func declares(gomod []byte, mod string) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == mod {
			return true
		}
	}
	return false
}

// Lookup is the benchmarks folder (joined with sub) and whether it is
// there, for tests and benchmarks that only add the suites when present.
func Lookup(sub ...string) (string, bool) {
	root, err := Root()
	if err != nil {
		return "", false
	}
	p := filepath.Join(append([]string{root}, sub...)...)
	st, err := os.Stat(p)
	return p, err == nil && st.IsDir()
}

// InCI reports whether the CI variable is set (to anything but "", "0"
// or "false").
func InCI() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("CI"))) {
	case "", "0", "false":
		return false
	}
	return true
}

// Dir returns the benchmarks folder joined with sub. When that folder is
// absent the test is skipped, or failed under CI; Dir then returns "".
func Dir(tb testing.TB, sub ...string) string {
	tb.Helper()
	p, ok := Lookup(sub...)
	if ok {
		return p
	}
	if p == "" {
		p = "(unresolved: " + errString() + ")"
	}
	if InCI() {
		tb.Fatalf("benchmarks not found at %s (set %s); required under CI", p, EnvVar)
		return ""
	}
	tb.Skipf("benchmarks not found at %s (set %s); skipped outside CI", p, EnvVar)
	return ""
}

func errString() string {
	if _, err := Root(); err != nil {
		return err.Error()
	}
	return "unknown"
}

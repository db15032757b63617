package benchdata

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records Skipf/Fatalf instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestRoot(t *testing.T) {
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "go.mod")); err != nil {
		t.Fatalf("repo root %s has no go.mod", repo)
	}
	abs := t.TempDir()
	cases := []struct{ env, want string }{
		{"", filepath.Join(filepath.Dir(repo), "shared", "benchmarks")},
		{abs, abs},
		{"../elsewhere/bench", filepath.Join(filepath.Dir(repo), "elsewhere", "bench")},
	}
	for _, tc := range cases {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			got, err := Root()
			if err != nil || got != tc.want {
				t.Fatalf("Root() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDir(t *testing.T) {
	present := t.TempDir()
	if err := os.Mkdir(filepath.Join(present, "opensre-synthetic"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nothing-here")
	cases := []struct {
		name, env, ci string
		sub           []string
		want          string
		skip, fail    bool
	}{
		{name: "present", env: present, want: present},
		{name: "present sub-suite", env: present, sub: []string{"opensre-synthetic"}, want: filepath.Join(present, "opensre-synthetic")},
		{name: "absent sub-suite outside CI", env: present, sub: []string{"petshop"}, skip: true},
		{name: "absent outside CI", env: missing, skip: true},
		{name: "absent with CI=false", env: missing, ci: "false", skip: true},
		{name: "absent under CI", env: missing, ci: "true", fail: true},
		{name: "present under CI", env: present, ci: "1", want: present},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvVar, tc.env)
			t.Setenv("CI", tc.ci)
			f := &fakeTB{}
			got := Dir(f, tc.sub...)
			if got != tc.want {
				t.Errorf("Dir = %q, want %q", got, tc.want)
			}
			if (f.skipped != "") != tc.skip || (f.failed != "") != tc.fail {
				t.Fatalf("skipped %q, failed %q; want skip=%v fail=%v", f.skipped, f.failed, tc.skip, tc.fail)
			}
			msg := f.skipped + f.failed
			if msg != "" && (!strings.Contains(msg, "benchmarks not found at ") || !strings.Contains(msg, "set RCAMESH_BENCHMARKS")) {
				t.Errorf("message %q must say where it looked and how to set it", msg)
			}
			if tc.skip && !strings.Contains(msg, "skipped outside CI") {
				t.Errorf("skip message %q", msg)
			}
		})
	}
}

package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfinement(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "src", "A.java"), []byte("class A {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	r, err := Open(root, "")
	if err != nil {
		t.Fatal(err)
	}
	r.MaxBytes = 50
	cases := []struct {
		path string
		want error
	}{
		{"src/A.java", nil},
		{"../" + filepath.Base(outside) + "/secret.txt", ErrOutside},
		{filepath.Join(outside, "secret.txt"), ErrOutside},
		{"link.txt", ErrOutside},
		{"big.txt", ErrTooLarge},
		{"src/Missing.java", ErrNotFound},
		{"src", ErrNotFound},
	}
	for _, tc := range cases {
		_, err := r.Read(tc.path)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Read(%q) = %v, want %v", tc.path, err, tc.want)
		}
	}
	if _, err := Open(root, outside); !errors.Is(err, ErrOutside) {
		t.Errorf("a repository outside the allowed root: %v", err)
	}
	if _, err := Open(filepath.Join(root, "src", "A.java"), ""); err == nil {
		t.Error("a file as repository: want an error")
	}
	fs, err := r.Files("src", "*.java", 0)
	if err != nil || len(fs) != 1 || fs[0] != "src/A.java" {
		t.Errorf("Files = %v, %v", fs, err)
	}
	if got := r.ByBase("A.java"); len(got) != 1 {
		t.Errorf("ByBase = %v", got)
	}
}

package repo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestCloneLocalURL(t *testing.T) {
	src := t.TempDir()
	g, err := git.PlainInit(src, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "A.java"), []byte("class A {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := g.Worktree()
	if _, err := wt.Add("A.java"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("a", &git.CommitOptions{Author: &object.Signature{Name: "dev", Email: "dev@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	url := "file://" + src
	if !IsURL(url) || IsURL(src) {
		t.Fatal("IsURL")
	}
	dst := filepath.Join(t.TempDir(), "clone")
	if err := Clone(context.Background(), url, dst); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dst, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.Read("A.java"); err != nil || string(b) != "class A {}\n" {
		t.Fatalf("cloned file: %q %v", b, err)
	}
	if err := Clone(context.Background(), "file://"+filepath.Join(src, "nope"), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("cloning a missing repository: want an error")
	}
}

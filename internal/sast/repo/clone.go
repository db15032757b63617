package repo

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
)

// IsURL reports whether s names a remote repository (cloned, not read in place).
func IsURL(s string) bool {
	for _, p := range []string{"https://", "http://", "ssh://", "git://", "file://", "git@"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Clone makes a shallow, single-branch clone of url into dir (empty or
// absent) with go-git, for a triage run that reads it read-only.
func Clone(ctx context.Context, url, dir string) error {
	_, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: url, Depth: 1, SingleBranch: true, Tags: git.NoTags})
	if err != nil {
		return fmt.Errorf("repo: clone %s: %w", url, err)
	}
	return nil
}

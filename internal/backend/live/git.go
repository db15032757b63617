package live

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Git is commit history from local clones, one per service. Each commit's
// files are classified by change type when the commit is first read, and
// diffs are produced only on demand. Deploys come from elsewhere (the
// Kubernetes rollout history), so Deploys returns none.
type Git struct {
	repos map[string]*gitRepo // by service
	mu    sync.Mutex
	cache map[string][]facts.Commit // sha list per service, summarised once
}

type gitRepo struct {
	service string
	branch  string
	repo    *git.Repository
}

// OpenGit opens every configured repository.
func OpenGit(g *integrations.Git) (*Git, error) {
	out := &Git{repos: map[string]*gitRepo{}, cache: map[string][]facts.Commit{}}
	for _, r := range g.Repositories {
		repo, err := git.PlainOpenWithOptions(r.Path, &git.PlainOpenOptions{DetectDotGit: true})
		if err != nil {
			return nil, fmt.Errorf("git: open %s (service %s): %w", r.Path, r.Service, err)
		}
		out.repos[r.Service] = &gitRepo{service: r.Service, branch: r.Branch, repo: repo}
	}
	return out, nil
}

// Deploys implements backend.ChangeHistory; git has no deploy log.
func (g *Git) Deploys(ctx context.Context, q backend.ChangeQuery) ([]facts.Deploy, error) {
	return nil, nil
}

// Commits implements backend.ChangeHistory: summaries of the commits in the
// window, newest last.
func (g *Git) Commits(ctx context.Context, q backend.ChangeQuery) ([]facts.Commit, error) {
	var repos []*gitRepo
	if q.Service != "" {
		if r, ok := g.repos[q.Service]; ok {
			repos = append(repos, r)
		}
	} else {
		for _, r := range g.repos {
			repos = append(repos, r)
		}
	}
	var out []facts.Commit
	for _, r := range repos {
		cs, err := r.commits(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Timestamp == nil || out[j].Timestamp == nil {
			return false
		}
		return out[i].Timestamp.Before(*out[j].Timestamp)
	})
	return out, nil
}

func (r *gitRepo) head() (*plumbing.Reference, error) {
	if r.branch != "" {
		ref, err := r.repo.Reference(plumbing.NewBranchReferenceName(r.branch), true)
		if err == nil {
			return ref, nil
		}
	}
	return r.repo.Head()
}

func (r *gitRepo) commits(ctx context.Context, q backend.ChangeQuery) ([]facts.Commit, error) {
	ref, err := r.head()
	if err != nil {
		return nil, fmt.Errorf("git %s: head: %w", r.service, err)
	}
	opts := &git.LogOptions{From: ref.Hash(), Order: git.LogOrderCommitterTime}
	if !q.Start.IsZero() {
		s := q.Start
		opts.Since = &s
	}
	if !q.End.IsZero() {
		e := q.End
		opts.Until = &e
	}
	it, err := r.repo.Log(opts)
	if err != nil {
		return nil, fmt.Errorf("git %s: log: %w", r.service, err)
	}
	defer it.Close()
	var out []facts.Commit
	errStop := errors.New("stop")
	err = it.ForEach(func(c *object.Commit) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(out) >= 200 {
			return errStop
		}
		fc, err := summarize(c)
		if err != nil {
			return err
		}
		fc.Service = r.service
		out = append(out, fc)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("git %s: %w", r.service, err)
	}
	// newest last
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func summarize(c *object.Commit) (facts.Commit, error) {
	t := c.Author.When.UTC()
	fc := facts.Commit{SHA: c.Hash.String(), Author: c.Author.Email, Timestamp: &t,
		Message: strings.TrimSpace(c.Message), HasDiff: true}
	stats, err := c.Stats()
	if err != nil {
		return fc, fmt.Errorf("stats of %s: %w", c.Hash, err)
	}
	types := map[string]bool{}
	for _, s := range stats {
		ct := ClassifyFile(s.Name, fc.Message)
		types[ct] = true
		fc.Files = append(fc.Files, facts.CommitFile{Path: s.Name, ChangeType: ct, Additions: s.Addition, Deletions: s.Deletion})
	}
	if mt := ClassifyMessage(fc.Message); mt != "" {
		types[mt] = true
	}
	for t := range types {
		fc.ChangeTypes = append(fc.ChangeTypes, t)
	}
	sort.Strings(fc.ChangeTypes)
	first := strings.SplitN(fc.Message, "\n", 2)[0]
	fc.Summary = fmt.Sprintf("%s (%d files: %s)", first, len(fc.Files), strings.Join(fc.ChangeTypes, ", "))
	return fc, nil
}

// CommitDiff implements backend.ChangeHistory.
func (g *Git) CommitDiff(ctx context.Context, sha string) (string, error) {
	for _, r := range g.repos {
		h, err := r.repo.ResolveRevision(plumbing.Revision(sha))
		if err != nil {
			continue
		}
		c, err := r.repo.CommitObject(*h)
		if err != nil {
			return "", fmt.Errorf("git %s: %w", r.service, err)
		}
		var parentTree *object.Tree
		if c.NumParents() > 0 {
			p, err := c.Parent(0)
			if err != nil {
				return "", fmt.Errorf("git %s: parent of %s: %w", r.service, sha, err)
			}
			if parentTree, err = p.Tree(); err != nil {
				return "", fmt.Errorf("git %s: %w", r.service, err)
			}
		}
		tree, err := c.Tree()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", r.service, err)
		}
		changes, err := object.DiffTreeWithOptions(ctx, parentTree, tree, object.DefaultDiffTreeOptions)
		if err != nil {
			return "", fmt.Errorf("git %s: diff: %w", r.service, err)
		}
		patch, err := changes.PatchContext(ctx)
		if err != nil {
			return "", fmt.Errorf("git %s: patch: %w", r.service, err)
		}
		return patch.String(), nil
	}
	return "", fmt.Errorf("git: commit %s not found in any repository", sha)
}

// ClassifyFile assigns a change type to one changed file.
func ClassifyFile(p, message string) string {
	lp := strings.ToLower(p)
	base := path.Base(lp)
	switch {
	case strings.Contains(lp, "migration") || strings.HasSuffix(lp, ".sql") || strings.Contains(lp, "alembic/") ||
		strings.Contains(lp, "flyway") || strings.Contains(lp, "liquibase") || strings.Contains(lp, "/migrate/"):
		return facts.ChangeDBMigration
	case base == "go.mod" || base == "go.sum" || base == "package.json" || base == "package-lock.json" ||
		base == "yarn.lock" || base == "pnpm-lock.yaml" || base == "requirements.txt" || base == "poetry.lock" ||
		base == "pyproject.toml" || base == "pom.xml" || base == "build.gradle" || base == "cargo.toml" ||
		base == "cargo.lock" || base == "gemfile.lock" || base == "gemfile":
		return facts.ChangeDependencyBump
	case strings.Contains(lp, "timeout") || strings.Contains(lp, "retry") || strings.Contains(lp, "backoff") ||
		strings.Contains(lp, "circuit"):
		return facts.ChangeTimeoutRetry
	case strings.HasSuffix(lp, ".yaml") || strings.HasSuffix(lp, ".yml") || strings.HasSuffix(lp, ".toml") ||
		strings.HasSuffix(lp, ".ini") || strings.HasSuffix(lp, ".env") || strings.HasSuffix(lp, ".properties") ||
		strings.HasSuffix(lp, ".conf") || strings.HasPrefix(lp, "config/") || strings.Contains(lp, "/config/") ||
		strings.Contains(lp, "helm/") || strings.Contains(lp, "kustomiz") || base == "dockerfile":
		return facts.ChangeConfig
	}
	if t := ClassifyMessage(message); t == facts.ChangeRefactor {
		return t
	}
	return facts.ChangeFeature
}

// ClassifyMessage finds change types a commit message states outright.
func ClassifyMessage(m string) string {
	lm := strings.ToLower(m)
	switch {
	case strings.Contains(lm, "migration") || strings.Contains(lm, "migrate ") || strings.Contains(lm, "schema change"):
		return facts.ChangeDBMigration
	case strings.Contains(lm, "timeout") || strings.Contains(lm, "retry") || strings.Contains(lm, "retries"):
		return facts.ChangeTimeoutRetry
	case strings.HasPrefix(lm, "refactor") || strings.Contains(lm, "refactor:") || strings.Contains(lm, "rename "):
		return facts.ChangeRefactor
	case strings.Contains(lm, "bump ") || strings.Contains(lm, "upgrade ") || strings.Contains(lm, "dependabot"):
		return facts.ChangeDependencyBump
	}
	return ""
}

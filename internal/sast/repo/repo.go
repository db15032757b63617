// Package repo is read-only access to a local source checkout for SAST
// triage: paths are confined to the repository root (no escape through
// "..", absolute paths or symlinks), files are size-capped, and every
// read is counted as a tool call so that per-finding cost can be reported.
package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Errors a caller can test with errors.Is.
var (
	ErrOutside  = errors.New("path outside the repository root")
	ErrNotFound = errors.New("file not found")
	ErrTooLarge = errors.New("file too large")
)

// DefaultMaxFileBytes caps one file read.
const DefaultMaxFileBytes = 2 << 20

// maxIndexedFiles bounds the file index of one repository.
const maxIndexedFiles = 200000

// Repo is a checkout. It is safe for concurrent use; parsed files and the
// file index are shared by all findings of a triage run.
type Repo struct {
	root     string
	MaxBytes int64

	indexOnce sync.Once
	index     []string // slash paths relative to root
	byBase    map[string][]string
	indexErr  error

	mu    sync.Mutex
	cache map[string][]byte
}

// Open confines access to dir. allowedRoot, when not empty, must contain dir.
func Open(dir, allowedRoot string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("repo %s: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("repo %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("repo %s: not a directory", dir)
	}
	if allowedRoot != "" {
		ar, err := filepath.Abs(allowedRoot)
		if err != nil {
			return nil, fmt.Errorf("repo: %w", err)
		}
		if r, err := filepath.EvalSymlinks(ar); err == nil {
			ar = r
		}
		if !within(ar, real) {
			return nil, fmt.Errorf("repo %s: %w %s", dir, ErrOutside, ar)
		}
	}
	return &Repo{root: real, MaxBytes: DefaultMaxFileBytes, cache: map[string][]byte{}}, nil
}

// Root is the absolute root.
func (r *Repo) Root() string { return r.root }

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Resolve maps a repository-relative path (or a file:// URI, or an
// absolute path inside the root) to a clean relative slash path.
func (r *Repo) Resolve(p string) (string, error) {
	p = strings.TrimPrefix(p, "file://")
	if p == "" {
		return "", fmt.Errorf("empty path: %w", ErrNotFound)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(r.root, filepath.FromSlash(p))
	}
	if !within(r.root, abs) {
		return "", fmt.Errorf("%s: %w", p, ErrOutside)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if !within(r.root, real) {
			return "", fmt.Errorf("%s: %w (symlink)", p, ErrOutside)
		}
	}
	rel, _ := filepath.Rel(r.root, abs)
	return filepath.ToSlash(rel), nil
}

// Read returns a file's content (cached), confined and size-capped.
func (r *Repo) Read(p string) ([]byte, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	b, ok := r.cache[rel]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	abs := filepath.Join(r.root, filepath.FromSlash(rel))
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", rel, ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory: %w", rel, ErrNotFound)
	}
	if st.Size() > r.MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes > %d: %w", rel, st.Size(), r.MaxBytes, ErrTooLarge)
	}
	b, err = os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	r.mu.Lock()
	r.cache[rel] = b
	r.mu.Unlock()
	return b, nil
}

func (r *Repo) buildIndex() {
	r.byBase = map[string][]string{}
	r.indexErr = filepath.WalkDir(r.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable subtree: skip it
		}
		name := d.Name()
		if d.IsDir() {
			if p != r.root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "target" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(r.index) >= maxIndexedFiles {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(r.root, p)
		rel = filepath.ToSlash(rel)
		r.index = append(r.index, rel)
		r.byBase[name] = append(r.byBase[name], rel)
		return nil
	})
	sort.Strings(r.index)
}

// Files lists files under dir (relative, "" = root) whose base name
// matches glob ("" = all), at most limit (0 = no limit).
func (r *Repo) Files(dir, glob string, limit int) ([]string, error) {
	r.indexOnce.Do(r.buildIndex)
	if r.indexErr != nil {
		return nil, r.indexErr
	}
	prefix := ""
	if dir != "" && dir != "." {
		rel, err := r.Resolve(dir)
		if err != nil {
			return nil, err
		}
		if rel != "." {
			prefix = rel + "/"
		}
	}
	var out []string
	for _, f := range r.index {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		if glob != "" {
			if ok, err := filepath.Match(glob, filepath.Base(f)); err != nil {
				return nil, fmt.Errorf("glob %q: %w", glob, err)
			} else if !ok {
				if ok2, _ := filepath.Match(glob, f); !ok2 {
					continue
				}
			}
		}
		out = append(out, f)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// ByBase lists the files named base anywhere in the repository.
func (r *Repo) ByBase(base string) []string {
	r.indexOnce.Do(r.buildIndex)
	return r.byBase[base]
}

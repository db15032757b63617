package javaflow

import (
	"context"
	"fmt"
	"strings"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/rcamesh/rcamesh/internal/sast/lang"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// File is a parsed source file.
type File struct {
	Path    string
	Src     []byte
	Tree    *sitter.Tree
	Classes map[string]*sitter.Node // every class declared in the file, by simple name
	Lines   []string
}

// Snippet is the text of lines [from, to] (1-based) of the file.
func (f *File) Snippet(from, to int) string {
	if from < 1 {
		from = 1
	}
	if to > len(f.Lines) {
		to = len(f.Lines)
	}
	if from > to {
		return ""
	}
	return strings.Join(f.Lines[from-1:to], "\n")
}

// Program is a repository's parsed Java files, shared by the findings of a
// run (parsing is cached; it is safe for concurrent use).
type Program struct {
	Repo *repo.Repo

	mu    sync.Mutex
	files map[string]*fileEntry
}

type fileEntry struct {
	once sync.Once
	f    *File
	err  error
}

// NewProgram serves r's Java files.
func NewProgram(r *repo.Repo) *Program {
	return &Program{Repo: r, files: map[string]*fileEntry{}}
}

// Load parses a file (cached).
func (p *Program) Load(ctx context.Context, path string) (*File, error) {
	rel, err := p.Repo.Resolve(path)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	e := p.files[rel]
	if e == nil {
		e = &fileEntry{}
		p.files[rel] = e
	}
	p.mu.Unlock()
	e.once.Do(func() {
		src, err := p.Repo.Read(rel)
		if err != nil {
			e.err = err
			return
		}
		g := lang.ForFile(rel)
		if g == nil || g.Name() != "java" {
			e.err = fmt.Errorf("%s: not a Java file", rel)
			return
		}
		t, err := lang.Parse(ctx, g, src)
		if err != nil {
			e.err = err
			return
		}
		f := &File{Path: rel, Src: src, Tree: t, Classes: map[string]*sitter.Node{}, Lines: strings.Split(string(src), "\n")}
		collectClasses(t.RootNode(), src, f.Classes)
		e.f = f
	})
	return e.f, e.err
}

func collectClasses(n *sitter.Node, src []byte, out map[string]*sitter.Node) {
	for i := 0; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		switch c.Type() {
		case "class_declaration", "interface_declaration", "enum_declaration":
			name := lang.Text(c.ChildByFieldName("name"), src)
			if _, dup := out[name]; !dup {
				out[name] = c
			}
		}
		collectClasses(c, src, out)
	}
}

// Package lang is the pluggable grammar layer of SAST triage: one Grammar
// per language, each a tree-sitter grammar through the maintained Go
// binding, with the few node kinds the code tools and the analyser need
// (declarations for symbol resolution). Java is the first; Go, Python and
// JavaScript follow by adding a Grammar.
package lang

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// Symbol is a declaration found in a file: a class, method or field.
type Symbol struct {
	Kind      string // "class", "method", "field", "constructor"
	Name      string
	Container string // enclosing class, "" at top level
	StartLine int    // 1-based, inclusive
	EndLine   int
}

// Grammar is one language.
type Grammar interface {
	Name() string
	Extensions() []string
	Language() *sitter.Language
	// Symbols lists the declarations of a parsed file.
	Symbols(root *sitter.Node, src []byte) []Symbol
}

var grammars []Grammar

// Register adds a grammar (called from init of each language file).
func Register(g Grammar) { grammars = append(grammars, g) }

// ForFile is the grammar for a path by its extension, or nil.
func ForFile(path string) Grammar {
	ext := strings.ToLower(filepath.Ext(path))
	for _, g := range grammars {
		for _, e := range g.Extensions() {
			if e == ext {
				return g
			}
		}
	}
	return nil
}

// ByName is the grammar of that name, or nil.
func ByName(name string) Grammar {
	for _, g := range grammars {
		if strings.EqualFold(g.Name(), name) {
			return g
		}
	}
	return nil
}

// Parse parses src with g. A tree with syntax errors is still returned
// (tree-sitter recovers); HasError on its root tells.
func Parse(ctx context.Context, g Grammar, src []byte) (*sitter.Tree, error) {
	p := sitter.NewParser()
	defer p.Close()
	p.SetLanguage(g.Language())
	t, err := p.ParseCtx(ctx, nil, src)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", g.Name(), err)
	}
	return t, nil
}

// Text is the source text of n.
func Text(n *sitter.Node, src []byte) string {
	if n == nil {
		return ""
	}
	return string(src[n.StartByte():n.EndByte()])
}

// Line is the 1-based start line of n.
func Line(n *sitter.Node) int { return int(n.StartPoint().Row) + 1 }

// EndLine is the 1-based end line of n.
func EndLine(n *sitter.Node) int { return int(n.EndPoint().Row) + 1 }

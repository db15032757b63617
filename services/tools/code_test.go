package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCodeTools(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "app", "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	java := "package a;\n\npublic class Store {\n    // token=hunter2hunter2hunter2\n    public String find(String q) {\n        return \"SELECT \" + q;\n    }\n}\n"
	if err := os.WriteFile(filepath.Join(src, "Store.java"), []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	off := newService(t, &backend.Set{}, nil)
	_, err := off.ExecuteTool(context.Background(), &toolsv1.ExecuteToolRequest{Intent: "list_files", Params: mustStruct(t, map[string]any{"repo": "app"})})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("code tools without -tools.code-root: %v, want FailedPrecondition", err)
	}
	s := newService(t, &backend.Set{}, func(c *Config) { c.CodeRoot = root })
	r := run(t, s, "list_files", map[string]any{"repo": "app", "glob": "*.java"}).GetResult()
	if !r.GetSuccess() || !strings.Contains(r.GetRawOutput(), "src/Store.java") {
		t.Fatalf("list_files: %v %q", r.GetError(), r.GetRawOutput())
	}
	r = run(t, s, "search_codebase", map[string]any{"repo": "app", "pattern": `SELECT`}).GetResult()
	if !r.GetSuccess() || !strings.Contains(r.GetRawOutput(), "src/Store.java:6") {
		t.Fatalf("search_codebase: %v %q", r.GetError(), r.GetRawOutput())
	}
	r = run(t, s, "fetch_code", map[string]any{"repo": "app", "identifier": "Store.find"}).GetResult()
	if !r.GetSuccess() || !strings.Contains(r.GetSummary(), "src/Store.java:5-7") || !strings.Contains(r.GetRawOutput(), `return "SELECT " + q;`) {
		t.Fatalf("fetch_code: %v %q %q", r.GetError(), r.GetSummary(), r.GetRawOutput())
	}
	r = run(t, s, "fetch_code", map[string]any{"repo": "app", "identifier": "src/Store.java:1-8"}).GetResult()
	if strings.Contains(r.GetRawOutput(), "hunter2hunter2hunter2") {
		t.Error("a secret in fetched code reached the output unredacted")
	}
	if r := run(t, s, "fetch_code", map[string]any{"repo": "../..", "identifier": "x"}).GetResult(); r.GetSuccess() {
		t.Error("a repository outside the code root: want a failed call")
	}
	if r := run(t, s, "fetch_code", map[string]any{"repo": "app", "identifier": "../../etc/passwd:1-3"}).GetResult(); r.GetSuccess() {
		t.Error("a path outside the repository: want a failed call")
	}
}

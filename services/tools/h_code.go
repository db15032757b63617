package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/sast"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// IntegrationCode is the local source checkouts the code tools read
// (configured by -tools.code-root).
const IntegrationCode = "code"

func repoParam() *evidencev1.ToolParam {
	return req(ph(pString("repo", "repository checkout, relative to the code root (or absolute inside it)"), "examples/sast-demo"))
}

// codeTools are the read-only code tools the SAST triage reads a
// repository with.
func codeTools() []*Tool {
	code := func(intent, label, slash, desc, usage string, h Handler, ps ...*evidencev1.ToolParam) *Tool {
		return &Tool{
			Def: &evidencev1.ToolDefinition{
				Intent: intent, Label: label, Icon: "code", SlashCommand: slash, Category: catCode,
				Description: desc, ParamsSchema: append([]*evidencev1.ToolParam{repoParam()}, ps...),
				Integrations: []string{IntegrationCode}, Usage: usage,
			},
			Needs: []string{IntegrationCode}, Handler: h,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_CODE, Domain: evidencev1.Domain_DOMAIN_SECURITY,
		}
	}
	return []*Tool{
		code(string(intent.ListFiles), "List Files", "/files", "List the files of a repository folder whose names match a glob (discovery before guessing names).",
			"/files repo=<dir> [path=src/main] [glob=*.java]", handleListFiles,
			ph(pString("path", "folder inside the repository (default: the root)"), "src/main/java"),
			ph(pString("glob", "file-name glob"), "*.java")),
		code(string(intent.SearchCodebase), "Search Code", "/grep", "Search a repository for lines matching a regular expression, in a folder or a file-name glob.",
			"/grep repo=<dir> pattern=<regexp> [scope=*.java]", handleSearchCodebase,
			req(ph(pString("pattern", "regular expression (RE2)"), `getParameter\(`)),
			ph(pString("scope", "folder or file-name glob"), "*.java")),
		code(string(intent.FetchCode), "Fetch Code", "/code", "Fetch source by symbol (Class, Class.method, method), resolved through the parser, or by path:lines.",
			"/code repo=<dir> identifier=<Class.method|path:10-40>", handleFetchCode,
			req(ph(pString("identifier", "symbol or path[:start-end]"), "NoteServlet.doGet"))),
	}
}

func (s *Service) codeTools(c *Call) (*sast.Tools, error) {
	dir := c.Params.String("repo")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cfg.CodeRoot, dir)
	}
	r, err := repo.Open(dir, s.cfg.CodeRoot)
	if err != nil {
		return nil, err
	}
	return sast.NewTools(r, javaflow.NewProgram(r)), nil
}

func handleListFiles(ctx context.Context, s *Service, c *Call, r *Result) error {
	t, err := s.codeTools(c)
	if err != nil {
		return err
	}
	fs, err := t.ListFiles(ctx, c.Params.String("path"), c.Params.String("glob"))
	if err != nil {
		return err
	}
	r.Put("files", fs)
	if len(fs) == 0 {
		r.NoData = true
		r.Summary = "No files match."
		return nil
	}
	r.Summary = fmt.Sprintf("%d files under %s.", len(fs), first(c.Params.String("path"), "the repository root"))
	for _, f := range fs {
		r.Rawf("%s", f)
	}
	return nil
}

func handleSearchCodebase(ctx context.Context, s *Service, c *Call, r *Result) error {
	t, err := s.codeTools(c)
	if err != nil {
		return err
	}
	ms, err := t.SearchCodebase(ctx, c.Params.String("pattern"), c.Params.String("scope"))
	if err != nil {
		return err
	}
	r.Put("matches", ms)
	if len(ms) == 0 {
		r.NoData = true
		r.Summary = "No line matches " + c.Params.String("pattern") + "."
		return nil
	}
	r.Summary = fmt.Sprintf("%d lines match %s.", len(ms), c.Params.String("pattern"))
	for _, m := range ms {
		r.Rawf("%s:%d: %s", m.File, m.Line, m.Text)
		r.Snippet(fmt.Sprintf("%s:%d: %s", m.File, m.Line, m.Text))
	}
	return nil
}

func handleFetchCode(ctx context.Context, s *Service, c *Call, r *Result) error {
	t, err := s.codeTools(c)
	if err != nil {
		return err
	}
	code, err := t.FetchCode(ctx, c.Params.String("identifier"))
	if err != nil {
		return err
	}
	r.Put("code", code)
	what := code.Symbol
	if what == "" {
		what = "lines"
	}
	r.Summary = fmt.Sprintf("%s %s:%d-%d.", strings.TrimSpace(what), code.File, code.StartLine, code.EndLine)
	r.Rawf("%s", code.Text)
	r.Snippet(code.Text)
	return nil
}

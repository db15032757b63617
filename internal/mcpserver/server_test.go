package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect runs the server with no services behind it over in-memory
// transports: enough for everything decided before a service is called.
func connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(Clients{}, Options{Version: "test"}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestInputErrors(t *testing.T) {
	cs := connect(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{ToolStartInvestigation, map[string]any{"alert": map[string]any{}}, "alert is required"},
		{ToolSteer, map[string]any{"session_id": "s", "command": "  "}, "command is required"},
		{ToolSearchInvestigations, map[string]any{"category": "gremlins"}, `unknown category "gremlins"`},
		{ToolSearchInvestigations, map[string]any{"since": "2026-13-01"}, "RFC 3339"},
		{ToolSearchInvestigations, map[string]any{"until": "tomorrow"}, "until"},
		{ToolSearchInvestigations, map[string]any{"page_size": "ten"}, "page_size"}, // schema validation by the SDK
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			if strings.Contains(err.Error(), tc.want) {
				continue // rejected by the SDK's schema validation as a protocol error
			}
			t.Errorf("%s %v: %v", tc.tool, tc.args, err)
			continue
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error=%v %q, want %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
}

func TestToolsAndTemplatesListed(t *testing.T) {
	cs := connect(t)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, tl := range tools.Tools {
		readOnly[tl.Name] = tl.Annotations != nil && tl.Annotations.ReadOnlyHint
		if tl.InputSchema == nil || tl.Description == "" {
			t.Errorf("tool %s lacks a schema or description", tl.Name)
		}
	}
	for name, ro := range map[string]bool{ToolStartInvestigation: false, ToolSteer: false, ToolListPins: true, ToolReadReport: true, ToolSearchInvestigations: true} {
		got, ok := readOnly[name]
		if !ok || got != ro {
			t.Errorf("tool %s listed %v, read-only %v (want %v)", name, ok, got, ro)
		}
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rt := range tpl.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	if strings.Join(uris, " ") != ReportURITemplate+" "+InvestigationURITemplate && strings.Join(uris, " ") != InvestigationURITemplate+" "+ReportURITemplate {
		t.Errorf("templates %v", uris)
	}
}

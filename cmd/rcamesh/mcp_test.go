package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/mcpserver"
)

// TestMain lets a test run this binary's main (RCAMESH_TEST_MAIN=1): the
// stdio MCP test starts `rcamesh mcp` as a real subprocess.
func TestMain(m *testing.M) {
	if os.Getenv("RCAMESH_TEST_MAIN") == "1" {
		main()
		return
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath)) // the end-to-end tests' build, one per run
	}
	os.Exit(code)
}

// TestMCP drives `rcamesh mcp` over stdio (a subprocess) and /mcp on the
// gateway over streamable HTTP with the SDK's own client: every tool, both
// resource templates, and errors a client can act on.
func TestMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh and an MCP subprocess")
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			set, _, err := fixture.FromDir(filepath.Join("..", "..", "scenarios", "demo"), nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := startMesh(ctx, set, t.TempDir(), slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = m.stop() }()

			var tr mcp.Transport
			switch transport {
			case "stdio":
				cmd := exec.CommandContext(ctx, os.Args[0], "mcp", "-addr", m.local.GRPCAddr, "-log.level", "warn")
				cmd.Env = append(os.Environ(), "RCAMESH_TEST_MAIN=1")
				cmd.Stderr = os.Stderr
				tr = &mcp.CommandTransport{Command: cmd}
			case "http":
				tr = &mcp.StreamableClientTransport{Endpoint: "http://" + m.local.HTTPAddr + mcpserver.Path}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "rcamesh-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			exerciseMCP(ctx, t, cs)
		})
	}
}

// call runs a tool and decodes its structured output into out.
func call(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func exerciseMCP(ctx context.Context, t *testing.T, cs *mcp.ClientSession) {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{mcpserver.ToolStartInvestigation, mcpserver.ToolSteer, mcpserver.ToolListPins,
		mcpserver.ToolReadReport, mcpserver.ToolSearchInvestigations} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s not listed (have %v)", want, names)
		}
	}

	raw, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "demo", "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var alert map[string]any
	if err := json.Unmarshal(raw, &alert); err != nil {
		t.Fatal(err)
	}
	var started mcpserver.StartOutput
	if res := call(ctx, t, cs, mcpserver.ToolStartInvestigation, map[string]any{"alert": alert, "wait": true}, &started); res.IsError {
		t.Fatalf("start_investigation: %s", resultText(res))
	}
	if started.SessionID == "" || started.InvestigationID == "" || started.Diagnosis == nil || started.Diagnosis.Category == "" ||
		started.Diagnosis.RootCause == "" {
		t.Fatalf("start_investigation: %+v", started)
	}
	sid := started.SessionID

	var steered mcpserver.SteerOutput
	if res := call(ctx, t, cs, mcpserver.ToolSteer, map[string]any{"session_id": sid, "command": "/events namespace=retail"}, &steered); res.IsError {
		t.Fatalf("steer: %s", resultText(res))
	}
	if steered.Status != "executing" || steered.PinID == "" || steered.Path != "fast" {
		t.Fatalf("steer: %+v", steered)
	}

	// The steered pin joins the session's pool (the stream is read back).
	var pins mcpserver.PinsOutput
	deadline := time.Now().Add(20 * time.Second)
	for {
		call(ctx, t, cs, mcpserver.ToolListPins, map[string]any{"session_id": sid}, &pins)
		if slices.ContainsFunc(pins.Pins, func(p mcpserver.Pin) bool { return p.ID == steered.PinID }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pins.Pins) < 2 || !slices.ContainsFunc(pins.Pins, func(p mcpserver.Pin) bool { return p.ID == steered.PinID }) {
		t.Fatalf("list_pins: %d pins, steered %s missing", len(pins.Pins), steered.PinID)
	}

	var report mcpserver.ReportOutput
	res := call(ctx, t, cs, mcpserver.ToolReadReport, map[string]any{"session_id": sid}, &report)
	if res.IsError || report.InvestigationID != started.InvestigationID || !strings.Contains(report.Markdown, "#") ||
		resultText(res) != report.Markdown {
		t.Fatalf("read_report: error=%v %+v", res.IsError, report)
	}

	// The history recorder saves the investigation shortly after it finished.
	var found mcpserver.SearchOutput
	deadline = time.Now().Add(30 * time.Second)
	for {
		call(ctx, t, cs, mcpserver.ToolSearchInvestigations, map[string]any{"query": "orders-api", "category": started.Diagnosis.Category}, &found)
		if len(found.Investigations) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(found.Investigations) != 1 || found.Investigations[0].InvestigationID != started.InvestigationID {
		t.Fatalf("search_investigations: %+v", found)
	}
	var none mcpserver.SearchOutput
	call(ctx, t, cs, mcpserver.ToolSearchInvestigations, map[string]any{"service": "no-such-service"}, &none)
	if len(none.Investigations) != 0 {
		t.Errorf("search by unknown service: %+v", none)
	}

	// Resources: the report as markdown, the past investigation as JSON.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcamesh://reports/" + sid})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "text/markdown" || rr.Contents[0].Text != report.Markdown {
		t.Errorf("report resource: %+v", rr.Contents)
	}
	ri, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: found.Investigations[0].URI})
	if err != nil {
		t.Fatal(err)
	}
	var inv map[string]any
	if len(ri.Contents) != 1 || json.Unmarshal([]byte(ri.Contents[0].Text), &inv) != nil || inv["record"] == nil || inv["report"] == nil {
		t.Errorf("investigation resource: %.300v", ri.Contents)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 2 {
		t.Errorf("resource templates: %v %v", templates, err)
	}

	// Errors a client can act on: tool errors, not protocol failures.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{mcpserver.ToolSteer, map[string]any{"session_id": "bad id!", "command": "/events"}, "session_id"},
		{mcpserver.ToolReadReport, map[string]any{"session_id": "no-such-session"}, "no report"},
		{mcpserver.ToolSearchInvestigations, map[string]any{"category": "gremlins"}, "unknown category"},
		{mcpserver.ToolSearchInvestigations, map[string]any{"since": "yesterday"}, "RFC 3339"},
		{mcpserver.ToolStartInvestigation, map[string]any{"alert": map[string]any{}}, "alert is required"},
	} {
		res := call(ctx, t, cs, tc.tool, tc.args, nil)
		if !res.IsError || !strings.Contains(resultText(res), tc.want) {
			t.Errorf("%s %v: error=%v %q, want an error mentioning %q", tc.tool, tc.args, res.IsError, resultText(res), tc.want)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcamesh://reports/no-such-session"}); err == nil {
		t.Error("unknown report resource read without error")
	}
}

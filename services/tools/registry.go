package tools

import (
	"context"
	"fmt"
	"sort"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// Handler runs one validated tool call and fills a Result. A returned error
// is a failed call (backend error); "nothing found" is a Result with NoData.
type Handler func(ctx context.Context, s *Service, c *Call, r *Result) error

// Tool is one registry entry: its definition (as the router and the UI see
// it), the backend areas it needs and its handler. Adding a tool is one
// entry plus one handler.
type Tool struct {
	Def *evidencev1.ToolDefinition
	// Needs are the integrations (backend areas, or "brain") that must be
	// configured for the tool to run; Def.Integrations also lists optional ones.
	Needs   []string
	Handler Handler
	// Type and Domain are the defaults when the handler sets none.
	Type   evidencev1.EvidenceType
	Domain evidencev1.Domain
}

// Registry maps intents to tools.
type Registry struct {
	tools map[string]*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

// Add registers a tool; a duplicate or malformed entry is an error.
func (r *Registry) Add(t *Tool) error {
	if t == nil || t.Def == nil || t.Def.GetIntent() == "" {
		return fmt.Errorf("tools: registry entry without intent")
	}
	if t.Handler == nil {
		return fmt.Errorf("tools: tool %q has no handler", t.Def.GetIntent())
	}
	if _, dup := r.tools[t.Def.GetIntent()]; dup {
		return fmt.Errorf("tools: tool %q registered twice", t.Def.GetIntent())
	}
	seen := map[string]bool{}
	for _, p := range t.Def.GetParamsSchema() {
		if p.GetName() == "" || seen[p.GetName()] {
			return fmt.Errorf("tools: tool %q has an empty or duplicate parameter %q", t.Def.GetIntent(), p.GetName())
		}
		seen[p.GetName()] = true
	}
	r.tools[t.Def.GetIntent()] = t
	return nil
}

// Get returns the tool for intent.
func (r *Registry) Get(intent string) (*Tool, bool) {
	t, ok := r.tools[intent]
	return t, ok
}

// Intents lists the registered intents in order.
func (r *Registry) Intents() []string {
	out := make([]string, 0, len(r.tools))
	for k := range r.tools {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Param builders keep the registry table readable.

func pString(name, desc string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_STRING, Description: desc}
}

func pNumber(name, desc string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_NUMBER, Description: desc}
}

func pBool(name, desc string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_BOOLEAN, Description: desc}
}

func pSelect(name, desc string, options ...string) *evidencev1.ToolParam {
	return &evidencev1.ToolParam{Name: name, Type: evidencev1.ParamType_PARAM_TYPE_SELECT, Description: desc, Options: options}
}

func req(p *evidencev1.ToolParam) *evidencev1.ToolParam { p.Required = true; return p }

func ctxDefault(p *evidencev1.ToolParam, field string) *evidencev1.ToolParam {
	p.DefaultFromContext = field
	return p
}

func ph(p *evidencev1.ToolParam, placeholder string) *evidencev1.ToolParam {
	p.Placeholder = placeholder
	return p
}

// windowParams are accepted by every tool that reads a time range.
func windowParams() []*evidencev1.ToolParam {
	return []*evidencev1.ToolParam{
		ph(pString("since", "look back this long from the window end (Go duration: 30m, 2h)"), "30m"),
		ph(pString("start", "window start (RFC 3339)"), "2026-01-03T10:00:00Z"),
		ph(pString("end", "window end (RFC 3339)"), "2026-01-03T11:00:00Z"),
	}
}

func withWindow(ps ...*evidencev1.ToolParam) []*evidencev1.ToolParam {
	return append(ps, windowParams()...)
}

package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/llm"
)

// routeSchema is the structured output the smart path asks the model for.
// Parameters are name/value pairs so the schema stays strict-mode compatible
// (strict mode forbids free-form maps); values are typed by the tool schema.
var routeSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"intent": map[string]any{
			"type":        "string",
			"description": `the tool intent to run, or "none" when no tool fits the request`,
		},
		"params": map[string]any{
			"type": "array",
			"items": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":  map[string]any{"type": "string"},
					"value": map[string]any{"type": "string"},
				},
				"required":             []any{"name", "value"},
				"additionalProperties": false,
			},
		},
	},
	"required":             []any{"intent", "params"},
	"additionalProperties": false,
}

// smartRoute maps a natural-language request: through the model when one is
// configured (its output validated like a command), else, or when the model's
// answer is unusable, through the deterministic parser. It returns nil when
// nothing maps; note says how the request was routed when that matters.
func (s *Service) smartRoute(ctx context.Context, reg *Registry, text string, rc *evidencev1.RouterContext) (*SmartPlan, string) {
	if s.deps.LLM != nil {
		c, err := s.modelRoute(ctx, reg, text, rc)
		if err == nil && c != nil {
			return &SmartPlan{Primary: c}, ""
		}
		if err != nil {
			s.log.WarnContext(ctx, "smart path: model output unusable; using the deterministic parser", "error", err)
		}
		if p := ParseNatural(reg, text, rc); p != nil {
			return p, "routed by the deterministic parser (the model's answer was not a valid tool call)"
		}
		return nil, ""
	}
	return ParseNatural(reg, text, rc), ""
}

// errNoTool is the model saying no tool fits.
var errNoTool = errors.New("model chose no tool")

// modelRoute asks the model for {intent, params} and validates the answer.
func (s *Service) modelRoute(ctx context.Context, reg *Registry, text string, rc *evidencev1.RouterContext) (*Call, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.SmartTimeout)
	defer cancel()
	resp, err := s.deps.LLM.Complete(cctx, llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: routerPrompt(reg, rc)},
			{Role: llm.RoleUser, Content: text},
		},
		ResponseSchema: routeSchema,
		SchemaName:     "router_tool_call",
		MaxTokens:      400,
		Purpose:        "route",
	})
	if err != nil {
		return nil, fmt.Errorf("model call: %w", err)
	}
	intent, params, err := decodeModelCall(resp.Message)
	if err != nil {
		return nil, err
	}
	if intent == "" || strings.EqualFold(intent, "none") {
		return nil, errNoTool
	}
	tool, ok := reg.Tool(intent)
	if !ok {
		return nil, fmt.Errorf("model chose unknown intent %q", intent)
	}
	call, err := ValidateParams(tool, params)
	if err != nil {
		return nil, fmt.Errorf("model params for %s: %w", intent, err)
	}
	return call, nil
}

// decodeModelCall reads {intent, params} from structured output or a tool call.
// params may be [{name, value}] (the schema) or an object (models that ignore it).
func decodeModelCall(m llm.Message) (string, map[string]any, error) {
	raw := strings.TrimSpace(m.Content)
	if raw == "" && len(m.ToolCalls) > 0 {
		tc := m.ToolCalls[0]
		var args map[string]any
		if err := json.Unmarshal([]byte(firstNonEmpty(tc.Arguments, "{}")), &args); err != nil {
			return "", nil, fmt.Errorf("model tool call arguments: %w", err)
		}
		return tc.Name, args, nil
	}
	raw = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(raw, "```json"), "```"), "```")
	var out struct {
		Intent string          `json:"intent"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(raw)), &out); err != nil {
		return "", nil, fmt.Errorf("model output is not a JSON {intent, params} object: %w", err)
	}
	params := map[string]any{}
	p := strings.TrimSpace(string(out.Params))
	switch {
	case p == "" || p == "null":
	case strings.HasPrefix(p, "["):
		var pairs []struct {
			Name  string `json:"name"`
			Value any    `json:"value"`
		}
		if err := json.Unmarshal(out.Params, &pairs); err != nil {
			return "", nil, fmt.Errorf("model params: %w", err)
		}
		for _, kv := range pairs {
			if kv.Name == "" {
				return "", nil, errors.New("model params: a pair without a name")
			}
			if s, ok := kv.Value.(string); ok && strings.TrimSpace(s) == "" {
				continue // the model left an optional parameter empty
			}
			params[kv.Name] = kv.Value
		}
	case strings.HasPrefix(p, "{"):
		if err := json.Unmarshal(out.Params, &params); err != nil {
			return "", nil, fmt.Errorf("model params: %w", err)
		}
	default:
		return "", nil, fmt.Errorf("model params are neither a list nor an object: %s", truncate(p, 80))
	}
	return out.Intent, params, nil
}

// routerPrompt is the smart-path system prompt: the
// context envelope and the registry. It carries no secrets: RouterContext
// holds names only.
func routerPrompt(reg *Registry, rc *evidencev1.RouterContext) string {
	var b strings.Builder
	b.WriteString("You are an investigation router. The SRE is investigating")
	if rc.GetIncidentId() != "" {
		fmt.Fprintf(&b, " incident %s", rc.GetIncidentId())
	}
	b.WriteString(".\n\nCurrent context:\n")
	line := func(k, v string) {
		if v == "" {
			v = "(none)"
		}
		fmt.Fprintf(&b, "- %s: %s\n", k, v)
	}
	line("Active namespace", rc.GetActiveNamespace())
	line("Active service", rc.GetActiveService())
	line("Active pod", rc.GetActivePod())
	tw := ""
	if w := rc.GetTimeWindow(); w.GetStart() != nil && w.GetEnd() != nil {
		tw = w.GetStart().AsTime().UTC().Format("2006-01-02T15:04:05Z") + " to " + w.GetEnd().AsTime().UTC().Format("2006-01-02T15:04:05Z")
	}
	line("Time window", tw)
	line("Known namespaces", strings.Join(limitList(rc.GetDiscoveredNamespaces(), 50), ", "))
	line("Known services", strings.Join(limitList(rc.GetDiscoveredServices(), 50), ", "))
	line("Known pods", strings.Join(limitList(rc.GetPodNames(), 100), ", "))
	if f := rc.GetActiveFindingsSummary(); f != "" {
		line("Findings so far", truncate(f, 1500))
	}
	b.WriteString(`
Parse the user's request into one tool call. Use the active context to fill
missing parameters; use pod names from the known pods (a trailing * matches a
prefix). Output strict JSON: {"intent": string, "params": [{"name": string, "value": string}]}.
If no tool fits the request, answer {"intent": "none", "params": []}. Never invent a tool.

Available tools:
`)
	for _, t := range reg.Tools {
		if !t.GetAvailable() {
			continue
		}
		fmt.Fprintf(&b, "- %s (%s): %s\n", t.GetIntent(), slashOf(t), firstNonEmpty(t.GetDescription(), t.GetLabel()))
		for _, p := range t.GetParamsSchema() {
			fmt.Fprintf(&b, "    %s: %s", p.GetName(), typeName(p.GetType()))
			if p.GetRequired() {
				b.WriteString(", required")
			}
			if len(p.GetOptions()) > 0 && strictOptions(p) {
				fmt.Fprintf(&b, ", one of [%s]", strings.Join(p.GetOptions(), ", "))
			}
			if p.GetDefaultFromContext() != "" {
				fmt.Fprintf(&b, ", defaults to %s", p.GetDefaultFromContext())
			}
			if d := firstNonEmpty(p.GetDescription(), p.GetPlaceholder()); d != "" {
				fmt.Fprintf(&b, " (%s)", d)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func limitList(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// compatibleProvider talks to OpenAI-compatible servers (Ollama, vLLM,
// LocalAI, OpenRouter) through github.com/sashabaranov/go-openai. Tool
// schemas go through NormalizeCompatible; structured output uses
// response_format json_object plus the schema in a system message.
type compatibleProvider struct {
	core
	client *goopenai.Client
}

func newCompatible(cfg Config, logger *slog.Logger) (Provider, error) {
	cc := goopenai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cc.HTTPClient = newHTTPClient()
	return &compatibleProvider{core: newCore(cfg, logger), client: goopenai.NewClientWithConfig(cc)}, nil
}

// ToolSchemas returns the tool definitions exactly as this adapter sends them.
func (p *compatibleProvider) ToolSchemas(tools []ToolSchema) ([]goopenai.Tool, error) {
	out := make([]goopenai.Tool, 0, len(tools))
	for _, t := range tools {
		params, err := NormalizeCompatible(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %q: %w", ErrBadRequest, t.Name, err)
		}
		out = append(out, goopenai.Tool{
			Type:     goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return out, nil
}

// structuredPrompt is the system message carrying the response schema.
func structuredPrompt(name string, schema map[string]any) (string, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return "", err
	}
	return "Respond with only one JSON object (no prose, no code fences) named " + name +
		" that matches this JSON Schema:\n" + string(b), nil
}

func (p *compatibleProvider) build(req Request) (goopenai.ChatCompletionRequest, map[string]any, error) {
	out := goopenai.ChatCompletionRequest{Model: p.model, MaxTokens: req.MaxTokens}
	var schema map[string]any
	var schemaMsg string
	if req.ResponseSchema != nil {
		s, err := NormalizeCompatible(req.ResponseSchema)
		if err != nil {
			return out, nil, fmt.Errorf("%w: response schema %q: %w", ErrBadRequest, schemaName(req), err)
		}
		schema = s
		if schemaMsg, err = structuredPrompt(schemaName(req), s); err != nil {
			return out, nil, fmt.Errorf("%w: response schema %q: %w", ErrBadRequest, schemaName(req), err)
		}
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	inserted := schemaMsg == ""
	for _, m := range req.Messages {
		if !inserted && m.Role != RoleSystem {
			out.Messages = append(out.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: schemaMsg})
			inserted = true
		}
		cm := goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name}
		switch m.Role {
		case RoleTool:
			cm.ToolCallID = m.ToolCallID
			if cm.Content == "" {
				// Several servers drop or reject a tool message without content.
				cm.Content = "(no output)"
			}
		case RoleAssistant:
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, goopenai.ToolCall{
					ID: tc.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: tc.Name, Arguments: toolArgs(tc.Arguments)},
				})
			}
		}
		out.Messages = append(out.Messages, cm)
	}
	if !inserted {
		out.Messages = append(out.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: schemaMsg})
	}
	if len(req.Tools) > 0 {
		tools, err := p.ToolSchemas(req.Tools)
		if err != nil {
			return out, nil, err
		}
		out.Tools = tools
	}
	return out, schema, nil
}

// Complete sends one chat completion. See Provider.
func (p *compatibleProvider) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	if err := validateRequest(req); err != nil {
		return Response{}, err
	}
	creq, schema, err := p.build(req)
	if err != nil {
		return Response{}, err
	}
	resp, attempts, err := p.runWithRetry(ctx, req.Purpose, func(ctx context.Context) (Response, error) {
		cr, err := p.client.CreateChatCompletion(ctx, creq)
		if err != nil {
			return Response{}, err
		}
		return convertCompatible(cr)
	}, compatibleErrorMessage)
	if err == nil {
		err = p.postprocess(req, &resp, schema)
	}
	p.logDone(ctx, req, resp, attempts, start, err)
	return resp, err
}

func convertCompatible(cr goopenai.ChatCompletionResponse) (Response, error) {
	if len(cr.Choices) == 0 {
		return Response{}, errNoChoices
	}
	ch := cr.Choices[0]
	msg := Message{Role: RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	// Legacy function_call (some servers still answer with it).
	if len(msg.ToolCalls) == 0 && ch.Message.FunctionCall != nil && ch.Message.FunctionCall.Name != "" {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{Name: ch.Message.FunctionCall.Name, Arguments: ch.Message.FunctionCall.Arguments})
	}
	return Response{
		Message:      msg,
		FinishReason: string(ch.FinishReason),
		Usage:        Usage{PromptTokens: int64(cr.Usage.PromptTokens), CompletionTokens: int64(cr.Usage.CompletionTokens)},
		Model:        cr.Model,
	}, nil
}

func compatibleErrorMessage(err error) (int, string) {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode, apiErr.Message
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		msg := ""
		if reqErr.Err != nil {
			msg = reqErr.Err.Error()
		}
		return reqErr.HTTPStatusCode, msg
	}
	return 0, ""
}

package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	openai "github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"
)

// openAIProvider talks to the OpenAI API (or Azure/any server implementing
// strict structured outputs) through github.com/openai/openai-go. Tool
// schemas go through NormalizeStrict and are sent with strict: true.
type openAIProvider struct {
	core
	chat openai.ChatCompletionService
}

func newOpenAI(cfg Config, logger *slog.Logger) (Provider, error) {
	if cfg.APIKey == "" && strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, errors.New("llm.api-key: required for provider openai against api.openai.com (set " + EnvAPIKey + ", " + EnvOpenAIKey + " or -llm.api-key-file)")
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(newHTTPClient()),
		option.WithMaxRetries(0), // retries are ours: classified, bounded, logged
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &openAIProvider{core: newCore(cfg, logger), chat: openai.NewChatCompletionService(opts...)}, nil
}

// ToolSchemas returns the tool definitions exactly as this adapter sends them.
func (p *openAIProvider) ToolSchemas(tools []ToolSchema) ([]openai.ChatCompletionToolParam, error) {
	out := make([]openai.ChatCompletionToolParam, 0, len(tools))
	for _, t := range tools {
		params, err := NormalizeStrict(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %q: %w", ErrBadRequest, t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{
			Name:       t.Name,
			Parameters: shared.FunctionParameters(params),
			Strict:     openai.Bool(true),
		}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		out = append(out, openai.ChatCompletionToolParam{Function: fn})
	}
	return out, nil
}

func (p *openAIProvider) build(req Request) (openai.ChatCompletionNewParams, map[string]any, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.model)}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				am.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: tc.Name, Arguments: toolArgs(tc.Arguments)},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	if len(req.Tools) > 0 {
		tools, err := p.ToolSchemas(req.Tools)
		if err != nil {
			return params, nil, err
		}
		params.Tools = tools
	}
	var schema map[string]any
	if req.ResponseSchema != nil {
		s, err := NormalizeStrict(req.ResponseSchema)
		if err != nil {
			return params, nil, fmt.Errorf("%w: response schema %q: %w", ErrBadRequest, schemaName(req), err)
		}
		schema = s
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   schemaName(req),
				Strict: openai.Bool(true),
				Schema: s,
			},
		}
	}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	return params, schema, nil
}

// Complete sends one chat completion. See Provider.
func (p *openAIProvider) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	if err := validateRequest(req); err != nil {
		return Response{}, err
	}
	params, schema, err := p.build(req)
	if err != nil {
		return Response{}, err
	}
	resp, attempts, err := p.runWithRetry(ctx, req.Purpose, func(ctx context.Context) (Response, error) {
		cc, err := p.chat.New(ctx, params)
		if err != nil {
			return Response{}, err
		}
		return convertOpenAI(cc)
	}, openAIErrorMessage)
	if err == nil {
		err = p.postprocess(req, &resp, schema)
	}
	p.logDone(ctx, req, resp, attempts, start, err)
	return resp, err
}

var errNoChoices = errors.New("response has no choices")

func convertOpenAI(cc *openai.ChatCompletion) (Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return Response{}, errNoChoices
	}
	ch := cc.Choices[0]
	msg := Message{Role: RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return Response{
		Message:      msg,
		FinishReason: ch.FinishReason,
		Usage:        Usage{PromptTokens: cc.Usage.PromptTokens, CompletionTokens: cc.Usage.CompletionTokens},
		Model:        cc.Model,
	}, nil
}

func openAIErrorMessage(err error) (int, string) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode, apiErr.Message
	}
	return 0, ""
}

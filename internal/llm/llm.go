// Package llm is rcamesh's provider-neutral interface to chat-completion
// models. Two adapters implement it: "openai" (github.com/openai/openai-go,
// strict structured outputs) and "openai-compatible"
// (github.com/sashabaranov/go-openai, for Ollama, vLLM, LocalAI, OpenRouter).
// Each adapter owns its tool-schema normalizer. With no provider configured
// New returns (nil, nil) and callers use the offline rules path.
package llm

import (
	"context"
	"errors"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is one function call the model asked for. Arguments is the text of
// a JSON object (repaired and validated by the adapter before it is returned).
type ToolCall struct {
	ID, Name, Arguments string
}

// Message is one conversation turn. Assistant messages may carry ToolCalls;
// tool messages answer one call by ToolCallID (Name optionally names the tool).
type Message struct {
	Role       string // system|user|assistant|tool
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// ToolSchema describes one tool offered to the model. Parameters is a JSON
// Schema object; adapters normalize it for their API.
type ToolSchema struct {
	Name, Description string
	Parameters        map[string]any
}

// Request is one completion request.
type Request struct {
	Messages []Message
	Tools    []ToolSchema
	// ResponseSchema, when set, asks for a JSON object matching it (structured
	// output). SchemaName names it (default "response").
	ResponseSchema map[string]any
	SchemaName     string
	MaxTokens      int
	// Purpose is a short label for logs and metrics (e.g. "route", "react", "diagnose").
	Purpose string
}

// Usage reports token counts of one completion.
type Usage struct {
	PromptTokens, CompletionTokens int64
}

// Response is the model's answer.
type Response struct {
	Message      Message
	FinishReason string
	Usage        Usage
	Model        string
}

// Provider is a chat-completion backend.
type Provider interface {
	Name() string
	Model() string
	Complete(ctx context.Context, req Request) (Response, error)
}

// Errors returned (wrapped) by providers; test with errors.Is.
var (
	// ErrRateLimited: HTTP 429 persisted after the bounded retries.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrServer: HTTP 5xx persisted after MaxRetries retries.
	ErrServer = errors.New("llm: server error")
	// ErrTimeout: the context or the configured timeout expired.
	ErrTimeout = errors.New("llm: timeout")
	// ErrBadResponse: the response could not be used (no choices, malformed
	// tool arguments, invalid structured output).
	ErrBadResponse = errors.New("llm: bad response")
	// ErrUnknownTool: the model called a tool that was not offered. The
	// Response is returned alongside so the caller can tell the model.
	ErrUnknownTool = errors.New("llm: unknown tool")
	// ErrBadRequest: the request is invalid (e.g. a tool message whose id has
	// no preceding call) or the server rejected it with a 4xx.
	ErrBadRequest = errors.New("llm: bad request")
	// ErrAuth: the server rejected the credentials (401/403).
	ErrAuth = errors.New("llm: authentication failed")
)

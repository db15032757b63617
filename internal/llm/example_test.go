package llm_test

import (
	"context"
	"fmt"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
)

// A ReAct turn against the scripted server: the model asks for a tool, the
// caller answers with the same id, the model concludes.
func Example() {
	srv, err := llmtest.Start(
		llmtest.Tools(llmtest.Call{ID: "call_1", Name: "get_events", Arguments: `{"namespace":"shop"}`}),
		llmtest.Text(`{"root_cause":"image pull failure"}`),
	)
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	p, err := llm.New(llm.Config{Provider: "openai-compatible", Model: "llama3", BaseURL: srv.BaseURL()}, nil)
	if err != nil {
		panic(err)
	}
	tools := []llm.ToolSchema{{Name: "get_events", Description: "Kubernetes events", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"namespace": map[string]any{"type": "string"}},
	}}}
	req := llm.Request{Purpose: "react", Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "Pods in shop are not starting."},
	}}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, call.Arguments)

	req.Messages = append(req.Messages, resp.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: "Failed to pull image"})
	resp, err = p.Complete(context.Background(), req)
	if err != nil {
		panic(err)
	}
	answer, err := llm.ParseFinalAnswer(resp.Message.Content)
	fmt.Println(answer["root_cause"], err, resp.Usage.PromptTokens)
	// Output:
	// call_1 get_events {"namespace":"shop"}
	// image pull failure <nil> 10
}

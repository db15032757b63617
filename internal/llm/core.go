package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"time"
)

// core holds what both adapters share: identity, retry policy, logging and
// redaction, request validation and response post-processing.
type core struct {
	name    string
	model   string
	timeout time.Duration
	policy  retryPolicy
	logger  *slog.Logger
	secret  string
}

func newCore(cfg Config, logger *slog.Logger) core {
	return core{
		name:    cfg.Provider,
		model:   cfg.Model,
		timeout: cfg.Timeout,
		policy:  defaultPolicy(cfg.MaxRetries),
		logger:  logger,
		secret:  cfg.APIKey,
	}
}

func (c *core) Name() string  { return c.name }
func (c *core) Model() string { return c.model }

// redact removes the API key (and any bearer token echo) from s.
func (c *core) redact(s string) string {
	if c.secret != "" && len(c.secret) >= 4 {
		s = strings.ReplaceAll(s, c.secret, "<redacted>")
	}
	return bearerRE.ReplaceAllString(s, "Bearer <redacted>")
}

var bearerRE = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._\-]+`)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validateRequest checks what every provider would reject, with errors that
// name the message or tool: roles, tool names, and that every tool result
// answers a preceding assistant tool call (ids consistent, none left
// unanswered before the next non-tool turn).
func validateRequest(req Request) error {
	if len(req.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrBadRequest)
	}
	seen := map[string]bool{}
	for i, t := range req.Tools {
		if !nameRE.MatchString(t.Name) {
			return fmt.Errorf("%w: tools[%d]: name %q must match %s", ErrBadRequest, i, t.Name, nameRE)
		}
		if seen[t.Name] {
			return fmt.Errorf("%w: tools[%d]: duplicate tool name %q", ErrBadRequest, i, t.Name)
		}
		seen[t.Name] = true
	}
	if req.ResponseSchema != nil && req.SchemaName != "" && !nameRE.MatchString(req.SchemaName) {
		return fmt.Errorf("%w: schema name %q must match %s", ErrBadRequest, req.SchemaName, nameRE)
	}
	pending := map[string]int{} // call id -> message index of the assistant turn
	answered := map[string]bool{}
	checkPending := func(at int) error {
		if len(pending) == 0 {
			return nil
		}
		ids := make([]string, 0, len(pending))
		for id := range pending {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return fmt.Errorf("%w: messages[%d]: tool call(s) %s of messages[%d] have no tool result before this turn",
			ErrBadRequest, at, strings.Join(ids, ", "), pending[ids[0]])
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
			if err := checkPending(i); err != nil {
				return err
			}
		case RoleAssistant:
			if err := checkPending(i); err != nil {
				return err
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" {
					return fmt.Errorf("%w: messages[%d].tool_calls[%d] (%s): empty id", ErrBadRequest, i, j, tc.Name)
				}
				if tc.Name == "" {
					return fmt.Errorf("%w: messages[%d].tool_calls[%d] (id %s): empty name", ErrBadRequest, i, j, tc.ID)
				}
				if _, dup := pending[tc.ID]; dup {
					return fmt.Errorf("%w: messages[%d]: duplicate tool call id %q", ErrBadRequest, i, tc.ID)
				}
				if strings.TrimSpace(tc.Arguments) != "" {
					var v map[string]any
					if err := json.Unmarshal([]byte(tc.Arguments), &v); err != nil {
						return fmt.Errorf("%w: messages[%d].tool_calls[%d] (%s): arguments are not a JSON object: %v", ErrBadRequest, i, j, tc.Name, err)
					}
				}
				pending[tc.ID] = i
				delete(answered, tc.ID)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("%w: messages[%d]: tool message without tool_call_id", ErrBadRequest, i)
			}
			if _, ok := pending[m.ToolCallID]; !ok {
				if answered[m.ToolCallID] {
					return fmt.Errorf("%w: messages[%d]: tool call id %q answered twice", ErrBadRequest, i, m.ToolCallID)
				}
				return fmt.Errorf("%w: messages[%d]: tool call id %q has no preceding assistant tool call", ErrBadRequest, i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			answered[m.ToolCallID] = true
		default:
			return fmt.Errorf("%w: messages[%d]: unknown role %q (system, user, assistant, tool)", ErrBadRequest, i, m.Role)
		}
	}
	return checkPending(len(req.Messages))
}

// toolArgs returns the arguments to send for a historical tool call.
func toolArgs(a string) string {
	if strings.TrimSpace(a) == "" {
		return "{}"
	}
	return a
}

func schemaName(req Request) string {
	if req.SchemaName != "" {
		return req.SchemaName
	}
	return "response"
}

// newCallID returns a fresh tool call id for servers that omit them.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// postprocess fixes up a decoded response: assigns missing/duplicate tool
// call ids, repairs arguments, flags unknown tools and checks structured
// output against schema (the normalized response schema, or nil). It returns
// the response with an error wrapping ErrBadResponse and/or ErrUnknownTool.
func (c *core) postprocess(req Request, resp *Response, schema map[string]any) error {
	resp.Message.Role = RoleAssistant
	if resp.Model == "" {
		resp.Model = c.model
	}
	offered := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	var errs []error
	ids := map[string]bool{}
	var unknown []string
	for i := range resp.Message.ToolCalls {
		tc := &resp.Message.ToolCalls[i]
		if tc.ID == "" || ids[tc.ID] {
			tc.ID = newCallID()
		}
		ids[tc.ID] = true
		if !offered[tc.Name] {
			unknown = append(unknown, tc.Name)
		}
		fixed, err := RepairArguments(tc.Arguments)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: tool call %s (%s): %v", ErrBadResponse, tc.ID, tc.Name, c.redact(err.Error())))
			continue
		}
		tc.Arguments = fixed
	}
	if len(unknown) > 0 {
		names := make([]string, 0, len(offered))
		for n := range offered {
			names = append(names, n)
		}
		sort.Strings(names)
		errs = append([]error{fmt.Errorf("%w: model called %s; offered: [%s]", ErrUnknownTool, quoteList(unknown), strings.Join(names, ", "))}, errs...)
	}
	if req.ResponseSchema != nil && len(resp.Message.ToolCalls) == 0 {
		obj, text, err := extractObject(resp.Message.Content)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: structured output: %v", ErrBadResponse, err))
		default:
			if verr := validateInstance(schema, obj, ""); verr != nil {
				errs = append(errs, fmt.Errorf("%w: structured output does not match schema %q: %v", ErrBadResponse, schemaName(req), verr))
			} else {
				resp.Message.Content = text
			}
		}
	}
	if len(resp.Message.ToolCalls) == 0 && strings.TrimSpace(resp.Message.Content) == "" && resp.FinishReason != "length" && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%w: empty message (no content, no tool calls; finish_reason %q)", ErrBadResponse, resp.FinishReason))
	}
	return errors.Join(errs...)
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// validateInstance checks v against the subset of JSON Schema the
// normalizers produce (type, properties, required, additionalProperties
// false, items, enum).
func validateInstance(schema map[string]any, v any, path string) error {
	if schema == nil {
		return nil
	}
	typ, _ := schema["type"].(string)
	if typ != "" && !valueMatchesType(v, typ) {
		return fmt.Errorf("%s: want %s, got %s", displayPath(path), typ, jsonType(v))
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s: value %v not in enum %v", displayPath(path), v, enum)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		req, _ := toStrings(schema["required"])
		for _, r := range req {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("%s: missing required property %q", displayPath(path), r)
			}
		}
		if ap, ok := schema["additionalProperties"].(bool); ok && !ap {
			for k := range x {
				if _, ok := props[k]; !ok {
					return fmt.Errorf("%s: unexpected property %q", displayPath(path), k)
				}
			}
		}
		for k, pv := range x {
			ps, ok := props[k].(map[string]any)
			if !ok {
				continue
			}
			if err := validateInstance(ps, pv, join(path, k)); err != nil {
				return err
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, e := range x {
			if err := validateInstance(items, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// logDone logs the outcome of one Complete call; the key never appears.
func (c *core) logDone(ctx context.Context, req Request, resp Response, attempts int, start time.Time, err error) {
	attrs := []slog.Attr{
		slog.String("purpose", req.Purpose),
		slog.Int("attempts", attempts),
		slog.Duration("latency", time.Since(start)),
		slog.Int("messages", len(req.Messages)),
		slog.Int("tools", len(req.Tools)),
		slog.Int64("prompt_tokens", resp.Usage.PromptTokens),
		slog.Int64("completion_tokens", resp.Usage.CompletionTokens),
		slog.String("finish_reason", resp.FinishReason),
		slog.Int("tool_calls", len(resp.Message.ToolCalls)),
	}
	level := slog.LevelDebug
	msg := "llm completion"
	if err != nil {
		level = slog.LevelWarn
		msg = "llm completion failed"
		attrs = append(attrs, slog.String("error", c.redact(err.Error())))
	}
	c.logger.LogAttrs(ctx, level, msg, attrs...)
}

// base exposes the shared core (tests tune the retry policy through it).
func (c *core) base() *core { return c }

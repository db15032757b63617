package router

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config holds the router's settings and the guardrails it owns (the tool
// schema cap, the secondary-tool reserve, the plan size; see the Guardrail
// enum of the investigation contract).
type Config struct {
	// RegistryTTL is how long a fetched tool registry is served from the cache.
	RegistryTTL time.Duration
	// RegistryMaxStale is how long an expired registry may still be served
	// when the tools service cannot be reached (0 disables stale serving).
	RegistryMaxStale time.Duration
	// RegistryCacheSize bounds the per-session registry cache entries.
	RegistryCacheSize int
	// ToolsTimeout bounds one ListToolDefinitions call.
	ToolsTimeout time.Duration
	// ExecuteTimeout bounds one dispatched ExecuteTool call.
	ExecuteTimeout time.Duration
	// SyncDispatch makes Investigate wait for ExecuteTool and report its
	// failure as status ERROR (the default answers as soon as the call is sent).
	SyncDispatch bool
	// MaxInflight bounds concurrently running asynchronous dispatches.
	MaxInflight int
	// InflightWait is how long a dispatch waits for a free slot before it
	// is refused with ResourceExhausted.
	InflightWait time.Duration
	// ManualNoCache bypasses the executor's duplicate-call cache for calls a
	// person asked for (commands, queries, quick actions).
	ManualNoCache bool
	// MaxInputBytes caps command, query and chat message sizes, and the JSON
	// size of quick-action parameters.
	MaxInputBytes int
	// SmartTimeout bounds the smart path's model call.
	SmartTimeout time.Duration
	// ToolBudget is the default plan size (PlanActions keeps the top N tools).
	ToolBudget int
	// MaxToolSchemas caps the tool schemas SelectTools offers a model.
	MaxToolSchemas int
	// SecondaryReserve is how many secondary tools survive the schema cap.
	SecondaryReserve int
	// MaxSuggestions caps the suggestion chips of a session.
	MaxSuggestions int
	// SessionContextTTL is how long the router remembers the last context a
	// session sent (ListTools and ListSuggestions use it).
	SessionContextTTL time.Duration
	// SessionContextMax bounds the remembered session contexts.
	SessionContextMax int
}

// DefaultConfig returns the defaults (the guardrail values the README's
// guardrail table lists).
func DefaultConfig() Config {
	return Config{
		RegistryTTL:       15 * time.Second,
		RegistryMaxStale:  5 * time.Minute,
		RegistryCacheSize: 256,
		ToolsTimeout:      5 * time.Second,
		ExecuteTimeout:    2 * time.Minute,
		SyncDispatch:      false,
		MaxInflight:       64,
		InflightWait:      5 * time.Second,
		ManualNoCache:     true,
		MaxInputBytes:     4096,
		SmartTimeout:      20 * time.Second,
		ToolBudget:        10,
		MaxToolSchemas:    32,
		SecondaryReserve:  3,
		MaxSuggestions:    5,
		SessionContextTTL: 6 * time.Hour,
		SessionContextMax: 1024,
	}
}

// RegisterFlags registers the router flags (prefix "router.") on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.RegistryTTL, "router.registry-ttl", c.RegistryTTL, "how long the tool registry fetched from the tools service is cached")
	fs.DurationVar(&c.RegistryMaxStale, "router.registry-max-stale", c.RegistryMaxStale, "how long an expired registry may be served while the tools service is unreachable (0: never)")
	fs.IntVar(&c.RegistryCacheSize, "router.registry-cache-size", c.RegistryCacheSize, "maximum cached per-session tool registries")
	fs.DurationVar(&c.ToolsTimeout, "router.tools-timeout", c.ToolsTimeout, "timeout of one ListToolDefinitions call")
	fs.DurationVar(&c.ExecuteTimeout, "router.execute-timeout", c.ExecuteTimeout, "timeout of one dispatched ExecuteTool call")
	fs.BoolVar(&c.SyncDispatch, "router.sync-dispatch", c.SyncDispatch, "wait for the tool to finish before answering Investigate")
	fs.IntVar(&c.MaxInflight, "router.max-inflight", c.MaxInflight, "maximum concurrently running dispatched tool calls")
	fs.DurationVar(&c.InflightWait, "router.inflight-wait", c.InflightWait, "how long a dispatch waits for a free slot before it is refused")
	fs.BoolVar(&c.ManualNoCache, "router.manual-no-cache", c.ManualNoCache, "bypass the duplicate-call cache for tool calls a person asked for")
	fs.IntVar(&c.MaxInputBytes, "router.max-input-bytes", c.MaxInputBytes, "maximum size of a command, query, chat message or quick-action parameters")
	fs.DurationVar(&c.SmartTimeout, "router.smart-timeout", c.SmartTimeout, "timeout of the smart path's model call")
	fs.IntVar(&c.ToolBudget, "router.tool-budget", c.ToolBudget, "guardrail: planned actions kept by PlanActions")
	fs.IntVar(&c.MaxToolSchemas, "router.max-tool-schemas", c.MaxToolSchemas, "guardrail: maximum tool schemas offered to a model")
	fs.IntVar(&c.SecondaryReserve, "router.secondary-reserve", c.SecondaryReserve, "guardrail: secondary tools kept within the schema cap")
	fs.IntVar(&c.MaxSuggestions, "router.max-suggestions", c.MaxSuggestions, "maximum suggestion chips per session")
	fs.DurationVar(&c.SessionContextTTL, "router.session-context-ttl", c.SessionContextTTL, "how long the last context a session sent is remembered")
	fs.IntVar(&c.SessionContextMax, "router.session-context-max", c.SessionContextMax, "maximum remembered session contexts")
}

// Validate checks the configuration; the error names the offending field.
func (c *Config) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("router.%s must be > 0, got %d", name, v))
		}
	}
	posD := func(name string, v time.Duration) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("router.%s must be > 0, got %s", name, v))
		}
	}
	posD("registry-ttl", c.RegistryTTL)
	if c.RegistryMaxStale < 0 {
		errs = append(errs, fmt.Errorf("router.registry-max-stale must be >= 0, got %s", c.RegistryMaxStale))
	}
	pos("registry-cache-size", c.RegistryCacheSize)
	posD("tools-timeout", c.ToolsTimeout)
	posD("execute-timeout", c.ExecuteTimeout)
	pos("max-inflight", c.MaxInflight)
	pos("max-input-bytes", c.MaxInputBytes)
	posD("smart-timeout", c.SmartTimeout)
	pos("tool-budget", c.ToolBudget)
	pos("max-tool-schemas", c.MaxToolSchemas)
	if c.SecondaryReserve < 0 {
		errs = append(errs, fmt.Errorf("router.secondary-reserve must be >= 0, got %d", c.SecondaryReserve))
	}
	if c.MaxToolSchemas > 0 && c.SecondaryReserve > c.MaxToolSchemas {
		errs = append(errs, fmt.Errorf("router.secondary-reserve (%d) must not exceed router.max-tool-schemas (%d)", c.SecondaryReserve, c.MaxToolSchemas))
	}
	pos("max-suggestions", c.MaxSuggestions)
	posD("session-context-ttl", c.SessionContextTTL)
	pos("session-context-max", c.SessionContextMax)
	return errors.Join(errs...)
}

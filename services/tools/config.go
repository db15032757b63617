package tools

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config holds the tools service's guardrail constants. Every field has a
// flag ("-tools.<name>") and a default from DefaultConfig.
type Config struct {
	// Timeout bounds one tool call. A backend that does not answer in time
	// yields success=false with a timeout error and a "tool_timeout" trip.
	Timeout time.Duration
	// MaxOutputBytes caps ToolResult.raw_output; the original size is recorded.
	MaxOutputBytes int
	// MaxSnippets and MaxSnippetBytes cap evidence_snippets.
	MaxSnippets     int
	MaxSnippetBytes int
	// MaxLogLines caps the log lines a tool puts into metadata (error lines are kept first).
	MaxLogLines int
	// DefaultTailLines is fetch_pod_logs' tail when the call sets none.
	DefaultTailLines int
	// DuplicateTTL is how long an identical call of the same investigation is
	// replayed from the cache; 0 disables duplicate detection.
	DuplicateTTL time.Duration
	// DuplicateCacheSize bounds the replay cache (entries, oldest evicted first).
	DuplicateCacheSize int
	// DuplicateCacheBytes bounds the replay cache in bytes (the encoded size
	// of the cached responses), whatever their number.
	DuplicateCacheBytes int64
	// MaxPinsPerSession bounds the pins of one session; a call that would
	// add one more is refused with a clear error.
	MaxPinsPerSession int
	// ReadOnly enforces get/list/watch-only access to Kubernetes.
	ReadOnly bool
	// Redact scrubs secrets from raw_output, snippets, summary and metadata.
	Redact bool
	// DefaultWindow is the look-back when neither params nor context set a time window.
	DefaultWindow time.Duration
	// ChangeLookback widens a context-derived window backwards for deploy and
	// commit history (a bad deploy precedes its incident).
	ChangeLookback time.Duration
	// PromMaxPoints bounds the resolution of a PromQL range query (step = window/PromMaxPoints, at least PromMinStep).
	PromMaxPoints int
	PromMinStep   time.Duration
	// PromMaxSeries caps the series a PromQL result keeps (most anomalous first).
	PromMaxSeries int
	// CodeRoot is the folder holding the source checkouts the code tools
	// (list_files, search_codebase, fetch_code) may read; empty: the code
	// tools are unavailable.
	CodeRoot string
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Timeout:             10 * time.Second,
		MaxOutputBytes:      64 << 10,
		MaxSnippets:         20,
		MaxSnippetBytes:     1024,
		MaxLogLines:         2000,
		DefaultTailLines:    1000,
		DuplicateTTL:        30 * time.Minute,
		DuplicateCacheSize:  4096,
		DuplicateCacheBytes: 64 << 20,
		MaxPinsPerSession:   5000,
		ReadOnly:            true,
		Redact:              true,
		DefaultWindow:       time.Hour,
		ChangeLookback:      72 * time.Hour,
		PromMaxPoints:       240,
		PromMinStep:         15 * time.Second,
		PromMaxSeries:       100,
	}
}

// RegisterFlags binds the fields to flags prefixed "tools.".
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Timeout, "tools.timeout", c.Timeout, "per tool call timeout")
	fs.IntVar(&c.MaxOutputBytes, "tools.max-output-bytes", c.MaxOutputBytes, "cap on a tool result's raw output, in bytes")
	fs.IntVar(&c.MaxSnippets, "tools.max-snippets", c.MaxSnippets, "cap on evidence snippets per tool result")
	fs.IntVar(&c.MaxSnippetBytes, "tools.max-snippet-bytes", c.MaxSnippetBytes, "cap on one evidence snippet, in bytes")
	fs.IntVar(&c.MaxLogLines, "tools.max-log-lines", c.MaxLogLines, "cap on log lines kept as facts per tool result")
	fs.IntVar(&c.DefaultTailLines, "tools.default-tail-lines", c.DefaultTailLines, "fetch_pod_logs tail when the call sets none")
	fs.DurationVar(&c.DuplicateTTL, "tools.duplicate-ttl", c.DuplicateTTL, "replay identical calls of one investigation for this long (0: off)")
	fs.IntVar(&c.DuplicateCacheSize, "tools.duplicate-cache-size", c.DuplicateCacheSize, "entries of the duplicate-call cache")
	fs.IntVar(&c.MaxPinsPerSession, "tools.max-pins-per-session", c.MaxPinsPerSession, "pins one session may hold; more calls are refused")
	fs.Int64Var(&c.DuplicateCacheBytes, "tools.duplicate-cache-bytes", c.DuplicateCacheBytes, "bytes of the duplicate-call cache (encoded responses)")
	fs.BoolVar(&c.ReadOnly, "tools.read-only", c.ReadOnly, "refuse every Kubernetes verb but get, list and watch")
	fs.BoolVar(&c.Redact, "tools.redact", c.Redact, "redact secrets from tool output")
	fs.DurationVar(&c.DefaultWindow, "tools.default-window", c.DefaultWindow, "time window when neither the call nor the context sets one")
	fs.DurationVar(&c.ChangeLookback, "tools.change-lookback", c.ChangeLookback, "extra look-back for deploy and commit history")
	fs.IntVar(&c.PromMaxPoints, "tools.prom-max-points", c.PromMaxPoints, "maximum points per PromQL range query")
	fs.DurationVar(&c.PromMinStep, "tools.prom-min-step", c.PromMinStep, "minimum PromQL range query step")
	fs.IntVar(&c.PromMaxSeries, "tools.prom-max-series", c.PromMaxSeries, "maximum series kept from one PromQL result")
	fs.StringVar(&c.CodeRoot, "tools.code-root", c.CodeRoot, "folder of the source checkouts the code tools may read (empty: code tools off)")
}

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	var errs []error
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("tools.timeout must be > 0, got %s", c.Timeout))
	}
	if c.MaxOutputBytes < 256 {
		errs = append(errs, fmt.Errorf("tools.max-output-bytes must be >= 256, got %d", c.MaxOutputBytes))
	}
	if c.MaxSnippets < 1 {
		errs = append(errs, fmt.Errorf("tools.max-snippets must be >= 1, got %d", c.MaxSnippets))
	}
	if c.MaxSnippetBytes < 32 {
		errs = append(errs, fmt.Errorf("tools.max-snippet-bytes must be >= 32, got %d", c.MaxSnippetBytes))
	}
	if c.MaxLogLines < 1 {
		errs = append(errs, fmt.Errorf("tools.max-log-lines must be >= 1, got %d", c.MaxLogLines))
	}
	if c.DefaultTailLines < 0 {
		errs = append(errs, fmt.Errorf("tools.default-tail-lines must be >= 0, got %d", c.DefaultTailLines))
	}
	if c.DuplicateTTL < 0 {
		errs = append(errs, fmt.Errorf("tools.duplicate-ttl must be >= 0, got %s", c.DuplicateTTL))
	}
	if c.MaxPinsPerSession < 1 {
		errs = append(errs, fmt.Errorf("tools.max-pins-per-session must be >= 1, got %d", c.MaxPinsPerSession))
	}
	if c.DuplicateCacheBytes < 1 {
		errs = append(errs, fmt.Errorf("tools.duplicate-cache-bytes must be >= 1, got %d", c.DuplicateCacheBytes))
	}
	if c.DuplicateCacheSize < 1 {
		errs = append(errs, fmt.Errorf("tools.duplicate-cache-size must be >= 1, got %d", c.DuplicateCacheSize))
	}
	if c.DefaultWindow <= 0 {
		errs = append(errs, fmt.Errorf("tools.default-window must be > 0, got %s", c.DefaultWindow))
	}
	if c.ChangeLookback < 0 {
		errs = append(errs, fmt.Errorf("tools.change-lookback must be >= 0, got %s", c.ChangeLookback))
	}
	if c.PromMaxPoints < 2 {
		errs = append(errs, fmt.Errorf("tools.prom-max-points must be >= 2, got %d", c.PromMaxPoints))
	}
	if c.PromMinStep <= 0 {
		errs = append(errs, fmt.Errorf("tools.prom-min-step must be > 0, got %s", c.PromMinStep))
	}
	if c.PromMaxSeries < 1 {
		errs = append(errs, fmt.Errorf("tools.prom-max-series must be >= 1, got %d", c.PromMaxSeries))
	}
	return errors.Join(errs...)
}

// Limits lists the guardrail constants by name, for investigation records.
func (c Config) Limits() map[string]string {
	return map[string]string{
		"tools.timeout":               c.Timeout.String(),
		"tools.max-output-bytes":      fmt.Sprint(c.MaxOutputBytes),
		"tools.max-snippets":          fmt.Sprint(c.MaxSnippets),
		"tools.max-snippet-bytes":     fmt.Sprint(c.MaxSnippetBytes),
		"tools.max-log-lines":         fmt.Sprint(c.MaxLogLines),
		"tools.default-tail-lines":    fmt.Sprint(c.DefaultTailLines),
		"tools.duplicate-ttl":         c.DuplicateTTL.String(),
		"tools.duplicate-cache-size":  fmt.Sprint(c.DuplicateCacheSize),
		"tools.duplicate-cache-bytes": fmt.Sprint(c.DuplicateCacheBytes),
		"tools.max-pins-per-session":  fmt.Sprint(c.MaxPinsPerSession),
		"tools.read-only":             fmt.Sprint(c.ReadOnly),
		"tools.redact":                fmt.Sprint(c.Redact),
		"tools.default-window":        c.DefaultWindow.String(),
		"tools.change-lookback":       c.ChangeLookback.String(),
		"tools.prom-max-points":       fmt.Sprint(c.PromMaxPoints),
		"tools.prom-min-step":         c.PromMinStep.String(),
		"tools.prom-max-series":       fmt.Sprint(c.PromMaxSeries),
		"tools.code-root":             c.CodeRoot,
	}
}

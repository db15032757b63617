package llm

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"
)

// Provider names.
const (
	ProviderNone             = "none"
	ProviderOpenAI           = "openai"
	ProviderOpenAICompatible = "openai-compatible"
)

// Defaults.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
	// MaxRetryAfter bounds how long a Retry-After header may make us wait.
	MaxRetryAfter = 30 * time.Second
)

// Config selects and configures a provider.
type Config struct {
	Provider   string // "", "none", "openai", "openai-compatible"
	Model      string
	BaseURL    string
	APIKey     string
	APIKeyFile string
	Timeout    time.Duration
	MaxRetries int
	// TraceContent records prompts and completions (redacted) in the
	// model-call spans; off by default (-llm.trace-content).
	TraceContent bool
}

// DefaultConfig returns a config with no provider (offline rules mode).
func DefaultConfig() Config {
	return Config{Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}
}

// Environment variables read by RegisterFlags as flag defaults.
const (
	EnvProvider  = "RCAMESH_LLM_PROVIDER"
	EnvModel     = "RCAMESH_LLM_MODEL"
	EnvBaseURL   = "RCAMESH_LLM_BASE_URL"
	EnvAPIKey    = "RCAMESH_LLM_API_KEY"
	EnvOpenAIKey = "OPENAI_API_KEY"
)

// RegisterFlags registers -llm.* flags. Environment variables supply the
// defaults (flags given on the command line win). The API key is never a
// flag: it comes from RCAMESH_LLM_API_KEY, OPENAI_API_KEY or -llm.api-key-file.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.applyEnv(os.Getenv)
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	fs.StringVar(&c.Provider, "llm.provider", c.Provider, `LLM provider: "none" (offline rules), "openai" or "openai-compatible" (env `+EnvProvider+`)`)
	fs.StringVar(&c.Model, "llm.model", c.Model, "LLM model name (env "+EnvModel+")")
	fs.StringVar(&c.BaseURL, "llm.base-url", c.BaseURL, "LLM API base URL, e.g. http://localhost:11434/v1 (env "+EnvBaseURL+")")
	fs.StringVar(&c.APIKeyFile, "llm.api-key-file", c.APIKeyFile, "file holding the LLM API key (else env "+EnvAPIKey+" or "+EnvOpenAIKey+")")
	fs.DurationVar(&c.Timeout, "llm.timeout", c.Timeout, "timeout of one LLM request attempt")
	fs.IntVar(&c.MaxRetries, "llm.max-retries", c.MaxRetries, "retries on 429/5xx before giving up")
	fs.BoolVar(&c.TraceContent, "llm.trace-content", c.TraceContent, "record prompts and completions (redacted) in the GenAI model-call spans; off by default")
}

// applyEnv fills unset fields from the environment.
func (c *Config) applyEnv(getenv func(string) string) {
	set := func(dst *string, keys ...string) {
		if *dst != "" {
			return
		}
		for _, k := range keys {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				*dst = v
				return
			}
		}
	}
	set(&c.Provider, EnvProvider)
	set(&c.Model, EnvModel)
	set(&c.BaseURL, EnvBaseURL)
	set(&c.APIKey, EnvAPIKey, EnvOpenAIKey)
}

// Enabled reports whether a provider is selected.
func (c Config) Enabled() bool {
	p := strings.TrimSpace(strings.ToLower(c.Provider))
	return p != "" && p != ProviderNone
}

// Validate checks the config; errors name the field. A disabled config is valid.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	p := strings.ToLower(strings.TrimSpace(c.Provider))
	if _, ok := registry[p]; !ok {
		return fmt.Errorf("llm.provider: unknown provider %q (known: %s)", c.Provider, strings.Join(Providers(), ", "))
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("llm.model: required when llm.provider is " + p)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("llm.timeout: must not be negative, got %s", c.Timeout)
	}
	if c.MaxRetries < 0 {
		return fmt.Errorf("llm.max-retries: must not be negative, got %d", c.MaxRetries)
	}
	if p == ProviderOpenAICompatible && strings.TrimSpace(c.BaseURL) == "" {
		return errors.New("llm.base-url: required when llm.provider is " + p)
	}
	return nil
}

// String renders the config with the API key redacted.
func (c Config) String() string {
	key := "<unset>"
	if c.APIKey != "" {
		key = "<redacted>"
	}
	return fmt.Sprintf("llm.Config{Provider:%q Model:%q BaseURL:%q APIKey:%s APIKeyFile:%q Timeout:%s MaxRetries:%d}",
		c.Provider, c.Model, c.BaseURL, key, c.APIKeyFile, c.Timeout, c.MaxRetries)
}

// GoString redacts too, so %#v cannot leak the key.
func (c Config) GoString() string { return c.String() }

// LogValue redacts the key in slog output.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("model", c.Model),
		slog.String("base_url", c.BaseURL),
		slog.Bool("api_key_set", c.APIKey != "" || c.APIKeyFile != ""),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_retries", c.MaxRetries),
	)
}

// resolveKey returns the API key: APIKey if set, else the trimmed content of
// APIKeyFile. Errors never include the key.
func (c Config) resolveKey() (string, error) {
	if c.APIKey != "" {
		return c.APIKey, nil
	}
	if c.APIKeyFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.APIKeyFile)
	if err != nil {
		return "", fmt.Errorf("llm.api-key-file: %w", err)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("llm.api-key-file: %s is empty", c.APIKeyFile)
	}
	return k, nil
}

// Constructor builds a provider from a validated config with its key resolved.
type Constructor func(cfg Config, logger *slog.Logger) (Provider, error)

var registry = map[string]Constructor{
	ProviderOpenAI:           newOpenAI,
	ProviderOpenAICompatible: newCompatible,
}

// Providers lists the registered provider names, sorted.
func Providers() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds the configured provider. It returns (nil, nil) when no provider
// is configured ("" or "none") and an error naming an unknown provider.
func New(cfg Config, logger *slog.Logger) (Provider, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Provider = strings.ToLower(strings.TrimSpace(cfg.Provider))
	key, err := cfg.resolveKey()
	if err != nil {
		return nil, err
	}
	cfg.APIKey = key
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := registry[cfg.Provider](cfg, logger.With("component", "llm", "provider", cfg.Provider, "model", cfg.Model))
	if err != nil {
		return nil, err
	}
	return Instrument(p, cfg.TraceContent), nil
}

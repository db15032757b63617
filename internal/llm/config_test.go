package llm

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRegisterFlagsAndEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want Config
	}{
		{
			name: "defaults",
			want: Config{Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries},
		},
		{
			name: "env",
			env: map[string]string{EnvProvider: "openai-compatible", EnvModel: "llama3", EnvBaseURL: "http://h:11434/v1",
				EnvAPIKey: "k1", EnvOpenAIKey: "k2"},
			want: Config{Provider: "openai-compatible", Model: "llama3", BaseURL: "http://h:11434/v1", APIKey: "k1", Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries},
		},
		{
			name: "OPENAI_API_KEY fallback",
			env:  map[string]string{EnvOpenAIKey: "k2"},
			want: Config{APIKey: "k2", Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries},
		},
		{
			name: "flags win over env",
			env:  map[string]string{EnvProvider: "openai-compatible", EnvModel: "llama3"},
			args: []string{"-llm.provider=openai", "-llm.model=gpt-4o", "-llm.base-url=http://x/v1", "-llm.api-key-file=/k", "-llm.timeout=5s", "-llm.max-retries=1"},
			want: Config{Provider: "openai", Model: "gpt-4o", BaseURL: "http://x/v1", APIKeyFile: "/k", Timeout: 5 * time.Second, MaxRetries: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{EnvProvider, EnvModel, EnvBaseURL, EnvAPIKey, EnvOpenAIKey} {
				t.Setenv(k, tc.env[k])
			}
			cfg := DefaultConfig()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			cfg.RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if cfg != tc.want {
				t.Errorf("got  %#v\nwant %#v", cfg, tc.want)
				t.Errorf("keys: got %q want %q", cfg.APIKey, tc.want.APIKey)
			}
			if fs.Lookup("llm.api-key") != nil {
				t.Error("the key must not be a flag (it would show in ps)")
			}
		})
	}
}

func TestNewRegistry(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		cfg      Config
		wantNil  bool
		wantErr  string
		wantName string
	}{
		{name: "empty", cfg: Config{}, wantNil: true},
		{name: "none", cfg: Config{Provider: "none", Model: "x"}, wantNil: true},
		{name: "unknown", cfg: Config{Provider: "anthropic", Model: "x"}, wantErr: `unknown provider "anthropic"`},
		{name: "no model", cfg: Config{Provider: "openai"}, wantErr: "llm.model"},
		{name: "compatible needs url", cfg: Config{Provider: "openai-compatible", Model: "m"}, wantErr: "llm.base-url"},
		{name: "openai needs key", cfg: Config{Provider: "openai", Model: "m"}, wantErr: "llm.api-key"},
		{name: "missing key file", cfg: Config{Provider: "openai", Model: "m", APIKeyFile: "/nonexistent/key"}, wantErr: "llm.api-key-file"},
		{name: "negative retries", cfg: Config{Provider: "openai", Model: "m", APIKey: "k", MaxRetries: -1}, wantErr: "llm.max-retries"},
		{name: "openai with key file", cfg: Config{Provider: "OpenAI", Model: "gpt-4o", APIKeyFile: keyFile}, wantName: "openai"},
		{name: "compatible", cfg: Config{Provider: "openai-compatible", Model: "llama3", BaseURL: "http://127.0.0.1:1/v1"}, wantName: "openai-compatible"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg, nil)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Fatal("error leaks key")
				}
			case tc.wantNil:
				if p != nil || err != nil {
					t.Fatalf("got (%v, %v), want (nil, nil)", p, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if p.Name() != tc.wantName || p.Model() != tc.cfg.Model {
					t.Errorf("Name/Model = %s/%s", p.Name(), p.Model())
				}
			}
		})
	}
}

func TestKeyFileIsRead(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("  "+testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Config{APIKeyFile: keyFile}.resolveKey()
	if err != nil || got != testKey {
		t.Fatalf("resolveKey = %q, %v", got, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Config{APIKeyFile: empty}).resolveKey(); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty key file: %v", err)
	}
}

func TestConfigRedacts(t *testing.T) {
	cfg := Config{Provider: "openai", Model: "gpt-4o", APIKey: testKey, Timeout: time.Second}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "llm", cfg)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "llm", cfg)
	out := cfg.String() + fmt.Sprintf(" %v %+v %#v %s", cfg, cfg, cfg, &cfg) + logs.String()
	if strings.Contains(out, testKey) || strings.Contains(out, "SUPERSECRET") {
		t.Fatalf("key leaked: %s", out)
	}
	if !strings.Contains(cfg.String(), "<redacted>") || !strings.Contains(cfg.String(), "gpt-4o") {
		t.Errorf("String() = %s", cfg.String())
	}
	if errors.Is(cfg.Validate(), ErrBadRequest) {
		t.Error("valid config rejected")
	}
}

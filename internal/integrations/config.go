// Package integrations declares, in one YAML file, the systems rcamesh
// inspects (Kubernetes, Prometheus, a log store, git repositories) and how
// to reach them. Secrets are never written in the file itself: each secret
// field names an environment variable (`*_env`) or a file (`*_file`) to read
// it from, and no String, log line or error ever prints a secret.
package integrations

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the integrations file.
type Config struct {
	Kubernetes *Kubernetes `yaml:"kubernetes"`
	Prometheus *Prometheus `yaml:"prometheus"`
	Logs       *Logs       `yaml:"logs"`
	Git        *Git        `yaml:"git"`
	StatusPage *StatusPage `yaml:"statuspage"`
}

// Kubernetes selects a cluster: a kubeconfig (and context) or in-cluster.
type Kubernetes struct {
	Kubeconfig string        `yaml:"kubeconfig"`
	Context    string        `yaml:"context"`
	InCluster  bool          `yaml:"in_cluster"`
	Timeout    time.Duration `yaml:"timeout"`
	// Namespaces limits discovery; empty means all the credentials can list.
	Namespaces []string `yaml:"namespaces"`
}

// Secret is a credential read from an environment variable or a file.
type Secret struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// IsZero reports whether no source is set.
func (s Secret) IsZero() bool { return s.Env == "" && s.File == "" }

// Resolve reads the secret. Errors name the source, never the value.
func (s Secret) Resolve() (string, error) {
	switch {
	case s.Env != "" && s.File != "":
		return "", errors.New("set env or file, not both")
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set", s.Env)
		}
		return v, nil
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("read secret file %s: %w", s.File, errors.Unwrap(err))
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", s.File)
		}
		return v, nil
	}
	return "", nil
}

// Auth is HTTP authentication: a bearer token or basic auth.
type Auth struct {
	BearerToken Secret `yaml:"bearer_token"`
	Username    string `yaml:"username"`
	Password    Secret `yaml:"password"`
	APIKey      Secret `yaml:"api_key"` // Elasticsearch "ApiKey" header
}

// Prometheus is a Prometheus HTTP API endpoint.
type Prometheus struct {
	URL     string        `yaml:"url"`
	Auth    Auth          `yaml:"auth"`
	Timeout time.Duration `yaml:"timeout"`
}

// Log store types.
const (
	LogsElasticsearch = "elasticsearch"
	LogsOpenSearch    = "opensearch"
	LogsLoki          = "loki"
)

// Logs is a log store.
type Logs struct {
	Type    string        `yaml:"type"`
	URL     string        `yaml:"url"`
	Index   string        `yaml:"index"` // Elasticsearch/OpenSearch index pattern
	Auth    Auth          `yaml:"auth"`
	Timeout time.Duration `yaml:"timeout"`
	// Fields maps our log fields (timestamp, message, level, namespace,
	// pod, service, container) to the store's field or label names.
	Fields map[string]string `yaml:"fields"`
	// TenantID is Loki's X-Scope-OrgID.
	TenantID string `yaml:"tenant_id"`
}

// Git lists repositories, one per service.
type Git struct {
	Repositories []Repository `yaml:"repositories"`
}

// Repository is a local clone of a service's code.
type Repository struct {
	Service string `yaml:"service"`
	Path    string `yaml:"path"`
	Branch  string `yaml:"branch"`
}

// StatusPage lists outside providers' public status pages (Atlassian
// Statuspage base URLs, such as https://status.example.com): read without
// credentials, GET only.
type StatusPage struct {
	URLs    []string      `yaml:"urls"`
	Timeout time.Duration `yaml:"timeout"`
}

// Load reads and validates a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("integrations: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates config bytes. Unknown keys are errors: a
// typo must not silently disable an integration.
func Parse(b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("integrations: parse: %w", err)
	}
	c.defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaults() {
	if c.Kubernetes != nil && c.Kubernetes.Timeout == 0 {
		c.Kubernetes.Timeout = 10 * time.Second
	}
	if c.Prometheus != nil && c.Prometheus.Timeout == 0 {
		c.Prometheus.Timeout = 10 * time.Second
	}
	if c.Logs != nil {
		if c.Logs.Timeout == 0 {
			c.Logs.Timeout = 10 * time.Second
		}
		c.Logs.Fields = mergeFields(DefaultFields(c.Logs.Type), c.Logs.Fields)
	}
	if c.StatusPage != nil && c.StatusPage.Timeout == 0 {
		c.StatusPage.Timeout = 10 * time.Second
	}
}

// DefaultFields is the field mapping per vendor.
func DefaultFields(typ string) map[string]string {
	switch typ {
	case LogsLoki:
		return map[string]string{"namespace": "namespace", "pod": "pod", "service": "app", "container": "container", "level": "level", "host": "host"}
	default: // ECS-style fields as shipped by Filebeat / Fluent Bit
		return map[string]string{"timestamp": "@timestamp", "message": "message", "level": "log.level",
			"namespace": "kubernetes.namespace", "pod": "kubernetes.pod.name", "service": "service.name", "container": "kubernetes.container.name", "host": "host.name"}
	}
}

func mergeFields(def, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range def {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// Validate checks every section; errors name the field.
func (c *Config) Validate() error {
	var errs []error
	if k := c.Kubernetes; k != nil {
		if k.InCluster && k.Kubeconfig != "" {
			errs = append(errs, errors.New("kubernetes: set in_cluster or kubeconfig, not both"))
		}
	}
	if p := c.Prometheus; p != nil {
		if err := checkURL("prometheus.url", p.URL); err != nil {
			errs = append(errs, err)
		}
		if err := p.Auth.validate("prometheus.auth"); err != nil {
			errs = append(errs, err)
		}
	}
	if l := c.Logs; l != nil {
		switch l.Type {
		case LogsElasticsearch, LogsOpenSearch:
			if l.Index == "" {
				errs = append(errs, fmt.Errorf("logs.index is required for %s", l.Type))
			}
		case LogsLoki:
		default:
			errs = append(errs, fmt.Errorf("logs.type %q is not one of %s, %s, %s", l.Type, LogsElasticsearch, LogsOpenSearch, LogsLoki))
		}
		if err := checkURL("logs.url", l.URL); err != nil {
			errs = append(errs, err)
		}
		if err := l.Auth.validate("logs.auth"); err != nil {
			errs = append(errs, err)
		}
	}
	if g := c.Git; g != nil {
		for i, r := range g.Repositories {
			if r.Service == "" {
				errs = append(errs, fmt.Errorf("git.repositories[%d].service is required", i))
			}
			if r.Path == "" {
				errs = append(errs, fmt.Errorf("git.repositories[%d].path is required", i))
			}
		}
	}
	if sp := c.StatusPage; sp != nil {
		if len(sp.URLs) == 0 {
			errs = append(errs, errors.New("statuspage.urls: at least one status page is required"))
		}
		for i, u := range sp.URLs {
			if err := checkURL(fmt.Sprintf("statuspage.urls[%d]", i), u); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("integrations: %w", errors.Join(errs...))
	}
	return nil
}

func (a Auth) validate(field string) error {
	n := 0
	if !a.BearerToken.IsZero() {
		n++
	}
	if a.Username != "" || !a.Password.IsZero() {
		n++
		if a.Username == "" {
			return fmt.Errorf("%s.username is required with a password", field)
		}
	}
	if !a.APIKey.IsZero() {
		n++
	}
	if n > 1 {
		return fmt.Errorf("%s: set one of bearer_token, username/password, api_key", field)
	}
	for name, s := range map[string]Secret{"bearer_token": a.BearerToken, "password": a.Password, "api_key": a.APIKey} {
		if s.Env != "" && s.File != "" {
			return fmt.Errorf("%s.%s: set env or file, not both", field, name)
		}
	}
	return nil
}

func checkURL(field, raw string) error {
	if raw == "" {
		return fmt.Errorf("%s is required", field)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q must be an http(s) URL", field, redactURL(raw))
	}
	if u.User != nil {
		return fmt.Errorf("%s must not carry credentials; use the auth section", field)
	}
	return nil
}

// redactURL drops userinfo from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable url>"
	}
	u.User = nil
	return u.String()
}

// Enabled lists the configured integrations by area name.
func (c *Config) Enabled() []string {
	var out []string
	if c == nil {
		return nil
	}
	if c.Kubernetes != nil {
		out = append(out, "kubernetes")
	}
	if c.Prometheus != nil {
		out = append(out, "prometheus")
	}
	if c.Logs != nil {
		out = append(out, "logs")
	}
	if c.Git != nil && len(c.Git.Repositories) > 0 {
		out = append(out, "git")
	}
	return out
}

// Package auth is rcamesh's identity and transport security: TLS and mTLS
// from certificate files that reload when they change, callers identified by
// API tokens, OIDC-issued JWTs, per-source webhook secrets or the mesh's
// service identity, one table of the role every RPC and REST route needs
// (Policy), gRPC interceptors and HTTP middleware that enforce it, browser
// rules (JSON content type, explicit CORS), and the mesh key from which the
// service token, each service's Ed25519 event-signing key and the NATS
// service passwords derive (or a process's issued credentials: Identity).
//
// Secrets are read from files and never logged: a token appears in logs only
// as the name its line in the tokens file gives it.
package auth

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
)

// Config is the -auth.*, -tls.*, -mesh.* and -http.cors-origins configuration.
type Config struct {
	// TokensFile lists API tokens: "name roles sha256:HEX" per line (-auth.tokens-file).
	TokensFile string
	// WebhooksFile declares per-source webhook secrets (-auth.webhooks-file).
	WebhooksFile string
	// JWT verifies OIDC-issued tokens.
	JWT JWTConfig
	// InsecureOpen allows listening beyond loopback with no authentication
	// (-auth.insecure-open): the documented "open" mode for a laptop or a
	// network that is trusted as a whole.
	InsecureOpen bool
	// MeshKeyFile holds the root secret of one mesh (-mesh.key-file); the
	// service token, each service's event-signing key and the NATS service
	// passwords derive from it (Identity). Empty: <data.dir>/mesh.key, created
	// on first start (one process only; split mode needs the file).
	MeshKeyFile string
	// CredentialsFile holds the credentials issued for this process's
	// services only (-mesh.credentials-file, `rcamesh mesh-credentials`):
	// an alternative to the mesh key for a split process that does not run
	// the embedded NATS, so it can sign and connect as its own services only.
	CredentialsFile string
	// CORSOrigins are the origins allowed to call the API from a browser
	// (-http.cors-origins, comma list); none by default.
	CORSOrigins []string
	TLS         TLSConfig
	NATS        NATSConfig
}

// JWTConfig is the -auth.jwt.* configuration.
type JWTConfig struct {
	Issuer     string
	Audience   string
	JWKSFile   string
	JWKSURL    string
	RolesClaim string
	Algs       string
}

// Enabled reports whether JWTs are accepted.
func (c JWTConfig) Enabled() bool { return c.JWKSFile != "" || c.JWKSURL != "" }

// NATSConfig is the NATS identity of a process (-nats.user,
// -nats.password-file) and, for the embedded server, the read-only user for
// subscribers (-nats.reader-password-file).
type NATSConfig struct {
	User               string
	PasswordFile       string
	ReaderPasswordFile string
}

// DefaultConfig has no authentication configured (loopback only).
func DefaultConfig() Config {
	return Config{JWT: JWTConfig{RolesClaim: "roles", Algs: "RS256,ES256,EdDSA"}}
}

// RegisterFlags registers the security flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.TokensFile, "auth.tokens-file", c.TokensFile, "file of API tokens, one 'name roles sha256:HEX' per line (roles: read,steer,ingest,admin,service); see `rcamesh token`")
	fs.StringVar(&c.WebhooksFile, "auth.webhooks-file", c.WebhooksFile, "YAML file of per-source webhook secrets for POST /api/v4/alerts[/source] (bearer token, basic auth, PagerDuty signature)")
	fs.StringVar(&c.JWT.Issuer, "auth.jwt.issuer", c.JWT.Issuer, "issuer (iss) OIDC-issued JWTs must carry")
	fs.StringVar(&c.JWT.Audience, "auth.jwt.audience", c.JWT.Audience, "audience (aud) OIDC-issued JWTs must carry")
	fs.StringVar(&c.JWT.JWKSFile, "auth.jwt.jwks-file", c.JWT.JWKSFile, "JWKS file with the keys that sign accepted JWTs (reloaded when it changes)")
	fs.StringVar(&c.JWT.JWKSURL, "auth.jwt.jwks-url", c.JWT.JWKSURL, "JWKS URL of the OIDC provider (https)")
	fs.StringVar(&c.JWT.RolesClaim, "auth.jwt.roles-claim", c.JWT.RolesClaim, "JWT claim holding the caller's roles (a list or a space/comma string; dots reach nested claims, e.g. realm_access.roles)")
	fs.StringVar(&c.JWT.Algs, "auth.jwt.algs", c.JWT.Algs, "accepted JWT signing algorithms")
	fs.BoolVar(&c.InsecureOpen, "auth.insecure-open", c.InsecureOpen, "allow listening beyond loopback without authentication (open mode: anyone who reaches the ports can drive the mesh)")
	fs.StringVar(&c.MeshKeyFile, "mesh.key-file", c.MeshKeyFile, "file holding the mesh's shared secret (at least 32 bytes): service identity, pin signatures and NATS service passwords derive from it; default <data.dir>/mesh.key (created)")
	fs.StringVar(&c.CredentialsFile, "mesh.credentials-file", c.CredentialsFile, "credentials issued for this process's services by `rcamesh mesh-credentials` (instead of -mesh.key-file in split mode: the process can then sign pins and connect to NATS as its own services only)")
	fs.Func("http.cors-origins", "comma list of browser origins allowed to call the API cross-origin (default none)", func(v string) error {
		c.CORSOrigins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.CORSOrigins = append(c.CORSOrigins, strings.TrimRight(o, "/"))
			}
		}
		return nil
	})
	fs.StringVar(&c.NATS.User, "nats.user", c.NATS.User, "NATS user of this process (default with -nats.url: rcamesh-<target>, password derived from the mesh key)")
	fs.StringVar(&c.NATS.PasswordFile, "nats.password-file", c.NATS.PasswordFile, "file holding the NATS password of -nats.user")
	fs.StringVar(&c.NATS.ReaderPasswordFile, "nats.reader-password-file", c.NATS.ReaderPasswordFile, "embedded NATS: password of the read-only user 'reader' for evidence-stream subscribers (no file: no reader user)")
	c.TLS.RegisterFlags(fs)
}

// Enabled reports whether callers must authenticate.
func (c Config) Enabled() bool { return c.TokensFile != "" || c.JWT.Enabled() }

// Validate names the first bad field. Files are read at start (auth.New,
// NewReloader, LoadMeshKey), where a missing or malformed one is an error
// naming its flag.
func (c Config) Validate() error {
	if c.JWT.JWKSFile != "" && c.JWT.JWKSURL != "" {
		return errors.New("auth: set -auth.jwt.jwks-file or -auth.jwt.jwks-url, not both")
	}
	if c.JWT.Enabled() {
		if c.JWT.Issuer == "" {
			return errors.New("auth: -auth.jwt.issuer is required with a JWKS")
		}
		if c.JWT.Audience == "" {
			return errors.New("auth: -auth.jwt.audience is required with a JWKS")
		}
		if strings.TrimSpace(c.JWT.RolesClaim) == "" {
			return errors.New("auth: -auth.jwt.roles-claim is empty")
		}
	}
	if c.JWT.JWKSURL != "" {
		u, err := url.Parse(c.JWT.JWKSURL)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("auth: -auth.jwt.jwks-url %q is not an http(s) URL", c.JWT.JWKSURL)
		}
	}
	for _, o := range c.CORSOrigins {
		u, err := url.Parse(o)
		if o == "*" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Path != "" {
			return fmt.Errorf("auth: -http.cors-origins entry %q is not an origin such as https://ops.example.com (no wildcard)", o)
		}
	}
	if (c.NATS.User == "") != (c.NATS.PasswordFile == "") {
		return errors.New("auth: -nats.user and -nats.password-file go together")
	}
	return c.TLS.Validate()
}

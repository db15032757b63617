package auth

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Principal is an authenticated caller. Name is safe to log (never a secret).
type Principal struct {
	Name  string
	Roles []Role
	// Via says how it authenticated: token, jwt, webhook, service, delegated.
	Via string
}

// Has reports whether p may do what need requires.
func (p *Principal) Has(need Role) bool { return p != nil && Has(p.Roles, need) }

func (p *Principal) roleNames() string {
	s := make([]string, len(p.Roles))
	for i, r := range p.Roles {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

// ErrUnauthenticated is returned for a missing or invalid credential.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator identifies callers by their bearer credential.
type Authenticator struct {
	enabled  bool
	tokens   atomic.Pointer[map[[32]byte]Principal]
	tokFile  string
	tokMu    sync.Mutex // serializes reloads
	tokStamp string
	tokCheck time.Time
	service  [32]byte
	svcToken string
	jwt      *oidc.IDTokenVerifier
	claim    string
	webhooks map[string]*webhookSource
	cors     []string
	log      *slog.Logger
}

// New builds the authenticator of cfg. meshKey gives the service identity.
func New(ctx context.Context, cfg Config, meshKey []byte, logger *slog.Logger) (*Authenticator, error) {
	id, err := IdentityFromMeshKey(meshKey)
	if err != nil {
		return nil, err
	}
	return NewForIdentity(ctx, cfg, id, logger)
}

// NewForIdentity is New for a process's identity (the mesh key or issued
// credentials).
func NewForIdentity(ctx context.Context, cfg Config, id *Identity, logger *slog.Logger) (*Authenticator, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if id == nil || id.ServiceToken() == "" {
		return nil, errors.New("auth: no service identity")
	}
	a := &Authenticator{
		enabled:  cfg.Enabled(),
		tokFile:  cfg.TokensFile,
		svcToken: id.ServiceToken(),
		claim:    cfg.JWT.RolesClaim,
		cors:     cfg.CORSOrigins,
		log:      logger.With("component", "auth"),
	}
	a.service = sha256.Sum256([]byte(a.svcToken))
	a.tokens.Store(&map[[32]byte]Principal{})
	if cfg.TokensFile != "" {
		if err := a.loadTokens(cfg.TokensFile); err != nil {
			return nil, err
		}
	}
	if cfg.JWT.Enabled() {
		v, err := newJWTVerifier(ctx, cfg.JWT)
		if err != nil {
			return nil, err
		}
		a.jwt = v
	}
	if cfg.WebhooksFile != "" {
		w, err := loadWebhooks(cfg.WebhooksFile)
		if err != nil {
			return nil, err
		}
		a.webhooks = w
	}
	return a, nil
}

// Enabled reports whether callers must authenticate.
func (a *Authenticator) Enabled() bool { return a.enabled }

// ServiceToken is the bearer token the mesh's own clients present.
func (a *Authenticator) ServiceToken() string { return a.svcToken }

func fileStamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Size(), st.ModTime().UnixNano())
}

// reloadTokens re-reads the tokens file when it changed (checked at most
// once a second), so a token is added or revoked without a restart. A file
// that no longer parses keeps the previous tokens and is logged.
func (a *Authenticator) reloadTokens(ctx context.Context) {
	if a.tokFile == "" {
		return
	}
	a.tokMu.Lock()
	defer a.tokMu.Unlock()
	if time.Since(a.tokCheck) < time.Second {
		return
	}
	a.tokCheck = time.Now()
	if fileStamp(a.tokFile) == a.tokStamp {
		return
	}
	if err := a.loadTokens(a.tokFile); err != nil {
		a.log.ErrorContext(ctx, "tokens file not reloaded; the previous tokens stay in force", "err", err)
		return
	}
	a.log.InfoContext(ctx, "tokens file reloaded", "tokens", len(*a.tokens.Load()))
}

// loadTokens reads "name roles sha256:HEX" (or "name roles file:PATH",
// the raw token in PATH) lines; # starts a comment.
func (a *Authenticator) loadTokens(path string) error {
	stamp := fileStamp(path)
	tokens := map[[32]byte]Principal{}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("auth: -auth.tokens-file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	names := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return fmt.Errorf("auth: %s line %d: want 'name roles sha256:HEX' (3 fields), got %d", path, n, len(fields))
		}
		name := fields[0]
		if names[name] {
			return fmt.Errorf("auth: %s line %d: token name %q used twice", path, n, name)
		}
		names[name] = true
		roles, err := ParseRoles(fields[1])
		if err != nil {
			return fmt.Errorf("auth: %s line %d: %w", path, n, err)
		}
		var sum [32]byte
		switch cred := fields[2]; {
		case strings.HasPrefix(cred, "sha256:"):
			b, err := hex.DecodeString(strings.TrimPrefix(cred, "sha256:"))
			if err != nil || len(b) != 32 {
				return fmt.Errorf("auth: %s line %d: sha256: wants 64 hex digits", path, n)
			}
			copy(sum[:], b)
		case strings.HasPrefix(cred, "file:"):
			raw, err := os.ReadFile(strings.TrimPrefix(cred, "file:"))
			if err != nil {
				return fmt.Errorf("auth: %s line %d: %w", path, n, err)
			}
			tok := strings.TrimSpace(string(raw))
			if len(tok) < 16 {
				return fmt.Errorf("auth: %s line %d: the token in %s is shorter than 16 characters", path, n, strings.TrimPrefix(cred, "file:"))
			}
			sum = sha256.Sum256([]byte(tok))
		default:
			return fmt.Errorf("auth: %s line %d: the credential must be sha256:HEX or file:PATH", path, n)
		}
		if _, dup := tokens[sum]; dup {
			return fmt.Errorf("auth: %s line %d: the same token is listed twice", path, n)
		}
		tokens[sum] = Principal{Name: "token:" + name, Roles: roles, Via: "token"}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("auth: -auth.tokens-file: %w", err)
	}
	if len(tokens) == 0 {
		return fmt.Errorf("auth: -auth.tokens-file %s lists no token", path)
	}
	a.tokens.Store(&tokens)
	a.tokStamp = stamp
	return nil
}

// HashToken is the sha256:HEX form of a token for the tokens file.
func HashToken(token string) string {
	s := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(s[:])
}

// Authenticate identifies the holder of a bearer credential: an API token,
// the service token or a JWT. The error never contains the credential.
func (a *Authenticator) Authenticate(ctx context.Context, bearer string) (*Principal, error) {
	if bearer == "" {
		return nil, fmt.Errorf("%w: no credential", ErrUnauthenticated)
	}
	sum := sha256.Sum256([]byte(bearer))
	if subtle.ConstantTimeCompare(sum[:], a.service[:]) == 1 {
		return &Principal{Name: "service", Roles: []Role{RoleService}, Via: "service"}, nil
	}
	a.reloadTokens(ctx)
	if p, ok := (*a.tokens.Load())[sum]; ok {
		return &p, nil
	}
	if a.jwt != nil && strings.Count(bearer, ".") == 2 {
		return a.verifyJWT(ctx, bearer)
	}
	return nil, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
}

package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// newJWTVerifier verifies signature (JWKS file or URL), issuer, audience and
// expiry with go-oidc.
func newJWTVerifier(ctx context.Context, cfg JWTConfig) (*oidc.IDTokenVerifier, error) {
	var ks oidc.KeySet
	if cfg.JWKSFile != "" {
		fks := &fileKeySet{path: cfg.JWKSFile}
		if _, err := fks.keys(); err != nil {
			return nil, err
		}
		ks = fks
	} else {
		ks = oidc.NewRemoteKeySet(context.WithoutCancel(ctx), cfg.JWKSURL)
	}
	var algs []string
	for _, a := range strings.Split(cfg.Algs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			algs = append(algs, a)
		}
	}
	return oidc.NewVerifier(cfg.Issuer, ks, &oidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: algs}), nil
}

// fileKeySet is a JWKS file, re-read when its modification time changes.
type fileKeySet struct {
	path  string
	mu    sync.Mutex
	stamp string
	set   *oidc.StaticKeySet
}

func (f *fileKeySet) keys() (*oidc.StaticKeySet, error) {
	st, err := os.Stat(f.path)
	if err != nil {
		return nil, fmt.Errorf("auth: -auth.jwt.jwks-file: %w", err)
	}
	stamp := fmt.Sprintf("%d:%d", st.Size(), st.ModTime().UnixNano())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set != nil && stamp == f.stamp {
		return f.set, nil
	}
	raw, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("auth: -auth.jwt.jwks-file: %w", err)
	}
	var jwks jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &jwks); err != nil {
		return nil, fmt.Errorf("auth: -auth.jwt.jwks-file %s: %w", f.path, err)
	}
	var pubs []crypto.PublicKey
	for _, k := range jwks.Keys {
		if k.IsPublic() && k.Valid() {
			pubs = append(pubs, k.Key)
		}
	}
	if len(pubs) == 0 {
		return nil, fmt.Errorf("auth: -auth.jwt.jwks-file %s holds no public key", f.path)
	}
	f.set, f.stamp = &oidc.StaticKeySet{PublicKeys: pubs}, stamp
	return f.set, nil
}

func (f *fileKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	set, err := f.keys()
	if err != nil {
		return nil, err
	}
	return set.VerifySignature(ctx, jwt)
}

func (a *Authenticator) verifyJWT(ctx context.Context, raw string) (*Principal, error) {
	tok, err := a.jwt.Verify(ctx, raw)
	if err != nil {
		// go-oidc's errors name the failed check, never the token.
		return nil, fmt.Errorf("%w: JWT: %v", ErrUnauthenticated, err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: JWT claims: %v", ErrUnauthenticated, err)
	}
	var v any = claims
	for _, part := range strings.Split(a.claim, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		v = m[part]
	}
	var names []string
	switch x := v.(type) {
	case string:
		names = strings.FieldsFunc(x, func(r rune) bool { return r == ' ' || r == ',' })
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				names = append(names, s)
			}
		}
	}
	// Roles the mesh does not know (an IdP's own groups) are ignored.
	var roles []Role
	for _, n := range names {
		if r, err := ParseRoles(n); err == nil {
			roles = append(roles, r...)
		}
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("%w: JWT of %q carries no rcamesh role in claim %q", ErrUnauthenticated, tok.Subject, a.claim)
	}
	return &Principal{Name: "jwt:" + tok.Subject, Roles: roles, Via: "jwt"}, nil
}

package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/rcamesh/rcamesh/internal/auth"
)

var meshKey = []byte("test-mesh-key-0123456789abcdef0123456789")

func write(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	readToken  = "read-token-0123456789abcdef"
	steerToken = "steer-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

func tokensFile(t testing.TB) string {
	t.Helper()
	secret := write(t, "steer", steerToken+"\n")
	return write(t, "tokens", "# name roles credential\n"+
		"alice read "+auth.HashToken(readToken)+"\n"+
		"bob read,steer file:"+secret+"\n"+
		"root admin "+auth.HashToken(adminToken)+"\n")
}

func TestTokensFile(t *testing.T) {
	ctx := context.Background()
	a, err := auth.New(ctx, auth.Config{TokensFile: tokensFile(t)}, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Enabled() {
		t.Fatal("a tokens file turns authentication on")
	}
	tests := []struct {
		token string
		name  string
		roles string
	}{
		{readToken, "token:alice", "read"},
		{steerToken, "token:bob", "read,steer"},
		{adminToken, "token:root", "admin"},
		{a.ServiceToken(), "service", "service"},
	}
	for _, tt := range tests {
		p, err := a.Authenticate(ctx, tt.token)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var rs []string
		for _, r := range p.Roles {
			rs = append(rs, string(r))
		}
		if p.Name != tt.name || strings.Join(rs, ",") != tt.roles {
			t.Errorf("token of %s = %s %v", tt.name, p.Name, rs)
		}
	}
	for _, bad := range []string{"", "nope", readToken + "x", auth.HashToken(readToken)} {
		_, err := a.Authenticate(ctx, bad)
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q) = %v, want unauthenticated", bad, err)
		}
		if bad != "" && err != nil && strings.Contains(err.Error(), bad) {
			t.Errorf("the error repeats the credential: %v", err)
		}
	}
	// Another mesh key is another service identity.
	b, _ := auth.New(ctx, auth.Config{}, []byte("another-mesh-key-0123456789abcdef"), nil)
	if _, err := a.Authenticate(ctx, b.ServiceToken()); err == nil {
		t.Error("the service token of another mesh was accepted")
	}
}

func TestTokensFileErrors(t *testing.T) {
	if _, err := auth.New(context.Background(), auth.Config{TokensFile: "/nonexistent"}, meshKey, nil); err == nil || !strings.Contains(err.Error(), "-auth.tokens-file") {
		t.Errorf("a missing tokens file: %v", err)
	}
	for name, content := range map[string]string{
		"two fields":   "alice read\n",
		"bad role":     "alice root " + auth.HashToken(readToken) + "\n",
		"bad hash":     "alice read sha256:abc\n",
		"plain secret": "alice read " + readToken + "\n",
		"dup name":     "a read " + auth.HashToken(readToken) + "\na read " + auth.HashToken(adminToken) + "\n",
		"dup token":    "a read " + auth.HashToken(readToken) + "\nb read " + auth.HashToken(readToken) + "\n",
		"empty":        "# nothing\n",
	} {
		_, err := auth.New(context.Background(), auth.Config{TokensFile: write(t, "tokens", content)}, meshKey, nil)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), readToken) {
			t.Errorf("%s: the error shows a token: %v", name, err)
		}
	}
}

type jwtIssuer struct {
	key  *ecdsa.PrivateKey
	jwks string
}

func newIssuer(t testing.TB) *jwtIssuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}}
	b, _ := json.Marshal(set)
	return &jwtIssuer{key: k, jwks: write(t, "jwks.json", string(b))}
}

func (j *jwtIssuer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: j.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJWT(t *testing.T) {
	ctx := context.Background()
	iss := newIssuer(t)
	cfg := auth.DefaultConfig()
	cfg.JWT.Issuer, cfg.JWT.Audience, cfg.JWT.JWKSFile = "https://idp.example.com", "rcamesh", iss.jwks
	cfg.JWT.RolesClaim = "realm_access.roles"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(ctx, cfg, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := map[string]any{
		"iss": "https://idp.example.com", "aud": "rcamesh", "sub": "carol",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
		"realm_access": map[string]any{"roles": []any{"offline_access", "read", "steer"}},
	}
	p, err := a.Authenticate(ctx, iss.sign(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "jwt:carol" || !p.Has(auth.RoleSteer) || p.Has(auth.RoleIngest) {
		t.Errorf("principal = %+v", p)
	}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	other := newIssuer(t)
	for name, tok := range map[string]string{
		"expired":       iss.sign(t, with("exp", now.Add(-time.Minute).Unix())),
		"wrong issuer":  iss.sign(t, with("iss", "https://evil.example.com")),
		"wrong aud":     iss.sign(t, with("aud", "other")),
		"no role":       iss.sign(t, with("realm_access", map[string]any{"roles": []any{"offline_access"}})),
		"other key":     other.sign(t, good),
		"tampered body": tamper(iss.sign(t, good)),
	} {
		if _, err := a.Authenticate(ctx, tok); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want unauthenticated", name, err)
		}
	}
	// The JWKS file is re-read when it changes: the other issuer's key now verifies.
	time.Sleep(10 * time.Millisecond) // a distinct modification time
	b, _ := os.ReadFile(other.jwks)
	if err := os.WriteFile(iss.jwks, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, other.sign(t, good)); err != nil {
		t.Errorf("after the JWKS rotation: %v", err)
	}
}

func tamper(jwt string) string {
	parts := strings.Split(jwt, ".")
	parts[1] = parts[1][:len(parts[1])-2] + "AA"
	return strings.Join(parts, ".")
}

func TestConfigValidate(t *testing.T) {
	f := write(t, "x", "x")
	for name, mut := range map[string]func(*auth.Config){
		"jwks without issuer": func(c *auth.Config) { c.JWT.JWKSFile = f; c.JWT.Audience = "a" },
		"both jwks": func(c *auth.Config) {
			c.JWT.JWKSFile = f
			c.JWT.JWKSURL = "https://x/jwks"
			c.JWT.Issuer = "i"
			c.JWT.Audience = "a"
		},
		"cors wildcard":    func(c *auth.Config) { c.CORSOrigins = []string{"*"} },
		"cors with path":   func(c *auth.Config) { c.CORSOrigins = []string{"https://x.example.com/app"} },
		"cert without key": func(c *auth.Config) { c.TLS.CertFile = f },
		"mtls without ca":  func(c *auth.Config) { c.TLS.CertFile, c.TLS.KeyFile, c.TLS.RequireClientCert = f, f, true },
		"nats user alone":  func(c *auth.Config) { c.NATS.User = "x" },
	} {
		c := auth.DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	open := auth.DefaultConfig()
	if err := open.CheckExposure(map[string]string{"grpc.addr": "127.0.0.1:9090", "http.addr": "[::1]:8080", "x": "localhost:1"}); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
	err := open.CheckExposure(map[string]string{"grpc.addr": "127.0.0.1:9090", "http.addr": "0.0.0.0:8080"})
	if err == nil || !strings.Contains(err.Error(), "-http.addr 0.0.0.0:8080") || !strings.Contains(err.Error(), "-auth.insecure-open") {
		t.Errorf("open 0.0.0.0: err = %v", err)
	}
	if err := open.CheckExposure(map[string]string{"http.addr": ":8080"}); err == nil {
		t.Error("an empty host (every interface) was accepted")
	}
	open.InsecureOpen = true
	if err := open.CheckExposure(map[string]string{"http.addr": "0.0.0.0:8080"}); err != nil {
		t.Errorf("-auth.insecure-open: %v", err)
	}
	on := auth.Config{TokensFile: "x"}
	if err := on.CheckExposure(map[string]string{"http.addr": "0.0.0.0:8080"}); err != nil {
		t.Errorf("with auth: %v", err)
	}
}

func TestMeshKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d", "mesh.key")
	k1, created, err := auth.EnsureMeshKey(p)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	k2, created, err := auth.EnsureMeshKey(p)
	if err != nil || created || string(k1) != string(k2) {
		t.Fatalf("reload: %v %v", created, err)
	}
	if _, err := auth.LoadMeshKey(write(t, "short", "short")); err == nil {
		t.Error("a short key was accepted")
	}
	if string(auth.Derive(k1, "event-signing/ed25519/v2/tools")) == string(auth.Derive(k1, "service-token/v1")) || auth.NATSPassword(k1, "a") == auth.NATSPassword(k1, "b") {
		t.Error("derived secrets collide")
	}
}

// TestJWTFromJWKSURL verifies JWTs against a JWKS served over HTTP (as an
// OIDC provider's jwks_uri), fetched by go-oidc's remote key set.
func TestJWTFromJWKSURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an HTTP server")
	}
	iss := newIssuer(t)
	jwks, err := os.ReadFile(iss.jwks)
	if err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	defer srv.Close()
	cfg := auth.DefaultConfig()
	cfg.JWT.Issuer, cfg.JWT.Audience, cfg.JWT.JWKSURL = "https://idp.example.com", "rcamesh", srv.URL+"/jwks"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := auth.New(ctx, cfg, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]any{"iss": "https://idp.example.com", "aud": "rcamesh", "sub": "dave", "exp": time.Now().Add(time.Hour).Unix(), "roles": "read steer"}
	p, err := a.Authenticate(ctx, iss.sign(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Has(auth.RoleSteer) || fetched.Load() == 0 {
		t.Errorf("principal %+v, JWKS fetched %d times", p, fetched.Load())
	}
	if _, err := a.Authenticate(ctx, newIssuer(t).sign(t, claims)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("a JWT signed by an unknown key: %v", err)
	}
}

// TestTokensFileReload: editing the tokens file adds and revokes tokens
// without a restart; a file that no longer parses keeps the last good set.
func TestTokensFileReload(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the once-a-second reload check")
	}
	ctx := context.Background()
	path := write(t, "tokens", "alice read "+auth.HashToken(readToken)+"\n")
	a, err := auth.New(ctx, auth.Config{TokensFile: path}, meshKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, readToken); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("root admin "+auth.HashToken(adminToken)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, errOld := a.Authenticate(ctx, readToken)
		_, errNew := a.Authenticate(ctx, adminToken)
		if errOld != nil && errNew == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the edit: revoked token %v, new token %v", errOld, errNew)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte("broken line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the next check
	for i := 0; i < 3; i++ {
		if _, err := a.Authenticate(ctx, adminToken); err != nil {
			t.Fatalf("a broken tokens file revoked the last good tokens: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
	}
}

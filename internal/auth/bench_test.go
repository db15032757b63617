package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/auth"
)

// BenchmarkAuthenticate measures identifying a caller per request.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	iss := newIssuer(b)
	cfg := auth.DefaultConfig()
	cfg.TokensFile = tokensFile(b)
	cfg.JWT.Issuer, cfg.JWT.Audience, cfg.JWT.JWKSFile = "https://idp.example.com", "rcamesh", iss.jwks
	a, err := auth.New(ctx, cfg, meshKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	jwt := iss.sign(b, map[string]any{"iss": "https://idp.example.com", "aud": "rcamesh", "sub": "c",
		"exp": time.Now().Add(time.Hour).Unix(), "roles": []any{"read"}})
	for name, tok := range map[string]string{"token": readToken, "service": a.ServiceToken(), "jwt": jwt} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := a.Authenticate(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

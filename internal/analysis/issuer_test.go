package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Rejected credentials whose issuer could not renew them (a sealed
// secrets store, a broker that failed to refresh) are the issuer's
// failure, a dependency, with the issuer as the entity when its own log
// says so; rejected credentials with no such record stay a setting.
func TestCredentialIssuerDown(t *testing.T) {
	rejected := func(min int) facts.LogLine {
		return errLine(min, "ledger-api-6c7d8e9f0-p1q2r", "ledger-api", `db: FATAL: password authentication failed for user "v-k8s-ledger-9Xy"`)
	}
	cases := []struct {
		name     string
		issuer   *facts.LogLine
		category string
		entity   string
	}{
		{"vault sealed in its own log", &facts.LogLine{Timestamp: at(-20), Namespace: "secrets", Service: "vault", Level: "INFO", Message: "core: vault is sealed; waiting for unseal keys"}, "dependency", "deployment/secrets/vault"},
		{"agent failed to renew", &facts.LogLine{Timestamp: at(-5), Namespace: "shop", Service: "creds-agent", Level: "WARN", Message: "lease renewal for database/creds/ledger failed: 503 Service Unavailable (will retry)"}, "dependency", ""},
		{"no issuer record", nil, "config", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := []facts.LogLine{rejected(1), rejected(3), rejected(5), rejected(7)}
			if tc.issuer != nil {
				lines = append(lines, *tc.issuer)
			}
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
			f := modeFinding(res, ModeCredentials)
			if f == nil {
				t.Fatalf("no credentials finding: %v", modesOf(res.Findings))
			}
			want := map[string]any{"dependency": catDependency, "config": catConfig}[tc.category]
			if f.Category != want {
				t.Fatalf("category %v, want %v (%s)", f.Category, want, f.Statement)
			}
			if tc.entity != "" && f.Entity != tc.entity {
				t.Fatalf("entity %s, want %s", f.Entity, tc.entity)
			}
		})
	}
}

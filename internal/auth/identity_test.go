package auth_test

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/auth"
)

func TestIssuedCredentialsHoldOnlyTheirServices(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	all := []string{"router", "tools", "critic", "brain", "delivery"}
	full, err := auth.IdentityFromMeshKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := auth.IssueCredentials(key, []string{"delivery"}, "rcamesh-delivery", all)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "delivery.cred")
	if err := auth.WriteCredentials(path, c); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), string(key)) {
		t.Fatal("the credentials hold the mesh key")
	}
	id, err := auth.LoadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if id.HasMeshKey() || id.ServiceToken() != full.ServiceToken() {
		t.Errorf("identity: mesh key %v, same service token %v", id.HasMeshKey(), id.ServiceToken() == full.ServiceToken())
	}
	if _, ok := id.SigningKey("tools"); ok {
		t.Error("delivery's credentials hold the tools' signing key")
	}
	dk, ok := id.SigningKey("delivery")
	if !ok {
		t.Fatal("no delivery key")
	}
	msg := []byte("m")
	for _, svc := range all {
		pub, ok := id.PublicKey(svc)
		fpub, _ := full.PublicKey(svc)
		if !ok || !pub.Equal(fpub) {
			t.Errorf("public key of %s: %v, not the mesh's", svc, ok)
		}
		if got := ed25519.Verify(pub, msg, ed25519.Sign(dk, msg)); got != (svc == "delivery") {
			t.Errorf("delivery's signature verifies as %s: %v", svc, got)
		}
	}
	if pw, err := id.NATSPassword("rcamesh-delivery"); err != nil || pw != auth.NATSPassword(key, "rcamesh-delivery") {
		t.Errorf("own NATS password: %v", err)
	}
	if _, err := id.NATSPassword("rcamesh-tools"); err == nil {
		t.Error("delivery's credentials gave the tools' NATS password")
	}

	// A tampered file is refused.
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	seeds := m["signing_seeds"].(map[string]any)
	tc, _ := auth.IssueCredentials(key, []string{"tools"}, "rcamesh-tools", all)
	for name, mutate := range map[string]func(map[string]any){
		"seed of another service": func(m map[string]any) { seeds["delivery"] = tc.SigningSeeds["tools"] },
		"claims the tools' seed":  func(m map[string]any) { seeds["tools"] = seeds["delivery"] },
		"version":                 func(m map[string]any) { m["version"] = 2 },
		"unknown field":           func(m map[string]any) { m["mesh_key"] = "x" },
		"short password":          func(m map[string]any) { m["nats_password"] = "x" },
	} {
		var cp map[string]any
		_ = json.Unmarshal(raw, &cp)
		seeds = cp["signing_seeds"].(map[string]any)
		mutate(cp)
		b, _ := json.Marshal(cp)
		p := filepath.Join(t.TempDir(), "c")
		_ = os.WriteFile(p, b, 0o600)
		if _, err := auth.LoadCredentials(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

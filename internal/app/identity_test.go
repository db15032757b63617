package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/auth"
)

func TestIdentityFromConfig(t *testing.T) {
	dir := t.TempDir()
	key := []byte("0123456789abcdef0123456789abcdef")
	keyFile := filepath.Join(dir, "mesh.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := auth.IssueCredentials(key, []string{"tools"}, "rcamesh-tools", []string{"tools", "brain"})
	if err != nil {
		t.Fatal(err)
	}
	cred := filepath.Join(dir, "tools.cred")
	if err := auth.WriteCredentials(cred, c); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		keyFile, credFile string
		natsURL           string
		wantErr           string
		wantMeshKey       bool
	}{
		{name: "embedded NATS creates a key", wantMeshKey: true},
		{name: "split with the mesh key", keyFile: keyFile, natsURL: "nats://x:4222", wantMeshKey: true},
		{name: "split with credentials", credFile: cred, natsURL: "nats://x:4222"},
		{name: "split with neither", natsURL: "nats://x:4222", wantErr: "-mesh.credentials-file is required"},
		{name: "both", keyFile: keyFile, credFile: cred, natsURL: "nats://x:4222", wantErr: "not both"},
		{name: "credentials with the embedded NATS", credFile: cred, wantErr: "needs -nats.url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.NATSURL = tc.natsURL
			cfg.Auth.MeshKeyFile, cfg.Auth.CredentialsFile = tc.keyFile, tc.credFile
			id, err := cfg.Identity()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.HasMeshKey() != tc.wantMeshKey {
				t.Errorf("HasMeshKey = %v", id.HasMeshKey())
			}
			if _, ok := id.SigningKey("tools"); !ok {
				t.Error("no tools signing key")
			}
			if _, ok := id.SigningKey("delivery"); ok == (tc.credFile != "") {
				t.Errorf("delivery signing key held: %v", ok)
			}
		})
	}
}

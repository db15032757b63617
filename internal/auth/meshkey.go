package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MinMeshKeyBytes is the shortest mesh key accepted.
const MinMeshKeyBytes = 32

// LoadMeshKey reads a mesh key file (surrounding white space ignored).
func LoadMeshKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: mesh key: %w", err)
	}
	k := []byte(strings.TrimSpace(string(b)))
	if len(k) < MinMeshKeyBytes {
		return nil, fmt.Errorf("auth: mesh key file %s holds %d bytes, want at least %d (e.g. openssl rand -hex 32)", path, len(k), MinMeshKeyBytes)
	}
	return k, nil
}

// EnsureMeshKey loads path, creating it (mode 0600, 32 random bytes as hex)
// when it does not exist. created reports a new key.
func EnsureMeshKey(path string) (key []byte, created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		k, err := LoadMeshKey(path)
		return k, false, err
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	k := []byte(hex.EncodeToString(raw))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another process won the race
			k, err := LoadMeshKey(path)
			return k, false, err
		}
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	if _, err := f.Write(append(k, '\n')); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, fmt.Errorf("auth: mesh key: %w", err)
	}
	return k, true, nil
}

// Derive is HMAC-SHA256(key, "rcamesh/"+purpose): independent secrets for
// independent purposes, so that leaking one reveals neither the others nor
// the mesh key.
func Derive(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("rcamesh/" + purpose))
	return m.Sum(nil)
}

// ServiceToken is the bearer token of the mesh's own processes (role service).
func ServiceToken(key []byte) string {
	return "rcm_svc_" + hex.EncodeToString(Derive(key, "service-token/v1"))
}

// NATSPassword is the NATS password of a service user of the mesh.
func NATSPassword(key []byte, user string) string {
	return hex.EncodeToString(Derive(key, "nats/"+user))
}

package auth

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Identity is what one process of the mesh holds: the service token, the
// NATS password of its user, a private signing key per service it runs and
// the public keys of every service (to check what the others sign).
//
// A process holding the mesh key holds everything (every service's
// signing key and NATS password derive from it): -target=all, and the
// process running the embedded NATS, which must know every user. A split
// process may instead hold only the credentials issued for its own
// services (IssueCredentials, `rcamesh mesh-credentials`): then it can sign
// as those services only and connect as its own NATS user only, so a
// compromised delivery process can neither sign a tool's pin nor publish
// one.
type Identity struct {
	meshKey      []byte // nil when loaded from credentials
	serviceToken string
	signing      map[string]ed25519.PrivateKey // credentials: the services issued
	public       map[string]ed25519.PublicKey  // credentials: every service
	natsUser     string                        // credentials: the one NATS user
	natsPassword string
	mu           sync.Mutex
	derived      map[string]ed25519.PrivateKey // mesh key: derived once (bounded)
}

// IdentityFromMeshKey is the identity of a process holding the mesh key.
func IdentityFromMeshKey(key []byte) (*Identity, error) {
	if len(key) < MinMeshKeyBytes {
		return nil, errors.New("auth: the mesh key is missing or too short")
	}
	return &Identity{meshKey: key, serviceToken: ServiceToken(key)}, nil
}

// signingKeyOf derives the Ed25519 key a service signs its events with.
func signingKeyOf(meshKey []byte, service string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(Derive(meshKey, "event-signing/ed25519/v2/"+service))
}

// derivedKey is service's key from the mesh key, derived once.
func (id *Identity) derivedKey(service string) ed25519.PrivateKey {
	id.mu.Lock()
	defer id.mu.Unlock()
	if k, ok := id.derived[service]; ok {
		return k
	}
	k := signingKeyOf(id.meshKey, service)
	if id.derived == nil {
		id.derived = map[string]ed25519.PrivateKey{}
	}
	if len(id.derived) < 64 { // the mesh's services; a name from outside is not kept
		id.derived[service] = k
	}
	return k
}

// HasMeshKey reports whether the identity holds the mesh key (and so every
// service's secrets).
func (id *Identity) HasMeshKey() bool { return id.meshKey != nil }

// ServiceToken is the bearer token of the mesh's own processes.
func (id *Identity) ServiceToken() string { return id.serviceToken }

// SigningKey is the private key service signs with, when this process holds it.
func (id *Identity) SigningKey(service string) (ed25519.PrivateKey, bool) {
	if id.meshKey != nil {
		return id.derivedKey(service), service != ""
	}
	k, ok := id.signing[service]
	return k, ok
}

// PublicKey is the key that checks service's signatures.
func (id *Identity) PublicKey(service string) (ed25519.PublicKey, bool) {
	if id.meshKey != nil {
		return id.derivedKey(service).Public().(ed25519.PublicKey), service != ""
	}
	k, ok := id.public[service]
	return k, ok
}

// NATSPassword is the password of NATS user, when this process may know it.
func (id *Identity) NATSPassword(user string) (string, error) {
	if id.meshKey != nil {
		return NATSPassword(id.meshKey, user), nil
	}
	if user != id.natsUser {
		return "", fmt.Errorf("auth: the credentials were issued for NATS user %s, not %s", id.natsUser, user)
	}
	return id.natsPassword, nil
}

// NATSUser is the NATS user the credentials were issued for ("" with the mesh key).
func (id *Identity) NATSUser() string { return id.natsUser }

// Credentials is the file a split process holds instead of the mesh key.
type Credentials struct {
	Version      int               `json:"version"`
	Services     []string          `json:"services"`
	ServiceToken string            `json:"service_token"`
	NATSUser     string            `json:"nats_user"`
	NATSPassword string            `json:"nats_password"`
	SigningSeeds map[string]string `json:"signing_seeds"` // service -> hex Ed25519 seed
	PublicKeys   map[string]string `json:"public_keys"`   // service -> hex Ed25519 public key
}

// IssueCredentials are the credentials of a process running services
// (natsUser its NATS user), with the public keys of every one of signers.
func IssueCredentials(meshKey []byte, services []string, natsUser string, signers []string) (Credentials, error) {
	if len(meshKey) < MinMeshKeyBytes {
		return Credentials{}, errors.New("auth: the mesh key is missing or too short")
	}
	if len(services) == 0 || natsUser == "" {
		return Credentials{}, errors.New("auth: credentials need services and a NATS user")
	}
	c := Credentials{
		Version: 1, Services: slices.Clone(services), ServiceToken: ServiceToken(meshKey),
		NATSUser: natsUser, NATSPassword: NATSPassword(meshKey, natsUser),
		SigningSeeds: map[string]string{}, PublicKeys: map[string]string{},
	}
	sort.Strings(c.Services)
	for _, s := range services {
		c.SigningSeeds[s] = hex.EncodeToString(signingKeyOf(meshKey, s).Seed())
	}
	for _, s := range append(slices.Clone(signers), services...) {
		c.PublicKeys[s] = hex.EncodeToString(signingKeyOf(meshKey, s).Public().(ed25519.PublicKey))
	}
	return c, nil
}

// WriteCredentials writes c to path, mode 0600.
func WriteCredentials(path string, c Credentials) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: credentials: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("auth: credentials: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("auth: credentials: %w", err)
	}
	return f.Close()
}

// LoadCredentials reads a credentials file into an identity. Every field
// is checked: a seed must give the public key listed for its service.
func LoadCredentials(path string) (*Identity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: credentials: %w", err)
	}
	var c Credentials
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("auth: credentials file %s: %w", path, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("auth: credentials file %s: "+format, append([]any{path}, a...)...)
	}
	switch {
	case c.Version != 1:
		return nil, bad("version %d, want 1", c.Version)
	case !strings.HasPrefix(c.ServiceToken, "rcm_svc_"):
		return nil, bad("no service token")
	case c.NATSUser == "" || len(c.NATSPassword) < 16:
		return nil, bad("no NATS user and password")
	case len(c.SigningSeeds) == 0:
		return nil, bad("no signing key")
	}
	id := &Identity{serviceToken: c.ServiceToken, natsUser: c.NATSUser, natsPassword: c.NATSPassword,
		signing: map[string]ed25519.PrivateKey{}, public: map[string]ed25519.PublicKey{}}
	for s, h := range c.PublicKeys {
		k, err := hex.DecodeString(h)
		if err != nil || len(k) != ed25519.PublicKeySize {
			return nil, bad("public key of %s is not %d hex bytes", s, ed25519.PublicKeySize)
		}
		id.public[s] = k
	}
	for s, h := range c.SigningSeeds {
		seed, err := hex.DecodeString(h)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, bad("signing key of %s is not %d hex bytes", s, ed25519.SeedSize)
		}
		k := ed25519.NewKeyFromSeed(seed)
		if pub, ok := id.public[s]; !ok || !pub.Equal(k.Public()) {
			return nil, bad("the signing key of %s does not match its public key", s)
		}
		id.signing[s] = k
	}
	return id, nil
}

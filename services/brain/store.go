package brain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/rcamesh/rcamesh/internal/bus"
)

// Store errors.
var (
	errNotFound = errors.New("not found")
	errExists   = errors.New("already exists")
	errConflict = errors.New("revision conflict")
	// errFenced: the investigation's checkpoint moved on under another brain
	// replica; this one must stop working on it.
	errFenced = errors.New("another brain replica took the investigation over")
)

// kv is the small key-value surface the brain keeps its state in: a JetStream
// KV bucket in production, a map when the service runs without a bus.
type kv interface {
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	Put(ctx context.Context, key string, val []byte) (uint64, error)
	Create(ctx context.Context, key string, val []byte) (uint64, error)
	Update(ctx context.Context, key string, val []byte, rev uint64) (uint64, error)
	Delete(ctx context.Context, key string) error
	Keys(ctx context.Context) ([]string, error)
}

// kvKey maps any id onto the KV key alphabet ([-/_=.a-zA-Z0-9]); ids that
// needed escaping get a hash suffix so two ids never share a key.
func kvKey(id string) string {
	if id == "" {
		return "_"
	}
	var b strings.Builder
	changed := false
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '=':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	if !changed {
		return b.String()
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + "=" + hex.EncodeToString(sum[:6])
}

// ---- JetStream KV ----

type jsKV struct{ kv jetstream.KeyValue }

func (j jsKV) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	e, err := j.kv.Get(ctx, kvKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, errNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kv get %s: %w", key, err)
	}
	return e.Value(), e.Revision(), nil
}

func (j jsKV) Put(ctx context.Context, key string, val []byte) (uint64, error) {
	rev, err := j.kv.Put(ctx, kvKey(key), val)
	if err != nil {
		return 0, fmt.Errorf("kv put %s: %w", key, err)
	}
	return rev, nil
}

func (j jsKV) Create(ctx context.Context, key string, val []byte) (uint64, error) {
	rev, err := j.kv.Create(ctx, kvKey(key), val)
	if bus.IsConflict(err) {
		return 0, errExists
	}
	if err != nil {
		return 0, fmt.Errorf("kv create %s: %w", key, err)
	}
	return rev, nil
}

func (j jsKV) Update(ctx context.Context, key string, val []byte, rev uint64) (uint64, error) {
	nrev, err := j.kv.Update(ctx, kvKey(key), val, rev)
	if bus.IsConflict(err) {
		return 0, errConflict
	}
	if err != nil {
		return 0, fmt.Errorf("kv update %s: %w", key, err)
	}
	return nrev, nil
}

func (j jsKV) Delete(ctx context.Context, key string) error {
	if err := j.kv.Delete(ctx, kvKey(key)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("kv delete %s: %w", key, err)
	}
	return nil
}

func (j jsKV) Keys(ctx context.Context) ([]string, error) {
	lister, err := j.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("kv keys: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	return out, nil
}

// ---- in-memory KV (no bus) ----

type memKV struct {
	mu   sync.Mutex
	rev  uint64
	data map[string]memEntry
}

type memEntry struct {
	val []byte
	rev uint64
}

func newMemKV() *memKV { return &memKV{data: map[string]memEntry{}} }

func (m *memKV) Get(_ context.Context, key string) ([]byte, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.data[kvKey(key)]
	if !ok {
		return nil, 0, errNotFound
	}
	return append([]byte(nil), e.val...), e.rev, nil
}

func (m *memKV) Put(_ context.Context, key string, val []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rev++
	m.data[kvKey(key)] = memEntry{append([]byte(nil), val...), m.rev}
	return m.rev, nil
}

func (m *memKV) Create(_ context.Context, key string, val []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.data[kvKey(key)]; ok {
		return 0, errExists
	}
	m.rev++
	m.data[kvKey(key)] = memEntry{append([]byte(nil), val...), m.rev}
	return m.rev, nil
}

func (m *memKV) Update(_ context.Context, key string, val []byte, rev uint64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.data[kvKey(key)]
	if !ok || e.rev != rev {
		return 0, errConflict
	}
	m.rev++
	m.data[kvKey(key)] = memEntry{append([]byte(nil), val...), m.rev}
	return m.rev, nil
}

func (m *memKV) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, kvKey(key))
	return nil
}

func (m *memKV) Keys(_ context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.data))
	for k := range m.data {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

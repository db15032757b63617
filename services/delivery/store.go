package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

// errNoReport is returned when a session has no stored report.
var errNoReport = errors.New("no report for session")

// reportKey maps a session id to a valid KV key (any id, reversibly).
func reportKey(session string) string {
	return "s_" + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// fingerprintKey is the claim key of an alert fingerprint in
// BucketPageClaims (delivery's own bucket: the intake's BucketFingerprints
// has the brain as its only writer).
func fingerprintKey(fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return "delivery_" + hex.EncodeToString(sum[:20])
}

// fingerprintOf returns the alert's fingerprint, or a stable one built from
// the alert's identity (name and scope, never its wording) when none is set.
func fingerprintOf(a *investigationv1.Alert) string {
	if a == nil {
		return ""
	}
	if fp := strings.TrimSpace(a.GetFingerprint()); fp != "" {
		return fp
	}
	parts := []string{a.GetAlertName(), a.GetCluster(), a.GetNamespace(), a.GetService(), a.GetResourceKind(), a.GetResourceName()}
	if strings.Join(parts, "") == "" {
		return ""
	}
	for i := range parts {
		parts[i] = strings.ToLower(strings.TrimSpace(parts[i]))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "derived:" + hex.EncodeToString(sum[:12])
}

type claimRecord struct {
	Session string `json:"session_id"`
	At      int64  `json:"at_unix_nano"`
}

// store keeps reports and fingerprint claims in JetStream KV, or in memory
// when no bus is configured.
type store struct {
	bus *bus.Bus
	mu  sync.Mutex
	rep map[string][]byte
	fp  map[string]claimRecord
}

func newStore(b *bus.Bus) *store {
	return &store{bus: b, rep: map[string][]byte{}, fp: map[string]claimRecord{}}
}

func (st *store) putReport(ctx context.Context, r *investigationv1.Report) error {
	data, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("delivery: encode report: %w", err)
	}
	if st.bus == nil {
		st.mu.Lock()
		st.rep[r.GetSessionId()] = data
		st.mu.Unlock()
		return nil
	}
	kv, err := st.bus.KV(ctx, bus.BucketReports)
	if err != nil {
		return fmt.Errorf("delivery: reports bucket: %w", err)
	}
	if _, err := kv.Put(ctx, reportKey(r.GetSessionId()), data); err != nil {
		return fmt.Errorf("delivery: store report: %w", err)
	}
	return nil
}

func (st *store) getReport(ctx context.Context, session string) (*investigationv1.Report, error) {
	var data []byte
	if st.bus == nil {
		st.mu.Lock()
		data = st.rep[session]
		st.mu.Unlock()
		if data == nil {
			return nil, errNoReport
		}
	} else {
		kv, err := st.bus.KV(ctx, bus.BucketReports)
		if err != nil {
			return nil, fmt.Errorf("delivery: reports bucket: %w", err)
		}
		e, err := kv.Get(ctx, reportKey(session))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, errNoReport
		}
		if err != nil {
			return nil, fmt.Errorf("delivery: read report: %w", err)
		}
		data = e.Value()
	}
	r := &investigationv1.Report{}
	if err := proto.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("delivery: decode report: %w", err)
	}
	return r, nil
}

func (st *store) listReports(ctx context.Context, limit int) ([]*investigationv1.Report, error) {
	var blobs [][]byte
	if st.bus == nil {
		st.mu.Lock()
		for _, d := range st.rep {
			blobs = append(blobs, d)
		}
		st.mu.Unlock()
	} else {
		kv, err := st.bus.KV(ctx, bus.BucketReports)
		if err != nil {
			return nil, fmt.Errorf("delivery: reports bucket: %w", err)
		}
		entries, err := kvEntries(ctx, kv)
		if err != nil {
			return nil, fmt.Errorf("delivery: list reports: %w", err)
		}
		for _, e := range entries {
			blobs = append(blobs, e.Value())
		}
	}
	out := make([]*investigationv1.Report, 0, len(blobs))
	for _, d := range blobs {
		r := &investigationv1.Report{}
		if err := proto.Unmarshal(d, r); err != nil {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := out[i].GetCreatedAt().AsTime(), out[j].GetCreatedAt().AsTime()
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return out[i].GetSessionId() < out[j].GetSessionId()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// claim records that session pages fingerprint fp. It returns false and the
// claiming session when fp was already paged within window.
func (st *store) claim(ctx context.Context, fp, session string, now time.Time, window time.Duration) (bool, string, error) {
	if fp == "" || window <= 0 {
		return true, "", nil
	}
	rec := claimRecord{Session: session, At: now.UnixNano()}
	val, _ := json.Marshal(rec)
	fresh := func(c claimRecord) bool { return now.Sub(time.Unix(0, c.At)) < window }
	if st.bus == nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		if c, ok := st.fp[fp]; ok && fresh(c) {
			return false, c.Session, nil
		}
		st.fp[fp] = rec
		return true, "", nil
	}
	kv, err := st.bus.KV(ctx, bus.BucketPageClaims)
	if err != nil {
		return false, "", fmt.Errorf("delivery: page claims bucket: %w", err)
	}
	key := fingerprintKey(fp)
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if _, err := kv.Create(ctx, key, val); err != nil {
			if bus.IsConflict(err) {
				return false, "", nil // another delivery claimed it first
			}
			return false, "", fmt.Errorf("delivery: claim fingerprint: %w", err)
		}
		return true, "", nil
	case err != nil:
		return false, "", fmt.Errorf("delivery: read fingerprint: %w", err)
	}
	var prev claimRecord
	if json.Unmarshal(e.Value(), &prev) == nil && fresh(prev) {
		return false, prev.Session, nil
	}
	if _, err := kv.Update(ctx, key, val, e.Revision()); err != nil {
		return false, "", nil // lost a race with another claim
	}
	return true, "", nil
}

// release drops session's claim on fp (nothing was delivered), so that a
// retry may page.
func (st *store) release(ctx context.Context, fp, session string) error {
	if fp == "" {
		return nil
	}
	if st.bus == nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		if c, ok := st.fp[fp]; ok && c.Session == session {
			delete(st.fp, fp)
		}
		return nil
	}
	kv, err := st.bus.KV(ctx, bus.BucketPageClaims)
	if err != nil {
		return fmt.Errorf("delivery: page claims bucket: %w", err)
	}
	key := fingerprintKey(fp)
	e, err := kv.Get(ctx, key)
	if err != nil {
		return nil
	}
	var c claimRecord
	if json.Unmarshal(e.Value(), &c) == nil && c.Session == session {
		if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
			return fmt.Errorf("delivery: release fingerprint: %w", err)
		}
	}
	return nil
}

// kvEntries reads every live entry of a bucket (keys deleted meanwhile are skipped).
func kvEntries(ctx context.Context, kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) {
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	_ = lister.Stop()
	out := make([]jetstream.KeyValueEntry, 0, len(keys))
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

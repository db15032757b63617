package brain

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
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

// store returns the state store, opening the KV buckets on first use.
func (s *Service) store(ctx context.Context) (*stateStore, error) {
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	if s.st != nil {
		return s.st, nil
	}
	open := func(bucket string) (kv, error) {
		b, err := s.bus.KV(ctx, bucket)
		if err != nil {
			return nil, fmt.Errorf("brain: open %s: %w", bucket, err)
		}
		return jsKV{b}, nil
	}
	sess, err := open(bus.BucketSessions)
	if err != nil {
		return nil, err
	}
	recs, err := open(bus.BucketRecords)
	if err != nil {
		return nil, err
	}
	fps, err := open(bus.BucketFingerprints)
	if err != nil {
		return nil, err
	}
	openIdx, err := open(bus.BucketOpen)
	if err != nil {
		return nil, err
	}
	s.st = &stateStore{sessions: sess, records: recs, fingerprints: fps, open: openIdx}
	return s.st, nil
}

func (s *Service) notifyChanged() {
	s.chMu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.chMu.Unlock()
}

func (s *Service) changedCh() <-chan struct{} {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	return s.changed
}

// checkpoint saves the investigation state.
func (s *Service) checkpoint(ctx context.Context, st *invState) error {
	store, err := s.store(ctx)
	if err != nil {
		return err
	}
	st.rec.WallMs = st.wallMs(s.now())
	st.savedAt = s.now()
	// A checkpoint must survive the caller's cancellation (a crash mid-write is
	// what redelivery handles, a cancelled context is not a crash).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := store.saveState(wctx, st); err != nil {
		return err
	}
	s.notifyChanged()
	return nil
}

// waitFinal blocks until the investigation reaches a final state.
func (s *Service) waitFinal(ctx context.Context, invID string) (*invState, error) {
	store, err := s.store(ctx)
	if err != nil {
		return nil, err
	}
	poll := time.NewTicker(250 * time.Millisecond) // other brain processes: poll the KV
	defer poll.Stop()
	for {
		ch := s.changedCh()
		st, err := store.loadState(ctx, invID)
		if err != nil && !errors.Is(err, errNotFound) {
			return nil, err
		}
		if err == nil && isFinal(st.rec.GetState()) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		case <-poll.C:
		}
	}
}

func isFinal(state string) bool {
	return state == stateCompleted || state == stateNoise || state == stateFailed
}

// checkpoint is the stored form of invState (BucketRecords, key = investigation id).
type checkpoint struct {
	Record  json.RawMessage   `json:"record"`
	Context json.RawMessage   `json:"context,omitempty"`
	Pins    []json.RawMessage `json:"pins,omitempty"`
	Done    []string          `json:"done,omitempty"`
	Loop    loopState         `json:"loop"`
	Report  string            `json:"report,omitempty"`
	Silent  bool              `json:"silent,omitempty"`
	Review  json.RawMessage   `json:"review,omitempty"`
	// SavedAt is when the checkpoint was written (the sweeper's clock).
	SavedAt time.Time `json:"saved_at,omitzero"`
	// Writer is a token of the replica's run that wrote it: two runs that
	// save the same state still write different records, so a writer can
	// tell its own write from another's after a revision conflict.
	Writer string `json:"writer,omitempty"`
}

// maxCheckpointPinBytes bounds the pins stored in a checkpoint; above it raw
// outputs are dropped (the full pins stay on the event stream).
const maxCheckpointPinBytes = 600 << 10

var pj = protojson.MarshalOptions{UseProtoNames: true}

var pu = protojson.UnmarshalOptions{DiscardUnknown: true}

func (st *invState) marshal() ([]byte, error) {
	rec, err := pj.Marshal(st.rec)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	cp := checkpoint{Record: rec, Loop: st.loop, Report: st.report, Silent: st.silent, SavedAt: st.savedAt, Writer: st.writer}
	if st.rc != nil {
		if cp.Context, err = pj.Marshal(st.rc); err != nil {
			return nil, fmt.Errorf("encode context: %w", err)
		}
	}
	if st.review != nil {
		if cp.Review, err = pj.Marshal(st.review); err != nil {
			return nil, fmt.Errorf("encode review: %w", err)
		}
	}
	for _, s := range pipelineStages {
		if st.done[s] {
			cp.Done = append(cp.Done, s)
		}
	}
	total := 0
	for _, p := range st.pins {
		b, err := pj.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode pin %s: %w", p.GetId(), err)
		}
		total += len(b)
		cp.Pins = append(cp.Pins, b)
	}
	// Over the size cap, keep leaner copies (the full pins stay on the event
	// stream, which a resumed investigation re-reads): first cut raw outputs,
	// then drop raw outputs and facts altogether.
	for level := 1; total > maxCheckpointPinBytes && level <= 2; level++ {
		cp.Pins, total = cp.Pins[:0], 0
		for _, p := range st.pins {
			lean := proto.CloneOf(p)
			lean.RawOutput = truncateRunes(lean.RawOutput, 2000)
			if level == 2 {
				lean.RawOutput, lean.Metadata = "", nil
			}
			b, err := pj.Marshal(lean)
			if err != nil {
				return nil, fmt.Errorf("encode pin %s: %w", p.GetId(), err)
			}
			total += len(b)
			cp.Pins = append(cp.Pins, b)
		}
	}
	return json.Marshal(cp)
}

func unmarshalState(data []byte) (*invState, error) {
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("decode checkpoint: %w", err)
	}
	st := &invState{rec: &investigationv1.InvestigationRecord{}, done: map[string]bool{}, loop: cp.Loop, report: cp.Report, silent: cp.Silent, savedAt: cp.SavedAt}
	if err := pu.Unmarshal(cp.Record, st.rec); err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	if len(cp.Context) > 0 {
		st.rc = &evidencev1.RouterContext{}
		if err := pu.Unmarshal(cp.Context, st.rc); err != nil {
			return nil, fmt.Errorf("decode context: %w", err)
		}
	}
	if len(cp.Review) > 0 {
		st.review = &investigationv1.CriticReview{}
		if err := pu.Unmarshal(cp.Review, st.review); err != nil {
			return nil, fmt.Errorf("decode review: %w", err)
		}
	}
	for _, s := range cp.Done {
		st.done[s] = true
	}
	for _, b := range cp.Pins {
		p := &evidencev1.EvidencePin{}
		if err := pu.Unmarshal(b, p); err != nil {
			return nil, fmt.Errorf("decode pin: %w", err)
		}
		st.addPin(p)
	}
	st.baseWallMs = st.rec.GetWallMs()
	return st, nil
}

type stateStore struct {
	sessions, records, fingerprints, open kv
}

func (s *stateStore) loadState(ctx context.Context, invID string) (*invState, error) {
	data, rev, err := s.records.Get(ctx, invID)
	if err != nil {
		return nil, err
	}
	st, err := unmarshalState(data)
	if err != nil {
		return nil, fmt.Errorf("investigation %s: %w", invID, err)
	}
	st.rev = rev
	return st, nil
}

func (s *stateStore) saveState(ctx context.Context, st *invState) error {
	// A state loaded from the store is written back only over the revision
	// it was loaded at: when another brain replica took the investigation
	// over meanwhile (its work item was redelivered after this replica
	// stopped acknowledging progress), this replica is fenced off.
	if st.writer == "" {
		var tok [8]byte
		_, _ = rand.Read(tok[:]) // crypto/rand.Read never fails
		st.writer = hex.EncodeToString(tok[:])
	}
	data, err := st.marshal()
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", st.rec.GetInvestigationId(), err)
	}
	var rev uint64
	if st.rev == 0 {
		rev, err = s.records.Put(ctx, st.rec.GetInvestigationId(), data)
	} else {
		rev, err = s.records.Update(ctx, st.rec.GetInvestigationId(), data, st.rev)
		if errors.Is(err, errConflict) {
			rev, err = s.ownWrite(ctx, st.rec.GetInvestigationId(), data)
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", st.rec.GetInvestigationId(), err)
	}
	st.rev = rev
	return nil
}

// ownWrite settles a revision conflict of a checkpoint: when the stored
// record is byte for byte the one this replica wrote (the write landed but
// its acknowledgement was lost, say to a NATS node that went down, and the
// client's retry met its own revision), it is this replica's write and its
// revision is returned; otherwise another replica wrote it (errFenced).
func (s *stateStore) ownWrite(ctx context.Context, invID string, data []byte) (uint64, error) {
	stored, rev, err := s.records.Get(ctx, invID)
	if err != nil {
		return 0, fmt.Errorf("after a revision conflict: %w", err)
	}
	if bytes.Equal(stored, data) {
		return rev, nil
	}
	return 0, errFenced
}

// sessionEntry is a session's stored state (BucketSessions, key = session id).
type sessionEntry = brainv1.GetSessionResponse

func (s *stateStore) getSession(ctx context.Context, id string) (*sessionEntry, uint64, error) {
	data, rev, err := s.sessions.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	e := &sessionEntry{}
	if err := pu.Unmarshal(data, e); err != nil {
		return nil, 0, fmt.Errorf("decode session %s: %w", id, err)
	}
	return e, rev, nil
}

// updateSession applies fn to the session (creating it from init when absent)
// with optimistic concurrency.
func (s *stateStore) updateSession(ctx context.Context, id string, init func() *sessionEntry, fn func(*sessionEntry)) (*sessionEntry, error) {
	for attempt := 0; attempt < 50; attempt++ {
		e, rev, err := s.getSession(ctx, id)
		switch {
		case errors.Is(err, errNotFound):
			if init == nil {
				return nil, fmt.Errorf("session %s: %w", id, errNotFound)
			}
			e = init()
			fn(e)
			e.Session.UpdatedAt = timestamppb.Now()
			data, merr := pj.Marshal(e)
			if merr != nil {
				return nil, fmt.Errorf("encode session %s: %w", id, merr)
			}
			if _, cerr := s.sessions.Create(ctx, id, data); errors.Is(cerr, errExists) {
				continue
			} else if cerr != nil {
				return nil, cerr
			}
			return e, nil
		case err != nil:
			return nil, err
		}
		fn(e)
		if e.Session == nil {
			e.Session = &brainv1.SessionSummary{SessionId: id}
		}
		e.Session.UpdatedAt = timestamppb.Now()
		data, merr := pj.Marshal(e)
		if merr != nil {
			return nil, fmt.Errorf("encode session %s: %w", id, merr)
		}
		if _, uerr := s.sessions.Update(ctx, id, data, rev); errors.Is(uerr, errConflict) {
			continue
		} else if uerr != nil {
			return nil, uerr
		}
		return e, nil
	}
	return nil, fmt.Errorf("session %s: too many concurrent updates", id)
}

func (s *stateStore) listSessions(ctx context.Context) ([]*sessionEntry, error) {
	keys, err := s.sessions.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*sessionEntry, 0, len(keys))
	for _, k := range keys {
		data, _, err := s.sessions.Get(ctx, k)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e := &sessionEntry{}
		if err := pu.Unmarshal(data, e); err != nil {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].GetSession().GetCreatedAt().AsTime().After(out[j].GetSession().GetCreatedAt().AsTime())
	})
	return out, nil
}

// fpEntry is a fingerprint's dedup state (BucketFingerprints, key = fingerprint).
type fpEntry struct {
	SessionID       string    `json:"session_id"`
	InvestigationID string    `json:"investigation_id"`
	FirstSeen       time.Time `json:"first_seen"`
	LastSeen        time.Time `json:"last_seen"`
	Count           int       `json:"count"`
	// FailedAt is set when the investigation failed; the entry then holds
	// alerts only for the failed-dedup window from that moment.
	FailedAt time.Time `json:"failed_at,omitzero"`
	// Generation counts the investigations of this fingerprint opened in
	// the same dedup window (after failures), so each gets its own id.
	Generation int `json:"generation,omitempty"`
}

// open says whether the entry still takes alerts at now.
func (e fpEntry) open(now time.Time, window, failedWindow time.Duration) bool {
	if !e.FailedAt.IsZero() {
		return now.Sub(e.FailedAt) < min(window, failedWindow)
	}
	return now.Sub(e.FirstSeen) < window
}

// claimResult says whether a fingerprint was claimed for a new investigation
// or attached to an existing one.
type claimResult struct {
	entry    fpEntry
	attached bool
}

// claimFingerprint atomically either claims fp for the entry fresh builds
// (from the previous entry, nil when there is none) or, when an
// investigation of fp is still open (opened within window, or failed less
// than failedWindow ago), attaches to it.
func (s *stateStore) claimFingerprint(ctx context.Context, fp string, now time.Time, window, failedWindow time.Duration, fresh func(prev *fpEntry) fpEntry) (claimResult, error) {
	for attempt := 0; attempt < 50; attempt++ {
		data, rev, err := s.fingerprints.Get(ctx, fp)
		if errors.Is(err, errNotFound) {
			e := fresh(nil)
			b, _ := json.Marshal(e)
			if _, cerr := s.fingerprints.Create(ctx, fp, b); errors.Is(cerr, errExists) {
				continue
			} else if cerr != nil {
				return claimResult{}, cerr
			}
			return claimResult{entry: e}, nil
		}
		if err != nil {
			return claimResult{}, err
		}
		var e fpEntry
		if jerr := json.Unmarshal(data, &e); jerr != nil || !e.open(now, window, failedWindow) {
			// Expired, failed (or unreadable): a new incident of the same identity.
			var prev *fpEntry
			if jerr == nil {
				prev = &e
			}
			ne := fresh(prev)
			b, _ := json.Marshal(ne)
			if _, uerr := s.fingerprints.Update(ctx, fp, b, rev); errors.Is(uerr, errConflict) {
				continue
			} else if uerr != nil {
				return claimResult{}, uerr
			}
			return claimResult{entry: ne}, nil
		}
		e.Count++
		e.LastSeen = now
		b, _ := json.Marshal(e)
		if _, uerr := s.fingerprints.Update(ctx, fp, b, rev); errors.Is(uerr, errConflict) {
			continue
		} else if uerr != nil {
			return claimResult{}, uerr
		}
		return claimResult{entry: e, attached: true}, nil
	}
	return claimResult{}, fmt.Errorf("fingerprint %s: too many concurrent updates", fp)
}

// markFailed records that fp's investigation invID failed at now (only when
// the entry still names it: a newer investigation keeps its entry).
func (s *stateStore) markFailed(ctx context.Context, fp, invID string, now time.Time) error {
	for attempt := 0; attempt < 50; attempt++ {
		data, rev, err := s.fingerprints.Get(ctx, fp)
		if errors.Is(err, errNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var e fpEntry
		if err := json.Unmarshal(data, &e); err != nil || e.InvestigationID != invID {
			return nil
		}
		e.FailedAt = now
		b, _ := json.Marshal(e)
		if _, uerr := s.fingerprints.Update(ctx, fp, b, rev); errors.Is(uerr, errConflict) {
			continue
		} else if uerr != nil {
			return uerr
		}
		return nil
	}
	return fmt.Errorf("fingerprint %s: too many concurrent updates", fp)
}

// lookupFingerprint returns the open entry of fp, if any within window.
func (s *stateStore) lookupFingerprint(ctx context.Context, fp string, now time.Time, window time.Duration) (fpEntry, bool, error) {
	data, _, err := s.fingerprints.Get(ctx, fp)
	if errors.Is(err, errNotFound) {
		return fpEntry{}, false, nil
	}
	if err != nil {
		return fpEntry{}, false, err
	}
	var e fpEntry
	if err := json.Unmarshal(data, &e); err != nil || !e.open(now, window, window) {
		return fpEntry{}, false, nil
	}
	return e, true, nil
}

// markFingerprintFailed shortens the fingerprint's dedup to
// Config.FailedDedupWindow from now, so a re-sent alert soon starts a fresh
// investigation instead of attaching to the failed one.
func (s *Service) markFingerprintFailed(ctx context.Context, st *invState) {
	fp := st.rec.GetAlert().GetFingerprint()
	if fp == "" || st.isSub() {
		return
	}
	store, err := s.store(ctx)
	if err != nil {
		return
	}
	if err := store.markFailed(ctx, fp, st.rec.GetInvestigationId(), s.now()); err != nil {
		s.log.WarnContext(ctx, "fingerprint not marked failed", "investigation_id", st.rec.GetInvestigationId(), "err", err)
	}
}

// freshEntry is the fingerprint entry of a new investigation of fp in
// session sid. A fingerprint whose previous investigation of the same dedup
// window failed gets the next generation, hence a new investigation id.
func (s *Service) freshEntry(sid, fp string, now time.Time, prev *fpEntry) fpEntry {
	win := s.windowIndex(now)
	gen := 0
	if prev != nil && s.windowIndex(prev.FirstSeen) == win {
		gen = prev.Generation + 1
	}
	parts := []string{sid, fp, fmt.Sprint(win)}
	if gen > 0 {
		parts = append(parts, "generation", fmt.Sprint(gen))
	}
	return fpEntry{SessionID: sid, InvestigationID: investigationID(parts...), FirstSeen: now, LastSeen: now, Count: 1, Generation: gen}
}

// openEntry is the index entry of an investigation that is not final yet
// (BucketOpen, key = investigation id).
type openEntry struct {
	SessionID   string    `json:"session_id"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Created     time.Time `json:"created"`
}

// markOpen indexes an investigation before it is saved and queued, so that
// the sweeper finds it whatever step a crash interrupts.
func (s *Service) markOpen(ctx context.Context, store *stateStore, invID, sid, fp string) error {
	b, err := json.Marshal(openEntry{SessionID: sid, Fingerprint: fp, Created: s.now()})
	if err != nil {
		return err
	}
	_, err = store.open.Put(ctx, invID, b)
	return err
}

// markClosed drops a final investigation from the open index (best effort:
// the sweeper drops entries of final investigations too).
func (s *Service) markClosed(ctx context.Context, invID string) {
	store, err := s.store(ctx)
	if err != nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := store.open.Delete(dctx, invID); err != nil {
		s.log.DebugContext(ctx, "open index entry not removed", "investigation_id", invID, "err", err)
	}
}

func (s *Service) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if res, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "orphan sweep failed", "err", err)
		} else if res.Requeued+res.Failed+res.Dropped > 0 {
			s.log.InfoContext(ctx, "orphan sweep", "requeued", res.Requeued, "failed", res.Failed, "dropped", res.Dropped)
		}
	}
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	// Requeued: orphans (saved, not final, no work item left, idle for
	// Config.OrphanAge) put back on the queue.
	Requeued int
	// Failed: orphans re-queued Config.MaxRequeues times already, failed
	// with the reason.
	Failed int
	// Dropped: index entries of investigations that are final, or were never
	// saved (their fingerprint claim is released so a retry starts afresh).
	Dropped int
}

// Sweep looks for orphaned investigations once (the brain runs it every
// Config.SweepInterval): an investigation that was saved but whose work item
// never reached the queue (a crash between the two), or whose item the
// queue gave up on, is re-queued; one that keeps coming back is failed.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	if s.bus == nil {
		return res, nil
	}
	store, err := s.store(ctx)
	if err != nil {
		return res, err
	}
	keys, err := store.open.Keys(ctx)
	if err != nil {
		return res, err
	}
	now := s.now()
	for _, invID := range keys {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		raw, _, err := store.open.Get(ctx, invID)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return res, err
		}
		var oe openEntry
		if err := json.Unmarshal(raw, &oe); err != nil {
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if now.Sub(oe.Created) < s.cfg.OrphanAge {
			continue
		}
		st, err := store.loadState(ctx, invID)
		if errors.Is(err, errNotFound) {
			// Indexed but never saved: release the fingerprint it claimed.
			if oe.Fingerprint != "" {
				if data, _, gerr := store.fingerprints.Get(ctx, oe.Fingerprint); gerr == nil {
					var e fpEntry
					if json.Unmarshal(data, &e) == nil && e.InvestigationID == invID {
						_ = store.fingerprints.Delete(ctx, oe.Fingerprint)
					}
				}
			}
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if err != nil {
			return res, err
		}
		if isFinal(st.rec.GetState()) {
			_ = store.open.Delete(ctx, invID)
			res.Dropped++
			continue
		}
		if !st.savedAt.IsZero() && now.Sub(st.savedAt) < s.cfg.OrphanAge {
			continue // making progress somewhere
		}
		pending, err := s.bus.WorkPending(ctx, invID)
		if err != nil {
			return res, err
		}
		if pending {
			continue
		}
		if int(st.rec.GetRequeues()) >= s.cfg.MaxRequeues {
			cause := fmt.Errorf("the investigation was re-queued %d times and never finished (its work item was lost or given up each time)", st.rec.GetRequeues())
			if err := s.fail(ctx, st, "queue", cause); err != nil {
				return res, err
			}
			res.Failed++
			continue
		}
		st.rec.Requeues++
		if err := s.checkpoint(ctx, st); err != nil {
			return res, err
		}
		if err := s.enqueue(ctx, workItem{SessionID: st.rec.GetSessionId(), InvestigationID: invID}, int(st.rec.GetRequeues())); err != nil {
			return res, err
		}
		s.log.WarnContext(ctx, "orphaned investigation re-queued", "investigation_id", invID, "requeues", st.rec.GetRequeues())
		res.Requeued++
	}
	return res, nil
}

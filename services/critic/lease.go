package critic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/rcamesh/rcamesh/internal/bus"
)

// Several critic replicas share the durable consumer of pin.added, so the
// pins of one session reach them in any order. Two rules keep their
// judgements consistent, as if one critic judged the session:
//
//   - one replica at a time judges a session: it holds the session's lease,
//     an entry of the KV bucket bus.BucketCritic taken and given back by
//     compare-and-set on its revision (a lease whose holder died expires
//     after leaseTTL);
//   - the entry also holds the stream sequence of the session's latest
//     verdict; a replica whose pool is behind it first reads the verdicts
//     it missed from the stream, then judges.
//
// With one replica the lease is always free and the pool never behind.
//
// A replica keeps a lease it took while the session's pins keep coming:
// the pins of an investigation arrive in bursts, and a judgement under a
// lease already held spares the lease's three requests (read, take, give
// back). It gives the lease back, with the sequence of its latest verdict,
// once no pin of the session came for leaseLinger (another replica waits
// that long at most), renews it when half of leaseTTL is gone, and gives
// back every lease it holds when it stops. A replica that reads the
// session without judging (reviews) while another replica holds the lease
// reads the verdicts published since its pool's last from the stream: the
// entry's sequence is only recorded when the lease is given back.

// leaseTTL is how long a lease outlives a holder that stopped without
// giving it back. A judgement takes milliseconds.
const leaseTTL = 15 * time.Second

// leaseLinger is how long a replica keeps a session's lease after its
// latest judgement.
const leaseLinger = 20 * time.Millisecond

// unknownSeq as a lease's sequence means that the verdicts of the session
// may not all be recorded in its entry (its previous holder stopped
// without giving it back): the pool reads every verdict after its own.
const unknownSeq = math.MaxUint64

// stamp is the stored value of a session's entry.
type stamp struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until,omitzero"`
	// Seq is the events-stream sequence of the session's latest verdict.
	Seq uint64 `json:"seq"`
}

// lease is a held session lease.
type lease struct {
	key   string
	rev   uint64
	seq   uint64
	until time.Time
}

func (s *Service) stampKV(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := s.bus.KV(ctx, bus.BucketCritic)
	if err != nil {
		return nil, fmt.Errorf("critic: session leases: %w", err)
	}
	return kv, nil
}

// readStamp returns the session's entry and its revision (0 when absent).
func readStamp(ctx context.Context, kv jetstream.KeyValue, key string) (stamp, uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return stamp{}, 0, nil
	}
	if err != nil {
		return stamp{}, 0, fmt.Errorf("critic: read session lease %s: %w", key, err)
	}
	var st stamp
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return stamp{}, e.Revision(), nil // unreadable: a free lease at sequence 0
	}
	return st, e.Revision(), nil
}

// acquire takes the session's lease, waiting while another replica holds it.
func (s *Service) acquire(ctx context.Context, session string) (*lease, error) {
	kv, err := s.stampKV(ctx)
	if err != nil {
		return nil, err
	}
	key := bus.Token(session)
	wait := time.Millisecond
	for {
		st, rev, err := readStamp(ctx, kv, key)
		if err != nil {
			return nil, err
		}
		now := time.Now() // a distributed lease runs on the wall clock, not the judging clock
		if st.Holder == "" || now.After(st.Until) {
			until := now.Add(leaseTTL)
			data, _ := json.Marshal(stamp{Holder: s.id, Until: until, Seq: st.Seq})
			var nrev uint64
			if rev == 0 {
				nrev, err = kv.Create(ctx, key, data)
			} else {
				nrev, err = kv.Update(ctx, key, data, rev)
			}
			if err == nil {
				seq := st.Seq
				if st.Holder != "" {
					seq = unknownSeq // taken from a holder that never gave it back
				}
				return &lease{key: key, rev: nrev, seq: seq, until: until}, nil
			}
			if !bus.IsConflict(err) {
				return nil, fmt.Errorf("critic: take session lease %s: %w", key, err)
			}
			continue // another replica took it first
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("critic: waiting for the lease of session %q held by %s: %w", session, st.Holder, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// hold returns the session's lease for a judgement: the one the pool
// holds (renewed when half of its time is gone), or a newly taken one.
// Caller holds sp.mu.
func (s *Service) hold(ctx context.Context, session string, sp *sessionPool) (*lease, error) {
	if l := sp.held; l != nil {
		now := time.Now()
		if l.until.Sub(now) > leaseTTL/2 {
			return l, nil
		}
		kv, err := s.stampKV(ctx)
		if err != nil {
			return nil, err
		}
		until := now.Add(leaseTTL)
		data, _ := json.Marshal(stamp{Holder: s.id, Until: until, Seq: sp.seq})
		rev, err := kv.Update(ctx, l.key, data, l.rev)
		switch {
		case err == nil:
			l.rev, l.until = rev, until
			return l, nil
		case !bus.IsConflict(err):
			return nil, fmt.Errorf("critic: renew session lease %s: %w", l.key, err)
		}
		// It expired and another replica took it: take it again.
		s.log.WarnContext(ctx, "critic: a held session lease expired and was taken", "session", session)
		sp.held = nil
	}
	l, err := s.acquire(ctx, session)
	if err != nil {
		return nil, err
	}
	sp.held = l
	return l, nil
}

// linger keeps the pool's lease for leaseLinger after a judgement, then
// gives it back (unless a judgement came meanwhile). Caller holds sp.mu.
func (s *Service) linger(sp *sessionPool) {
	if sp.idle == nil {
		sp.idle = time.AfterFunc(leaseLinger, func() { s.giveBack(sp) })
		return
	}
	sp.idle.Reset(leaseLinger)
}

// giveBack releases the pool's lease, if it holds one.
func (s *Service) giveBack(sp *sessionPool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	l := sp.held
	if l == nil {
		return
	}
	sp.held = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.release(ctx, l, sp.seq); err != nil {
		s.log.WarnContext(ctx, "critic: session lease not given back; it expires", "lease", l.key, "err", err)
	}
}

// giveBackAll releases every lease this replica holds (when it stops).
func (s *Service) giveBackAll() {
	s.mu.Lock()
	pools := make([]*sessionPool, 0, len(s.pools))
	for _, sp := range s.pools {
		pools = append(pools, sp)
	}
	s.mu.Unlock()
	for _, sp := range pools {
		s.giveBack(sp)
	}
}

// release gives the lease back, recording seq (the sequence of the last
// verdict published under it) when it is newer.
func (s *Service) release(ctx context.Context, l *lease, seq uint64) error {
	kv, err := s.stampKV(ctx)
	if err != nil {
		return err
	}
	if l.seq != unknownSeq {
		seq = max(l.seq, seq)
	}
	data, _ := json.Marshal(stamp{Seq: seq})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := kv.Update(wctx, l.key, data, l.rev); err != nil {
		return fmt.Errorf("critic: give back session lease %s (held past %s?): %w", l.key, leaseTTL, err)
	}
	return nil
}

// catchUp brings the pool up to the session's latest verdict (seq): the
// verdicts other replicas published since the pool last read the stream.
// Caller holds sp.mu and the pool is loaded.
func (s *Service) catchUp(ctx context.Context, session string, sp *sessionPool, seq uint64) error {
	if seq <= sp.seq {
		return nil
	}
	events, err := s.bus.Replay(ctx, bus.SessionFilter(session), sp.seq)
	if err != nil {
		return fmt.Errorf("critic: catch up session %q: %w", session, err)
	}
	for _, ev := range events {
		sp.seq = max(sp.seq, ev.GetSequence())
		pe := ev.GetPin()
		if pe == nil || pe.GetPin() == nil || !judged(pe.GetPin()) {
			continue // only verdicts: what other replicas decided
		}
		if sid := sessionOf(pe); sid != "" && sid != session {
			continue
		}
		sp.apply(pe.GetPin())
	}
	return nil
}

// sharedStamp returns the session's latest verdict sequence (0 without a
// bus) for sp, the session's pool (caller holds sp.mu): unknownSeq while a
// lease that sp does not hold is held (the holder's latest verdicts are not
// recorded yet).
func (s *Service) sharedStamp(ctx context.Context, session string, sp *sessionPool) (uint64, error) {
	if s.bus == nil {
		return 0, nil
	}
	kv, err := s.stampKV(ctx)
	if err != nil {
		return 0, err
	}
	st, _, err := readStamp(ctx, kv, bus.Token(session))
	if err == nil && st.Holder != "" && (st.Holder != s.id || sp.held == nil) {
		return unknownSeq, nil
	}
	return st.Seq, err
}

package critic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// leaseTTL is how long a lease outlives a holder that stopped without
// giving it back. A judgement takes milliseconds.
const leaseTTL = 15 * time.Second

// stamp is the stored value of a session's entry.
type stamp struct {
	Holder string    `json:"holder,omitempty"`
	Until  time.Time `json:"until,omitzero"`
	// Seq is the events-stream sequence of the session's latest verdict.
	Seq uint64 `json:"seq"`
}

// lease is a held session lease.
type lease struct {
	key string
	rev uint64
	seq uint64
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
			data, _ := json.Marshal(stamp{Holder: s.id, Until: now.Add(leaseTTL), Seq: st.Seq})
			var nrev uint64
			if rev == 0 {
				nrev, err = kv.Create(ctx, key, data)
			} else {
				nrev, err = kv.Update(ctx, key, data, rev)
			}
			if err == nil {
				return &lease{key: key, rev: nrev, seq: st.Seq}, nil
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

// release gives the lease back, recording seq (the sequence of the last
// verdict published under it) when it is newer.
func (s *Service) release(ctx context.Context, l *lease, seq uint64) error {
	kv, err := s.stampKV(ctx)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(stamp{Seq: max(l.seq, seq)})
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

// sharedStamp returns the session's latest verdict sequence (0 without a bus).
func (s *Service) sharedStamp(ctx context.Context, session string) (uint64, error) {
	if s.bus == nil {
		return 0, nil
	}
	kv, err := s.stampKV(ctx)
	if err != nil {
		return 0, err
	}
	st, _, err := readStamp(ctx, kv, bus.Token(session))
	return st.Seq, err
}

package delivery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rcamesh/rcamesh/internal/metrics"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

// outboxEntry is a page not yet accepted by every destination (BucketOutbox).
// It is written before the first try and removed once every destination
// accepted it (or the outbox gave up), so a crash during retries loses no
// page: Run resumes the entries it finds, after a restart too.
type outboxEntry struct {
	Session       string       `json:"session_id"`
	Investigation string       `json:"investigation_id,omitempty"`
	Fingerprint   string       `json:"fingerprint,omitempty"`
	Claimed       bool         `json:"claimed,omitempty"` // holds the fingerprint's dedup claim
	Report        []byte       `json:"report"`            // investigationv1.Report (protobuf)
	Pending       []outboxDest `json:"pending"`
	Created       time.Time    `json:"created"`
	NextAt        time.Time    `json:"next_at"`
	LeaseUntil    time.Time    `json:"lease_until,omitzero"`
	Rounds        int          `json:"rounds"`
	// Accepted counts destinations that accepted the page so far.
	Accepted int `json:"accepted"`
}

// outboxDest is one destination still to accept the page.
type outboxDest struct {
	Name string `json:"name"`
	Body []byte `json:"body"`
	Idem string `json:"idempotency_key"`
}

func outboxKey(session, investigation string) string {
	return "o_" + base64.RawURLEncoding.EncodeToString([]byte(session+"\x00"+investigation))
}

func (e *outboxEntry) key() string { return outboxKey(e.Session, e.Investigation) }

// outbox stores entries in JetStream KV (or memory without a bus), with
// compare-and-set leases so two delivery processes never send one entry at once.
type outbox struct {
	bus *bus.Bus
	mu  sync.Mutex
	mem map[string][]byte
	rev map[string]uint64
	seq uint64
}

func newOutbox(b *bus.Bus) *outbox {
	return &outbox{bus: b, mem: map[string][]byte{}, rev: map[string]uint64{}}
}

var errLeaseLost = errors.New("delivery: outbox entry changed under us")

func (o *outbox) kv(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := o.bus.KV(ctx, bus.BucketOutbox)
	if err != nil {
		return nil, fmt.Errorf("delivery: outbox bucket: %w", err)
	}
	return kv, nil
}

// put writes e (rev 0: create or overwrite; else only over that revision).
func (o *outbox) put(ctx context.Context, e *outboxEntry, rev uint64) (uint64, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("delivery: encode outbox entry: %w", err)
	}
	if o.bus == nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		if rev != 0 && o.rev[e.key()] != rev {
			return 0, errLeaseLost
		}
		o.seq++
		o.mem[e.key()], o.rev[e.key()] = data, o.seq
		return o.seq, nil
	}
	kv, err := o.kv(ctx)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		nrev, err := kv.Put(ctx, e.key(), data)
		if err != nil {
			return 0, fmt.Errorf("delivery: write outbox: %w", err)
		}
		return nrev, nil
	}
	nrev, err := kv.Update(ctx, e.key(), data, rev)
	if err != nil {
		return 0, errLeaseLost
	}
	return nrev, nil
}

func (o *outbox) remove(ctx context.Context, key string, rev uint64) error {
	if o.bus == nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.mem, key)
		delete(o.rev, key)
		return nil
	}
	kv, err := o.kv(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delivery: remove outbox entry: %w", err)
	}
	return nil
}

type storedEntry struct {
	e   *outboxEntry
	rev uint64
}

// list returns every entry, oldest first.
func (o *outbox) list(ctx context.Context) ([]storedEntry, error) {
	var out []storedEntry
	add := func(data []byte, rev uint64) {
		e := &outboxEntry{}
		if json.Unmarshal(data, e) == nil {
			out = append(out, storedEntry{e, rev})
		}
	}
	if o.bus == nil {
		o.mu.Lock()
		for k, d := range o.mem {
			add(d, o.rev[k])
		}
		o.mu.Unlock()
	} else {
		kv, err := o.kv(ctx)
		if err != nil {
			return nil, err
		}
		entries, err := kvEntries(ctx, kv)
		if err != nil {
			return nil, fmt.Errorf("delivery: list outbox: %w", err)
		}
		for _, ent := range entries {
			add(ent.Value(), ent.Revision())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].e.Created.Before(out[j].e.Created) })
	return out, nil
}

// sendRound tries every pending destination of e once through deliver (with
// its in-call retries), records the attempts on rep, and keeps the ones that
// failed in a way worth retrying (network errors, 429, 5xx; another 4xx is
// final). It reports whether nothing is left to retry.
func (s *Service) sendRound(ctx context.Context, e *outboxEntry, rep *investigationv1.Report) bool {
	var still []outboxDest
	for _, d := range e.Pending {
		dest, ok := s.destination(d.Name)
		if !ok {
			continue // no longer configured: nothing to send it to
		}
		at := s.deliver(ctx, dest, d.Body, d.Idem)
		rep.Attempts = append(rep.Attempts, at)
		result := "failed"
		if at.GetOk() {
			result = "ok"
		}
		metrics.DeliveryAttempts.WithLabelValues(dest.kind, result).Inc()
		metrics.DeliveryTries.WithLabelValues(dest.kind).Add(float64(at.GetTries()))
		switch code := at.GetStatusCode(); {
		case at.GetOk():
			e.Accepted++
		case code == 0 || code == 429 || code >= 500:
			still = append(still, d) // worth another round
		}
	}
	e.Pending = still
	e.Rounds++
	return len(still) == 0
}

func (s *Service) destination(name string) (destination, bool) {
	for _, d := range s.dests {
		if d.name == name {
			return d, true
		}
	}
	return destination{}, false
}

// settle finishes an entry after a round: every destination accepted (the
// fingerprint stays claimed: the page was sent), or the outbox gave up (the
// claim is released so a later alert may page), or it waits for the next
// round. The stored report gets the round's attempts.
func (s *Service) settle(ctx context.Context, e *outboxEntry, rev uint64, rep *investigationv1.Report, done bool) {
	log := s.log.With("session", e.Session, "investigation", e.Investigation)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	gaveUp := !done && (e.Rounds >= s.cfg.OutboxMaxRounds || s.now().Sub(e.Created) >= s.cfg.OutboxMaxAge)
	switch {
	case done || gaveUp:
		if err := s.outbox.remove(wctx, e.key(), rev); err != nil {
			log.WarnContext(ctx, "delivery: outbox entry not removed", "err", err)
		}
		if gaveUp {
			log.ErrorContext(ctx, "delivery: page given up", "rounds", e.Rounds, "pending", len(e.Pending))
		}
		if e.Accepted == 0 {
			// Nothing was delivered: a later alert of the fingerprint may page.
			if e.Claimed {
				if err := s.store.release(wctx, e.Fingerprint, e.Session); err != nil {
					log.WarnContext(ctx, "delivery: could not release fingerprint claim", "err", err)
				}
			}
		}
	default:
		e.NextAt = s.now().Add(s.backoff(e.Rounds + 1))
		e.LeaseUntil = time.Time{}
		if _, err := s.outbox.put(wctx, e, rev); err != nil {
			log.WarnContext(ctx, "delivery: outbox entry not updated", "err", err)
		}
	}
}

// ResumeOutbox sends every due outbox entry once (Run calls it every
// Config.OutboxInterval) and returns how many entries every destination
// accepted in this pass.
func (s *Service) ResumeOutbox(ctx context.Context) (int, error) {
	entries, err := s.outbox.list(ctx)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, se := range entries {
		if ctx.Err() != nil {
			return sent, ctx.Err()
		}
		e, now := se.e, s.now()
		if now.Before(e.NextAt) || now.Before(e.LeaseUntil) {
			continue
		}
		// Take the lease: only this process sends the entry until it expires.
		e.LeaseUntil = now.Add(s.leaseFor())
		rev, err := s.outbox.put(ctx, e, se.rev)
		if err != nil {
			continue // another process took it
		}
		rep := &investigationv1.Report{}
		if err := proto.Unmarshal(e.Report, rep); err != nil {
			_ = s.outbox.remove(ctx, e.key(), rev)
			continue
		}
		done := s.sendRound(ctx, e, rep)
		s.settle(ctx, e, rev, rep, done)
		if err := s.store.putReport(context.WithoutCancel(ctx), rep); err != nil {
			s.log.WarnContext(ctx, "delivery: report not updated", "session", e.Session, "err", err)
		}
		if done {
			sent++
			s.log.InfoContext(ctx, "delivery: pending page sent", "session", e.Session, "investigation", e.Investigation, "rounds", e.Rounds)
		}
	}
	return sent, nil
}

// leaseFor is how long one round may take: every try of every destination.
func (s *Service) leaseFor() time.Duration {
	per := time.Duration(s.cfg.MaxTries)*(s.cfg.HTTPTimeout+s.cfg.BackoffMax) + time.Second
	return per * time.Duration(max(len(s.dests), 1))
}

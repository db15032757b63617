package critic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/metrics"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// errPinNotFound is returned when a pin id is not in the session's pool.
var errPinNotFound = errors.New("pin not found in session")

// entry is one pin of a session pool with its profile (which depends only on
// the pin's data, never on the critic's verdict, so it survives updates).
type entry struct {
	// pin is the pin without its facts (metadata and params) when it has
	// any: facts holds them encoded and full gives the whole pin. A pool
	// keeps thousands of pins, and decoded facts are trees of small objects
	// (about 20 KB for a pin of 4 KB) that every garbage collection walks;
	// judging reads the profile, not the facts.
	pin   *evidencev1.EvidencePin
	facts []byte
	prof  *profile
	seq   int // arrival order
}

func newEntry(p *evidencev1.EvidencePin, prof *profile) *entry {
	e := &entry{prof: prof}
	e.set(p)
	return e
}

// set makes p the entry's pin (never modified: the entry keeps a copy).
func (e *entry) set(p *evidencev1.EvidencePin) {
	e.pin, e.facts = p, nil
	if p.GetMetadata() == nil && p.GetParams() == nil {
		// Read with its facts kept encoded (bus.FactsEncoded): that
		// encoding is the entry's.
		e.facts, e.pin = bus.SplitEncodedFacts(p)
		return
	}
	facts, err := proto.Marshal(&evidencev1.EvidencePin{Metadata: p.GetMetadata(), Params: p.GetParams()})
	if err != nil {
		return // kept whole
	}
	lean := bus.CopyPin(p)
	lean.Metadata, lean.Params = nil, nil
	e.pin, e.facts = lean, facts
}

// full returns the entry's whole pin, which the caller must not modify.
func (e *entry) full() *evidencev1.EvidencePin {
	if e.facts == nil {
		return e.pin
	}
	var f evidencev1.EvidencePin
	if err := proto.Unmarshal(e.facts, &f); err != nil {
		return e.pin // cannot happen: set encoded them
	}
	p := bus.CopyPin(e.pin)
	p.Metadata, p.Params = f.Metadata, f.Params
	return p
}

// size is the memory an entry's pin costs (the decoded pin twice, for its
// profile, plus its encoded facts).
func (e *entry) size() int64 { return pinBytes(e.pin) + int64(len(e.facts)) }

// sessionPool is the critic's view of one session's evidence. mu serializes
// every revalidation of the session, so that two pins arriving together are
// each judged against the other.
type sessionPool struct {
	mu      sync.Mutex
	loaded  bool
	entries map[string]*entry
	order   []*entry // the entries in arrival order
	// observing lists, in arrival order, the entries with an observation of
	// an entity in a health state (each entry once per key): judge finds the
	// pins a new observation contradicts without walking the whole pool.
	observing map[obsKey][]*entry
	next      int
	used      int64
	// seq is the last events-stream sequence the pool has read.
	seq uint64
	// held is the session's lease while this replica keeps it between
	// judgements; idle gives it back (lease.go).
	held *lease
	idle *time.Timer
	// idx is what judge reads of the pool (poolindex.go).
	idx poolIndex
	// others is a scratch list of the pool's validated pins.
	others []*entry
	// bytes is the pool's estimated memory (pins encoded, twice for their
	// profiles); read by pool() without sp.mu.
	bytes atomic.Int64
}

// pinBytes is the memory a pin costs in a pool.
func pinBytes(p *evidencev1.EvidencePin) int64 { return 2 * int64(proto.Size(p)) }

// obsKey is an entity in a health state.
type obsKey struct {
	entity  string
	healthy bool
}

func newSessionPool() *sessionPool {
	return &sessionPool{entries: map[string]*entry{}, observing: map[obsKey][]*entry{}}
}

func pinVersion(p *evidencev1.EvidencePin) int64 {
	if p.GetVersion() < 1 {
		return 1
	}
	return p.GetVersion()
}

func judged(p *evidencev1.EvidencePin) bool {
	st := p.GetValidationStatus()
	return st == evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED || st == evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED
}

// apply merges one pin version into the pool: the highest version wins.
func (sp *sessionPool) apply(p *evidencev1.EvidencePin) {
	if p.GetId() == "" {
		return
	}
	e := sp.entries[p.GetId()]
	if e == nil {
		sp.add(newEntry(p, newProfile(p)))
		return
	}
	if pinVersion(p) > pinVersion(e.pin) || pinVersion(p) == pinVersion(e.pin) && judged(p) && !judged(e.pin) {
		sp.replace(e, p)
	}
}

// replace makes p the pin of e.
func (sp *sessionPool) replace(e *entry, p *evidencev1.EvidencePin) {
	before := e.size()
	wasValidated, wasOnset := e.validatedNow(), e.onsetNow()
	e.set(p)
	sp.reindex(e, wasValidated, wasOnset)
	sp.bytes.Add(e.size() - before)
}

// add appends a new entry to the pool (arrival order).
func (sp *sessionPool) add(e *entry) {
	e.seq = sp.next
	sp.next++
	sp.entries[e.pin.GetId()] = e
	sp.order = append(sp.order, e)
	for _, o := range e.prof.obs {
		k := obsKey{o.entity, o.healthy}
		if l := sp.observing[k]; len(l) == 0 || l[len(l)-1] != e {
			sp.observing[k] = append(l, e)
		}
	}
	sp.reindex(e, false, false)
	sp.bytes.Add(e.size())
}

// ordered returns the entries in arrival order; callers must not modify it.
func (sp *sessionPool) ordered() []*entry { return sp.order }

// pool returns the session's pool, creating it, and evicts the least recently
// used pools beyond MaxSessions (they are rebuilt from the stream on demand).
func (s *Service) pool(session string) *sessionPool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick++
	p := s.pools[session]
	if p == nil {
		p = newSessionPool()
		s.pools[session] = p
	}
	p.used = s.tick
	total := int64(0)
	for _, v := range s.pools {
		total += v.bytes.Load()
	}
	for len(s.pools) > s.cfg.MaxSessions || total > s.cfg.MaxPoolBytes {
		var oldest string
		var min int64 = math.MaxInt64
		for k, v := range s.pools {
			if k != session && v.used < min {
				oldest, min = k, v.used
			}
		}
		if oldest == "" {
			break
		}
		total -= s.pools[oldest].bytes.Load()
		delete(s.pools, oldest)
	}
	return p
}

// ensureLoaded rebuilds the pool from the session's stream history the first
// time the critic sees the session, so a restart loses nothing. Caller holds sp.mu.
func (s *Service) ensureLoaded(ctx context.Context, session string, sp *sessionPool) error {
	if sp.loaded {
		return nil
	}
	if s.bus != nil {
		events, err := s.bus.Replay(ctx, bus.SessionFilter(session), 0)
		if err != nil {
			return fmt.Errorf("critic: replay session %q: %w", session, err)
		}
		for _, ev := range events {
			sp.seq = max(sp.seq, ev.GetSequence())
			pe := ev.GetPin()
			if pe == nil || pe.GetPin() == nil {
				continue
			}
			if sid := sessionOf(pe); sid != "" && sid != session {
				continue // another session escaped to the same subject token
			}
			sp.apply(pe.GetPin())
		}
	}
	sp.loaded = true
	return nil
}

func sessionOf(pe *evidencev1.PinEvent) string {
	if pe.GetSessionId() != "" {
		return pe.GetSessionId()
	}
	return pe.GetPin().GetSessionId()
}

// revalidationResult is the result label of a judged pin.
func revalidationResult(p *evidencev1.EvidencePin) string {
	switch p.GetValidationStatus() {
	case statusValidated:
		return metrics.PinValidated
	case statusRejected:
		return metrics.PinRejected
	}
	return metrics.PinPending
}

// revalidate runs delta revalidation of one pin under the session lock. given
// may be nil (the pin is then read from the pool). With commit the verdict is
// published (when a bus is configured) and merged into the pool.
func (s *Service) revalidate(ctx context.Context, session, pinID string, given *evidencev1.EvidencePin, commit bool) (_ *evidencev1.EvidencePin, _ []*evidencev1.EvidencePin, err error) {
	sp := s.pool(session)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := s.ensureLoaded(ctx, session, sp); err != nil {
		return nil, nil, err
	}
	if commit && s.bus != nil {
		defer s.linger(sp) // also when renewing a held lease failed
		if err := s.catchUpHeld(ctx, session, sp); err != nil {
			return nil, nil, err
		}
	} else if err := s.catchUpShared(ctx, session, sp); err != nil {
		return nil, nil, err
	}
	d, err := s.judgePin(session, pinID, given, sp)
	if err != nil || d.done || !commit {
		return d.out, d.contradicted, err
	}
	if s.bus != nil {
		// The pool's sequence follows its own verdicts (no other replica
		// publishes one while the lease is held), so release records them.
		for _, p := range append([]*evidencev1.EvidencePin{d.out}, d.contradicted...) {
			seq, err := s.bus.PublishPin(ctx, s.verdictEvent(session, p))
			if err != nil {
				return nil, nil, fmt.Errorf("critic: publish %s of pin %q: %w", verdictKind(p), p.GetId(), err)
			}
			sp.seq = max(sp.seq, seq)
		}
	}
	sp.commit(d)
	return d.out, d.contradicted, nil
}

// judgement is one pin decided against a pool.
type judgement struct {
	out          *evidencev1.EvidencePin
	contradicted []*evidencev1.EvidencePin
	// done: the pin was already decided (revalidation is idempotent);
	// out is that decision, nothing is to be published or merged.
	done     bool
	existing *entry
	prof     *profile
}

// catchUpHeld takes (or keeps) the session's lease for judging and brings
// the pool up to the session's latest verdict. Caller holds sp.mu, the
// pool is loaded and the caller lingers on the lease afterwards.
func (s *Service) catchUpHeld(ctx context.Context, session string, sp *sessionPool) error {
	l, err := s.hold(ctx, session, sp)
	if err != nil {
		return err
	}
	if err := s.catchUp(ctx, session, sp, l.seq); err != nil {
		return err
	}
	if l.seq == unknownSeq {
		l.seq = sp.seq // caught up with every verdict
	}
	return nil
}

// catchUpShared brings the pool up to the session's latest verdict as
// every replica sees it, without the lease (a read). Caller holds sp.mu.
func (s *Service) catchUpShared(ctx context.Context, session string, sp *sessionPool) error {
	shared, err := s.sharedStamp(ctx, session, sp)
	if err != nil {
		return err
	}
	return s.catchUp(ctx, session, sp, shared)
}

// judgePin judges one pin (given, or the pool's pinID when nil) against the
// pool. Caller holds sp.mu and the pool is caught up.
func (s *Service) judgePin(session, pinID string, given *evidencev1.EvidencePin, sp *sessionPool) (judgement, error) {
	existing := sp.entries[pinID]
	cand := given
	if cand == nil || existing != nil && pinVersion(existing.pin) >= pinVersion(cand) && judged(existing.pin) {
		if existing == nil {
			return judgement{}, fmt.Errorf("%w: session %q pin %q", errPinNotFound, session, pinID)
		}
		cand = existing.full()
	}
	if judged(cand) {
		// Already decided: revalidation is idempotent.
		return judgement{out: cand, done: true}, nil
	}
	var prof *profile
	if existing != nil {
		prof = existing.prof // a profile depends only on the pin's data
	} else {
		prof = newProfile(cand)
	}
	out, contradicted := s.judge(cand, prof, sp)
	metrics.PinRevalidations.WithLabelValues(revalidationResult(out)).Inc()
	for range contradicted {
		metrics.PinRevalidations.WithLabelValues(metrics.PinRejected).Inc()
	}
	return judgement{out: out, contradicted: contradicted, existing: existing, prof: prof}, nil
}

// commit merges a judgement into the pool. Caller holds sp.mu.
func (sp *sessionPool) commit(d judgement) {
	if d.existing == nil {
		sp.add(newEntry(d.out, d.prof))
	} else {
		sp.replace(d.existing, d.out)
	}
	for _, c := range d.contradicted {
		if e := sp.entries[c.GetId()]; e != nil {
			sp.replace(e, c)
		}
	}
}

// forget empties the pool (it is read again from the stream on next use):
// after verdicts were merged into it that may not all have been published.
// The lease it holds stays held. Caller holds sp.mu.
func (sp *sessionPool) forget() {
	sp.loaded = false
	sp.entries = map[string]*entry{}
	sp.order = nil
	sp.observing = map[obsKey][]*entry{}
	sp.next = 0
	sp.seq = 0
	sp.idx = poolIndex{}
	sp.others = nil
	sp.bytes.Store(0)
}

// toJudge is one added pin of a batch, with the context of its delivery
// (its trace, which its verdict continues).
type toJudge struct {
	ctx context.Context
	pin *evidencev1.EvidencePin
}

// revalidateBatch judges the added pins of one session (in stream order)
// under one hold of the session's lock and lease: each is judged against
// the pool with the verdicts of the pins before it merged, then every
// verdict is published at once (bus.PublishPinsTraced: every
// acknowledgement awaited and checked). When publishing fails, the pool
// forgets the verdicts it merged (it is read again from the stream, which
// holds those that were stored) and the batch fails: each of its pins is
// delivered again and judged anew; a verdict already stored is deduplicated
// by its message id.
func (s *Service) revalidateBatch(ctx context.Context, session string, pins []toJudge) error {
	if s.bus == nil {
		for _, j := range pins {
			if _, _, err := s.revalidate(j.ctx, session, j.pin.GetId(), j.pin, true); err != nil {
				return err
			}
		}
		return nil
	}
	sp := s.pool(session)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := s.ensureLoaded(ctx, session, sp); err != nil {
		return err
	}
	defer s.linger(sp)
	if err := s.catchUpHeld(ctx, session, sp); err != nil {
		return err
	}
	var (
		evs    []*evidencev1.PinEvent
		traces []context.Context
	)
	for _, j := range pins {
		d, err := s.judgePin(session, j.pin.GetId(), j.pin, sp)
		if err != nil {
			sp.forget()
			return err
		}
		if d.done {
			continue
		}
		for _, p := range append([]*evidencev1.EvidencePin{d.out}, d.contradicted...) {
			evs = append(evs, s.verdictEvent(session, p))
			traces = append(traces, j.ctx)
		}
		sp.commit(d)
		s.log.DebugContext(j.ctx, "critic: pin revalidated", "session", session, "pin", d.out.GetId(),
			"status", d.out.GetValidationStatus().String(), "role", d.out.GetCausalRole().String(), "contradicted", len(d.contradicted))
	}
	seqs, err := s.bus.PublishPinsTraced(ctx, evs, traces)
	if err != nil {
		sp.forget()
		return fmt.Errorf("critic: publish %d verdicts of session %q: %w", len(evs), session, err)
	}
	for _, seq := range seqs {
		// The pool's sequence follows its own verdicts (no other replica
		// publishes one while the lease is held), so release records them.
		sp.seq = max(sp.seq, seq)
	}
	return nil
}

// verdictEvent is the event that publishes a verdict on a pin.
func (s *Service) verdictEvent(session string, p *evidencev1.EvidencePin) *evidencev1.PinEvent {
	kind := verdictKind(p)
	return &evidencev1.PinEvent{
		EventId:   fmt.Sprintf("%s:%s:v%d", p.GetId(), bus.PinKindToken(kind), p.GetVersion()),
		Kind:      kind,
		SessionId: session,
		Pin:       p,
		Time:      timestamppb.New(s.now()),
	}
}

// verdictKind is the event kind of a verdict: rejected or updated.
func verdictKind(p *evidencev1.EvidencePin) evidencev1.PinEventKind {
	if p.GetValidationStatus() == evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED {
		return evidencev1.PinEventKind_PIN_EVENT_KIND_REJECTED
	}
	return evidencev1.PinEventKind_PIN_EVENT_KIND_UPDATED
}

// verdict helpers ----------------------------------------------------------

var (
	statusValidated = evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED
	statusRejected  = evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED
	roleRoot        = evidencev1.CausalRole_CAUSAL_ROLE_ROOT_CAUSE
	roleCascading   = evidencev1.CausalRole_CAUSAL_ROLE_CASCADING_SYMPTOM
	roleCorrelated  = evidencev1.CausalRole_CAUSAL_ROLE_CORRELATED
	roleInfo        = evidencev1.CausalRole_CAUSAL_ROLE_INFORMATIONAL
)

func roleName(r evidencev1.CausalRole) string {
	return strings.TrimPrefix(r.String(), "CAUSAL_ROLE_")
}

func downgrade(r evidencev1.CausalRole) evidencev1.CausalRole {
	switch r {
	case roleRoot, roleCascading:
		return roleCorrelated
	default:
		return roleInfo
	}
}

func baseConfidence(p *evidencev1.EvidencePin) float64 {
	c := p.GetConfidence()
	if c <= 0 || c > 100 {
		return 100
	}
	return c
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// judge decides one pending pin against the judged pins of the pool and
// returns the new version of it plus new versions of the earlier pins it
// contradicts. Caller holds the pool lock.
func (s *Service) judge(pin *evidencev1.EvidencePin, prof *profile, sp *sessionPool) (*evidencev1.EvidencePin, []*evidencev1.EvidencePin) {
	// The verdict shares the pin's facts (never modified) instead of copying them.
	out := bus.CopyPin(pin)
	version := pinVersion(pin)
	self := sp.entries[pin.GetId()]
	if self != nil && pinVersion(self.pin) > version {
		version = pinVersion(self.pin)
	}
	out.Version = version + 1

	// The earliest onset of the pool's failures, the judged pin's included
	// (its own entry, when it has one, has the same profile), read from
	// the pool's index instead of a walk of the session's pins.
	poolOnset := sp.earliestOnset()
	if prof.failing && prof.onset != nil && (poolOnset == nil || prof.onset.Before(*poolOnset)) {
		poolOnset = prof.onset
	}

	base := baseConfidence(pin)
	var why []string
	reject := func(conf float64, reason string) (*evidencev1.EvidencePin, []*evidencev1.EvidencePin) {
		out.ValidationStatus = statusRejected
		out.CausalRole = roleInfo
		out.Confidence = round1(conf)
		out.CriticRationale = "REJECTED: " + reason
		return out, nil
	}

	// 1. Status: failed calls and empty or irrelevant evidence are rejected.
	switch {
	case !pin.GetSuccess() || pin.GetError() != "":
		msg := pin.GetError()
		if msg == "" {
			msg = "the tool reported failure"
		}
		return reject(0, "tool call failed: "+textutil.Truncate(msg, 240))
	case pin.GetNoData():
		out.ValidationStatus = statusValidated
		out.CausalRole = roleInfo
		out.Confidence = round1(math.Min(base, 70))
		claim := pin.GetClaim()
		if claim == "" {
			claim = toolOf(pin) + " found nothing"
		}
		out.CriticRationale = "VALIDATED as INFORMATIONAL: a successful call with no data rules this out: " + textutil.Truncate(claim, 200)
		return out, nil
	case strings.TrimSpace(pin.GetClaim()) == "" && len(pin.GetSupportingEvidence()) == 0 &&
		strings.TrimSpace(pin.GetRawOutput()) == "" && !bus.HasMetadata(pin):
		return reject(0, "empty evidence: the call returned no claim, snippets, output or facts")
	case !prof.hasFacts && !prof.failing && pin.GetNamespace() != "" && outOfScope(prof, pin.GetNamespace(), sp.validatedOthers(self)):
		_, scopeNS := scopeOf(sp.others)
		return reject(math.Min(base, 10), fmt.Sprintf("irrelevant: namespace %q and its entities are outside the incident's evidence (%s) and the result shows nothing abnormal", pin.GetNamespace(), strings.Join(sortedSet(scopeNS), ", ")))
	}

	// 2. Causal role relative to the pool.
	role, roleWhy := s.roleFor(prof, sp.idx.deep, self, poolOnset)
	why = append(why, roleWhy)

	// 3. Supports: other tools that saw the same entity in the same state.
	supports := sp.supports(prof, self)

	// 4. Contradictions: same entity, opposite health. The fresher observation wins.
	var contradicted []*evidencev1.EvidencePin
	var contradicts []string
	superseded := ""
	strongerTools := map[string]map[string]bool{} // entity -> tools fresher and opposite
	touched := map[string]*evidencev1.EvidencePin{}
	for _, o := range prof.obs {
		// The validated pins (others) that observed o's entity in the
		// opposite state, in arrival order.
		for _, e := range sp.observing[obsKey{o.entity, !o.healthy}] {
			if e.pin.GetId() == pin.GetId() || e.pin.GetValidationStatus() != statusValidated {
				continue
			}
			for _, o2 := range e.prof.obs {
				if o2.entity != o.entity || o2.healthy == o.healthy {
					continue
				}
				newer := o.at.IsZero() || o2.at.IsZero() || !o.at.Before(o2.at)
				contradicts = appendUnique(contradicts, e.pin.GetId())
				if newer {
					if containsStr(e.pin.GetContradicts(), pin.GetId()) {
						continue
					}
					old := touched[e.pin.GetId()]
					if old == nil {
						old = bus.CopyPin(e.full())
						old.Version = pinVersion(e.pin) + 1
						old.CausalRole = downgrade(e.pin.GetCausalRole())
						old.Confidence = round1(baseConfidence(e.pin) * 0.5)
						touched[e.pin.GetId()] = old
						contradicted = append(contradicted, old)
					}
					old.Contradicts = appendUnique(old.Contradicts, pin.GetId())
					note := fmt.Sprintf("contradicted by fresher pin %s (%s); downgraded to %s", pin.GetId(), o.detail, roleName(old.CausalRole))
					if !strings.Contains(old.CriticRationale, note) {
						old.CriticRationale = strings.TrimSpace(strings.TrimSuffix(old.CriticRationale, ".") + "; " + note)
						old.CriticRationale = strings.TrimPrefix(old.CriticRationale, "; ")
					}
				} else {
					superseded = fmt.Sprintf("older than pin %s which shows %s", e.pin.GetId(), o2.detail)
					if strongerTools[o.entity] == nil {
						strongerTools[o.entity] = map[string]bool{}
					}
					strongerTools[o.entity][e.prof.tool] = true
				}
			}
		}
	}
	for ent, tools := range strongerTools {
		if len(tools) >= 2 {
			out.Contradicts = contradicts
			return reject(math.Min(base, 10), fmt.Sprintf("contradicted by stronger evidence: %d fresher pins from %d tools show the opposite state of %s (%s)", len(tools), len(tools), ent, superseded))
		}
	}

	// 5. Confidence.
	conf := base
	switch role {
	case roleRoot:
		f := 0.85
		if hasConcrete(prof) {
			f += 0.05
		}
		f += 0.03 * math.Min(float64(len(supports)), 3)
		conf *= math.Min(f, 1)
	case roleCascading:
		conf *= 0.85
	case roleCorrelated:
		conf *= 0.6
	default:
		if prof.healthy {
			conf *= 0.8
		} else {
			conf *= 0.5
		}
	}
	if pin.GetRawOutputTruncated() {
		conf *= 0.95
		why = append(why, "raw output truncated")
	}
	if superseded != "" {
		role = downgrade(role)
		conf *= 0.5
		why = append(why, superseded+"; downgraded to "+roleName(role))
	}
	if len(supports) > 0 {
		why = append(why, "supported by "+strings.Join(supports, ", "))
	}
	if len(contradicted) > 0 {
		ids := make([]string, 0, len(contradicted))
		for _, c := range contradicted {
			ids = append(ids, c.GetId())
		}
		why = append(why, "supersedes earlier "+strings.Join(ids, ", "))
	}
	if refs := concreteSummary(prof); refs != "" {
		why = append(why, "concrete: "+refs)
	}

	out.ValidationStatus = statusValidated
	out.CausalRole = role
	out.Confidence = round1(math.Min(conf, 100))
	out.Supports = supports
	out.Contradicts = contradicts
	out.CriticRationale = "VALIDATED as " + roleName(role) + ": " + strings.Join(nonEmpty(why), "; ")
	return out, contradicted
}

// scopeOf is the incident's scope as the validated pins show it: the
// entities they name and their namespaces (lower case).
func scopeOf(validated []*entry) (names, namespaces map[string]bool) {
	names, namespaces = map[string]bool{}, map[string]bool{}
	for _, e := range validated {
		for n := range e.prof.names {
			names[n] = true
		}
		if ns := e.pin.GetNamespace(); ns != "" {
			namespaces[strings.ToLower(ns)] = true
		}
	}
	return names, namespaces
}

// outOfScope reports whether a pin of namespace ns whose profile is prof
// lies outside the scope of the validated pins: they name entities and
// namespaces, and it shares none of either. Only results that show nothing
// abnormal are asked (the scope is built on demand, not for every pin).
func outOfScope(prof *profile, ns string, validated []*entry) bool {
	names, namespaces := scopeOf(validated)
	return len(names) > 0 && !overlaps(prof.names, names) && len(namespaces) > 0 && !namespaces[strings.ToLower(ns)]
}

// roleFor assigns the causal role of a validated pin relative to the pool:
// explainers lists the pool's validated entries with a deep root cause in
// arrival order (self, the judged pin's own entry, is skipped).
func (s *Service) roleFor(prof *profile, explainers []*entry, self *entry, onset *time.Time) (evidencev1.CausalRole, string) {
	var deep []string
	for _, k := range sortedKeys(prof.roots) {
		if deepRootKinds[k] {
			deep = append(deep, prof.roots[k])
		}
	}
	switch {
	case len(deep) > 0:
		return roleRoot, "root-cause candidate: " + textutil.Truncate(deep[0], 240)
	case len(prof.deploys) > 0:
		return s.changeRole(prof, onset)
	case prof.roots[kindCrash] != "":
		for _, e := range explainers {
			if e == self || e.pin.GetCausalRole() != roleRoot || !overlaps(prof.names, e.prof.names) {
				continue
			}
			for k := range e.prof.roots {
				if deepRootKinds[k] {
					return roleCascading, fmt.Sprintf("crash explained by root cause in pin %s (%s): %s", e.pin.GetId(), k, textutil.Truncate(prof.roots[kindCrash], 200))
				}
			}
		}
		return roleRoot, "failing component (no deeper cause in the pool yet): " + textutil.Truncate(prof.roots[kindCrash], 200)
	case len(prof.symptoms) > 0:
		k := sortedKeys(prof.symptoms)[0]
		return roleCascading, "symptom (" + k + "): " + textutil.Truncate(prof.symptoms[k], 200)
	case len(prof.commits) > 0:
		return roleCorrelated, fmt.Sprintf("%d commit(s) in range; a change is a candidate until the timeline places it", len(prof.commits))
	case prof.failing:
		return roleCorrelated, "abnormal state without a classified cause"
	case prof.healthy:
		var d []string
		for _, o := range prof.obs {
			if o.healthy {
				d = append(d, o.detail)
			}
		}
		for _, sv := range prof.series {
			if sv.normal {
				d = append(d, sv.name+" normal")
			}
		}
		return roleInfo, "healthy state rules out a failure here: " + textutil.Truncate(strings.Join(d, "; "), 240)
	}
	return roleInfo, "data present, nothing abnormal"
}

// changeRole places deploys on the incident timeline.
func (s *Service) changeRole(prof *profile, onset *time.Time) (evidencev1.CausalRole, string) {
	if onset == nil {
		return roleCorrelated, fmt.Sprintf("%d deploy(s) in range; onset of the regression not known yet", len(prof.deploys))
	}
	var before, after []string
	for _, d := range prof.deploys {
		if d.IsRollback {
			continue
		}
		start := d.StartedAt
		if start == nil {
			start = d.FinishedAt
		}
		if start == nil {
			continue
		}
		id := d.ID
		if id == "" {
			id = d.Service + "@" + d.Revision
		}
		switch {
		case !start.After(onset.Add(s.cfg.OnsetTolerance)) && !start.Before(onset.Add(-s.cfg.ChangeWindow)):
			before = append(before, fmt.Sprintf("deploy %s started %s before the onset (%s)", id, onset.Sub(*start).Round(time.Second), onset.UTC().Format(time.RFC3339)))
		case start.After(onset.Add(s.cfg.OnsetTolerance)):
			after = append(after, fmt.Sprintf("deploy %s started %s after the onset", id, start.Sub(*onset).Round(time.Second)))
		}
	}
	switch {
	case len(before) > 0:
		return roleRoot, "change-correlated root-cause candidate: " + strings.Join(before, "; ")
	case len(after) > 0:
		return roleInfo, "ruled out by timeline: " + strings.Join(after, "; ")
	}
	return roleInfo, fmt.Sprintf("no deploy within %s before the onset", s.cfg.ChangeWindow)
}

func hasConcrete(p *profile) bool {
	for _, k := range []string{refDeploy, refCommit, refExitCode, refMetricWindow, refNode, refEvent, refDBEvent, refPod} {
		if len(p.refs[k]) > 0 {
			return true
		}
	}
	return false
}

func concreteSummary(p *profile) string {
	var parts []string
	for _, k := range []string{refDeploy, refCommit, refExitCode, refPod, refNode, refMetricWindow, refDBEvent} {
		if v := p.refs[k]; len(v) > 0 {
			if len(v) > 3 {
				v = append(v[:3:3], fmt.Sprintf("+%d", len(p.refs[k])-3))
			}
			parts = append(parts, k+" "+strings.Join(v, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func nonEmpty(in []string) []string {
	out := in[:0:0]
	for _, s := range in {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func containsStr(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package critic

import (
	"slices"
	"time"
	"unique"
)

// poolIndex is what judge reads of a session's pool, kept up to date as pins
// are added and their versions replace each other, instead of walking every
// pin of the session for each new one (a session holds up to
// -tools.max-pins-per-session pins, and judging a pin walked them all up to
// three times: its earliest failure onset, its supports, the root causes
// that explain a crash).
type poolIndex struct {
	// validated lists the entries whose pin is validated, in arrival order.
	validated []*entry
	// byTool is validated split by the pin's tool: supports come from other
	// tools than the judged pin's.
	byTool map[unique.Handle[string]][]*entry
	// deep is validated restricted to the entries with a deep root cause
	// (deepRootKinds), the only ones that can explain a crash.
	deep []*entry
	// onset is the earliest failure onset of the failing entries that are
	// not rejected; onsetStale says an entry it may have come from was
	// rejected since, so it must be found again.
	onset      *time.Time
	onsetStale bool
}

// validatedNow reports whether e's pin counts as validated for the index.
func (e *entry) validatedNow() bool { return e.pin.GetValidationStatus() == statusValidated }

// onsetNow reports whether e's failure onset counts for the pool's earliest.
func (e *entry) onsetNow() bool {
	return e.prof.failing && e.prof.onset != nil && e.pin.GetValidationStatus() != statusRejected
}

// hasDeepRoot reports whether a profile names a deep root cause.
func hasDeepRoot(pr *profile) bool {
	for k := range pr.roots {
		if deepRootKinds[k] {
			return true
		}
	}
	return false
}

// reindex updates the index after e changed (or arrived): wasValidated and
// wasOnset are what validatedNow and onsetNow reported before the change
// (both false for a new entry). Caller holds sp.mu.
func (sp *sessionPool) reindex(e *entry, wasValidated, wasOnset bool) {
	ix := &sp.idx
	switch now := e.validatedNow(); {
	case now && !wasValidated:
		ix.validated = insertBySeq(ix.validated, e)
		if ix.byTool == nil {
			ix.byTool = map[unique.Handle[string]][]*entry{}
		}
		ix.byTool[e.prof.toolID] = insertBySeq(ix.byTool[e.prof.toolID], e)
		if hasDeepRoot(e.prof) {
			ix.deep = insertBySeq(ix.deep, e)
		}
	case !now && wasValidated:
		ix.validated = removeBySeq(ix.validated, e)
		ix.byTool[e.prof.toolID] = removeBySeq(ix.byTool[e.prof.toolID], e)
		if hasDeepRoot(e.prof) {
			ix.deep = removeBySeq(ix.deep, e)
		}
	}
	switch now := e.onsetNow(); {
	case now && !wasOnset:
		if !ix.onsetStale && (ix.onset == nil || e.prof.onset.Before(*ix.onset)) {
			ix.onset = e.prof.onset
		}
	case !now && wasOnset:
		if ix.onset != nil && !e.prof.onset.After(*ix.onset) {
			ix.onsetStale = true
		}
	}
}

// earliestOnset is the earliest failure onset among the pool's failing pins
// that are not rejected (nil when none has one). Caller holds sp.mu.
func (sp *sessionPool) earliestOnset() *time.Time {
	ix := &sp.idx
	if ix.onsetStale {
		ix.onset, ix.onsetStale = nil, false
		for _, e := range sp.order {
			if e.onsetNow() && (ix.onset == nil || e.prof.onset.Before(*ix.onset)) {
				ix.onset = e.prof.onset
			}
		}
	}
	return ix.onset
}

// maxSupports is how many supporting pins a verdict names.
const maxSupports = 10

// supports returns the ids of the first maxSupports validated pins, in
// arrival order, that support prof (the judged pin's profile; self is its
// entry, nil when new): from another tool, the same health, an entity in
// common. Caller holds sp.mu.
func (sp *sessionPool) supports(prof *profile, self *entry) []string {
	if !prof.failing && !prof.healthy {
		return nil // nothing can share its state
	}
	// The first maxSupports of all are among the first maxSupports of their
	// own tool's list (each list is in arrival order).
	var found []*entry
	for tool, list := range sp.idx.byTool {
		if tool == prof.toolID && prof.tool != "" {
			continue
		}
		n := 0
		for _, e := range list {
			if n >= maxSupports {
				break
			}
			if e == self {
				continue
			}
			same := prof.failing && e.prof.failing || prof.healthy && e.prof.healthy && !e.prof.failing
			if same && overlaps(prof.names, e.prof.names) {
				found = append(found, e)
				n++
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b *entry) int { return a.seq - b.seq })
	ids := make([]string, 0, min(len(found), maxSupports))
	for _, e := range found[:min(len(found), maxSupports)] {
		ids = append(ids, e.pin.GetId())
	}
	return ids
}

// validatedOthers is the pool's validated entries but self, in arrival
// order, in the pool's scratch slice (valid until the next call). Caller
// holds sp.mu.
func (sp *sessionPool) validatedOthers(self *entry) []*entry {
	others := sp.others[:0]
	for _, e := range sp.idx.validated {
		if e != self {
			others = append(others, e)
		}
	}
	sp.others = others
	return others
}

// insertBySeq inserts e into list, which is sorted by arrival (seq).
func insertBySeq(list []*entry, e *entry) []*entry {
	if n := len(list); n == 0 || list[n-1].seq < e.seq {
		return append(list, e) // the usual case: pins are judged as they come
	}
	i, _ := slices.BinarySearchFunc(list, e.seq, func(x *entry, seq int) int { return x.seq - seq })
	return slices.Insert(list, i, e)
}

// removeBySeq removes e from list, which is sorted by arrival (seq).
func removeBySeq(list []*entry, e *entry) []*entry {
	i, ok := slices.BinarySearchFunc(list, e.seq, func(x *entry, seq int) int { return x.seq - seq })
	if !ok || list[i] != e {
		return list
	}
	return slices.Delete(list, i, i+1)
}

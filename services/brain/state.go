package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// Investigation states (InvestigationRecord.state).
const (
	stateQueued    = "queued"
	stateRunning   = "running"
	stateCompleted = "completed"
	stateNoise     = "noise"
	stateFailed    = "failed"
)

// Session states (SessionSummary.state).
const (
	sessReceived  = "received"
	sessRunning   = "running"
	sessCompleted = "completed"
	sessSilent    = "silent"
	sessNoise     = "noise"
	sessFailed    = "failed"
)

// Pipeline stage names, in order (the record's stages and the checkpoint
// use them).
const (
	stageResolve  = "resolve_integrations"
	stageExtract  = "extract_alert"
	stagePlan     = "plan_actions"
	stageGather   = "gather_evidence"
	stageDiagnose = "diagnose"
	stageDeliver  = "deliver"
)

var pipelineStages = []string{stageResolve, stageExtract, stagePlan, stageGather, stageDiagnose, stageDeliver}

// loopState is the ReAct loop's bookkeeping, checkpointed with the record.
type loopState struct {
	Round      int      `json:"round"`
	Stagnant   int      `json:"stagnant"`
	Stalled    int      `json:"stalled"`
	Rejections int      `json:"rejections"`
	Executed   []string `json:"executed,omitempty"` // call keys (intent + canonical params)
	// Pending calls of the current or next round (seed, critic-requested or
	// missing intents); a call leaves the list once it ran, so a resumed round
	// continues where it stopped.
	Pending []pendingCall `json:"pending,omitempty"`
	Seeded  bool          `json:"seeded,omitempty"`
	// InRound is set while a round's calls run; Round* count its outcome.
	InRound    bool   `json:"in_round,omitempty"`
	RoundCalls int    `json:"round_calls,omitempty"`
	RoundFresh int    `json:"round_fresh,omitempty"`
	RoundNew   int    `json:"round_new,omitempty"`
	Breaker    string `json:"breaker,omitempty"`
	Progressed bool   `json:"progressed,omitempty"`
	// Done marks the loop as finished; Outcome says how.
	Done           bool     `json:"done"`
	Status         string   `json:"status,omitempty"` // DiagnosisStatus name
	StopReason     string   `json:"stop_reason,omitempty"`
	Unknowns       []string `json:"unknowns,omitempty"`
	AcceptChecked  bool     `json:"accept_checked,omitempty"`
	RetriedMissing bool     `json:"retried_missing,omitempty"`
	Stripped       bool     `json:"stripped,omitempty"`
	// FinalAnswer is the model's last text answer (model path).
	FinalAnswer string `json:"final_answer,omitempty"`
	// ModelDiagnosis is the diagnosis parsed from the model's answer (protojson).
	ModelDiagnosis json.RawMessage `json:"model_diagnosis,omitempty"`
	Degraded       bool            `json:"degraded,omitempty"`
	DegradedReason string          `json:"degraded_reason,omitempty"`
}

// pendingCall is a tool call the loop will make.
type pendingCall struct {
	Intent string         `json:"intent"`
	Params map[string]any `json:"params,omitempty"`
	Origin string         `json:"origin"`
}

// invState is one investigation's state: the record plus the evidence and
// loop bookkeeping. Stages read and update it; it is checkpointed after each.
type invState struct {
	rec      *investigationv1.InvestigationRecord
	rc       *evidencev1.RouterContext
	pins     []*evidencev1.EvidencePin // arrival order, latest version of each
	pinIdx   map[string]int
	done     map[string]bool // completed stages
	loop     loopState
	report   string
	silent   bool
	review   *investigationv1.CriticReview
	analysis *analysisSnapshot
	// runStart and baseWallMs measure the wall time across resumes.
	runStart   time.Time
	baseWallMs int64
	rev        uint64 // KV revision of the checkpoint
	savedAt    time.Time
}

// analysisSnapshot keeps the latest synthesis for diagnose.
type analysisSnapshot struct {
	hyps []*investigationv1.Hypothesis
}

func (st *invState) addPin(p *evidencev1.EvidencePin) (isNew bool) {
	if p == nil || p.GetId() == "" {
		return false
	}
	if st.pinIdx == nil {
		st.pinIdx = map[string]int{}
	}
	if i, ok := st.pinIdx[p.GetId()]; ok {
		if p.GetVersion() >= st.pins[i].GetVersion() {
			st.pins[i] = p
		}
		return false
	}
	st.pinIdx[p.GetId()] = len(st.pins)
	st.pins = append(st.pins, p)
	return true
}

func (st *invState) pin(id string) *evidencev1.EvidencePin {
	if i, ok := st.pinIdx[id]; ok {
		return st.pins[i]
	}
	return nil
}

func (st *invState) executed(key string) bool {
	for _, k := range st.loop.Executed {
		if k == key {
			return true
		}
	}
	return false
}

func (st *invState) wallMs(now time.Time) int64 {
	if st.runStart.IsZero() {
		return st.baseWallMs // loaded, not running here (the sweeper)
	}
	return st.baseWallMs + now.Sub(st.runStart).Milliseconds()
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
	cp := checkpoint{Record: rec, Loop: st.loop, Report: st.report, Silent: st.silent, SavedAt: st.savedAt}
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

// ---- the state store ----

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
	data, err := st.marshal()
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", st.rec.GetInvestigationId(), err)
	}
	// A state loaded from the store is written back only over the revision
	// it was loaded at: when another brain replica took the investigation
	// over meanwhile (its work item was redelivered after this replica
	// stopped acknowledging progress), this replica is fenced off.
	var rev uint64
	if st.rev == 0 {
		rev, err = s.records.Put(ctx, st.rec.GetInvestigationId(), data)
	} else {
		rev, err = s.records.Update(ctx, st.rec.GetInvestigationId(), data, st.rev)
		if errors.Is(err, errConflict) {
			err = errFenced
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", st.rec.GetInvestigationId(), err)
	}
	st.rev = rev
	return nil
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

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

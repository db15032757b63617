package brain

import (
	"encoding/json"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
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
	rec    *investigationv1.InvestigationRecord
	rc     *evidencev1.RouterContext
	pins   []*evidencev1.EvidencePin // arrival order, latest version of each
	pinIdx map[string]int
	done   map[string]bool // completed stages
	loop   loopState
	report string
	silent bool
	review *investigationv1.CriticReview
	// pinsRev counts changes to the pins as the analysis reads them (a new
	// pin, a pin whose facts changed; not the critic's verdicts on them);
	// evidence is the analysis of one pinsRev (not checkpointed: a resumed
	// investigation analyses again).
	pinsRev  uint64
	evidence *evidenceModel
	cands    *candidateValues
	// runStart and baseWallMs measure the wall time across resumes.
	runStart   time.Time
	baseWallMs int64
	rev        uint64 // KV revision of the checkpoint
	savedAt    time.Time
	writer     string // this run's token in the checkpoints it writes (not loaded)
}

func (st *invState) addPin(p *evidencev1.EvidencePin) (isNew bool) {
	if p == nil || p.GetId() == "" {
		return false
	}
	if st.pinIdx == nil {
		st.pinIdx = map[string]int{}
	}
	if i, ok := st.pinIdx[p.GetId()]; ok {
		if old := st.pins[i]; p.GetVersion() >= old.GetVersion() {
			st.pins[i] = p
			if !analysis.SameInput(old, p) {
				st.pinsRev++ // a verdict alone leaves the evidence model as it is
			}
		}
		return false
	}
	st.pinIdx[p.GetId()] = len(st.pins)
	st.pins = append(st.pins, p)
	st.pinsRev++
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

// truncateRunes cuts s to n runes, marking the cut.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

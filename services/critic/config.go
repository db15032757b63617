package critic

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"flag"
	"fmt"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
)

// The guardrails the critic owns (their owner, flag and record field are the
// contract's, package guardrail).
const (
	GuardrailThreshold      = investigationv1.Guardrail_GUARDRAIL_CRITIC_THRESHOLD
	GuardrailMaxRounds      = investigationv1.Guardrail_GUARDRAIL_CRITIC_MAX_ROUNDS
	GuardrailRejectionLimit = investigationv1.Guardrail_GUARDRAIL_EVALUATOR_REJECTION_LIMIT
	GuardrailEvidence       = investigationv1.Guardrail_GUARDRAIL_EVIDENCE_SUFFICIENCY
	GuardrailConclude       = investigationv1.Guardrail_GUARDRAIL_CONCLUDE_CONFIDENCE
)

// Config holds the critic's guardrails and tuning. Every field has a default
// (DefaultConfig) and a flag prefixed "critic.".
type Config struct {
	// Threshold is the Loop of Truth acceptance score (0-1): a review scoring at
	// or above it recommends ACCEPT.
	Threshold float64
	// MaxRounds bounds the Loop of Truth: at this round a review that is still
	// below the threshold recommends ESCALATE instead of GATHER_MORE.
	MaxRounds int
	// EvaluatorRejectionLimit is the number of refused conclusions after which
	// AcceptConclusion lets the loop stop with limit_reached (NEEDS_REVIEW).
	EvaluatorRejectionLimit int
	// ConcludeConfidence: a proposed conclusion whose status is left open and
	// whose confidence is below this is handed over to a human (NEEDS_REVIEW)
	// rather than held to full proof. Analysis states confidences only; this
	// is where they meet a gate.
	ConcludeConfidence float64
	// MaxBlockingGaps is the number of open evidence gaps a conclusion may
	// keep and still be accepted (0: every gap blocks).
	MaxBlockingGaps int
	// MinIndependentSources is the number of distinct tools whose validated pins
	// must back the leading hypothesis.
	MinIndependentSources int
	// AlternativeMargin: a runner-up hypothesis whose confidence is within this
	// margin of the leader's is an unresolved alternative.
	AlternativeMargin float64
	// ChangeWindow is how long before the onset of a regression a deploy is
	// still a root-cause candidate.
	ChangeWindow time.Duration
	// OnsetTolerance is the clock skew allowed when comparing an onset with a
	// deploy start.
	OnsetTolerance time.Duration
	// MaxSessions bounds the number of session pools kept in memory; the least
	// recently used pool is dropped and rebuilt from the stream when needed.
	MaxSessions int
	// MaxPoolBytes bounds the session pools in bytes (the encoded size of
	// their pins, twice, for the profiles built from them); least recently
	// used pools go first.
	MaxPoolBytes int64
	// CodeRoot holds the checkouts the SAST evaluator (EvaluateFinding) may
	// re-read cited code from; empty: it refuses (in one process it
	// defaults to -triage.code-root).
	CodeRoot string
	// BatchMax is the most added pins judged together (one hold of the
	// session's lease, one wait for the acknowledgements of their
	// verdicts); BatchWait is how long the critic gathers pins after the
	// first of a batch before it judges them.
	BatchMax  int
	BatchWait time.Duration
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Threshold:               0.80,
		MaxRounds:               3,
		EvaluatorRejectionLimit: 3,
		ConcludeConfidence:      0.70,
		MinIndependentSources:   2,
		AlternativeMargin:       0.05,
		ChangeWindow:            2 * time.Hour,
		OnsetTolerance:          2 * time.Minute,
		MaxSessions:             4096,
		MaxPoolBytes:            256 << 20,
		BatchMax:                64,
		BatchWait:               2 * time.Millisecond,
	}
}

// RegisterFlags registers the critic's flags, prefixed "critic.".
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.Threshold, "critic.threshold", c.Threshold, "Loop of Truth acceptance score (0-1)")
	fs.IntVar(&c.MaxRounds, "critic.max-rounds", c.MaxRounds, "Loop of Truth rounds before escalating to a human")
	fs.IntVar(&c.EvaluatorRejectionLimit, "critic.evaluator-rejection-limit", c.EvaluatorRejectionLimit, "refused conclusions before the investigation ends as NEEDS_REVIEW")
	fs.Float64Var(&c.ConcludeConfidence, "critic.conclude-confidence", c.ConcludeConfidence, "confidence (0-1) below which a proposed conclusion is handed over to a human for review")
	fs.IntVar(&c.MaxBlockingGaps, "critic.max-blocking-gaps", c.MaxBlockingGaps, "open evidence gaps a conclusion may keep and still be accepted")
	fs.IntVar(&c.MinIndependentSources, "critic.min-sources", c.MinIndependentSources, "distinct tools that must back the leading hypothesis")
	fs.Float64Var(&c.AlternativeMargin, "critic.alternative-margin", c.AlternativeMargin, "confidence margin under which a runner-up hypothesis is unresolved")
	fs.DurationVar(&c.ChangeWindow, "critic.change-window", c.ChangeWindow, "how long before an onset a deploy is still a root-cause candidate")
	fs.DurationVar(&c.OnsetTolerance, "critic.onset-tolerance", c.OnsetTolerance, "clock skew allowed between onset and deploy start")
	fs.IntVar(&c.MaxSessions, "critic.max-sessions", c.MaxSessions, "session pools kept in memory")
	fs.StringVar(&c.CodeRoot, "critic.code-root", c.CodeRoot, "folder of the checkouts the SAST evaluator re-reads cited code from (empty: -triage.code-root)")
	fs.IntVar(&c.BatchMax, "critic.batch-max", c.BatchMax, "added pins judged together at most (their verdicts published at once)")
	fs.DurationVar(&c.BatchWait, "critic.batch-wait", c.BatchWait, "how long the critic gathers added pins after the first of a batch before judging them (0: only those already delivered)")
	fs.Int64Var(&c.MaxPoolBytes, "critic.max-pool-bytes", c.MaxPoolBytes, "bytes of the session pools kept in memory (least recently used dropped first)")
}

// Validate checks the configuration; the error names the field.
func (c *Config) Validate() error {
	var errs []error
	if c.Threshold <= 0 || c.Threshold > 1 {
		errs = append(errs, fmt.Errorf("critic.threshold must be in (0,1], got %v", c.Threshold))
	}
	if c.MaxRounds < 1 {
		errs = append(errs, fmt.Errorf("critic.max-rounds must be >= 1, got %d", c.MaxRounds))
	}
	if c.EvaluatorRejectionLimit < 1 {
		errs = append(errs, fmt.Errorf("critic.evaluator-rejection-limit must be >= 1, got %d", c.EvaluatorRejectionLimit))
	}
	if c.ConcludeConfidence < 0 || c.ConcludeConfidence > 1 {
		errs = append(errs, fmt.Errorf("critic.conclude-confidence must be in [0,1], got %v", c.ConcludeConfidence))
	}
	if c.MaxBlockingGaps < 0 {
		errs = append(errs, fmt.Errorf("critic.max-blocking-gaps must be >= 0, got %d", c.MaxBlockingGaps))
	}
	if c.MinIndependentSources < 1 {
		errs = append(errs, fmt.Errorf("critic.min-sources must be >= 1, got %d", c.MinIndependentSources))
	}
	if c.AlternativeMargin < 0 || c.AlternativeMargin >= 1 {
		errs = append(errs, fmt.Errorf("critic.alternative-margin must be in [0,1), got %v", c.AlternativeMargin))
	}
	if c.ChangeWindow <= 0 {
		errs = append(errs, fmt.Errorf("critic.change-window must be positive, got %s", c.ChangeWindow))
	}
	if c.OnsetTolerance < 0 {
		errs = append(errs, fmt.Errorf("critic.onset-tolerance must not be negative, got %s", c.OnsetTolerance))
	}
	if c.MaxSessions < 1 {
		errs = append(errs, fmt.Errorf("critic.max-sessions must be >= 1, got %d", c.MaxSessions))
	}
	if c.BatchMax < 1 || c.BatchMax > bus.MaxBatch {
		errs = append(errs, fmt.Errorf("critic.batch-max must be in [1,%d], got %d", bus.MaxBatch, c.BatchMax))
	}
	if c.BatchWait < 0 || c.BatchWait > time.Second {
		errs = append(errs, fmt.Errorf("critic.batch-wait must be in [0,1s], got %s", c.BatchWait))
	}
	if c.MaxPoolBytes < 1 {
		errs = append(errs, fmt.Errorf("critic.max-pool-bytes must be >= 1, got %d", c.MaxPoolBytes))
	}
	return errors.Join(errs...)
}

// Limits are the critic's live limits, its fields of the record's Guardrails.
func (c *Config) Limits() *investigationv1.Guardrails {
	return &investigationv1.Guardrails{
		CriticThreshold: c.Threshold, CriticMaxRounds: int32(c.MaxRounds),
		EvaluatorRejectionLimit: int32(c.EvaluatorRejectionLimit), MaxBlockingGaps: proto.Int32(int32(c.MaxBlockingGaps)),
		ConcludeConfidence: c.ConcludeConfidence,
	}
}

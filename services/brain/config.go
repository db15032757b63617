package brain

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
)

// The guardrails the brain owns (their owner, flag and record field are the
// contract's, package guardrail).
const (
	GuardrailMaxLoops          = investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS
	GuardrailStagnation        = investigationv1.Guardrail_GUARDRAIL_MAX_STAGNANT_ITERATIONS
	GuardrailContextBudget     = investigationv1.Guardrail_GUARDRAIL_CONTEXT_BUDGET_CHARS
	GuardrailMaxToolCalls      = investigationv1.Guardrail_GUARDRAIL_MAX_TOOL_CALLS
	GuardrailMaxWall           = investigationv1.Guardrail_GUARDRAIL_MAX_WALL_MS
	GuardrailStalledRetrievals = investigationv1.Guardrail_GUARDRAIL_MAX_STALLED_RETRIEVALS
	GuardrailDegraded          = investigationv1.Guardrail_GUARDRAIL_DEGRADED_RESULT
)

// Config holds the brain's guardrails and settings. Every field has a
// default (DefaultConfig) and a flag prefixed "brain.".
type Config struct {
	// MaxLoops is the iteration cap of both loops (default 20: room for a
	// model to explore, a bound on a model that never concludes).
	MaxLoops int
	// MaxStagnantIterations: after this many consecutive iterations whose tool
	// calls were all replays, tool access is stripped and the loop must conclude.
	MaxStagnantIterations int
	// ContextBudgetChars bounds the model conversation; above it the
	// lowest-value evidence is evicted to one-line summaries.
	ContextBudgetChars int64
	// MaxToolCalls bounds the tool calls of one investigation (a circuit
	// breaker: cost and load on the inspected systems stay bounded).
	MaxToolCalls int
	// MaxWall bounds one investigation's wall time (a circuit breaker: an
	// answer late past this is worth less than a handover now).
	MaxWall time.Duration
	// MaxStalledRetrievals: this many consecutive rounds that add no new
	// evidence end the loop (retrieval that stopped progressing).
	MaxStalledRetrievals int
	// DedupWindow: an alert whose fingerprint had an investigation opened less
	// than this long ago attaches to it instead of starting another.
	DedupWindow time.Duration
	// CallTimeout bounds one call to another service.
	CallTimeout time.Duration
	// Workers is the number of work-queue consumers per process.
	Workers int
	// ModelMaxTokens bounds one model completion.
	ModelMaxTokens int
	// MaxPinsInPrompt bounds the evidence summaries listed in a model prompt.
	MaxPinsInPrompt int
	// DryRunDelivery renders and stores reports without sending them.
	DryRunDelivery bool
	// NonPagedEnvironments: alerts whose environment (label, or a token of
	// the cluster or namespace name) is one of these need no production
	// action; the diagnosis says so and reports what it found there.
	NonPagedEnvironments []string

	// DependencyAttempts bounds the attempts of stages whose dependency
	// (tools, router, critic, delivery, NATS) is unavailable, over one
	// investigation; then the investigation fails visibly with the reason.
	DependencyAttempts int
	// RetryBackoff is the delay before the first retry; it doubles per retry
	// up to RetryMaxBackoff.
	RetryBackoff    time.Duration
	RetryMaxBackoff time.Duration
	// FailedDedupWindow: once an investigation failed, alerts with its
	// fingerprint attach to it only this long; later ones start afresh.
	FailedDedupWindow time.Duration
	// OrphanAge: an investigation queued or running this long with no work
	// item left on the queue (a crash between saving and queueing, or an
	// item the queue gave up on) is re-queued by the sweeper.
	OrphanAge time.Duration
	// SweepInterval is how often the sweeper looks for orphans (0 = never).
	SweepInterval time.Duration
	// MaxRequeues: an orphan re-queued this often is failed instead.
	MaxRequeues int
	// MaxAlertsPerRequest bounds the alerts of one webhook request; a
	// request with more is refused (413) before anything is stored or
	// queued. (The firing alerts of one request are one incident, one
	// investigation; the bound caps the parsing and the per-alert noise
	// records.)
	MaxAlertsPerRequest int
	// CategoryPrior is the category prior weighed with the mechanism
	// reading (internal/catprior): "embedded" (the model trained on the
	// scenario sets the binary ships), "off", or a model file written by
	// `rcamesh prior` (a team's own labelled incidents).
	CategoryPrior string
	// CategoryPriorWithout leaves training sets out of the prior: an
	// evaluation of a set leaves that set out, so that no incident is
	// scored by a model that learned it.
	CategoryPriorWithout []string
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxLoops:              20,
		MaxStagnantIterations: 2,
		ContextBudgetChars:    120_000,
		MaxToolCalls:          40,
		MaxWall:               5 * time.Minute,
		MaxStalledRetrievals:  3,
		DedupWindow:           30 * time.Minute,
		CallTimeout:           2 * time.Minute,
		Workers:               2,
		ModelMaxTokens:        4096,
		MaxPinsInPrompt:       60,
		NonPagedEnvironments:  append([]string(nil), analysis.NonPagedEnvironments...),
		DependencyAttempts:    6,
		RetryBackoff:          2 * time.Second,
		RetryMaxBackoff:       time.Minute,
		FailedDedupWindow:     2 * time.Minute,
		OrphanAge:             5 * time.Minute,
		SweepInterval:         time.Minute,
		MaxRequeues:           3,
		MaxAlertsPerRequest:   1000,
		CategoryPrior:         "embedded",
	}
}

// RegisterFlags registers the brain's flags, prefixed "brain.".
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxLoops, "brain.max-loops", c.MaxLoops, "ReAct loop iteration cap")
	fs.IntVar(&c.MaxStagnantIterations, "brain.max-stagnant-iterations", c.MaxStagnantIterations, "replay-only iterations before tool access is stripped")
	fs.Int64Var(&c.ContextBudgetChars, "brain.context-budget-chars", c.ContextBudgetChars, "model conversation size above which low-value evidence is evicted")
	fs.IntVar(&c.MaxToolCalls, "brain.max-tool-calls", c.MaxToolCalls, "tool calls per investigation")
	fs.DurationVar(&c.MaxWall, "brain.max-wall", c.MaxWall, "wall time per investigation")
	fs.IntVar(&c.MaxStalledRetrievals, "brain.max-stalled-retrievals", c.MaxStalledRetrievals, "consecutive rounds without new evidence before the loop stops")
	fs.DurationVar(&c.DedupWindow, "brain.dedup-window", c.DedupWindow, "alerts with the same fingerprint within this window attach to one investigation")
	fs.DurationVar(&c.CallTimeout, "brain.call-timeout", c.CallTimeout, "timeout of one call to another service")
	fs.IntVar(&c.Workers, "brain.workers", c.Workers, "work-queue consumers per process")
	fs.IntVar(&c.ModelMaxTokens, "brain.model-max-tokens", c.ModelMaxTokens, "max tokens of one model completion")
	fs.IntVar(&c.MaxPinsInPrompt, "brain.max-pins-in-prompt", c.MaxPinsInPrompt, "evidence summaries listed in a model prompt")
	fs.BoolVar(&c.DryRunDelivery, "brain.dry-run-delivery", c.DryRunDelivery, "render and store reports without sending them")
	fs.IntVar(&c.DependencyAttempts, "brain.dependency-attempts", c.DependencyAttempts, "attempts of stages whose dependency (tools, router, critic, delivery, NATS) is unavailable, per investigation, before it fails")
	fs.DurationVar(&c.RetryBackoff, "brain.retry-backoff", c.RetryBackoff, "delay before the first retry of a stage whose dependency is unavailable (doubles per retry)")
	fs.DurationVar(&c.RetryMaxBackoff, "brain.retry-max-backoff", c.RetryMaxBackoff, "longest delay between retries of a stage")
	fs.DurationVar(&c.FailedDedupWindow, "brain.failed-dedup-window", c.FailedDedupWindow, "how long alerts attach to a failed investigation of their fingerprint before a fresh one starts")
	fs.DurationVar(&c.OrphanAge, "brain.orphan-age", c.OrphanAge, "age after which a queued or running investigation with no work item is re-queued")
	fs.DurationVar(&c.SweepInterval, "brain.sweep-interval", c.SweepInterval, "how often orphaned investigations are looked for (0 = never)")
	fs.IntVar(&c.MaxRequeues, "brain.max-requeues", c.MaxRequeues, "re-queues of an orphaned investigation before it fails")
	fs.IntVar(&c.MaxAlertsPerRequest, "brain.max-alerts-per-request", c.MaxAlertsPerRequest, "alerts one webhook request may carry (more: 413)")
	fs.StringVar(&c.CategoryPrior, "brain.category-prior", c.CategoryPrior, "category prior weighed with the mechanism reading: embedded, off, or a model file written by `rcamesh prior`")
	fs.Func("brain.category-prior-without", "comma list of the prior's training sets to leave out (an evaluation leaves out the set it scores)", func(v string) error {
		c.CategoryPriorWithout = nil
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.CategoryPriorWithout = append(c.CategoryPriorWithout, e)
			}
		}
		return nil
	})
	fs.Func("brain.nonpaged-environments", "comma list of environments that are not paged (default "+strings.Join(c.NonPagedEnvironments, ",")+"); empty: every environment is paged", func(v string) error {
		c.NonPagedEnvironments = []string{}
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.NonPagedEnvironments = append(c.NonPagedEnvironments, e)
			}
		}
		return nil
	})
}

// Validate checks the configuration; the error names the field.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxLoops < 1 {
		errs = append(errs, fmt.Errorf("brain.max-loops must be >= 1, got %d", c.MaxLoops))
	}
	if c.MaxStagnantIterations < 1 {
		errs = append(errs, fmt.Errorf("brain.max-stagnant-iterations must be >= 1, got %d", c.MaxStagnantIterations))
	}
	if c.ContextBudgetChars < 1000 {
		errs = append(errs, fmt.Errorf("brain.context-budget-chars must be >= 1000, got %d", c.ContextBudgetChars))
	}
	if c.MaxToolCalls < 1 {
		errs = append(errs, fmt.Errorf("brain.max-tool-calls must be >= 1, got %d", c.MaxToolCalls))
	}
	if c.MaxWall <= 0 {
		errs = append(errs, fmt.Errorf("brain.max-wall must be positive, got %s", c.MaxWall))
	}
	if c.MaxStalledRetrievals < 1 {
		errs = append(errs, fmt.Errorf("brain.max-stalled-retrievals must be >= 1, got %d", c.MaxStalledRetrievals))
	}
	if c.DedupWindow < time.Second {
		// Session ids number the windows in whole seconds.
		errs = append(errs, fmt.Errorf("brain.dedup-window must be at least 1s, got %s", c.DedupWindow))
	}
	if c.CallTimeout <= 0 {
		errs = append(errs, fmt.Errorf("brain.call-timeout must be positive, got %s", c.CallTimeout))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("brain.workers must be >= 1, got %d", c.Workers))
	}
	if c.ModelMaxTokens < 1 {
		errs = append(errs, fmt.Errorf("brain.model-max-tokens must be >= 1, got %d", c.ModelMaxTokens))
	}
	if c.MaxPinsInPrompt < 1 {
		errs = append(errs, fmt.Errorf("brain.max-pins-in-prompt must be >= 1, got %d", c.MaxPinsInPrompt))
	}
	if c.DependencyAttempts < 1 {
		errs = append(errs, fmt.Errorf("brain.dependency-attempts must be >= 1, got %d", c.DependencyAttempts))
	}
	if c.RetryBackoff <= 0 || c.RetryMaxBackoff < c.RetryBackoff {
		errs = append(errs, fmt.Errorf("brain.retry-backoff must be positive and at most brain.retry-max-backoff, got %s and %s", c.RetryBackoff, c.RetryMaxBackoff))
	}
	if c.FailedDedupWindow <= 0 {
		errs = append(errs, fmt.Errorf("brain.failed-dedup-window must be positive, got %s", c.FailedDedupWindow))
	}
	if c.OrphanAge <= 0 {
		errs = append(errs, fmt.Errorf("brain.orphan-age must be positive, got %s", c.OrphanAge))
	}
	if c.SweepInterval < 0 {
		errs = append(errs, fmt.Errorf("brain.sweep-interval must be >= 0, got %s", c.SweepInterval))
	}
	if c.MaxRequeues < 0 {
		errs = append(errs, fmt.Errorf("brain.max-requeues must be >= 0, got %d", c.MaxRequeues))
	}
	if c.MaxAlertsPerRequest < 1 {
		errs = append(errs, fmt.Errorf("brain.max-alerts-per-request must be >= 1, got %d", c.MaxAlertsPerRequest))
	}
	return errors.Join(errs...)
}

package sast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
	"github.com/rcamesh/rcamesh/internal/sast/repo"
)

// Limits are the circuit breakers of one investigation.
type Limits struct {
	MaxToolCalls   int           // execution limit on tool calls
	MaxIterations  int           // loop iterations
	MaxWall        time.Duration // wall time per finding
	Stagnation     int           // consecutive retrievals adding nothing
	FindingTimeout time.Duration
}

// DefaultLimits bound one finding's triage: enough calls to read a call
// chain, few enough that a finding never costs more than a human look.
func DefaultLimits() Limits {
	return Limits{MaxToolCalls: 15, MaxIterations: 8, MaxWall: 5 * time.Minute, Stagnation: 3}
}

// Cost is what one investigation spent.
type Cost struct {
	ToolCalls  int     `json:"toolCalls"`
	Iterations int     `json:"iterations"`
	WallMS     float64 `json:"wallMs"`
}

// Result is the triage of one finding.
type Result struct {
	Finding     Finding      `json:"finding"`
	Verdict     string       `json:"verdict"`
	Reason      string       `json:"reason"`
	Claims      []Claim      `json:"claims,omitempty"`
	Evidence    []Citation   `json:"evidence,omitempty"`
	Unknowns    []string     `json:"unknowns,omitempty"`
	NextFetches []string     `json:"nextFetches,omitempty"`
	Rejections  []Rejection  `json:"rejections,omitempty"`
	StopReason  string       `json:"stopReason"`
	Trace       []TraceEntry `json:"trace,omitempty"`
	Cost        Cost         `json:"cost"`
	Error       string       `json:"error,omitempty"`
}

// TraceEntry is one action of the loop (tool call, analysis, evaluation).
type TraceEntry struct {
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// Analyst produces an evidence package for a finding: the offline
// analyser, or a model agent driving the same tools.
type Analyst interface {
	// Analyse returns the package for the state so far. history holds the
	// evaluator's earlier rejections.
	Analyse(ctx context.Context, st *State) (Package, error)
}

// State is the agent's state: bookkeeping and analysis.
type State struct {
	Finding  Finding
	Repo     *repo.Repo
	Tools    *Tools
	Claims   []Claim
	Evidence []Citation
	Unknowns []string
	Next     []string
	History  []Rejection
	Trace    []TraceEntry
	// Messages is the model conversation (model analyst only).
	Messages       []llm.Message
	seenRejections int
}

// Triager runs investigations.
type Triager struct {
	Repo    *repo.Repo
	Prog    *javaflow.Program
	Analyst Analyst // nil: the offline analyser
	// Evaluator judges every package: the critic's EvaluateFinding over
	// gRPC (CriticEvaluator). Without one every finding ends in an error.
	Evaluator Evaluator
	Limits    Limits
	Parallel  int
	Logger    *slog.Logger
}

// NewTriager reads the repository r; ev judges the packages.
func NewTriager(r *repo.Repo, ev Evaluator, logger *slog.Logger) *Triager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := javaflow.NewProgram(r)
	return &Triager{Repo: r, Prog: p, Evaluator: ev, Limits: DefaultLimits(), Parallel: runtime.GOMAXPROCS(0), Logger: logger}
}

// Run triages every finding, in parallel (bounded), in input order. Each
// worker has its own parse cache: tree-sitter trees are not safe for
// concurrent use.
func (t *Triager) Run(ctx context.Context, fs []Finding) []Result {
	out := make([]Result, len(fs))
	par := t.Parallel
	if par < 1 {
		par = 1
	}
	if par > len(fs) {
		par = len(fs)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		prog := t.Prog
		if w > 0 {
			prog = javaflow.NewProgram(t.Repo)
		}
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = t.one(ctx, fs[i], prog)
			}
		}()
	}
	for i := range fs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// One investigates one finding. It never fails: a bad finding gets an
// error and NEEDS_REVIEW.
func (t *Triager) One(ctx context.Context, f Finding) Result { return t.one(ctx, f, t.Prog) }

func (t *Triager) one(ctx context.Context, f Finding, prog *javaflow.Program) (res Result) {
	start := time.Now()
	res = Result{Finding: f}
	defer func() {
		if r := recover(); r != nil {
			res.Verdict, res.StopReason, res.Error = javaflow.NeedsReview, "error", fmt.Sprintf("analyser panic: %v", r)
		}
		res.Cost.WallMS = float64(time.Since(start).Microseconds()) / 1000
	}()
	if f.Err != "" {
		return failed(res, f.Err)
	}
	if _, err := t.Repo.Resolve(f.File); err != nil {
		return failed(res, err.Error())
	}
	lim := t.Limits
	if lim.MaxWall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.MaxWall)
		defer cancel()
	}
	st := &State{Finding: f, Repo: t.Repo, Tools: NewTools(t.Repo, prog)}
	analyst := t.Analyst
	if analyst == nil {
		analyst = &Offline{}
	}
	// cold start: the finding's file is preloaded (the trace's source bundle)
	if _, err := st.Tools.FetchCode(ctx, fmt.Sprintf("%s:%d-%d", f.File, max(1, f.StartLine-3), f.StartLine+3)); err != nil {
		return failed(res, err.Error())
	}
	if t.Evaluator == nil {
		return failed(res, "no evaluator configured (the critic's EvaluateFinding)")
	}
	stagnant := 0
	for iter := 1; ; iter++ {
		res.Cost.Iterations = iter
		if iter > lim.MaxIterations {
			return t.stop(res, st, "iteration_cap")
		}
		if st.Tools.Calls > lim.MaxToolCalls {
			return t.stop(res, st, "tool_call_cap")
		}
		if ctx.Err() != nil {
			return t.stop(res, st, "wall_time")
		}
		pkg, err := analyst.Analyse(ctx, st)
		if err != nil {
			if errors.Is(err, errRetrieve) {
				// the invariant: the verdict relies on missing evidence, so
				// the analyst retrieved instead of finalising
				if st.Tools.LastAdded == 0 {
					stagnant++
				} else {
					stagnant = 0
				}
				if stagnant >= lim.Stagnation {
					return t.stop(res, st, "stagnation")
				}
				continue
			}
			return failed(res, err.Error())
		}
		st.Claims, st.Evidence, st.Unknowns = pkg.Claims, pkg.Evidence, pkg.Unknowns
		res.Reason = pkg.Analysis
		if pkg.Verdict == javaflow.NeedsReview {
			// nothing more to retrieve that the analyst knows of
			return t.stop(res, st, "analyst_needs_review")
		}
		ver, err := t.Evaluator.Evaluate(ctx, t.Repo.Root(), pkg, st.History)
		if err != nil {
			if ctx.Err() != nil {
				return t.stop(res, st, "wall_time")
			}
			res = finish(res, st)
			return failed(res, err.Error())
		}
		st.Trace = append(st.Trace, TraceEntry{Action: "evaluator", Detail: fmt.Sprintf("verdict %s passed=%v %s", pkg.Verdict, ver.Passed, ver.Reason)})
		if ver.Passed {
			res.Verdict = pkg.Verdict
			res.StopReason = "evaluator_passed"
			return finish(res, st)
		}
		st.History = append(st.History, ver.Reject)
		if ver.LimitReached {
			// the critic's rejection limit (same gaps or no progress)
			return t.stop(res, st, "evaluator_rejections")
		}
		// retrieval for the evaluator's required fetches
		for _, rf := range ver.Reject.RequiredFetch {
			if strings.HasPrefix(rf, "fetch_code ") {
				_, _ = st.Tools.FetchCode(ctx, strings.TrimPrefix(rf, "fetch_code "))
			}
		}
	}
}

var errRetrieve = errors.New("retrieval performed")

func failed(res Result, msg string) Result {
	res.Verdict, res.StopReason, res.Error = javaflow.NeedsReview, "error", msg
	res.Reason = "the finding could not be triaged: " + msg
	res.Unknowns = append(res.Unknowns, msg)
	return res
}

func (t *Triager) stop(res Result, st *State, why string) Result {
	if n := len(st.History); n > 0 {
		// what the evaluator still found missing is what remains unknown
		st.Unknowns = append(st.Unknowns, st.History[n-1].BlockingGaps...)
		st.Next = append(st.Next, st.History[n-1].RequiredFetch...)
	}
	res.Verdict = javaflow.NeedsReview
	res.StopReason = why
	return finish(res, st)
}

func finish(res Result, st *State) Result {
	res.Claims, res.Evidence, res.Unknowns = st.Claims, st.Evidence, dedupe(append(res.Unknowns, st.Unknowns...))
	res.NextFetches = dedupe(append(res.NextFetches, st.Next...))
	res.Rejections = st.History
	res.Trace = append(st.Trace, st.Tools.Trace...)
	res.Cost.ToolCalls = st.Tools.Calls
	return res
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Offline is the deterministic analyst: the javaflow analyser, whose file
// reads and look-ups go through the code tools' accounting.
type Offline struct{}

// Analyse implements Analyst.
func (o *Offline) Analyse(ctx context.Context, st *State) (Package, error) {
	f := st.Finding
	if f.Category == "" {
		return Package{Verdict: javaflow.NeedsReview, Analysis: "rule " + f.RuleID + " maps to no category with a checklist",
			Unknowns: []string{"a checklist for rule " + f.RuleID + " (CWE " + fmt.Sprint(f.CWEs) + ")"}}, nil
	}
	a, err := javaflow.Analyze(ctx, st.Tools.prog, javaflow.Target{File: f.File, StartLine: f.StartLine, StartCol: f.StartCol, EndLine: f.EndLine, Category: f.Category})
	if err != nil {
		return Package{}, err
	}
	st.Tools.account(a)
	pkg := Package{Category: f.Category, Verdict: a.Verdict, Analysis: a.Reason, Unknowns: a.Unknowns}
	if a.Verdict == javaflow.NeedsReview {
		st.Next = append(st.Next, a.Next...)
	}
	if a.Verdict != javaflow.NeedsReview {
		// the analyser's notes about imprecision do not block a verdict the
		// evidence shows; they stay as caveats
		pkg.Unknowns = nil
	}
	ids := map[string]string{}
	for _, c := range a.Claims {
		cl := Claim{ID: c.ID, Text: c.Text, Status: c.Status}
		for _, s := range c.Steps {
			key := fmt.Sprintf("%s:%d", s.File, s.Line)
			id, ok := ids[key]
			if !ok {
				cite, err := st.Tools.Cite(s.File, s.Line, s.Line, s.What)
				if err != nil {
					continue
				}
				id = fmt.Sprintf("E%d", len(pkg.Evidence)+1)
				cite.ID = id
				ids[key] = id
				pkg.Evidence = append(pkg.Evidence, cite)
			}
			if len(cl.Evidence) == 0 || !contains(cl.Evidence, id) {
				cl.Evidence = append(cl.Evidence, id)
			}
		}
		pkg.Claims = append(pkg.Claims, cl)
	}
	return pkg, nil
}

// Summary counts verdicts.
func Summary(rs []Result) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		m[r.Verdict]++
	}
	return m
}

// Median is the median of xs (0 when empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

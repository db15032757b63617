// Package eval runs suites of scenarios through an investigator (the real
// pipeline, wired by the binary) and scores every result with
// internal/eval/score. It writes one JSON file per scenario and a markdown
// summary per suite, and can rewrite each scenario first (mutation mode) to
// show that scores depend on evidence, not on names and numbers.
package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rcamesh/rcamesh/internal/eval/mutate"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// Investigator runs one investigation on a loaded scenario and returns the
// scoring object (score.Record) as JSON.
type Investigator func(ctx context.Context, sc *scenario.Scenario) ([]byte, error)

// Suite is a named set of scenario folders.
type Suite struct {
	Name string
	Root string
	Dirs []string
}

// DiscoverSuite lists the scenarios under root.
func DiscoverSuite(name, root string) (Suite, error) {
	dirs, err := scenario.Discover(root)
	if err != nil {
		return Suite{}, fmt.Errorf("eval: suite %s: %w", name, err)
	}
	if len(dirs) == 0 {
		return Suite{}, fmt.Errorf("eval: suite %s: no scenario (folder with alert.json) under %s", name, root)
	}
	return Suite{Name: name, Root: root, Dirs: dirs}, nil
}

// Options control a run.
type Options struct {
	Parallel int
	// OutDir receives <suite>/<scenario>.json and <suite>/summary.md; empty
	// writes nothing.
	OutDir string
	// MutateSeed > 0 rewrites every scenario with mutate.DefaultOptions(seed)
	// before investigating it.
	MutateSeed uint64
	// Vocab tells every scenario in another vocabulary (label keys, metric
	// names, alert format, no namespace), alone or on top of MutateSeed.
	Vocab  mutate.Vocab
	Logger *slog.Logger
}

// Mutating reports whether the run rewrites the scenarios.
func (o Options) Mutating() bool { return o.MutateSeed > 0 || o.Vocab.Any() }

// Unmutated is o without any rewrite (the baseline of a mutated run).
func (o Options) Unmutated() Options {
	o.MutateSeed, o.Vocab = 0, mutate.Vocab{}
	return o
}

// ScenarioResult is one scenario's outcome.
type ScenarioResult struct {
	ID      string          `json:"id"`
	Dir     string          `json:"dir"`
	Result  json.RawMessage `json:"result,omitempty"`
	Report  score.Report    `json:"score"`
	Cost    Cost            `json:"cost"`
	Error   string          `json:"error,omitempty"`
	Mutated bool            `json:"mutated,omitempty"`
	// Renamed is the name mapping of a mutated scenario (old -> new).
	Renamed map[string]string `json:"renamed,omitempty"`
}

// Cost is what one investigation spent.
type Cost struct {
	ToolCalls int   `json:"tool_calls"`
	Loops     int   `json:"loops"`
	LLMCalls  int   `json:"llm_calls"`
	Tokens    int64 `json:"tokens"`
	WallMS    int64 `json:"wall_ms"`
}

// SuiteReport is a suite's results and summary.
type SuiteReport struct {
	Suite   string           `json:"suite"`
	Results []ScenarioResult `json:"results"`
	Summary score.Summary    `json:"summary"`
	Median  Cost             `json:"median_cost"`
	Errors  int              `json:"errors"`
}

// Run investigates and scores every scenario of the suite.
func Run(ctx context.Context, inv Investigator, suite Suite, opt Options) (SuiteReport, error) {
	if opt.Parallel < 1 {
		opt.Parallel = 1
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	results := make([]ScenarioResult, len(suite.Dirs))
	sem := make(chan struct{}, opt.Parallel)
	var wg sync.WaitGroup
	for i, dir := range suite.Dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = ScenarioResult{Dir: dir, ID: filepath.Base(dir), Error: ctx.Err().Error()}
				return
			}
			defer func() { <-sem }()
			results[i] = runOne(ctx, inv, dir, opt)
			if rel, err := filepath.Rel(suite.Root, dir); err == nil && rel != "." {
				// Scenario ids repeat across families (eks/000-healthy and
				// rds_postgres/000-healthy): name results by their path.
				results[i].ID = filepath.ToSlash(rel)
			}
			log.Info("scenario scored", "suite", suite.Name, "scenario", results[i].ID,
				"axis1", results[i].Report.Axis1.Pass, "error", results[i].Error)
		}()
	}
	wg.Wait()
	rep := SuiteReport{Suite: suite.Name, Results: results}
	var reports []score.Report
	var costs []Cost
	for _, r := range results {
		if r.Error != "" {
			rep.Errors++
		}
		reports = append(reports, r.Report)
		costs = append(costs, r.Cost)
	}
	rep.Summary = score.Summarize(reports)
	rep.Median = medianCost(costs)
	if opt.OutDir != "" {
		if err := write(opt.OutDir, rep); err != nil {
			return rep, err
		}
	}
	return rep, ctx.Err()
}

func runOne(ctx context.Context, inv Investigator, dir string, opt Options) ScenarioResult {
	res := ScenarioResult{Dir: dir, ID: filepath.Base(dir)}
	src := dir
	if opt.Mutating() {
		tmp, err := os.MkdirTemp("", "rcamesh-mutate-")
		if err != nil {
			res.Error = err.Error()
			return res
		}
		defer os.RemoveAll(tmp)
		src = filepath.Join(tmp, filepath.Base(dir))
		mopt := mutate.Options{}
		if opt.MutateSeed > 0 {
			mopt = mutate.DefaultOptions(opt.MutateSeed)
		}
		mopt.Vocab = opt.Vocab
		mapping, err := mutate.Scenario(dir, src, mopt)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Mutated = true
		if len(mapping) > 0 {
			res.Renamed = mapping
		}
	}
	answerBytes, err := os.ReadFile(filepath.Join(src, "answer.yml"))
	if err != nil {
		res.Error = fmt.Sprintf("read answer: %v", err)
		return res
	}
	answer, err := score.ParseAnswer(answerBytes)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	sc, err := scenario.Load(src)
	if err != nil {
		res.Error = err.Error()
		res.Report = score.Score(answer, score.Result{})
		return res
	}
	res.ID = sc.ID
	answer.FailureMode = sc.Meta.FailureMode
	raw, err := inv(ctx, sc)
	if err != nil {
		res.Error = err.Error()
		res.Report = score.Score(answer, score.Result{ScenarioID: sc.ID})
		return res
	}
	res.Result = raw
	var r score.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		res.Error = fmt.Sprintf("decode result: %v", err)
		return res
	}
	var cost struct {
		Loops    int   `json:"loops"`
		LLMCalls int   `json:"llm_calls"`
		Tokens   int64 `json:"tokens"`
		WallMS   int64 `json:"wall_ms"`
	}
	_ = json.Unmarshal(raw, &cost)
	res.Cost = Cost{ToolCalls: len(r.ToolsCalled), Loops: cost.Loops, LLMCalls: cost.LLMCalls, Tokens: cost.Tokens, WallMS: cost.WallMS}
	res.Report = score.Score(answer, r)
	return res
}

func medianCost(cs []Cost) Cost {
	if len(cs) == 0 {
		return Cost{}
	}
	med := func(get func(Cost) int64) int64 {
		v := make([]int64, len(cs))
		for i, c := range cs {
			v[i] = get(c)
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return v[len(v)/2]
	}
	return Cost{
		ToolCalls: int(med(func(c Cost) int64 { return int64(c.ToolCalls) })),
		Loops:     int(med(func(c Cost) int64 { return int64(c.Loops) })),
		LLMCalls:  int(med(func(c Cost) int64 { return int64(c.LLMCalls) })),
		Tokens:    med(func(c Cost) int64 { return c.Tokens }),
		WallMS:    med(func(c Cost) int64 { return c.WallMS }),
	}
}

func write(out string, rep SuiteReport) error {
	dir := filepath.Join(out, rep.Suite)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	for _, r := range rep.Results {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		name := strings.ReplaceAll(r.ID, "/", "__")
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(Markdown(rep)), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	b, err := json.MarshalIndent(struct {
		Suite   string        `json:"suite"`
		Summary score.Summary `json:"summary"`
		Median  Cost          `json:"median_cost"`
		Errors  int           `json:"errors"`
		At      time.Time     `json:"at"`
	}{rep.Suite, rep.Summary, rep.Median, rep.Errors, time.Now().UTC()}, "", "  ")
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644)
}

// Markdown renders a suite's summary table and the failures with reasons.
func Markdown(rep SuiteReport) string {
	s := rep.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", rep.Suite)
	fmt.Fprintf(&b, "| scenarios | axis 1 | trajectory | axis 2 | culprit AC@1 | AC@3 | Avg@5 | MRR | false positives (no-fault) | median tool calls | median loops | median model calls | median wall ms | errors |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ent := func(v float64) string {
		if s.EntityScenarios == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", v)
	}
	fmt.Fprintf(&b, "| %d | %d/%d | %d/%d | %d/%d | %s | %s | %s | %s | %d/%d | %d | %d | %d | %d | %d |\n\n",
		s.Scenarios, s.Axis1Passed, s.Scenarios, s.TrajectoryPassed, s.Scenarios, s.Axis2Passed, s.Axis2Applicable,
		ent(s.AC1), ent(s.AC3), ent(s.Avg5), ent(s.MRR), s.FalsePositives, s.NoFault,
		rep.Median.ToolCalls, rep.Median.Loops, rep.Median.LLMCalls, rep.Median.WallMS, rep.Errors)
	var fails []string
	for _, r := range rep.Results {
		if r.Report.Axis1.Pass && r.Report.Trajectory.Pass && (!r.Report.Axis2Applicable || r.Report.Axis2.Pass) && r.Error == "" {
			continue
		}
		fails = append(fails, fmt.Sprintf("- `%s`: %s", r.ID, whyFailed(r)))
	}
	if len(fails) > 0 {
		fmt.Fprintf(&b, "Not passing:\n\n%s\n", strings.Join(fails, "\n"))
	}
	return b.String()
}

func whyFailed(r ScenarioResult) string {
	var parts []string
	if r.Error != "" {
		parts = append(parts, "error: "+r.Error)
	}
	for _, ax := range []struct {
		name string
		a    score.Axis
	}{{"axis 1", r.Report.Axis1}, {"trajectory", r.Report.Trajectory}, {"axis 2", r.Report.Axis2}} {
		for _, c := range ax.a.Checks {
			if !c.Pass {
				parts = append(parts, fmt.Sprintf("%s %s: %s", ax.name, c.Name, c.Reason))
			}
		}
	}
	return strings.Join(parts, "; ")
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/eval"
	"github.com/rcamesh/rcamesh/internal/eval/mutate"
	"github.com/rcamesh/rcamesh/internal/eval/petshop"
	"github.com/rcamesh/rcamesh/internal/graphrca"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// pipelineInvestigator runs each scenario through a fresh in-process mesh
// (all five services, embedded NATS, the critic and the stream) with the
// scenario's fixture backend.
func pipelineInvestigator(logger *slog.Logger, meshArgs []string) eval.Investigator {
	return func(ctx context.Context, sc *scenario.Scenario) ([]byte, error) {
		set, err := fixture.New(sc, logger)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "rcamesh-eval-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		m, err := startMesh(ctx, set, filepath.Join(dir, "data"), logger, meshArgs)
		if err != nil {
			return nil, err
		}
		res, runErr := m.investigateAlert(ctx, sc.AlertRaw, sc.ID)
		if err := m.stop(); err != nil && runErr == nil {
			runErr = err
		}
		if runErr != nil {
			return nil, runErr
		}
		return json.Marshal(res.Scoring)
	}
}

// suiteInvestigator is the investigator that scores the suite in root:
// the category prior leaves out the set it scores (a folder of scenarios
// is one training set), so no incident is read by a model that learned it.
func suiteInvestigator(logger *slog.Logger, root string) eval.Investigator {
	return pipelineInvestigator(logger, []string{"-brain.category-prior-without=" + filepath.Base(filepath.Clean(root))})
}

// Suite names accepted by -suites.
const (
	suiteOpensre = "opensre"
	suiteCorpus  = "corpus"
	suitePetshop = "petshop"
)

func evalCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stdout)
	benchmarks := fs.String("benchmarks", "../shared/benchmarks", "folder holding opensre-synthetic/ and petshop/")
	corpus := fs.String("corpus", "scenarios/corpus", "our own scenario corpus")
	suites := fs.String("suites", "opensre,corpus,petshop", "comma list of suites: opensre, corpus, petshop, owasp")
	half := fs.String("half", "", "owasp: score only half a or b of the public test cases (a fixed split by name hash); empty: all")
	out := fs.String("out", "eval-results", "folder for per-scenario JSON and summaries (empty: write nothing)")
	parallel := fs.Int("parallel", defaultParallel(), "scenarios investigated at once")
	mutateSeed := fs.Uint64("mutate", 0, "rewrite every scenario first (names, times, magnitudes) with this seed; 0: off")
	vocab := fs.String("vocab", "", "tell every scenario in another vocabulary, alone or on top of -mutate: "+mutate.VocabHelp+
		"; e.g. -vocab labels,metrics or -vocab format=pagerduty,nonamespace")
	baseline := fs.Bool("baseline", true, "with -mutate or -vocab, also run every scenario unmutated and list those whose verdicts "+
		"(axis-1 pass, category, entity, entity rank, trajectory, axis 2) differ; differing pairs are rerun alone to rule out parallel load")
	lc := &logConfig{}
	lc.registerFlags(fs)
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	if lc.level == "info" {
		lc.level = "error"
	}
	logger, err := lc.logger(os.Stderr)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*suites, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case suiteOpensre, suiteCorpus, suitePetshop, suiteOwasp:
			want[s] = true
		case "":
		default:
			return fmt.Errorf("%w: unknown suite %q (want opensre, corpus, petshop, owasp)", errUsage, s)
		}
	}
	v, err := mutate.ParseVocab(*vocab)
	if err != nil {
		return fmt.Errorf("%w: -vocab: %v", errUsage, err)
	}
	opt := eval.Options{Parallel: *parallel, OutDir: *out, MutateSeed: *mutateSeed, Vocab: v, Logger: logger}
	var failed []string
	run := func(name, root string) error {
		suite, err := eval.DiscoverSuite(name, root)
		if err != nil {
			return err
		}
		inv := suiteInvestigator(logger, root)
		var rep eval.SuiteReport
		var cmp *eval.Comparison
		if opt.Mutating() && *baseline {
			c, err := eval.CompareRun(ctx, inv, suite, opt)
			if err != nil {
				return err
			}
			rep, cmp = c.Mutated, &c
		} else if rep, err = eval.Run(ctx, inv, suite, opt); err != nil {
			return err
		}
		fmt.Fprintln(stdout, eval.Markdown(rep))
		if cmp != nil {
			fmt.Fprintln(stdout, cmp.Markdown())
		}
		if rep.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d scenario errors", name, rep.Errors))
		}
		return nil
	}
	if want[suiteOpensre] {
		if err := run(suiteOpensre, filepath.Join(*benchmarks, "opensre-synthetic")); err != nil {
			return err
		}
	}
	if want[suiteCorpus] {
		if err := run(suiteCorpus, *corpus); err != nil {
			return err
		}
	}
	if want[suitePetshop] {
		scs, err := petshop.Load(filepath.Join(*benchmarks, "petshop"))
		if err != nil {
			return err
		}
		sum := petshop.Evaluate(scs, graphrca.DefaultConfig())
		fmt.Fprintf(stdout, "### petshop\n\n%s\n", sum.Markdown())
		if *out != "" {
			if err := os.MkdirAll(filepath.Join(*out, suitePetshop), 0o755); err != nil {
				return err
			}
			b, err := json.MarshalIndent(sum, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(*out, suitePetshop, "summary.json"), b, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(*out, suitePetshop, "summary.md"), []byte(sum.Markdown()), 0o644); err != nil {
				return err
			}
		}
	}
	if want[suiteOwasp] {
		if err := runOwaspSuite(ctx, filepath.Join(*benchmarks, "owasp-benchmark"), *out, *half, *parallel, logger, stdout); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("eval: %s", strings.Join(failed, "; "))
	}
	return nil
}

func scenariosCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scenarios", flag.ContinueOnError)
	fs.SetOutput(stdout)
	root := fs.String("root", "scenarios", "folder to list")
	if err := parseFlags(fs, args, os.LookupEnv); err != nil {
		return err
	}
	dirs, err := scenario.Discover(*root)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		sc, err := scenario.Load(d)
		if err != nil {
			fmt.Fprintf(stdout, "%s\tERROR %v\n", d, err)
			continue
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", d, sc.ID, sc.Meta.FailureMode)
	}
	return nil
}

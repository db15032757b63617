package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval"
	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
)

// TestMutationChangesNoScore runs every suite twice through the real
// pipeline, once as recorded and once rewritten (names, timestamps, counter
// magnitudes), and requires the same verdicts: a score must come from the
// evidence, not from the names and numbers of one recording.
func TestMutationChangesNoScore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario twice through the whole mesh")
	}
	suites := []struct {
		name string
		root func(t *testing.T) string
	}{
		{"opensre", func(t *testing.T) string { return benchdata.Dir(t, "opensre-synthetic") }},
		{"corpus", func(*testing.T) string { return filepath.Join("..", "..", "scenarios", "corpus") }},
	}
	logger := slog.New(slog.DiscardHandler)
	for _, st := range suites {
		name := st.name
		t.Run(name, func(t *testing.T) {
			root := st.root(t)
			suite, err := eval.DiscoverSuite(name, root)
			if err != nil {
				t.Fatal(err)
			}
			inv := suiteInvestigator(logger, root) // as rcamesh eval scores it
			ctx := context.Background()
			orig, err := eval.Run(ctx, inv, suite, eval.Options{Parallel: defaultParallel()})
			if err != nil {
				t.Fatal(err)
			}
			mut, err := eval.Run(ctx, inv, suite, eval.Options{Parallel: defaultParallel(), MutateSeed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if orig.Errors != 0 || mut.Errors != 0 {
				t.Fatalf("errors: %d recorded, %d mutated", orig.Errors, mut.Errors)
			}
			// The scores must hold; the wording of a category or entity may
			// differ as long as they do (eval.Diff lists every field).
			same := func(o, m eval.ScenarioResult) bool {
				for _, f := range eval.Diff(o, m) {
					switch f.Field {
					case eval.FieldAxis1, eval.FieldTrajectory, eval.FieldAxis2, eval.FieldEntityRank:
						return false
					}
				}
				return true
			}
			for i, o := range orig.Results {
				m := mut.Results[i]
				if !m.Mutated {
					t.Fatalf("%s was not mutated", o.ID)
				}
				if !same(o, m) {
					// Parallel runs on a loaded 2-core machine can reorder the
					// critic's verdicts; rerun the pair alone once before
					// calling it a mutation sensitivity, and say so.
					one := eval.Suite{Name: suite.Name, Root: suite.Root, Dirs: []string{suite.Dirs[i]}}
					ro, err1 := eval.Run(ctx, inv, one, eval.Options{Parallel: 1})
					rm, err2 := eval.Run(ctx, inv, one, eval.Options{Parallel: 1, MutateSeed: 7})
					if err1 == nil && err2 == nil && same(ro.Results[0], rm.Results[0]) {
						t.Logf("%s: verdicts differed under parallel load, agree when rerun alone", o.ID)
						continue
					}
				}
				if !same(o, m) {
					t.Errorf("%s: score changed under mutation: axis1 %v->%v trajectory %v->%v axis2 %v->%v entity rank %d->%d\n%s",
						o.ID, o.Report.Axis1.Pass, m.Report.Axis1.Pass, o.Report.Trajectory.Pass, m.Report.Trajectory.Pass,
						o.Report.Axis2.Pass, m.Report.Axis2.Pass, o.Report.Entity.Rank, m.Report.Entity.Rank, whyDiff(m))
				}
			}
			t.Logf("%s: axis1 %d/%d recorded, %d/%d mutated", name, orig.Summary.Axis1Passed, orig.Summary.Scenarios, mut.Summary.Axis1Passed, mut.Summary.Scenarios)
		})
	}
}

func whyDiff(r eval.ScenarioResult) string {
	return eval.Markdown(eval.SuiteReport{Suite: "mutated", Results: []eval.ScenarioResult{r}})
}

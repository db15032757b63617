package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rcamesh/rcamesh/internal/eval/mutate"
)

// FieldChange is one verdict field that differs between an unmutated and a
// mutated run of the same scenario.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

func (f FieldChange) String() string { return f.Field + " " + f.From + " -> " + f.To }

// Change is a scenario whose verdict a mutation changed.
type Change struct {
	ID     string        `json:"id"`
	Fields []FieldChange `json:"fields"`
	// Unstable: the verdicts differed in the parallel run but agree when
	// the pair is rerun alone (load reordered the critic, not the mutation).
	Unstable bool `json:"unstable,omitempty"`
}

// Verdict fields Diff compares.
const (
	FieldError      = "error"
	FieldAxis1      = "axis1"
	FieldCategory   = "category"
	FieldEntity     = "entity"
	FieldEntityRank = "entity rank"
	FieldTrajectory = "trajectory"
	FieldAxis2      = "axis2"
)

// Diff lists the verdict fields that differ between an unmutated result and
// a mutated one: error, axis-1 pass, category, culprit entity (names the
// mutation introduced are mapped back), entity rank, trajectory and axis-2
// pass.
func Diff(base, mut ScenarioResult) []FieldChange {
	var out []FieldChange
	add := func(field, from, to string) {
		if from != to {
			out = append(out, FieldChange{Field: field, From: from, To: to})
		}
	}
	errState := func(r ScenarioResult) string {
		if r.Error != "" {
			return "error"
		}
		return "none"
	}
	pass := func(b bool) string {
		if b {
			return "pass"
		}
		return "fail"
	}
	add(FieldError, errState(base), errState(mut))
	add(FieldAxis1, pass(base.Report.Axis1.Pass), pass(mut.Report.Axis1.Pass))
	bc, be := verdict(base)
	mc, me := verdict(mut)
	add(FieldCategory, bc, mc)
	add(FieldEntity, be, mutate.Restore(mut.Renamed, me))
	if base.Report.Entity.Applicable || mut.Report.Entity.Applicable {
		add(FieldEntityRank, strconv.Itoa(base.Report.Entity.Rank), strconv.Itoa(mut.Report.Entity.Rank))
	}
	add(FieldTrajectory, pass(base.Report.Trajectory.Pass), pass(mut.Report.Trajectory.Pass))
	if base.Report.Axis2Applicable || mut.Report.Axis2Applicable {
		add(FieldAxis2, pass(base.Report.Axis2.Pass), pass(mut.Report.Axis2.Pass))
	}
	return out
}

// verdict is a result's category and culprit entity ("-" when none).
func verdict(r ScenarioResult) (category, entity string) {
	var v struct {
		Category string `json:"root_cause_category"`
		Entity   string `json:"root_cause_entity"`
	}
	_ = json.Unmarshal(r.Result, &v)
	if v.Category == "" {
		v.Category = "-"
	}
	if v.Entity == "" {
		v.Entity = "-"
	}
	return v.Category, v.Entity
}

// Compare pairs the results of two runs of one suite by scenario folder and
// returns the scenarios whose verdicts differ.
func Compare(base, mut SuiteReport) []Change {
	byDir := map[string]ScenarioResult{}
	for _, r := range base.Results {
		byDir[r.Dir] = r
	}
	var out []Change
	for _, m := range mut.Results {
		b, ok := byDir[m.Dir]
		if !ok {
			continue
		}
		if fs := Diff(b, m); len(fs) > 0 {
			out = append(out, Change{ID: m.ID, Fields: fs})
		}
	}
	return out
}

// Comparison is a mutated run of a suite next to its unmutated baseline.
type Comparison struct {
	Base, Mutated SuiteReport
	Changes       []Change
	// Mutation names what was rewritten (for reports).
	Mutation string
}

// CompareRun runs suite unmutated and mutated (opt must be mutating) and
// returns the scenarios whose verdicts differ. A scenario that differs is
// rerun alone, both ways: when the pair then agrees, the change is marked
// Unstable (parallel load, not the mutation). The baseline is written to
// <OutDir>/<suite>.unmutated, the changes to <OutDir>/<suite>/changes.json.
func CompareRun(ctx context.Context, inv Investigator, suite Suite, opt Options) (Comparison, error) {
	c := Comparison{Mutation: mutationName(opt)}
	if !opt.Mutating() {
		return c, fmt.Errorf("eval: compare: the options mutate nothing")
	}
	baseSuite := suite
	baseSuite.Name = suite.Name + ".unmutated"
	base, err := Run(ctx, inv, baseSuite, opt.Unmutated())
	if err != nil {
		return c, err
	}
	base.Suite = suite.Name
	mut, err := Run(ctx, inv, suite, opt)
	if err != nil {
		return c, err
	}
	c.Base, c.Mutated = base, mut
	changes := Compare(base, mut)
	alone := opt
	alone.Parallel, alone.OutDir = 1, ""
	for i, ch := range changes {
		var dir string
		for _, r := range mut.Results {
			if r.ID == ch.ID {
				dir = r.Dir
			}
		}
		one := Suite{Name: suite.Name, Root: suite.Root, Dirs: []string{dir}}
		rb, err1 := Run(ctx, inv, one, alone.Unmutated())
		rm, err2 := Run(ctx, inv, one, alone)
		if err1 != nil || err2 != nil {
			return c, fmt.Errorf("eval: compare: rerun %s: %v %v", ch.ID, err1, err2)
		}
		if fs := Diff(rb.Results[0], rm.Results[0]); len(fs) == 0 {
			changes[i].Unstable = true
		} else {
			changes[i].Fields = fs
		}
	}
	c.Changes = changes
	if opt.OutDir != "" {
		b, err := json.MarshalIndent(struct {
			Suite    string   `json:"suite"`
			Mutation string   `json:"mutation"`
			Base     int      `json:"axis1_unmutated"`
			Mutated  int      `json:"axis1_mutated"`
			Total    int      `json:"scenarios"`
			Changes  []Change `json:"changes"`
		}{suite.Name, c.Mutation, base.Summary.Axis1Passed, mut.Summary.Axis1Passed, mut.Summary.Scenarios, changes}, "", "  ")
		if err != nil {
			return c, fmt.Errorf("eval: %w", err)
		}
		if err := os.WriteFile(filepath.Join(opt.OutDir, suite.Name, "changes.json"), b, 0o644); err != nil {
			return c, fmt.Errorf("eval: %w", err)
		}
	}
	return c, nil
}

func mutationName(opt Options) string {
	var parts []string
	if opt.MutateSeed > 0 {
		parts = append(parts, "names/times/magnitudes seed "+strconv.FormatUint(opt.MutateSeed, 10))
	}
	if opt.Vocab.Any() {
		parts = append(parts, opt.Vocab.String())
	}
	return strings.Join(parts, " + ")
}

// Markdown renders the comparison: axis-1 counts both ways and every
// scenario whose verdict changed, with the fields that changed.
func (c Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s: verdicts under mutation (%s)\n\n", c.Mutated.Suite, c.Mutation)
	fmt.Fprintf(&b, "axis 1: %d/%d unmutated, %d/%d mutated; %d scenario(s) changed\n",
		c.Base.Summary.Axis1Passed, c.Base.Summary.Scenarios, c.Mutated.Summary.Axis1Passed, c.Mutated.Summary.Scenarios, stable(c.Changes))
	if len(c.Changes) > 0 {
		b.WriteString("\n")
	}
	for _, ch := range c.Changes {
		parts := make([]string, len(ch.Fields))
		for i, f := range ch.Fields {
			parts[i] = f.String()
		}
		note := ""
		if ch.Unstable {
			note = " (differed under parallel load only; agrees when rerun alone)"
		}
		fmt.Fprintf(&b, "- `%s`: %s%s\n", ch.ID, strings.Join(parts, "; "), note)
	}
	return b.String()
}

func stable(cs []Change) int {
	n := 0
	for _, c := range cs {
		if !c.Unstable {
			n++
		}
	}
	return n
}

package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/mutate"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// keyReader "diagnoses" only when the alert spells the service label
// `service` (a reader bound to one vocabulary) and names the culprit
// deployment from the labels.
func keyReader(ctx context.Context, sc *scenario.Scenario) ([]byte, error) {
	var alert struct {
		CommonLabels map[string]string `json:"commonLabels"`
	}
	if err := json.Unmarshal(sc.AlertRaw, &alert); err != nil {
		return nil, err
	}
	cat, svc := "unknown", alert.CommonLabels["service"]
	if svc != "" {
		cat = "resource_exhaustion"
	}
	return json.Marshal(map[string]any{
		"scenario_id":         sc.ID,
		"root_cause":          svc + " ran out of memory",
		"root_cause_category": cat,
		"root_cause_entity":   "deployment/" + alert.CommonLabels["namespace"] + "/" + svc,
		"evidence_sources":    []string{"eks_pods"},
		"tools_called":        []map[string]any{{"intent": "check_pod_status"}},
	})
}

func TestCompareRun(t *testing.T) {
	root := t.TempDir()
	mkScenario(t, root, "001-oom", "resource_exhaustion")
	suite, err := DiscoverSuite("test", root)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opt  Options
		want []string // "field from -> to" of the one scenario; none: no change
	}{
		{name: "names only: the entity maps back, nothing changes", opt: Options{MutateSeed: 3}},
		{name: "label vocabulary breaks the reader", opt: Options{Vocab: mutate.Vocab{Labels: mutate.LabelsOTel}},
			want: []string{"axis1 pass -> fail", "category resource_exhaustion -> unknown", "entity deployment/storefront/checkout -> deployment//"}},
		{name: "no namespace", opt: Options{Vocab: mutate.Vocab{NoNamespace: true}},
			want: []string{"entity deployment/storefront/checkout -> deployment//checkout"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.OutDir = t.TempDir()
			c, err := CompareRun(context.Background(), keyReader, suite, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if c.Base.Summary.Axis1Passed != 1 {
				t.Fatalf("baseline must pass: %s", Markdown(c.Base))
			}
			var got []string
			for _, ch := range c.Changes {
				for _, f := range ch.Fields {
					got = append(got, f.String())
				}
				if ch.Unstable {
					t.Errorf("a deterministic reader cannot be unstable")
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			md := c.Markdown()
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("markdown lacks %q:\n%s", w, md)
				}
			}
			if _, err := os.Stat(filepath.Join(tc.opt.OutDir, "test", "changes.json")); err != nil {
				t.Errorf("changes.json not written: %v", err)
			}
			if _, err := os.Stat(filepath.Join(tc.opt.OutDir, "test.unmutated", "summary.md")); err != nil {
				t.Errorf("baseline not written: %v", err)
			}
		})
	}
	if _, err := CompareRun(context.Background(), keyReader, suite, Options{}); err == nil {
		t.Error("an unmutated comparison must be refused")
	}
}

func TestDiff(t *testing.T) {
	res := func(cat, entity string, axis1 bool, rank int) ScenarioResult {
		raw, _ := json.Marshal(map[string]string{"root_cause_category": cat, "root_cause_entity": entity})
		r := ScenarioResult{Result: raw}
		r.Report.Axis1.Pass = axis1
		r.Report.Entity = score.EntityScore{Applicable: true, Rank: rank}
		return r
	}
	renamed := res("dependency_failure", "deployment/dune/birch", true, 1)
	renamed.Renamed = map[string]string{"shop": "dune", "cart": "birch"}
	cases := []struct {
		name      string
		base, mut ScenarioResult
		want      string
	}{
		{"same", res("healthy", "-", true, 0), res("healthy", "-", true, 0), ""},
		{"category and axis 1", res("healthy", "", true, 0), res("dependency_failure", "", false, 0), "axis1 pass -> fail; category healthy -> dependency_failure"},
		{"renamed entity maps back", res("dependency_failure", "deployment/shop/cart", true, 1), renamed, ""},
		{"entity and rank", res("code_defect", "deployment/shop/cart", true, 1), res("code_defect", "deployment/shop/api", true, 2), "entity deployment/shop/cart -> deployment/shop/api; entity rank 1 -> 2"},
		{"error", res("code_defect", "", true, 0), ScenarioResult{Error: "boom", Report: res("code_defect", "", true, 0).Report}, "error none -> error; category code_defect -> -"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, f := range Diff(tc.base, tc.mut) {
				parts = append(parts, f.String())
			}
			if got := strings.Join(parts, "; "); got != tc.want {
				t.Errorf("Diff = %q, want %q", got, tc.want)
			}
		})
	}
}

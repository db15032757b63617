package eval

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/scenario"
)

func mkScenario(t *testing.T, root, name, category string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"alert.json":    `{"title":"Pod crashloop checkout-5d7f-abcde","state":"alerting","commonLabels":{"alertname":"CrashLoop","namespace":"storefront","service":"checkout"}}`,
		"answer.yml":    "root_cause_category: " + category + "\nrequired_keywords:\n  - checkout\n  - memory\nrequired_evidence_sources:\n  - eks_pods\n",
		"scenario.yml":  "scenario_id: " + name + "\nfailure_mode: oom\n",
		"eks_pods.json": `{"pods":[{"name":"checkout-5d7f-abcde","namespace":"storefront","phase":"Running"}]}`,
	}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// echoInvestigator "diagnoses" by naming the service label it was given, so
// the test can see whether a mutated scenario reached it.
func echoInvestigator(category string) Investigator {
	return func(ctx context.Context, sc *scenario.Scenario) ([]byte, error) {
		var alert struct {
			CommonLabels map[string]string `json:"commonLabels"`
		}
		if err := json.Unmarshal(sc.AlertRaw, &alert); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{
			"scenario_id":         sc.ID,
			"root_cause":          alert.CommonLabels["service"] + " ran out of memory",
			"root_cause_category": category,
			"evidence_sources":    []string{"eks_pods"},
			"tools_called":        []map[string]any{{"intent": "check_pod_status"}},
			"loops":               2,
		})
	}
}

func TestRun(t *testing.T) {
	root := t.TempDir()
	mkScenario(t, root, "001-oom", "resource_exhaustion")
	mkScenario(t, root, "002-other", "configuration_error")
	suite, err := DiscoverSuite("test", root)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := Run(context.Background(), echoInvestigator("resource_exhaustion"), suite, Options{Parallel: 2, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Scenarios != 2 || rep.Summary.Axis1Passed != 1 {
		t.Fatalf("want 1 of 2 passing, got %+v", rep.Summary)
	}
	if rep.Median.Loops != 2 || rep.Median.ToolCalls != 1 {
		t.Fatalf("median cost wrong: %+v", rep.Median)
	}
	md, err := os.ReadFile(filepath.Join(out, "test", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "002-other") || !strings.Contains(string(md), "expected configuration_error") {
		t.Fatalf("summary must say why 002 failed:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(out, "test", "001-oom.json")); err != nil {
		t.Fatal(err)
	}

	// Mutation: names change in alert and answer alike, so the score holds.
	mut, err := Run(context.Background(), echoInvestigator("resource_exhaustion"), suite, Options{MutateSeed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if mut.Summary.Axis1Passed != 1 || !mut.Results[0].Mutated {
		t.Fatalf("mutated run changed the score: %+v", mut.Summary)
	}
	if strings.Contains(string(mut.Results[0].Result), "checkout") {
		t.Fatalf("investigator saw the unmutated name: %s", mut.Results[0].Result)
	}
}

func TestRunInvestigatorError(t *testing.T) {
	root := t.TempDir()
	mkScenario(t, root, "001-oom", "resource_exhaustion")
	suite, err := DiscoverSuite("test", root)
	if err != nil {
		t.Fatal(err)
	}
	inv := func(ctx context.Context, sc *scenario.Scenario) ([]byte, error) {
		return nil, errors.New("backend exploded")
	}
	rep, err := Run(context.Background(), inv, suite, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 1 || rep.Summary.Axis1Passed != 0 || !strings.Contains(Markdown(rep), "backend exploded") {
		t.Fatalf("error not reported: %+v\n%s", rep, Markdown(rep))
	}
}

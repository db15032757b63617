package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const alertJSON = `{"title":"x","state":"alerting","commonLabels":{"alertname":"A"}}`

func TestLoadFull(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "suite", "s1")
	write(t, dir, map[string]string{
		"alert.json":   alertJSON,
		"scenario.yml": "scenario_id: sid-1\nfailure_mode: oom\nseverity: critical\nscenario_difficulty: 2\nadversarial_signals: [a, b]\navailable_evidence: [eks_pods]\nextra_key: 5\nseverity_note: null\n",
		"answer.yml": "root_cause_category: resource_exhaustion\nrequired_keywords: [memory]\nroot_cause_entity: pod/ns/p\n" +
			"acceptable_entities: [deployment/ns/d]\nroot_cause_rank_max: 2\nmax_investigation_loops: 3\nruling_out_keywords: [sibling]\nforbidden_keywords: null\nunknown_future_key: {a: 1}\n",
		"eks_pods.json":                `{"pods": []}`,
		"empty.json":                   "  \n",
		"k8s/a.yaml":                   "# comment only\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\n---\napiVersion: v1\nkind: Event\nmetadata: {name: e}\n",
		"k8s/b.yml":                    "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		"k8s/notes.txt":                "ignored",
		"pod_logs/ns/p.c.previous.log": "line\n",
		"pod_logs/ns/p.log":            "",
	})
	sc, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sc.ID != "sid-1" || sc.Suite != "suite" || sc.Meta.FailureMode != "oom" || sc.Meta.Difficulty != 2 ||
		!reflect.DeepEqual(sc.Meta.AdversarialSignals, []string{"a", "b"}) || sc.Meta.Extra["extra_key"] != float64(5) {
		t.Errorf("meta: %+v id=%s suite=%s", sc.Meta, sc.ID, sc.Suite)
	}
	a := sc.Answer
	if a == nil || a.RootCauseCategory != "resource_exhaustion" || a.RootCauseEntity != "pod/ns/p" || a.RankMax() != 2 ||
		a.MaxInvestigationLoops != 3 || len(a.AcceptableEntities) != 1 || a.ForbiddenKeywords != nil || a.Extra["unknown_future_key"] == nil {
		t.Errorf("answer: %+v", a)
	}
	if len(sc.K8sDocs) != 3 {
		t.Errorf("k8s docs = %d, want 3", len(sc.K8sDocs))
	}
	if sc.PodLogFiles["ns/p.c.previous.log"] != "line\n" {
		t.Errorf("pod logs: %v", sc.PodLogFiles)
	}
	if got, want := sc.Sources(), []string{"eks_pods", "k8s", "pod_logs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Sources() = %v, want %v", got, want)
	}
	if !json.Valid(sc.AlertRaw) {
		t.Error("alert raw invalid")
	}
}

func TestLoadDefaultsAndRankMax(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "only-alert")
	write(t, dir, map[string]string{"alert.json": alertJSON})
	sc, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sc.ID != "only-alert" || sc.Answer != nil || len(sc.Sources()) != 0 {
		t.Errorf("got id=%s answer=%v sources=%v", sc.ID, sc.Answer, sc.Sources())
	}
	if (*Answer)(nil).RankMax() != 1 {
		t.Error("nil answer rank max should default to 1")
	}
}

func TestBaseInheritance(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "000-base"), map[string]string{
		"alert.json":       alertJSON,
		"eks_pods.json":    `{"pods":[{"name":"base"}]}`,
		"eks_events.json":  `{"warning_events":[]}`,
		"monitors_x.json":  `{}`,
		"k8s/n.yaml":       "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		"pod_logs/a/b.log": "base log\n",
	})
	write(t, filepath.Join(root, "001-child"), map[string]string{
		"alert.json":    alertJSON,
		"scenario.yml":  "base: 000-base\navailable_evidence: [eks_pods, eks_events, k8s]\n",
		"eks_pods.json": `{"pods":[{"name":"child"}]}`,
	})
	sc, err := Load(filepath.Join(root, "001-child"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sc.Evidence["eks_pods"]), "child") {
		t.Errorf("child file must override the base: %s", sc.Evidence["eks_pods"])
	}
	if _, ok := sc.Evidence["eks_events"]; !ok {
		t.Error("eks_events not inherited")
	}
	if _, ok := sc.Evidence["monitors_x"]; ok {
		t.Error("a source outside available_evidence was inherited")
	}
	if len(sc.PodLogFiles) != 0 {
		t.Error("pod_logs outside available_evidence was inherited")
	}
	if len(sc.K8sDocs) != 1 || !reflect.DeepEqual(sc.Inherited, []string{"eks_events", "k8s"}) {
		t.Errorf("inherited = %v, docs = %d", sc.Inherited, len(sc.K8sDocs))
	}
}

func TestCloudWatchParts(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"alert.json":                           alertJSON,
		"aws_cloudwatch_metrics_envelope.json": `{"namespace":"AWS/RDS","period":60}`,
		"aws_cloudwatch_metrics_CPU.json":      `{"id":"c","metric_name":"CPU","timestamps":[],"values":[]}`,
		"aws_cloudwatch_metrics_Mem.json":      `{"metric_data_results":[{"id":"m","metric_name":"Mem"}]}`,
	})
	sc, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Namespace string           `json:"namespace"`
		Results   []map[string]any `json:"metric_data_results"`
	}
	if err := json.Unmarshal(sc.Evidence[SourceCloudWatch], &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Namespace != "AWS/RDS" || len(doc.Results) != 2 || len(sc.Evidence) != 1 {
		t.Errorf("assembled = %+v, evidence keys %d", doc, len(sc.Evidence))
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // substrings of the error
	}{
		{"no alert", map[string]string{"scenario.yml": "a: 1\n"}, []string{"alert.json"}},
		{"bad alert", map[string]string{"alert.json": "{\n  \"a\": ,\n}"}, []string{"alert.json", "line 2"}},
		{"bad scenario", map[string]string{"alert.json": alertJSON, "scenario.yml": "a: [1, 2\n"}, []string{"scenario.yml"}},
		{"bad answer type", map[string]string{"alert.json": alertJSON, "answer.yml": "required_keywords: {a: 1}\n"}, []string{"answer.yml"}},
		{"bad evidence", map[string]string{"alert.json": alertJSON, "eks_pods.json": `{"pods": [}`}, []string{"eks_pods.json", "invalid JSON"}},
		{"bad k8s yaml", map[string]string{"alert.json": alertJSON, "k8s/x.yaml": "kind: Pod\nmetadata: [\n"}, []string{"x.yaml"}},
		{"missing base", map[string]string{"alert.json": alertJSON, "scenario.yml": "base: nowhere\n"}, []string{"base", "nowhere"}},
		{"base path escape", map[string]string{"alert.json": alertJSON, "scenario.yml": "base: ../x\n"}, []string{"sibling"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			write(t, dir, tc.files)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("want error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestBaseCycle(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), map[string]string{"alert.json": alertJSON, "scenario.yml": "base: b\n"})
	write(t, filepath.Join(root, "b"), map[string]string{"alert.json": alertJSON, "scenario.yml": "base: a\n"})
	if _, err := Load(filepath.Join(root, "a")); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("want cycle error, got %v", err)
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"b/2/alert.json": alertJSON, "a/1/alert.json": alertJSON, "a/shared/x.json": "{}", "c/deep/er/alert.json": alertJSON,
	})
	got, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, d := range got {
		r, _ := filepath.Rel(root, d)
		rel = append(rel, filepath.ToSlash(r))
	}
	if want := []string{"a/1", "b/2", "c/deep/er"}; !reflect.DeepEqual(rel, want) {
		t.Errorf("Discover = %v, want %v", rel, want)
	}
	if _, err := Discover(filepath.Join(root, "missing")); err == nil {
		t.Error("want error for a missing root")
	}
}

func TestLoadBenchmarkSuites(t *testing.T) {
	root := benchdata.Dir(t)
	dirs, err := Discover(root)
	if err != nil {
		t.Skipf("benchmarks folder unreadable: %v", err)
	}
	if len(dirs) == 0 {
		t.Skip("no scenarios under " + root)
	}
	for _, d := range dirs {
		sc, err := Load(d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if len(sc.Sources()) == 0 {
			t.Errorf("%s: no evidence sources", d)
		}
		if sc.Answer == nil || sc.Answer.RootCauseCategory == "" {
			t.Errorf("%s: no answer category", d)
		}
		// Every available_evidence entry that the suite ships must be loaded
		// (own file or inherited).
		for _, src := range sc.Meta.AvailableEvidence {
			if _, ok := sc.Evidence[src]; !ok && src != "eks_pod_logs" && !sc.Has(src) {
				t.Logf("%s: %s listed but absent (allowed: evidence may be missing)", sc.ID, src)
			}
		}
	}
}

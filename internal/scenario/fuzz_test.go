package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const outsideMarker = "OUTSIDE-THE-SUITE-7f3a"

// scenarioSeeds returns the files of the scenarios we wrote (demo, corpus,
// held-out): alert.json, scenario.yml, answer.yml, one evidence file and one
// k8s document set each.
func scenarioSeeds(tb testing.TB) [][5][]byte {
	tb.Helper()
	var dirs []string
	for _, pattern := range []string{"../../scenarios/demo", "../../scenarios/corpus/*", "../../scenarios/heldout/*"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	read := func(p string) []byte { b, _ := os.ReadFile(p); return b }
	// The smallest file of a kind, up to 2 KiB (big seeds make every run
	// and every minimization slow).
	smallest := func(pattern string) []byte {
		m, _ := filepath.Glob(pattern)
		slices.Sort(m)
		var best []byte
		for _, p := range m {
			if filepath.Base(p) == AlertFile {
				continue
			}
			if b := read(p); len(b) <= 2<<10 && (best == nil || len(b) < len(best)) {
				best = b
			}
		}
		return best
	}
	var out [][5][]byte
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, AlertFile)); err != nil {
			continue
		}
		out = append(out, [5][]byte{
			read(filepath.Join(d, AlertFile)), read(filepath.Join(d, MetaFile)), read(filepath.Join(d, AnswerFile)),
			smallest(filepath.Join(d, "*.json")), smallest(filepath.Join(d, K8sDir, "*.yaml")),
		})
	}
	if len(out) < 10 {
		tb.Fatalf("only %d seed scenarios found", len(out))
	}
	return out
}

// FuzzLoad writes fuzzed scenario files (alert.json, scenario.yml,
// answer.yml, an evidence file, a k8s document set) into a suite folder that
// also holds a sibling scenario, next to a folder outside the suite, and
// loads it. Load never panics; it fails with a "scenario:" error or returns a
// scenario whose alert and evidence are valid JSON, whose k8s documents are
// non-empty, whose inherited sources came from its base, and which never holds
// evidence from outside its suite (base: cannot escape).
func FuzzLoad(f *testing.F) {
	for _, s := range scenarioSeeds(f) {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	for _, base := range []string{"sibling", "..", ".", "../outside", "outside", "sibling/..", "link-out", "s"} {
		f.Add(alert(), []byte("base: '"+base+"'\navailable_evidence: [eks_pods, k8s]\n"), []byte(nil), []byte(nil), []byte(nil))
	}
	root := fuzzRoot(f)
	f.Fuzz(func(t *testing.T, alertJSON, meta, answer, evidence, k8s []byte) {
		dir := writeFuzzScenario(t, root, alertJSON, meta, answer, evidence, k8s)
		sc, err := Load(dir)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "scenario: ") {
				t.Fatalf("Load error %q does not say it is the scenario's", err)
			}
			return
		}
		if sc.ID == "" || !json.Valid(sc.AlertRaw) {
			t.Fatalf("loaded scenario has id %q and alert %q", sc.ID, sc.AlertRaw)
		}
		for stem, b := range sc.Evidence {
			if len(bytes.TrimSpace(b)) > 0 && !json.Valid(b) {
				t.Fatalf("evidence %s is not valid JSON: %q", stem, b)
			}
			if bytes.Contains(b, []byte(outsideMarker)) {
				t.Fatalf("evidence %s came from outside the suite (base %q)", stem, sc.Meta.Base)
			}
		}
		for i, d := range sc.K8sDocs {
			if len(bytes.TrimSpace(d)) == 0 {
				t.Fatalf("k8s document %d is empty", i)
			}
			if bytes.Contains(d, []byte(outsideMarker)) {
				t.Fatalf("k8s document %d came from outside the suite (base %q)", i, sc.Meta.Base)
			}
		}
		if sc.Meta.Base == "" && len(sc.Inherited) > 0 {
			t.Fatalf("inherited %v without a base", sc.Inherited)
		}
		for _, src := range sc.Inherited {
			if !sc.Has(src) {
				t.Fatalf("inherited %s, which holds no data", src)
			}
		}
	})
}

// fuzzRoot is the per-process layout FuzzLoad writes into: root/outside
// (a scenario outside the suite) and root/suite/link-out (a symlink to it),
// root/suite/sibling (a valid base), and evidence files carrying
// outsideMarker in the suite folder and its parent. Each run rewrites only
// root/suite/s.
func fuzzRoot(tb testing.TB) string {
	tb.Helper()
	root, err := makeFuzzRoot()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

func makeFuzzRoot() (string, error) {
	tmp := "" // the default temporary directory, or memory when there is one
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		tmp = "/dev/shm"
	}
	root, err := os.MkdirTemp(tmp, "rcamesh-fuzzload-")
	if err != nil {
		root, err = os.MkdirTemp("", "rcamesh-fuzzload-")
	}
	if err != nil {
		return "", err
	}
	suite := filepath.Join(root, "suite")
	secret := []byte(`{"pods":[{"name":"` + outsideMarker + `"}]}`)
	files := map[string][]byte{
		filepath.Join(root, "eks_pods.json"):                   secret,
		filepath.Join(root, "outside", AlertFile):              alert(),
		filepath.Join(root, "outside", "eks_pods.json"):        secret,
		filepath.Join(root, "outside", K8sDir, "x.yaml"):       []byte("kind: Secret\nmetadata: {name: " + outsideMarker + "}\n"),
		filepath.Join(suite, "eks_pods.json"):                  secret,
		filepath.Join(suite, "sibling", AlertFile):             alert(),
		filepath.Join(suite, "sibling", "eks_events.json"):     []byte(`{"warning_events":[]}`),
		filepath.Join(suite, "sibling", PodLogsDir, "a/b.log"): []byte("sibling log\n"),
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(suite, "link-out")); err != nil {
		return "", err
	}
	return root, nil
}

// writeFuzzScenario writes the fuzzed files into root/suite/s (nil: absent)
// and returns that folder.
func writeFuzzScenario(t *testing.T, root string, alertJSON, meta, answer, evidence, k8s []byte) string {
	t.Helper()
	dir := filepath.Join(root, "suite", "s")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{AlertFile: alertJSON, MetaFile: meta, AnswerFile: answer, "eks_pods.json": evidence, K8sDir + "/objects.yaml": k8s}
	for name, b := range files {
		if b == nil && name != AlertFile {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func alert() []byte {
	return []byte(`{"title":"x","state":"alerting","commonLabels":{"alertname":"A"}}`)
}

// Package scenario loads a recorded incident scenario from a folder: the
// alert, the scenario metadata, the evidence files (named by their source
// stem) and, kept apart, the ground truth.
//
// Layout: alert.json, scenario.yml, answer.yml,
// <source>.json evidence files, k8s/*.yaml (multi-document Kubernetes
// objects, source "k8s") and pod_logs/<ns>/<pod>[.<container>][.previous].log
// (source "pod_logs"). A scenario.yml `base: <sibling>` inherits every
// evidence source the scenario does not provide itself from the sibling
// folder.
//
// Ground truth: Scenario.Answer is for the evaluator only. The investigation
// engine (fixture backend, tools, brain, analysis) must never read it; it is
// loaded here only so that one Load serves both the runner and the scorer.
package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Well-known file and source names of the scenario format.
const (
	AlertFile    = "alert.json"
	MetaFile     = "scenario.yml"
	AnswerFile   = "answer.yml"
	K8sDir       = "k8s"
	PodLogsDir   = "pod_logs"
	SourceK8s    = "k8s"
	SourcePodLog = "pod_logs"

	// SourceCloudWatch may be split into one file per metric
	// (<stem>_<Metric>.json) plus <stem>_envelope.json; Load reassembles
	// the parts into one GetMetricData document under this stem.
	SourceCloudWatch = "aws_cloudwatch_metrics"

	maxBaseDepth = 8
)

// Meta is scenario.yml. Unknown keys are kept in Extra.
type Meta struct {
	ScenarioID         string         `json:"scenario_id,omitempty"`
	SchemaVersion      string         `json:"schema_version,omitempty"`
	Base               string         `json:"base,omitempty"`
	Engine             string         `json:"engine,omitempty"`
	FailureMode        string         `json:"failure_mode,omitempty"`
	Severity           string         `json:"severity,omitempty"`
	Difficulty         int            `json:"scenario_difficulty,omitempty"`
	AdversarialSignals []string       `json:"adversarial_signals,omitempty"`
	AvailableEvidence  []string       `json:"available_evidence,omitempty"`
	Extra              map[string]any `json:"-"`
}

// Answer is answer.yml: the opensre ground-truth keys plus rcamesh's
// additions (culprit entity, required evidence). ONLY the evaluator may read it.
type Answer struct {
	RootCauseCategory       string         `json:"root_cause_category,omitempty"`
	RequiredKeywords        []string       `json:"required_keywords,omitempty"`
	ForbiddenCategories     []string       `json:"forbidden_categories,omitempty"`
	ForbiddenKeywords       []string       `json:"forbidden_keywords,omitempty"`
	RequiredEvidenceSources []string       `json:"required_evidence_sources,omitempty"`
	OptimalTrajectory       []string       `json:"optimal_trajectory,omitempty"`
	RequiredQueries         []string       `json:"required_queries,omitempty"`
	MaxInvestigationLoops   int            `json:"max_investigation_loops,omitempty"`
	RulingOutKeywords       []string       `json:"ruling_out_keywords,omitempty"`
	ModelResponse           string         `json:"model_response,omitempty"`
	RootCauseEntity         string         `json:"root_cause_entity,omitempty"`
	AcceptableEntities      []string       `json:"acceptable_entities,omitempty"`
	RootCauseRankMax        int            `json:"root_cause_rank_max,omitempty"`
	Extra                   map[string]any `json:"-"`
}

// RankMax is RootCauseRankMax, defaulting to 1.
func (a *Answer) RankMax() int {
	if a == nil || a.RootCauseRankMax <= 0 {
		return 1
	}
	return a.RootCauseRankMax
}

// Scenario is one loaded scenario folder.
type Scenario struct {
	ID       string
	Dir      string
	Suite    string // parent folder name (e.g. the engine family), informational
	AlertRaw json.RawMessage
	Meta     Meta
	// Answer is the ground truth, nil when answer.yml is absent.
	// The engine must never read it; only the evaluator does.
	Answer *Answer
	// Evidence maps a source stem to the raw JSON of its file.
	Evidence map[string][]byte
	// K8sDocs are the YAML documents of k8s/*.yaml, one object (or List) each.
	K8sDocs [][]byte
	// PodLogFiles maps a path relative to pod_logs/ ("ns/pod.container.log")
	// to its content.
	PodLogFiles map[string]string
	// Inherited lists the sources taken from the base scenario.
	Inherited []string
}

// Sources returns the evidence source stems present with non-empty content,
// sorted. "k8s" and "pod_logs" are included when those folders hold data.
func (s *Scenario) Sources() []string {
	if s == nil {
		return nil
	}
	var out []string
	for stem, b := range s.Evidence {
		if len(bytes.TrimSpace(b)) > 0 {
			out = append(out, stem)
		}
	}
	if len(s.K8sDocs) > 0 {
		out = append(out, SourceK8s)
	}
	for _, c := range s.PodLogFiles {
		if strings.TrimSpace(c) != "" {
			out = append(out, SourcePodLog)
			break
		}
	}
	sort.Strings(out)
	return out
}

// Has reports whether source has non-empty data.
func (s *Scenario) Has(source string) bool {
	for _, x := range s.Sources() {
		if x == source {
			return true
		}
	}
	return false
}

// Discover returns every folder under root (root included) that contains an
// alert.json, sorted.
func Discover(root string) ([]string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("scenario: discover %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("scenario: discover %s: not a directory", root)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == AlertFile {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scenario: discover %s: %w", root, err)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// Load reads the scenario in dir.
func Load(dir string) (*Scenario, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("scenario: %s: %w", dir, err)
	}
	sc := &Scenario{
		Dir:         abs,
		Suite:       filepath.Base(filepath.Dir(abs)),
		Evidence:    map[string][]byte{},
		PodLogFiles: map[string]string{},
	}
	alertPath := filepath.Join(abs, AlertFile)
	alert, err := os.ReadFile(alertPath)
	if err != nil {
		return nil, fmt.Errorf("scenario: read %s: %w", alertPath, err)
	}
	if !json.Valid(alert) {
		return nil, fmt.Errorf("scenario: %s: %w", alertPath, jsonError(alert))
	}
	sc.AlertRaw = json.RawMessage(alert)

	if err := readYAML(filepath.Join(abs, MetaFile), &sc.Meta, &sc.Meta.Extra); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ansPath := filepath.Join(abs, AnswerFile)
	var ans Answer
	switch err := readYAML(ansPath, &ans, &ans.Extra); {
	case err == nil:
		sc.Answer = &ans
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, err
	}
	sc.ID = sc.Meta.ScenarioID
	if sc.ID == "" {
		sc.ID = filepath.Base(abs)
	}

	if err := loadEvidence(abs, sc.Evidence, &sc.K8sDocs, sc.PodLogFiles); err != nil {
		return nil, err
	}
	if err := sc.inherit(abs, sc.Meta.Base, map[string]bool{abs: true}, 0); err != nil {
		return nil, err
	}
	sort.Strings(sc.Inherited)
	return sc, nil
}

// inherit fills sources the scenario lacks from its base chain. When
// available_evidence is listed, only listed sources are inherited.
func (sc *Scenario) inherit(dir, base string, seen map[string]bool, depth int) error {
	if base == "" {
		return nil
	}
	if depth >= maxBaseDepth {
		return fmt.Errorf("scenario: %s: base chain deeper than %d", sc.Dir, maxBaseDepth)
	}
	bdir, err := siblingDir(dir, base)
	if err != nil {
		return fmt.Errorf("scenario: %s: %w", filepath.Join(dir, MetaFile), err)
	}
	if seen[bdir] {
		return fmt.Errorf("scenario: %s: base cycle through %s", sc.Dir, bdir)
	}
	seen[bdir] = true
	if st, err := os.Stat(bdir); err != nil || !st.IsDir() {
		return fmt.Errorf("scenario: %s: base %q: folder %s not found", filepath.Join(dir, MetaFile), base, bdir)
	}
	ev := map[string][]byte{}
	var docs [][]byte
	logs := map[string]string{}
	if err := loadEvidence(bdir, ev, &docs, logs); err != nil {
		return err
	}
	allowed := func(src string) bool {
		if len(sc.Meta.AvailableEvidence) == 0 {
			return true
		}
		for _, a := range sc.Meta.AvailableEvidence {
			if a == src {
				return true
			}
		}
		return false
	}
	for stem, b := range ev {
		if _, ok := sc.Evidence[stem]; ok || !allowed(stem) {
			continue
		}
		sc.Evidence[stem] = b
		sc.Inherited = append(sc.Inherited, stem)
	}
	if len(sc.K8sDocs) == 0 && len(docs) > 0 && allowed(SourceK8s) {
		sc.K8sDocs = docs
		sc.Inherited = append(sc.Inherited, SourceK8s)
	}
	if len(sc.PodLogFiles) == 0 && len(logs) > 0 && allowed(SourcePodLog) {
		for k, v := range logs {
			sc.PodLogFiles[k] = v
		}
		sc.Inherited = append(sc.Inherited, SourcePodLog)
	}
	var bm Meta
	if err := readYAML(filepath.Join(bdir, MetaFile), &bm, &bm.Extra); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return sc.inherit(bdir, bm.Base, seen, depth+1)
}

// siblingDir resolves a scenario's `base:` to a folder beside dir in the same
// suite folder. base must be a plain folder name: not empty, ".", ".." or
// anything with a path separator, and, symbolic links resolved, the folder
// must still lie directly in dir's suite folder. So a scenario can never
// read evidence from outside its suite.
func siblingDir(dir, base string) (string, error) {
	if base == "." || base == ".." || filepath.IsAbs(base) || strings.ContainsAny(base, `/\`) ||
		filepath.VolumeName(base) != "" || strings.ContainsRune(base, 0) {
		return "", fmt.Errorf("base %q must name a sibling folder", base)
	}
	suite := filepath.Dir(dir)
	bdir := filepath.Join(suite, base)
	if filepath.Dir(bdir) != suite {
		return "", fmt.Errorf("base %q must name a sibling folder", base)
	}
	realSuite, err := filepath.EvalSymlinks(suite)
	if err != nil {
		return "", fmt.Errorf("base %q: %w", base, err)
	}
	realBase, err := filepath.EvalSymlinks(bdir)
	if err != nil {
		return "", fmt.Errorf("base %q: folder %s not found", base, bdir)
	}
	if filepath.Dir(realBase) != realSuite {
		return "", fmt.Errorf("base %q resolves to %s, outside the suite folder %s", base, realBase, realSuite)
	}
	return bdir, nil
}

// loadEvidence reads the evidence of one folder (no inheritance).
func loadEvidence(dir string, ev map[string][]byte, docs *[][]byte, podLogs map[string]string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("scenario: read %s: %w", dir, err)
	}
	var cwParts [][]byte
	var cwEnvelope []byte
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.EqualFold(filepath.Ext(name), ".json") || name == AlertFile {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("scenario: read %s: %w", path, err)
		}
		if len(bytes.TrimSpace(b)) > 0 && !json.Valid(b) {
			return fmt.Errorf("scenario: evidence %s: %w", path, jsonError(b))
		}
		stem := strings.TrimSuffix(name, filepath.Ext(name))
		switch {
		case stem == SourceCloudWatch+"_envelope":
			cwEnvelope = b
		case strings.HasPrefix(stem, SourceCloudWatch+"_"):
			cwParts = append(cwParts, b)
		default:
			ev[stem] = b
		}
	}
	if _, whole := ev[SourceCloudWatch]; !whole && (len(cwParts) > 0 || cwEnvelope != nil) {
		b, err := assembleCloudWatch(cwEnvelope, cwParts)
		if err != nil {
			return fmt.Errorf("scenario: %s: %s parts: %w", dir, SourceCloudWatch, err)
		}
		ev[SourceCloudWatch] = b
	}

	kdir := filepath.Join(dir, K8sDir)
	if kents, err := os.ReadDir(kdir); err == nil {
		for _, e := range kents {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			path := filepath.Join(kdir, e.Name())
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("scenario: read %s: %w", path, err)
			}
			split, err := SplitYAML(b)
			if err != nil {
				return fmt.Errorf("scenario: k8s %s: %w", path, err)
			}
			*docs = append(*docs, split...)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("scenario: read %s: %w", kdir, err)
	}

	pdir := filepath.Join(dir, PodLogsDir)
	err = filepath.WalkDir(pdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(pdir, path)
		if err != nil {
			return err
		}
		podLogs[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("scenario: read %s: %w", pdir, err)
	}
	return nil
}

// assembleCloudWatch merges per-metric result files and an optional envelope
// into one GetMetricData-like document.
func assembleCloudWatch(envelope []byte, parts [][]byte) ([]byte, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(envelope)) > 0 {
		if err := json.Unmarshal(envelope, &doc); err != nil {
			return nil, fmt.Errorf("envelope: %w", err)
		}
	}
	var results []any
	if r, ok := doc["metric_data_results"].([]any); ok {
		results = r
	}
	for _, p := range parts {
		if len(bytes.TrimSpace(p)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(p, &v); err != nil {
			return nil, err
		}
		switch t := v.(type) {
		case map[string]any:
			if r, ok := t["metric_data_results"].([]any); ok {
				results = append(results, r...)
			} else {
				results = append(results, t)
			}
		case []any:
			results = append(results, t...)
		}
	}
	doc["metric_data_results"] = results
	return json.Marshal(doc)
}

// SplitYAML splits a multi-document YAML (or JSON) stream into documents,
// dropping empty ones. Each document is validated as YAML.
func SplitYAML(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var out [][]byte
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var probe any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if probe == nil {
			continue
		}
		out = append(out, doc)
	}
	return out, nil
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' || string(t) == "---" {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// readYAML decodes a YAML file into v (json tags), and all keys into extra.
func readYAML(path string, v any, extra *map[string]any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("scenario: %s: %w", path, err)
	}
	var all map[string]any
	if err := yaml.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("scenario: %s: %w", path, err)
	}
	*extra = all
	return nil
}

// jsonError describes why b is not valid JSON, with line and column.
func jsonError(b []byte) error {
	var v any
	err := json.Unmarshal(b, &v)
	if err == nil {
		return errors.New("invalid JSON")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(b, se.Offset)
		return fmt.Errorf("invalid JSON at line %d column %d: %w", line, col, err)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

func lineCol(b []byte, off int64) (int, int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

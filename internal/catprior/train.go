package catprior

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// notEvidence are a scenario folder's files the prior does not read: its
// alert (the envelope's words, not what failed) and its metrics (their
// names are the exporter's vocabulary, Prometheus or OpenTelemetry; the
// detectors read them as signals), which the analysis leaves out too; its
// answer, its metadata and its prose.
var notEvidence = map[string]bool{"alert.json": true, "prometheus.json": true, "answer.yml": true, "answer.yaml": true, "scenario.yml": true, "scenario.yaml": true, "README.md": true}

// DocumentOf reads the evidence files of one scenario folder (FORMAT.md)
// into a document: JSON and YAML by their values, anything else as text.
func DocumentOf(dir string) (Terms, error) {
	doc := Terms{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || notEvidence[d.Name()] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".json":
			doc.AddJSON(b)
		case ".yaml", ".yml":
			doc.AddYAML(string(b))
		default:
			doc.AddText(string(b))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catprior: read %s: %w", dir, err)
	}
	return doc, nil
}

// Label reads a scenario folder's expected category (answer.yml's
// root_cause_category).
func Label(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "answer.yml"))
	if err != nil {
		return "", fmt.Errorf("catprior: %w", err)
	}
	var a struct {
		Category string `yaml:"root_cause_category"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		return "", fmt.Errorf("catprior: %s: %w", dir, err)
	}
	return strings.TrimSpace(a.Category), nil
}

// Train learns a model from scenario sets: each named folder under root is
// a set, each of its subfolders with an answer.yml an incident. Incidents
// labelled with anything but a fault category or Healthy are not read.
func Train(root string, sets []string) (*Model, error) {
	sets = slices.Clone(sets)
	sort.Strings(sets)
	m := &Model{Postings: map[string][][3]int{}}
	for si, set := range sets {
		entries, err := os.ReadDir(filepath.Join(root, set))
		if err != nil {
			return nil, fmt.Errorf("catprior: set %s: %w", set, err)
		}
		m.Sets = append(m.Sets, set)
		docs := make([]int, len(Categories)+1)
		counts := map[string][]int{}
		for _, e := range entries {
			dir := filepath.Join(root, set, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, "answer.yml")); err != nil {
				continue
			}
			label, err := Label(dir)
			if err != nil {
				return nil, err
			}
			c := slices.Index(labels(), label)
			if c < 0 {
				continue
			}
			doc, err := DocumentOf(dir)
			if err != nil {
				return nil, err
			}
			docs[c]++
			for t := range doc {
				if counts[t] == nil {
					counts[t] = make([]int, len(Categories)+1)
				}
				counts[t][c]++
			}
		}
		m.Docs = append(m.Docs, docs)
		for t, per := range counts {
			for c, k := range per {
				if k > 0 {
					m.Postings[t] = append(m.Postings[t], [3]int{si, c, k})
				}
			}
		}
	}
	// Terms too rare to ever count (fewer incidents than minDocs in all
	// sets together) are not kept.
	for t, ps := range m.Postings {
		total := 0
		for _, p := range ps {
			total += p[2]
		}
		if total < minDocs {
			delete(m.Postings, t)
		}
	}
	return m, nil
}

// Package petshop loads the PetShop root-cause dataset (Hardt et al., CLeaR
// 2024; CC-BY-4.0) from its folder as published, ranks each incident's
// culprit with internal/graphrca and scores the rankings as the dataset's
// README defines: AC@1, AC@3, Avg@5 per traffic scenario and target metric,
// next to the authors' stored baseline, trivial baselines and specificity on
// the no-issue periods.
package petshop

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rcamesh/rcamesh/internal/graphrca"
)

// Incident is one labelled incident window.
type Incident struct {
	Scenario  string // low_traffic, high_traffic, temporal_traffic1, ...
	Split     string // train or test
	Name      string // issue_<i>
	Window    graphrca.Frame
	Target    Target
	RootCause string
}

// Target is the alerting metric.
type Target struct {
	Node      string `json:"node"`
	Metric    string `json:"metric"`
	Agg       string `json:"agg"`
	Timestamp int64  `json:"timestamp"`
}

type targetFile struct {
	Target    Target `json:"target"`
	RootCause struct {
		Node string `json:"node"`
	} `json:"root_cause"`
}

// Scenario is one traffic scenario: graph, optional no-issue baseline and
// incidents.
type Scenario struct {
	Name      string
	Graph     graphrca.Graph
	Baseline  *graphrca.Frame
	Incidents []Incident
}

// Load reads every scenario folder under dir (a folder holding graph.csv).
func Load(dir string) ([]Scenario, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("petshop: %w", err)
	}
	var out []Scenario
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sdir := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sdir, "graph.csv")); err != nil {
			continue
		}
		sc, err := LoadScenario(sdir)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("petshop: no scenario folder with graph.csv under %s", dir)
	}
	return out, nil
}

// LoadScenario reads one traffic scenario folder.
func LoadScenario(dir string) (Scenario, error) {
	sc := Scenario{Name: filepath.Base(dir)}
	g, err := ReadGraph(filepath.Join(dir, "graph.csv"))
	if err != nil {
		return sc, err
	}
	sc.Graph = g
	if f, err := ReadMetrics(filepath.Join(dir, "noissue", "metrics.csv")); err == nil {
		sc.Baseline = &f
	} else if !errors.Is(err, os.ErrNotExist) {
		return sc, err
	}
	for _, split := range []string{"train", "test"} {
		issues, err := filepath.Glob(filepath.Join(dir, split, "issue_*"))
		if err != nil {
			return sc, fmt.Errorf("petshop: %w", err)
		}
		sort.Slice(issues, func(i, j int) bool { return issueNum(issues[i]) < issueNum(issues[j]) })
		for _, idir := range issues {
			inc, err := readIncident(idir)
			if err != nil {
				return sc, err
			}
			inc.Scenario, inc.Split = sc.Name, split
			sc.Incidents = append(sc.Incidents, inc)
		}
	}
	return sc, nil
}

func issueNum(p string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "issue_"))
	return n
}

func readIncident(dir string) (Incident, error) {
	inc := Incident{Name: filepath.Base(dir)}
	b, err := os.ReadFile(filepath.Join(dir, "target.json"))
	if err != nil {
		return inc, fmt.Errorf("petshop: %w", err)
	}
	var tf targetFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return inc, fmt.Errorf("petshop: %s: %w", filepath.Join(dir, "target.json"), err)
	}
	if tf.Target.Node == "" || tf.Target.Metric == "" {
		return inc, fmt.Errorf("petshop: %s: target node and metric are required", filepath.Join(dir, "target.json"))
	}
	inc.Target, inc.RootCause = tf.Target, tf.RootCause.Node
	if inc.Target.Agg == "" {
		inc.Target.Agg = "Average"
	}
	inc.Window, err = ReadMetrics(filepath.Join(dir, "metrics.csv"))
	return inc, err
}

// ReadGraph reads a 0/1 adjacency matrix (rows are callers).
func ReadGraph(path string) (graphrca.Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return graphrca.Graph{}, fmt.Errorf("petshop: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return graphrca.Graph{}, fmt.Errorf("petshop: %s: header: %w", path, err)
	}
	g := graphrca.Graph{Nodes: header[1:], Callees: map[string][]string{}}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return g, fmt.Errorf("petshop: %s:%d: %w", path, line, err)
		}
		if len(rec) != len(header) {
			return g, fmt.Errorf("petshop: %s:%d: %d cells, header has %d", path, line, len(rec), len(header))
		}
		for j, cell := range rec[1:] {
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return g, fmt.Errorf("petshop: %s:%d: cell %q: %w", path, line, cell, err)
			}
			if v != 0 {
				g.Callees[rec[0]] = append(g.Callees[rec[0]], header[j+1])
			}
		}
	}
	return g, nil
}

// ReadMetrics reads the wide metrics table (4 header lines: node, metric,
// statistic, index name). Empty cells become NaN.
func ReadMetrics(path string) (graphrca.Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return graphrca.Frame{}, fmt.Errorf("petshop: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.FieldsPerRecord = -1
	var hdr [4][]string
	for i := range hdr {
		if hdr[i], err = r.Read(); err != nil {
			return graphrca.Frame{}, fmt.Errorf("petshop: %s: header line %d: %w", path, i+1, err)
		}
	}
	if len(hdr[1]) != len(hdr[0]) || len(hdr[2]) != len(hdr[0]) {
		return graphrca.Frame{}, fmt.Errorf("petshop: %s: header lines differ in length", path)
	}
	cols := make([]graphrca.Column, len(hdr[0]))
	fr := graphrca.Frame{Cols: map[graphrca.Column][]float64{}}
	for j := 1; j < len(hdr[0]); j++ {
		cols[j] = graphrca.Column{Node: hdr[0][j], Metric: hdr[1][j], Stat: hdr[2][j]}
	}
	for line := 5; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fr, fmt.Errorf("petshop: %s:%d: %w", path, line, err)
		}
		if len(rec) != len(hdr[0]) {
			return fr, fmt.Errorf("petshop: %s:%d: %d cells, header has %d", path, line, len(rec), len(hdr[0]))
		}
		ts, err := strconv.ParseFloat(rec[0], 64)
		if err != nil {
			return fr, fmt.Errorf("petshop: %s:%d: timestamp %q: %w", path, line, rec[0], err)
		}
		fr.Times = append(fr.Times, int64(ts))
		for j := 1; j < len(rec); j++ {
			v := math.NaN()
			if rec[j] != "" {
				if v, err = strconv.ParseFloat(rec[j], 64); err != nil {
					return fr, fmt.Errorf("petshop: %s:%d: cell %q: %w", path, line, rec[j], err)
				}
			}
			fr.Cols[cols[j]] = append(fr.Cols[cols[j]], v)
		}
	}
	if len(fr.Times) == 0 {
		return fr, fmt.Errorf("petshop: %s: no data rows", path)
	}
	return fr, nil
}

// TriggerRow returns the row whose bucket holds ts (buckets start at their
// timestamp).
func TriggerRow(f graphrca.Frame, ts int64) int {
	row := 0
	for i, t := range f.Times {
		if t <= ts {
			row = i
		}
	}
	return row
}

package catprior

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Categories are the fault categories the model scores, one against the
// others among faults.
var Categories = []string{"code_defect", "configuration_error", "data_quality", "dependency_failure", "infrastructure", "resource_exhaustion"}

// Healthy is the label of incidents that needed no action (planned work,
// expected load, resolved, not paged). The model scores it apart, against
// all faults (Reading.Healthy), in the column after the fault categories.
const Healthy = "healthy"

// healthyColumn is Healthy's column in Docs and postings.
var healthyColumn = len(Categories)

// labels are the columns: the fault categories, then Healthy.
func labels() []string { return append(slices.Clone(Categories), Healthy) }

// The model's settings, chosen by leave-one-set-out cross-validation over
// our own labelled sets (TestLeaveOneSetOut; flat around these values: 3
// to 5 incidents, a share of 0.5 to 0.8, smoothing 0.3 to 0.5 moved the
// fault categories read by under 1%): a term counts when at
// least minDocs incidents use it and at most maxShare of them do (words of
// every incident say nothing), each count smoothed by alpha.
const (
	minDocs  = 3
	maxShare = 0.5
	alpha    = 0.5
)

// Model holds, per training set, how many incidents of each category use
// each term. Sets are kept apart so that an evaluation can leave out the
// set it scores (Without): a score on incidents the model learned from is
// not a measure of anything.
type Model struct {
	// Sets names the training sets (a scenario folder each).
	Sets []string `json:"sets"`
	// Docs[s][c] counts set s's incidents of label c (Categories, then
	// Healthy).
	Docs [][]int `json:"docs"`
	// Postings[term] lists [set, label column, incidents] triples.
	Postings map[string][][3]int `json:"terms"`

	once    sync.Once
	derived *view
	mu      sync.Mutex
	without map[string]*Model
}

// view is the model summed over its sets: the counts Score reads. The
// fault categories are read among faults only; health against all faults.
type view struct {
	n   int              // fault incidents
	nc  []int            // fault incidents per category
	df  map[string]int   // fault incidents per term (the terms kept: minDocs, maxShare)
	cdf map[string][]int // fault incidents per term and category
	// Healthy against faults, over every incident.
	all, nh int            // incidents, healthy incidents
	hdf     map[string]int // incidents per term (the terms kept)
	hin     map[string]int // healthy incidents per term
}

func (m *Model) view() *view {
	m.once.Do(func() {
		v := &view{nc: make([]int, len(Categories)), df: map[string]int{}, cdf: map[string][]int{}, hdf: map[string]int{}, hin: map[string]int{}}
		for _, d := range m.Docs {
			for c, k := range d {
				if c < len(v.nc) {
					v.nc[c] += k
					v.n += k
				} else if c == healthyColumn {
					v.nh += k
				}
			}
		}
		v.all = v.n + v.nh
		for term, ps := range m.Postings {
			per := make([]int, len(Categories))
			faults, healthy := 0, 0
			for _, p := range ps {
				switch {
				case p[1] >= 0 && p[1] < len(per):
					per[p[1]] += p[2]
					faults += p[2]
				case p[1] == healthyColumn:
					healthy += p[2]
				}
			}
			if faults >= minDocs && float64(faults) <= maxShare*float64(v.n) {
				v.df[term], v.cdf[term] = faults, per
			}
			if total := faults + healthy; total >= minDocs && float64(total) <= maxShare*float64(v.all) {
				v.hdf[term], v.hin[term] = total, healthy
			}
		}
		m.derived = v
	})
	return m.derived
}

// Incidents is the number of labelled incidents the model learned from
// (faults and healthy).
func (m *Model) Incidents() int { return m.view().all }

// Without returns the model minus the named sets (unknown names are
// ignored); the result is cached.
func (m *Model) Without(sets ...string) *Model {
	var drop []int
	for i, s := range m.Sets {
		if slices.Contains(sets, s) {
			drop = append(drop, i)
		}
	}
	if len(drop) == 0 {
		return m
	}
	key := fmt.Sprint(drop)
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.without[key]; ok {
		return w
	}
	idx := map[int]int{}
	w := &Model{Postings: map[string][][3]int{}}
	for i, s := range m.Sets {
		if !slices.Contains(drop, i) {
			idx[i] = len(w.Sets)
			w.Sets = append(w.Sets, s)
			w.Docs = append(w.Docs, m.Docs[i])
		}
	}
	for term, ps := range m.Postings {
		for _, p := range ps {
			if j, ok := idx[p[0]]; ok {
				w.Postings[term] = append(w.Postings[term], [3]int{j, p[1], p[2]})
			}
		}
	}
	if m.without == nil {
		m.without = map[string]*Model{}
	}
	m.without[key] = w
	return w
}

// Term is one term's weight toward a category: the log-ratio of how often
// incidents of the category use it against how often the others do.
type Term struct {
	Term   string
	Weight float64
}

// Score is one category's score for a document: the sum of its terms'
// weights, and the terms that weigh most toward it.
type Score struct {
	Category string
	Score    float64
	Top      []Term
}

// Reading is the model's reading of one document, best category first.
type Reading struct {
	Scores []Score
	// Known counts the document's terms the model weighs.
	Known int
	// Healthy is the log-odds that the incident needed no action against
	// that it was a fault, from its terms alone (0: no term known), and
	// HealthyTop the terms weighing most toward health.
	Healthy    float64
	HealthyTop []Term
}

// Score reads a document: one-vs-rest naive Bayes, each category against
// all the others, so that categories with few incidents are not drowned.
func (m *Model) Score(doc Terms) Reading {
	v := m.view()
	var r Reading
	if v.n == 0 {
		return r
	}
	terms := make([]string, 0, len(doc))
	for t := range doc {
		if _, ok := v.df[t]; ok {
			terms = append(terms, t)
		}
	}
	sort.Strings(terms) // a fixed order: sums do not depend on map order
	r.Known = len(terms)
	for c, name := range Categories {
		score, top := oneVsRest(terms, func(t string) (int, int) { return v.cdf[t][c], v.df[t] }, v.nc[c], v.n-v.nc[c])
		r.Scores = append(r.Scores, Score{Category: name, Score: score, Top: top})
	}
	sort.SliceStable(r.Scores, func(i, j int) bool { return r.Scores[i].Score > r.Scores[j].Score })
	if v.nh > 0 && v.n > 0 {
		hterms := make([]string, 0, len(doc))
		for t := range doc {
			if _, ok := v.hdf[t]; ok {
				hterms = append(hterms, t)
			}
		}
		sort.Strings(hterms)
		r.Healthy, r.HealthyTop = oneVsRest(hterms, func(t string) (int, int) { return v.hin[t], v.hdf[t] }, v.nh, v.n)
	}
	return r
}

// oneVsRest sums the terms' log-ratios of how often the class's incidents
// (n of them) use each against how often the rest's (rest of them) do;
// counts gives a term's incidents in the class and in all; the terms
// weighing toward the class come back too, strongest first.
func oneVsRest(terms []string, counts func(string) (in, all int), n, rest int) (float64, []Term) {
	var score float64
	var top []Term
	for _, t := range terms {
		in, all := counts(t)
		out := float64(all - in)
		w := math.Log((float64(in)+alpha)/(float64(n)+2*alpha)) - math.Log((out+alpha)/(float64(rest)+2*alpha))
		score += w
		if w > 0 {
			top = append(top, Term{t, w})
		}
	}
	return score, topTerms(top)
}

// topTerms sorts terms by weight (then name) and keeps the first 8.
func topTerms(ts []Term) []Term {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Weight != ts[j].Weight {
			return ts[i].Weight > ts[j].Weight
		}
		return ts[i].Term < ts[j].Term
	})
	if len(ts) > 8 {
		ts = ts[:8]
	}
	return ts
}

// Marshal writes the model as gzip-compressed JSON, byte for byte the same
// for the same model (sorted keys, no gzip timestamp).
func (m *Model) Marshal() ([]byte, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("catprior: encode: %w", err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("catprior: compress: %w", err)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("catprior: compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("catprior: compress: %w", err)
	}
	return buf.Bytes(), nil
}

// maxModelBytes bounds a model file read (compressed and expanded).
const maxModelBytes = 64 << 20

// Unmarshal reads a model written by Marshal and checks its shape.
func Unmarshal(b []byte) (*Model, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("catprior: not a gzip model: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catprior: read: %w", err)
	}
	if len(raw) > maxModelBytes {
		return nil, fmt.Errorf("catprior: model larger than %d bytes", maxModelBytes)
	}
	m := &Model{}
	if err := json.Unmarshal(raw, m); err != nil {
		return nil, fmt.Errorf("catprior: decode: %w", err)
	}
	if len(m.Docs) != len(m.Sets) {
		return nil, fmt.Errorf("catprior: %d sets but %d count rows", len(m.Sets), len(m.Docs))
	}
	for i, d := range m.Docs {
		if len(d) != len(Categories)+1 {
			return nil, fmt.Errorf("catprior: set %q has %d label counts, want %d", m.Sets[i], len(d), len(Categories)+1)
		}
	}
	for term, ps := range m.Postings {
		for _, p := range ps {
			if p[0] < 0 || p[0] >= len(m.Sets) || p[1] < 0 || p[1] > healthyColumn || p[2] < 0 {
				return nil, fmt.Errorf("catprior: term %q: bad posting %v", term, p)
			}
		}
	}
	return m, nil
}

// Load reads a model file.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catprior: %w", err)
	}
	return Unmarshal(b)
}

//go:embed model.json.gz
var embedded []byte

var (
	defaultOnce  sync.Once
	defaultModel *Model
	defaultErr   error
)

// Embedded is the model trained on the scenario sets this repository
// ships (their list: Sets), decoded once.
func Embedded() (*Model, error) {
	defaultOnce.Do(func() {
		if len(embedded) == 0 {
			defaultErr = errors.New("catprior: no embedded model")
			return
		}
		defaultModel, defaultErr = Unmarshal(embedded)
	})
	return defaultModel, defaultErr
}

// Open returns the model a setting names: "embedded", "off" (nil), or a
// model file's path; without the named sets.
func Open(setting string, without []string) (*Model, error) {
	var m *Model
	var err error
	switch strings.TrimSpace(setting) {
	case "off", "none", "":
		return nil, nil
	case "embedded":
		m, err = Embedded()
	default:
		m, err = Load(setting)
	}
	if err != nil {
		return nil, err
	}
	return m.Without(without...), nil
}

// DocFreq is how many of the model's incidents (faults and healthy) use
// term: 0 for a term none or too few of them use (Train keeps no term of
// fewer than minDocs incidents). With Incidents, a term's rarity in
// incident evidence at large.
func (m *Model) DocFreq(term string) int {
	n := 0
	for _, p := range m.Postings[term] {
		n += p[2]
	}
	return n
}

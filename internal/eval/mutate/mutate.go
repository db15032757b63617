// Package mutate rewrites a scenario folder consistently, so that the
// evaluation can check that a score depends on the evidence and not on the
// names and numbers of one recording: every namespace, service, workload,
// pod, node, cluster, database and commit name is replaced (the same way in
// the alert, the evidence and the answer), every timestamp is shifted by the
// same offset, and monotonic Prometheus series (counters) are scaled by a
// common factor, which keeps rates, ratios and shapes meaningful.
//
// Vocabulary mutations (Vocab) tell the same incident in words a reader
// may not expect: label keys of another convention (OpenTelemetry's
// k8s_pod_name for pod, status_code for code), metric names of the
// OpenTelemetry exporter, the alert delivered by another sender
// (Alertmanager, Grafana, PagerDuty with labels only in its text), or an
// alert that does not name its namespace. The answer follows wherever a
// keyword is the renamed thing.
package mutate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Options control one mutation. The zero value copies the scenario as it is.
type Options struct {
	// Seed selects the replacement names; the same seed gives the same
	// rewrite. 0 keeps every name.
	Seed uint64
	// Shift moves every timestamp.
	Shift time.Duration
	// CounterScale multiplies the samples of monotonic Prometheus series;
	// 0 keeps them.
	CounterScale float64
	// Vocab tells the same incident in another vocabulary (labels, metric
	// names, alert format, no namespace), after the rewrite above.
	Vocab Vocab
}

// DefaultOptions derives options from a seed.
func DefaultOptions(seed uint64) Options {
	return Options{
		Seed:         seed,
		Shift:        time.Duration(17+seed%23)*24*time.Hour + time.Duration(seed%11)*time.Hour + 7*time.Minute,
		CounterScale: 1 + float64(seed%5+1)/10,
	}
}

// nameKeys are the fields whose values are entity names.
var nameKeys = map[string]bool{
	"name": true, "namespace": true, "node_name": true, "nodename": true, "node": true,
	"pod": true, "pod_name": true, "service": true, "workload_name": true, "deployment": true,
	"kube_namespace": true, "kube_deployment": true, "kube_pod": true, "kube_service": true,
	"cluster": true, "cluster_name": true, "db_instance": true, "db_instance_identifier": true,
	"dbinstanceidentifier": true, "source_identifier": true, "source_id": true, "instance": true,
	"db_cluster": true, "job": true, "app": true, "container": true, "replicaset": true,
	"statefulset": true, "daemonset": true, "host": true, "hostname": true,
	"sha": true, "revision": true, "previous_revision": true,
	"root_cause_entity": true, "acceptable_entities": true,
}

// skipValues are never rewritten: generic words that also appear as names,
// and the platform's own well-known components (like the kube-system
// namespace, the cluster DNS server is named by Kubernetes, not by the
// scenario).
var skipValues = map[string]bool{
	"": true, "default": true, "kube-system": true, "rds": true, "postgres": true, "true": true, "false": true,
	"main": true, "app": true, "api": true, "web": true, "none": true, "null": true, "unknown": true,
	"coredns": true, "kube-dns": true,
}

// Scenario rewrites the scenario folder src into dst (created) and returns
// the name mapping it applied (old -> new).
func Scenario(src, dst string, opt Options) (map[string]string, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mutate: read %s: %w", src, err)
	}
	// A scenario that inherits evidence from a base folder carries the
	// base's files too, so the rewrite stays consistent.
	if base := baseOf(files["scenario.yml"]); base != "" {
		bdir := filepath.Join(filepath.Dir(src), base)
		entries, err := os.ReadDir(bdir)
		if err == nil {
			for _, e := range entries {
				if e.IsDir() || e.Name() == "answer.yml" || e.Name() == "alert.json" || e.Name() == "scenario.yml" {
					continue
				}
				if _, ok := files[e.Name()]; ok {
					continue
				}
				b, err := os.ReadFile(filepath.Join(bdir, e.Name()))
				if err != nil {
					return nil, fmt.Errorf("mutate: %w", err)
				}
				files[e.Name()] = b
			}
		}
	}

	mapping := map[string]string{}
	if opt.Seed != 0 {
		names := map[string]bool{}
		for rel, b := range files {
			collectNames(rel, b, names)
		}
		addShortSHAs(names)
		addHostLabels(names)
		mapping = buildMapping(names, opt.Seed)
	}
	repl := replacer(mapping)

	// out maps each written file (relative to dst) to its content.
	out := map[string]string{}
	for rel, b := range files {
		s := string(b)
		if rel == "scenario.yml" {
			s = stripBase(s)
		}
		s = repl.Replace(s)
		s = shiftTimestamps(s, opt.Shift)
		if filepath.Ext(rel) == ".json" && filepath.Base(rel) != "prometheus.json" {
			s = shiftEpochs(s, opt.Shift)
		}
		if filepath.Base(rel) == "prometheus.json" && (opt.Shift != 0 || opt.CounterScale > 0) {
			b, err := rewritePrometheus([]byte(s), opt)
			if err != nil {
				return nil, fmt.Errorf("mutate: %s: %w", rel, err)
			}
			s = string(b)
		}
		// File names under pod_logs carry pod names too.
		target := filepath.Join(filepath.Dir(rel), repl.Replace(filepath.Base(rel)))
		if dir := filepath.Dir(rel); strings.HasPrefix(rel, "pod_logs") && dir != "pod_logs" {
			target = filepath.Join("pod_logs", repl.Replace(filepath.Base(dir)), repl.Replace(filepath.Base(rel)))
		}
		out[target] = s
	}
	if opt.Vocab.Any() {
		if err := applyVocab(opt.Vocab, out); err != nil {
			return nil, err
		}
	}
	for rel, s := range out {
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, fmt.Errorf("mutate: %w", err)
		}
		if err := os.WriteFile(target, []byte(s), 0o644); err != nil {
			return nil, fmt.Errorf("mutate: %w", err)
		}
	}
	return mapping, nil
}

func baseOf(b []byte) string {
	var m struct {
		Base string `yaml:"base"`
	}
	if yaml.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Base
}

var baseLine = regexp.MustCompile(`(?m)^base:.*\n?`)

func stripBase(s string) string { return baseLine.ReplaceAllString(s, "") }

// collectNames finds entity names in a file: values of name-like keys in
// JSON/YAML, label values in alerts, and pod names from pod_logs paths.
func collectNames(rel string, b []byte, names map[string]bool) {
	if strings.HasPrefix(rel, "pod_logs") {
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) == 3 {
			addName(parts[1], names)
			pod := strings.TrimSuffix(parts[2], ".log")
			pod = strings.TrimSuffix(pod, ".previous")
			addName(strings.SplitN(pod, ".", 2)[0], names)
		}
		return
	}
	var v any
	switch filepath.Ext(rel) {
	case ".json":
		if json.Unmarshal(b, &v) != nil {
			return
		}
		walk(v, "", names)
	case ".yml", ".yaml":
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for {
			var doc any
			if err := dec.Decode(&doc); err != nil {
				break
			}
			walk(doc, "", names)
		}
	}
}

func walk(v any, key string, names map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		// Kubernetes-style {Name: DBInstanceIdentifier, Value: x} dimensions.
		if n, ok := x["Name"].(string); ok {
			if val, ok := x["Value"].(string); ok && nameKeys[strings.ToLower(n)] {
				addName(val, names)
			}
		}
		_, dimension := x["Value"]
		for k, c := range x {
			if dimension && k == "Name" {
				continue // a dimension's key (DBInstanceIdentifier) is not a name
			}
			walk(c, k, names)
		}
	case []any:
		for _, c := range x {
			walk(c, key, names)
		}
	case string:
		lk := strings.ToLower(key)
		if nameKeys[lk] {
			if lk == "root_cause_entity" || lk == "acceptable_entities" {
				// kind/namespace/name: the parts after the kind are names.
				parts := strings.Split(x, "/")
				for _, p := range parts[1:] {
					addName(p, names)
				}
				return
			}
			addName(x, names)
		}
	}
}

var nameShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{2,252}$`)

func addName(s string, names map[string]bool) {
	s = strings.TrimSpace(s)
	if skipValues[strings.ToLower(s)] || !nameShape.MatchString(s) {
		return
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return
	}
	names[s] = true
}

var vocabulary = []string{
	"amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
	"kestrel", "lumen", "maple", "nimbus", "onyx", "pollen", "quartz", "raven", "sierra", "tundra",
	"umber", "vega", "willow", "xenon", "yarrow", "zephyr", "atlas", "beacon", "cedar", "dune",
}

// buildMapping maps each name to a new name of the same shape: words are
// replaced consistently (so a pod name keeps its workload's new name as its
// prefix), hex-like and numeric parts are rewritten consistently too.
func buildMapping(names map[string]bool, seed uint64) map[string]string {
	words := map[string]string{}
	used := map[string]bool{}
	mapWord := func(w string) string {
		lw := strings.ToLower(w)
		if r, ok := words[lw]; ok {
			return r
		}
		if skipValues[lw] {
			return w // a platform name stays itself inside compound names too
		}
		var r string
		switch {
		case isNumber(w):
			r = permuteDigits(w, seed)
		case isHexish(w):
			r = permuteHex(w, seed)
		case len(w) <= 2:
			r = w
		default:
			h := hash(lw, seed)
			for i := 0; ; i++ {
				cand := vocabulary[(h+uint64(i))%uint64(len(vocabulary))]
				if i >= len(vocabulary) {
					cand = fmt.Sprintf("%s%d", cand, i)
				}
				if !used[cand] {
					r = cand
					break
				}
			}
			used[r] = true
		}
		words[lw] = r
		return r
	}
	out := map[string]string{}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		var b strings.Builder
		start := 0
		for i := 0; i <= len(n); i++ {
			if i == len(n) || n[i] == '-' || n[i] == '.' || n[i] == '_' {
				if i > start {
					b.WriteString(mapWord(n[start:i]))
				}
				if i < len(n) {
					b.WriteByte(n[i])
				}
				start = i + 1
			}
		}
		if r := b.String(); r != n {
			out[n] = r
		}
	}
	return out
}

func isNumber(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// isHexish: a generated suffix such as a ReplicaSet hash or a commit SHA.
func isHexish(s string) bool {
	if len(s) < 5 {
		return false
	}
	digits := 0
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z':
		default:
			return false
		}
	}
	return digits > 0
}

func permuteDigits(s string, seed uint64) string {
	b := []byte(s)
	for i := range b {
		if i == 0 && len(b) > 1 {
			continue // keep the leading digit: keeps magnitudes and no leading zero
		}
		b[i] = '0' + byte((uint64(b[i]-'0')+seed%9+1)%10)
	}
	return string(b)
}

func permuteHex(s string, seed uint64) string {
	const alpha = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := []byte(strings.ToLower(s))
	if isHex(string(b)) {
		// A hex id (a commit SHA, an image digest) stays hex.
		const hex = "0123456789abcdef"
		for i, c := range b {
			b[i] = hex[(uint64(strings.IndexByte(hex, c))+seed%13+3)%16]
		}
		return string(b)
	}
	for i, c := range b {
		idx := strings.IndexByte(alpha, c)
		if idx < 0 {
			continue
		}
		if c >= '0' && c <= '9' {
			b[i] = '0' + byte((uint64(c-'0')+seed%7+3)%10)
		} else {
			b[i] = 'a' + byte((uint64(c-'a')+seed%11+5)%26)
		}
	}
	return string(b)
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func hash(s string, seed uint64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, s)
	return h.Sum64()
}

// replacer replaces longer names first and only whole names (not inside a
// longer identifier).
type nameReplacer struct {
	re      *regexp.Regexp
	mapping map[string]string
}

func replacer(mapping map[string]string) *nameReplacer {
	keys := make([]string, 0, len(mapping))
	for k := range mapping {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	if len(keys) == 0 {
		return &nameReplacer{mapping: mapping}
	}
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = regexp.QuoteMeta(k)
	}
	// Boundaries: not preceded or followed by a name character; longer
	// names are tried first, so a pod name wins over its workload's prefix.
	re := regexp.MustCompile(`(?:` + strings.Join(quoted, "|") + `)`)
	return &nameReplacer{re: re, mapping: mapping}
}

// isNameByte: a character that continues a name (a match must not be
// glued to one on either side).
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// Replace rewrites every whole-name occurrence in one left-to-right pass:
// separators between adjacent names ("ns/name", "pod-name") are shared, not
// consumed, and replaced text is never rewritten twice.
func (r *nameReplacer) Replace(s string) string {
	if r.re == nil {
		return s
	}
	var b strings.Builder
	pos := 0
	for pos < len(s) {
		loc := r.re.FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if (start > 0 && isNameByte(s[start-1])) || (end < len(s) && isNameByte(s[end])) || end == start {
			b.WriteString(s[pos : start+1])
			pos = start + 1
			continue
		}
		b.WriteString(s[pos:start])
		b.WriteString(r.mapping[s[start:end]])
		pos = end
	}
	b.WriteString(s[pos:])
	return b.String()
}

// timeKeys name JSON fields that may hold epoch timestamps (Datadog's
// date and last_updated, PagerDuty's, generic webhooks').
var timeKeys = regexp.MustCompile(`(?i)(^|_)(date|time|timestamp|ts|updated|created|started|starts|ends|fired|triggered|at)($|_)|At$|_at$|_ts$`)

// shiftEpochs moves epoch-second and epoch-millisecond numbers under
// time-like keys by d. Files without such numbers are returned unchanged.
func shiftEpochs(s string, d time.Duration) string {
	if d == 0 {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return s
	}
	changed := false
	var walkV func(x any, key string) any
	walkV = func(x any, key string) any {
		switch t := x.(type) {
		case map[string]any:
			for k, c := range t {
				t[k] = walkV(c, k)
			}
		case []any:
			for i, c := range t {
				t[i] = walkV(c, key)
			}
		case json.Number:
			if !timeKeys.MatchString(key) {
				return t
			}
			f, err := t.Float64()
			if err != nil {
				return t
			}
			switch {
			case f >= 1e9 && f < 1e10:
				changed = true
				return json.Number(strconv.FormatFloat(f+d.Seconds(), 'f', -1, 64))
			case f >= 1e12 && f < 1e13:
				changed = true
				return json.Number(strconv.FormatFloat(f+float64(d.Milliseconds()), 'f', -1, 64))
			}
		}
		return x
	}
	v = walkV(v, "")
	if !changed {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

var isoTime = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})\b`)

func shiftTimestamps(s string, d time.Duration) string {
	if d == 0 {
		return s
	}
	return isoTime.ReplaceAllStringFunc(s, func(m string) string {
		norm := strings.Replace(m, " ", "T", 1)
		t, err := time.Parse(time.RFC3339Nano, norm)
		if err != nil {
			return m
		}
		out := t.Add(d)
		layout := time.RFC3339
		if strings.Contains(m, ".") {
			layout = time.RFC3339Nano
		}
		res := out.In(t.Location()).Format(layout)
		if strings.Contains(m, " ") {
			res = strings.Replace(res, "T", " ", 1)
		}
		return res
	})
}

// rewritePrometheus shifts sample times and scales monotonic series.
func rewritePrometheus(b []byte, opt Options) ([]byte, error) {
	var doc struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	secs := opt.Shift.Seconds()
	for i := range doc.Result {
		vals := doc.Result[i].Values
		monotonic := len(vals) > 1
		prev := -1e308
		parsed := make([]float64, len(vals))
		for j, v := range vals {
			t, ok := v[0].(float64)
			if !ok {
				return nil, fmt.Errorf("sample time %v is not a number", v[0])
			}
			vals[j][0] = t + secs
			s, _ := v[1].(string)
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("sample value %q: %w", s, err)
			}
			parsed[j] = f
			if f < prev {
				monotonic = false
			}
			prev = f
		}
		if monotonic && opt.CounterScale > 0 && parsed[len(parsed)-1] > parsed[0] {
			for j := range vals {
				vals[j][1] = strconv.FormatFloat(parsed[j]*opt.CounterScale, 'f', -1, 64)
			}
		}
	}
	return json.Marshal(doc)
}

// shortSHALen is git's default abbreviation of a commit id.
const shortSHALen = 7

// addShortSHAs adds the abbreviation of every full commit id, so texts that
// cite a commit by its short form (answers, reports, messages) are rewritten
// with the same new id (the hex rewrite keeps prefixes).
func addShortSHAs(names map[string]bool) {
	for n := range names {
		if len(n) >= 12 && isHex(strings.ToLower(n)) {
			names[n[:shortSHALen]] = true
		}
	}
}

// addHostLabels adds the compound labels of dotted names (the
// "rate-vendor" of "quotes.rate-vendor.example"), so a text that
// cites a host by that label is rewritten like the host itself.
func addHostLabels(names map[string]bool) {
	for n := range names {
		if !strings.Contains(n, ".") {
			continue
		}
		for _, label := range strings.Split(n, ".") {
			if strings.Contains(label, "-") && len(label) >= 5 {
				addName(label, names)
			}
		}
	}
}

// Restore maps the names a mutation introduced in s back to the original
// ones (mapping is what Scenario returned), so a mutated result can be
// compared with an unmutated one.
func Restore(mapping map[string]string, s string) string {
	if len(mapping) == 0 {
		return s
	}
	inv := make(map[string]string, len(mapping))
	for k, v := range mapping {
		inv[v] = k
	}
	return replacer(inv).Replace(s)
}

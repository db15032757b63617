package mutate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file applies the label and metric vocabulary (vocab.go, metrics.go)
// to the three places a scenario names them: the Prometheus series, the
// alert payload and the answer's keywords.

// decodeJSON decodes keeping numbers as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeJSON writes v indented, without HTML escaping (URLs keep their &).
func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// promSeries returns the metric label maps of a query_range matrix
// document ({"resultType","result"} or the API's {"data":{...}}).
func promSeries(doc any) []map[string]any {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if d, ok := m["data"].(map[string]any); ok {
		m = d
	}
	list, _ := m["result"].([]any)
	var out []map[string]any
	for _, e := range list {
		if s, ok := e.(map[string]any); ok {
			if metric, ok := s["metric"].(map[string]any); ok {
				out = append(out, metric)
			}
		}
	}
	return out
}

// seriesKeys gathers label keys of the series and, for value-tested
// families, whether each metric's values all belong.
func (p *labelPlan) learnSeries(series []map[string]any) {
	for _, m := range series {
		name, _ := m["__name__"].(string)
		for k, v := range m {
			f := familyOf(k)
			if f == nil || f.value == nil {
				continue
			}
			val, _ := v.(string)
			mk := p.metricKeys[name]
			if mk == nil {
				mk = map[string]bool{}
				p.metricKeys[name] = mk
			}
			prev, seen := mk[k]
			mk[k] = f.value(val) && (!seen || prev)
		}
	}
	for _, mk := range p.metricKeys {
		for k, ok := range mk {
			if ok {
				p.usedKeys[k] = true
			}
		}
	}
}

// vocabPlan is a scenario's whole vocabulary rewrite.
type vocabPlan struct {
	labels  *labelPlan
	metrics *nameReplacer
	// metricMap is the metric renaming (old -> new), for series names.
	metricMap map[string]string
}

// planVocab decides the renaming from what the scenario holds.
func planVocab(v Vocab, prom, alert []byte) (*vocabPlan, error) {
	vp := &vocabPlan{labels: newLabelPlan("", nil), metrics: replacer(nil), metricMap: map[string]string{}}
	var series []map[string]any
	if len(prom) > 0 {
		doc, err := decodeJSON(prom)
		if err != nil {
			return nil, fmt.Errorf("prometheus.json: %w", err)
		}
		series = promSeries(doc)
	}
	if v.Labels != "" {
		keys := map[string]bool{}
		for _, m := range series {
			for k := range m {
				keys[k] = true
			}
		}
		if len(alert) > 0 {
			if doc, err := decodeJSON(alert); err == nil {
				alertKeys(doc, keys)
			}
		}
		vp.labels = newLabelPlan(v.Labels, keys)
		vp.labels.learnSeries(series)
	}
	if v.Metrics {
		names := map[string]bool{}
		for _, m := range series {
			if n, ok := m["__name__"].(string); ok {
				names[n] = true
			}
		}
		vp.metricMap = metricRenames(names, string(alert))
		vp.metrics = replacer(vp.metricMap)
	}
	return vp, nil
}

// alertKeys collects the label keys an alert uses: keys of its label and
// annotation maps, Datadog "k:v" tags, and keys written in label syntax in
// its texts.
func alertKeys(v any, keys map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if labelMapKeys[k] {
				if m, ok := c.(map[string]any); ok {
					for lk := range m {
						keys[lk] = true
					}
				}
			}
			if tagKeys[k] {
				for _, t := range tagItems(c) {
					if tk, _, ok := strings.Cut(t, ":"); ok {
						keys[strings.TrimSpace(tk)] = true
					}
				}
			}
			alertKeys(c, keys)
		}
	case []any:
		for _, c := range x {
			alertKeys(c, keys)
		}
	case string:
		for _, m := range reMatcher.FindAllStringSubmatch(x, -1) {
			keys[m[2]] = true
		}
		for _, m := range reBraceTag.FindAllStringSubmatch(x, -1) {
			keys[m[2]] = true
		}
		for _, m := range reGrouping.FindAllStringSubmatch(x, -1) {
			for _, k := range strings.Split(m[3], ",") {
				keys[strings.TrimSpace(k)] = true
			}
		}
	}
}

// labelMapKeys are the alert fields holding label (or label-like
// annotation) maps, in every format the intake reads.
var labelMapKeys = map[string]bool{
	"labels": true, "commonLabels": true, "groupLabels": true, "annotations": true, "commonAnnotations": true,
	"details": true, "custom_details": true, "tags": true,
}

// tagKeys are Datadog fields holding "k:v" lists.
var tagKeys = map[string]bool{"tags": true, "alert_scope": true, "scope": true}

func tagItems(v any) []string {
	switch t := v.(type) {
	case string:
		return strings.Split(t, ",")
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// prometheus rewrites the series of prometheus.json.
func (vp *vocabPlan) prometheus(b []byte) ([]byte, error) {
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	for _, m := range promSeries(doc) {
		name, _ := m["__name__"].(string)
		vp.labels.renameMap(m, name)
		if to, ok := vp.metricMap[name]; ok {
			m["__name__"] = to
		}
	}
	return encodeJSON(doc, false)
}

// alert rewrites an alert payload: label maps, tags, and every text.
func (vp *vocabPlan) alert(b []byte) ([]byte, error) {
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	doc = walkAlert(doc, "", func(key string, m map[string]any) {
		if labelMapKeys[key] {
			vp.labels.renameMap(m, "")
		}
	}, func(key, s string) string {
		if tagKeys[key] {
			s = vp.tags(s)
		}
		return vp.text(s)
	})
	return encodeJSON(doc, true)
}

// walkAlert visits every object (with the key it sits under) and rewrites
// every string (with its key; list items carry their list's key). URL
// query values are unescaped for the rewrite and escaped again.
func walkAlert(v any, key string, onMap func(key string, m map[string]any), onString func(key, s string) string) any {
	switch x := v.(type) {
	case map[string]any:
		onMap(key, x)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x[k] = walkAlert(x[k], k, onMap, onString)
		}
		return x
	case []any:
		for i, c := range x {
			x[i] = walkAlert(c, key, onMap, onString)
		}
		return x
	case string:
		return rewriteMaybeURL(x, func(s string) string { return onString(key, s) })
	}
	return v
}

// rewriteMaybeURL applies f to a URL's query values (unescaped), or to the
// whole string when it is not a URL with a query.
func rewriteMaybeURL(s string, f func(string) string) string {
	if !(strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) || !strings.Contains(s, "?") || strings.ContainsAny(s, " \n") {
		return f(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return f(s)
	}
	q := u.Query()
	changed := false
	for k, vals := range q {
		for i, val := range vals {
			if nv := f(val); nv != val {
				vals[i] = nv
				changed = true
			}
		}
		q[k] = vals
	}
	if !changed {
		return s
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// tags renames the keys of a Datadog "k:v,k2:v2" list item.
func (vp *vocabPlan) tags(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		k, val, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		lead := k[:len(k)-len(strings.TrimLeft(k, " "))]
		if to := vp.labels.key(strings.TrimSpace(k), val, ""); to != "" {
			parts[i] = lead + to + ":" + val
		}
	}
	return strings.Join(parts, ",")
}

var (
	// reMatcher: a label matcher `key="v"`, `key=~"v"`, `key != v`,
	// `key = v` (Grafana's "Labels: - key = value" lists too).
	reMatcher = regexp.MustCompile(`(^|[^A-Za-z0-9_.\-])([A-Za-z_][A-Za-z0-9_]*)(\s*)(=~|!~|!=|=)(\s*)(["'\x60]?)([^"'\x60,{}=\s()\[\]]*)`)
	// reBraceTag: a Datadog scope item `{key:value,...}`.
	reBraceTag = regexp.MustCompile(`([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)(:)([^,}\s]*)`)
	// reGrouping: PromQL `by (a, b)` and friends, Datadog `by {a,b}`.
	reGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)(\s*)[({]([^(){}]*)[)}]`)
)

// text rewrites label keys written in label syntax and metric names.
func (vp *vocabPlan) text(s string) string {
	s = vp.labelText(s)
	return vp.metrics.Replace(s)
}

func (vp *vocabPlan) labelText(s string) string {
	p := vp.labels
	if len(p.rename) == 0 {
		return s
	}
	s = replaceSubmatches(s, reMatcher, func(m []string, start int, full string) string {
		key, op, val := m[2], m[4], m[7]
		if at := start + len(m[1]) + len(m[2]) + len(m[3]) + len(op); op == "=" && at < len(full) && full[at] == '=' {
			return m[0] // `==` is a comparison, not a matcher
		}
		to := p.key(key, val, selectorMetric(full, start))
		if to == "" {
			return m[0]
		}
		return m[1] + to + m[3] + op + m[5] + m[6] + val
	})
	s = replaceSubmatches(s, reBraceTag, func(m []string, _ int, _ string) string {
		if to := p.key(m[2], m[4], ""); to != "" {
			return m[1] + to + m[3] + m[4]
		}
		return m[0]
	})
	s = replaceSubmatches(s, reGrouping, func(m []string, _ int, _ string) string {
		items := strings.Split(m[3], ",")
		changed := false
		for i, it := range items {
			k := strings.TrimSpace(it)
			if to := p.groupKey(k); to != "" {
				items[i] = strings.Replace(it, k, to, 1)
				changed = true
			}
		}
		if !changed {
			return m[0]
		}
		open, closing := "(", ")"
		if strings.HasSuffix(m[0], "}") {
			open, closing = "{", "}"
		}
		return m[1] + m[2] + open + strings.Join(items, ",") + closing
	})
	return s
}

// selectorMetric is the metric name of the selector `name{...}` that
// encloses position i of s, "" when none.
func selectorMetric(s string, i int) string {
	open := strings.LastIndexByte(s[:i+1], '{')
	if open < 0 || strings.IndexByte(s[open:i+1], '}') >= 0 {
		return ""
	}
	j := open
	for j > 0 && (isNameByte(s[j-1]) || s[j-1] == ':') {
		j--
	}
	return s[j:open]
}

// replaceSubmatches replaces every match of re with f(submatches, start
// offset, whole string).
func replaceSubmatches(s string, re *regexp.Regexp, f func(m []string, start int, full string) string) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range idx {
		m := make([]string, len(loc)/2)
		for g := range m {
			if loc[2*g] >= 0 {
				m[g] = s[loc[2*g]:loc[2*g+1]]
			}
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString(f(m, loc[0], s))
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// answer rewrites the keyword lists of answer.yml: a keyword that is a
// renamed label key (spelled as a key, with an underscore: a bare English
// word such as "namespace" or "code" names the concept in the answers, not
// the key), label keys written in label syntax, and metric names.
func (vp *vocabPlan) answer(b []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return b, nil
	}
	changed := false
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !strings.HasSuffix(k.Value, "_keywords") || v.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				continue
			}
			nv := vp.keyword(item.Value)
			if nv != item.Value {
				item.Value = nv
				changed = true
			}
		}
	}
	if !changed {
		return b, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (vp *vocabPlan) keyword(s string) string {
	if to, ok := vp.labels.rename[s]; ok && strings.Contains(s, "_") {
		if f := familyOf(s); f == nil || f.value == nil || vp.labels.usedKeys[s] {
			return to
		}
	}
	return vp.text(s)
}

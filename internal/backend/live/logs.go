package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/backend/logquery"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Logs returns the log searcher of the configured store.
func Logs(l *integrations.Logs) (backend.LogSearcher, error) {
	rt, err := transport(l.Auth, l.TenantID)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	hc := &http.Client{Transport: rt, Timeout: l.Timeout}
	switch l.Type {
	case integrations.LogsLoki:
		return &Loki{URL: strings.TrimRight(l.URL, "/"), Fields: l.Fields, Client: hc}, nil
	default:
		return &Elastic{URL: strings.TrimRight(l.URL, "/"), Index: l.Index, Fields: l.Fields, Client: hc, Vendor: l.Type}, nil
	}
}

// Elastic searches Elasticsearch or OpenSearch with query_string and
// filters, mapping fields per vendor.
type Elastic struct {
	URL    string
	Index  string
	Vendor string
	Fields map[string]string
	Client *http.Client
}

func (e *Elastic) field(name string) string {
	if f := e.Fields[name]; f != "" {
		return f
	}
	return integrations.DefaultFields(e.Vendor)[name]
}

// Query builds the search body (exported for tests and for showing users
// what ran).
func (e *Elastic) Query(q backend.LogQuery) map[string]any {
	var filter []any
	if !q.Start.IsZero() || !q.End.IsZero() {
		r := map[string]any{"format": "strict_date_optional_time"}
		if !q.Start.IsZero() {
			r["gte"] = q.Start.UTC().Format(time.RFC3339Nano)
		}
		if !q.End.IsZero() {
			r["lte"] = q.End.UTC().Format(time.RFC3339Nano)
		}
		filter = append(filter, map[string]any{"range": map[string]any{e.field("timestamp"): r}})
	}
	for name, v := range map[string]string{"namespace": q.Namespace, "service": q.Service} {
		if v != "" {
			filter = append(filter, map[string]any{"term": map[string]any{e.field(name): v}})
		}
	}
	if q.Pod != "" {
		if strings.ContainsAny(q.Pod, "*?") {
			filter = append(filter, map[string]any{"wildcard": map[string]any{e.field("pod"): q.Pod}})
		} else {
			filter = append(filter, map[string]any{"term": map[string]any{e.field("pod"): q.Pod}})
		}
	}
	if len(q.Levels) > 0 {
		var lv []string
		for _, l := range q.Levels {
			lv = append(lv, strings.ToLower(l), strings.ToUpper(l))
		}
		filter = append(filter, map[string]any{"terms": map[string]any{e.field("level"): lv}})
	}
	var must []any
	if strings.TrimSpace(q.Query) != "" {
		must = append(must, map[string]any{"query_string": map[string]any{
			"query": q.Query, "default_field": e.field("message"), "default_operator": "AND", "lenient": true}})
	}
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 200
	}
	return map[string]any{
		"size":  limit,
		"sort":  []any{map[string]any{e.field("timestamp"): map[string]any{"order": "desc"}}},
		"query": map[string]any{"bool": map[string]any{"filter": filter, "must": must}},
	}
}

// SearchLogs implements backend.LogSearcher.
func (e *Elastic) SearchLogs(ctx context.Context, q backend.LogQuery) ([]facts.LogLine, error) {
	body, err := json.Marshal(e.Query(q))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Vendor, err)
	}
	u := e.URL + "/" + url.PathEscape(e.Index) + "/_search"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Vendor, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: search: %w", e.Vendor, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: read response: %w", e.Vendor, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, statusError(e.Vendor+" search", resp.StatusCode, b)
	}
	var out struct {
		Hits struct {
			Hits []struct {
				Index  string         `json:"_index"`
				Source map[string]any `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
		TimedOut bool `json:"timed_out"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: response is not a search result: %w", e.Vendor, err)
	}
	lines := make([]facts.LogLine, 0, len(out.Hits.Hits))
	for _, h := range out.Hits.Hits {
		l := facts.LogLine{
			Namespace: str(lookup(h.Source, e.field("namespace"))),
			Service:   str(lookup(h.Source, e.field("service"))),
			Pod:       str(lookup(h.Source, e.field("pod"))),
			Container: str(lookup(h.Source, e.field("container"))),
			Host:      str(lookup(h.Source, e.field("host"))),
			Level:     strings.ToUpper(str(lookup(h.Source, e.field("level")))),
			Message:   str(lookup(h.Source, e.field("message"))),
			Source:    e.Vendor,
		}
		if t, err := time.Parse(time.RFC3339Nano, str(lookup(h.Source, e.field("timestamp")))); err == nil {
			l.Timestamp = &t
		}
		if l.Level == "" {
			l.Level = levelOf(l.Message)
		}
		lines = append(lines, l)
	}
	sortOldestFirst(lines)
	return lines, nil
}

// lookup reads a dotted field from a document, whether the document nests
// it ({"kubernetes":{"pod":{"name":..}}}) or stores the dotted key flat.
func lookup(doc map[string]any, field string) any {
	if v, ok := doc[field]; ok {
		return v
	}
	parts := strings.Split(field, ".")
	var cur any = doc
	for i := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		// Try the rest of the path as one flat key first.
		if v, ok := m[strings.Join(parts[i:], ".")]; ok {
			return v
		}
		cur = m[parts[i]]
	}
	return cur
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case []any:
		if len(x) > 0 {
			return str(x[0])
		}
		return ""
	default:
		return fmt.Sprint(x)
	}
}

var levelRE = regexp.MustCompile(`(?i)\b(fatal|panic|error|err|warn|warning|info|debug)\b`)

func levelOf(msg string) string {
	m := levelRE.FindString(msg)
	switch strings.ToLower(m) {
	case "fatal", "panic":
		return "FATAL"
	case "error", "err":
		return "ERROR"
	case "warn", "warning":
		return "WARN"
	case "debug":
		return "DEBUG"
	case "info":
		return "INFO"
	}
	return ""
}

func sortOldestFirst(lines []facts.LogLine) {
	sort.SliceStable(lines, func(i, j int) bool {
		a, b := lines[i].Timestamp, lines[j].Timestamp
		if a == nil || b == nil {
			return false
		}
		return a.Before(*b)
	})
}

// Loki searches with LogQL through /loki/api/v1/query_range.
type Loki struct {
	URL    string
	Fields map[string]string
	Client *http.Client
}

func (l *Loki) label(name string) string {
	if f := l.Fields[name]; f != "" {
		return f
	}
	return integrations.DefaultFields(integrations.LogsLoki)[name]
}

// LogQL builds the query: a stream selector from namespace/service/pod and
// case-insensitive line filters for the search terms (the query's
// conjunctive normal form, logquery.LineFilters: one filter per clause, an
// alternation for OR) and levels. A query with no line-filter form is an
// error.
func (l *Loki) LogQL(q backend.LogQuery) (string, error) {
	var sel []string
	if q.Namespace != "" {
		sel = append(sel, fmt.Sprintf(`%s=%q`, l.label("namespace"), q.Namespace))
	}
	if q.Service != "" {
		sel = append(sel, fmt.Sprintf(`%s=%q`, l.label("service"), q.Service))
	}
	if q.Pod != "" {
		if strings.ContainsAny(q.Pod, "*?") {
			re := regexp.QuoteMeta(q.Pod)
			re = strings.ReplaceAll(strings.ReplaceAll(re, `\*`, ".*"), `\?`, ".")
			sel = append(sel, fmt.Sprintf(`%s=~%q`, l.label("pod"), re))
		} else {
			sel = append(sel, fmt.Sprintf(`%s=%q`, l.label("pod"), q.Pod))
		}
	}
	if len(sel) == 0 {
		// Loki needs at least one matcher that is not empty-compatible.
		sel = append(sel, fmt.Sprintf(`%s=~".+"`, l.label("namespace")))
	}
	expr := "{" + strings.Join(sel, ",") + "}"
	parsed, err := logquery.Parse(q.Query)
	if err != nil {
		return "", fmt.Errorf("loki: query %q: %w", q.Query, err)
	}
	filters, err := logquery.LineFilters(parsed)
	if err != nil {
		return "", fmt.Errorf("loki: query %q: %w", q.Query, err)
	}
	for _, f := range filters {
		op := "|~"
		if f.Exclude {
			op = "!~"
		}
		expr += fmt.Sprintf(" %s %q", op, f.Regexp)
	}
	if len(q.Levels) > 0 {
		var alts []string
		for _, lv := range q.Levels {
			alts = append(alts, regexp.QuoteMeta(strings.ToLower(lv)))
		}
		expr += fmt.Sprintf(" |~ %q", `(?i)\b(`+strings.Join(alts, "|")+`)\b`)
	}
	return expr, nil
}

// SearchLogs implements backend.LogSearcher.
func (l *Loki) SearchLogs(ctx context.Context, q backend.LogQuery) ([]facts.LogLine, error) {
	logql, err := l.LogQL(q)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	v.Set("query", logql)
	limit := q.Limit
	if limit <= 0 || limit > 5000 {
		limit = 200
	}
	v.Set("limit", strconv.Itoa(limit))
	v.Set("direction", "backward")
	if !q.Start.IsZero() {
		v.Set("start", strconv.FormatInt(q.Start.UnixNano(), 10))
	}
	if !q.End.IsZero() {
		v.Set("end", strconv.FormatInt(q.End.UnixNano(), 10))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL+"/loki/api/v1/query_range?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("loki: %w", err)
	}
	resp, err := l.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("loki: query: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("loki: read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, statusError("loki query", resp.StatusCode, b)
	}
	var out struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("loki: response is not a query result: %w", err)
	}
	if out.Status != "success" || (out.Data.ResultType != "streams" && out.Data.ResultType != "") {
		return nil, fmt.Errorf("loki: unexpected result (status %q, type %q)", out.Status, out.Data.ResultType)
	}
	var lines []facts.LogLine
	for _, s := range out.Data.Result {
		for _, val := range s.Values {
			ns, err := strconv.ParseInt(val[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("loki: bad timestamp %q", val[0])
			}
			t := time.Unix(0, ns).UTC()
			line := facts.LogLine{Timestamp: &t, Message: val[1], Source: "loki",
				Namespace: s.Stream[l.label("namespace")], Pod: s.Stream[l.label("pod")],
				Service: s.Stream[l.label("service")], Container: s.Stream[l.label("container")], Host: s.Stream[l.label("host")],
				Level: strings.ToUpper(s.Stream[l.label("level")])}
			if line.Level == "" {
				line.Level = levelOf(line.Message)
			}
			lines = append(lines, line)
		}
	}
	sortOldestFirst(lines)
	return lines, nil
}

// Check verifies the log store answers.
func CheckLogs(ctx context.Context, s backend.LogSearcher) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.SearchLogs(ctx, backend.LogQuery{Start: time.Now().Add(-5 * time.Minute), End: time.Now(), Limit: 1})
	return err
}

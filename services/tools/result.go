package tools

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// Call is one validated tool call as a handler sees it.
type Call struct {
	Intent          string
	Params          Params
	Window          Window
	Context         *evidencev1.RouterContext
	SessionID       string
	InvestigationID string
	TriggeredBy     evidencev1.TriggeredBy
}

// Result is what a handler fills; the service turns it into a ToolResult.
type Result struct {
	// Summary starts with one sentence that becomes the pin's claim.
	Summary      string
	Raw          strings.Builder
	Snippets     []string
	EvidenceType evidencev1.EvidenceType
	Domain       evidencev1.Domain
	Severity     evidencev1.Severity
	NoData       bool
	// Pin context the handler knows better than the request.
	Namespace, Service, ResourceName string

	facts   map[string]any
	sources map[string]bool
	putErr  error
}

// Put stores facts under a well-known key (internal/facts).
func (r *Result) Put(key string, v any) {
	md, err := facts.Put(r.facts, key, v)
	r.facts = md
	if err != nil && r.putErr == nil {
		r.putErr = err
	}
}

// Source records an evidence source that returned data ("" is ignored).
func (r *Result) Source(src string) {
	if src == "" {
		return
	}
	if r.sources == nil {
		r.sources = map[string]bool{}
	}
	r.sources[src] = true
}

// Rawf appends a formatted line to the raw output.
func (r *Result) Rawf(format string, args ...any) {
	fmt.Fprintf(&r.Raw, format, args...)
	r.Raw.WriteByte('\n')
}

// Snippet adds an evidence snippet, skipping duplicates.
func (r *Result) Snippet(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	for _, have := range r.Snippets {
		if have == s {
			return
		}
	}
	r.Snippets = append(r.Snippets, s)
}

// Escalate raises the severity to sev when sev is more severe.
func (r *Result) Escalate(sev evidencev1.Severity) {
	if sev == evidencev1.Severity_SEVERITY_UNSPECIFIED {
		return
	}
	if r.Severity == evidencev1.Severity_SEVERITY_UNSPECIFIED || sev < r.Severity {
		r.Severity = sev
	}
}

func (r *Result) sourceList() []string {
	out := make([]string, 0, len(r.sources))
	for s := range r.sources {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func tsOf(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func ptrTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Package history keeps past investigations for audit and post-mortems:
// their records, reports, pins and critic verdicts. A recorder follows the
// lifecycle events on the stream and, when an investigation finishes, saves
// it to a Store: a JetStream KV bucket by default (nothing to install) or
// PostgreSQL (-store=postgres -store.dsn=...), which adds SQL, full-text
// search and scale. The HistoryService lists, searches and opens them over
// gRPC and REST; the war room and the MCP server read it.
package history

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// ErrNotFound is returned by Get for an unknown investigation.
var ErrNotFound = errors.New("history: investigation not found")

// ErrBadQuery marks a query the store cannot run (a bad page token, an empty time range).
var ErrBadQuery = errors.New("history: bad query")

// Page sizes.
const (
	DefaultPageSize = 20
	MaxPageSize     = 200
)

// Investigation is one past investigation as stored: the full response of
// GetInvestigation (summary, record, report, pins, critic verdicts).
type Investigation = historyv1.GetInvestigationResponse

// Query filters and pages a listing. Zero fields do not filter.
type Query struct {
	Text      string
	Service   string
	Namespace string
	Category  investigationv1.RootCauseCategory
	Since     time.Time
	Until     time.Time
	PageSize  int
	// After is the decoded page token: list investigations strictly older
	// than this position (newest first).
	After *Cursor
}

// Cursor is a position in the newest-first order: started_at, then id.
type Cursor struct {
	StartedAt time.Time `json:"t"`
	ID        string    `json:"id"`
}

// Page is one page of a listing.
type Page struct {
	Items []*historyv1.InvestigationSummary
	Next  *Cursor
}

// Store keeps past investigations.
type Store interface {
	// Name is "kv" or "postgres".
	Name() string
	// Save stores inv (idempotent: saving the same id again replaces it).
	// It returns nil only once the write is durable.
	Save(ctx context.Context, inv *Investigation) error
	// Get returns one investigation or ErrNotFound.
	Get(ctx context.Context, id string) (*Investigation, error)
	// List returns one page, newest first.
	List(ctx context.Context, q Query) (Page, error)
	// DeleteFinishedBefore removes investigations that finished before t
	// (the retention setting) and reports how many.
	DeleteFinishedBefore(ctx context.Context, t time.Time) (int, error)
	Close()
}

// EncodeCursor makes an opaque page token.
func EncodeCursor(c *Cursor) string {
	if c == nil {
		return ""
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a page token; "" is the first page.
func DecodeCursor(tok string) (*Cursor, error) {
	if tok == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, fmt.Errorf("%w: page_token is not one this server issued", ErrBadQuery)
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return nil, fmt.Errorf("%w: page_token is not one this server issued", ErrBadQuery)
	}
	return &c, nil
}

// Normalize checks q and fills defaults.
func (q Query) Normalize() (Query, error) {
	switch {
	case q.PageSize < 0:
		return q, fmt.Errorf("%w: page_size must not be negative, got %d", ErrBadQuery, q.PageSize)
	case q.PageSize == 0:
		q.PageSize = DefaultPageSize
	case q.PageSize > MaxPageSize:
		q.PageSize = MaxPageSize
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, fmt.Errorf("%w: until (%s) must be after since (%s)", ErrBadQuery, q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	q.Text = strings.TrimSpace(q.Text)
	if len(q.Text) > 512 {
		return q, fmt.Errorf("%w: query is longer than 512 bytes", ErrBadQuery)
	}
	q.Service = strings.TrimSpace(q.Service)
	q.Namespace = strings.TrimSpace(q.Namespace)
	return q, nil
}

// Summarize derives the list row of an investigation from its record and report.
func Summarize(inv *Investigation) *historyv1.InvestigationSummary {
	rec := inv.GetRecord()
	a := rec.GetAlert()
	d := rec.GetDiagnosis()
	if d == nil {
		d = inv.GetReport().GetDiagnosis()
	}
	title := a.GetTitle()
	if title == "" {
		title = a.GetAlertName()
	}
	return &historyv1.InvestigationSummary{
		InvestigationId: rec.GetInvestigationId(),
		SessionId:       rec.GetSessionId(),
		Title:           title,
		AlertName:       a.GetAlertName(),
		Service:         a.GetService(),
		Namespace:       a.GetNamespace(),
		Category:        d.GetCategory(),
		Status:          d.GetStatus(),
		State:           rec.GetState(),
		RootCause:       d.GetRootCause(),
		Confidence:      d.GetConfidence(),
		StartedAt:       rec.GetStartedAt(),
		FinishedAt:      rec.GetFinishedAt(),
		ToolCalls:       int32(len(rec.GetToolCalls())),
		Pins:            int32(len(inv.GetPins())),
		Loops:           rec.GetLoops(),
		Silent:          inv.GetReport().GetSilent(),
	}
}

// searchText is what full-text search covers: the alert, the diagnosis and the report.
func searchText(inv *Investigation) string {
	rec := inv.GetRecord()
	a := rec.GetAlert()
	d := rec.GetDiagnosis()
	parts := []string{a.GetTitle(), a.GetAlertName(), a.GetSummary(), a.GetDescription(), a.GetErrorMessage(),
		a.GetService(), a.GetNamespace(), a.GetPod(), a.GetResourceName(),
		d.GetRootCause(), d.GetRootCauseEntity(), strings.Join(d.GetCausalChain(), " "), strings.Join(d.GetRemediationSteps(), " "),
		inv.GetReport().GetMarkdown()}
	return strings.Join(parts, "\n")
}

// startedAt is the ordering time of an investigation (finished_at when it never started).
func startedAt(inv *Investigation) time.Time {
	if t := inv.GetRecord().GetStartedAt(); t != nil {
		return t.AsTime()
	}
	return inv.GetRecord().GetFinishedAt().AsTime()
}

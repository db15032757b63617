package live

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rcamesh/rcamesh/internal/backend"

	"github.com/rcamesh/rcamesh/internal/integrations"
)

// Prometheus returns the real Prometheus HTTP API client adapted to
// backend.Metrics (which leaves out the informational notices the server
// may attach), plus the raw client for health checks.
func Prometheus(p *integrations.Prometheus) (backend.Metrics, promv1.API, error) {
	rt, err := transport(p.Auth, "")
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus: %w", err)
	}
	c, err := api.NewClient(api.Config{Address: p.URL, RoundTripper: rt})
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus: %w", err)
	}
	a := promv1.NewAPI(c)
	return metrics{api: a, timeout: p.Timeout}, a, nil
}

// metrics adapts promv1.API to backend.Metrics and bounds each call.
type metrics struct {
	api     promv1.API
	timeout time.Duration
}

func (m metrics) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, m.timeout)
}

func (m metrics) Query(ctx context.Context, q string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, error) {
	ctx, cancel := m.bound(ctx)
	defer cancel()
	v, w, _, err := m.api.Query(ctx, q, ts, opts...)
	return v, w, wrap("query", err)
}

func (m metrics) QueryRange(ctx context.Context, q string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, error) {
	ctx, cancel := m.bound(ctx)
	defer cancel()
	v, w, _, err := m.api.QueryRange(ctx, q, r, opts...)
	return v, w, wrap("query_range", err)
}

func (m metrics) Series(ctx context.Context, matches []string, start, end time.Time, opts ...promv1.Option) ([]model.LabelSet, promv1.Warnings, error) {
	ctx, cancel := m.bound(ctx)
	defer cancel()
	v, w, _, err := m.api.Series(ctx, matches, start, end, opts...)
	return v, w, wrap("series", err)
}

func (m metrics) LabelValues(ctx context.Context, label string, matches []string, start, end time.Time, opts ...promv1.Option) (model.LabelValues, promv1.Warnings, error) {
	ctx, cancel := m.bound(ctx)
	defer cancel()
	v, w, _, err := m.api.LabelValues(ctx, label, matches, start, end, opts...)
	return v, w, wrap("label_values", err)
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("prometheus %s: %w", op, err)
}

// CheckPrometheus verifies the server answers a trivial query.
func CheckPrometheus(ctx context.Context, a promv1.API) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, _, err := a.Query(ctx, "vector(1)", time.Now()); err != nil {
		return fmt.Errorf("prometheus: query failed: %w", err)
	}
	return nil
}

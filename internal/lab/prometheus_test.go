package lab

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/backend/live"
	"github.com/rcamesh/rcamesh/internal/integrations"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

func TestOpenMetrics(t *testing.T) {
	in := `{"resultType":"matrix","result":[{"metric":{"__name__":"req_total","code":"500","svc":"a\"b"},"values":[[1700000000,"1"],[1700000060,"2.5"]]}]}`
	var b bytes.Buffer
	if err := OpenMetrics([]byte(in), &b); err != nil {
		t.Fatal(err)
	}
	want := "# TYPE req_total unknown\nreq_total{code=\"500\",svc=\"a\\\"b\"} 1 1700000000\nreq_total{code=\"500\",svc=\"a\\\"b\"} 2.5 1700000060\n# EOF\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, bad := range []string{`{`, `{"result":[{"metric":{},"values":[]}]}`, `{"result":[{"metric":{"__name__":"x"},"values":[["t","1"]]}]}`} {
		if err := OpenMetrics([]byte(bad), &bytes.Buffer{}); err == nil {
			t.Errorf("want an error for %s", bad)
		}
	}
}

// TestPrometheusParity backfills the demo scenario's series into a real
// Prometheus and checks that PromQL gives the same answers there as on the
// fixture backend.
func TestPrometheusParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	dir := filepath.Join("..", "..", "scenarios", "demo")
	sc, err := scenario.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := StartPrometheus(ctx, sc.Evidence["prometheus"], t.TempDir())
	if err != nil {
		if strings.Contains(err.Error(), ErrMissing.Error()) && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer p.Stop()
	fx, err := fixture.New(sc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	real, _, err := live.Prometheus(&integrations.Prometheus{URL: p.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	end := fx.Clock()
	// Evaluate between samples (they sit on whole minutes): the Prometheus 3
	// engine of the fixture and Debian's 2.x server differ only when a range
	// boundary falls exactly on a sample (closed in 2.x, open in 3.x).
	end = end.Truncate(time.Minute).Add(-30 * time.Second)
	r := promv1.Range{Start: end.Add(-50 * time.Minute), End: end, Step: time.Minute}
	queries := []string{
		`http_requests_total{code="500"}`,
		`sum by (code) (rate(http_requests_total[5m]))`,
		`sum(rate(http_requests_total{code="500"}[5m])) / sum(rate(http_requests_total[5m]))`,
		`max(http_request_duration_seconds_p99)`,
	}
	for _, q := range queries {
		want, _, err := fx.Metrics.QueryRange(ctx, q, r)
		if err != nil {
			t.Fatalf("fixture %s: %v", q, err)
		}
		got, _, err := real.QueryRange(ctx, q, r)
		if err != nil {
			t.Fatalf("prometheus %s: %v", q, err)
		}
		compareMatrix(t, q, want, got)
	}
	names, _, err := real.LabelValues(ctx, "__name__", nil, r.Start, r.End)
	if err != nil || len(names) == 0 {
		t.Fatalf("label discovery: %v %v", names, err)
	}
}

// relTol allows for float formatting differences only.
const relTol = 1e-9

func compareMatrix(t *testing.T, q string, want, got model.Value) {
	t.Helper()
	wm, ok1 := want.(model.Matrix)
	gm, ok2 := got.(model.Matrix)
	if !ok1 || !ok2 {
		t.Fatalf("%s: not matrices: %T %T", q, want, got)
	}
	if len(wm) == 0 || len(wm) != len(gm) {
		t.Fatalf("%s: %d series on the fixture, %d on prometheus", q, len(wm), len(gm))
	}
	index := map[string]*model.SampleStream{}
	for _, s := range gm {
		index[s.Metric.String()] = s
	}
	for _, w := range wm {
		g := index[w.Metric.String()]
		if g == nil {
			t.Fatalf("%s: series %s missing on prometheus", q, w.Metric)
		}
		if len(w.Values) != len(g.Values) {
			t.Fatalf("%s %s: %d points vs %d", q, w.Metric, len(w.Values), len(g.Values))
		}
		for i := range w.Values {
			a, b := float64(w.Values[i].Value), float64(g.Values[i].Value)
			if w.Values[i].Timestamp != g.Values[i].Timestamp || math.Abs(a-b) > relTol*math.Max(1e-9, math.Abs(a)) {
				t.Fatalf("%s %s point %d: fixture %v@%v, prometheus %v@%v", q, w.Metric, i, a, w.Values[i].Timestamp, b, g.Values[i].Timestamp)
			}
		}
	}
}

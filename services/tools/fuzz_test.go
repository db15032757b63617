package tools

import (
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/protocheck"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// FuzzPromQLParams drives the parameters of query_prometheus (the PromQL
// expression, start, end, since, step, range_minutes) through the tools
// service's validation, its time-window and step resolution, and a real
// execution against the demo scenario's recorded series (the fixture
// backend evaluates PromQL with the Prometheus engine). Invariants: errors
// are *ParamError (InvalidArgument) from validation; a resolved window is
// ordered and representable; a step is positive and bounded; ExecuteTool
// never answers Internal or Unknown, and the pin it returns can be stored
// and served (timestamps in range, JSON-able).
func FuzzPromQLParams(f *testing.F) {
	sc, err := scenario.Load("../../scenarios/demo")
	if err != nil {
		f.Fatal(err)
	}
	set, err := fixture.New(sc, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	s := newService(f, set, nil)
	reg, err := DefaultRegistry()
	if err != nil {
		f.Fatal(err)
	}
	tool, _ := reg.Get("query_prometheus")
	def := tool.Def
	rc := &evidencev1.RouterContext{ActiveNamespace: "retail", ActiveService: "orders-api"}

	for _, q := range []string{
		"up",
		`sum by (code) (rate(http_requests_total{service="orders-api"}[5m]))`,
		`sum(rate(http_requests_total{service="orders-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="orders-api"}[5m]))`,
		`histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{service="orders-api"}[5m])))`,
		`container_memory_working_set_bytes{namespace="retail"}`,
		`sum by (namespace, pod) (kube_pod_status_ready{condition="false"})`,
		`rate(x[`, `{`, `1 +`, "",
	} {
		f.Add(q, "", "", "", "", 0.0)
	}
	f.Add("up", "2026-03-09T14:00:00Z", "2026-03-09T15:00:00Z", "", "30s", 0.0)
	f.Add("up", "", "", "2h", "", 0.0)
	f.Add("up", "", "", "", "", 60.0)
	f.Add("up", "99999999999999", "", "", "", 0.0)
	f.Add("up", "", "99999999999999", "", "", 0.0)
	f.Add("up", "0000-01-01T00:00:00Z", "", "", "", 0.0)
	f.Add("up", "", "", "1e300", "1e-300", 0.0)
	f.Add("up", "", "", "365000000d", "0", 1e300)
	f.Add("up", "", "9999-12-31T23:59:59Z", "", "1", math.MaxFloat64)

	f.Fuzz(func(t *testing.T, query, start, end, since, step string, rangeMinutes float64) {
		fields := map[string]*structpb.Value{"query": structpb.NewStringValue(query)}
		for k, v := range map[string]string{"start": start, "end": end, "since": since, "step": step} {
			if v != "" {
				fields[k] = structpb.NewStringValue(v)
			}
		}
		if rangeMinutes != 0 {
			fields["range_minutes"] = structpb.NewNumberValue(rangeMinutes)
		}
		raw := &structpb.Struct{Fields: fields}

		var pe *ParamError
		params, err := validateParams(def, raw, rc)
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("validateParams error %T %v is not a *ParamError", err, err)
			}
		} else {
			now := s.be.Clock()
			w, err := resolveWindow(def.GetIntent(), params, rc, now, s.cfg.DefaultWindow)
			if err != nil {
				if !errors.As(err, &pe) {
					t.Fatalf("resolveWindow error %T %v is not a *ParamError", err, err)
				}
			} else {
				if !w.Start.Before(w.End) {
					t.Fatalf("window %s..%s is not ordered", w.Start, w.End)
				}
				if err := protocheck.Timestamps(w.Proto()); err != nil {
					t.Fatalf("window %s..%s: %v", w.Start, w.End, err)
				}
				c := &Call{Intent: def.GetIntent(), Params: params, Window: w}
				st, err := s.promStep(c)
				switch {
				case err != nil && !errors.As(err, &pe):
					t.Fatalf("promStep error %T %v is not a *ParamError", err, err)
				case err == nil && st <= 0:
					t.Fatalf("step %s for window %s", st, w.Duration())
				case err == nil && step != "" && w.Duration()/st > 11000:
					t.Fatalf("step %s makes %d points over %s", st, w.Duration()/st, w.Duration())
				case err == nil && step == "" && st < s.cfg.PromMinStep && w.Duration() > time.Duration(s.cfg.PromMaxPoints)*s.cfg.PromMinStep:
					t.Fatalf("derived step %s is below the minimum", st)
				}
			}
		}

		if !utf8.ValidString(query + start + end + since + step) {
			return // a protobuf request cannot carry it
		}
		resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{
			SessionId: "fuzz", Intent: def.GetIntent(), Params: raw, Context: rc, SkipPublish: true, NoCache: true,
		})
		if err != nil {
			switch status.Code(err) {
			case codes.Internal, codes.Unknown, codes.DataLoss:
				t.Fatalf("ExecuteTool(%v) = %v", raw.AsMap(), err)
			}
			return
		}
		if err := protocheck.Timestamps(resp); err != nil {
			t.Fatalf("ExecuteTool(%v) pin: %v", raw.AsMap(), err)
		}
		if _, err := protojson.Marshal(resp); err != nil {
			t.Fatalf("ExecuteTool(%v) response is not JSON-able: %v", raw.AsMap(), err)
		}
	})
}

package tools

import (
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

// TestWindowParamsThatOverflow: times and durations a record cannot hold are
// InvalidArgument naming the parameter (they used to make a pin whose window
// no reader could decode, and every ListPins of the session answered 500).
func TestWindowParamsThatOverflow(t *testing.T) {
	ts := newTestSet()
	s := newService(t, ts.set, nil)
	tests := []struct {
		name    string
		params  map[string]any
		ok      bool
		mention string
	}{
		{"epoch start past 9999", map[string]any{"query": "up", "start": "99999999999999"}, false, `"start"`},
		{"epoch end past 9999", map[string]any{"query": "up", "end": "99999999999999"}, false, `"end"`},
		{"year 0", map[string]any{"query": "up", "start": "0000-01-01T00:00:00Z"}, false, `"start"`},
		{"since 1e300 minutes", map[string]any{"query": "up", "since": "1e300"}, false, `"since"`},
		{"since a million years", map[string]any{"query": "up", "since": "365000000d"}, false, `"since"`},
		{"range_minutes 1e300", map[string]any{"query": "up", "range_minutes": 1e300}, false, `"range_minutes"`},
		{"range_minutes max float", map[string]any{"query": "up", "range_minutes": math.MaxFloat64}, false, `"range_minutes"`},
		{"since 200 years reaches before year 1900", map[string]any{"query": "up", "since": "73000d"}, true, ""},
		{"end at the last second of 9999", map[string]any{"query": "up", "end": "9999-12-31T23:59:59Z", "since": "1h"}, true, ""},
		{"ordinary", map[string]any{"query": "up", "since": "30m"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "query_prometheus",
				Params: mustStruct(t, tc.params), Context: incidentCtx(), SkipPublish: true})
			if !tc.ok {
				st, _ := status.FromError(err)
				if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.mention) {
					t.Errorf("err = %v, want InvalidArgument mentioning %s", err, tc.mention)
				}
				return
			}
			if status.Code(err) == codes.InvalidArgument {
				t.Fatalf("refused: %v", err)
			}
			if w := resp.GetPin().GetTimeWindow(); w != nil {
				if err := w.GetStart().CheckValid(); err != nil {
					t.Errorf("pin window start: %v", err)
				}
				if err := w.GetEnd().CheckValid(); err != nil {
					t.Errorf("pin window end: %v", err)
				}
			}
		})
	}
}

func TestDurationOfAndIntSaturate(t *testing.T) {
	tests := []struct {
		n    float64
		unit time.Duration
		ok   bool
	}{
		{1, time.Minute, true},
		{106751, 24 * time.Hour, true},
		{106752, 24 * time.Hour, false},
		{1e300, time.Minute, false},
		{math.Inf(1), time.Minute, false},
		{math.NaN(), time.Minute, false},
	}
	for _, tt := range tests {
		d, err := durationOf(tt.n, tt.unit)
		if (err == nil) != tt.ok || (tt.ok && d <= 0) {
			t.Errorf("durationOf(%g, %s) = %s, %v; want ok=%v", tt.n, tt.unit, d, err, tt.ok)
		}
	}
	p := Params{"big": 1e300, "small": -1e300, "n": 42.9}
	if p.Int("big", 0) != math.MaxInt64 || p.Int("small", 0) != math.MinInt64 || p.Int("n", 0) != 42 || p.Int("absent", 7) != 7 {
		t.Errorf("Int = %d %d %d %d", p.Int("big", 0), p.Int("small", 0), p.Int("n", 0), p.Int("absent", 7))
	}
}

package alertexpr

import "testing"

func TestFind(t *testing.T) {
	tests := []struct {
		name      string
		ann       map[string]string
		texts     map[string]string
		measure   string
		op        string
		threshold float64
		ok        bool
	}{
		{"expr annotation with a threshold", map[string]string{"expr": `sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m])) > 0.05`}, nil,
			`sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`, ">", 0.05, true},
		{"a description that is only the expression", map[string]string{"description": `sum(rate(http_requests_total{service="a",code="401"}[5m]))`}, nil,
			`sum(rate(http_requests_total{code="401",service="a"}[5m]))`, "", 0, true},
		{"threshold on the left", map[string]string{"query": `0.9 < avg(up{job="x"})`}, nil, `avg(up{job="x"})`, ">", 0.9, true},
		{"prose is not an expression", map[string]string{"description": "Error rate above 5% for 10 minutes (see runbook)"}, nil, "", "", 0, false},
		{"a number alone selects nothing", map[string]string{"expr": "1 > 0"}, nil, "", "", 0, false},
		{"a text field", nil, map[string]string{"summary": `rate(queue_depth[5m]) >= 100`}, `rate(queue_depth[5m])`, ">=", 100, true},
		{"bare metric names compared with a number", map[string]string{"description": `node_filesystem_files_free / node_filesystem_files < 0.03`}, nil, `node_filesystem_files_free / node_filesystem_files`, "<", 0.03, true},
		{"a bare word compared is prose", map[string]string{"description": `latency > 2`}, nil, "", "", 0, false},
		{"the rule's generator URL", map[string]string{"generator_url": `http://prometheus.monitoring.svc:9090/graph?g0.expr=delta%28room_requests_total%5B10m%5D%29+%3C+0&g0.tab=1`}, nil, `delta(room_requests_total[10m])`, "<", 0, true},
		{"bare metric names without a comparison", map[string]string{"description": `queue_depth_total`}, nil, "", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := Find(tc.ann, tc.texts)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, e)
			}
			if !ok {
				return
			}
			if e.Measure != tc.measure || e.Op != tc.op || e.Threshold != tc.threshold {
				t.Errorf("got %q %q %v, want %q %q %v", e.Measure, e.Op, e.Threshold, tc.measure, tc.op, tc.threshold)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	e := Expr{Op: ">", Threshold: 0.05}
	if h, ok := e.Holds(0.2); !h || !ok {
		t.Error("0.2 > 0.05 must hold")
	}
	if h, _ := e.Holds(0.01); h {
		t.Error("0.01 > 0.05 must not hold")
	}
	if _, ok := (Expr{}).Holds(1); ok {
		t.Error("no threshold: no judgement")
	}
}

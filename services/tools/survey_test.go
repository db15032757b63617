package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// miniScenario writes a scenario folder with the given evidence files.
func miniScenario(t *testing.T, files map[string]string) *Service {
	t.Helper()
	dir := t.TempDir()
	files["alert.json"] = `{"title":"orders errors","state":"alerting","commonLabels":{"alertname":"OrdersErrors","service":"orders","namespace":"shop"},"commonAnnotations":{}}`
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := scenario.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := fixture.New(sc, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return newService(t, set, nil, func(d *Deps) { d.Brain = &fakeBrain{} })
}

// counterValues is a counter sampled every minute from t=1767434400.
func counterValues(n int, perMin func(i int) float64) string {
	var parts []string
	v := 1000.0
	for i := 0; i < n; i++ {
		v += perMin(i)
		parts = append(parts, fmt.Sprintf(`[%d,"%g"]`, 1767434400+60*i, v))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestSurveyMetricsDiscoversAndRatesCounters(t *testing.T) {
	flat := func(int) float64 { return 60 }
	jump := func(i int) float64 {
		if i >= 30 {
			return 600
		}
		return 6
	}
	prom := `{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"app_requests_total","service":"orders","namespace":"shop","code":"200"},"values":` + counterValues(61, flat) + `},` +
		`{"metric":{"__name__":"app_requests_total","service":"orders","namespace":"shop","code":"503"},"values":` + counterValues(61, jump) + `},` +
		`{"metric":{"__name__":"queue_depth","service":"billing","namespace":"other"},"values":` + counterValues(61, func(int) float64 { return 0 }) + `}]}`
	s := miniScenario(t, map[string]string{"prometheus.json": prom})
	cases := []struct {
		name    string
		params  map[string]any
		want    []string // series names in the result
		noData  bool
		inScope string // the first series must carry this label value
	}{
		{"scoped survey ranks the changed counter first, as a rate", map[string]any{"namespace": "shop", "service": "orders"}, []string{"rate(app_requests_total[5m])", "queue_depth"}, false, "503"},
		{"small catalogue: every series is surveyed", map[string]any{}, []string{"rate(app_requests_total[5m])", "queue_depth"}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "survey_metrics", Params: mustStruct(t, tc.params),
				Context: &evidencev1.RouterContext{TimeWindow: window(1767434400, 1767434400+3600)}})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.GetResult()
			if r.GetNoData() != tc.noData {
				t.Fatalf("no_data = %v: %s", r.GetNoData(), r.GetSummary())
			}
			var ss []facts.Series
			if _, err := facts.Decode(resp.GetPin().GetMetadata(), facts.KeySeries, &ss); err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, x := range ss {
				names[x.Name] = true
			}
			for _, w := range tc.want {
				if !names[w] {
					t.Errorf("missing series %s in %v", w, names)
				}
			}
			if tc.inScope != "" && ss[0].Labels["code"] != tc.inScope {
				t.Errorf("first series = %s %v, want the changed one (code %s)", ss[0].Name, ss[0].Labels, tc.inScope)
			}
		})
	}
}

func TestSearchLogsDropsFiltersTheStoreDoesNotCarry(t *testing.T) {
	logs := `{"hits":[` +
		`{"timestamp":"2026-01-03T10:05:00Z","service":"orders","level":"ERROR","message":"upstream timeout"},` +
		`{"timestamp":"2026-01-03T10:06:00Z","service":"rotator","namespace":"shop","level":"INFO","message":"rotated orders-db password"},` +
		`{"timestamp":"2026-01-03T10:07:00Z","service":"chaos-runner","level":"INFO","message":"experiment started against billing/invoicer"},` +
		`{"timestamp":"2026-01-03T10:08:00Z","service":"ops-announce","level":"INFO","message":"Gala tonight: expect 5x donation traffic"}]}`
	s := miniScenario(t, map[string]string{"logs.json": logs})
	cases := []struct {
		name    string
		params  map[string]any
		want    string
		dropped string
	}{
		{"namespace absent on the hits", map[string]any{"namespace": "shop", "service": "orders", "query": "*"}, "upstream timeout", "namespace shop"},
		{"pod only a host tag", map[string]any{"service": "orders", "pod": "orders-abc", "query": "*"}, "upstream timeout", "pod orders-abc"},
		{"other workloads of the namespace", map[string]any{"namespace": "shop", "service": "orders", "query": "rotated"}, "rotated orders-db password", "service orders"},
		{"lines elsewhere that name the workload", map[string]any{"namespace": "billing", "service": "invoicer", "query": "*"}, "experiment started against billing/invoicer", "lines that name it"},
		{"no namespace: lines that name the workload", map[string]any{"service": "invoicer", "query": "*"}, "experiment started against billing/invoicer", "lines that name it"},
		{"a word of its name, last", map[string]any{"namespace": "give", "service": "donation-intake", "query": "*"}, "Gala tonight: expect 5x donation traffic", "a word of its name"},
		{"a term nothing matched: the scope's errors and warnings", map[string]any{"namespace": "all", "query": "deadlock"}, "upstream timeout", "errors and warnings instead"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.ExecuteTool(t.Context(), &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "search_logs", Params: mustStruct(t, tc.params),
				Context: &evidencev1.RouterContext{TimeWindow: window(1767434400, 1767434400+3600)}})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.GetResult()
			if r.GetNoData() {
				t.Fatalf("no data: %s", r.GetSummary())
			}
			var ls []facts.LogLine
			if _, err := facts.Decode(resp.GetPin().GetMetadata(), facts.KeyLogLines, &ls); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, l := range ls {
				found = found || l.Message == tc.want
			}
			if !found || !strings.Contains(r.GetSummary(), tc.dropped) {
				t.Errorf("lines %v, summary %q: want %q and the dropped filter %q named", ls, r.GetSummary(), tc.want, tc.dropped)
			}
		})
	}
}

func window(start, end int64) *evidencev1.TimeWindow {
	return &evidencev1.TimeWindow{Start: timestamppb.New(time.Unix(start, 0)), End: timestamppb.New(time.Unix(end, 0))}
}

func TestRuntimeLimits(t *testing.T) {
	cases := []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{"jvm flags in an env value", corev1.Container{Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-Xms256m -Xmx512m -XX:+UseG1GC"}, {Name: "DB_PASSWORD", Value: "s3cret"}}}, []string{"-Xms256m", "-Xmx512m"}},
		{"node flag in args", corev1.Container{Args: []string{"node", "--max-old-space-size=384", "server.js"}}, []string{"--max-old-space-size=384"}},
		{"go soft limit", corev1.Container{Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "900MiB"}}}, []string{"GOMEMLIMIT=900MiB"}},
		{"nothing", corev1.Container{Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}}, nil},
	}
	for _, tc := range cases {
		got := runtimeLimits(tc.c)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: runtimeLimits = %v, want %v", tc.name, got, tc.want)
		}
	}
}

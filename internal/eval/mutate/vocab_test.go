package mutate

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVocab(t *testing.T) {
	cases := []struct {
		in      string
		want    Vocab
		wantErr string
	}{
		{in: "", want: Vocab{}},
		{in: "labels", want: Vocab{Labels: LabelsOTel}},
		{in: "labels=alt, metrics", want: Vocab{Labels: LabelsAlt, Metrics: true}},
		{in: "format=pagerduty,nonamespace", want: Vocab{Format: FormatPagerDuty, NoNamespace: true}},
		{in: "labels,metrics,format=grafana,nonamespace", want: Vocab{Labels: LabelsOTel, Metrics: true, Format: FormatGrafana, NoNamespace: true}},
		{in: "labels=prom", wantErr: "want otel or alt"},
		{in: "format=slack", wantErr: "want alertmanager"},
		{in: "metrics=yes", wantErr: "takes no value"},
		{in: "names", wantErr: "unknown vocabulary mutation"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseVocab(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseVocab(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if again, err := ParseVocab(got.String()); err != nil || again != got {
				t.Errorf("String() %q does not parse back: %+v, %v", got.String(), again, err)
			}
			if got.Any() != (tc.want != Vocab{}) {
				t.Errorf("Any() = %v", got.Any())
			}
		})
	}
}

// mutateFiles writes files into a scenario folder, mutates it with v and
// returns the written files.
func mutateFiles(t *testing.T, files map[string]string, v Vocab) map[string]string {
	t.Helper()
	src := t.TempDir()
	for rel, c := range files {
		writeFile(t, src, rel, c)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Scenario(src, dst, Options{Vocab: v}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rel := range files {
		out[rel] = read(t, filepath.Join(dst, rel))
	}
	return out
}

// seriesLabels decodes prometheus.json to "metric{sorted keys}" strings.
func seriesLabels(t *testing.T, s string) []string {
	t.Helper()
	var doc struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatalf("prometheus.json: %v\n%s", err, s)
	}
	var out []string
	for _, r := range doc.Result {
		var keys []string
		for k, v := range r.Metric {
			if k != "__name__" {
				keys = append(keys, k+"="+v)
			}
		}
		sortStrings(keys)
		out = append(out, r.Metric["__name__"]+"{"+strings.Join(keys, ",")+"}")
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func series(metric string, labels ...string) string {
	m := map[string]string{"__name__": metric}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	b, _ := json.Marshal(map[string]any{"metric": m, "values": [][2]any{{1000, "1"}, {1060, "2"}}})
	return string(b)
}

func promDoc(ss ...string) string {
	return `{"resultType":"matrix","result":[` + strings.Join(ss, ",") + `]}`
}

func TestLabelVocabulary(t *testing.T) {
	cases := []struct {
		name  string
		style LabelStyle
		files map[string]string
		// want/notWant: substrings of each output file.
		want, notWant map[string][]string
		// wantSeries: exact series of prometheus.json after the rewrite.
		wantSeries []string
	}{
		{
			name:  "status code family, metric by metric",
			style: LabelsOTel,
			files: map[string]string{
				"prometheus.json": promDoc(
					series("http_requests_total", "code", "500", "service", "cart"),
					series("worker_jobs_total", "code", "200"),
					series("worker_jobs_total", "code", "failed"),
					series("kube_node_status_condition", "status", "true", "node", "n1"),
					series("nginx_ingress_controller_requests", "status", "502"),
					series("envoy_requests_total", "response_code", "503"),
				),
				"alert.json": `{"title":"cart 5xx","commonLabels":{"alertname":"Cart5xx","service":"cart","code":"500"},
					"commonAnnotations":{"expr":"sum by (code) (rate(http_requests_total{code=~\"5..\",service=\"cart\"}[5m])) / sum(rate(worker_jobs_total{code=\"failed\"}[5m])) == 1"}}`,
				"answer.yml": "root_cause_category: code_defect\nrequired_keywords:\n  - code\n  - response_code\n  - http_requests_total{code=\"500\"}\n",
			},
			wantSeries: []string{
				"http_requests_total{http_response_status_code=500,service_name=cart}",
				"worker_jobs_total{code=200}",
				"worker_jobs_total{code=failed}",
				"kube_node_status_condition{k8s_node_name=n1,status=true}",
				"nginx_ingress_controller_requests{http_response_status_code=502}",
				"envoy_requests_total{http_response_status_code=503}",
			},
			want: map[string][]string{
				"alert.json": {`"http_response_status_code": "500"`, `sum by (http_response_status_code)`, `http_response_status_code=~\"5..\",service_name=\"cart\"`,
					`worker_jobs_total{code=\"failed\"}`, `== 1`},
				// "code" is the concept in an answer, not the key; the selector follows.
				"answer.yml": {"- code\n", "- http_response_status_code\n", `http_requests_total{http_response_status_code="500"}`},
			},
			notWant: map[string][]string{"alert.json": {`"code"`, `"service"`}},
		},
		{
			name:  "alternative spellings, Prometheus generator URL and label lists",
			style: LabelsAlt,
			files: map[string]string{
				"prometheus.json": promDoc(series("kube_pod_container_status_restarts_total", "namespace", "shop", "pod", "cart-7d-x", "container", "cart")),
				"alert.json": `{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"CrashLoop","namespace":"shop","pod":"cart-7d-x"},
					"annotations":{"description":"Labels:\n - namespace = shop\n - pod = cart-7d-x"},
					"generatorURL":"http://prom.example:9090/graph?g0.expr=increase%28kube_pod_container_status_restarts_total%7Bnamespace%3D%22shop%22%7D%5B5m%5D%29+%3E+0&g0.tab=1"}]}`,
				"answer.yml": "root_cause_category: resource_exhaustion\nrequired_keywords:\n  - pod\n  - cart-7d-x\n  - kube_pod_container_status_restarts_total{namespace=\"shop\"}\n",
			},
			wantSeries: []string{"kube_pod_container_status_restarts_total{container_name=cart,kubernetes_namespace=shop,pod_name=cart-7d-x}"},
			want: map[string][]string{
				"alert.json": {`"kubernetes_namespace": "shop"`, `"pod_name": "cart-7d-x"`, ` - kubernetes_namespace = shop`, ` - pod_name = cart-7d-x`,
					`kube_pod_container_status_restarts_total%7Bkubernetes_namespace%3D%22shop%22%7D`},
				"answer.yml": {"- pod\n", "- cart-7d-x", `kube_pod_container_status_restarts_total{kubernetes_namespace="shop"}`},
			},
			notWant: map[string][]string{"alert.json": {`"namespace"`, `"pod"`, `%7Bnamespace%3D%22shop`}},
		},
		{
			name:  "Datadog tags, scope and query",
			style: LabelsOTel,
			files: map[string]string{
				"alert.json": `{"title":"[Triggered] checkout latency","alert_type":"error","tags":["env:prod","service:checkout","kube_namespace:shop","pod_name:checkout-1"],
					"alert_scope":"env:prod,service:checkout","alert_query":"avg(last_5m):p99:trace.http.request.duration{service:checkout,env:prod} by {service,kube_namespace} > 1"}`,
				"answer.yml": "root_cause_category: code_defect\n",
			},
			want: map[string][]string{
				"alert.json": {`"service_name:checkout"`, `"k8s_namespace_name:shop"`, `"k8s_pod_name:checkout-1"`, `"env:prod,service_name:checkout"`,
					`{service_name:checkout,env:prod} by {service_name,k8s_namespace_name}`},
			},
			notWant: map[string][]string{"alert.json": {`"service:`, `kube_namespace`}},
		},
		{
			name:  "a renamed key never overwrites one the map already has",
			style: LabelsOTel,
			files: map[string]string{
				"prometheus.json": promDoc(series("up", "pod", "a", "k8s_pod_name", "b")),
				"alert.json":      `{"title":"x","commonLabels":{"alertname":"X"}}`,
			},
			wantSeries: []string{"up{k8s_pod_name=b,pod=a}"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := mutateFiles(t, tc.files, Vocab{Labels: tc.style})
			if tc.wantSeries != nil {
				got := seriesLabels(t, out["prometheus.json"])
				if strings.Join(got, "\n") != strings.Join(tc.wantSeries, "\n") {
					t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantSeries, "\n"))
				}
			}
			for f, subs := range tc.want {
				for _, s := range subs {
					if !strings.Contains(out[f], s) {
						t.Errorf("%s lacks %q:\n%s", f, s, out[f])
					}
				}
			}
			for f, subs := range tc.notWant {
				for _, s := range subs {
					if strings.Contains(out[f], s) {
						t.Errorf("%s still holds %q:\n%s", f, s, out[f])
					}
				}
			}
		})
	}
}

func TestMetricVocabulary(t *testing.T) {
	cases := []struct {
		name          string
		files         map[string]string
		wantSeries    []string
		want, notWant map[string][]string
	}{
		{
			name: "histogram family, text and keywords",
			files: map[string]string{
				"prometheus.json": promDoc(
					series("http_request_duration_seconds_bucket", "le", "0.5"),
					series("http_request_duration_seconds_sum"),
					series("http_request_duration_seconds_count"),
					series("http_requests_total", "code", "200"),
				),
				"alert.json": `{"title":"p99 high","commonLabels":{"alertname":"P99"},"commonAnnotations":{"description":"histogram_quantile(0.99, rate(http_request_duration_seconds_bucket[5m])) > 1; see http_request_duration_seconds"}}`,
				"answer.yml": "root_cause_category: code_defect\nrequired_keywords:\n  - http_request_duration_seconds_bucket\n  - http_requests_total\n",
			},
			wantSeries: []string{
				"http_server_request_duration_seconds_bucket{le=0.5}",
				"http_server_request_duration_seconds_sum{}",
				"http_server_request_duration_seconds_count{}",
				"http_requests_total{code=200}",
			},
			want: map[string][]string{
				"alert.json": {"rate(http_server_request_duration_seconds_bucket[5m])", "see http_server_request_duration_seconds\""},
				"answer.yml": {"- http_server_request_duration_seconds_bucket", "- http_requests_total"},
			},
		},
		{
			name: "OpenTelemetry names go back to Prometheus-client names",
			files: map[string]string{
				"prometheus.json": promDoc(series("k8s_container_restarts", "k8s_pod_name", "a"), series("container_cpu_time_seconds_total")),
				"alert.json":      `{"title":"restarts","commonLabels":{"alertname":"R"},"commonAnnotations":{"expr":"increase(k8s_container_restarts[10m]) > 3"}}`,
			},
			wantSeries: []string{"kube_pod_container_status_restarts_total{k8s_pod_name=a}", "container_cpu_usage_seconds_total{}"},
			want:       map[string][]string{"alert.json": {"increase(kube_pod_container_status_restarts_total[10m])"}},
		},
		{
			name: "both names present: swapped, never merged",
			files: map[string]string{
				"prometheus.json": promDoc(series("go_goroutines", "job", "a"), series("go_goroutine_count", "job", "b")),
				"alert.json":      `{"title":"goroutines","commonLabels":{"alertname":"G"}}`,
			},
			wantSeries: []string{"go_goroutine_count{job=a}", "go_goroutines{job=b}"},
		},
		{
			name: "names inside longer identifiers are not touched",
			files: map[string]string{
				"prometheus.json": promDoc(series("go_goroutines_limit")),
				"alert.json":      `{"title":"x","commonLabels":{"alertname":"X"},"commonAnnotations":{"expr":"my_go_goroutines > go_goroutines_limit"}}`,
			},
			wantSeries: []string{"go_goroutines_limit{}"},
			notWant:    map[string][]string{"alert.json": {"go_goroutine_count"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := mutateFiles(t, tc.files, Vocab{Metrics: true})
			got := seriesLabels(t, out["prometheus.json"])
			if strings.Join(got, "\n") != strings.Join(tc.wantSeries, "\n") {
				t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wantSeries, "\n"))
			}
			for f, subs := range tc.want {
				for _, s := range subs {
					if !strings.Contains(out[f], s) {
						t.Errorf("%s lacks %q:\n%s", f, s, out[f])
					}
				}
			}
			for f, subs := range tc.notWant {
				for _, s := range subs {
					if strings.Contains(out[f], s) {
						t.Errorf("%s holds %q:\n%s", f, s, out[f])
					}
				}
			}
		})
	}
}

// TestMetricPairsAreDistinct guards the table: every name appears once, so
// the rewrite is one-to-one.
func TestMetricPairsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range metricPairs {
		for _, n := range append(p.names(p.prom), p.names(p.otel)...) {
			if seen[n] {
				t.Errorf("%s appears twice in metricPairs", n)
			}
			seen[n] = true
		}
	}
}

// TestLabelFamiliesAreDistinct guards the families: a key belongs to one
// family and each style's target is a member.
func TestLabelFamiliesAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, f := range labelFamilies {
		members := map[string]bool{}
		for _, k := range f.keys {
			if other, ok := seen[k]; ok {
				t.Errorf("%s is in %s and %s", k, other, f.name)
			}
			seen[k] = f.name
			members[k] = true
		}
		if !members[f.otel] || !members[f.alt] {
			t.Errorf("%s: targets %s/%s must be members", f.name, f.otel, f.alt)
		}
	}
}

func TestVocabWithNameRewrite(t *testing.T) {
	// Vocabulary mutations apply after the name rewrite, and a vocabulary
	// run alone keeps every name.
	files := map[string]string{
		"prometheus.json": promDoc(series("http_requests_total", "service", "ledger-api", "code", "500")),
		"alert.json":      `{"title":"ledger-api 5xx","commonLabels":{"alertname":"L","service":"ledger-api"}}`,
		"answer.yml":      "root_cause_category: code_defect\nrequired_keywords:\n  - ledger-api\n",
	}
	alone := mutateFiles(t, files, Vocab{Labels: LabelsOTel})
	if !strings.Contains(alone["alert.json"], `"service_name": "ledger-api"`) {
		t.Errorf("vocabulary alone must keep names:\n%s", alone["alert.json"])
	}
	src := t.TempDir()
	for rel, c := range files {
		writeFile(t, src, rel, c)
	}
	dst := filepath.Join(t.TempDir(), "out")
	opt := DefaultOptions(5)
	opt.Vocab = Vocab{Labels: LabelsOTel}
	mapping, err := Scenario(src, dst, opt)
	if err != nil {
		t.Fatal(err)
	}
	alert := read(t, filepath.Join(dst, "alert.json"))
	if !strings.Contains(alert, `"service_name": "`+mapping["ledger-api"]+`"`) || strings.Contains(alert, "ledger-api") {
		t.Errorf("want the renamed service under the new key:\n%s", alert)
	}
}

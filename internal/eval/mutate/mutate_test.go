package mutate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScenarioRewritesConsistently(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src, "alert.json", `{"commonLabels":{"namespace":"billing","service":"invoice-svc","kube_pod":"invoice-svc-6d4f9b7c8-p2x9q"},"commonAnnotations":{"summary":"invoice-svc-6d4f9b7c8-p2x9q restarted at 2026-02-01T10:00:00Z"}}`)
	writeFile(t, src, "eks_pods.json", `{"pods":[{"name":"invoice-svc-6d4f9b7c8-p2x9q","namespace":"billing","node_name":"ip-10-2-3-44.eu-west-1.compute.internal"}]}`)
	writeFile(t, src, "aws_cloudwatch_metrics.json", `{"metric_data_results":[{"dimensions":[{"Name":"DBInstanceIdentifier","Value":"ledger-db"}],"metric_name":"CPUUtilization"}]}`)
	writeFile(t, src, "answer.yml", "root_cause_category: resource_exhaustion\nroot_cause_entity: pod/billing/invoice-svc-6d4f9b7c8-p2x9q\nrequired_keywords:\n  - invoice-svc-6d4f9b7c8-p2x9q\n  - exit code 137\n")
	writeFile(t, src, "pod_logs/billing/invoice-svc-6d4f9b7c8-p2x9q.previous.log", "2026-02-01T09:59:58Z invoice-svc OOM\n")
	writeFile(t, src, "prometheus.json", `{"resultType":"matrix","result":[{"metric":{"__name__":"http_requests_total","service":"invoice-svc"},"values":[[1000,"10"],[1060,"20"]]},{"metric":{"__name__":"temp","service":"invoice-svc"},"values":[[1000,"5"],[1060,"3"]]}]}`)

	dst := t.TempDir()
	mapping, err := Scenario(src, dst, Options{Seed: 3, Shift: 48 * 3600e9, CounterScale: 2})
	if err != nil {
		t.Fatal(err)
	}
	newPod := mapping["invoice-svc-6d4f9b7c8-p2x9q"]
	if newPod == "" || newPod == "invoice-svc-6d4f9b7c8-p2x9q" {
		t.Fatalf("pod not renamed: %v", mapping)
	}
	if !strings.HasPrefix(newPod, mapping["invoice-svc"]+"-") {
		t.Fatalf("pod %s does not keep its workload's new name %s as prefix", newPod, mapping["invoice-svc"])
	}
	for _, f := range []string{"alert.json", "eks_pods.json", "answer.yml"} {
		s := read(t, filepath.Join(dst, f))
		if strings.Contains(s, "invoice-svc") || strings.Contains(s, "billing") {
			t.Errorf("%s still holds an old name:\n%s", f, s)
		}
		if !strings.Contains(s, newPod) {
			t.Errorf("%s lacks the new pod name %s:\n%s", f, newPod, s)
		}
	}
	ans := read(t, filepath.Join(dst, "answer.yml"))
	if !strings.Contains(ans, "exit code 137") {
		t.Errorf("non-name keywords must stay: %s", ans)
	}
	cw := read(t, filepath.Join(dst, "aws_cloudwatch_metrics.json"))
	if !strings.Contains(cw, "DBInstanceIdentifier") || strings.Contains(cw, "ledger-db") {
		t.Errorf("dimension key must stay and its value change: %s", cw)
	}
	if !strings.Contains(read(t, filepath.Join(dst, "alert.json")), "2026-02-03T10:00:00Z") {
		t.Errorf("timestamps not shifted")
	}
	logs, _ := filepath.Glob(filepath.Join(dst, "pod_logs", "*", "*.previous.log"))
	if len(logs) != 1 || !strings.Contains(logs[0], newPod) {
		t.Fatalf("pod log file not renamed: %v", logs)
	}
	var prom struct {
		Result []struct {
			Values [][2]any `json:"values"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dst, "prometheus.json"))), &prom); err != nil {
		t.Fatal(err)
	}
	if prom.Result[0].Values[1][1] != "40" || prom.Result[0].Values[0][0].(float64) != 1000+48*3600 {
		t.Errorf("counter not scaled/shifted: %v", prom.Result[0].Values)
	}
	if prom.Result[1].Values[1][1] != "3" {
		t.Errorf("a non-monotonic series must keep its values: %v", prom.Result[1].Values)
	}

	// Same seed, same rewrite.
	again, err := Scenario(src, t.TempDir(), Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if again["invoice-svc-6d4f9b7c8-p2x9q"] != newPod {
		t.Errorf("rewrite is not deterministic")
	}
}

func TestShiftEpochs(t *testing.T) {
	in := `{"date": 1773066900, "last_updated": 1773066900123, "id": 1773066900, "event": {"occurred_at_ts": 1773066900}}`
	out := shiftEpochs(in, time.Hour)
	for _, want := range []string{`"date": 1773070500`, `"last_updated": 1773070500123`, `"id": 1773066900`, `"occurred_at_ts": 1773070500`} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in\n%s", want, out)
		}
	}
	if got := shiftEpochs(`{"count": 3}`, time.Hour); got != `{"count": 3}` {
		t.Errorf("unchanged file rewritten: %s", got)
	}
}

func TestShortSHAsFollowTheirCommit(t *testing.T) {
	cases := []struct {
		name, full, short string
	}{
		{"answer cites the abbreviation only", "9c03be1d2f4a5b6c7d8e9f00112233445566778a", "9c03be1"},
		{"another id", "04d7aa19e3c5b7f9a1b3c5d7e9f1a3b5c7d9e1f3", "04d7aa1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			writeFile(t, src, "alert.json", `{"commonLabels":{"service":"ledger-api"}}`)
			writeFile(t, src, "commits.json", `{"commits":[{"sha":"`+tc.full+`","service":"ledger-api","message":"refactor"}]}`)
			writeFile(t, src, "answer.yml", "root_cause_category: code_defect\nruling_out_keywords:\n  - "+tc.short+"\n")
			dst := filepath.Join(t.TempDir(), "out")
			if _, err := Scenario(src, dst, DefaultOptions(7)); err != nil {
				t.Fatal(err)
			}
			commits, answer := read(t, filepath.Join(dst, "commits.json")), read(t, filepath.Join(dst, "answer.yml"))
			if strings.Contains(answer, tc.short) || strings.Contains(commits, tc.full) {
				t.Fatalf("ids not rewritten:\n%s\n%s", commits, answer)
			}
			var doc struct {
				Commits []struct {
					SHA string `json:"sha"`
				} `json:"commits"`
			}
			if err := json.Unmarshal([]byte(commits), &doc); err != nil || len(doc.Commits) != 1 {
				t.Fatalf("commits: %v %s", err, commits)
			}
			if want := doc.Commits[0].SHA[:7]; !strings.Contains(answer, want) {
				t.Errorf("answer should cite %s (the new commit's abbreviation):\n%s", want, answer)
			}
		})
	}
}

func TestHostLabelsFollowTheirHost(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src, "alert.json", `{"commonLabels":{"service":"trip-api"}}`)
	writeFile(t, src, "eks_pods.json", `{"pods":[{"name":"trip-api-0","host":"quotes.rate-vendor.example"}]}`)
	writeFile(t, src, "answer.yml", "root_cause_category: dependency_failure\nrequired_keywords:\n  - rate-vendor\n")
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Scenario(src, dst, DefaultOptions(3)); err != nil {
		t.Fatal(err)
	}
	pods, answer := read(t, filepath.Join(dst, "eks_pods.json")), read(t, filepath.Join(dst, "answer.yml"))
	if strings.Contains(answer, "rate-vendor") || strings.Contains(pods, "rate-vendor") {
		t.Fatalf("host label not rewritten:\n%s\n%s", pods, answer)
	}
	var doc struct {
		Pods []struct {
			Host string `json:"host"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(pods), &doc); err != nil || len(doc.Pods) != 1 {
		t.Fatalf("pods: %v", err)
	}
	label := strings.Split(doc.Pods[0].Host, ".")[1]
	if !strings.Contains(answer, label) {
		t.Errorf("answer should cite %q:\n%s", label, answer)
	}
}

func TestReplaceAdjacentNames(t *testing.T) {
	r := replacer(map[string]string{"shop": "dune", "cart-api": "birch-umber", "cart": "birch", "api": "umber"})
	cases := []struct{ in, want string }{
		{"deployment/shop/cart-api", "deployment/dune/birch-umber"},
		{"shop/cart", "dune/birch"},
		{"shopping cart-apis", "shopping cart-apis"},
		{"cart-api cart api", "birch-umber birch umber"},
	}
	for _, tc := range cases {
		if got := r.Replace(tc.in); got != tc.want {
			t.Errorf("Replace(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

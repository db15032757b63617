package mutate

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/intake"
)

func TestDropNamespace(t *testing.T) {
	cases := []struct {
		name  string
		alert string
		// keep: substrings that must survive (other names, other namespaces).
		keep []string
	}{
		{
			name: "opensre labels and annotations",
			alert: `{"title":"CrashLoopBackOff cart-7d-x","state":"alerting","commonLabels":{"alertname":"CrashLoop","namespace":"shop","service":"cart"},
				"commonAnnotations":{"kube_namespace":"shop","kube_pod":"cart-7d-x","summary":"Pod shop/cart-7d-x restarted in namespace shop"}}`,
			keep: []string{`"kube_pod": "cart-7d-x"`, "Pod cart-7d-x restarted", `"service": "cart"`},
		},
		{
			name: "Alertmanager matchers, label lists, generator URL and in-cluster hosts",
			alert: `{"version":"4","status":"firing","groupKey":"{}:{alertname=\"X\", namespace=\"shop\"}","alerts":[{"status":"firing",
				"labels":{"alertname":"X","namespace":"shop","pod":"cart-7d-x"},
				"annotations":{"description":"Labels:\n - alertname = X\n - namespace = shop\n - pod = cart-7d-x\ncalls to http://pricing.shop.svc.cluster.local:8080 fail","expr":"rate(errors_total{namespace=\"shop\",service=\"cart\"}[5m]) > 0"},
				"generatorURL":"http://prometheus.monitoring.svc:9090/graph?g0.expr=up%7Bnamespace%3D%22shop%22%2Cjob%3D%22cart%22%7D&g0.tab=1"}]}`,
			keep: []string{` - pod = cart-7d-x`, `http://pricing:8080`, `errors_total{service=\"cart\"}`, `prometheus.monitoring.svc`, `job%3D%22cart%22`, `{alertname=\"X\"}`},
		},
		{
			name: "Datadog tags, scope and query",
			alert: `{"title":"[Triggered] cart latency","alert_type":"error","tags":"env:prod,kube_namespace:shop,service:cart",
				"alert_scope":"kube_namespace:shop,service:cart","alert_query":"avg(last_5m):p99:trace.http.request.duration{kube_namespace:shop,service:cart} > 1"}`,
			keep: []string{`"env:prod,service:cart"`, `"service:cart"`, `{service:cart}`},
		},
		{
			name: "PagerDuty structured details and title",
			alert: `{"event":{"event_type":"incident.triggered","data":{"title":"[FIRING:1] CartErrors shop/cart","status":"triggered",
				"body":{"type":"incident_body","details":{"alertname":"CartErrors","namespace":"shop","service":"cart"}}}}}`,
			keep: []string{`CartErrors cart"`, `"service": "cart"`},
		},
		{
			name: "generic top-level fields and dashboard variables",
			alert: `{"alert_name":"CartSlow","title":"cart slow","namespace":"shop","service":"cart","labels":{"ns":"shop"},
				"dashboard":"https://grafana.example/d/abc/cart?var-namespace=shop&var-service=cart","description":"cart in the shop namespace is slow; shopping-cart unaffected"}`,
			keep: []string{`var-service=cart`, `"service": "cart"`, "shopping-cart unaffected", "cart is slow"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := mutateFiles(t, map[string]string{
				"alert.json": tc.alert,
				"logs.json":  `{"hits":[{"namespace":"shop","pod":"cart-7d-x","message":"boom"}]}`,
			}, Vocab{NoNamespace: true})
			alert := out["alert.json"]
			for _, bad := range []string{`"shop"`, "shop/", "namespace=shop", "namespace:shop", `namespace=\"shop\"`, "namespace%3D", "namespace shop", "shop namespace", ".shop.svc", " - namespace"} {
				if strings.Contains(alert, bad) {
					t.Errorf("alert still names the namespace (%s):\n%s", bad, alert)
				}
			}
			for _, k := range tc.keep {
				if !strings.Contains(alert, k) {
					t.Errorf("alert lost %q:\n%s", k, alert)
				}
			}
			if !strings.Contains(out["logs.json"], `"namespace":"shop"`) {
				t.Errorf("evidence must stay untouched: %s", out["logs.json"])
			}
			as, err := intake.Parse([]byte(alert), "")
			if err != nil {
				t.Fatalf("the intake cannot parse the alert any more: %v\n%s", err, alert)
			}
			if as[0].GetNamespace() != "" {
				t.Errorf("intake still finds namespace %q", as[0].GetNamespace())
			}
		})
	}
}

package mutate

import (
	"encoding/json"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/intake"
)

// redeliveryCases are one alert in every format the intake reads, with what
// a re-delivery must carry: the intake's alert name, title and severity,
// and the labels a webhook sender holds (the original labels plus
// alertname and severity; a generic alert's top-level target fields).
var redeliveryCases = []struct {
	name              string
	raw               string
	alertName, title  string
	severity          string
	resolved          bool
	startsAt          string
	labels            map[string]string
	someAnnotationKey string
}{
	{
		name: "opensre",
		raw: `{"title":"[k8s] CrashLoopBackOff cart-7d-x","state":"alerting","alert_source":"datadog",
			"commonLabels":{"alertname":"CrashLoop","severity":"critical","namespace":"shop","service":"cart"},
			"commonAnnotations":{"summary":"cart-7d-x restarted 8 times","kube_pod":"cart-7d-x"}}`,
		alertName: "CrashLoop", title: "[k8s] CrashLoopBackOff cart-7d-x", severity: "critical",
		labels:            map[string]string{"alertname": "CrashLoop", "severity": "critical", "namespace": "shop", "service": "cart"},
		someAnnotationKey: "kube_pod",
	},
	{
		name: "alertmanager",
		raw: `{"version":"4","status":"firing","receiver":"r","groupLabels":{"alertname":"Cart5xx"},"commonLabels":{"alertname":"Cart5xx","cluster":"eu1"},
			"alerts":[{"status":"firing","labels":{"alertname":"Cart5xx","severity":"warning","namespace":"shop","service":"cart","code":"500"},
			"annotations":{"summary":"cart 5xx 12%","description":"sum(rate(http_requests_total{code=~\"5..\"}[5m]))"},
			"startsAt":"2026-03-01T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom.example:9090/graph?g0.expr=up"}]}`,
		alertName: "Cart5xx", title: "cart 5xx 12%", severity: "warning", startsAt: "2026-03-01T10:00:00Z",
		labels:            map[string]string{"alertname": "Cart5xx", "severity": "warning", "namespace": "shop", "service": "cart", "code": "500", "cluster": "eu1"},
		someAnnotationKey: "description",
	},
	{
		name: "grafana resolved",
		raw: `{"receiver":"r","status":"resolved","orgId":1,"version":"1","title":"[RESOLVED] DiskPressure",
			"alerts":[{"status":"resolved","labels":{"alertname":"DiskPressure","node":"n-1","severity":"info"},"annotations":{"summary":"node n-1 disk pressure"},
			"startsAt":"2026-03-01T09:00:00Z","valueString":"[ var='A' labels={node=n-1} value=1 ]"}]}`,
		alertName: "DiskPressure", title: "node n-1 disk pressure", severity: "info", resolved: true, startsAt: "2026-03-01T09:00:00Z",
		labels:            map[string]string{"alertname": "DiskPressure", "node": "n-1", "severity": "info"},
		someAnnotationKey: "summary",
	},
	{
		name: "datadog",
		raw: `{"title":"[Triggered] cart p99 above 1s","alert_id":"7021","alert_type":"error","alert_transition":"Triggered","date":1772359200000,
			"tags":"env:prod,service:cart,kube_namespace:shop","alert_query":"p99:trace.http.request.duration{service:cart} > 1","body":"p99 is 1.9s","hostname":"ip-10-0-0-1"}`,
		alertName: "7021", title: "cart p99 above 1s", severity: "critical", startsAt: "2026-03-01T10:00:00Z",
		labels:            map[string]string{"alertname": "7021", "severity": "critical", "env": "prod", "service": "cart", "kube_namespace": "shop", "host": "ip-10-0-0-1"},
		someAnnotationKey: "alert_query",
	},
	{
		name: "pagerduty with structured details",
		raw: `{"event":{"event_type":"incident.triggered","occurred_at":"2026-03-01T10:05:00Z","data":{"title":"[FIRING:1] CartErrors shop/cart","status":"triggered",
			"urgency":"high","priority":{"summary":"P1"},"created_at":"2026-03-01T10:05:00Z","service":{"summary":"shop-cart"},
			"body":{"type":"incident_body","details":{"alertname":"CartErrors","namespace":"shop","service":"cart"}}}}}`,
		alertName: "CartErrors", title: "[FIRING:1] CartErrors shop/cart", severity: "critical", startsAt: "2026-03-01T10:05:00Z",
		labels: map[string]string{"alertname": "CartErrors", "severity": "critical", "namespace": "shop", "service": "cart"},
	},
	{
		name: "generic",
		raw: `{"alert_name":"CartSlow","title":"cart p95 2.3s","severity":"warning","state":"firing","starts_at":"2026-03-01T10:00:00Z",
			"namespace":"shop","service":"cart","cluster":"eu1","labels":{"team":"checkout"},"summary":"cart is slow","description":"p95 2.3s"}`,
		alertName: "CartSlow", title: "cart p95 2.3s", severity: "warning", startsAt: "2026-03-01T10:00:00Z",
		labels: map[string]string{"alertname": "CartSlow", "severity": "warning", "team": "checkout", "namespace": "shop", "service": "cart", "cluster": "eu1"},
	},
}

func parseOne(t *testing.T, raw []byte) *investigationv1.Alert {
	t.Helper()
	as, err := intake.Parse(raw, "")
	if err != nil || len(as) != 1 {
		t.Fatalf("intake.Parse: %v (%d alerts)\n%s", err, len(as), raw)
	}
	return as[0]
}

func detect(t *testing.T, raw []byte) string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	f, err := intake.Detect(obj)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func startsAt(a *investigationv1.Alert) string {
	if a.GetStartsAt() == nil {
		return ""
	}
	return a.GetStartsAt().AsTime().UTC().Format(time.RFC3339)
}

func TestRedeliverWebhooks(t *testing.T) {
	for _, tc := range redeliveryCases {
		orig := parseOne(t, []byte(tc.raw))
		if orig.GetAlertName() != tc.alertName || orig.GetSeverity() != tc.severity {
			t.Fatalf("%s: case is wrong: the intake reads %q/%q", tc.name, orig.GetAlertName(), orig.GetSeverity())
		}
		for _, format := range []string{FormatAlertmanager, FormatGrafana} {
			t.Run(tc.name+" as "+format, func(t *testing.T) {
				out, err := Redeliver([]byte(tc.raw), format)
				if err != nil {
					t.Fatal(err)
				}
				if got := detect(t, out); got != format {
					t.Fatalf("the intake detects %s, want %s:\n%s", got, format, out)
				}
				a := parseOne(t, out)
				if a.GetAlertName() != tc.alertName || a.GetTitle() != tc.title || a.GetSeverity() != tc.severity || a.GetResolved() != tc.resolved {
					t.Errorf("name/title/severity/resolved = %q/%q/%q/%v, want %q/%q/%q/%v", a.GetAlertName(), a.GetTitle(), a.GetSeverity(), a.GetResolved(),
						tc.alertName, tc.title, tc.severity, tc.resolved)
				}
				if startsAt(a) != tc.startsAt {
					t.Errorf("startsAt = %q, want %q", startsAt(a), tc.startsAt)
				}
				if !maps.Equal(a.GetLabels(), tc.labels) {
					t.Errorf("labels = %v, want %v", a.GetLabels(), tc.labels)
				}
				if tc.someAnnotationKey != "" && a.GetAnnotations()[tc.someAnnotationKey] != orig.GetAnnotations()[tc.someAnnotationKey] {
					t.Errorf("annotation %s = %q, want %q", tc.someAnnotationKey, a.GetAnnotations()[tc.someAnnotationKey], orig.GetAnnotations()[tc.someAnnotationKey])
				}
				if a.GetSummary() != orig.GetSummary() || a.GetDescription() != orig.GetDescription() {
					t.Errorf("summary/description = %q/%q, want %q/%q", a.GetSummary(), a.GetDescription(), orig.GetSummary(), orig.GetDescription())
				}
				if a.GetNamespace() != orig.GetNamespace() || a.GetService() != orig.GetService() {
					t.Errorf("namespace/service = %q/%q, want %q/%q", a.GetNamespace(), a.GetService(), orig.GetNamespace(), orig.GetService())
				}
			})
		}
	}
}

// TestRedeliverPagerDuty checks the PagerDuty re-delivery: a v3 webhook the
// intake detects, the title and severity kept, no structured label
// anywhere, every label and annotation in the body text. It logs what the
// intake recovers from that text (labels it cannot recover are a finding
// for the intake, not a failure of the mutation).
func TestRedeliverPagerDuty(t *testing.T) {
	for _, tc := range redeliveryCases {
		t.Run(tc.name, func(t *testing.T) {
			orig := parseOne(t, []byte(tc.raw))
			out, err := Redeliver([]byte(tc.raw), FormatPagerDuty)
			if err != nil {
				t.Fatal(err)
			}
			if got := detect(t, out); got != intake.SourcePagerDuty {
				t.Fatalf("the intake detects %s:\n%s", got, out)
			}
			for _, structured := range []string{`"labels"`, `"custom_details"`, `"annotations"`, `"service"`} {
				if strings.Contains(string(out), structured) {
					t.Errorf("payload carries %s: labels must be in the text only\n%s", structured, out)
				}
			}
			var doc struct {
				Event struct {
					EventType string `json:"event_type"`
					Data      struct {
						Body struct {
							Details any `json:"details"`
						} `json:"body"`
					} `json:"data"`
				} `json:"event"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			text, ok := doc.Event.Data.Body.Details.(string)
			if !ok {
				t.Fatalf("details must be text, got %T", doc.Event.Data.Body.Details)
			}
			for k, v := range tc.labels {
				if !strings.Contains(text, "\n - "+k+" = "+v+"\n") {
					t.Errorf("details text lacks label %s = %s:\n%s", k, v, text)
				}
			}
			if tc.someAnnotationKey != "" && !strings.Contains(text, " - "+tc.someAnnotationKey+" = ") {
				t.Errorf("details text lacks annotation %s:\n%s", tc.someAnnotationKey, text)
			}
			if want := map[bool]string{false: "incident.triggered", true: "incident.resolved"}[tc.resolved]; doc.Event.EventType != want {
				t.Errorf("event_type = %s, want %s", doc.Event.EventType, want)
			}
			a := parseOne(t, out)
			if a.GetTitle() != orig.GetTitle() || a.GetSeverity() != tc.severity || a.GetResolved() != tc.resolved || startsAt(a) != tc.startsAt {
				t.Errorf("title/severity/resolved/start = %q/%q/%v/%q, want %q/%q/%v/%q", a.GetTitle(), a.GetSeverity(), a.GetResolved(), startsAt(a),
					orig.GetTitle(), tc.severity, tc.resolved, tc.startsAt)
			}
			// The forwarded text is kept whole (as the details annotation);
			// its labels become labels again.
			if a.GetAnnotations()["details"] != strings.TrimSpace(text) && a.GetDescription() != strings.TrimSpace(text) {
				t.Errorf("the intake must keep the details text")
			}
			// What the intake makes of the text (logged, see the report).
			var lost []string
			for _, k := range sortedKeys(tc.labels) {
				v := tc.labels[k]
				if a.GetLabels()[k] != v && !hasValue(a.GetAnnotations(), v) && a.GetAlertName() != v && a.GetSeverity() != v {
					lost = append(lost, k+"="+v)
				}
			}
			sort.Strings(lost)
			if len(lost) > 0 {
				t.Errorf("labels of the forwarded text not recovered: %v", lost)
			}
			t.Logf("intake from PagerDuty text: name %q (was %q), namespace %q, service %q, pod %q; labels not recovered: %v",
				a.GetAlertName(), orig.GetAlertName(), a.GetNamespace(), a.GetService(), a.GetPod(), lost)
		})
	}
}

func TestRedeliverErrors(t *testing.T) {
	cases := []struct{ name, raw, format, want string }{
		{"unknown format", `{"title":"x","commonLabels":{"alertname":"X"}}`, "slack", "unknown format"},
		{"unparsable alert", `{"foo":1}`, FormatAlertmanager, "cannot parse"},
		{"not JSON", `nope`, FormatGrafana, "cannot parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Redeliver([]byte(tc.raw), tc.format); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRedeliverManyAlerts(t *testing.T) {
	raw := `{"version":"4","status":"firing","commonLabels":{"alertname":"PodDown","namespace":"shop"},"alerts":[
		{"status":"firing","labels":{"alertname":"PodDown","namespace":"shop","pod":"a-1","severity":"critical"},"startsAt":"2026-03-01T10:00:00Z"},
		{"status":"firing","labels":{"alertname":"PodDown","namespace":"shop","pod":"a-2","severity":"critical"},"startsAt":"2026-03-01T10:01:00Z"}]}`
	for _, format := range []string{FormatAlertmanager, FormatGrafana} {
		out, err := Redeliver([]byte(raw), format)
		if err != nil {
			t.Fatal(err)
		}
		as, err := intake.Parse(out, "")
		if err != nil || len(as) != 2 || as[0].GetPod() != "a-1" || as[1].GetPod() != "a-2" {
			t.Fatalf("%s: %v %d alerts\n%s", format, err, len(as), out)
		}
		var doc struct {
			CommonLabels map[string]string `json:"commonLabels"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || doc.CommonLabels["pod"] != "" || doc.CommonLabels["namespace"] != "shop" {
			t.Errorf("%s: commonLabels = %v", format, doc.CommonLabels)
		}
	}
	out, err := Redeliver([]byte(raw), FormatPagerDuty)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "pod = a-1") || !strings.Contains(string(out), "pod = a-2") || !strings.Contains(string(out), "[FIRING:2]") {
		t.Errorf("one incident must list both alerts:\n%s", out)
	}
}

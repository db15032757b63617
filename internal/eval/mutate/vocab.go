package mutate

import (
	"fmt"
	"sort"
	"strings"
)

// Vocab selects the vocabulary mutations (issue 14): the same incident told
// with another label vocabulary, other metric names, another alert format,
// or without its namespace. Each can be applied alone or on top of the
// name/time/magnitude rewrite; the zero value changes nothing.
type Vocab struct {
	// Labels renames label keys to an equivalent vocabulary (LabelsOTel or
	// LabelsAlt) in the Prometheus series, the alert and the answer's
	// keywords; "" leaves them.
	Labels LabelStyle
	// Metrics renames metric names between their Prometheus-client and
	// OpenTelemetry names (metricPairs) in the series, the alert and the
	// answer's keywords.
	Metrics bool
	// Format re-delivers the alert in another payload format
	// (FormatAlertmanager, FormatGrafana, FormatPagerDuty); "" keeps it.
	Format string
	// NoNamespace drops the namespace from the alert (every namespace-like
	// key, and the namespace parts of its texts); the evidence is kept.
	NoNamespace bool
}

// LabelStyle names the vocabulary label keys are renamed to.
type LabelStyle string

// Label styles.
const (
	// LabelsOTel renames to the OpenTelemetry semantic-convention names as
	// the Prometheus exporter writes them (k8s_pod_name,
	// http_response_status_code, ...).
	LabelsOTel LabelStyle = "otel"
	// LabelsAlt renames to another spelling in real use (pod_name of old
	// cAdvisor, kubernetes_namespace of the old Prometheus example
	// configuration, status_code, ...).
	LabelsAlt LabelStyle = "alt"
)

// Alert formats a scenario's alert can be re-delivered in.
const (
	FormatAlertmanager = "alertmanager"
	FormatGrafana      = "grafana"
	FormatPagerDuty    = "pagerduty"
)

// Any reports whether v changes anything.
func (v Vocab) Any() bool {
	return v.Labels != "" || v.Metrics || v.Format != "" || v.NoNamespace
}

// String is the canonical flag text of v (ParseVocab reads it back).
func (v Vocab) String() string {
	var parts []string
	if v.Labels != "" {
		parts = append(parts, "labels="+string(v.Labels))
	}
	if v.Metrics {
		parts = append(parts, "metrics")
	}
	if v.Format != "" {
		parts = append(parts, "format="+v.Format)
	}
	if v.NoNamespace {
		parts = append(parts, "nonamespace")
	}
	return strings.Join(parts, ",")
}

// VocabHelp describes ParseVocab's syntax (for flag help).
const VocabHelp = "comma list of vocabulary mutations: " +
	"labels[=otel|alt] (rename label keys to OpenTelemetry or alternative names in series, alert and answer keywords; default otel), " +
	"metrics (rename metrics between Prometheus-client and OpenTelemetry names), " +
	"format=alertmanager|grafana|pagerduty (re-deliver the alert in that format; pagerduty carries the labels only in its body text), " +
	"nonamespace (drop the namespace from the alert, keep the evidence)"

// ParseVocab reads a comma list such as "labels,metrics,format=pagerduty,nonamespace".
func ParseVocab(s string) (Vocab, error) {
	var v Vocab
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, hasVal := strings.Cut(item, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.ToLower(strings.TrimSpace(val))
		switch key {
		case "labels":
			switch LabelStyle(val) {
			case "", LabelsOTel:
				v.Labels = LabelsOTel
			case LabelsAlt:
				v.Labels = LabelsAlt
			default:
				return Vocab{}, fmt.Errorf("mutate: labels=%q: want otel or alt", val)
			}
		case "metrics", "nonamespace":
			if hasVal {
				return Vocab{}, fmt.Errorf("mutate: %s takes no value (got %q)", key, item)
			}
			if key == "metrics" {
				v.Metrics = true
			} else {
				v.NoNamespace = true
			}
		case "format":
			switch val {
			case FormatAlertmanager, FormatGrafana, FormatPagerDuty:
				v.Format = val
			default:
				return Vocab{}, fmt.Errorf("mutate: format=%q: want %s, %s or %s", val, FormatAlertmanager, FormatGrafana, FormatPagerDuty)
			}
		default:
			return Vocab{}, fmt.Errorf("mutate: unknown vocabulary mutation %q (want labels, metrics, format=..., nonamespace)", item)
		}
	}
	return v, nil
}

// labelFamily is one set of label keys that name the same thing.
type labelFamily struct {
	name string
	// keys are every spelling recognised as a member (the first is the
	// Prometheus-client / kube-state-metrics one).
	keys []string
	// otel and alt are the keys renamed to under each style.
	otel, alt string
	// value, when set, must hold for a value for the key to be a member
	// (`status` is an HTTP status in nginx_ingress_controller_requests but
	// a condition status in kube_node_status_condition).
	value func(string) bool
}

// labelFamilies are the label keys that are truly interchangeable: one row
// per measured thing, every spelling a real exporter or convention uses.
// Keys whose meaning differs (app, job, instance, exported_*, grpc_code)
// are deliberately absent.
var labelFamilies = []labelFamily{
	// HTTP response status: client_golang/promhttp `code`, nginx-ingress
	// `status`, Micrometer/Spring `status`, OpenTelemetry
	// http.response.status_code (older semconv http.status_code).
	{name: "http status code", keys: []string{"code", "status", "status_code", "response_code", "http_status_code", "http_response_status_code"},
		otel: "http_response_status_code", alt: "status_code", value: isHTTPStatus},
	// HTTP method: promhttp `method`, OpenTelemetry http.request.method
	// (older semconv http.method).
	{name: "http method", keys: []string{"method", "http_method", "http_request_method"},
		otel: "http_request_method", alt: "http_method", value: isHTTPMethod},
	// HTTP route template: `route` of most client libraries, OpenTelemetry http.route.
	{name: "http route", keys: []string{"route", "http_route"}, otel: "http_route", alt: "http_route"},
	// Namespace: kube-state-metrics/cAdvisor `namespace`, the old Prometheus
	// example relabelling `kubernetes_namespace`, Datadog `kube_namespace`,
	// OpenTelemetry k8s.namespace.name.
	{name: "namespace", keys: []string{"namespace", "kubernetes_namespace", "kube_namespace", "k8s_namespace", "k8s_namespace_name"},
		otel: "k8s_namespace_name", alt: "kubernetes_namespace"},
	// Pod: `pod` (cAdvisor since Kubernetes 1.16), `pod_name` (cAdvisor
	// before, Datadog), `kubernetes_pod_name` (old example relabelling),
	// `kube_pod`, OpenTelemetry k8s.pod.name.
	{name: "pod", keys: []string{"pod", "pod_name", "kubernetes_pod_name", "kube_pod", "k8s_pod_name"},
		otel: "k8s_pod_name", alt: "pod_name"},
	// Container: `container` (cAdvisor since 1.16), `container_name`
	// (before), Datadog `kube_container_name`, OpenTelemetry k8s.container.name.
	{name: "container", keys: []string{"container", "container_name", "kube_container_name", "k8s_container_name"},
		otel: "k8s_container_name", alt: "container_name"},
	// Node: kube-state-metrics `node`, old relabelling `kubernetes_node`,
	// Datadog `kube_node`, OpenTelemetry k8s.node.name.
	{name: "node", keys: []string{"node", "kubernetes_node", "kube_node", "k8s_node_name"},
		otel: "k8s_node_name", alt: "kubernetes_node"},
	// Service: the scrape target's `service`, the old example relabelling
	// `kubernetes_name` (from __meta_kubernetes_service_name), OpenTelemetry
	// service.name.
	{name: "service", keys: []string{"service", "kubernetes_name", "service_name"},
		otel: "service_name", alt: "kubernetes_name"},
	// Deployment: kube-state-metrics `deployment`, Datadog
	// `kube_deployment`, OpenTelemetry k8s.deployment.name.
	{name: "deployment", keys: []string{"deployment", "kube_deployment", "k8s_deployment_name"},
		otel: "k8s_deployment_name", alt: "kube_deployment"},
	// Cluster: external label `cluster`, `cluster_name`, Datadog
	// `kube_cluster_name`, OpenTelemetry k8s.cluster.name.
	{name: "cluster", keys: []string{"cluster", "cluster_name", "kube_cluster_name", "k8s_cluster_name"},
		otel: "k8s_cluster_name", alt: "cluster_name"},
}

func isHTTPStatus(v string) bool {
	v = strings.ToLower(strings.Trim(v, `"'`))
	if len(v) != 3 || v[0] < '1' || v[0] > '5' {
		return false
	}
	rest := v[1:]
	return rest == "xx" || rest[0] >= '0' && rest[0] <= '9' && rest[1] >= '0' && rest[1] <= '9'
}

var httpMethods = map[string]bool{"get": true, "head": true, "post": true, "put": true, "delete": true, "patch": true, "options": true, "connect": true, "trace": true}

func isHTTPMethod(v string) bool { return httpMethods[strings.ToLower(strings.Trim(v, `"'`))] }

// familyOf is the family a key belongs to, nil when none.
func familyOf(key string) *labelFamily {
	for i := range labelFamilies {
		for _, k := range labelFamilies[i].keys {
			if k == key {
				return &labelFamilies[i]
			}
		}
	}
	return nil
}

// labelPlan is one scenario's label-key renaming.
type labelPlan struct {
	rename map[string]string
	// metricKeys[metric][key] says whether key is renamed in metric's
	// series, for keys whose family tests values: a metric renames such a
	// key only when every value it has is a member (worker_jobs_total's
	// code="failed" keeps its `code`).
	metricKeys map[string]map[string]bool
	// usedKeys are the value-tested keys renamed in at least one metric.
	usedKeys map[string]bool
}

// newLabelPlan chooses the new key of every family member in keys.
func newLabelPlan(style LabelStyle, keys map[string]bool) *labelPlan {
	p := &labelPlan{rename: map[string]string{}, metricKeys: map[string]map[string]bool{}, usedKeys: map[string]bool{}}
	if style == "" {
		return p
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		f := familyOf(k)
		if f == nil {
			continue
		}
		to := f.otel
		if style == LabelsAlt {
			to = f.alt
		}
		if to == k {
			to = f.keys[0]
		}
		if to != k {
			p.rename[k] = to
		}
	}
	return p
}

// key is the new name of key for value (in metric, when known), "" to keep it.
func (p *labelPlan) key(key, value, metric string) string {
	to, ok := p.rename[key]
	if !ok {
		return ""
	}
	f := familyOf(key)
	if f == nil || f.value == nil {
		return to
	}
	if m, known := p.metricKeys[metric]; known && metric != "" {
		if renamed, has := m[key]; has {
			if renamed {
				return to
			}
			return ""
		}
	}
	if value != "" && f.value(value) {
		return to
	}
	return ""
}

// groupKey is the new name of key in a grouping clause (by, without, on,
// ignoring, group_left), where no value says what it holds.
func (p *labelPlan) groupKey(key string) string {
	to, ok := p.rename[key]
	if !ok {
		return ""
	}
	if f := familyOf(key); f != nil && f.value != nil && !p.usedKeys[key] {
		return ""
	}
	return to
}

// renameMap renames the keys of one label map, never onto a key the map
// already holds.
func (p *labelPlan) renameMap(m map[string]any, metric string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val, _ := m[k].(string)
		to := p.key(k, val, metric)
		if to == "" {
			continue
		}
		if _, taken := m[to]; taken {
			continue
		}
		m[to] = m[k]
		delete(m, k)
	}
}

// applyVocab rewrites the scenario's files (relative path -> content) in
// place: labels and metric names in the series, the alert and the answer,
// then the namespace of the alert, then the alert's format.
func applyVocab(v Vocab, files map[string]string) error {
	const promFile, alertFile, answerFile = "prometheus.json", "alert.json", "answer.yml"
	if v.Labels != "" || v.Metrics {
		vp, err := planVocab(v, []byte(files[promFile]), []byte(files[alertFile]))
		if err != nil {
			return fmt.Errorf("mutate: %w", err)
		}
		if s, ok := files[promFile]; ok && strings.TrimSpace(s) != "" {
			b, err := vp.prometheus([]byte(s))
			if err != nil {
				return fmt.Errorf("mutate: %s: %w", promFile, err)
			}
			files[promFile] = string(b)
		}
		if s, ok := files[alertFile]; ok {
			b, err := vp.alert([]byte(s))
			if err != nil {
				return fmt.Errorf("mutate: %s: %w", alertFile, err)
			}
			files[alertFile] = string(b)
		}
		if s, ok := files[answerFile]; ok {
			b, err := vp.answer([]byte(s))
			if err != nil {
				return fmt.Errorf("mutate: %s: %w", answerFile, err)
			}
			files[answerFile] = string(b)
		}
	}
	if v.NoNamespace {
		if s, ok := files[alertFile]; ok {
			b, err := dropNamespace([]byte(s))
			if err != nil {
				return fmt.Errorf("mutate: %s: %w", alertFile, err)
			}
			files[alertFile] = string(b)
		}
	}
	if v.Format != "" {
		if s, ok := files[alertFile]; ok {
			b, err := Redeliver([]byte(s), v.Format)
			if err != nil {
				return err
			}
			files[alertFile] = string(b)
		}
	}
	return nil
}

// Package signal gives metric series their meaning from the metric's type
// and its labels rather than from one naming convention: a `_count` of a
// duration histogram is throughput, its `_bucket` a latency distribution;
// any status-like label (HTTP `code`, `status`, `response_code`,
// `http_response_status_code`, gRPC `grpc_code`, `rpc_grpc_status_code`,
// `status_class`, `outcome`, ...) carrying a server-error class or a failing
// RPC code makes the series an error series. Prometheus-client and
// OpenTelemetry (Prometheus-exported) names read the same. The brain's
// analysis and the critic both classify series here, so they cannot
// disagree on what a series measures.
package signal

import (
	"strings"
)

// Kind is what a series measures.
type Kind string

// Series kinds. Unknown is a series whose name and labels say nothing
// about its meaning.
const (
	Unknown      Kind = ""
	Errors       Kind = "errors"
	Latency      Kind = "latency"
	Traffic      Kind = "traffic"
	CPU          Kind = "cpu"
	Memory       Kind = "memory"
	Saturation   Kind = "saturation"
	Availability Kind = "availability"
)

// CodeKeys are the label keys (folded: lower case, `.`/`-` as `_`) whose
// value is a request's status code, HTTP or gRPC, in order of preference;
// "code" is the Prometheus-client spelling the others are read as.
var CodeKeys = []string{"code", "status_code", "http_status_code", "http_response_status_code", "response_code", "http_status", "http_code",
	"response_status", "status", "grpc_code", "grpc_status", "grpc_status_code", "rpc_grpc_status_code", "rpc_code"}

// statusKeys are the label keys whose value is a request outcome: a status
// code, a status class or an outcome word.
var statusKeys = func() map[string]bool {
	m := map[string]bool{
		"status_class": true, "code_class": true, "http_status_class": true,
		"outcome": true, "result": true, "error_type": true, "otel_status_code": true,
	}
	for _, k := range CodeKeys {
		m[k] = true
	}
	return m
}()

// grpcFailures are gRPC status codes that mean the server failed (by name,
// folded, and by number); client-side codes (InvalidArgument, NotFound,
// PermissionDenied, ...) are not server errors.
var grpcFailures = map[string]bool{
	"unknown": true, "deadlineexceeded": true, "deadline_exceeded": true, "resourceexhausted": true, "resource_exhausted": true,
	"internal": true, "unavailable": true, "dataloss": true, "data_loss": true, "aborted": true,
	"2": true, "4": true, "8": true, "10": true, "13": true, "14": true, "15": true,
}

var failureWords = map[string]bool{
	"error": true, "errors": true, "failure": true, "failed": true, "fail": true, "timeout": true,
	"exception": true, "server_error": true, "servererror": true, "5xx": true,
}

// statusSuffixes end the folded keys a proxy, a gateway or a vendor
// exporter gives its request outcome under its own prefix
// (`envoy_response_code`, `upstream_status`, `nginx_status_code`): the
// last words say what the value is.
var statusSuffixes = []string{"_response_code", "_status_code", "_status", "_http_code", "_status_class", "_code_class"}

// isStatusKey: a folded label key whose value is a request outcome, by
// name or by its last words.
func isStatusKey(fk string) bool {
	if statusKeys[fk] {
		return true
	}
	for _, suf := range statusSuffixes {
		if strings.HasSuffix(fk, suf) {
			return true
		}
	}
	return false
}

// fold lower-cases a key and turns `.` and `-` into `_`.
func fold(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' {
			return '_'
		}
		return r
	}, strings.ToLower(k))
}

// StatusError reports whether the labels mark the series as failed
// requests, and which label said so.
func StatusError(labels map[string]string) (key string, ok bool) {
	for k, v := range labels {
		fk := fold(k)
		if !isStatusKey(fk) {
			continue
		}
		lv := strings.ToLower(strings.TrimSpace(v))
		isGRPC := strings.Contains(fk, "grpc") || strings.Contains(fk, "rpc")
		switch {
		case isGRPC && grpcFailures[strings.ReplaceAll(lv, " ", "")]:
			return k, true
		case isGRPC:
			continue
		case len(lv) == 3 && lv[0] == '5' && (isDigits(lv[1:]) || lv[1:] == "xx"):
			return k, true // 503, 5xx
		case lv == "5" && strings.Contains(fk, "class"):
			return k, true
		case failureWords[lv]:
			return k, true
		}
	}
	return "", false
}

// ClientError reports whether the labels mark the series as requests the
// client got wrong: an HTTP status code or class of 4xx (not 429, a limit
// the server applies, nor 408, a timeout).
func ClientError(labels map[string]string) bool {
	for k, v := range labels {
		fk := fold(k)
		if !isStatusKey(fk) || strings.Contains(fk, "grpc") || strings.Contains(fk, "rpc") {
			continue
		}
		lv := strings.ToLower(strings.TrimSpace(v))
		if len(lv) == 3 && lv[0] == '4' && (isDigits(lv[1:]) && lv != "429" && lv != "408" || lv[1:] == "xx") {
			return true
		}
		if lv == "4" && strings.Contains(fk, "class") {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// durationWords mark a measurement of time per operation.
var durationWords = []string{"latency", "duration", "response_time", "responsetime", "elapsed", "p99", "p95", "p90", "p50", "quantile", "round_trip", "rtt"}

// Classify returns what the series named name with labels measures.
func Classify(name string, labels map[string]string) Kind {
	if _, bad := StatusError(labels); bad {
		return Errors
	}
	n := strings.ToLower(MetricName(name))
	base, suffix := n, ""
	for _, suf := range []string{"_bucket", "_count", "_sum", "_total", ":rate"} {
		if strings.HasSuffix(base, suf) {
			base = strings.TrimSuffix(base, suf)
			if suffix == "" {
				suffix = suf
			}
		}
	}
	if Subsystem(n) == SubsystemRuntime && (strings.Contains(base, "_gc") || strings.Contains(base, "gc_")) {
		// A language runtime's collector: its cycles and pauses are
		// neither requests nor request latency (what they say about
		// memory is read beside the runtime's memory series).
		return Unknown
	}
	hasDuration := containsAny(base, durationWords...) || (strings.HasSuffix(base, "_seconds") || strings.HasSuffix(base, "_milliseconds")) && !containsAny(base, "cpu", "gc_", "uptime", "start_time", "age", "timestamp", "throttled", "lag")
	switch {
	case containsAny(base, "error", "5xx", "fail", "exception", "fault", "reject"):
		return Errors
	case hasDuration && suffix == "_count":
		// The count of a duration histogram or summary counts operations.
		return Traffic
	case hasDuration && suffix == "_sum":
		return Unknown // only meaningful divided by its _count
	case hasDuration:
		return Latency
	case containsAny(base, "request", "rps", "qps", "throughput", "traffic", "calls", "invocations", "operations", "messages_in", "received", "handled"):
		return Traffic
	case containsAny(base, "cpu"):
		return CPU
	case containsAny(base, "memory", "mem_", "heap", "rss", "working_set"):
		return Memory
	case containsAny(base, "connection", "disk", "storage", "fd", "thread", "queue", "pool", "saturation", "iops", "throttl", "swap", "lag", "backlog", "inflight", "in_flight"):
		return Saturation
	case containsAny(base, "availability", "success", "probe_success") || base == "up":
		return Availability
	}
	return Unknown
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// promqlWords are PromQL function, aggregation and keyword names: what an
// expression wraps around the metric it reads.
var promqlWords = map[string]bool{
	"rate": true, "irate": true, "increase": true, "delta": true, "idelta": true, "deriv": true, "resets": true, "changes": true,
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "stddev": true, "stdvar": true, "topk": true, "bottomk": true,
	"quantile": true, "count_values": true, "group": true, "by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "offset": true, "bool": true, "and": true, "or": true, "unless": true,
	"histogram_quantile": true, "abs": true, "ceil": true, "floor": true, "round": true, "clamp": true, "clamp_min": true, "clamp_max": true,
	"label_replace": true, "label_join": true, "vector": true, "scalar": true, "time": true, "timestamp": true, "absent": true,
	"avg_over_time": true, "min_over_time": true, "max_over_time": true, "sum_over_time": true, "count_over_time": true,
	"last_over_time": true, "quantile_over_time": true, "predict_linear": true, "holt_winters": true, "sort": true, "sort_desc": true,
}

// MetricName is the metric an expression reads: the name itself for a
// bare series name, else the first identifier of a PromQL expression that
// is not a function, aggregation or keyword and not inside a label
// matcher ("rate(http_requests_total{code=~\"5..\"}[5m])" reads
// http_requests_total).
func MetricName(expr string) string {
	if !strings.ContainsAny(expr, "({[ ") {
		return expr
	}
	depth := 0 // inside {...} or [...]
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '{' || c == '[':
			depth++
			i++
		case c == '}' || c == ']':
			depth--
			i++
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case isIdentStart(c):
			j := i
			for j < len(expr) && (isIdentStart(expr[j]) || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			word := expr[i:j]
			lw := strings.ToLower(word)
			if depth == 0 && !promqlWords[lw] {
				return word
			}
			i = j
			if groupingWords[lw] {
				// by (service), on (instance): label names, not metrics.
				for i < len(expr) && expr[i] == ' ' {
					i++
				}
				if i < len(expr) && expr[i] == '(' {
					if k := strings.IndexByte(expr[i:], ')'); k >= 0 {
						i += k + 1
					}
				}
			}
		default:
			i++
		}
	}
	return expr
}

var groupingWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Subsystems a metric's namespace (its first name segments) belongs to,
// by the exporters and client libraries of the field. A series of a
// language runtime, a datastore's exporter or the platform measures that
// machinery, never the requests a service receives.
const (
	SubsystemApp       = ""
	SubsystemRuntime   = "runtime"
	SubsystemDatastore = "datastore"
	SubsystemPlatform  = "platform"
)

var subsystemPrefixes = []struct {
	prefix, subsystem string
}{
	{"go_", SubsystemRuntime}, {"jvm_", SubsystemRuntime}, {"process_", SubsystemRuntime}, {"python_", SubsystemRuntime},
	{"nodejs_", SubsystemRuntime}, {"dotnet_", SubsystemRuntime}, {"ruby_", SubsystemRuntime}, {"erlang_vm_", SubsystemRuntime},
	{"beam_", SubsystemRuntime}, {"php_", SubsystemRuntime}, {"process_runtime_", SubsystemRuntime},
	{"pg_", SubsystemDatastore}, {"postgres_", SubsystemDatastore}, {"postgresql_", SubsystemDatastore}, {"cnpg_", SubsystemDatastore},
	{"mysql_", SubsystemDatastore}, {"mysqld_", SubsystemDatastore}, {"redis_", SubsystemDatastore}, {"mongodb_", SubsystemDatastore},
	{"memcached_", SubsystemDatastore}, {"elasticsearch_", SubsystemDatastore}, {"opensearch_", SubsystemDatastore},
	{"rabbitmq_", SubsystemDatastore}, {"kafka_server_", SubsystemDatastore}, {"cassandra_", SubsystemDatastore}, {"etcd_", SubsystemDatastore},
	{"node_", SubsystemPlatform}, {"container_", SubsystemPlatform}, {"kube_", SubsystemPlatform}, {"kubelet_", SubsystemPlatform},
	{"machine_", SubsystemPlatform}, {"apiserver_", SubsystemPlatform}, {"coredns_", SubsystemPlatform},
	// The telemetry pipeline's own activity (log, metric and trace
	// shippers and stores) is the platform's, not the application's demand.
	{"loki_", SubsystemPlatform}, {"promtail_", SubsystemPlatform}, {"prometheus_", SubsystemPlatform}, {"alertmanager_", SubsystemPlatform},
	{"fluentbit_", SubsystemPlatform}, {"fluentd_", SubsystemPlatform}, {"vector_", SubsystemPlatform}, {"otelcol_", SubsystemPlatform},
	{"tempo_", SubsystemPlatform}, {"cortex_", SubsystemPlatform}, {"thanos_", SubsystemPlatform}, {"jaeger_", SubsystemPlatform},
}

// Subsystem is the subsystem a metric name belongs to, SubsystemApp for
// an application's own instrumentation (http_, rpc_, business counters).
func Subsystem(name string) string {
	n := strings.ToLower(MetricName(name))
	for _, p := range subsystemPrefixes {
		if strings.HasPrefix(n, p.prefix) {
			return p.subsystem
		}
	}
	return SubsystemApp
}

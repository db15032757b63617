package mutate

import "strings"

// metricPair is one measurement under its Prometheus-client (or
// kube-state-metrics, cAdvisor, kubelet) name and under the name the
// OpenTelemetry Prometheus exporter gives the OpenTelemetry metric of the
// same measurement (dots to underscores, unit suffix, _total for monotonic
// sums).
type metricPair struct {
	prom, otel string
	// suffixes are the series suffixes of a histogram or summary family
	// (both names take them); nil for a single series.
	suffixes []string
}

var histogram = []string{"_bucket", "_sum", "_count"}

// metricPairs holds only pairs that measure the same thing with the same
// meaning and unit. Pairs that differ in shape (kube_pod_status_phase's
// one-series-per-phase against k8s.pod.phase's enum value,
// kube_pod_container_resource_limits{resource=...} against
// k8s.container.cpu_limit) are left out: renaming them would change the
// evidence, not its vocabulary.
var metricPairs = []metricPair{
	// Server request latency histogram: client_golang / prom-client
	// convention against OpenTelemetry http.server.request.duration (s).
	{prom: "http_request_duration_seconds", otel: "http_server_request_duration_seconds", suffixes: histogram},
	// Process CPU time, user+system seconds: client_golang process
	// collector against OpenTelemetry process.cpu.time (s, monotonic).
	{prom: "process_cpu_seconds_total", otel: "process_cpu_time_seconds_total"},
	// Live goroutines: client_golang Go collector against OpenTelemetry
	// go.goroutine.count.
	{prom: "go_goroutines", otel: "go_goroutine_count"},
	// Container CPU time, seconds: cAdvisor against the kubeletstats
	// receiver's container.cpu.time (s, monotonic).
	{prom: "container_cpu_usage_seconds_total", otel: "container_cpu_time_seconds_total"},
	// Container restarts: kube-state-metrics against the k8s_cluster
	// receiver's k8s.container.restarts.
	{prom: "kube_pod_container_status_restarts_total", otel: "k8s_container_restarts"},
	// Deployment desired and available replicas: kube-state-metrics against
	// k8s.deployment.desired / k8s.deployment.available.
	{prom: "kube_deployment_spec_replicas", otel: "k8s_deployment_desired"},
	{prom: "kube_deployment_status_replicas_available", otel: "k8s_deployment_available"},
	// Job pods by outcome: kube-state-metrics against k8s.job.active_pods,
	// k8s.job.failed_pods, k8s.job.successful_pods.
	{prom: "kube_job_status_active", otel: "k8s_job_active_pods"},
	{prom: "kube_job_status_failed", otel: "k8s_job_failed_pods"},
	{prom: "kube_job_status_succeeded", otel: "k8s_job_successful_pods"},
	// Running jobs of a CronJob: kube-state-metrics against k8s.cronjob.active_jobs.
	{prom: "kube_cronjob_status_active", otel: "k8s_cronjob_active_jobs"},
	// HorizontalPodAutoscaler replicas: kube-state-metrics against
	// k8s.hpa.current_replicas, k8s.hpa.desired_replicas, k8s.hpa.max_replicas.
	{prom: "kube_horizontalpodautoscaler_status_current_replicas", otel: "k8s_hpa_current_replicas"},
	{prom: "kube_horizontalpodautoscaler_status_desired_replicas", otel: "k8s_hpa_desired_replicas"},
	{prom: "kube_horizontalpodautoscaler_spec_max_replicas", otel: "k8s_hpa_max_replicas"},
	// Volume bytes available and capacity: kubelet volume stats against the
	// kubeletstats receiver's k8s.volume.available / k8s.volume.capacity (By).
	{prom: "kubelet_volume_stats_available_bytes", otel: "k8s_volume_available_bytes"},
	{prom: "kubelet_volume_stats_capacity_bytes", otel: "k8s_volume_capacity_bytes"},
}

// names expands a pair side to its series names (and the family's base
// name, which texts cite).
func (p metricPair) names(base string) []string {
	out := []string{base}
	for _, s := range p.suffixes {
		out = append(out, base+s)
	}
	return out
}

// metricRenames maps every name of a pair that the scenario uses (in its
// series or its alert text) to the other side. A pair whose both sides are
// present is swapped, which keeps the rewrite one-to-one.
func metricRenames(series map[string]bool, alertText string) map[string]string {
	out := map[string]string{}
	used := func(names []string) bool {
		for _, n := range names {
			if series[n] || containsName(alertText, n) {
				return true
			}
		}
		return false
	}
	for _, p := range metricPairs {
		pn, on := p.names(p.prom), p.names(p.otel)
		if !used(pn) && !used(on) {
			continue
		}
		for i := range pn {
			out[pn[i]] = on[i]
			out[on[i]] = pn[i]
		}
	}
	return out
}

// containsName reports whether name occurs in s as a whole identifier.
func containsName(s, name string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isNameByte(s[start-1])) && (end == len(s) || !isNameByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

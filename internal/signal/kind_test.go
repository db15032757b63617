package signal

import "testing"

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   Kind
	}{
		{"http_requests_total", map[string]string{"code": "503"}, Errors},
		{"http_requests_total", map[string]string{"code": "200"}, Traffic},
		{"http_server_request_duration_seconds_count", map[string]string{"http_response_status_code": "500"}, Errors},
		{"http_server_request_duration_seconds_count", map[string]string{"http_response_status_code": "200"}, Traffic},
		{"http_server_request_duration_seconds_bucket", map[string]string{"le": "0.5"}, Latency},
		{"http_request_duration_seconds_sum", nil, Unknown},
		{"rpc_server_duration_milliseconds_bucket", nil, Latency},
		{"grpc_server_handled_total", map[string]string{"grpc_code": "Unavailable"}, Errors},
		{"grpc_server_handled_total", map[string]string{"grpc_code": "NotFound"}, Traffic},
		{"rpc_server_requests_total", map[string]string{"rpc.grpc.status_code": "14"}, Errors},
		{"nginx_ingress_controller_requests", map[string]string{"status_class": "5xx"}, Errors},
		{"api_calls_total", map[string]string{"response_code": "502"}, Errors},
		{"api_calls_total", map[string]string{"outcome": "SERVER_ERROR"}, Errors},
		{"api_calls_total", map[string]string{"status": "429"}, Traffic},
		{"container_cpu_usage_seconds_total", nil, CPU},
		{"container_memory_working_set_bytes", nil, Memory},
		{"kafka_consumergroup_lag", nil, Saturation},
		{"probe_success", nil, Availability},
		{"jobs_failed_total", nil, Errors},
		{"process_start_time_seconds", nil, Unknown},
		// A proxy's or vendor's own prefix before the status words.
		{"envoy_cluster_upstream_rq", map[string]string{"envoy_response_code": "502"}, Errors},
		{"lb_requests", map[string]string{"upstream_status": "504"}, Errors},
		{"lb_requests", map[string]string{"backend_status_class": "5xx"}, Errors},
		{"batch_runs_total", map[string]string{"job_status": "failed"}, Errors},
		// Work refused counts as failures whatever the refusal is called.
		{"game_moves_rejected_total", map[string]string{"reason": "clock_store"}, Errors},
		{"orders_rejected", nil, Errors},
		// A lag measured in seconds is how far behind, not how slow.
		{"pg_replication_lag_seconds", nil, Saturation},
		{"kafka_consumergroup_lag_seconds", nil, Saturation},
		{"http_server_duration_seconds", nil, Latency},
		// A code that is not a request outcome.
		{"visits_total", map[string]string{"zip_code": "50321"}, Unknown},
		{"processes_exited_total", map[string]string{"exit_code": "1"}, Unknown},
	}
	for _, tc := range tests {
		if got := Classify(tc.name, tc.labels); got != tc.want {
			t.Errorf("Classify(%s, %v) = %q, want %q", tc.name, tc.labels, got, tc.want)
		}
	}
}

func TestMetricName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http_requests_total", "http_requests_total"},
		{"rate(http_server_requests_seconds_sum[5m])", "http_server_requests_seconds_sum"},
		{`sum by (service) (rate(http_requests_total{code=~"5.."}[5m]))`, "http_requests_total"},
		{`histogram_quantile(0.99, sum(rate(rpc_server_duration_bucket{le="+Inf"}[5m])) by (le))`, "rpc_server_duration_bucket"},
		{`max_over_time(process_open_fds{job="x"}[10m]) / process_max_fds`, "process_open_fds"},
	} {
		if got := MetricName(tc.in); got != tc.want {
			t.Errorf("MetricName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Classify("rate(http_server_requests_seconds_sum[5m])", nil); got != Unknown {
		t.Errorf("the rate of a duration's _sum is not traffic: got %q", got)
	}
	if got := Classify("rate(http_server_requests_seconds_count[5m])", nil); got != Traffic {
		t.Errorf("the rate of a duration's _count is traffic: got %q", got)
	}
}

func TestSubsystemAndRuntimeCollector(t *testing.T) {
	tests := []struct {
		name      string
		subsystem string
		kind      Kind
	}{
		{"go_gc_duration_seconds_count", SubsystemRuntime, Unknown},
		{"rate(jvm_gc_pause_seconds_count[5m])", SubsystemRuntime, Unknown},
		{"pg_stat_statements_calls_total", SubsystemDatastore, Traffic},
		{"node_network_receive_bytes_total", SubsystemPlatform, Unknown},
		{"http_server_request_duration_seconds_count", SubsystemApp, Traffic},
		{"checkout_orders_total", SubsystemApp, Unknown},
		{"rate(loki_distributor_lines_received_total[5m])", SubsystemPlatform, Traffic},
	}
	for _, tc := range tests {
		if got := Subsystem(tc.name); got != tc.subsystem {
			t.Errorf("Subsystem(%s) = %q, want %q", tc.name, got, tc.subsystem)
		}
		if got := Classify(tc.name, nil); got != tc.kind {
			t.Errorf("Classify(%s) = %q, want %q", tc.name, got, tc.kind)
		}
	}
}

func TestClientError(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"code": "400"}, true},
		{map[string]string{"http_response_status_code": "404"}, true},
		{map[string]string{"status_class": "4xx"}, true},
		{map[string]string{"code": "429"}, false}, // a limit the server applies
		{map[string]string{"code": "408"}, false}, // a timeout
		{map[string]string{"code": "503"}, false},
		{map[string]string{"grpc_code": "400"}, false},
		{map[string]string{"method": "400"}, false},
		{map[string]string{"envoy_response_code": "403"}, true},
	} {
		if got := ClientError(tc.labels); got != tc.want {
			t.Errorf("ClientError(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

package target

import (
	"slices"
	"testing"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		ann    map[string]string
		texts  Fields
		want   map[Kind]string // kind -> first value expected
		absent []Kind
	}{
		{
			name:   "otel resource attribute spellings",
			labels: map[string]string{"k8s.namespace.name": "shop", "service.name": "cart", "k8s.pod.name": "cart-7d9f8-abcde"},
			want:   map[Kind]string{Namespace: "shop", Service: "cart", Pod: "cart-7d9f8-abcde"},
		},
		{
			name:  "pagerduty body with embedded labels",
			texts: Fields{"description": "firing: alertname=HighErrors namespace=payments service=ledger-api severity=critical"},
			want:  map[Kind]string{Namespace: "payments", Service: "ledger-api"},
		},
		{
			name:  "datadog scope pairs",
			texts: Fields{"description": "env:prod,service:points,kube_namespace:loyalty"},
			want:  map[Kind]string{Namespace: "loyalty", Service: "points", Environment: "prod"},
		},
		{
			name:   "promql selector in an expression, negative matcher ignored",
			ann:    map[string]string{"expr": `sum(rate(http_requests_total{k8s_namespace_name="orders", job!="blackbox", service=~"a|b"}[5m]))`},
			want:   map[Kind]string{Namespace: "orders"},
			absent: []Kind{Service},
		},
		{
			name:  "in-cluster service url names service and namespace",
			texts: Fields{"summary": "probe of http://quote-svc.pricing.svc.cluster.local:8080/health failed"},
			want:  map[Kind]string{Service: "quote-svc", Namespace: "pricing"},
		},
		{
			name:   "generator url host is the monitoring system, its expr is the target",
			ann:    map[string]string{"generator_url": "http://prometheus.monitoring.svc:9090/graph?g0.expr=up%7Bnamespace%3D%22billing%22%7D"},
			want:   map[Kind]string{Namespace: "billing"},
			absent: []Kind{Service},
		},
		{
			name:   "namespace/pod as kubectl writes it",
			labels: map[string]string{"pod": "sms-x-5d8c9-abcde"},
			texts:  Fields{"description": "Pod notify/sms-x-5d8c9-abcde is crash looping"},
			want:   map[Kind]string{Namespace: "notify", Pod: "sms-x-5d8c9-abcde"},
		},
		{
			name: "a rule's scrape job names the service when nothing else does",
			ann:  map[string]string{"description": `sum(rate(beats_total{job="ledger-sync-old"}[5m])) returned no data`},
			want: map[Kind]string{Service: "ledger-sync-old"},
		},
		{
			name:   "a job label names the service when nothing else does",
			labels: map[string]string{"job": "fare-engine", "instance": "10.0.3.4:9100"},
			want:   map[Kind]string{Service: "fare-engine"},
		},
		{
			name:   "a monitoring agent's job is the reporter, not the target",
			labels: map[string]string{"job": "kube-state-metrics", "namespace": "shop"},
			ann:    map[string]string{"expr": `up{job="blackbox-https"} == 0`},
			want:   map[Kind]string{Namespace: "shop"},
			absent: []Kind{Service},
		},
		{
			name:   "a named service wins over the job",
			labels: map[string]string{"job": "scrape-all", "service": "cart"},
			want:   map[Kind]string{Service: "cart"},
		},
		{
			name:   "numbers and urls after a colon are not names; the url's host is",
			texts:  Fields{"summary": "pod: 3 restarts, host: https://edge.example.com/x"},
			want:   map[Kind]string{Host: "edge.example.com"},
			absent: []Kind{Pod},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := Extract(tc.labels, tc.ann, tc.texts)
			for k, v := range tc.want {
				if got := First(es, k); got != v {
					t.Errorf("%s = %q, want %q (entities %+v)", k, got, v, es)
				}
			}
			for _, k := range tc.absent {
				if got := First(es, k); got != "" {
					t.Errorf("%s = %q, want none", k, got)
				}
			}
		})
	}
}

func TestMissingNeverOverridesLabelsAndDropsAmbiguity(t *testing.T) {
	labels := map[string]string{"kube_namespace": "a"}
	es := Extract(labels, nil, Fields{"description": "namespace=b service=x", "summary": "service=y"})
	m := Missing(labels, es)
	if _, ok := m[Namespace]; ok {
		t.Errorf("namespace is labelled (kube_namespace); Missing must not propose %v", m[Namespace])
	}
	if _, ok := m[Service]; ok {
		t.Errorf("service has two values in text (x, y): ambiguous, got %v", m[Service])
	}
}

func TestLookupVocabularyOrder(t *testing.T) {
	labels := map[string]string{"exported_namespace": "scraper", "K8s.Namespace.Name": "app-ns"}
	if got := Lookup(labels, Namespace); got != "app-ns" {
		t.Errorf("Lookup = %q, want the k8s.namespace.name spelling before exported_namespace", got)
	}
	if got := KindOf("Kube-Deployment"); got != Deployment {
		t.Errorf("KindOf(Kube-Deployment) = %q", got)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("namespace=a service=b", `{k8s_namespace_name="x"}`)
	f.Add("http://a.b.svc.cluster.local/x", "%7Bpod%3D%22p%22%7D")
	f.Fuzz(func(t *testing.T, text, expr string) {
		es := Extract(map[string]string{"pod": "p"}, map[string]string{"expr": expr}, Fields{"description": text})
		for _, e := range es {
			if e.Value == "" || len(e.Value) > 253 || e.Kind == "" {
				t.Fatalf("bad entity %+v", e)
			}
		}
	})
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		in   map[string]string
		want map[string]string
	}{
		{map[string]string{"k8s_pod_name": "a-1", "k8s_namespace_name": "ns", "http_response_status_code": "503"}, map[string]string{"pod": "a-1", "namespace": "ns", "code": "503"}},
		{map[string]string{"pod_name": "b-1", "kubernetes_namespace": "x", "kubernetes_name": "svc", "status_code": "200"}, map[string]string{"pod": "b-1", "namespace": "x", "service": "svc", "code": "200"}},
		{map[string]string{"pod": "keep", "pod_name": "other"}, map[string]string{"pod": "keep"}},
		{map[string]string{"grpc_code": "Unavailable"}, map[string]string{"code": "Unavailable"}},
	}
	for _, tc := range tests {
		got := Canonical(tc.in)
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("Canonical(%v)[%s] = %q, want %q", tc.in, k, got[k], v)
			}
		}
		for k, v := range tc.in {
			if got[k] != v {
				t.Errorf("Canonical dropped or changed %s=%s", k, v)
			}
		}
	}
	plain := map[string]string{"le": "0.5"}
	if got := Canonical(plain); len(got) != 1 {
		t.Errorf("labels without known spellings changed: %v", got)
	}
}

func TestLinksToMonitoringAreNotTargets(t *testing.T) {
	text := "Labels:\n - namespace = travel\n - service = booking-api\nSource: http://prometheus.monitoring.svc:9090/graph?g0.expr=x\nRunbook: https://runbooks.example.com/booking"
	es := Extract(nil, nil, Fields{"description": text})
	m := Missing(nil, es)
	if m[Namespace].Value != "travel" || m[Service].Value != "booking-api" {
		t.Fatalf("Missing = %+v; want the key=value entities, not the Prometheus link's", m)
	}
	es = Extract(nil, nil, Fields{"summary": "probe of http://quotes.pricing.svc:8080/health failed; see http://grafana.ops.svc/d/abc"})
	m = Missing(nil, es)
	if m[Service].Value != "quotes" || m[Namespace].Value != "pricing" {
		t.Fatalf("Missing = %+v; want the probed service, not grafana", m)
	}
}

// Two values of one kind in a body: the more specific spelling decides
// (db_instance over db_cluster); two values under equally specific keys
// stay ambiguous and are not guessed.
func TestMissingPrefersTheSpecificSpelling(t *testing.T) {
	body := "Labels:\n - service = rds\n - db_cluster = payments-cluster\n - db_instance = payments-prod\n - alertname = ReplicaLagHigh\n"
	miss := Missing(nil, Extract(nil, nil, Fields{"description": body}))
	if got := miss[Database].Value; got != "payments-prod" {
		t.Errorf("database = %q, want payments-prod (db_instance outranks db_cluster)", got)
	}
	if got := miss[AlertRule].Value; got != "ReplicaLagHigh" {
		t.Errorf("alert rule = %q, want it read from the body", got)
	}
	tie := Missing(nil, Extract(nil, nil, Fields{"description": "db_instance = a-db and db_instance = b-db"}))
	if e, ok := tie[Database]; ok {
		t.Errorf("two db_instance values resolved to %q, want none (ambiguous)", e.Value)
	}
}

func TestProvider(t *testing.T) {
	for host, want := range map[string]string{
		"api.mailvolt.example":         "mailvolt",
		"API.Mailvolt.Example:443":     "mailvolt",
		"eu1.send.parcelwave.co.uk":    "parcelwave",
		"checkout.shop.svc":            "",
		"db.corp.internal":             "",
		"10.2.3.4":                     "",
		"2001:db8::1":                  "",
		"redis":                        "",
		"x.io":                         "",
		"cragpass.eu2.vaultco.example": "vaultco",
	} {
		if got := Provider(host); got != want {
			t.Errorf("Provider(%q) = %q, want %q", host, got, want)
		}
	}
}

// An ARN's "type/id" parts are no namespace/name pair, even next to a
// service the alert names.
func TestARNIsNoNamespacedName(t *testing.T) {
	es := Extract(map[string]string{"service": "EC2"}, nil, Fields{"description": "event arn:aws:health:eu-west-1::event/EC2/AWS_EC2_DEGRADED/x1 on EC2; also shop/EC2"})
	var ns []string
	for _, e := range es {
		if e.Kind == Namespace {
			ns = append(ns, e.Value)
		}
	}
	if len(ns) != 1 || ns[0] != "shop" {
		t.Fatalf("namespaces %v, want only shop (not event from the ARN)", ns)
	}
}

func TestIdentifiers(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"lesson-api eu-central request volume", []string{"lesson-api", "eu-central"}},
		{"Replication lag pg-crew-delayed > 300s", []string{"pg-crew-delayed"}},
		{"Queue 'reminders' message count 18,240 > 10,000", []string{"reminders"}},
		{"booking-rate anomaly on api.kitehire.example", []string{"booking-rate"}},
		{"absent(up{job=\"sail-cutter\"}) for 10 min", nil}, // a label matcher is the labels' business
		{"rate(http_requests_total[5m]) above v1.2.3 baseline", nil},
		{"CPU at 98% on db", nil},
	}
	for _, tc := range tests {
		got := Identifiers(tc.text, 3)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Identifiers(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// A monitoring product's own spelling of the machine a check ran on
// (its prefix, then host) names a host; other prefixed keys name nothing.
func TestPrefixedHostKeys(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Kind
	}{
		{"opsview_host", Host},
		{"nagios.hostname", Host},
		{"checkmk-host-name", Host},
		{"host", Host},
		{"opsview_service", ""},
		{"_host", ""},
		{"ghost", ""},
	} {
		if got := KindOf(tc.key); got != tc.want {
			t.Errorf("KindOf(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	if got := Lookup(map[string]string{"opsview_host": "tide-gw-02", "hostgroup": "Harbour"}, Host); got != "tide-gw-02" {
		t.Errorf("Lookup host = %q", got)
	}
	if got := Lookup(map[string]string{"hostname": "a-1", "zabbix_host": "b-2"}, Host); got != "a-1" {
		t.Errorf("the vocabulary's own key comes first, got %q", got)
	}
}

func TestIdentifiersNamePorts(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"Interface Gi1/0/48 utilisation WARN", "gi1/0/48"},
		{"port ge-0/0/3 flapping on edge-rtr", "ge-0/0/3"},
		{"link eth1/7 down", "eth1/7"},
	}
	for _, tc := range tests {
		if got := Identifiers(tc.text, 4); !slices.Contains(got, tc.want) {
			t.Errorf("Identifiers(%q) = %v, want %q among them", tc.text, got, tc.want)
		}
	}
	if got := Identifiers("served 12/400 requests, ratio 1/2", 4); len(got) != 0 {
		t.Errorf("numbers are no port: %v", got)
	}
}

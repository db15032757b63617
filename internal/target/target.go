// Package target resolves what an alert is about: every field of the alert
// (labels, annotations, the text of its title, summary and body, URL hosts,
// the PromQL selectors of its own expression and generator URL) becomes a
// typed entity. It is the first stage of the diagnosis method: the planner
// and the analysis read the entities, not one vendor's label names.
//
// Label keys are matched through one vocabulary table (vocabulary below):
// Prometheus-client, kube-state-metrics, Datadog tags and OpenTelemetry
// resource attributes (`k8s.namespace.name`, `service.name`, ...) name the
// same entity kinds. Keys are compared after folding case and turning `.`,
// `-` and `/` into `_`, so `k8s.pod.name`, `k8s_pod_name` and
// `K8s-Pod-Name` are one key.
package target

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
)

// Kind is the type of entity a value names.
type Kind string

// Entity kinds.
const (
	Namespace     Kind = "namespace"
	Service       Kind = "service"
	Pod           Kind = "pod"
	Node          Kind = "node"
	Deployment    Kind = "deployment"
	StatefulSet   Kind = "statefulset"
	DaemonSet     Kind = "daemonset"
	Job           Kind = "job"
	CronJob       Kind = "cronjob"
	Container     Kind = "container"
	Cluster       Kind = "cluster"
	Environment   Kind = "environment"
	Database      Kind = "database"
	Queue         Kind = "queue"
	ConsumerGroup Kind = "consumer_group"
	Host          Kind = "host"
	Ingress       Kind = "ingress"
	// AlertRule is the monitoring rule that fired (kept when a relay such
	// as PagerDuty carries the labels only in its body text).
	AlertRule Kind = "alert_rule"
)

// vocabulary maps folded label keys to the entity kind they name. One row
// per spelling; the first spelling of each kind is the canonical label key
// Enrich writes.
// reNamespaceValue: a Kubernetes namespace, a DNS label (letters of
// either case accepted as written).
var reNamespaceValue = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$`)

// ValidNamespace: v can be a Kubernetes namespace (a DNS label).
func ValidNamespace(v string) bool { return reNamespaceValue.MatchString(v) }

var vocabulary = []struct {
	kind Kind
	keys []string
}{
	{Namespace, []string{"namespace", "kube_namespace", "k8s_namespace", "k8s_namespace_name", "exported_namespace", "kubernetes_namespace", "kubernetes_namespace_name", "kube_namespace_name", "ns"}},
	{Service, []string{"service", "service_name", "kube_service", "k8s_service_name", "exported_service", "app_kubernetes_io_name", "app", "k8s_app", "application", "svc", "workload_name", "destination_service_name", "dd_service", "kubernetes_name", "kubernetes_service_name", "servicename"}},
	{Pod, []string{"pod", "pod_name", "kube_pod", "kube_pod_name", "k8s_pod_name", "k8s_pod", "exported_pod", "kubernetes_pod_name"}},
	{Node, []string{"node", "node_name", "nodename", "kube_node", "kube_node_name", "k8s_node_name", "kubernetes_node", "kubernetes_io_hostname"}},
	{Deployment, []string{"deployment", "kube_deployment", "k8s_deployment_name", "kube_deployment_name", "deployment_name", "destination_workload"}},
	{StatefulSet, []string{"statefulset", "kube_statefulset", "k8s_statefulset_name", "statefulset_name"}},
	{DaemonSet, []string{"daemonset", "kube_daemonset", "k8s_daemonset_name", "daemonset_name"}},
	{Job, []string{"job_name", "kube_job", "k8s_job_name", "kube_job_name"}},
	{CronJob, []string{"cronjob", "kube_cronjob", "k8s_cronjob_name", "cronjob_name"}},
	{Container, []string{"container", "container_name", "k8s_container_name", "kube_container_name"}},
	{Cluster, []string{"cluster", "cluster_name", "kube_cluster_name", "k8s_cluster_name", "k8s_cluster", "eks_cluster", "clustername"}},
	{Environment, []string{"env", "environment", "deployment_environment", "deployment_environment_name", "stage"}},
	{Database, []string{"db_instance_identifier", "dbinstanceidentifier", "db_instance", "database_instance", "rds_instance", "db_cluster", "db_system_instance"}},
	{Queue, []string{"queue", "queue_name", "topic", "kafka_topic", "messaging_destination_name", "messaging_destination", "stream"}},
	{ConsumerGroup, []string{"consumergroup", "consumer_group", "group", "messaging_kafka_consumer_group", "messaging_consumer_group_name"}},
	{Host, []string{"host", "hostname", "host_name", "server_name", "server_address", "net_peer_name", "peer_service", "upstream_host"}},
	{Ingress, []string{"ingress", "ingress_name", "k8s_ingress_name"}},
	{AlertRule, []string{"alertname", "alert_name", "rule_name", "alertrule", "monitor_name"}},
}

var keyKind = func() map[string]Kind {
	m := map[string]Kind{}
	for _, row := range vocabulary {
		for _, k := range row.keys {
			m[k] = row.kind
		}
	}
	return m
}()

// CanonicalKey is the label key Enrich writes for kind.
func CanonicalKey(k Kind) string {
	for _, row := range vocabulary {
		if row.kind == k {
			return row.keys[0]
		}
	}
	return string(k)
}

// Fold normalises a label key: lower case, `.`, `-`, `/` and spaces as `_`,
// without the prefix the CloudWatch exporters put before a dimension's
// name (`dimension_DBInstanceIdentifier` is the DBInstanceIdentifier).
func Fold(key string) string {
	key = strings.ToLower(strings.TrimSpace(key))
	key = strings.Map(func(r rune) rune {
		switch r {
		case '.', '-', '/', ' ':
			return '_'
		}
		return r
	}, key)
	if rest, ok := strings.CutPrefix(key, dimensionPrefix); ok && rest != "" {
		return rest
	}
	return key
}

// dimensionPrefix: the CloudWatch exporters (cloudwatch_exporter, YACE)
// label a metric's dimensions `dimension_<Name>`.
const dimensionPrefix = "dimension_"

// hostSuffixes end the folded keys a monitoring product gives the machine
// a check ran on under its own prefix (`opsview_host`, `nagios_hostname`,
// `checkmk_host_name`): the last words say what the value is.
var hostSuffixes = []string{"_host", "_hostname", "_host_name"}

// KindOf is the entity kind a label key names, "" when none: by its
// spellings in the vocabulary, else a host by its last words.
func KindOf(key string) Kind {
	fk := Fold(key)
	if k, ok := keyKind[fk]; ok {
		return k
	}
	for _, suf := range hostSuffixes {
		if strings.HasSuffix(fk, suf) && len(fk) > len(suf) {
			return Host
		}
	}
	return ""
}

// Entity is one typed value the alert names, with the field it came from.
type Entity struct {
	Kind  Kind
	Value string
	// From is where it was read: "label:<key>", "annotation:<key>",
	// "text:<field>", "url", "promql".
	From string
	// Rank is the position of the key it was read under in its kind's
	// spellings (0: the canonical, most specific key; db_instance before
	// db_cluster); values read without a key rank last.
	Rank int
}

// unkeyedRank ranks values found without a key (URL hosts).
const unkeyedRank = 1 << 10

// KeyRank is the position of key among the spellings of its kind.
func KeyRank(key string) int {
	fk := Fold(key)
	k := keyKind[fk]
	for _, row := range vocabulary {
		if row.kind != k {
			continue
		}
		for i, spelling := range row.keys {
			if Fold(spelling) == fk {
				return i
			}
		}
	}
	return unkeyedRank
}

var (
	// key=value, key="value", key: value, key:value (Datadog scopes),
	// key = 'value'. A negative matcher (!=, !~) never matches: the
	// character before '=' must be part of the key or a space.
	rePair = regexp.MustCompile(`(?i)(?:^|[^a-z0-9_./-])([a-z][a-z0-9_./-]{0,62})\s*(=~|=|:)\s*["'\x60]?([a-z0-9][a-z0-9_./:@-]{0,252})`)
	// http(s)://<svc>.<ns>.svc[.cluster.local][:port]
	reSvcHost = regexp.MustCompile(`(?i)\b([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)\.([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)\.svc(?:\.cluster\.local)?\b`)
	// <namespace>/<name>, not inside a URL path (no slash before it).
	// reARN: an Amazon Resource Name, whose "type/id" parts are no
	// namespace/name pair.
	reARN     = regexp.MustCompile(`\barn:aws[a-z-]*:\S+`)
	reNsName  = regexp.MustCompile(`(?i)(?:^|[^a-z0-9./-])([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)/([a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)\b`)
	reURLHost = regexp.MustCompile(`(?i)\bhttps?://([a-z0-9][a-z0-9.-]{0,252})(?::\d+)?([^\s"'<>]*)`)
	// monitoring and documentation systems: a link to them (the alert's
	// source, runbook, dashboard, silence) names the tool, not the target.
	reToolHost = regexp.MustCompile(`(?i)^(prometheus|alertmanager|grafana|thanos[a-z-]*|victoriametrics|vmalert|vmselect|loki|kibana|datadog|pagerduty|opsgenie|runbooks?|wiki|docs|confluence|jira|sentry|cortex|mimir|tempo|jaeger|kiali|argocd|status)([.-]|$)`)
	reToolPath = regexp.MustCompile(`(?i)^/(graph|alerting|alerts|silences?|d/|explore|runbooks?|dashboards?|incidents?|monitors?|wiki)`)
)

// maxText bounds how much of one field is scanned (a huge body is data,
// not a reason to spend time).
const maxText = 64 << 10

// Fields are the texts of an alert, by field name.
type Fields map[string]string

// Extract returns the typed entities of labels, annotations and texts:
// labels first (most authoritative), then annotations, then values found
// inside texts and annotation values (embedded `key=value` pairs, PromQL
// selectors, URL hosts of in-cluster services). Duplicates (same kind and
// value) keep their first, most authoritative origin.
func Extract(labels, annotations map[string]string, texts Fields) []Entity {
	var out []Entity
	seen := map[string]bool{}
	addRanked := func(k Kind, v, from string, rank int) {
		v = strings.TrimSpace(v)
		if k == "" || v == "" || len(v) > 253 || k == Namespace && !ValidNamespace(v) {
			return // a namespace is a DNS label; a cloud product's metric namespace ("AWS/ELB") is none
		}
		id := string(k) + "\x00" + v
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, Entity{Kind: k, Value: v, From: from, Rank: rank})
	}
	add := func(k Kind, v, from string) { addRanked(k, v, from, unkeyedRank) }
	// peers are the cluster services the alert's text names by their DNS
	// name (<svc>.<ns>.svc): the target when nothing else names one, a
	// service it calls when a key names the workload that raised the
	// alert ("connecting to cache.data.svc" in the error of a named pod).
	var peers []Entity
	// jobs are the alert's Prometheus scrape jobs: its job label, then the
	// job matchers of its texts and annotations (a rule's PromQL).
	var jobs []string
	for _, k := range sortedKeys(labels) {
		addRanked(KindOf(k), labels[k], "label:"+k, KeyRank(k))
		if Fold(k) == "job" && strings.TrimSpace(labels[k]) != "" {
			jobs = append(jobs, strings.TrimSpace(labels[k]))
		}
	}
	for _, k := range sortedKeys(annotations) {
		addRanked(KindOf(k), annotations[k], "annotation:"+k, KeyRank(k))
	}
	scan := func(field, text string) {
		if len(text) > maxText {
			text = text[:maxText]
		}
		if strings.Contains(text, "%") {
			if u, err := url.QueryUnescape(text); err == nil {
				text = u
			}
		}
		for _, m := range rePair.FindAllStringSubmatch(text, -1) {
			v := strings.TrimRight(m[3], ".,;:)/")
			if m[2] == "=" && Fold(m[1]) == "job" && !isNumber(m[3]) {
				jobs = append(jobs, v)
			}
			k := KindOf(m[1])
			if k == "" {
				continue
			}
			if m[2] == "=~" {
				continue // a regex matcher names a set, not an entity
			}
			if strings.Contains(v, "://") || strings.HasPrefix(v, "//") || isNumber(v) {
				continue // "host: https://...", "pod: 3" are not names
			}
			addRanked(k, v, "text:"+field, KeyRank(m[1]))
		}
		if linkField(field) {
			return // the host of a generator, runbook or dashboard link is the monitoring system, not the target
		}
		for _, m := range reURLHost.FindAllStringSubmatch(text, -1) {
			host := strings.ToLower(m[1])
			if reToolHost.MatchString(host) || reToolPath.MatchString(m[2]) {
				continue // a link to the monitoring system, not the target
			}
			if sm := reSvcHost.FindStringSubmatch(host); sm != nil {
				peers = append(peers, Entity{Kind: Service, Value: strings.ToLower(sm[1]), From: "url:" + field}, Entity{Kind: Namespace, Value: strings.ToLower(sm[2]), From: "url:" + field})
				continue
			}
			add(Host, strings.TrimRight(host, "."), "url:"+field)
		}
		for _, sm := range reSvcHost.FindAllStringSubmatch(text, -1) {
			if reToolHost.MatchString(sm[1]) {
				continue
			}
			peers = append(peers, Entity{Kind: Service, Value: strings.ToLower(sm[1]), From: "text:" + field}, Entity{Kind: Namespace, Value: strings.ToLower(sm[2]), From: "text:" + field})
		}
	}
	for _, k := range sortedKeys(texts) {
		scan(k, texts[k])
	}
	for _, k := range sortedKeys(annotations) {
		scan("annotation:"+k, annotations[k])
	}
	// A Prometheus scrape job names the service it scrapes (a
	// ServiceMonitor's job is its Service) when nothing else names a
	// workload; a monitoring agent's job (kube-state-metrics, an exporter,
	// a prober) names the reporter, not the target.
	if !namesWorkload(out) {
		for _, v := range jobs {
			if !monitoringAgent(v) {
				addRanked(Service, v, "job", unkeyedRank)
				break
			}
		}
	}
	// A host the alert names by key whose name has a Deployment pod's form
	// is that pod: a pod's hostname is its name (an error tracker's
	// notice, an APM agent's host tag).
	for _, e := range out {
		if e.Kind == Host && !strings.HasPrefix(e.From, "url:") && facts.IsDeploymentPod(strings.ToLower(e.Value)) {
			addRanked(Pod, strings.ToLower(e.Value), "host:"+e.From, e.Rank)
		}
	}
	if !keyedWorkload(out) {
		for _, e := range peers {
			add(e.Kind, e.Value, e.From)
		}
	}
	// "<namespace>/<name>" next to a pod or workload the alert names:
	// kubectl's and kube-state-metrics' way of writing a namespaced object.
	named := map[string]bool{}
	for _, e := range out {
		switch e.Kind {
		case Pod, Service, Deployment, StatefulSet, DaemonSet, Job, CronJob:
			named[strings.ToLower(e.Value)] = true
		}
	}
	if len(named) > 0 {
		for _, k := range sortedKeys(texts) {
			for _, m := range reNsName.FindAllStringSubmatch(reARN.ReplaceAllString(texts[k], " "), -1) {
				if named[strings.ToLower(m[2])] {
					add(Namespace, strings.ToLower(m[1]), "text:"+k)
				}
			}
		}
	}
	return out
}

// reIdent: a compound identifier (words joined by `-`, `_` or `.`) or a
// quoted name in an alert's own text: how monitors write the object they
// watch ("lesson-api eu-central request volume", "lag pg-crew-delayed",
// "Queue 'reminders'").
// A port of a switch or a router is named by its type and its slot,
// module and port numbers ("Gi1/0/48", "Te1/1/4", "ge-0/0/3", "eth1/7").
var reIdent = regexp.MustCompile(`(?i)(?:^|[\s(\[{,;:])([a-z]{1,16}-?[0-9]+(?:/[0-9]+)+)\b|(?:^|[\s(\[{,;])([a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+)\b|['\x60]([a-z][a-z0-9_.-]{2,62})['\x60]`)

// Identifiers are the names an alert's text gives to what it watches, when
// no label does: compound identifiers and quoted names, at most n, not
// numbers, versions, hosts or URLs. They are search terms and words to
// recognise the target by, not typed entities.
func Identifiers(text string, n int) []string {
	if len(text) > maxText {
		text = text[:maxText]
	}
	var out []string
	for _, m := range reIdent.FindAllStringSubmatch(text, -1) {
		v := strings.ToLower(strings.TrimRight(m[1]+m[2]+m[3], "._-"))
		if len(v) < 4 || strings.Count(v, ".") >= 2 || isNumber(strings.NewReplacer("-", "", "_", "", ".", "").Replace(v)) {
			continue // too short, a host name, or a number or version
		}
		if strings.Contains(v, "_") && metricSuffix(v) {
			continue // a metric's name says what is measured, not what is watched
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
		if len(out) >= n {
			break
		}
	}
	return out
}

// AlertIdentifiers are the names an alert's own texts (its name, title,
// summary, description) give what it watches (Identifiers), at most four.
func AlertIdentifiers(texts ...string) []string {
	return Identifiers(strings.Join(texts, " \n "), 4)
}

// metricSuffix: v ends like a metric name (a unit or a counter suffix).
func metricSuffix(v string) bool {
	for _, suf := range []string{"_total", "_seconds", "_bytes", "_count", "_bucket", "_sum", "_ratio", "_percent", "_info"} {
		if strings.HasSuffix(v, suf) {
			return true
		}
	}
	return false
}

// URLHosts are the hosts of the http(s) URLs text names, lower-cased, at
// most n (n <= 0: all), whether they link to a monitoring system or not.
func URLHosts(text string, n int) []string {
	var out []string
	for _, m := range reURLHost.FindAllStringSubmatch(text, n) {
		if h := strings.TrimRight(strings.ToLower(m[1]), ".-"); len(h) >= 4 {
			out = append(out, h)
		}
	}
	return out
}

// namesWorkload: es names a service, workload or pod.
// keyedWorkload: a key of the alert (a label, an annotation, a tag, a
// host that is a pod) names a workload or pod.
func keyedWorkload(es []Entity) bool {
	for _, e := range es {
		switch e.Kind {
		case Pod, Service, Deployment, StatefulSet, DaemonSet, Job, CronJob:
			if !strings.HasPrefix(e.From, "text:") && !strings.HasPrefix(e.From, "url:") && e.From != "job" {
				return true
			}
		}
	}
	return false
}

func namesWorkload(es []Entity) bool {
	for _, e := range es {
		switch e.Kind {
		case Pod, Service, Deployment, StatefulSet, DaemonSet, Job, CronJob:
			return true
		}
	}
	return false
}

// monitoringAgents are name parts of the agents that report on other
// targets (their scrape job names the reporter, not what it reports on).
var monitoringAgents = []string{"exporter", "kube-state-metrics", "kube_state_metrics", "blackbox", "kubelet", "cadvisor", "prometheus", "pushgateway", "apiserver", "probe", "federate", "node-problem-detector", "otel-collector", "opentelemetry-collector", "telegraf", "agent"}

func monitoringAgent(job string) bool {
	j := strings.ToLower(job)
	for _, a := range monitoringAgents {
		if strings.Contains(j, a) {
			return true
		}
	}
	return false
}

// linkField: an annotation holding a link (generator, runbook, dashboard,
// silence URL).
func linkField(field string) bool {
	f := Fold(field)
	return strings.HasSuffix(f, "url") || strings.HasSuffix(f, "link") || strings.HasSuffix(f, "_uri") || strings.HasSuffix(f, "href")
}

// First is the first entity of kind, "" when none.
func First(es []Entity, k Kind) string {
	for _, e := range es {
		if e.Kind == k {
			return e.Value
		}
	}
	return ""
}

// Values lists every distinct value of kind, in order.
func Values(es []Entity, k Kind) []string {
	var out []string
	for _, e := range es {
		if e.Kind == k {
			out = append(out, e.Value)
		}
	}
	return out
}

// Missing returns, for each kind the labels do not name under any
// spelling, the entity found elsewhere (annotations, texts, URLs). The
// caller writes them as labels under CanonicalKey so that every later
// stage reads one vocabulary. Values already named by a label are never
// overridden, and a kind found with two different values in free text is
// ambiguous and left out.
func Missing(labels map[string]string, es []Entity) map[Kind]Entity {
	have := map[Kind]bool{}
	for k, v := range labels {
		if kk := KindOf(k); kk != "" && strings.TrimSpace(v) != "" {
			have[kk] = true
		}
	}
	out := map[Kind]Entity{}
	ambiguous := map[Kind]bool{}
	explicit := map[Kind]bool{} // named by a key=value pair or an annotation key
	for _, e := range es {
		if !strings.HasPrefix(e.From, "url:") {
			explicit[e.Kind] = true
		}
	}
	for _, e := range es {
		if have[e.Kind] || strings.HasPrefix(e.From, "label:") {
			continue
		}
		if strings.HasPrefix(e.From, "url:") && explicit[e.Kind] {
			continue // a URL host yields to an explicit key=value
		}
		if prev, ok := out[e.Kind]; ok {
			switch {
			case prev.Value == e.Value || strings.HasPrefix(prev.From, "annotation:"):
			case e.Rank < prev.Rank:
				// A more specific spelling (db_instance over db_cluster)
				// decides between two values.
				out[e.Kind] = e
				delete(ambiguous, e.Kind)
			case e.Rank == prev.Rank:
				ambiguous[e.Kind] = true
			}
			continue
		}
		out[e.Kind] = e
	}
	for k := range ambiguous {
		delete(out, k)
	}
	return out
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the value of the first label naming kind, in the
// vocabulary's order of spellings (so `namespace` wins over
// `exported_namespace`), comparing folded keys.
func Lookup(labels map[string]string, k Kind) string {
	if len(labels) == 0 {
		return ""
	}
	folded := make(map[string]string, len(labels))
	for _, key := range sortedKeys(labels) { // deterministic when two spellings fold alike, as in Canonical
		if v := strings.TrimSpace(labels[key]); v != "" {
			fk := Fold(key)
			if _, dup := folded[fk]; !dup {
				folded[fk] = v
			}
		}
	}
	for _, row := range vocabulary {
		if row.kind != k {
			continue
		}
		for _, key := range row.keys {
			if v, ok := folded[key]; ok && (k != Namespace || ValidNamespace(v)) {
				return v
			}
		}
	}
	if k == Host {
		// A product's own spelling of the machine (opsview_host).
		for _, key := range sortedKeys(folded) {
			if KindOf(key) == Host {
				return folded[key]
			}
		}
	}
	return ""
}

// Canonical returns labels with the canonical key of every entity kind and
// of the request outcome added alongside the original spellings (an
// OpenTelemetry `k8s_pod_name` also reads as `pod`, `http_response_status_code`
// as `code`), so that readers written against one vocabulary read them all.
// Existing keys are never overwritten; labels without a known spelling come
// back unchanged (the same map).
func Canonical(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	folded := make(map[string]string, len(labels))
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic when two spellings fold alike
	for _, k := range keys {
		if v := labels[k]; v != "" {
			if _, dup := folded[Fold(k)]; !dup {
				folded[Fold(k)] = v
			}
		}
	}
	var add map[string]string
	set := func(ck, v string) {
		if _, ok := labels[ck]; ok {
			return
		}
		if add == nil {
			add = map[string]string{}
		}
		if _, ok := add[ck]; !ok {
			add[ck] = v // the first spelling in vocabulary order wins
		}
	}
	for _, row := range vocabulary {
		for _, key := range row.keys {
			if v, ok := folded[key]; ok {
				set(row.keys[0], v)
			}
		}
	}
	for _, key := range signal.CodeKeys {
		if v, ok := folded[key]; ok {
			set("code", v)
		}
	}
	if add == nil {
		return labels
	}
	out := make(map[string]string, len(labels)+len(add))
	for k, v := range labels {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

// Provider is the name an outside host's operator goes by: the label
// before its public suffix (mailvolt of api.mailvolt.example), the name its
// status page and its announcements use; "" for a name of the cluster
// (.svc, .local, .internal), an address, a bare name, or when it is the
// host itself.
func Provider(host string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !strings.Contains(host, ".") || net.ParseIP(host) != nil || strings.Contains(host, ".svc") || strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal") {
		return ""
	}
	etld1, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return ""
	}
	label := etld1[:strings.IndexByte(etld1, '.')]
	if len(label) < 4 || label == host {
		return ""
	}
	return label
}

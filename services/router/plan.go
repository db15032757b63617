package router

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/alertexpr"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/target"
)

// alertView is what the planner reads from an alert.
type alertView struct {
	alert      *investigationv1.Alert
	name       string
	text       string
	source     string
	rule       string // the alerting rule that fired, when named
	namespace  string
	service    string
	pod        string
	deployment string
	node       string
	dbInstance string
	kind       string
	errMsg     string
	sig        map[string]bool
	words      map[string]bool // words of text, built on first use
}

var alertSignals = map[string]*regexp.Regexp{
	"crash":      regexp.MustCompile(`crashloop|crash|back-?off restarting|restart|exit code|terminated`),
	"oom":        regexp.MustCompile(`\boom|out of memory|exit code 137|memory limit`),
	"imagepull":  regexp.MustCompile(`imagepull|errimagepull|image pull|pull access`),
	"scheduling": regexp.MustCompile(`\bpending\b|unschedulable|insufficient|failedscheduling|quota`),
	"probe":      regexp.MustCompile(`liveness|readiness|startup probe|probe fail`),
	"node":       regexp.MustCompile(`notready|node (?:not ?ready|down|unreachable|failure|pressure|lost)|disk ?pressure|memory ?pressure|pid ?pressure|kubelet (?:stopped|down|not)|cordon`),
	"rollout":    regexp.MustCompile(`rollout|progressdeadline|replicas? (?:unavailable|mismatch)|deployment (?:stuck|failed)|generation mismatch`),
	"dns":        regexp.MustCompile(`\bdns\b|nxdomain|no such host|name resolution|resolv|coredns`),
	"errors":     regexp.MustCompile(`5xx|\b50[0-4]\b|error rate|errors?\b|exception|failed|failure|stall(?:ed|s)?\b|stuck|has not (?:synced|processed|run)|no progress`),
	"http":       regexp.MustCompile(`\bhttp|5xx|\brequests?\b|endpoint|\bslo\b|availability|status code`),
	"latency":    regexp.MustCompile(`latency|p9[059]|slow|timeout|timed out|response time|duration`),
	"cpu":        regexp.MustCompile(`\bcpu|throttl|saturat|load average`),
	"memory":     regexp.MustCompile(`memory|\boom|heap|rss`),
	"traffic":    regexp.MustCompile(`traffic|throughput|\brps\b|\bqps\b|requests per`),
	"db":         regexp.MustCompile(`\b(?:rds|database|db|postgres(?:ql)?|mysql|aurora|mariadb|replication|replica ?lag|max_connections|connection slots|too many clients|deadlock|iops|failover|checkpoints?|sql|wal)\b`),
	"dbquery":    regexp.MustCompile(`quer(?:y|ies)|\bcpu|lock|deadlock|connections?|checkpoint|statement`),
	"dbevents":   regexp.MustCompile(`failover|reboot|maintenance|storage|replica|snapshot|restart|recover`),
	"synthetic":  regexp.MustCompile(`synthetic|browser test|api test|uptime check|blackbox`),
	"backlog":    regexp.MustCompile(`\blag\b|backlog|queue (?:depth|size)|consumer group|unprocessed`),
	"change":     regexp.MustCompile(`\bdeploy(?:s|ed|ing)?\b|\brelease[sd]?\b|new version|regression|\brollout|upgrade|\bcommit|config(?:uration)? change`),
}

var reNegated = regexp.MustCompile(`\b(?:no|zero|without|never|nor)\s+(?:pod-level\s+|kubernetes\s+|new\s+)?[a-z0-9_./-]+`)

var k8sSignals = []string{"crash", "oom", "imagepull", "scheduling", "probe", "rollout", "node"}

func lookup(a *investigationv1.Alert, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(a.GetLabels()[k]); v != "" {
			return v
		}
	}
	for _, k := range keys {
		if v := strings.TrimSpace(a.GetAnnotations()[k]); v != "" {
			return v
		}
	}
	return ""
}

// vocab reads an entity of kind from the alert's labels, then annotations,
// under any spelling of the shared vocabulary (internal/target).
func vocab(a *investigationv1.Alert, k target.Kind) string {
	return firstNonEmpty(target.Lookup(a.GetLabels(), k), target.Lookup(a.GetAnnotations(), k))
}

func viewAlert(a *investigationv1.Alert) *alertView {
	v := &alertView{sig: map[string]bool{}, alert: a}
	v.name = firstNonEmpty(a.GetAlertName(), lookup(a, "alertname"), a.GetTitle())
	v.source = strings.ToLower(a.GetAlertSource())
	v.rule = firstNonEmpty(a.GetAlertName(), lookup(a, "alertname"))
	v.namespace = firstNonEmpty(a.GetNamespace(), vocab(a, target.Namespace))
	v.pod = firstNonEmpty(a.GetPod(), vocab(a, target.Pod))
	v.service = firstNonEmpty(a.GetService(), vocab(a, target.Service), vocab(a, target.Deployment))
	v.deployment = vocab(a, target.Deployment)
	if v.deployment == "" && strings.EqualFold(lookup(a, "workload_type"), "deployment") {
		v.deployment = lookup(a, "workload_name")
	}
	v.node = vocab(a, target.Node)
	v.dbInstance = vocab(a, target.Database)
	v.kind = strings.ToLower(a.GetResourceKind())
	switch v.kind {
	case "pod":
		v.pod = firstNonEmpty(v.pod, a.GetResourceName())
	case "deployment":
		v.deployment = firstNonEmpty(v.deployment, a.GetResourceName())
	case "node":
		v.node = firstNonEmpty(v.node, a.GetResourceName())
	case "database", "db", "dbinstance", "db_instance", "rds":
		v.dbInstance = firstNonEmpty(v.dbInstance, a.GetResourceName())
	}
	if v.deployment != "" && v.service == "" {
		v.service = v.deployment
	}
	if v.service == "" {
		// A Kafka consumer group is named after the application consuming.
		v.service = lookup(a, "consumergroup", "consumer_group", "group")
	}
	if v.service == "" && v.pod != "" {
		if w, ok := facts.PodWorkload(v.pod); ok {
			v.service = w
		}
	}
	v.errMsg = firstNonEmpty(a.GetErrorMessage(), lookup(a, "error", "message"))
	var b strings.Builder
	for _, s := range []string{v.name, a.GetTitle(), a.GetSummary(), a.GetDescription(), a.GetErrorMessage(), a.GetResourceKind()} {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	for _, m := range []map[string]string{a.GetLabels(), a.GetAnnotations()} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(m[k]) // values only: keys like "error" are not symptoms
			b.WriteByte('\n')
		}
	}
	v.text = strings.ToLower(b.String())
	// "no ImagePullBackOff observed", "zero restarts": a negated symptom is not a signal.
	signalText := reNegated.ReplaceAllString(v.text, " ")
	for name, re := range alertSignals {
		if re.MatchString(signalText) {
			v.sig[name] = true
		}
	}
	if v.dbInstance != "" {
		v.sig["db"] = true
	}
	if strings.Contains(strings.ToLower(v.name), "node") || (v.node != "" && v.kind == "node") {
		v.sig["node"] = true
	}
	if v.sig["db"] && v.node == "" && v.namespace == "" && v.pod == "" {
		delete(v.sig, "node") // "disk pressure" on a managed database is not a Kubernetes node
	}
	return v
}

func (v *alertView) any(names ...string) bool {
	for _, n := range names {
		if v.sig[n] {
			return true
		}
	}
	return false
}

func (v *alertView) k8s() bool { return v.any(k8sSignals...) }

// dbOnly: the alert is about a database and names no Kubernetes namespace,
// pod or node (a managed database alerted by Datadog, CloudWatch, ...).
func (v *alertView) dbOnly() bool {
	return v.sig["db"] && v.namespace == "" && v.pod == "" && v.node == ""
}

func (v *alertView) signalList() []string {
	var out []string
	for n := range v.sig {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (v *alertView) target() metricTarget {
	return metricTarget{Namespace: v.namespace, Service: v.service, Pod: v.pod}
}

// scored is one tool scored against an alert.
type scored struct {
	call      *Call
	score     float64
	rationale []string
	worker    string
	order     int
}

func (s *scored) add(w float64, why string) {
	s.score += w
	s.rationale = append(s.rationale, why)
}

// categoryPriority is the relevance ranking used when nothing scores.
func categoryPriority(t *evidencev1.ToolDefinition) int {
	switch t.GetCategory() {
	case evidencev1.ToolCategory_TOOL_CATEGORY_CLUSTER:
		return 0
	case evidencev1.ToolCategory_TOOL_CATEGORY_LOGS:
		return 1
	case evidencev1.ToolCategory_TOOL_CATEGORY_METRICS:
		return 2
	case evidencev1.ToolCategory_TOOL_CATEGORY_CODE:
		return 3
	case evidencev1.ToolCategory_TOOL_CATEGORY_NETWORK:
		return 4
	}
	return 5
}

func workerOf(t *evidencev1.ToolDefinition) string {
	in := t.GetIntent()
	switch {
	case strings.Contains(in, "db_"):
		return "database"
	case strings.Contains(in, "deploy_history") || strings.Contains(in, "commit"):
		return "git_scout"
	case strings.Contains(in, "prometheus") || t.GetCategory() == evidencev1.ToolCategory_TOOL_CATEGORY_METRICS:
		return "metric_analyst"
	case t.GetCategory() == evidencev1.ToolCategory_TOOL_CATEGORY_LOGS:
		return "logs"
	case t.GetCategory() == evidencev1.ToolCategory_TOOL_CATEGORY_CODE:
		return "git_scout"
	}
	return "k8s"
}

// errorQuery picks a log search query from the alert's error text: a
// specific failure keyword when it names one, else "error".
func errorQuery(v *alertView) string {
	if v.sig["dns"] {
		return dnsQuery
	}
	text := strings.ToLower(v.errMsg + " " + v.text)
	for _, kw := range []string{"timeout", "timed out", "connection refused", "exception", "panic", "deadlock", "out of memory", "too many clients"} {
		if strings.Contains(text, kw) {
			if strings.Contains(kw, " ") {
				return `"` + kw + `"`
			}
			return kw
		}
	}
	if v.pod != "" || v.service != "" {
		// The scope (service, pod) is narrow already and the alert names no
		// failure keyword: every line of it, errors first (the tool ranks
		// them), shows both failures and the absence of any.
		return "*"
	}
	if ing := lookup(alertOf(v), "ingress"); ing != "" && !strings.ContainsAny(ing, ` "()`) {
		// The proxy names the ingress's backend in lines that carry no
		// error word ("does not have any active Endpoint").
		return "error OR " + ing
	}
	if v.namespace != "" {
		// A namespace is narrow enough to read whole: what the errors do
		// not say (a change record, a drill, a cleanup) is logged at INFO.
		return "*"
	}
	return "error"
}

// scoreTool scores one available tool against the alert and fills its params.
func scoreTool(t *evidencev1.ToolDefinition, v *alertView) *scored {
	c := &Call{Tool: t, Params: map[string]any{}}
	s := &scored{call: c, worker: workerOf(t)}
	hasNS := v.namespace != ""
	workload := firstNonEmpty(v.pod, v.deployment, v.service)
	switch t.GetIntent() {
	case "check_pod_status", "list_pods":
		w := 3.0
		if t.GetIntent() == "list_pods" {
			w = 2
		}
		if hasNS && v.k8s() {
			s.add(w, "Kubernetes failure signals ("+strings.Join(v.matching(k8sSignals...), ", ")+") in namespace "+v.namespace)
		} else if hasNS && v.any("errors", "latency", "dns") {
			s.add(1, "namespace "+v.namespace+" is known: pod health rules out restarts")
		}
		c.set(v.namespace, "namespace")
	case "get_recent_changes":
		// "What changed?" is asked of every incident: object edits
		// anywhere in the cluster (a scaler in the consumer's namespace, a
		// cluster-scoped priority class or node label) reach the alerted
		// entity through references, so the sweep is cluster-wide.
		if !v.scoped() {
			s.add(baselineScore, "objects created or edited before the onset, cluster-wide")
		}
		c.set("all", "namespace")
	case "list_jobs":
		if v.dbOnly() {
			// A managed database has no namespace: what ran against it
			// around the onset (nightly batch, migrations) is cluster-wide.
			s.add(1.4, "batch Jobs and CronJobs across namespaces that ran around the onset on database "+v.dbInstance)
			c.set("all", "namespace")
			break
		}
		c.set(v.namespace, "namespace")
	case "get_events":
		if v.dbOnly() {
			s.add(1.2, "recent events across namespaces: what started, finished or failed around the onset on database "+v.dbInstance)
			c.set("all", "namespace")
			break
		}
		if !hasNS && v.node != "" && v.sig["node"] {
			// Node conditions and the evictions they cause: node events and
			// pod events live in different namespaces.
			s.add(3, "events of node "+v.node+" and of the pods it evicted")
			c.set("all", "namespace")
			break
		}
		if hasNS && v.any(append(k8sSignals, "dns")...) {
			s.add(3, "Kubernetes events explain "+strings.Join(v.matching(append(k8sSignals, "dns")...), ", "))
		} else if hasNS {
			s.add(0.5, "namespace "+v.namespace+" is known")
		}
		c.set(v.namespace, "namespace")
		if v.pod != "" {
			c.set("pod/"+v.pod, "involved_object")
		}
	case "fetch_pod_logs":
		if workload != "" && hasNS {
			switch {
			case v.any("crash", "oom", "probe"):
				s.add(4, "the crashed container's logs show why it died")
				c.set(true, "previous")
			case v.any("errors", "dns", "latency"):
				s.add(2, "application logs of "+workload+" show the errors")
			case v.sig["backlog"]:
				s.add(2, "the consumer's logs show why it falls behind")
			case v.sig["memory"]:
				s.add(2, "the application logs of "+workload+" show what it retains (GC pauses, cache growth)")
			}
		}
		pod := v.pod
		if pod == "" && workload != "" {
			pod = strings.TrimRight(workload, "-") + "-*"
		}
		c.set(pod, "pod")
		c.set(v.namespace, "namespace")
	case "describe_resource":
		switch {
		case v.node != "" && v.sig["node"]:
			s.add(3, "node conditions of "+v.node)
			c.set("node", "kind")
			c.set(v.node, "name", "resource_name")
		case v.pod != "" && v.any("oom", "crash", "imagepull", "scheduling", "probe"):
			s.add(3, "pod spec and status (limits, probes, last state) of "+v.pod)
			c.set("pod", "kind")
			c.set(v.pod, "name", "resource_name")
		case v.deployment != "" && v.any("rollout", "crash", "imagepull", "scheduling", "oom", "probe"):
			s.add(2.5, "deployment status and rollout conditions of "+v.deployment)
			c.set("deployment", "kind")
			c.set(v.deployment, "name", "resource_name")
		case lookup(alertOf(v), "ingress") != "" && hasNS && v.any("errors", "http", "latency"):
			// An ingress failing its requests: its backend Services and
			// their endpoints come first (no endpoints answers 503).
			ing := lookup(alertOf(v), "ingress")
			s.add(3, "ingress "+ing+", its backend services and their endpoints")
			c.set("ingress", "kind")
			c.set(ing, "name", "resource_name")
		}
		c.set(v.namespace, "namespace")
	case "search_logs":
		if v.dbOnly() && v.dbInstance != "" {
			// The database's clients log its name: who talks to it, and
			// what they reported around the onset, in any namespace.
			s.add(1.2, "logs across namespaces that name database "+v.dbInstance)
			c.set(`"`+strings.ReplaceAll(v.dbInstance, `"`, ``)+`"`, "query")
			break
		}
		switch {
		case v.sig["dns"]:
			s.add(3, "DNS failures show up in the logs")
		case (v.service != "" || hasNS) && v.any("errors", "latency", "http") && !v.sig["db"]:
			s.add(2, "log search for the alert's error text")
		case v.sig["db"] && v.errMsg != "":
			s.add(1, "client-side logs of the database error")
		case v.service == "" && v.pod == "" && !hasNS && v.any("errors", "latency", "http"):
			// No workload and no namespace (an uptime check, a business
			// monitor): what failed is in the errors logged across the
			// cluster around the onset.
			s.add(1.5, "errors logged across the cluster around the onset")
		}
		if loc := lookup(alertOf(v), "synthetics_location", "location", "probe_location"); v.sig["synthetic"] && loc != "" {
			// The synthetic runner logs the check, not the service: search
			// for the failing location across services.
			s.add(2, "the synthetic check's own runs in "+loc)
			c.set(`"`+strings.ReplaceAll(loc, `"`, ``)+`"`, "query")
			break
		}
		if names := v.namedObjects(); v.service == "" && v.pod == "" && len(names) > 0 {
			// No workload to scope by: the logs that name what the alert
			// is about (a node, a queue, a host), wherever they are.
			s.add(1.5, "logs across the cluster that name "+strings.Join(names, ", "))
			q := make([]string, len(names))
			for i, n := range names {
				q[i] = `"` + n + `"`
			}
			c.set(strings.Join(q, " OR "), "query")
			c.set("all", "namespace")
			break
		}
		c.set(errorQuery(v), "query")
		if lookup(alertOf(v), "ingress") == "" || v.service != "" || v.pod != "" {
			// An ingress's proxy logs live in the controller's namespace,
			// not the application's: search them cluster-wide.
			c.set(v.namespace, "namespace")
		}
		c.set(v.service, "service")
	case "query_prometheus":
		if e, ok := alertCondition(v.alert); ok {
			// The alert's own expression, measured over the window: when
			// its condition started, whether it still holds.
			s.add(4, "the alert's own expression ("+e.From+"): whether its condition still holds")
			c.set(e.Measure, "query")
			break
		}
		kind := ""
		switch {
		case v.sig["latency"] && v.any("http") && !v.sig["db"]:
			kind = promLatency
		case v.sig["errors"] && v.sig["http"] && !v.sig["db"]:
			kind = promErrorRate
		case v.sig["cpu"] && !v.sig["db"]:
			kind = promCPU
		case v.sig["memory"] && !v.sig["db"]:
			kind = promMemory
		case v.sig["traffic"] && !v.sig["db"]:
			kind = promRequests
		case v.any("crash") && !v.sig["db"]:
			kind = promRestarts
		}
		if kind != "" && (v.service != "" || hasNS) {
			w := 3.0
			if kind == promRestarts {
				w = 1.5
			}
			s.add(w, "metric shape ("+strings.ReplaceAll(kind, "_", " ")+") around the onset")
			if strings.Contains(v.source, "prometheus") || strings.Contains(v.source, "alertmanager") || strings.Contains(v.source, "grafana") {
				s.add(1, "the alert came from "+v.source)
			}
			c.set(promQL(kind, v.target(), ""), "query")
		}
	case "survey_metrics":
		switch {
		case v.node != "" && v.sig["node"]:
			s.add(2.5, "discover which resource metrics of node "+v.node+" changed, without assuming metric names")
			c.set(v.node, "node")
		case v.service != "" || hasNS || v.pod != "":
			if !v.sig["db"] || v.namespace != "" {
				s.add(2.5, "discover which metrics of "+firstNonEmpty(v.service, v.pod, v.namespace)+" changed around the onset, without assuming metric names")
			}
		}
		c.set(v.namespace, "namespace")
		c.set(v.service, "service")
	case "get_deploy_history":
		if v.service != "" && !v.sig["db"] {
			switch {
			case v.sig["change"] || v.sig["rollout"]:
				s.add(3, "the alert mentions a change; deploys near the onset are suspects")
			case v.any("errors", "latency", "crash", "oom", "http"):
				s.add(2.5, "a deploy near the onset is the most common cause of "+strings.Join(v.matching("errors", "latency", "crash", "oom"), "/"))
			}
		}
		c.set(v.service, "service")
		c.set(v.namespace, "namespace")
	case "get_commits":
		if v.service != "" && !v.sig["db"] && (v.sig["change"] || v.any("errors", "latency", "oom", "crash")) {
			s.add(1.5, "commit summaries of "+v.service+" tell what a deploy changed")
		}
		// Every commit of the service: a change-type filter from the alert's
		// wording would hide the red herrings the diagnosis must rule out
		// (and dependency bumps that do break things).
		c.set(v.service, "service")
	case "list_deployments":
		if hasNS && v.sig["rollout"] {
			s.add(2, "rollout state of the namespace's deployments")
		} else if hasNS && v.k8s() {
			s.add(1, "replica counts show how many pods are affected")
		}
		c.set(v.namespace, "namespace")
	case "get_node_health", "check_node_health":
		switch {
		case v.sig["node"]:
			s.add(4, "node conditions and pressure")
		case v.sig["scheduling"]:
			s.add(2, "node capacity explains scheduling failures")
		case hasNS && v.any("errors", "latency", "crash", "oom", "http", "memory", "cpu") && !v.sig["db"]:
			s.add(0.75, "node conditions rule the infrastructure in or out")
		}
		// Every node: the healthy ones rule a cluster-wide problem out (the
		// alerted node is described on its own).
	case "query_db_metrics":
		if v.sig["db"] {
			s.add(4, "database metrics ("+firstNonEmpty(v.dbInstance, "instance unknown")+") show saturation and lag")
		}
		c.set(v.dbInstance, "instance", "db_instance", "db_instance_identifier", "instance_id")
	case "get_db_top_queries":
		if v.sig["db"] && v.sig["dbquery"] {
			s.add(3, "top queries show which statements load the database")
		} else if v.sig["db"] {
			s.add(1.5, "top queries rule query load in or out")
		}
		c.set(v.dbInstance, "instance", "db_instance", "db_instance_identifier", "instance_id")
	case "get_db_events":
		if v.sig["db"] && v.sig["dbevents"] {
			s.add(3, "database events (failover, storage, maintenance) around the onset")
		} else if v.sig["db"] {
			s.add(1.5, "database events rule out failover and maintenance")
		}
		c.set(v.dbInstance, "instance", "db_instance", "db_instance_identifier", "instance_id")
	case "list_monitors":
		if v.rule != "" {
			s.add(0.5, "the rule "+v.rule+" behind the alert: its condition, state and sibling monitors")
		}
	case "get_status_page":
		// An alert about failures that names a host outside the cluster
		// (a dependency's address, a checked URL): its provider's public
		// status page says whether the outage is on its side. Low: it
		// adds to the plan, never displaces a specific reason.
		if p := v.outsideProvider(); p != "" && v.any("errors", "latency", "dns", "synthetic") {
			s.add(0.5, "the alert names a host outside the cluster: the status page of "+p)
			c.set(p, "provider")
		}
	case "check_dns":
		if v.sig["dns"] {
			s.add(4, "DNS resolution checks")
		}
		c.set(v.namespace, "namespace")
	case "re_investigate_service", "get_commit_diff":
		// needs a decision (another service, a commit) the alert does not make
	default:
		overlap := keywordOverlap(t, v)
		if len(overlap) > 0 {
			s.add(float64(min(len(overlap), 2)), "tool description matches the alert ("+strings.Join(overlap, ", ")+")")
		}
		c.set(v.namespace, "namespace")
		c.set(v.service, "service")
		c.set(v.pod, "pod")
	}
	if why, ok := baselineSweep[t.GetIntent()]; ok && s.score == 0 && v.scoped() {
		// Whatever the alert says, an SRE looking at a known workload
		// checks what is failing, what the logs say, what changed and
		// which metrics moved: a floor that never outranks a specific
		// reason, so an alert whose wording names no known signal still
		// gathers every kind of evidence.
		s.add(baselineScore, "baseline sweep: "+why)
	}
	return s
}

// baselineScore is the floor score of a baseline-sweep tool (below every
// signal-specific reason).
const baselineScore = 0.3

// baselineSweep: the evidence families every investigation of a known
// workload gathers, with why.
var baselineSweep = map[string]string{
	"check_pod_status":   "pod health of the workload",
	"get_events":         "warning events around the onset",
	"fetch_pod_logs":     "the workload's own logs",
	"search_logs":        "log search for the workload's errors",
	"survey_metrics":     "which of its metrics moved",
	"get_deploy_history": "what was deployed before the onset",
	"get_commits":        "what the recent commits changed",
	"get_recent_changes": "which objects were created or edited before the onset",
}

// scoped: the alert names a workload (service or pod) in a known namespace,
// and is not only about a managed database.
func (v *alertView) scoped() bool {
	return (v.service != "" || v.pod != "") && v.namespace != "" && !v.dbOnly()
}

func (v *alertView) matching(names ...string) []string {
	var out []string
	for _, n := range names {
		if v.sig[n] {
			out = append(out, n)
		}
	}
	return out
}

func keywordOverlap(t *evidencev1.ToolDefinition, v *alertView) []string {
	if v.words == nil {
		v.words = map[string]bool{}
		for _, w := range reWord.FindAllString(v.text, -1) {
			v.words[w] = true
		}
	}
	alertWords := v.words
	words := reWord.FindAllString(strings.ToLower(t.GetDescription()+" "+t.GetLabel()+" "+strings.ReplaceAll(t.GetIntent(), "_", " ")), -1)
	var out []string
	seen := map[string]bool{}
	for _, w := range words {
		if len(w) < 4 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		if alertWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// missingRequired lists the required parameters a planned call lacks.
func missingRequired(c *Call) []string {
	var out []string
	for _, p := range c.Tool.GetParamsSchema() {
		if _, ok := c.Params[p.GetName()]; !ok && p.GetRequired() {
			out = append(out, p.GetName())
		}
	}
	return out
}

// scoreAll scores every available tool, best first.
func scoreAll(reg *Registry, v *alertView) []*scored {
	var out []*scored
	for i, t := range reg.Tools {
		if !t.GetAvailable() {
			continue
		}
		s := scoreTool(t, v)
		s.order = i
		if s.score > 0 {
			if miss := missingRequired(s.call); len(miss) > 0 {
				s.score /= 2
				s.rationale = append(s.rationale, "needs "+strings.Join(miss, ", ")+" (not in the alert)")
			}
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		pi, pj := categoryPriority(out[i].call.Tool), categoryPriority(out[j].call.Tool)
		if pi != pj {
			return pi < pj
		}
		return out[i].order < out[j].order
	})
	return out
}

// Plan scores the registry against an alert and keeps the top budget tools.
func Plan(reg *Registry, alert *investigationv1.Alert, budget int) (*investigationv1.TaskPlan, []*investigationv1.GuardrailTrip, error) {
	v := viewAlert(alert)
	all := scoreAll(reg, v)
	var positive []*scored
	for _, s := range all {
		if s.score > 0 {
			positive = append(positive, s)
		}
	}
	plan := &investigationv1.TaskPlan{ToolBudget: int32(budget)}
	chosen := positive
	var trips []*investigationv1.GuardrailTrip
	if len(positive) == 0 {
		plan.Fallback = true
		chosen = nil
		for _, s := range all {
			if s.call.Tool.GetIntent() == "re_investigate_service" || s.call.Tool.GetIntent() == "get_commit_diff" {
				continue
			}
			s.rationale = []string{fmt.Sprintf("fallback: no tool matched the alert's signals; category default (%s)",
				strings.ToLower(strings.TrimPrefix(s.call.Tool.GetCategory().String(), "TOOL_CATEGORY_")))}
			if miss := missingRequired(s.call); len(miss) > 0 {
				s.rationale = append(s.rationale, "needs "+strings.Join(miss, ", "))
			}
			chosen = append(chosen, s)
		}
		sort.SliceStable(chosen, func(i, j int) bool {
			mi, mj := len(missingRequired(chosen[i].call)), len(missingRequired(chosen[j].call))
			if (mi == 0) != (mj == 0) {
				return mi == 0
			}
			return categoryPriority(chosen[i].call.Tool) < categoryPriority(chosen[j].call.Tool)
		})
	}
	if len(chosen) > budget {
		var dropped []string
		for _, s := range chosen[budget:] {
			dropped = append(dropped, s.call.Tool.GetIntent())
		}
		trips = append(trips, guardrail.Trip(GuardrailToolBudget,
			fmt.Sprintf("%d tools were relevant; kept the top %d, dropped %s", len(chosen), budget, strings.Join(dropped, ", ")),
			float64(budget), float64(len(chosen)), time.Now()))
		chosen = chosen[:budget]
	}
	for _, s := range chosen {
		params, err := paramsStruct(s.call.Params)
		if err != nil {
			return nil, nil, err
		}
		plan.Actions = append(plan.Actions, &investigationv1.PlannedAction{
			Intent:    s.call.Tool.GetIntent(),
			Params:    params,
			Score:     s.score,
			Rationale: strings.Join(s.rationale, "; "),
			Worker:    s.worker,
		})
	}
	var ctxParts []string
	for _, kv := range [][2]string{{"namespace", v.namespace}, {"service", v.service}, {"pod", v.pod}, {"node", v.node}, {"db instance", v.dbInstance}} {
		if kv[1] != "" {
			ctxParts = append(ctxParts, kv[0]+" "+kv[1])
		}
	}
	sigs := strings.Join(v.signalList(), ", ")
	if sigs == "" {
		sigs = "none recognised"
	}
	plan.Rationale = fmt.Sprintf("alert %q; signals: %s; entities: %s; %d of %d available tools scored above 0, planned %d (budget %d)",
		v.name, sigs, firstNonEmpty(strings.Join(ctxParts, ", "), "none"), len(positive), len(all), len(plan.Actions), budget)
	if plan.Fallback {
		plan.Rationale += "; fallback to the category relevance ranking"
	}
	return plan, trips, nil
}

// PlanActions scores the tools against an alert and keeps the top tool_budget.
func (s *Service) PlanActions(ctx context.Context, req *routerv1.PlanActionsRequest) (*routerv1.PlanActionsResponse, error) {
	if req.GetAlert() == nil {
		return nil, status.Error(codes.InvalidArgument, "alert is required")
	}
	if req.GetToolBudget() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "tool_budget must be >= 0, got %d", req.GetToolBudget())
	}
	budget := s.cfg.ToolBudget
	if req.GetToolBudget() > 0 {
		budget = int(req.GetToolBudget())
	}
	reg, err := s.registry(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	plan, trips, err := Plan(reg, req.GetAlert(), budget)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &routerv1.PlanActionsResponse{Plan: plan, Trips: trips, Limits: &investigationv1.Guardrails{ToolBudget: int32(budget)}}, nil
}

// Selection is the outcome of SelectTools.
type Selection struct {
	Tools   []*evidencev1.ToolDefinition
	Dropped []string
	Trips   []*investigationv1.GuardrailTrip
}

// Select narrows the registry to the schemas a model may see: planned tools
// first, then the most relevant primary tools, with up to reserve slots kept
// for secondary tools; never more than maxSchemas.
func Select(reg *Registry, plan *investigationv1.TaskPlan, alert *investigationv1.Alert, maxSchemas, reserve int) Selection {
	reserve = min(reserve, maxSchemas)
	var ranked []*evidencev1.ToolDefinition
	if alert != nil {
		for _, s := range scoreAll(reg, viewAlert(alert)) {
			ranked = append(ranked, s.call.Tool)
		}
	} else {
		for _, t := range reg.Tools {
			if t.GetAvailable() {
				ranked = append(ranked, t)
			}
		}
		sort.SliceStable(ranked, func(i, j int) bool { return categoryPriority(ranked[i]) < categoryPriority(ranked[j]) })
	}
	used := map[string]bool{}
	var planned, primary, secondary []*evidencev1.ToolDefinition
	for _, a := range plan.GetActions() {
		t, ok := reg.Tool(a.GetIntent())
		if !ok || !t.GetAvailable() || used[t.GetIntent()] {
			continue
		}
		used[t.GetIntent()] = true
		planned = append(planned, t)
	}
	for _, t := range ranked {
		if used[t.GetIntent()] {
			continue
		}
		used[t.GetIntent()] = true
		if t.GetSecondary() {
			secondary = append(secondary, t)
		} else {
			primary = append(primary, t)
		}
	}
	keep := min(reserve, len(secondary))
	primarySlots := maxSchemas - keep
	var sel Selection
	taken := map[string]bool{}
	take := func(ts []*evidencev1.ToolDefinition, limit int) {
		for _, t := range ts {
			if len(sel.Tools) >= limit {
				return
			}
			if !taken[t.GetIntent()] {
				taken[t.GetIntent()] = true
				sel.Tools = append(sel.Tools, t)
			}
		}
	}
	take(planned, primarySlots)
	take(primary, primarySlots)
	take(secondary[:keep], len(sel.Tools)+keep)
	take(primary, maxSchemas)
	take(secondary, maxSchemas)
	total := len(planned) + len(primary) + len(secondary)
	var droppedSecondary int
	for _, group := range [][]*evidencev1.ToolDefinition{planned, primary, secondary} {
		for _, t := range group {
			if !taken[t.GetIntent()] {
				sel.Dropped = append(sel.Dropped, t.GetIntent())
				if t.GetSecondary() {
					droppedSecondary++
				}
			}
		}
	}
	now := time.Now()
	if len(sel.Dropped) > 0 {
		sel.Trips = append(sel.Trips, guardrail.Trip(GuardrailMaxToolSchemas,
			fmt.Sprintf("%d tools available; offered %d, dropped %s", total, len(sel.Tools), strings.Join(sel.Dropped, ", ")),
			float64(maxSchemas), float64(total), now))
	}
	if droppedSecondary > 0 && len(secondary) > reserve {
		sel.Trips = append(sel.Trips, guardrail.Trip(GuardrailSecondaryReserve,
			fmt.Sprintf("%d secondary tools; the reserve keeps %d, %d dropped", len(secondary), reserve, droppedSecondary),
			float64(reserve), float64(len(secondary)), now))
	}
	return sel
}

// SelectTools narrows the registry to the schemas the ReAct loop may send a model.
func (s *Service) SelectTools(ctx context.Context, req *routerv1.SelectToolsRequest) (*routerv1.SelectToolsResponse, error) {
	if req.GetMaxSchemas() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_schemas must be >= 0, got %d", req.GetMaxSchemas())
	}
	maxSchemas := s.cfg.MaxToolSchemas
	if req.GetMaxSchemas() > 0 {
		maxSchemas = int(req.GetMaxSchemas())
	}
	reserve := min(s.cfg.SecondaryReserve, maxSchemas)
	reg, err := s.registry(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	sel := Select(reg, req.GetPlan(), req.GetAlert(), maxSchemas, reserve)
	return &routerv1.SelectToolsResponse{
		Tools:            sel.Tools,
		Dropped:          sel.Dropped,
		MaxSchemas:       int32(maxSchemas),
		SecondaryReserve: int32(reserve),
		Trips:            sel.Trips,
		Limits:           &investigationv1.Guardrails{MaxToolSchemas: int32(maxSchemas), SecondaryToolReserve: proto.Int32(int32(reserve))},
	}, nil
}

func alertOf(v *alertView) *investigationv1.Alert { return v.alert }

// alertCondition is the PromQL condition the alert carries (an expression
// annotation, or a description that is only the expression).
func alertCondition(a *investigationv1.Alert) (alertexpr.Expr, bool) {
	if a == nil {
		return alertexpr.Expr{}, false
	}
	return alertexpr.Find(a.GetAnnotations(), map[string]string{"summary": a.GetSummary(), "description": a.GetDescription()})
}

// searchableKinds are the entities whose names appear in other systems'
// logs (a node in the cloud's operation log, a queue in its consumers'); a
// host is left to the error search, whose lines name the backend rather
// than the public host.
var searchableKinds = map[target.Kind]bool{
	target.Node: true, target.Queue: true, target.ConsumerGroup: true,
	target.Database: true, target.Job: true, target.CronJob: true,
}

// namedObjects are the searchable entity names the alert's labels and
// annotations carry (at most three, safe to quote in a query).
func (v *alertView) namedObjects() []string {
	var out []string
	for _, e := range target.Extract(v.alert.GetLabels(), v.alert.GetAnnotations(), target.Fields{}) {
		if !searchableKinds[e.Kind] || len(e.Value) < 3 || strings.ContainsAny(e.Value, "\"\\ ()") || len(out) >= 3 {
			continue
		}
		out = append(out, e.Value)
	}
	if len(out) == 0 && v.service == "" && v.pod == "" && v.namespace == "" {
		// Nothing typed: the names the alert's own title gives what it
		// watches ("lag pg-crew-delayed", "Queue 'reminders'").
		for _, id := range target.AlertIdentifiers(v.alert.GetAlertName(), v.alert.GetTitle(), v.alert.GetSummary(), v.alert.GetDescription()) {
			if !strings.EqualFold(id, v.alert.GetAlertName()) && len(out) < 3 {
				out = append(out, id) // the whole alert name is searched as the alert's own record
			}
		}
	}
	return out
}

// outsideProvider is the provider (target.Provider) of the first host
// outside the cluster the alert names, in its labels, annotations or texts;
// "" when it names none.
func (v *alertView) outsideProvider() string {
	a := v.alert
	texts := target.Fields{"title": a.GetTitle(), "summary": a.GetSummary(), "description": a.GetDescription(), "error": a.GetErrorMessage()}
	for _, h := range target.Values(target.Extract(a.GetLabels(), a.GetAnnotations(), texts), target.Host) {
		if p := target.Provider(h); p != "" {
			return p
		}
	}
	return ""
}

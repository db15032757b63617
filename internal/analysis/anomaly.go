package analysis

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/signal"
)

// ModeAnomaly is the evidence-driven fallback: no specific detector reached
// its bar, so the diagnosis names the entity with the strongest abnormal
// signals and describes them with their numbers.
const ModeAnomaly = "anomaly_summary"

const (
	// anomalyMinStrength: a candidate weaker than this is not worth naming.
	anomalyMinStrength = 0.02
	// changeLookback: a deploy or rollout this long before the onset is
	// the nearest preceding change.
	changeLookback = 2 * time.Hour
	// specificLookback: a change whose own identifiers recur in the
	// symptoms is a candidate this long before the onset.
	specificLookback = 24 * time.Hour
	// alertedBonus: what being the alerting entity adds to a candidate's
	// strength.
	alertedBonus = 0.1
)

// candidate is one entity and the abnormal signals attributed to it.
type candidate struct {
	entity, name, kind string // kind: workload, node, dependency, database
	errLines           []LogLine
	events             []Event
	restarts           int32
	notReady           []Pod
	badPods            []Pod
	changes            []seriesChange
	dbEvents           []DBEvent
	callers            []string // dependency: who names it in errors
	conditions         []condOf // abnormal conditions of its rollout
	atLimit            int      // its measurements at their published limit
	strength           float64
	kinds              map[string]bool // independent evidence kinds: logs, events, pods, metrics
}

// transientOnly: the candidate's only signals are series that spiked and
// came back to their level; no error line, event, restart, unready or
// failed pod, abnormal condition or database event.
func (c *candidate) transientOnly() bool {
	if len(c.changes) == 0 || len(c.errLines) > 0 || len(c.events) > 0 || c.restarts > 0 || len(c.notReady) > 0 || len(c.badPods) > 0 || len(c.conditions) > 0 || len(c.dbEvents) > 0 {
		return false
	}
	for _, ch := range c.changes {
		if ch.r.shape != "spike" || math.Abs(ch.r.tail-ch.r.head) > 0.3*math.Max(math.Abs(ch.r.head), math.Abs(ch.r.peak-ch.r.head)) {
			return false
		}
	}
	return true
}

// failed reports whether anything of the candidate failed: an error line,
// a Warning event, a restart, an unready or failed pod, an abnormal
// condition, a database event, or an error or latency series that moved.
func (c *candidate) failed() bool {
	if len(c.errLines) > 0 || c.restarts > 0 || len(c.notReady) > 0 || len(c.badPods) > 0 || len(c.conditions) > 0 || len(c.dbEvents) > 0 {
		return true
	}
	for _, e := range c.events {
		if strings.EqualFold(e.Type, "Warning") {
			return true
		}
	}
	for _, ch := range c.changes {
		if ch.kind == "errors" || ch.kind == "latency" {
			return true
		}
	}
	return false
}

func (c *candidate) mark(kind string) {
	if c.kinds == nil {
		c.kinds = map[string]bool{}
	}
	c.kinds[kind] = true
}

// cpuStateKeys are the label keys that name the state a CPU series counts
// time in: node_exporter's mode, OpenTelemetry's (system.cpu.time) state.
var cpuStateKeys = []string{"mode", "state", "cpu_state", "system_cpu_state", "cpu_mode"}

// cpuSteal: a CPU series of steal time (time the hypervisor ran another
// guest while this one was ready to run), by its state label or its name
// (Telegraf's usage_steal).
func cpuSteal(s facts.Series) bool {
	n := strings.ToLower(s.Name)
	if !strings.Contains(n, "cpu") {
		return false
	}
	if strings.Contains(n, "steal") {
		return true
	}
	for _, k := range cpuStateKeys {
		if strings.EqualFold(s.Labels[k], "steal") {
			return true
		}
	}
	return false
}

// seriesChange is how a series moved around the alert.
type seriesChange struct {
	s         Series
	r         rise
	magnitude float64 // |log2(after/before)|, capped
	kind      string
}

func (c seriesChange) text() string {
	what := fmt.Sprintf("%s%s moved from %s to %s", c.s.Name, seriesSelector(c.s.Series), num(c.r.head), num(c.r.tail))
	if c.r.peak > c.r.tail*1.3 && c.r.peak > c.r.head*1.3 {
		what += fmt.Sprintf(" (peak %s)", num(c.r.peak))
	}
	if c.r.shape != "" && c.r.shape != "flat" {
		what += ", " + c.r.shape
	}
	if c.r.onset != nil {
		what += " from " + hhmm(c.r.onset)
	}
	return what
}

// placementLabels say where a series was measured or who scraped it, not
// what it measures.
var placementLabels = map[string]bool{
	"pod": true, "service": true, "node": true, "instance": true, "namespace": true, "job": true, "container": true,
	"endpoint": true, "cluster": true, "prometheus": true, "prometheus_replica": true, "le": true, "quantile": true,
	"uid": true, "pod_ip": true, "host_ip": true, "image": true, "id": true, "name": true, "exported_namespace": true,
	"exported_pod": true, "exported_service": true, "exported_job": true, "region": true, "env": true, "environment": true,
	"server": true, "datname": true, "db": true, "instance_id": true, "k8s_pod_name": true, "k8s_namespace_name": true,
	"service_name": true, "k8s_node_name": true, "k8s_container_name": true, "service_instance_id": true,
}

// seriesSelector names a series: the first of its identity labels (pod,
// service, node, instance) and up to three labels that say what it
// measures (a state, a mode, a status code, a zone, a reason), so that
// "pg_stat_activity_count{state=idle in transaction}" is told from its
// siblings.
func seriesSelector(s facts.Series) string {
	var parts []string
	for _, k := range []string{"pod", "service", "node", "instance"} {
		if v := s.Labels[k]; v != "" {
			parts = append(parts, k+"="+v)
			break
		}
	}
	var keys []string
	for k, v := range s.Labels {
		if !placementLabels[k] && v != "" && len(v) <= 48 && !strings.HasPrefix(k, "__") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, k+"="+s.Labels[k])
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ---- message templates ----

var (
	tmplUUID   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	tmplHex    = regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b|\b[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b`)
	tmplIP     = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`)
	tmplNum    = regexp.MustCompile(`\b\d+([.,]\d+)?(ms|s|m|h|b|kb|mb|gb|%)?\b`)
	tmplWord   = regexp.MustCompile(`[a-z0-9_]+`)
	tmplQuoted = regexp.MustCompile(`"[^"]{0,80}"|'[^']{0,80}'`)
)

// logTemplate folds a log message into its template: ids, numbers, IPs and
// quoted values vary between occurrences of the same message.
func logTemplate(msg string) string {
	s := strings.ToLower(strings.Join(strings.Fields(msg), " "))
	s = tmplUUID.ReplaceAllString(s, "<id>")
	s = tmplIP.ReplaceAllString(s, "<ip>")
	s = tmplQuoted.ReplaceAllString(s, "<v>")
	s = tmplHex.ReplaceAllString(s, "<id>")
	s = tmplNum.ReplaceAllString(s, "<n>")
	// Tokens mixing letters and digits are identifiers (cart ids, thread
	// names, request ids): variable parts, as in Drain-style templating.
	s = tmplWord.ReplaceAllStringFunc(s, func(w string) string {
		if strings.ContainsAny(w, "0123456789") && strings.IndexFunc(w, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0 {
			return "<id>"
		}
		return w
	})
	return s
}

// template is one group of log lines sharing a template.
type template struct {
	key   string
	lines []LogLine
}

func templates(lines []LogLine) []template {
	idx := map[string]int{}
	var out []template
	for _, l := range lines {
		k := logTemplate(l.Message)
		if i, ok := idx[k]; ok {
			out[i].lines = append(out[i].lines, l)
			continue
		}
		idx[k] = len(out)
		out = append(out, template{key: k, lines: []LogLine{l}})
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].lines) > len(out[j].lines) })
	return out
}

// ---- downstream hosts named in errors ----

var (
	hostPortRe = regexp.MustCompile(`(?i)\b([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*):(\d{2,5})\b`)
	grpcTarget = regexp.MustCompile(`(?i)(?:target|upstream|host|server|backend|endpoint|peer)[=: ]+"?([a-z][a-z0-9.-]*[a-z0-9])`)
	// remoteOpRe: a cloud SDK's error chain names the remote API and its
	// operation ("operation error STS: AssumeRoleWithWebIdentity"); the
	// innermost one is the dependency that failed.
	remoteOpRe      = regexp.MustCompile(`operation error ([A-Za-z][A-Za-z0-9 ]{1,40}?): ([A-Z][A-Za-z0-9]+)`)
	remoteAPIPrefix = "api:"
	// reInvalidValue: a warning that a value is impossible
	// (invalidValue) is the symptom of bad data even when nothing fails.
	reInvalidValue = regexp.MustCompile(`(?i)(` + invalidValue + `)`)
	depSymptom     = regexp.MustCompile(`(?i)(serviceunavailable|service is unavailable|throttlingexception|connection refused|econnrefused|etimedout|econnreset|connection reset|reset by peer|broken pipe|timed? ?out|timeout|deadline exceeded|no route to host|unreachable|\b50[234]\b|service unavailable|bad gateway|gateway timeout|code = unavailable|upstream|circuit (breaker )?open|\beof\b)`)
	notAHostRe     = regexp.MustCompile(`(?i)^(localhost|127\..*|0\.0\.0\.0|http|https|tcp|tcp4|tcp6|udp|line|port|at|in|on|the|error|errors|time|timeout|connect|connection|disconnect|failed|error:|request|requests|reset|read|write|dial|rate|limit|limited|limiting|returned|responded|response|timed|is|was|has|had|closed|sent|service|server|unavailable|overloaded|throttled|rejected|refused|denied|quota|busy|down|not|did|failure|of|to|from|for|with|by|via|and|or|than|upstream|downstream|backend|peer|remote|target|endpoint|origin)$`)
)

// proseWord: a word a sentence uses after "upstream" or "connect to"
// ("upstream timed out", "upstream prematurely closed"), not a peer's
// name: a listed word, or an adverb (-ly) without the dots, dashes or
// digits of a host or service name.
func proseWord(w string) bool {
	if notAHostRe.MatchString(w) {
		return true
	}
	return !strings.ContainsAny(w, ".-_0123456789") && len(w) > 5 && strings.HasSuffix(strings.ToLower(w), "ly")
}

// downstreamHost returns the remote host an error line names, when it
// carries a transport/upstream symptom; self is the line's own service.
func downstreamHost(msg, self string) string {
	if !depSymptom.MatchString(msg) {
		return ""
	}
	// Most explicit first: a URL, a target= field, a host:port, then a
	// host after a connection verb.
	var cands []string
	if ops := remoteOpRe.FindAllStringSubmatch(msg, -1); len(ops) > 0 {
		inner := ops[len(ops)-1]
		return remoteAPIPrefix + strings.ToLower(strings.ReplaceAll(strings.TrimSpace(inner[1]), " ", "-"))
	}
	if u := urlHostRe.FindStringSubmatch(msg); u != nil {
		cands = append(cands, u[1])
	}
	// key=value fields (structured logs) name the peer explicitly; a
	// space-separated "upstream <word>" is prose and comes last.
	var prose []string
	for _, m := range grpcTarget.FindAllStringSubmatch(msg, -1) {
		if strings.ContainsAny(m[0], "=:") {
			cands = append(cands, m[1])
		} else {
			prose = append(prose, m[1])
		}
	}
	cands = append(cands, prose...)
	for _, m := range hostPortRe.FindAllStringSubmatch(msg, -1) {
		// A bare word before a small number ("retry:3", "attempt:12") is
		// not a host; a service name with a real port is.
		port, _ := strconv.Atoi(m[2])
		if strings.ContainsAny(m[1], ".-") || port >= 1000 || port == 80 || port == 443 {
			cands = append(cands, m[1])
		}
	}
	if m := depTargetRe.FindStringSubmatch(msg); m != nil {
		cands = append(cands, strings.TrimRight(m[1], ".:"))
	}
	for _, h := range cands {
		if i := strings.IndexByte(h, ':'); i > 0 {
			h = h[:i]
		}
		h = strings.TrimSuffix(h, ".")
		if upperCode(h) {
			continue // an error code ("EOF", "ECONNRESET"), not a host: logs print hosts in lower case
		}
		h = strings.ToLower(h)
		if h == "" || proseWord(h) || isIPLike(h) || (self != "" && (h == strings.ToLower(self) || strings.HasPrefix(h, strings.ToLower(self)+"."))) {
			continue
		}
		if strings.HasSuffix(h, ".go") || strings.HasSuffix(h, ".java") || strings.HasSuffix(h, ".py") || strings.HasSuffix(h, ".js") {
			continue
		}
		return h
	}
	return ""
}

// upperCode: a word of capital letters (digits and underscores allowed),
// how errors write their codes and constants.
func upperCode(w string) bool {
	letters := 0
	for _, r := range w {
		switch {
		case r >= 'A' && r <= 'Z':
			letters++
		case r >= '0' && r <= '9' || r == '_':
		default:
			return false
		}
	}
	return letters >= 2
}

// ---- candidates ----

func sat(v, full float64) float64 {
	if full <= 0 {
		return 0
	}
	return math.Min(1, v/full)
}

// anomalyCandidates attributes every abnormal signal in the evidence to an
// entity and ranks the entities by the strength of their signals.
func (ev *Evidence) anomalyCandidates() []*candidate {
	ev.candOnce.Do(func() { ev.candidates = ev.findCandidates() })
	return ev.candidates
}

// measures: s is a measurement of the candidate's entity (its node by a
// node label or a scrape target's host; its workload by a service, app,
// deployment, container, job or pod label).
func (c *candidate) measures(ev *Evidence, s Series) bool {
	switch c.kind {
	case "node":
		// By its node label, its scrape target's node, or the machine a
		// candidate was made of by its scrape target's host.
		return strings.EqualFold(labelOf(s.Series, "node", "kubernetes_node", "nodename"), c.name) || strings.EqualFold(ev.nodeOfInstance(labelOf(s.Series, "instance")), c.name) ||
			strings.EqualFold(instanceHost(labelOf(s.Series, "instance")), c.name)
	case "workload":
		own := labelOf(s.Series, "service", "app", "deployment", "container", "job", "pod")
		return own != "" && (strings.EqualFold(own, c.name) || strings.HasPrefix(strings.ToLower(own), strings.ToLower(c.name)+"-"))
	}
	return false
}

// machineSeries: a series that measures the machine itself (a platform
// exporter's, or OpenTelemetry's system metrics), not a process on it.
func machineSeries(name string) bool {
	n := strings.ToLower(signal.MetricName(name))
	return signal.Subsystem(n) == signal.SubsystemPlatform || strings.HasPrefix(n, "system_") || strings.HasPrefix(n, "system.")
}

// instanceHost is the host part of a scrape target ("db-7:9100" gives
// "db-7"); "" for an address (an IP says nothing a reader can name) or
// nothing.
func instanceHost(instance string) string {
	host := hostPart(instance)
	if net.ParseIP(host) != nil {
		return ""
	}
	return host
}

// hostPart is a scrape target without its port.
func hostPart(instance string) string {
	if h, _, err := net.SplitHostPort(instance); err == nil {
		return h
	}
	return instance
}

// nodeOfInstance is the node a scrape target ("fc-edge-2:9100") names by
// its host part, when a node of that name is in evidence; "" otherwise.
func (ev *Evidence) nodeOfInstance(instance string) string {
	host := hostPart(instance)
	if host == "" {
		return ""
	}
	for _, n := range ev.Nodes {
		if strings.EqualFold(n.Name, host) {
			return n.Name
		}
	}
	return ""
}

// findCandidates does the work anomalyCandidates caches: its readers do
// not modify the candidates.
func (ev *Evidence) findCandidates() []*candidate {
	byEnt := map[string]*candidate{}
	var order []string
	get := func(entity, name, kind string) *candidate {
		if c, ok := byEnt[entity]; ok {
			return c
		}
		c := &candidate{entity: entity, name: name, kind: kind}
		byEnt[entity] = c
		order = append(order, entity)
		return c
	}
	defNS := ev.alertNamespace()
	workload := func(ns, name string) *candidate {
		if ns == "" {
			ns = defNS
		}
		return get(deploymentEntity(ns, name), name, "workload")
	}
	// Error logs: per workload, and per downstream host they name.
	for _, l := range ev.Logs {
		if !ev.failingLine(l) {
			continue
		}
		svc := ev.logService(l)
		if svc == "" {
			svc = firstNonEmptyStr(ev.alertField("service", "workload_name", "kube_deployment"), "(unnamed service)")
		}
		c := workload(l.Namespace, svc)
		c.errLines = append(c.errLines, l)
		c.mark("logs")
		if h := downstreamHost(l.Message, svc); h != "" {
			ent := serviceEntity(h)
			switch {
			case strings.HasPrefix(h, remoteAPIPrefix):
				h = strings.TrimPrefix(h, remoteAPIPrefix)
				ent = "cloudapi/" + h // a provider's API, outside the cluster
			case strings.Count(h, ".") >= 2 && !strings.Contains(h, ".svc") && !strings.HasSuffix(h, ".local"):
				ent = "host/" + h
			}
			d := get(ent, h, "dependency")
			d.errLines = append(d.errLines, l)
			d.callers = appendUnique(d.callers, svc)
			d.mark("logs")
		}
	}
	// Pods: restarts, not ready, waiting/terminated reasons.
	for _, p := range ev.Pods {
		if _, sup := ev.superseded(p); sup {
			continue
		}
		bad := !podHealthy(p.Pod) && !strings.EqualFold(p.Phase, "Succeeded")
		r := podRestarts(p.Pod)
		if !bad && r == 0 {
			continue
		}
		w := ev.workloadOf(p.Pod)
		if w == "" {
			w = p.Name
		}
		c := workload(p.Namespace, w)
		c.restarts += r
		if bad {
			c.badPods = append(c.badPods, p)
			if !podReady(p.Pod) {
				c.notReady = append(c.notReady, p)
			}
		}
		c.mark("pods")
	}
	// Warning events, on their object's owner.
	for _, e := range ev.WarningEvents() {
		var c *candidate
		switch {
		case strings.EqualFold(e.InvolvedKind, "Node"):
			c = get("node/"+e.InvolvedName, e.InvolvedName, "node")
		case strings.EqualFold(e.InvolvedKind, "Pod"):
			w := workloadOfPodName(ev, e.InvolvedName)
			if w == "" {
				w = e.InvolvedName
			}
			c = workload(e.Namespace, w)
		case strings.EqualFold(e.InvolvedKind, "ReplicaSet"):
			name := e.InvolvedName
			if i := strings.LastIndexByte(name, '-'); i > 0 {
				name = name[:i]
			}
			c = workload(e.Namespace, name)
		case e.InvolvedName != "" && (e.InvolvedKind == "" || containsFold(e.InvolvedKind, "deployment", "statefulset", "daemonset", "job")) && !strings.EqualFold(e.InvolvedKind, "CronJob"):
			// A CronJob is its own object (its schedule, its deadline),
			// not a workload of pods by its name.
			c = workload(e.Namespace, e.InvolvedName)
		case e.InvolvedName != "":
			ns := firstNonEmptyStr(e.Namespace, defNS)
			c = get(strings.ToLower(e.InvolvedKind)+"/"+ns+"/"+e.InvolvedName, e.InvolvedName, "object")
		default:
			continue
		}
		c.events = append(c.events, e)
		c.mark("events")
	}
	// Workloads whose rollout reports an abnormal condition (a replica
	// failure, a progress deadline exceeded, not available).
	for _, d := range ev.Deployments {
		for _, co := range workloadConditions(d) {
			c := workload(d.Namespace, d.Name)
			c.conditions = append(c.conditions, co)
			c.mark("conditions")
		}
	}
	// Described objects (budgets, autoscalers, certificates, claims, custom
	// resources) whose own condition is abnormal.
	for _, res := range ev.Resources {
		switch strings.ToLower(res.Kind) {
		case "pod", "node", "deployment", "":
			continue // read through their own facts above and below
		}
		for _, cond := range res.Conditions {
			if abnormalCondition(cond) {
				ns := firstNonEmptyStr(res.Namespace, defNS)
				c := get(strings.ToLower(res.Kind)+"/"+qualifiedName(ns, res.Name), res.Name, "object")
				c.conditions = append(c.conditions, condOf{kind: res.Kind, ns: ns, name: res.Name, c: cond})
				c.mark("conditions")
			}
		}
	}
	// Nodes with failing conditions.
	for _, n := range ev.Nodes {
		if nodeReadyStatus(n.Node) == "True" && len(nodePressures(n.Node)) == 0 {
			continue
		}
		c := get("node/"+n.Name, n.Name, "node")
		c.mark("nodes")
	}
	// Pods failing on one node while pods elsewhere run: the node is a suspect.
	if len(ev.Nodes) > 0 || len(ev.Pods) > 2 {
		badOn, okOn := map[string][]Pod{}, map[string]int{}
		for _, p := range ev.Pods {
			if p.Node == "" {
				continue
			}
			if !podHealthy(p.Pod) && !strings.EqualFold(p.Phase, "Succeeded") && !strings.EqualFold(p.Phase, "Pending") {
				badOn[p.Node] = append(badOn[p.Node], p)
			} else {
				okOn[p.Node]++
			}
		}
		if len(badOn) == 1 {
			for node, ps := range badOn {
				others := 0
				for n, k := range okOn {
					if n != node {
						others += k
					}
				}
				if len(ps) >= 2 && others > 0 && okOn[node] == 0 {
					c := get("node/"+node, node, "node")
					c.badPods = append(c.badPods, ps...)
					c.mark("pods")
				}
			}
		}
	}
	// Managed-database events on their instance.
	for _, e := range ev.DBEvents {
		if e.SourceID == "" || !ev.recent(e.Time, 24*time.Hour) {
			continue
		}
		c := get("db/"+e.SourceID, e.SourceID, "database")
		c.dbEvents = append(c.dbEvents, e)
		c.mark("db_events")
	}
	// Metrics whose shape changed. An info metric (`_info`, value 1, its
	// labels the payload) records a state or a version, not a symptom: a
	// label set that appears or goes is a change of state, never by
	// itself an abnormal signal.
	for _, s := range ev.Series {
		if strings.HasSuffix(strings.ToLower(s.Name), "_info") {
			continue
		}
		ch, ok := seriesChangeOf(s)
		if !ok {
			continue
		}
		var c *candidate
		switch {
		case isDBMetric(s.Series) && instanceOf(s.Series) != "":
			c = get("db/"+instanceOf(s.Series), instanceOf(s.Series), "database")
		case labelOf(s.Series, "service", "app", "deployment", "workload", "job", "container") != "" && !strings.EqualFold(labelOf(s.Series, "job"), "node-exporter"):
			c = workload(labelOf(s.Series, "namespace"), labelOf(s.Series, "service", "app", "deployment", "workload", "container", "job"))
		case labelOf(s.Series, "pod") != "":
			c = workload(labelOf(s.Series, "namespace"), firstNonEmptyStr(workloadOfPodName(ev, labelOf(s.Series, "pod")), labelOf(s.Series, "pod")))
		case labelOf(s.Series, "node", "kubernetes_node", "nodename") != "":
			n := labelOf(s.Series, "node", "kubernetes_node", "nodename")
			c = get("node/"+n, n, "node")
		case ev.nodeOfInstance(labelOf(s.Series, "instance")) != "":
			// A node exporter's series, scraped as host:port: the node.
			n := ev.nodeOfInstance(labelOf(s.Series, "instance"))
			c = get("node/"+n, n, "node")
		default:
			w := firstNonEmptyStr(ev.alertField("service", "workload_name", "kube_deployment"))
			if w == "" {
				// No workload to attribute it to: the machine the series
				// was measured on (a VM outside the cluster's nodes), by
				// its scrape target's host, when the series measures the
				// machine (a platform exporter's: node_exporter, a
				// collector's system metrics) and is a failure signal of
				// its own (errors, latency, steal time, a measurement at
				// its published bound such as a full connection-tracking
				// table: a batch's CPU or load that rose is demand, not a
				// suspect). An application's own counters on that host
				// are its process's, not the machine's.
				h := instanceHost(labelOf(s.Series, "instance", "host", "hostname"))
				if h == "" || !(failingSeries(s) || ev.atItsLimit(s)) || !machineSeries(s.Name) {
					continue
				}
				c = get("node/"+h, h, "node")
				break
			}
			c = workload("", w)
		}
		c.changes = append(c.changes, ch)
		c.mark("metrics")
	}
	// Measurements at their published limit: the strongest signal a
	// metric gives, on the entity it measures.
	for _, h := range ev.limitsReached() {
		for _, c := range byEnt {
			if c.measures(ev, h.usage) {
				c.atLimit++
				c.mark("limits")
			}
		}
	}
	var out []*candidate
	alerted := ev.workloadEntity()
	for _, e := range order {
		c := byEnt[e]
		c.strength = c.score()
		if c.strength > 0 && alerted != "" && c.entity == alerted {
			// Distance zero in the entity graph: the alerting workload's own
			// abnormal signals outrank equally strong ones elsewhere.
			c.strength = math.Min(1, c.strength+alertedBonus)
		}
		if c.strength >= anomalyMinStrength {
			out = append(out, c)
		}
	}
	// A dependency named by most of a caller's errors outranks the caller:
	// the caller is a victim.
	for _, d := range out {
		if d.kind != "dependency" {
			continue
		}
		for _, w := range out {
			if w.kind == "workload" && len(w.errLines) > 0 && containsName(d.callers, w.name) && len(d.errLines)*2 >= len(w.errLines) {
				d.strength = math.Max(d.strength, w.strength+0.01)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].strength > out[j].strength })
	return out
}

func containsName(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// score is the evidence strength of a candidate, 0-1.
func (c *candidate) score() float64 {
	var s float64
	s += 0.3 * sat(float64(len(c.errLines)), 10)
	var evn float64
	for _, e := range c.events {
		evn += float64(eventCount(e.Event))
	}
	s += 0.2 * sat(evn, 5)
	s += 0.15 * sat(float64(c.restarts), 5)
	if len(c.notReady) > 0 || len(c.badPods) > 0 {
		s += 0.15
	}
	s += 0.1 * sat(float64(len(c.dbEvents)), 3)
	if len(c.conditions) > 0 {
		s += 0.15
	}
	best := 0.0
	for _, ch := range c.changes {
		best = math.Max(best, ch.magnitude)
	}
	s += 0.25 * sat(best, 3)
	if c.kind == "node" && c.kinds["nodes"] {
		s += 0.2
	}
	s += 0.25 * sat(float64(c.atLimit), 1)
	if len(c.kinds) >= 2 {
		s += 0.05 * float64(len(c.kinds)-1)
	}
	return math.Min(1, s)
}

// seriesChangeOf measures a series' change between its baseline and its
// tail (or its peak, for a spike); flat series are not changes.
func seriesChangeOf(s Series) (seriesChange, bool) {
	if len(s.Downsampled) < 3 && s.Count < 3 {
		return seriesChange{}, false
	}
	if strings.HasSuffix(s.Name, "_bucket") || s.Labels["le"] != "" {
		return seriesChange{}, false // one histogram bucket alone says little
	}
	s.Series = asRate(s.Series)
	r := riseOf(s.Series)
	head := math.Abs(r.head)
	after := math.Abs(r.tail)
	if r.shape == "spike" {
		after = math.Abs(r.peak)
	}
	lo, hi := math.Min(head, after), math.Max(head, after)
	if hi == 0 {
		return seriesChange{}, false
	}
	// Absolute floor: a move between near-zero values is noise unless it
	// starts from zero and rises clearly.
	if hi-lo < 1e-9 {
		return seriesChange{}, false
	}
	var mag float64
	if lo <= 1e-9 {
		mag = 3
	} else {
		mag = math.Min(3, math.Abs(math.Log2(hi/lo)))
	}
	if mag < 0.58 { // less than a 1.5x move
		return seriesChange{}, false
	}
	if s.Stddev > 0 && math.Abs(after-head) < 2*s.Stddev && r.shape != "step" && r.shape != "creep" && r.shape != "drop" {
		return seriesChange{}, false // within its own noise
	}
	return seriesChange{s: s, r: r, magnitude: mag, kind: seriesKindOf(s.Series)}, true
}

// ---- category inference ----

// categoryVote is the evidence for one category.
type categoryVote struct {
	cat   investigationv1.RootCauseCategory
	score float64
	hits  []string // example matching texts
	why   string
	// kinds are the independent evidence kinds behind the vote (logs,
	// events, pods, metrics, changes, topology).
	kinds map[string]bool
}

// inferCategory reads the semantics of the top candidate's signals (and the
// change history) and returns a category only when one reading clearly
// dominates; otherwise unknown with the votes for the report.
func (ev *Evidence) inferCategory(top *candidate, change *changeRef, onset *time.Time) (categoryVote, []categoryVote) {
	votes := map[investigationv1.RootCauseCategory]*categoryVote{}
	add := func(cat investigationv1.RootCauseCategory, w float64, hit, why, kind string) {
		v := votes[cat]
		if v == nil {
			v = &categoryVote{cat: cat, why: why, kinds: map[string]bool{}}
			votes[cat] = v
		}
		v.kinds[kind] = true
		v.score += w
		if hit != "" && len(v.hits) < 3 {
			v.hits = appendUnique(v.hits, clip(hit, 120))
		}
	}
	callerDemandRose := false
	callers := top.callers
	if top.kind == "workload" {
		callers = []string{top.name}
	}
	for _, c := range callers {
		callerDemandRose = callerDemandRose || ev.demandRose(c)
	}
	calendar := false // a code vote the calendar triggers needs no release
	classify := func(text string, w float64, kind string) {
		f, ok := familyOf(text)
		if !ok {
			return
		}
		if f.why == weekYearFamily.why {
			calendar = true
		}
		if f.cat == catResource && !callerDemandRose && (top.kind == "dependency" && reRemoteLimit.MatchString(text) || remoteLimit(text, top.name)) {
			// A limit the dependency enforces (its 429, its quota) while
			// the callers' demand is flat: the dependency changed, not the
			// callers' load.
			add(catDependency, w, text, "the dependency refuses requests with its own limit while its callers' demand is flat", kind)
			return
		}
		if top.kind == "node" && f.cat == catResource {
			// Pressure confined to one node is a node-level fault.
			add(catInfra, w, text, "node-level resource pressure ("+f.why+")", kind)
			return
		}
		add(f.cat, w, text, f.why, kind) // first row wins: the table runs from most to least specific
	}
	// Logs: one vote per template, weighted by its share (a repeated line
	// counts more, but not linearly).
	deadlock := false
	for _, t := range templates(top.errLines) {
		w := 1 + math.Log2(float64(len(t.lines)))
		if top.restarts > 0 && reCrashHeader.MatchString(t.lines[0].Message) {
			// The runtime's own crash report of a process that keeps
			// restarting is the failure itself, not one symptom among
			// others: it outweighs a rise of load that preceded it.
			w += 2
		}
		if reDeadlockReport.MatchString(t.lines[0].Message) {
			deadlock = true
			// A runtime's or database's own report that threads or
			// transactions wait on each other is the failure's mechanism,
			// not one symptom: the blocked threads and the queue behind
			// them are its effects.
			w += 2
		}
		if flag, row, ok := proxyFlag(t.lines[0].Message); ok {
			// A proxy's response flag names the mechanism (proxyflags.go);
			// a flag that says where, not why, votes for nothing.
			if row.cat != catUnknown {
				add(row.cat, w, t.lines[0].Message, "the proxy's response flag "+flag+": "+row.what, "logs")
			}
			continue
		}
		classify(t.lines[0].Message, w, "logs")
	}
	for _, e := range top.events {
		classify(e.Reason+": "+e.Message, 1+math.Log2(float64(eventCount(e.Event))), "events")
	}
	for _, p := range top.badPods {
		if t := strings.TrimSpace(podText(p.Pod)); t != "" {
			classify(t, 1, "pods")
		}
	}
	for _, e := range top.dbEvents {
		classify(e.Message+" "+strings.Join(e.Categories, " "), 1, "db_events")
	}
	// Dependency: the top entity is a downstream host named in errors with
	// transport/upstream symptoms.
	if top.kind == "dependency" {
		w := 2 + math.Log2(float64(len(top.errLines)))
		if distinctWorkloads(top.callers) >= 2 {
			w++ // several callers see it fail
		}
		if name, ok := ev.dependencyNormal(top.entity, top.name); ok {
			// Its own signals are normal: the calls fail on the callers'
			// side (healthydep.go).
			add(catConfig, w, top.errLines[0].Message, fmt.Sprintf("calls from %s to %s fail while %s's own signals (its series, pods and logs) are normal: the callers' side of the call (a timeout, keep-alive, TLS or route setting) is misconfigured", joinNames(top.callers), top.name, name), "topology")
		} else {
			add(catDependency, w, top.errLines[0].Message, fmt.Sprintf("errors from %s name %s with transport or upstream failures", joinNames(top.callers), top.name), "logs")
		}
	}
	// An object whose own condition is abnormal (a budget that allows no
	// disruption, an autoscaler that cannot scale, a certificate not
	// ready): its spec is what blocks, which is configuration.
	if top.kind == "object" && len(top.conditions) > 0 {
		co := top.conditions[0]
		add(catConfig, 2, co.text(), "the object's own state, set by its spec, blocks the operation ("+co.c.Type+"="+co.c.Status+")", "conditions")
	}
	// A controller that acts on the workload (its autoscaler) and reports
	// that it cannot (ScalingActive=False: its metric cannot be read):
	// the workload cannot follow its demand because of the controller's
	// settings, which is configuration. An autoscaler held at its maximum
	// (ScalingLimited) does its job and votes for nothing here.
	if top.kind == "workload" {
		if co, ok := blockedController(top.conditions); ok {
			add(catConfig, 2.5, co.text(), fmt.Sprintf("the %s %s that acts on %s cannot do so (%s=%s %s): its settings leave the workload unmanaged", co.kind, co.name, top.name, co.c.Type, co.c.Status, co.c.Reason), "conditions")
		}
	}
	// Placement: a workload whose failing pods all run on one node while
	// its pods on other nodes are fine fails through that node.
	if node, bad, fine, ok := ev.confinedNode(top); ok {
		add(catInfra, 3, "", fmt.Sprintf("the failing pods (%s) all run on node %s; its pods on %s are fine", joinNames(bad), node, plural(fine, "other node", "other nodes")), "placement")
	}
	// Placement over node groups: the failing pods all run on nodes that
	// run other software than the nodes of its fine pods (nodegroup.go).
	if key, bad, fine, pods, ok := ev.confinedNodeGroup(top); ok {
		add(catInfra, 4, "", nodeGroupWhy(key, bad, fine, pods), "placement")
	}
	// Node: a node-level candidate is infrastructure.
	if top.kind == "node" {
		add(catInfra, 3, "", "the abnormal signals are confined to one node", "topology")
	}
	// Metrics: saturation shapes.
	backlogVote := 0.0 // the resource vote of work waiting (a queue, a backlog, a lag)
	for _, ch := range top.changes {
		n := strings.ToLower(ch.s.Name)
		rising := ch.r.tail > ch.r.head || ch.r.shape == "spike"
		if deadlock && containsFold(n, "thread") {
			continue // threads blocked behind a deadlock are its effect
		}
		switch {
		case stateDown(ch.s.Series) && machineState(ch.s.Series):
			// A machine's, a device's or a link's own state gauge lost
			// its state (statedown.go): the platform under the workloads.
			add(catInfra, 2, ch.text(), "a machine's, a device's or a link's own state gauge went from 1 to 0 and stays there", "metrics")
		case rising && cpuSteal(ch.s.Series):
			// CPU time the hypervisor gave another guest: the host is
			// contended, whatever the workload itself asks for.
			add(catInfra, 2.5, ch.text(), "the hypervisor withholds CPU time from the guest (steal time rose): another tenant of the host, not the workload's own demand", "metrics")
		case rising && containsFold(n, "queue", "backlog", "pending", "lag", "inflight", "in_flight", "waiting", "active_threads", "pool", "saturation", "throttl", "rejected"):
			add(catResource, 2, ch.text(), "a queue, pool or throttling metric grows", "metrics")
			if containsFold(n, "queue", "backlog", "pending", "lag", "waiting") {
				backlogVote += 2
			}
		case rising && containsFold(n, "memory", "heap", "cpu", "fd", "file_descriptors") && ch.r.shape == "creep":
			add(catResource, 1.5, ch.text(), "memory or CPU creeps toward its limit", "metrics")
		case rising && ch.r.tail >= 85 && ch.r.tail <= 100 && containsFold(n, "util", "percent", "usage", "pct"):
			add(catResource, 1.5, ch.text(), "a utilisation metric is near its limit", "metrics")
		case rising && ch.r.head < 0.85 && ch.r.tail >= 0.85 && ch.r.tail <= 1 && containsFold(n, "util", "ratio", "fraction"):
			// The same on a 0-1 scale (a ratio of used to available).
			add(catResource, 1.5, ch.text(), "a utilisation metric is near its limit", "metrics")
		case !rising && ch.r.head > 0 && ch.r.tail < 0.3*ch.r.head && containsFold(n, "ratelimit", "rate_limit", "quota") && !callerDemandRose:
			add(catDependency, 1.5, ch.text(), "the budget another system grants fell to zero while demand is flat", "metrics")
		case !rising && ch.r.head > 0 && ch.r.tail < 0.3*ch.r.head && containsFold(n, leftWords...):
			add(catResource, 1.5, ch.text(), "a free-capacity metric fell toward zero", "metrics")
		case !rising && containsFold(n, leftWords...):
			if left, ok := runOut(ch.s); ok {
				add(catResource, 2, ch.text(), fmt.Sprintf("a free-capacity metric keeps falling and runs out in about %s at its recent rate", durHuman(left)), "metrics")
			}
		case rising && ch.magnitude >= 1 && containsFold(n, "connection", "session", "thread", "iops", "queuedepth", "queue_depth", "open_files", "fds") && !(containsFold(n, "connection", "session") && isCounterName(n)):
			// Held connections or sessions, not the rate of a counter of
			// events (connections closed, sessions started).
			add(catResource, 1, ch.text(), "connections, threads or I/O rose sharply", "metrics")
		case rising && ch.kind == "traffic" && ch.magnitude >= 1 && demandSeries(ch.s.Series, top.name):
			add(catResource, 1, ch.text(), "load rose sharply", "metrics")
		}
	}
	// A resource of the entity at its limit (the measurement against its
	// published bound).
	// Its own measurement at its bound is the mechanism, whatever the
	// topology says of where it is; else one of no workload's.
	if i := slices.IndexFunc(ev.limitsReached(), func(h limitHit) bool { return top.measures(ev, h.usage) }); i >= 0 {
		add(catResource, 3.5, ev.limitsReached()[i].text(), "a resource is at its limit", "metrics")
	} else if i := slices.IndexFunc(ev.limitsReached(), func(h limitHit) bool {
		return labelOf(h.usage.Series, "service", "app", "deployment", "container", "job", "pod") == ""
	}); i >= 0 {
		add(catResource, 2.5, ev.limitsReached()[i].text(), "a resource is at its limit", "metrics")
	}
	// Code: exceptions right after a release of the same entity.
	if change != nil && change.deploy && !change.unrelated && onset != nil && change.at != nil && onset.Sub(*change.at) <= codeDeployWindow && onset.Sub(*change.at) >= -time.Minute {
		if v := votes[catCode]; v != nil {
			v.score += 2
			v.kinds["changes"] = true
			v.why = "runtime exceptions began right after a release"
		} else if v := votes[catData]; v == nil && votes[catConfig] == nil && votes[catResource] == nil && votes[catDependency] == nil {
			add(catCode, 1.5, "", "errors began right after a release", "changes")
		}
	}
	// A non-release change close before the onset votes for its kind's
	// category (config, infra, data): the cause side of the table.
	if change != nil && !change.deploy && onset != nil && change.at != nil && onset.Sub(*change.at) >= -time.Minute &&
		(onset.Sub(*change.at) <= changeVoteWindow || len(specificIDs(change.text, top.symptomTexts(), []string{strings.ToLower(top.name)})) > 0) &&
		!(change.cut && !top.failed()) { // a cut nothing failed after is a scale-down, planned or not, not a fault
		if cat, why, ok := changeVote(change.kind); ok {
			add(cat, changeWeight(change, *onset, top), change.text, why, "changes")
		}
	}
	// Temporal precedence on the effect side: exceptions read as a code
	// defect only when code changed before the onset; without a release
	// they are weaker, and a non-release change right before the onset
	// explains them as its symptoms.
	if v := votes[catCode]; v != nil && onset != nil && !calendar && !(change != nil && change.deploy && change.at != nil && onset.Sub(*change.at) <= codeDeployWindow) {
		v.score *= codeWithoutRelease
		if change != nil && !change.deploy && change.at != nil && onset.Sub(*change.at) <= changeNearWindow && onset.Sub(*change.at) >= -time.Minute {
			v.score *= codeWithoutRelease
		}
	}
	// Work waits when its consumer fails, whatever the reason: a backlog
	// that grows while the consumer's own errors name another mechanism
	// (a permission, a parse error, a dependency) and demand is flat is
	// that failure's effect, not a capacity limit.
	if v := votes[catResource]; v != nil && backlogVote > 0 && !callerDemandRose {
		for cat, o := range votes {
			// Another reading the consumer's errors vote for, or a change
			// before the onset while the consumer logs errors: the change
			// made it fail, and the work waits behind the failure.
			if cat != catResource && (o.kinds["logs"] || o.kinds["conditions"] || o.kinds["changes"] && len(top.errLines) > 0) {
				v.score -= backlogVote * backlogAsEffect
				break
			}
		}
	}
	// A replica cut before the onset explains the saturation that follows
	// (queues full, throttling, latency) when demand did not rise: the
	// saturation is the cut's effect, its vote the cut's.
	if v := votes[catResource]; v != nil && change != nil && change.cut && !change.unrelated && !callerDemandRose && onset != nil && change.at != nil &&
		onset.Sub(*change.at) <= changeVoteWindow && onset.Sub(*change.at) >= -time.Minute {
		moved := v.score * (1 - cutSaturationKept)
		v.score -= moved
		add(catConfig, moved, change.text, "the workload's replicas were cut before it saturated (a capacity change)", "changes")
	}
	// A controller (an autoscaler) that cannot act on the workload explains the
	// saturation that follows, with or without a rise of demand (a rise
	// is what it exists to follow): the saturation is its effect, its
	// vote the controller's.
	if v := votes[catResource]; v != nil && top.kind == "workload" {
		if co, ok := blockedController(top.conditions); ok {
			moved := v.score * (1 - cutSaturationKept)
			v.score -= moved
			add(catConfig, moved, co.text(), "", "conditions")
		}
	}
	var list []categoryVote
	for _, v := range votes {
		list = append(list, *v)
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].score != list[j].score {
			return list[i].score > list[j].score
		}
		return list[i].cat < list[j].cat
	})
	if len(list) == 0 {
		return categoryVote{cat: catUnknown}, nil
	}
	best := list[0]
	if best.score < 1.5 || (len(list) > 1 && best.score < 1.5*list[1].score) {
		return categoryVote{cat: catUnknown}, list
	}
	return best, list
}

// confinedNode: the workload candidate's failing pods (those its error
// lines and abnormal series name), two or more, all run on one node, and
// two or more of its other pods run on other nodes without failing. ok is
// false otherwise; fine counts the other nodes.
func (ev *Evidence) confinedNode(top *candidate) (node string, bad []string, fine int, ok bool) {
	if top.kind != "workload" {
		return "", nil, 0, false
	}
	nodeOf := ev.podNodes()
	mine := ev.placedPods(top.name)
	failing := top.errorPods()
	for _, ch := range top.changes {
		if p := labelOf(ch.s.Series, "pod"); p != "" {
			failing[p] = true
		}
	}
	for p := range failing {
		n := nodeOf[p]
		if n == "" || node != "" && n != node {
			return "", nil, 0, false // an unplaced pod, or a second node: not confined
		}
		node = n
		bad = append(bad, p)
	}
	if node == "" || len(bad) < 2 {
		return "", nil, 0, false
	}
	others := map[string]bool{}
	healthy := 0
	for _, p := range mine {
		if !failing[p.Name] && p.Node != node {
			healthy++
			others[p.Node] = true
		}
	}
	if healthy < 2 || len(others) < 1 {
		return "", nil, 0, false
	}
	sort.Strings(bad)
	return node, bad, len(others), true
}

// placedPods are the pods of the workload named name that run on a node.
func (ev *Evidence) placedPods(name string) []Pod {
	var out []Pod
	for _, p := range ev.Pods {
		if p.Node != "" && (strings.EqualFold(firstNonEmptyStr(p.Workload, p.OwnerName), name) || strings.HasPrefix(p.Name, name+"-")) {
			out = append(out, p)
		}
	}
	return out
}

// errorPods are the pods the candidate's error lines come from.
func (c *candidate) errorPods() map[string]bool {
	out := map[string]bool{}
	for _, l := range c.errLines {
		if l.Pod != "" {
			out[l.Pod] = true
		}
	}
	return out
}

// reDeadlockReport: a runtime's or a database's report of a deadlock
// (the JVM's thread dump, Go's runtime, PostgreSQL, MySQL).
var reDeadlockReport = regexp.MustCompile(`(?i)(found (?:one|\d+) [a-z-]*\s*deadlock|all goroutines are asleep - deadlock|deadlock detected|deadlock found)`)

// cutSaturationKept is the share of the saturation's resource vote left
// to it when a replica cut before the onset explains it.
const cutSaturationKept = 0.25

// backlogAsEffect is the share of a growing backlog's resource vote that
// goes when the consumer's own errors name another mechanism.
const backlogAsEffect = 0.75

// ---- the nearest preceding change ----

type changeRef struct {
	text   string
	at     *time.Time
	deploy bool
	cite   Cite
	// kind is what changed (ledger.go): code, config, infra, data, capacity.
	kind string
	// unrelated: an object change elsewhere in the cluster that touches
	// nothing the alert names.
	unrelated bool
	// entity is the changed object (kind/namespace/name) of an object
	// change.
	entity string
	// service is the service a deploy, rollout or commit belongs to.
	service string
	// commits are what a deploy shipped (releaseCommits).
	commits []Commit
	// commitIDs: the commit-like ids a change record names.
	commitIDs []string
	// cut: a replica cut (replicacut.go), whose effect is saturation.
	cut bool
	// object: the identifier of the object the symptoms name that the
	// change touched (trail.go).
	object string
	// settingsRollout: a rollout or deploy that shipped the images it
	// already ran (the same revision, the same images as the revision
	// before): what changed is its configuration, which another row of
	// the ledger (the ConfigMap, the Secret) names.
	settingsRollout bool
}

// settingsRolloutLead: an object change this close before a rollout of
// settings only is what the rollout applied.
const settingsRolloutLead = 5 * time.Minute

// nearestChange finds the latest deploy, rollout or commit of the entity (or
// of anything, when none names it) before the onset.
//
// Specificity comes before nearness: a change whose own identifiers (the
// policy, the flag, the object) recur in the symptoms is chosen over a
// nearer one that none of the symptoms names.
func (ev *Evidence) nearestChange(name string, onset *time.Time, symptoms ...string) *changeRef {
	if onset == nil {
		return nil
	}
	var best, specific *changeRef
	// specificOnly: the changes considered may only be singled out by
	// specificity, not by nearness (commits, when a release is known).
	specificOnly := false
	// consider makes r the best change when it is later than the best so
	// far; a change that wins ties (tie > 0) replaces a best that is no
	// later than tie after it, unless it is unrelated.
	consider := func(r changeRef, same bool, tie time.Duration) {
		if r.at == nil || r.at.After(onset.Add(time.Minute)) || onset.Sub(*r.at) > specificLookback {
			return
		}
		only := specificOnly
		if onset.Sub(*r.at) > changeLookback {
			// Past the look-back, only a change the symptoms name is
			// still a candidate: specificity ties it, not time.
			if len(specificIDs(r.text, symptoms, []string{strings.ToLower(name)})) == 0 {
				return
			}
			only = true
		}
		if !same {
			r.text += " (another service)"
			// Another service's change is related only when the symptoms
			// name it (its callers' errors, its host): a call edge.
			if r.service == "" || !namedIn(r.service, symptoms) && !ev.calls(name, r.service) && !(only && len(sharedIdentifiers(r.text, symptoms)) > 0) {
				r.unrelated = true
			} else if r.entity == "" && !r.deploy && len(r.commits) == 1 {
				// A called service's release of settings only: the
				// commit that changed them is the culprit.
				r.entity = "commit/" + short(r.commits[0].SHA)
			}
		}
		if !r.unrelated && len(sharedIdentifiers(r.text, symptoms)) > 0 && (specific == nil || r.at.After(*specific.at)) {
			rr := r
			specific = &rr
		}
		later := best == nil || r.at.After(*best.at)
		if best != nil && best.settingsRollout && !r.deploy && r.kind == changeConfig && (r.entity != "" || r.object != "") &&
			!r.at.After(*best.at) && best.at.Sub(*r.at) <= settingsRolloutLead {
			later = true // the setting the rollout applied, not the rollout
		}
		if tie > 0 && best != nil {
			later = !r.unrelated && !best.at.After(r.at.Add(tie))
		}
		if later && !only {
			rr := r
			best = &rr
		}
	}
	for _, r := range ev.deployRefs(false) {
		consider(r, r.service == "" || r.service == name, 0)
	}
	for _, d := range ev.Deployments {
		for _, rv := range d.RolloutHistory {
			if rv.CreatedAt == nil {
				continue
			}
			txt := fmt.Sprintf("rollout of deployment %s to revision %s (ReplicaSet %s, %s) at %s", d.Name, rv.Revision, rv.Name, strings.Join(rv.Images, ", "), hhmm(rv.CreatedAt))
			r := changeRef{text: txt, at: rv.CreatedAt, deploy: true, cite: d.Cite, kind: changeCode, service: d.Name}
			if prev, ok := previousRevision(d.RolloutHistory, rv); ok && sameImages(prev.Images, rv.Images) {
				r.text += fmt.Sprintf(" (settings only: the images of revision %s)", prev.Revision)
				r.deploy, r.kind, r.settingsRollout = false, changeConfig, true
			}
			consider(r, d.Name == name, 0)
		}
	}
	// The commits are the ledger's rows when no release is known; when one
	// is, a commit is still the cause when its own identifiers recur in
	// the symptoms (a topic's retention changed in another repository).
	specificOnly = best != nil
	for _, c := range ev.Commits {
		if c.Removed {
			continue
		}
		txt := fmt.Sprintf("commit %s of %s (%s) at %s", short(c.SHA), firstNonEmptyStr(c.Service, "the repository"), clip(c.Message, 80), hhmm(c.Timestamp))
		r := changeRef{text: txt, at: c.Timestamp, cite: c.Cite, kind: commitKind(c.Commit), service: c.Service, commits: []Commit{c}}
		if r.kind == changeConfig {
			// A commit of settings only (a policy, a flag, a limit):
			// the commit names what changed, it is the culprit.
			r.entity = "commit/" + short(c.SHA)
		}
		consider(r, c.Service == "" || c.Service == name, 0)
	}
	specificOnly = false
	// Changes announced in logs (a flag flipped, a policy synced, a node
	// drained, a file loaded) are in the ledger too; a release still wins
	// when both are equally close.
	for _, r := range append(ev.announcedChanges(), ev.objectChanges()...) {
		consider(r, true, 0) // replaces best only when strictly later: a release wins ties
	}
	for _, r := range ev.trailChanges(name, onset, symptoms) {
		consider(r, true, 0) // specific by construction: the symptoms name its object
	}
	for _, r := range ev.replicaCuts() {
		// A cut recorded in the same minute as a rollout is what the
		// rollout's manifest set (an apply that also reset the count): the
		// cut is the change that explains saturation, and wins the tie.
		consider(r, r.service == name || name == "", time.Minute)
	}
	if specific != nil && (best == nil || len(sharedIdentifiers(best.text, symptoms)) == 0) {
		return specific
	}
	return best
}

// specificIDs are the identifiers of a change's text that recur in the
// symptoms and are no name of the target (every change to a service names
// the service, and its pods extend its name): what ties a change to its
// effect by specificity rather than by time.
func specificIDs(text string, symptoms, names []string) []string {
	var out []string
	for _, id := range sharedIdentifiers(text, symptoms) {
		low := strings.ToLower(id)
		target := false
		for _, n := range names {
			if n != "" && (low == n || extendsName(low, n) || extendsName(n, low)) {
				target = true
				break
			}
		}
		if !target {
			out = append(out, id)
		}
	}
	return out
}

// calls reports whether the workload named name calls service: its pod
// template's environment names the service's host (a call edge).
func (ev *Evidence) calls(name, service string) bool {
	if name == "" || service == "" {
		return false
	}
	for _, d := range ev.Deployments {
		if !strings.EqualFold(d.Name, name) {
			continue
		}
		for _, c := range d.Calls {
			if strings.EqualFold(c, service) {
				return true
			}
		}
	}
	return false
}

// maxEarlierCommits bounds the earlier changes a reading quotes.
const maxEarlierCommits = 2

// earlierCommits are the commits of the service named name (or that name
// it in their files) before onset and past the change look-back, newest
// first, at most maxEarlierCommits.
func (ev *Evidence) earlierCommits(name string, onset *time.Time) []Commit {
	if onset == nil || name == "" {
		return nil
	}
	var out []Commit
	for _, c := range ev.Commits {
		if c.Removed || c.Timestamp == nil || !c.Timestamp.Before(*onset) || onset.Sub(*c.Timestamp) <= changeLookback {
			continue
		}
		if strings.EqualFold(c.Service, name) || c.PathNames(name) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.After(*out[j].Timestamp) })
	return out[:min(len(out), maxEarlierCommits)]
}

// commitText quotes a commit: its id, service, subject and description.
func commitText(c Commit) string {
	txt := fmt.Sprintf("Commit %s of %s: %s", short(c.SHA), firstNonEmptyStr(c.Service, "the repository"), quote(clip(c.Message, 120)))
	if c.Summary != "" && c.Summary != c.Message {
		txt += " — " + quote(clip(c.Summary, 400))
	}
	if len(c.Files) > 0 {
		var paths []string
		for _, f := range c.Files[:min(4, len(c.Files))] {
			paths = append(paths, f.Path)
		}
		txt += " (files " + strings.Join(paths, ", ") + ")"
	}
	return txt
}

// deployRefs are the ledger's deploys and rollbacks, each a change of the
// kind of the commits it shipped (configuration only when every shipped
// commit changes settings only; code otherwise or when none is known). A
// deploy is dated by its end; byStart dates it by its start instead, when
// its first new pods run (a rollout's pods fail before the rollout ends).
func (ev *Evidence) deployRefs(byStart bool) []changeRef {
	var out []changeRef
	for _, d := range ev.Deploys {
		t := d.FinishedAt
		if t == nil || byStart && d.StartedAt != nil {
			t = d.StartedAt
		}
		what := "deploy"
		if d.IsRollback {
			what = "rollback"
		}
		txt := fmt.Sprintf("%s of %s %s -> %s at %s", what, firstNonEmptyStr(d.Service, "a service"), firstNonEmptyStr(d.PreviousRevision, "?"), d.Revision, hhmm(t))
		kind := changeCode
		rc := ev.releaseCommits(d.Deploy)
		if len(rc) > 0 {
			kind = changeConfig
			for _, c := range rc {
				if commitKind(c.Commit) == changeCode {
					kind = changeCode
				}
			}
		}
		settings := false
		if d.Revision != "" && d.Revision == d.PreviousRevision && !d.IsRollback {
			// The revision it already ran, deployed again: what changed
			// is its configuration.
			txt += " (the same revision: settings only)"
			kind, settings = changeConfig, true
		}
		out = append(out, changeRef{text: txt, at: t, deploy: kind == changeCode, cite: d.Cite, kind: kind, service: d.Service, commits: rc, settingsRollout: settings})
	}
	return out
}

// previousRevision is the revision of hist numbered just below rv's (the
// entry before it when revisions are not numbers).
func previousRevision(hist []facts.Revision, rv facts.Revision) (facts.Revision, bool) {
	n, err := strconv.Atoi(rv.Revision)
	if err != nil {
		for i := 1; i < len(hist); i++ {
			if hist[i].Name == rv.Name && hist[i].Revision == rv.Revision {
				return hist[i-1], true
			}
		}
		return facts.Revision{}, false
	}
	var best facts.Revision
	bestN, found := -1, false
	for _, o := range hist {
		m, err := strconv.Atoi(o.Revision)
		if err != nil || m >= n || m <= bestN {
			continue
		}
		best, bestN, found = o, m, true
	}
	return best, found
}

// sameImages: two non-empty image lists hold the same images.
func sameImages(a, b []string) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// releaseCommits are the commits a deploy shipped: the one of its revision
// and the earlier ones of the same service not shipped by another deploy.
// A revision that names no commit (a version number) shipped the service's
// commits made after its previous deploy started and before this one did
// (releaseCommitWindow back at most, when no earlier deploy is known).
func (ev *Evidence) releaseCommits(d facts.Deploy) []Commit {
	var out []Commit
	for _, c := range ev.Commits {
		if c.Removed {
			continue
		}
		if namesCommit(d.Revision, c.SHA) || namesCommit(d.Commit, c.SHA) {
			out = append(out, c)
		}
	}
	if len(out) > 0 || d.Service == "" || d.IsRollback {
		return out
	}
	start := d.StartedAt
	if start == nil {
		start = d.FinishedAt
	}
	if start == nil {
		return nil
	}
	from := start.Add(-releaseCommitWindow)
	for _, o := range ev.Deploys {
		ot := o.StartedAt
		if ot == nil {
			ot = o.FinishedAt
		}
		if ot != nil && strings.EqualFold(o.Service, d.Service) && ot.Before(*start) && ot.After(from) {
			from = *ot
		}
	}
	for _, c := range ev.Commits {
		if c.Removed || c.Timestamp == nil || !strings.EqualFold(c.Service, d.Service) || ev.shippedByRevision(c) {
			continue
		}
		if c.Timestamp.After(from) && !c.Timestamp.After(*start) {
			out = append(out, c)
		}
	}
	return out
}

// releaseCommitWindow: how far before a deploy its unnamed commits may be.
const releaseCommitWindow = 14 * 24 * time.Hour

// shippedByRevision: a deploy names c's SHA as its revision.
func (ev *Evidence) shippedByRevision(c Commit) bool {
	for _, d := range ev.Deploys {
		if len(d.Revision) >= 7 && namesCommit(d.Revision, c.SHA) || len(d.Commit) >= 7 && namesCommit(d.Commit, c.SHA) {
			return true
		}
	}
	return false
}

// namesCommit: ref (a deploy's revision or commit) names the commit sha,
// either abbreviating the other.
func namesCommit(ref, sha string) bool {
	return ref != "" && sha != "" && (strings.HasPrefix(sha, ref) || strings.HasPrefix(ref, sha))
}

// ---- the finding ----

// anomalySummary builds the fallback finding from the strongest candidate;
// weak are the detector findings that did not reach their bar (their best
// category breaks an inconclusive vote). It reports false when nothing in
// the evidence is abnormal.
func (ev *Evidence) anomalySummary(weak []Finding) (Finding, bool) {
	var cands []*candidate
	for _, c := range ev.anomalyCandidates() {
		// A blip that is over (series back at their level, nothing
		// logged, no pod affected) is no anomaly left to explain: the
		// alert's condition no longer holds there.
		if !c.transientOnly() {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return Finding{}, false
	}
	top := cands[0]
	if f, ok := ev.clientNoise(top); ok {
		return f, true
	}
	if f, ok := ev.smallCounts(top); ok {
		return f, true
	}
	if f, ok := ev.mirrorFinding(top); ok {
		return f, true
	}
	if f, ok := ev.knownIssue(top); ok {
		return f, true
	}
	f := Finding{Mode: ModeAnomaly, Detector: ModeAnomaly, Entity: top.entity, Category: catUnknown}
	var parts []string
	var onset *time.Time
	earliest := func(t *time.Time) {
		if t != nil && !t.IsZero() && (onset == nil || t.Before(*onset)) {
			onset = t
		}
	}
	// Error logs and their dominant template.
	var dominant string
	if n := len(top.errLines); n > 0 {
		ts := templates(top.errLines)
		rep := ts[0].lines[0]
		for _, l := range ts[0].lines {
			if len(l.Message) > len(rep.Message) {
				rep = l
			}
		}
		var origins []string
		for _, l := range top.errLines {
			origins = appendUnique(origins, logOrigin(l))
			earliest(l.Timestamp)
		}
		first, last := top.errLines[0], top.errLines[n-1]
		src := rep.Cite.Source("logs")
		dominant = rep.Message
		p := fmt.Sprintf("%s in %s from %s", plural(n, "error log line", "error log lines"), SourceName(src), plural(len(origins), "source", "sources"))
		if first.Timestamp != nil {
			p += fmt.Sprintf(" between %s and %s", hhmm(first.Timestamp), hhmm(last.Timestamp))
		}
		if len(ts) == 1 {
			p += fmt.Sprintf(", all of one message: %s", quote(rep.Message))
		} else {
			p += fmt.Sprintf(", the most frequent message (%d of %d) being %s", len(ts[0].lines), n, quote(rep.Message))
		}
		parts = append(parts, p)
		for i, t := range ts {
			if i >= 3 {
				break
			}
			ex := t.lines[0]
			f.validated(fmt.Sprintf("%s log (%s, %s), %s: %s", ex.Cite.Source("logs"), logOrigin(ex), logLevel(ex.LogLine), plural(len(t.lines), "occurrence", "occurrences"), quote(ex.Message)), citesOfLogs(t.lines))
		}
		if top.kind == "dependency" {
			parts[len(parts)-1] = fmt.Sprintf("%s name it (%s)", joinNames(top.callers), parts[len(parts)-1])
		}
	}
	// Warning events by reason.
	if len(top.events) > 0 {
		type rc struct {
			reason string
			n      int32
			ex     Event
			c      Cite
		}
		var reasons []*rc
		for _, e := range top.events {
			earliest(e.FirstSeen)
			if e.FirstSeen == nil {
				earliest(e.LastSeen)
			}
			found := false
			for _, r := range reasons {
				if r.reason == e.Reason {
					r.n += eventCount(e.Event)
					r.c.merge(e.Cite)
					found = true
				}
			}
			if !found {
				reasons = append(reasons, &rc{reason: e.Reason, n: eventCount(e.Event), ex: e, c: e.Cite})
			}
		}
		sort.SliceStable(reasons, func(i, j int) bool { return reasons[i].n > reasons[j].n })
		var rs []string
		for _, r := range reasons {
			rs = append(rs, fmt.Sprintf("%s x%d", r.reason, r.n))
			f.validated("Warning event "+eventLine(r.ex), r.c)
		}
		parts = append(parts, fmt.Sprintf("Warning events %s (e.g. %s)", strings.Join(rs, ", "), quote(reasons[0].ex.Message)))
	}
	// Pods: restarts and readiness.
	if len(top.badPods) > 0 || top.restarts > 0 {
		var names []string
		var reasons []string
		for _, p := range top.badPods {
			names = appendUnique(names, p.Name)
			if _, r := waitingReason(p.Pod); r != "" {
				reasons = appendUnique(reasons, r)
			}
			for _, c := range p.Containers {
				if c.LastReason != "" {
					reasons = appendUnique(reasons, "last terminated "+c.LastReason)
				}
			}
		}
		p := ""
		if len(top.badPods) > 0 {
			p = fmt.Sprintf("%s not healthy (%s", plural(len(top.badPods), "pod", "pods"), joinNames(names))
			if len(top.notReady) > 0 {
				p += fmt.Sprintf(", %d not Ready", len(top.notReady))
			}
			p += ")"
		}
		if top.restarts > 0 {
			if p != "" {
				p += ", "
			}
			p += plural(int(top.restarts), "container restart", "container restarts")
		}
		if len(reasons) > 0 {
			p += " (" + strings.Join(reasons, ", ") + ")"
		}
		parts = append(parts, p)
		var all []Pod
		all = append(all, top.badPods...)
		f.validated("Pod status: "+p, citesOfPods(all))
		for _, bp := range top.badPods {
			earliest(bp.StartTime)
		}
	}
	if len(top.dbEvents) > 0 {
		var msgs []string
		for i, e := range top.dbEvents {
			if i < 3 {
				msgs = append(msgs, hhmm(e.Time)+" "+quote(e.Message))
			}
			f.validated(dbEventLine(e), e.Cite)
			earliest(e.Time)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(len(top.dbEvents), "database event", "database events"), strings.Join(msgs, "; ")))
	}
	// Metrics: the largest changes.
	sort.SliceStable(top.changes, func(i, j int) bool { return top.changes[i].magnitude > top.changes[j].magnitude })
	var mtexts []string
	for i, ch := range top.changes {
		if i >= 3 {
			break
		}
		mtexts = append(mtexts, ch.text())
		f.validated(fmt.Sprintf("%s: %s", SourceName(ch.s.Cite.Source("metrics")), ch.text()), ch.s.Cite)
		earliest(ch.r.onset)
	}
	if len(mtexts) > 0 {
		parts = append(parts, "metrics changed: "+strings.Join(mtexts, "; "))
	}
	if top.kind == "node" {
		for _, n := range ev.Nodes {
			if n.Name != top.name {
				continue
			}
			if pr := nodePressures(n.Node); len(pr) > 0 || nodeReadyStatus(n.Node) != "True" {
				s := fmt.Sprintf("node %s Ready=%s", n.Name, nodeReadyStatus(n.Node))
				if len(pr) > 0 {
					s += ", pressure " + strings.Join(pr, ", ")
				}
				parts = append(parts, s)
				f.validated("Node condition: "+s, n.Cite)
			}
		}
	}
	change := ev.nearestChange(top.name, onset, top.symptomTexts()...)
	cv, votes := ev.inferCategory(top, change, onset)

	if cv.cat == catUnknown {
		// A weak specific finding about the same entity breaks the tie.
		for _, w := range weak {
			if !w.Healthy && w.Category != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED && w.Category != catUnknown && (w.Entity == top.entity || strings.HasSuffix(w.Entity, "/"+top.name)) {
				cv = categoryVote{cat: w.Category, why: fmt.Sprintf("the %s detector's weak finding (%.2f) points the same way", w.Mode, w.Score)}
				break
			}
		}
	}
	tentative := false
	if cv.cat == catUnknown && len(votes) > 0 && votes[0].score >= 1 && (len(votes) == 1 || votes[0].score > votes[1].score) {
		// No reading dominates, but one leads: name it as the most likely
		// reading, with a low confidence and its competitors listed.
		cv, tentative = votes[0], true
	}
	f.Category = cv.cat
	placement := ""
	if cv.cat == catInfra && cv.kinds["placement"] {
		if node, bad, _, ok := ev.confinedNode(top); ok {
			f.Entity = "node/" + node // the node the failure is confined to
			placement = fmt.Sprintf("The failure is confined to node %s: the failing pods (%s) all run there and the workload's pods on other nodes are fine", node, joinNames(bad))
		}
	}
	if cv.cat == catConfig && cv.kinds["conditions"] && top.kind == "workload" {
		if co, ok := blockedController(top.conditions); ok {
			// The controller's settings are the cause, the workload's
			// saturation their effect: the culprit is the controller.
			f.Entity = strings.ToLower(co.kind) + "/" + co.ns + "/" + co.name
		}
	}
	// Statement.
	what := map[string]string{"workload": "workload", "node": "node", "dependency": "downstream dependency", "database": "database", "object": strings.SplitN(top.entity, "/", 2)[0]}[top.kind]
	lead := firstNonEmptyStr(placement, "No known failure signature matched")
	if !tentative && change != nil && (change.entity != "" || change.object != "") && onset != nil && cv.kinds["changes"] {
		if cat, _, ok := changeVote(change.kind); ok && cat == cv.cat {
			// The change is the cause and the abnormal entity its effect:
			// the culprit is the changed object.
			lead = fmt.Sprintf("The %s, %s before the onset, is the most likely cause", change.text, durHuman(onset.Sub(*change.at)))
			if change.entity != "" {
				f.Entity = change.entity
			}
		}
	}
	f.Statement = fmt.Sprintf("%s; the strongest abnormal signal is on %s %s: %s", lead, what, top.name, strings.Join(parts, "; "))
	if onset != nil {
		f.Statement += fmt.Sprintf(". Onset %s", hhmm(onset))
	}
	for _, l := range ev.observations(top.name, onset, top.symptomTexts()) {
		if change != nil && strings.Contains(change.text, l.Message[:min(len(l.Message), 60)]) {
			continue // the change itself, quoted below
		}
		f.validated(fmt.Sprintf("What %s logged at %s about what the errors name: %s", logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
	}
	for _, l := range ev.errorAccount(top.name, onset, top.errLines) {
		f.validated(fmt.Sprintf("What %s itself logged at %s about what its errors name: %s", logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite)
	}
	if change == nil || change.unrelated {
		// Nothing near the onset explains it: the failing service's own
		// earlier changes (a setting shipped days before that bites when
		// its condition first arrives) are what an SRE reads next.
		for _, c := range ev.earlierCommits(top.name, onset) {
			f.validated(fmt.Sprintf("Earlier change to %s, %s before the onset: %s", top.name, durHuman(onset.Sub(*c.Timestamp)), commitText(c)), c.Cite)
		}
	}
	if change != nil {
		gap := durHuman(onset.Sub(*change.at))
		f.Statement += fmt.Sprintf("; the nearest preceding change is the %s, %s before", change.text, gap)
		f.validated(fmt.Sprintf("Nearest change before the onset (%s): %s, %s before", hhmm(onset), change.text, gap), change.cite)
		for _, c := range change.commits {
			// What the change shipped, in its authors' words.
			f.validated(commitText(c), c.Cite)
		}
	}
	if tentative {
		var vs []string
		for _, v := range votes {
			vs = append(vs, fmt.Sprintf("%s (%.1f)", categoryWord(v.cat), v.score))
		}
		f.Statement += fmt.Sprintf(". Possibly %s (%s), but the readings compete: %s", categoryWord(cv.cat), cv.why, strings.Join(vs, ", "))
		f.inferred("Competing readings of the signals, the leading one not dominant: " + strings.Join(vs, ", "))
	} else if cv.cat != catUnknown {
		f.Statement += fmt.Sprintf(". Most likely %s: %s", categoryWord(cv.cat), cv.why)
		f.inferred(fmt.Sprintf("Category %s inferred from the evidence: %s", categoryWord(cv.cat), cv.why))
	} else {
		f.Statement += ". The evidence does not establish the failure mode"
		if len(votes) > 0 {
			var vs []string
			for _, v := range votes {
				vs = append(vs, fmt.Sprintf("%s (%.1f)", categoryWord(v.cat), v.score))
			}
			f.inferred("Competing readings of the signals, none dominant: " + strings.Join(vs, ", "))
		}
	}
	if len(cands) > 1 {
		var others []string
		for i, c := range cands[1:] {
			if i >= 3 {
				break
			}
			others = append(others, fmt.Sprintf("%s (strength %.2f)", c.entity, c.strength))
		}
		f.inferred(fmt.Sprintf("%s has the strongest abnormal signals (strength %.2f); next: %s", top.entity, top.strength, strings.Join(others, ", ")))
	}
	// Chain.
	var chain []string
	if change != nil {
		chain = append(chain, "Change: "+change.text)
	}
	switch top.kind {
	case "dependency":
		chain = append(chain, fmt.Sprintf("%s fails or stops answering", top.name), fmt.Sprintf("%s get errors calling it (%s)", joinNames(top.callers), clip(dominant, 100)))
	default:
		if dominant != "" {
			chain = append(chain, fmt.Sprintf("%s starts failing: %s", top.name, clip(dominant, 100)))
		} else {
			chain = append(chain, fmt.Sprintf("%s shows abnormal signals", top.name))
		}
	}
	if len(mtexts) > 0 {
		chain = append(chain, "Observed effect: "+mtexts[0])
	}
	chain = append(chain, "The alert fires")
	f.Chain = chain
	f.Remediation = []string{
		fmt.Sprintf("Inspect %s first: its signals are the strongest in the evidence", top.entity),
	}
	if change != nil {
		f.Remediation = append(f.Remediation, "Check whether reverting the "+change.text+" stops the errors")
	}
	f.Signals = []string{"anomaly", top.name}
	// Confidence: strength and category certainty, higher when two
	// independent kinds of evidence support the category (a strength above
	// 1, a dependency lifted over its caller, counts as 1). A confidence
	// only: whether it pages or concludes is decided by the owners of those
	// gates against their configured values (delivery's confidence gate,
	// the critic's conclude confidence).
	f.Sources = appendUnique(f.Sources, top.sourcesFrom()...)
	if change != nil {
		f.Sources = appendUnique(f.Sources, change.cite.Sources...)
	}
	switch {
	case cv.cat == catUnknown || tentative:
		f.Score = 0.3 + 0.2*math.Min(1, top.strength)
	case len(cv.kinds) >= 2:
		f.Score = 0.62 + 0.1*math.Min(1, top.strength)
		f.inferred(fmt.Sprintf("Corroborated by %d independent kinds of evidence: %s", len(cv.kinds), strings.Join(sortedKeys(cv.kinds), ", ")))
	default:
		f.Score = 0.4 + 0.2*math.Min(1, top.strength)
	}
	return f, true
}

func (c *candidate) sourcesFrom() []string {
	var out []string
	for _, l := range c.errLines {
		out = appendUnique(out, l.Sources...)
	}
	for _, e := range c.events {
		out = appendUnique(out, e.Sources...)
	}
	for _, p := range c.badPods {
		out = appendUnique(out, p.Sources...)
	}
	for _, ch := range c.changes {
		out = appendUnique(out, ch.s.Sources...)
	}
	for _, e := range c.dbEvents {
		out = appendUnique(out, e.Sources...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func categoryWord(c investigationv1.RootCauseCategory) string {
	return strings.ToLower(strings.TrimPrefix(c.String(), "ROOT_CAUSE_CATEGORY_"))
}

// reRemoteWords: the line is about another system's answer.
var reRemoteWords = regexp.MustCompile(`(?i)\b(upstream|vendor|provider|remote|third[- ]party|partner|external|downstream)\b|[a-z0-9][a-z0-9.-]*: (?:http )?(?:429|too many requests)`)

// remoteLimit: the line reports a limit another system enforces on the
// service (its 429, its rate limit, its quota), not one of the service's
// own resources.
func remoteLimit(text, self string) bool {
	if !reRemoteLimit.MatchString(text) {
		return false
	}
	return downstreamHost(text, self) != "" || reRemoteWords.MatchString(text)
}

// symptomTexts are the candidate's error lines, event messages and
// changed series (name and labels): what a cause must explain.
func (c *candidate) symptomTexts() []string {
	var out []string
	for _, l := range c.errLines {
		out = append(out, l.Message)
	}
	for _, e := range c.events {
		out = append(out, e.Reason+": "+e.Message)
	}
	for _, ch := range c.changes {
		out = append(out, ch.text())
	}
	for _, cd := range c.conditions {
		out = append(out, cd.name+" "+cd.c.Type+" "+cd.c.Reason+": "+cd.c.Message)
	}
	return out
}

// namedIn: name (at least 4 characters) occurs in one of the texts.
func namedIn(name string, texts []string) bool {
	if len(name) < 4 {
		return false
	}
	name = strings.ToLower(name)
	for _, t := range texts {
		if strings.Contains(strings.ToLower(t), name) {
			return true
		}
	}
	return false
}

// blockedController is the first abnormal condition, among a workload's,
// of a controller that acts on it (not the workload's own rollout) and
// says the controller cannot act: not an autoscaler at its maximum, which
// acts as told.
func blockedController(conds []condOf) (condOf, bool) {
	for _, co := range conds {
		if strings.EqualFold(co.kind, "Deployment") || strings.EqualFold(co.c.Type, "ScalingLimited") {
			continue
		}
		return co, true
	}
	return condOf{}, false
}

// distinctWorkloads counts names, one per workload: a log shipper's
// service name and the pods' workload name of the same software
// ("ingress-nginx", "ingress-nginx-controller") are one.
func distinctWorkloads(names []string) int {
	n := 0
	for i, a := range names {
		dup := false
		for _, b := range names[:i] {
			la, lb := strings.ToLower(a), strings.ToLower(b)
			if la == lb || strings.HasPrefix(la, lb+"-") || strings.HasPrefix(lb, la+"-") {
				dup = true
				break
			}
		}
		if !dup {
			n++
		}
	}
	return n
}

// failingLine: the line reports a failure: an error, a warning of a
// dependency's failure, of a bad value or one that persists, or a request
// the server or proxy failed (whatever level its access log is written at).
func (ev *Evidence) failingLine(l LogLine) bool {
	if reWarningClass.MatchString(l.Message) || reClientGone.MatchString(l.Message) || reRetrySucceeded.MatchString(l.Message) || ev.absorbedRetry(l) {
		return false // a runtime's warning category, a client that left, or a retry that succeeded (in the line or after it) reports no failure, however often
	}
	lv := logLevel(l.LogLine)
	return lv == "ERROR" || lv == "FATAL" || lv == "WARN" && (depSymptom.MatchString(l.Message) || reInvalidValue.MatchString(l.Message) || ev.persistentWarning(l)) || failedRequestLine(l.Message)
}

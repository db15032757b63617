package router

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/target"
)

// SmartPlan is what the smart path routes a request to: one primary call and
// optional companion calls (a DNS check also pulls the namespace's events).
type SmartPlan struct {
	Primary    *Call
	Companions []*Call
}

// entities are the things a natural-language request names.
type entities struct {
	text      string // lower-cased request with quoted parts removed
	words     []string
	quoted    string
	namespace string // named explicitly
	podHint   string // "web pod", "pod web-5b6q"
	service   string // "service x", "x service", or a known service
	kind      string // describe target kind
	name      string // describe target name
	target    string // a name whose role is unknown ("cpu of web")
	minutes   float64
	previous  bool
	sha       string
	rc        *evidencev1.RouterContext
}

var (
	reQuoted       = regexp.MustCompile("\"([^\"]+)\"|'([^']+)'|`([^`]+)`")
	reWord         = regexp.MustCompile(`[a-z0-9][a-z0-9._*/:-]*`)
	reDuration     = regexp.MustCompile(`\b(\d+(?:\.\d+)?)\s*(m|min|mins|minutes?|h|hrs?|hours?|d|days?|s|secs?|seconds?)\b`)
	reLastUnit     = regexp.MustCompile(`\b(?:last|past|previous)\s+(hour|day|minute|half hour)\b`)
	rePrevious     = regexp.MustCompile(`\b(previous|prior|crashed|terminated|last crash|before (?:it )?(?:crashed|restarted|died))\b`)
	reSHA          = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	reDNS          = regexp.MustCompile(`\b(dns|nxdomain|enotfound|eai_again|getaddrinfo|unknownhostexception|name resolution|resolv(?:e|ing|er|ution)|no such host|coredns|kube-dns)\b`)
	reDescribe     = regexp.MustCompile(`\b(describe|details? (?:of|for|on|about)|spec of|manifest|yaml of|configuration of)\b`)
	reLogs         = regexp.MustCompile(`\b(logs?|stdout|stderr|output of)\b`)
	reSearch       = regexp.MustCompile(`\b(search|grep|find|look for|containing|matching|occurrences?)\b`)
	reDeploys      = regexp.MustCompile(`\b(deploy(?:s|ed|ing)?|rollouts?|rolled out|releases?|released|shipped|what changed|recent changes|changed recently|new version)\b`)
	reCommits      = regexp.MustCompile(`\b(commits?|code changes?|diffs?|pull requests?|prs?|merged|git)\b`)
	reDB           = regexp.MustCompile(`\b(database|db|rds|postgres(?:ql)?|mysql|aurora|sql|slow quer(?:y|ies)|top quer(?:y|ies)|replication|replica lag|failover|max_connections|db connections?)\b`)
	reMetrics      = regexp.MustCompile(`\b(cpu|memory|mem|ram|latency|p50|p90|p95|p99|slow(?:er|ness)?|error rate|error ratio|5xx|500s|throughput|rps|qps|requests per second|request rate|traffic|saturation|promql|metrics?|graph|throttl(?:ed|ing))\b`)
	reErrorsTxt    = regexp.MustCompile(`\b(errors?|exceptions?|stack ?traces?|panics?|timeouts?|failures?)\b`)
	reEvents       = regexp.MustCompile(`\b(events?|warnings?)\b`)
	reNodes        = regexp.MustCompile(`\b(nodes?|kubelet|notready|node pressure|disk pressure)\b`)
	reStatusPage   = regexp.MustCompile(`\bstatus ?pages?\b`)
	reStatusPageOf = regexp.MustCompile(`\bstatus ?pages? (?:of|for) (?:the )?([a-z0-9][a-z0-9.-]*[a-z0-9])`)
	reOwnersPage   = regexp.MustCompile(`\b([a-z0-9][a-z0-9.-]*[a-z0-9])(?:'s)? status ?pages?\b`)
	reMonitors     = regexp.MustCompile(`\b(monitors?|alert rules?|alerting rules?)\b`)
	reReinv        = regexp.MustCompile(`\b(re-?investigate|investigate (?:the )?(?:service )?|rerun (?:the )?investigation|run (?:the )?(?:full )?pipeline)`)
	reStatus       = regexp.MustCompile(`\b(status|health|healthy|unhealthy|crash(?:es|ed|ing)?|crashloop(?:backoff)?|restart(?:s|ing|ed)?|oom(?:killed)?|running|pending|ready|failing|evicted|list pods|pods)\b`)
	reListDep      = regexp.MustCompile(`\b(list|all|show) (?:the )?deployments\b`)
	reListPods     = regexp.MustCompile(`\b(list|all) (?:the )?pods\b`)
	reDBQueries    = regexp.MustCompile(`\b(quer(?:y|ies)|statements?|sql)\b`)
	reDBEventsTxt  = regexp.MustCompile(`\b(events?|failover|maintenance|reboot)\b`)
	rePromThrottle = regexp.MustCompile(`\bthrottl`)
	rePromCPU      = regexp.MustCompile(`\bcpu\b`)
	rePromMemory   = regexp.MustCompile(`\b(memory|mem|ram)\b`)
	rePromErrors   = regexp.MustCompile(`\b(error rate|error ratio|5xx|500s|errors)\b`)
	rePromLatency  = regexp.MustCompile(`\b(latency|p50|p90|p95|p99|slow)\b`)
	rePromRestart  = regexp.MustCompile(`\brestart`)
	rePromQuantile = regexp.MustCompile(`\bp(50|90|95|99)\b`)
	reDBMetric     = regexp.MustCompile(`\b(cpu|connections?|replica(?:tion)? lag|iops|storage|memory|latency)\b`)
	reSearchFor    = regexp.MustCompile(`\b(?:for|containing|matching|with)\s+(.+)$`)
	reThisNS       = regexp.MustCompile(`\b(this|current|the same|my|our) (namespace|ns)\b`)
)

var kinds = map[string]string{
	"pod": "pod", "deployment": "deployment", "deploy": "deployment", "service": "service", "svc": "service",
	"node": "node", "configmap": "configmap", "cm": "configmap", "ingress": "ingress", "pvc": "pvc",
	"persistentvolumeclaim": "pvc", "statefulset": "statefulset", "sts": "statefulset", "daemonset": "daemonset",
	"ds": "daemonset", "replicaset": "replicaset", "rs": "replicaset", "job": "job", "cronjob": "cronjob",
	"hpa": "hpa", "secret": "secret", "namespace": "namespace",
}

// stopwords are never names.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the this that these those my our your all any some its it me us i we you
		of for in on at to from with by and or is are was were be been being do does did has have had not no
		show get give fetch pull check see look tell list run display view open find search grep query
		what whats what's how why when where which who whom there here please can could would will should may might
		logs log pod pods container containers previous prior crashed crashing crash current currently
		namespace namespaces ns service services deployment deployments last past recent recently minutes minute hours hour
		days day seconds second errors error status health healthy unhealthy events event warning warnings
		cpu memory mem latency traffic throughput rate usage metric metrics promql graph quick now today
		describe details detail spec about deploy deploys deployed rollout rollouts release releases changed changes
		commits commit code diff database db any going on happening wrong up down restart restarts restarting oom
		running pending ready failing node nodes dns resolution monitors monitor alert alerts rules instance
		investigate reinvestigate re-investigate again p50 p90 p95 p99 5xx 500s rps qps requests request
		same over within since during into out lines tail just also too very much many more less
		slow slowest top queries query statements statement lag connections connection storage iops load`) {
		stopwords[w] = true
	}
}

// parseEntities extracts names, durations and flags from a request.
func parseEntities(text string, rc *evidencev1.RouterContext) *entities {
	e := &entities{rc: rc}
	low := strings.ToLower(text)
	if m := reQuoted.FindStringSubmatch(text); m != nil {
		e.quoted = firstNonEmpty(m[1], m[2], m[3])
		low = strings.ToLower(reQuoted.ReplaceAllString(text, " "))
	}
	e.text = low
	if m := reDuration.FindStringSubmatch(low); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		switch u := m[2]; {
		case strings.HasPrefix(u, "h"):
			v *= 60
		case strings.HasPrefix(u, "d"):
			v *= 1440
		case strings.HasPrefix(u, "s"):
			v /= 60
		}
		if v > 0 {
			e.minutes = v
		}
	} else if m := reLastUnit.FindStringSubmatch(low); m != nil {
		e.minutes = map[string]float64{"hour": 60, "day": 1440, "minute": 1, "half hour": 30}[m[1]]
	}
	e.previous = rePrevious.MatchString(low)
	if m := reSHA.FindString(low); m != "" && strings.ContainsAny(m, "abcdef") {
		e.sha = m
	}
	e.words = reWord.FindAllString(low, -1)
	if reThisNS.MatchString(low) && rc.GetActiveNamespace() != "" {
		e.namespace = rc.GetActiveNamespace()
	}
	isName := func(w string) bool {
		if stopwords[w] || len(w) < 2 {
			return false
		}
		if _, err := strconv.ParseFloat(w, 64); err == nil {
			return false
		}
		return !reDuration.MatchString(w) || strings.ContainsAny(w, "-.*")
	}
	ws := e.words
	for i, w := range ws {
		if !isName(w) {
			continue
		}
		prev, prev2, next := "", "", ""
		if i > 0 {
			prev = ws[i-1]
		}
		if i > 1 {
			prev2 = ws[i-2]
		}
		if i+1 < len(ws) {
			next = ws[i+1]
		}
		if prev == "the" {
			prev = prev2
		}
		switch {
		case prev == "namespace" || prev == "ns" || next == "namespace" || next == "ns":
			setOnce(&e.namespace, w)
		case prev == "pod" || next == "pod" || next == "pods" || next == "container" || next == "containers":
			setOnce(&e.podHint, w)
		case prev == "service" || prev == "svc" || next == "service":
			setOnce(&e.service, w)
		case kinds[prev] != "" && kinds[prev] != "namespace":
			if e.kind == "" {
				e.kind, e.name = kinds[prev], w
			}
		case prev == "in" || prev == "within" || prev == "inside":
			switch {
			case known(rc.GetDiscoveredServices(), w) || w == rc.GetActiveService():
				setOnce(&e.service, w)
			case len(matchPods(rc, w)) > 0 && !known(rc.GetDiscoveredNamespaces(), w):
				setOnce(&e.target, w)
			default:
				setOnce(&e.namespace, w)
			}
		default:
			switch {
			case known(rc.GetDiscoveredNamespaces(), w) || (w == rc.GetActiveNamespace() && w != ""):
				setOnce(&e.namespace, w)
			case known(rc.GetDiscoveredServices(), w) || (w == rc.GetActiveService() && w != ""):
				setOnce(&e.service, w)
			default:
				setOnce(&e.target, w)
			}
		}
	}
	return e
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func known(xs []string, w string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, w) {
			return true
		}
	}
	return false
}

// matchPods returns the known pods a hint names: an exact name, else those
// the hint prefixes, else those containing it.
func matchPods(rc *evidencev1.RouterContext, hint string) []string {
	hint = strings.TrimSuffix(strings.TrimSuffix(hint, "*"), "-")
	if hint == "" {
		return nil
	}
	pods := rc.GetPodNames()
	if rc.GetActivePod() != "" && !known(pods, rc.GetActivePod()) {
		pods = append([]string{rc.GetActivePod()}, pods...)
	}
	var prefix, contains []string
	for _, p := range pods {
		lp := strings.ToLower(p)
		switch {
		case lp == hint:
			return []string{p}
		case strings.HasPrefix(lp, hint):
			prefix = append(prefix, p)
		case strings.Contains(lp, hint):
			contains = append(contains, p)
		}
	}
	if len(prefix) > 0 {
		return prefix
	}
	return contains
}

// resolvePod turns a hint into a pod name or a wildcard the tools resolve.
func resolvePod(rc *evidencev1.RouterContext, hint string) string {
	if hint == "" {
		return ""
	}
	ms := matchPods(rc, hint)
	switch {
	case len(ms) == 1:
		return ms[0]
	case len(ms) > 1:
		for _, m := range ms {
			if m == rc.GetActivePod() {
				return m
			}
		}
		if p := commonPrefix(ms); len(p) >= len(strings.TrimSuffix(hint, "*")) {
			return strings.TrimRight(p, "-") + "-*"
		}
	}
	if strings.Contains(hint, "*") {
		return hint
	}
	return strings.TrimRight(hint, "-") + "-*"
}

func commonPrefix(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	p := xs[0]
	for _, x := range xs[1:] {
		for !strings.HasPrefix(x, p) {
			p = p[:len(p)-1]
		}
	}
	// cut back to a dash boundary so "api-7f9-x" and "api-7f9-y" give "api-7f9-"
	if i := strings.LastIndex(p, "-"); i > 0 {
		p = p[:i+1]
	}
	return p
}

// builder builds a call for a tool, assigning semantic values to whichever
// parameter names the tool has.
type builder struct {
	reg *Registry
}

func (b builder) call(intent string) *Call {
	t, ok := b.reg.Tool(intent)
	if !ok {
		return nil
	}
	return &Call{Tool: t, Params: map[string]any{}}
}

// set assigns v to the first of names the tool has, when v is valid for it.
func (c *Call) set(v any, names ...string) bool {
	if c == nil {
		return false
	}
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		return false
	}
	for _, n := range names {
		p := findParam(c.Tool, n)
		if p == nil {
			continue
		}
		if _, done := c.Params[p.GetName()]; done {
			return true
		}
		cv, err := coerce(c.Tool, p, v)
		if err != nil {
			return false
		}
		c.Params[p.GetName()] = cv
		return true
	}
	return false
}

// setWindow sets a look-back in minutes on whichever window parameter the tool has.
func (c *Call) setWindow(minutes float64) {
	if c == nil || minutes <= 0 {
		return
	}
	if c.set(minutes, "since_minutes", "range_minutes", "minutes", "window_minutes") {
		return
	}
	c.set(strconv.FormatFloat(minutes, 'f', -1, 64)+"m", "since", "lookback", "window")
}

// first returns the first registered intent's call.
func (b builder) first(intents ...string) *Call {
	for _, in := range intents {
		if c := b.call(in); c != nil {
			return c
		}
	}
	return nil
}

// statusPageProvider is the provider a request for a status page names
// ("status page of paynova", "paynova's status page"), "" for none.
func statusPageProvider(t string) string {
	m := reStatusPageOf.FindStringSubmatch(t)
	if m == nil {
		m = reOwnersPage.FindStringSubmatch(t)
	}
	if m == nil {
		return ""
	}
	p := m[1]
	switch p {
	case "the", "its", "their", "a", "any", "check", "show", "provider", "providers", "vendor", "our", "my", "public", "every", "all":
		return ""
	}
	if h := target.Provider(p); h != "" {
		return h // a host: its provider
	}
	return p
}

// dnsQuery matches the usual DNS failure signatures of Go, glibc, Node and Java clients.
const dnsQuery = `dns OR "no such host" OR NXDOMAIN OR ENOTFOUND OR EAI_AGAIN OR getaddrinfo OR UnknownHostException OR "name resolution" OR "server misbehaving"`

// ParseNatural maps a natural-language request to tool calls without a model.
// It returns nil when it cannot tell what is asked: it never guesses a tool.
func ParseNatural(reg *Registry, text string, rc *evidencev1.RouterContext) *SmartPlan {
	e := parseEntities(text, rc)
	b := builder{reg: reg}
	t := e.text
	plan := func(c *Call, companions ...*Call) *SmartPlan {
		if c == nil {
			return nil
		}
		var cs []*Call
		for _, x := range companions {
			if x != nil {
				cs = append(cs, x)
			}
		}
		return &SmartPlan{Primary: c, Companions: cs}
	}
	ns := e.namespace
	svc := firstNonEmpty(e.service, knownAs(rc.GetDiscoveredServices(), e.target))

	switch {
	case reStatusPage.MatchString(t) && b.call("get_status_page") != nil:
		c := b.call("get_status_page")
		c.set(statusPageProvider(t), "provider")
		return plan(c)

	case reDNS.MatchString(t):
		if c := b.call("check_dns"); c != nil {
			c.set(ns, "namespace")
			c.set(firstNonEmpty(e.service, e.target), "host", "name", "service")
			return plan(c)
		}
		c := b.call("search_logs")
		c.set(firstNonEmpty(e.quoted, dnsQuery), "query")
		c.set(ns, "namespace")
		c.set(svc, "service")
		c.setWindow(e.minutes)
		ev := b.call("get_events")
		ev.set(ns, "namespace")
		ev.setWindow(e.minutes)
		if c == nil {
			return plan(ev)
		}
		return plan(c, ev)

	case reDescribe.MatchString(t) || (e.kind != "" && !reLogs.MatchString(t) && !reEvents.MatchString(t) && !reMetrics.MatchString(t) && !reDeploys.MatchString(t)):
		c := b.call("describe_resource")
		if c == nil {
			return nil
		}
		kind, name := e.kind, e.name
		if name == "" {
			name = firstNonEmpty(e.podHint, e.target, e.service)
			switch {
			case e.podHint != "" || len(matchPods(rc, name)) > 0:
				kind, name = "pod", resolvePodExact(rc, name)
			case kind == "" && name != "":
				kind = "deployment"
			}
		}
		if kind == "pod" {
			name = resolvePodExact(rc, name)
		}
		c.set(kind, "kind")
		c.set(name, "name", "resource_name")
		c.set(ns, "namespace")
		return plan(c)

	case reLogs.MatchString(t) && (reSearch.MatchString(t) || e.quoted != "") && e.podHint == "" && !e.previous:
		c := b.first("search_logs", "fetch_pod_logs")
		if c == nil {
			return nil
		}
		c.set(firstNonEmpty(e.quoted, searchTerms(e)), "query")
		c.set(ns, "namespace")
		c.set(svc, "service")
		if strings.Contains(t, "error") {
			c.set("ERROR", "level")
		}
		c.setWindow(e.minutes)
		if c.Tool.GetIntent() == "search_logs" {
			return plan(c)
		}
		return nil

	case reLogs.MatchString(t) || e.previous:
		hint := firstNonEmpty(e.podHint, e.target, e.service)
		c := b.first("fetch_pod_logs")
		if c == nil || (hint == "" && rc.GetActivePod() == "" && !strings.Contains(t, "pod")) {
			// no pod named: a log search over the service or namespace
			s := b.call("search_logs")
			if s == nil || reLogs.FindString(t) == "" {
				return nil
			}
			s.set(firstNonEmpty(e.quoted, searchTerms(e), "*"), "query")
			s.set(ns, "namespace")
			s.set(svc, "service")
			s.setWindow(e.minutes)
			return plan(s)
		}
		c.set(resolvePod(rc, hint), "pod")
		c.set(ns, "namespace")
		if e.previous {
			c.set(true, "previous")
		}
		c.setWindow(e.minutes)
		return plan(c)

	case reCommits.MatchString(t) && !reDB.MatchString(t):
		if e.sha != "" {
			if c := b.call("get_commit_diff"); c != nil {
				c.set(e.sha, "sha", "commit")
				return plan(c)
			}
		}
		c := b.call("get_commits")
		c.set(firstNonEmpty(svc, e.target), "service")
		c.set(ns, "namespace")
		c.setWindow(e.minutes)
		return plan(c)

	case reDeploys.MatchString(t):
		c := b.call("get_deploy_history")
		c.set(firstNonEmpty(svc, e.target), "service")
		c.set(ns, "namespace")
		c.setWindow(e.minutes)
		return plan(c)

	case reDB.MatchString(t):
		var c *Call
		switch {
		case reDBQueries.MatchString(t):
			c = b.first("get_db_top_queries", "query_db_metrics")
		case reDBEventsTxt.MatchString(t):
			c = b.first("get_db_events", "query_db_metrics")
		default:
			c = b.first("query_db_metrics", "get_db_top_queries")
		}
		if c == nil {
			return nil
		}
		c.set(firstNonEmpty(e.target, rc.GetExtra()["db_instance"]), "instance", "db_instance", "db_instance_identifier", "instance_id")
		if m := reDBMetric.FindString(t); m != "" {
			c.set(m, "metric")
		}
		c.setWindow(e.minutes)
		return plan(c)

	case reMetrics.MatchString(t):
		c := b.call("query_prometheus")
		if c == nil {
			return nil
		}
		q := e.quoted
		if q == "" {
			q = promForText(t, metricTarget{Namespace: ns, Service: svc, PodHint: firstNonEmpty(e.podHint, e.target), rc: rc})
		}
		c.set(q, "query")
		c.setWindow(e.minutes)
		return plan(c)

	case reErrorsTxt.MatchString(t) && !reEvents.MatchString(t):
		c := b.call("search_logs")
		if c == nil {
			return nil
		}
		c.set(firstNonEmpty(e.quoted, searchTerms(e), "error"), "query")
		c.set(ns, "namespace")
		c.set(firstNonEmpty(svc, e.target), "service")
		if strings.Contains(t, "error") {
			c.set("ERROR", "level")
		}
		c.setWindow(e.minutes)
		return plan(c)

	case reEvents.MatchString(t):
		c := b.call("get_events")
		if c == nil {
			return nil
		}
		c.set(ns, "namespace")
		c.setWindow(e.minutes)
		if strings.Contains(t, "warning") {
			c.set("Warning", "type", "event_type")
		}
		if h := firstNonEmpty(e.podHint, e.target); h != "" && len(matchPods(rc, h)) > 0 {
			c.set("pod/"+resolvePodExact(rc, h), "involved_object")
		} else if e.kind != "" && e.name != "" {
			c.set(e.kind+"/"+e.name, "involved_object")
		}
		return plan(c)

	case reNodes.MatchString(t):
		c := b.first("get_node_health", "check_node_health")
		c.set(e.target, "node", "name")
		return plan(c)

	case reMonitors.MatchString(t):
		return plan(b.call("list_monitors"))

	case reReinv.MatchString(t):
		c := b.call("re_investigate_service")
		c.set(firstNonEmpty(svc, e.target), "service")
		c.set(ns, "namespace")
		return plan(c)

	case reListDep.MatchString(t):
		c := b.first("list_deployments", "check_pod_status")
		c.set(ns, "namespace")
		return plan(c)

	case reListPods.MatchString(t) || reStatus.MatchString(t):
		c := b.first("check_pod_status", "list_pods")
		if reListPods.MatchString(t) {
			c = b.first("list_pods", "check_pod_status")
		}
		if c == nil {
			return nil
		}
		c.set(ns, "namespace")
		if h := firstNonEmpty(e.podHint, e.target); h != "" {
			if ms := matchPods(rc, h); len(ms) == 1 {
				c.set(ms[0], "pod", "name")
			}
		}
		c.set(svc, "service")
		return plan(c)
	}
	return nil
}

func knownAs(xs []string, w string) string {
	if w != "" && known(xs, w) {
		return w
	}
	return ""
}

// resolvePodExact resolves a hint to one pod when the session knows it.
func resolvePodExact(rc *evidencev1.RouterContext, hint string) string {
	if ms := matchPods(rc, hint); len(ms) == 1 {
		return ms[0]
	}
	return hint
}

// searchTerms picks the words a log search should match.
func searchTerms(e *entities) string {
	if m := reSearchFor.FindStringSubmatch(e.text); m != nil {
		words := reWord.FindAllString(m[1], -1)
		var keep []string
		for _, w := range words {
			if w == "in" || w == "from" || w == "of" || w == "over" || w == "during" || w == "since" || w == "last" || w == "past" {
				break
			}
			if w != "the" && w != "a" && w != "any" && w != "logs" && w != "log" {
				keep = append(keep, w)
			}
		}
		if len(keep) > 0 {
			return strings.Join(keep, " ")
		}
	}
	for _, kw := range []string{"timeout", "exception", "panic", "fatal", "refused", "oom", "denied", "error"} {
		if strings.Contains(e.text, kw) {
			return kw
		}
	}
	return ""
}

// metricTarget is what a PromQL query is about.
type metricTarget struct {
	Namespace string
	Service   string
	Pod       string
	PodHint   string
	rc        *evidencev1.RouterContext
}

func promLabel(v string) string { return strconv.Quote(v) }

// podSelector builds container-metric matchers for a target.
func (m metricTarget) podSelector() string {
	var parts []string
	if m.Namespace != "" {
		parts = append(parts, "namespace="+promLabel(m.Namespace))
	}
	switch {
	case m.Pod != "":
		parts = append(parts, "pod="+promLabel(m.Pod))
	case m.PodHint != "" && m.rc != nil && len(matchPods(m.rc, m.PodHint)) == 1:
		parts = append(parts, "pod="+promLabel(matchPods(m.rc, m.PodHint)[0]))
	case firstNonEmpty(m.PodHint, m.Service) != "":
		parts = append(parts, "pod=~"+promLabel(regexp.QuoteMeta(strings.TrimSuffix(strings.TrimSuffix(firstNonEmpty(m.PodHint, m.Service), "*"), "-"))+"-.*"))
	}
	parts = append(parts, `container!=""`)
	return "{" + strings.Join(parts, ",") + "}"
}

// httpSelector builds request-metric matchers for a target.
func (m metricTarget) httpSelector(extra ...string) string {
	var parts []string
	if s := firstNonEmpty(m.Service, m.PodHint); s != "" {
		parts = append(parts, "service="+promLabel(strings.TrimSuffix(s, "*")))
	} else if m.Namespace != "" {
		parts = append(parts, "namespace="+promLabel(m.Namespace))
	}
	parts = append(parts, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

// PromQL kinds.
const (
	promCPU       = "cpu"
	promMemory    = "memory"
	promErrorRate = "error_rate"
	promLatency   = "latency"
	promRequests  = "requests"
	promRestarts  = "restarts"
	promThrottle  = "throttling"
)

// promQL returns a query of the given kind for a target.
func promQL(kind string, m metricTarget, quantile string) string {
	switch kind {
	case promCPU:
		return "sum by (pod) (rate(container_cpu_usage_seconds_total" + m.podSelector() + "[5m]))"
	case promThrottle:
		return "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total" + m.podSelector() + "[5m]))"
	case promMemory:
		return "sum by (pod) (container_memory_working_set_bytes" + m.podSelector() + ")"
	case promErrorRate:
		return fmt.Sprintf("sum(rate(http_requests_total%s[5m])) / sum(rate(http_requests_total%s[5m]))",
			m.httpSelector(`code=~"5.."`), m.httpSelector())
	case promLatency:
		if quantile == "" {
			quantile = "0.99"
		}
		return fmt.Sprintf("histogram_quantile(%s, sum by (le) (rate(http_request_duration_seconds_bucket%s[5m])))", quantile, m.httpSelector())
	case promRestarts:
		sel := m.podSelector()
		return "sum by (pod) (increase(kube_pod_container_status_restarts_total" + sel + "[1h]))"
	default:
		return "sum(rate(http_requests_total" + m.httpSelector() + "[5m]))"
	}
}

// promForText picks the PromQL kind a request asks about.
func promForText(t string, m metricTarget) string {
	switch {
	case rePromThrottle.MatchString(t):
		return promQL(promThrottle, m, "")
	case rePromCPU.MatchString(t):
		return promQL(promCPU, m, "")
	case rePromMemory.MatchString(t):
		return promQL(promMemory, m, "")
	case rePromErrors.MatchString(t):
		return promQL(promErrorRate, m, "")
	case rePromLatency.MatchString(t):
		q := "0.99"
		if mm := rePromQuantile.FindStringSubmatch(t); mm != nil {
			q = "0." + mm[1]
		}
		return promQL(promLatency, m, q)
	case rePromRestart.MatchString(t):
		return promQL(promRestarts, m, "")
	default:
		return promQL(promRequests, m, "")
	}
}

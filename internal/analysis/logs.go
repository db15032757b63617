package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ---- DNS ----

var (
	dnsNXRe      = regexp.MustCompile(`(?i)(ENOTFOUND|NXDOMAIN|no such host|name or service not known|could not resolve host|unknown host|unable to resolve|failed to resolve|cannot resolve|name resolution|UnknownHostException|getaddrinfo)`)
	dnsServerRe  = regexp.MustCompile(`(?i)(SERVFAIL|EAI_AGAIN|temporary failure in name resolution|:53: .*(i/o timeout|connection refused)|dns.*(timeout|timed out))`)
	hostnameRe   = regexp.MustCompile(`(?i)\b([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+)\b`)
	lookupHostRe = regexp.MustCompile(`(?i)(?:lookup|ENOTFOUND|resolve|host)\s+([a-z0-9][a-z0-9.-]*[a-z0-9])`)
)

// dnsHost picks the hostname a DNS error line is about.
func dnsHost(msg string) string {
	if m := lookupHostRe.FindStringSubmatch(msg); m != nil && strings.Contains(m[1], ".") {
		return strings.TrimSuffix(m[1], ".")
	}
	for _, m := range hostnameRe.FindAllString(msg, -1) {
		l := strings.ToLower(m)
		if strings.Count(l, ".") >= 1 && !strings.HasSuffix(l, ".js") && !strings.HasSuffix(l, ".go") && !strings.HasSuffix(l, ".py") && !isIPLike(l) && !strings.HasPrefix(l, "node") {
			return m
		}
	}
	return ""
}

func isIPLike(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' && r != ':' {
			return false
		}
	}
	return true
}

// serviceEntity turns a cluster DNS name into service/<ns>/<name>.
func serviceEntity(host string) string {
	parts := strings.Split(strings.ToLower(host), ".")
	if len(parts) >= 3 && parts[2] == "svc" {
		return "service/" + parts[1] + "/" + parts[0]
	}
	if len(parts) == 2 && !strings.Contains(parts[1], "com") {
		return "service/" + parts[1] + "/" + parts[0]
	}
	return "service/" + host
}

func logOrigin(l LogLine) string {
	if l.Pod != "" {
		return l.Pod
	}
	return l.Service
}

func detectDNS(ev *Evidence) []Finding {
	type group struct {
		lines   []LogLine
		server  bool
		origins []string
	}
	groups := map[string]*group{}
	var order []string
	for _, l := range ev.Logs {
		nx := dnsNXRe.MatchString(l.Message)
		srv := dnsServerRe.MatchString(l.Message)
		if !nx && !srv {
			continue
		}
		h := dnsHost(l.Message)
		if h == "" {
			h = "(unnamed host)"
		}
		g := groups[h]
		if g == nil {
			g = &group{}
			groups[h] = g
			order = append(order, h)
		}
		g.lines = append(g.lines, l)
		g.server = g.server || srv
		g.origins = appendUnique(g.origins, logOrigin(l))
	}
	// Related lines: errors that name the short host without a DNS signature
	// ("redis lookup failed").
	var out []Finding
	for _, h := range order {
		g := groups[h]
		short := strings.Split(h, ".")[0]
		var related []LogLine
		for _, l := range ev.Logs {
			if isErrorLog(l.LogLine) && !dnsNXRe.MatchString(l.Message) && !dnsServerRe.MatchString(l.Message) && containsFold(l.Message, short) {
				related = append(related, l)
			}
		}
		f := Finding{Mode: ModeDNSFailure, Category: catConfig, Entity: serviceEntity(h), Score: 0.7}
		if len(g.lines)+len(related) >= 2 {
			f.Score = 0.85
		}
		kind := "does not resolve (NXDOMAIN / not found)"
		if g.server {
			f.Category = catDependency
			kind = "cannot be resolved because the DNS server fails or times out"
		}
		caller := ev.alertField("service", "workload_name", "kube_deployment")
		if caller == "" && len(g.lines) > 0 {
			caller = g.lines[0].Service
		}
		first, last := g.lines[0], g.lines[len(g.lines)-1]
		f.Statement = fmt.Sprintf("DNS resolution failure: %s cannot resolve its dependency %s — %s in %s from %s between %s and %s (e.g. %s), so requests that need %s fail",
			caller, h, plural(len(g.lines), "name-resolution error", "name-resolution errors"), first.Cite.Source("logs"), plural(len(g.origins), "pod", "pods"), hhmm(first.Timestamp), hhmm(last.Timestamp), quote(first.Message), short)
		f.Statement += "; the hostname " + kind
		for _, l := range g.lines {
			f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), quote(l.Message)), l.Cite)
		}
		for _, l := range related {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
		// Pods healthy: the failure is outside the pods.
		var healthy, all []Pod
		for _, p := range ev.Pods {
			all = append(all, p)
			if podHealthy(p.Pod) && podRestarts(p.Pod) == 0 {
				healthy = append(healthy, p)
			}
		}
		if len(all) > 0 && len(healthy) == len(all) {
			f.validated(fmt.Sprintf("All %d pods are Running and Ready with 0 restarts: the failure is at name resolution, not in the pods", len(all)), citesOfPods(all))
			f.Score += 0.05
		}
		for _, m := range ev.Monitors {
			if strings.EqualFold(m.State, "Alert") {
				f.validated(fmt.Sprintf("Monitor %q is in Alert state", m.Name), m.Cite)
			}
		}
		f.inferred(fmt.Sprintf("Cluster DNS cannot answer for %s: CoreDNS outage, a deleted/renamed Service or a NetworkPolicy blocking kube-dns", h))
		f.Chain = []string{
			fmt.Sprintf("%s looks up %s", caller, h),
			"The DNS query fails (" + strings.TrimSpace(strings.Split(kind, "(")[0]) + ")",
			fmt.Sprintf("Calls to %s fail and the requests that depend on it return errors", short),
			"Pods stay Running and Ready, so Kubernetes shows no failure",
		}
		f.Remediation = []string{
			fmt.Sprintf("Check that the Service behind %s exists in its namespace and has endpoints", h),
			"Check CoreDNS pods/logs and NetworkPolicies allowing UDP/TCP 53 to kube-dns",
		}
		f.Signals = []string{"DNS", "name resolution", h}
		out = append(out, f)
	}
	return out
}

// ---- dependency failures named in error logs ----

var (
	depTargetRe = regexp.MustCompile(`(?i)(?:dial tcp|connect to|connecting to|calling|call to|upstream|request to|connection to|ECONNREFUSED|ETIMEDOUT|ECONNRESET|connect ECONNREFUSED)\s+([a-z0-9][a-z0-9._-]*(?::\d+)?)`)
	depErrRe    = regexp.MustCompile(`(?i)(connection refused|econnrefused|etimedout|econnreset|connection reset|timed? ?out|timeout|no route to host|503|502|504|service unavailable|bad gateway|unavailable|circuit breaker)`)
)

func detectDependencyFailure(ev *Evidence) []Finding {
	type group struct {
		lines   []LogLine
		origins []string
	}
	groups := map[string]*group{}
	var order []string
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) && logLevel(l.LogLine) != "WARN" {
			continue
		}
		if dnsNXRe.MatchString(l.Message) || dnsServerRe.MatchString(l.Message) || configLogRe.MatchString(l.Message) {
			continue
		}
		if !depErrRe.MatchString(l.Message) {
			continue
		}
		m := depTargetRe.FindStringSubmatch(l.Message)
		if m == nil {
			continue
		}
		target := strings.TrimRight(m[1], ".:")
		if target == "" || strings.EqualFold(target, l.Service) {
			continue
		}
		g := groups[target]
		if g == nil {
			g = &group{}
			groups[target] = g
			order = append(order, target)
		}
		g.lines = append(g.lines, l)
		g.origins = appendUnique(g.origins, logOrigin(l))
	}
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]].lines) > len(groups[order[j]].lines) })
	var out []Finding
	for _, t := range order {
		g := groups[t]
		if len(g.lines) < 2 {
			continue
		}
		host := t
		if h, _, ok := strings.Cut(t, ":"); ok {
			host = h
		}
		f := Finding{Mode: ModeDependencyFailure, Category: catDependency, Entity: serviceEntity(host), Score: 0.7}
		if len(g.lines) >= 5 {
			f.Score = 0.8
		}
		f.Statement = fmt.Sprintf("Downstream dependency %s is failing: %s from %s (e.g. %s); the callers are victims, not the culprit",
			t, plural(len(g.lines), "error", "errors"), joinNames(g.origins), quote(g.lines[0].Message))
		for i, l := range g.lines {
			if i >= 5 {
				break
			}
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
		f.inferred(fmt.Sprintf("%s is down, overloaded or unreachable from the callers", t))
		f.Chain = []string{fmt.Sprintf("%s stops answering", t), "Callers' requests to it fail or time out", "Callers return errors to their clients"}
		f.Remediation = []string{fmt.Sprintf("Investigate %s (health, saturation, recent changes) rather than the callers", t), "Add timeouts/circuit breaking in the callers"}
		f.Signals = []string{"dependency", t}
		out = append(out, f)
	}
	return out
}

// ---- other log signatures ----

var logSignatures = []struct {
	mode     string
	re       *regexp.Regexp
	category string
	what     string
	fix      string
}{
	{ModeCertExpiry, regexp.MustCompile(`(?i)(x509: certificate has expired|certificate has expired|certificate verify failed|certificate is not yet valid|ssl certificate problem: certificate has expired|tls: expired certificate)`), "config", "a TLS certificate has expired (x509)", "Renew and redeploy the expired certificate; alert on certificate expiry ahead of time"},
	{ModeNoEndpoints, regexp.MustCompile(`(?i)(no endpoints available for service|no healthy upstream|no available endpoints)`), "config", "its target Service has no ready endpoints (selector mismatch or no Ready pods behind it)", "Check the Service selector against the pod labels and that its pods are Ready (kubectl get endpoints)"},
	{ModeConnPoolExhaustion, regexp.MustCompile(`(?i)(connection pool (is )?exhausted|pool exhausted|timeout (waiting|acquiring) (for )?(a )?connection|could not (obtain|acquire) (a )?connection|too many connections|remaining connection slots are reserved|connection limit exceeded|max_connections)`), "resource", "its connection pool is exhausted", "Size the connection pool to the database's max_connections, fix connection leaks (unreleased sessions), add a pooler"},
}

func detectLogSignatures(ev *Evidence) []Finding {
	var out []Finding
	for _, sig := range logSignatures {
		var lines []LogLine
		var origins []string
		for _, l := range ev.Logs {
			if sig.re.MatchString(l.Message) {
				lines = append(lines, l)
				origins = appendUnique(origins, logOrigin(l))
			}
		}
		if len(lines) == 0 {
			continue
		}
		svc := lines[0].Service
		if svc == "" {
			svc = ev.alertField("service")
		}
		f := Finding{Mode: sig.mode, Category: catConfig, Score: 0.65, Entity: "service/" + svc}
		if sig.category == "resource" {
			f.Category = catResource
		}
		if len(lines) >= 3 {
			f.Score = 0.75
		}
		f.Statement = fmt.Sprintf("%s fails because %s: %s in logs from %s (e.g. %s)", svc, sig.what, plural(len(lines), "matching error", "matching errors"), joinNames(origins), quote(lines[0].Message))
		for i, l := range lines {
			if i >= 5 {
				break
			}
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
		}
		f.Chain = []string{sig.what, "requests that need it fail"}
		f.Remediation = []string{sig.fix}
		f.Signals = []string{sig.mode}
		out = append(out, f)
	}
	return out
}

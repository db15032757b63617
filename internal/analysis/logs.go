package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
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

// reResolverFailure: a resolver's words for why it could not answer.
var reResolverFailure = regexp.MustCompile(`(?i)\b(validation fail\w*|bogus|signature (?:has )?expired|expired signature|dnssec|refused|servfail|no answer|lame|timed? ?out|failure)\b`)

// resolverAccount is the first line from an origin other than the callers
// that names host whole and says why it could not be answered.
func resolverAccount(lines []LogLine, host string, callers []string) (LogLine, bool) {
	if host == "" || !strings.Contains(host, ".") {
		return LogLine{}, false
	}
	low := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, l := range lines {
		if slices.Contains(callers, logOrigin(l)) || !strings.Contains(strings.ToLower(l.Message), low) {
			continue
		}
		if reResolverFailure.MatchString(l.Message) && !dnsNXRe.MatchString(l.Message) {
			return l, true
		}
	}
	return LogLine{}, false
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
		switch {
		case g.server:
			f.Category = catDependency
			kind = "cannot be resolved because the DNS server fails or times out"
			if ev.clusterDNSSeen() {
				// The server that fails to answer is the dependency, not
				// the name it was asked for.
				f.Entity = deploymentEntity(clusterDNSNamespace, clusterDNSWorkload)
			}
		case providerName(h) != "":
			// A public name of another organisation that no longer
			// resolves: its domain or its DNS is gone, the provider's
			// failure, not a setting of this cluster.
			f.Category, f.Entity = catDependency, "host/"+h
			kind = "does not resolve (NXDOMAIN / not found): a public name of the provider " + providerName(h) + ", whose domain or DNS stopped answering for it"
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
		// The resolver's own account of the name (a validation failure, an
		// expired signature, a refused upstream), whatever level it logs
		// it at: why the answer failed, in the words of the server that
		// gave it.
		if l, ok := resolverAccount(ev.Logs, h, g.origins); ok {
			f.validated(fmt.Sprintf("The resolver's own account, %s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
			f.Statement += "; the resolver says " + quote(clip(l.Message, 200))
		}
		if strings.HasPrefix(f.Entity, "host/") {
			ev.providerContext(&f, h, g.lines, timeOf(first.Timestamp))
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
		if ev.dnsServerView(&f, h) {
			out = append(out, f)
			continue
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
	urlHostRe   = regexp.MustCompile(`(?i)https?://([a-z0-9][a-z0-9.-]*[a-z0-9])`)
	depErrRe    = regexp.MustCompile(`(?i)(connection refused|econnrefused|etimedout|econnreset|connection reset|timed? ?out|timeout|no route to host|503|502|504|service unavailable|bad gateway|unavailable|circuit breaker|overloaded|(?:->|status[=: ]+|code[=: ]+|HTTP/\d(?:\.\d)? |returned |response:? )5\d\d\b)`)
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
		target := ""
		if u := urlHostRe.FindStringSubmatch(l.Message); u != nil && !isIPLike(u[1]) {
			// The URL names the dependency; a dial error names only its IP.
			target = u[1]
		} else if m := depTargetRe.FindStringSubmatch(l.Message); m != nil && !proseWord(strings.TrimRight(m[1], ".:")) {
			target = strings.TrimRight(m[1], ".:")
		} else {
			continue
		}
		if h, _, _ := strings.Cut(target, ":"); isIPLike(h) {
			// A dial error names only the address; the same line often
			// names the host it resolved ("host=db.ns.svc ... dial tcp
			// 10.0.3.7:5432"): the dependency is the name.
			if named := downstreamHost(l.Message, l.Service); strings.Contains(named, ".") && !strings.HasPrefix(named, remoteAPIPrefix) && !isIPLike(named) {
				target = named
			}
		}
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
	// Parsimony: several unrelated dependencies failing from callers that
	// all run on one node have one cause in common, the callers' side.
	byHost := map[string][]LogLine{}
	for _, t := range order {
		if g := groups[t]; len(g.lines) >= 2 {
			h, _, _ := strings.Cut(t, ":")
			byHost[h] = append(byHost[h], g.lines...)
		}
	}
	if f, ok := ev.commonCallerNode(byHost); ok {
		out = append(out, f)
	}
	for _, t := range order {
		g := groups[t]
		if len(g.lines) < 2 {
			continue
		}
		host := t
		if h, _, ok := strings.Cut(t, ":"); ok {
			host = h
		}
		ent := serviceEntity(host)
		if strings.Count(host, ".") >= 2 && !strings.Contains(host, ".svc") && !strings.HasSuffix(host, ".local") && !isIPLike(host) {
			ent = "host/" + host // outside the cluster
		}
		f := Finding{Mode: ModeDependencyFailure, Category: catDependency, Entity: ent, Score: 0.7}
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
		// Black-box probes of the same target say whether it is down for
		// everyone, not only for these callers.
		for _, ps := range ev.Series {
			inst := labelOf(ps.Series, "instance", "target", "url")
			if !strings.Contains(strings.ToLower(ps.Name), "probe") || inst == "" || !strings.Contains(inst, host) {
				continue
			}
			r := riseOf(ps.Series)
			if strings.Contains(strings.ToLower(ps.Name), "success") {
				if ps.Latest < 1 {
					at := ""
					for _, p := range ps.Downsampled {
						if p.V < 1 {
							at = " from " + hhmmT(p.T)
							break
						}
					}
					f.validated(fmt.Sprintf("%s{instance=%s} fell from %s to %s%s: the external probe fails too", ps.Name, inst, num(r.head), num(ps.Latest), at), ps.Cite)
					f.Score += 0.1
				}
			} else if r.shape != "flat" {
				f.validated(fmt.Sprintf("%s{instance=%s} went from %s to %s", ps.Name, inst, num(r.head), num(r.tail)), ps.Cite)
			}
		}
		if strings.HasPrefix(ent, "host/") {
			// The provider's own word on the outage: its status page.
			onset := timeOf(g.lines[0].Timestamp)
			if onset.IsZero() {
				onset, _ = ev.incidentOnset()
			}
			ev.statusPageView(&f, host, onset)
			ev.providerContext(&f, host, g.lines, onset)
		}
		f.inferred(fmt.Sprintf("%s is down, overloaded or unreachable from the callers", t))
		f.Chain = []string{fmt.Sprintf("%s stops answering", t), "Callers' requests to it fail or time out", "Callers return errors to their clients"}
		f.Remediation = []string{fmt.Sprintf("Investigate %s (health, saturation, recent changes) rather than the callers", t), "Add timeouts/circuit breaking in the callers"}
		f.Signals = []string{"dependency", t}
		ev.callersSide(&f, host, g.lines)
		if f.Category == catDependency && !externalHost(host) && certificateFailures(g.lines) {
			// The calls fail on verifying a certificate inside the
			// cluster: one its own operators issue and rotate (a
			// webhook's, a service's serving certificate). The peer is
			// up; its certificate is a setting that lapsed.
			f.Category = catConfig
			f.inferred(fmt.Sprintf("The calls to %s fail on its certificate, not on its availability: a certificate issued inside the cluster is configuration that lapsed", t))
		}
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
	{ModeNoEndpoints, regexp.MustCompile(`(?i)(no endpoints available for service|no healthy upstream|no available endpoints|does not have any active endpoints?)`), "config", "its target Service has no ready endpoints (selector mismatch or no Ready pods behind it)", "Check the Service selector against the pod labels and that its pods are Ready (kubectl get endpoints)"},
	{ModeConnPoolExhaustion, regexp.MustCompile(`(?i)(connection pool (is )?exhausted|pool exhausted|timeout (waiting|acquiring) (for )?(a )?connection|could not (obtain|acquire) (a )?connection|connection is not available|too many connections|remaining connection slots are reserved|connection limit exceeded|max_connections|pool .{0,40}(timed out|timeout) (waiting|acquiring))`), "resource", "its connection pool is exhausted", "Size the connection pool to the database's max_connections, fix connection leaks (unreleased sessions), add a pooler"},
	{ModeStoreFull, regexp.MustCompile(`(?i)(OOM command not allowed|used memory > 'maxmemory'|maxmemory|evicted.{0,20}(memory limit|capacity)|store (is )?full|cache (is )?full)`), "resource", "the datastore it writes to reached its memory limit and rejects writes", "Raise the datastore's memory limit or let it evict (eviction policy), and cap what the clients store"},
	{ModeVolumeFull, regexp.MustCompile(`(?i)(no space left on device|enospc|disk (is )?full|out of disk space|not enough space on (the )?disk|read-only file ?system|quota exceeded on (volume|disk))`), "resource", "its volume is out of space (writes fail with no space left on device)", "Expand the volume (PVC) or free space (retention, compaction), and alert on free-space trends before it fills"},
	{ModeCredentials, regexp.MustCompile(`(?i)(password authentication failed|authentication failed for user|access denied for user|login failed for user|invalid (username or )?password|invalid credentials|SASL authentication failed|auth(entication)? failed: bad credentials)`), "config", "it presents credentials the server rejects (wrong or stale password/secret)", "Update the credentials the workload reads (Secret / external secret) to the current value and restart the pods; sync secret rotation with its consumers"},
	{ModeDataQuality, regexp.MustCompile(`(?i)(deserializ(ation|e|ing)[a-z ]{0,20}(exception|error|failed)|serializationexception|recorddeserializationexception|poison (pill|record|message)|malformed (record|message|payload|json)|unexpected magic byte|invalid (record|message|payload) format|schema (mismatch|incompatib)|unknown magic byte|corrupt(ed)? (record|message)|could not convert string to|invalid literal for (int|float|decimal)|numberformatexception|for input string: |unparseable (number|date)|\bparse_error\b)`), "data", "it receives records it cannot parse (malformed or incompatible data)", "Skip or dead-letter the bad record and fix the producer that wrote it; validate schemas at publish time"},
}

// More failure modes named by log signatures.
const (
	ModeVolumeFull  = "volume_full"
	ModeStoreFull   = "datastore_full"
	ModeCredentials = "credentials_rejected"
	ModeDataQuality = "bad_input_data"
)

var catData = investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DATA_QUALITY

// declaredInfo: l's own level field says it is no failure (info, debug,
// trace, notice): a line that states a setting ("max_connections = 500")
// is no error of it, whatever words it shares with one.
func declaredInfo(l LogLine) bool {
	switch strings.ToUpper(strings.TrimSpace(l.Level)) {
	case "INFO", "DEBUG", "TRACE", "NOTICE":
		return true
	}
	return false
}

func detectLogSignatures(ev *Evidence) []Finding {
	var out []Finding
	for _, sig := range logSignatures {
		var lines []LogLine
		var origins []string
		for _, l := range ev.Logs {
			if sig.re.MatchString(l.Message) && !declaredInfo(l) {
				lines = append(lines, l)
				origins = appendUnique(origins, logOrigin(l))
			}
		}
		if len(lines) == 0 {
			continue
		}
		svc := ev.logService(lines[0])
		if svc == "" {
			svc = ev.alertField("service")
		}
		ns := lines[0].Namespace
		if ns == "" {
			ns = ev.alertField("namespace", "kube_namespace")
		}
		f := Finding{Mode: sig.mode, Category: catConfig, Score: 0.65, Entity: "service/" + svc}
		if ns != "" && svc != "" {
			f.Entity = deploymentEntity(ns, svc)
		}
		switch sig.category {
		case "resource":
			f.Category = catResource
		case "data":
			f.Category = catData
		}
		staleTrust := false
		if sig.mode == ModeCertExpiry {
			if host := peerCertExpired(lines, svc); host != "" {
				// Our side verified the peer's certificate and found it
				// expired: the dependency's certificate, not our setting.
				f.Category = catDependency
				f.inferred(fmt.Sprintf("The expired certificate is the one %s presents: the error comes from verifying the peer on a call to it", host))
				if ok, served := ev.servedOthers(host, lines); served {
					// Unless another client verifies the same peer at the
					// same time: its chain is valid for a current trust
					// store, and ours (an old CA bundle, a pinned root)
					// is what lapsed.
					f.Category = catConfig
					f.validated(fmt.Sprintf("%s serves another client meanwhile (%s, %s): %s", host, logOrigin(ok), hhmm(ok.Timestamp), quote(ok.Message)), ok.Cite)
					f.inferred(fmt.Sprintf("%s's chain verifies for other clients: the callers' trust store (CA bundle, pinned root) is out of date", host))
					staleTrust = true
				}
			}
		}
		// Corroboration counts independent occurrences, not repetitions.
		if n := independentOccurrences(lines); n >= 3 {
			f.Score = 0.75
		} else if n == 1 {
			f.Repetition = true
		}
		reps := representative(lines, 3)
		if len(origins) > 4 {
			origins = append(origins[:4], fmt.Sprintf("%d more", len(origins)-4))
		}
		f.Statement = fmt.Sprintf("%s fails because %s: %s in logs from %s (e.g. %s)", svc, sig.what, plural(len(lines), "matching error", "matching errors"), joinNames(origins), quote(reps[0].Message))
		shown := 0
		for _, l := range reps {
			f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), citesOfLogs(sameSig(lines, l)))
			shown++
		}
		for _, l := range lines {
			if shown >= 5 {
				break
			}
			dup := false
			for _, r := range reps {
				dup = dup || r.Message == l.Message
			}
			if !dup {
				f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
				shown++
			}
		}
		f.Chain = []string{sig.what, "requests that need it fail"}
		f.Remediation = []string{sig.fix}
		if staleTrust {
			f.Remediation = []string{"Update the callers' CA bundle (ca-certificates, the runtime's trust store) or the base image that ships it"}
		}
		f.Signals = []string{sig.mode}
		ev.refineSignature(&f, ns, svc, lines)
		out = append(out, f)
	}
	return out
}

var (
	dnsAnswerRe   = regexp.MustCompile(`"[A-Z]+ IN ([a-z0-9.-]+)\.? [^"]*" (NXDOMAIN|SERVFAIL|REFUSED)`)
	corefileZones = regexp.MustCompile(`(?m)^\s*kubernetes\s+([^{\n]+)`)
)

// dnsServerView adds what the cluster DNS server says about host: its
// answers in its own logs and, when its configuration (a Corefile) is in
// evidence, whether the zone it serves covers the name. It reports whether
// the configuration explains the failure (the finding then blames it).
func (ev *Evidence) dnsServerView(f *Finding, host string) bool {
	var answers []LogLine
	for _, l := range ev.Logs {
		if m := dnsAnswerRe.FindStringSubmatch(l.Message); m != nil && strings.EqualFold(strings.TrimSuffix(m[1], "."), host) {
			answers = append(answers, l)
		}
	}
	if len(answers) > 0 {
		l := answers[0]
		f.validated(fmt.Sprintf("The DNS server answers %s for %s (%s, %s): %s", dnsAnswerRe.FindStringSubmatch(l.Message)[2], host, l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), citesOfLogs(answers))
		f.Score += 0.05
	}
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "ConfigMap") {
			continue
		}
		for key, data := range r.Data {
			zm := corefileZones.FindStringSubmatch(data)
			if zm == nil {
				continue
			}
			var zones []string
			for _, z := range strings.Fields(zm[1]) {
				if !strings.HasSuffix(z, ".arpa") {
					zones = append(zones, strings.TrimSuffix(z, "."))
				}
			}
			covered := false
			for _, z := range zones {
				if strings.HasSuffix(host, "."+z) || host == z {
					covered = true
				}
			}
			line := strings.TrimSpace(zm[0])
			f.validated(fmt.Sprintf("ConfigMap %s/%s (%s) serves cluster names with %q", r.Namespace, r.Name, key, line), r.Cite)
			if covered {
				continue
			}
			f.Category = catConfig
			f.Entity = "configmap/" + r.Namespace + "/" + r.Name
			f.Score = 0.9
			f.Statement = fmt.Sprintf("The cluster DNS configuration (ConfigMap %s/%s, %s) serves the zone %s, which does not cover %s: the DNS server answers NXDOMAIN for cluster Service names, so %s", r.Namespace, r.Name, key, strings.Join(zones, ", "), host, f.Statement)
			for _, sig := range r.Signals {
				if containsFold(sig, "edit", "updated", "changed", "manager") {
					f.validated(fmt.Sprintf("ConfigMap %s/%s: %s", r.Namespace, r.Name, sig), r.Cite)
				}
			}
			for _, l := range ev.Logs {
				if containsFold(l.Message, "reload") && (l.Pod == "" || len(answers) == 0 || l.Pod == answers[0].Pod) {
					f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
					break
				}
			}
			f.Chain = []string{fmt.Sprintf("The Corefile's kubernetes zone was set to %s", strings.Join(zones, ", ")), fmt.Sprintf("The DNS server no longer answers for %s", host), "Lookups return NXDOMAIN (no such host)", "Clients cannot reach the Services they depend on"}
			f.Remediation = []string{fmt.Sprintf("Restore the kubernetes zone of ConfigMap %s/%s to the cluster domain and let the DNS pods reload", r.Namespace, r.Name), "Manage the DNS configuration declaratively and alert on NXDOMAIN rates for cluster names"}
			return true
		}
	}
	return false
}

// rePeerVerify: a client verifying the certificate its peer presented
// ("x509: certificate has expired", "certificate verify failed"), as
// opposed to the peer rejecting ours ("remote error: tls: expired
// certificate", "bad certificate").
var (
	rePeerVerify   = regexp.MustCompile(`(?i)x509: certificate has expired|certificate verify failed|ssl certificate problem`)
	reOwnCertError = regexp.MustCompile(`(?i)remote error: tls|bad certificate|client certificate`)
)

// certificateFailures: most of the lines fail on verifying a certificate.
func certificateFailures(lines []LogLine) bool {
	n := 0
	for _, l := range lines {
		if rePeerVerify.MatchString(l.Message) || strings.Contains(strings.ToLower(l.Message), "certificate is not yet valid") {
			n++
		}
	}
	return 2*n > len(lines)
}

// peerCertExpired returns the remote host whose certificate the lines say
// expired, when they verify an external peer named in them (a URL or
// host:port outside the cluster); "" otherwise. A peer inside the cluster
// presents a certificate the cluster's own operators issue and rotate: that
// stays a configuration matter.
func peerCertExpired(lines []LogLine, svc string) string {
	for _, l := range lines {
		if !rePeerVerify.MatchString(l.Message) || reOwnCertError.MatchString(l.Message) {
			continue
		}
		var host string
		if u := urlHostRe.FindStringSubmatch(l.Message); u != nil {
			host = u[1]
		} else if m := hostPortRe.FindStringSubmatch(l.Message); m != nil && !notAHostRe.MatchString(m[1]) {
			host = m[1]
		} else if h := downstreamHost(l.Message, svc); h != "" {
			host = strings.TrimPrefix(h, remoteAPIPrefix)
		}
		if host != "" && externalHost(host) && (svc == "" || !strings.HasPrefix(strings.ToLower(host), strings.ToLower(svc))) {
			return host
		}
	}
	return ""
}

// externalHost: a dotted name outside the cluster's own domains
// (service.namespace.svc, *.cluster.local) and not an IP literal.
func externalHost(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if !strings.Contains(h, ".") || tmplIP.MatchString(h) {
		return false
	}
	for _, suf := range []string{".svc", ".svc.cluster.local", ".cluster.local", ".local", ".internal"} {
		if strings.HasSuffix(h, suf) {
			return false
		}
	}
	return true
}

// ModeNodeNetwork: the network of one node fails its pods' calls to every
// dependency.
const ModeNodeNetwork = "node_network"

// podNodes maps each placed pod of the evidence to its node.
func (ev *Evidence) podNodes() map[string]string {
	out := map[string]string{}
	for _, p := range ev.Pods {
		if p.Node != "" {
			out[p.Name] = p.Node
		}
	}
	return out
}

// commonCallerNode: at least two distinct dependencies fail with transport
// errors, every failing line comes from pods on one node, and pods on other
// nodes are in evidence: the node's network is the common cause, the
// dependencies are its symptoms.
func (ev *Evidence) commonCallerNode(byHost map[string][]LogLine) (Finding, bool) {
	if len(byHost) < 2 {
		return Finding{}, false
	}
	nodeOf := ev.podNodes()
	nodes := map[string]bool{}
	for _, n := range nodeOf {
		nodes[n] = true
	}
	node := ""
	var lines []LogLine
	var hosts []string
	for _, h := range sortedKeys(byHost) {
		hosts = append(hosts, h)
		for _, l := range byHost[h] {
			n := nodeOf[l.Pod]
			if n == "" || (node != "" && n != node) {
				return Finding{}, false // an unknown or a second node: not confined
			}
			node = n
			lines = append(lines, l)
		}
	}
	if node == "" || len(nodes) < 2 {
		return Finding{}, false
	}
	f := Finding{Mode: ModeNodeNetwork, Category: catInfra, Entity: "node/" + node, Score: 0.82}
	f.Statement = fmt.Sprintf("The network of node %s fails its pods' calls: %s unrelated dependencies (%s) fail with transport errors, and every failing call comes from pods on that node while pods run on %d other nodes; the dependencies are symptoms, not the cause",
		node, num(float64(len(hosts))), joinNames(hosts), len(nodes)-1)
	for i, l := range lines {
		if i >= 4 {
			break
		}
		f.validated(fmt.Sprintf("%s log (%s on %s): %s", l.Cite.Source("logs"), logOrigin(l), node, quote(l.Message)), l.Cite)
	}
	f.explains(ModeDependencyFailure, "every failing dependency is reached from the same node; the node's network explains them all")
	f.explains(ModeDNSFailure, "name resolution from the same node fails with the rest")
	f.Chain = []string{"The network of node " + node + " degrades (routes, neighbour or conntrack tables, CNI)", "Its pods' connections to several dependencies time out or find no route", "Requests served by those pods fail"}
	f.Remediation = []string{"Cordon and drain node " + node + " and check its network stack (routes, ARP/neighbour and conntrack tables, CNI agent logs)"}
	f.Signals = []string{"node", "network", node}
	return f, true
}

// clusterDNSSeen: the cluster DNS server's own pods or series are in the
// evidence (it was read, so it can be named as the failing server).
func (ev *Evidence) clusterDNSSeen() bool {
	for _, p := range ev.Pods {
		if p.Namespace == clusterDNSNamespace && strings.HasPrefix(p.Name, clusterDNSWorkload+"-") {
			return true
		}
	}
	for _, d := range ev.Deployments {
		if d.Namespace == clusterDNSNamespace && d.Name == clusterDNSWorkload {
			return true
		}
	}
	for _, s := range ev.Series {
		if strings.HasPrefix(s.Name, clusterDNSWorkload+"_") || labelOf(s.Series, "deployment", "app", "pod") == clusterDNSWorkload {
			return true
		}
	}
	return false
}

package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// refineSignature names the culprit of a log-signature finding from the
// rest of the evidence (the volume that filled, the Secret the pods read,
// the topic the bad record sits on, the pool at its maximum) and adds the
// corroborating facts.
func (ev *Evidence) refineSignature(f *Finding, ns, svc string, lines []LogLine) {
	switch f.Mode {
	case ModeVolumeFull:
		ev.refineVolumeFull(f, ns)
	case ModeCredentials:
		ev.refineCredentials(f, ns, svc, lines)
	case ModeDataQuality:
		ev.refineDataQuality(f, ns, lines)
	case ModeConnPoolExhaustion:
		ev.refinePool(f, svc)
	case ModeStoreFull:
		ev.refineStoreFull(f, ns)
	case ModeCertExpiry:
		ev.refineCert(f)
	}
}

// volumeUse is one volume's free space from a free/capacity series pair.
type volumeUse struct {
	ns, name   string
	free, size float64
	series     Series
	capSeries  *Series
}

func (u volumeUse) ratio() float64 {
	if u.size <= 0 {
		return -1
	}
	return u.free / u.size
}

// volumes reads per-volume free space: series naming a PVC whose name says
// available/free, with the matching capacity series when present.
func (ev *Evidence) volumes() []volumeUse {
	var out []volumeUse
	for _, s := range ev.Series {
		pvc := labelOf(s.Series, "persistentvolumeclaim", "pvc", "claim")
		n := strings.ToLower(s.Name)
		if pvc == "" || !containsFold(n, "avail", "free") {
			continue
		}
		u := volumeUse{ns: labelOf(s.Series, "namespace", "exported_namespace"), name: pvc, free: s.Latest, series: s}
		for i := range ev.Series {
			c := ev.Series[i]
			cn := strings.ToLower(c.Name)
			if labelOf(c.Series, "persistentvolumeclaim", "pvc", "claim") == pvc && containsFold(cn, "capacity", "size", "total") {
				u.size, u.capSeries = c.Latest, &ev.Series[i]
				break
			}
		}
		out = append(out, u)
	}
	return out
}

func (ev *Evidence) refineVolumeFull(f *Finding, ns string) {
	vols := ev.volumes()
	if len(vols) == 0 {
		return
	}
	sort.SliceStable(vols, func(i, j int) bool {
		ri, rj := vols[i].ratio(), vols[j].ratio()
		if ri >= 0 && rj >= 0 && ri != rj {
			return ri < rj
		}
		return vols[i].free < vols[j].free
	})
	full := vols[0]
	vns := firstNonEmptyStr(full.ns, ns)
	f.Entity = "persistentvolumeclaim/" + vns + "/" + full.name
	what := fmt.Sprintf("PVC %s has %s free", full.name, bytesHuman(full.free))
	if r := full.ratio(); r >= 0 {
		what += fmt.Sprintf(" of %s (%s)", bytesHuman(full.size), pct(100*r))
	}
	r := riseOf(full.series.Series)
	what += fmt.Sprintf(", down from %s at the start of the window", bytesHuman(r.head))
	c := full.series.Cite
	if full.capSeries != nil {
		c.merge(full.capSeries.Cite)
	}
	f.validated(what, c)
	f.Statement = fmt.Sprintf("Volume %s is full: %s; %s", full.name, what, f.Statement)
	var others []string
	var oc Cite
	for _, v := range vols[1:] {
		if v.ratio() >= 0 {
			others = append(others, fmt.Sprintf("%s %s free", v.name, pct(100*v.ratio())))
			oc.merge(v.series.Cite)
		}
	}
	if len(others) > 0 {
		f.validated("The other volumes have headroom: "+strings.Join(others, ", "), oc)
	}
	f.Score += 0.15
	// What its clients see: lines of other workloads naming the owner pod.
	owner := full.name
	if i := strings.Index(owner, "-"); i > 0 {
		owner = owner[i+1:]
	}
	var seen []LogLine
	for _, l := range ev.Logs {
		if strings.Contains(l.Message, owner) && containsFold(l.Message, "read-only", "readonly", "read only", "no space", "full", "rejected", "refus") {
			seen = append(seen, l)
		}
	}
	for _, l := range representative(seen, 1) {
		f.validated(fmt.Sprintf("Clients see it (%s log, %s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), citesOfLogs(sameSig(seen, l)))
	}
	f.Chain = []string{fmt.Sprintf("Data on %s grows until the volume is full", full.name), "Writes fail with no space left on device", "The workload stops accepting writes and the alert fires"}
}

func (ev *Evidence) refineCredentials(f *Finding, ns, svc string, lines []LogLine) {
	// The Secret the failing workload's pods read.
	count := map[string]int{}
	var cite Cite
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) != svc && !strings.HasPrefix(p.Name, svc+"-") {
			continue
		}
		for _, c := range p.Containers {
			for _, sname := range c.Secrets {
				count[sname]++
				cite.merge(p.Cite)
			}
		}
	}
	var secrets []string
	for k := range count {
		secrets = append(secrets, k)
	}
	sort.SliceStable(secrets, func(i, j int) bool {
		si, sj := credScore(secrets[i]), credScore(secrets[j])
		if si != sj {
			return si > sj
		}
		return secrets[i] < secrets[j]
	})
	if len(secrets) > 0 {
		f.Entity = "secret/" + ns + "/" + secrets[0]
		f.validated(fmt.Sprintf("Pods of %s read their credentials from Secret %s", svc, secrets[0]), cite)
		f.Statement += fmt.Sprintf("; the pods read the credentials from Secret %s, which holds a value the server no longer accepts", secrets[0])
	}
	// A credential change shortly before the first rejection.
	first := lines[0].Timestamp
	for _, l := range lines {
		if l.Timestamp != nil {
			first = l.Timestamp
			break
		}
	}
	if ev.credentialIssuerDown(f, lines, first) {
		return
	}
	for _, l := range ev.Logs {
		if first == nil || l.Timestamp == nil || l.Timestamp.After(*first) || first.Sub(*l.Timestamp) > 2*time.Hour {
			continue
		}
		if rotationRe.MatchString(l.Message) {
			f.validated(fmt.Sprintf("%s log (%s, %s) at %s, before the first rejection at %s: %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), hhmm(l.Timestamp), hhmm(first), quote(l.Message)), l.Cite)
			f.Statement += fmt.Sprintf("; the credential was rotated at %s and the workload still presents the old one", hhmm(l.Timestamp))
			f.Score += 0.1
			break
		}
	}
	f.Score += 0.1
}

// reIssuerDown: the system that issues or renews a workload's credentials
// (a secrets store, a credential broker, an agent that renews leases)
// could not: it is sealed or unavailable, or a renewal failed.
var reIssuerDown = regexp.MustCompile(`(?i)\bis sealed\b|\bvault (?:is )?sealed\b|\bcould not (?:fetch|renew|obtain|refresh|issue) (?:new |fresh )?(?:credentials?|secrets?|leases?|tokens?|passwords?)\b|\b(?:lease|credential|token|secret) (?:renewal|refresh|rotation)\b[^\n]{0,40}\bfailed\b|\bfailed to (?:renew|refresh) (?:the )?(?:lease|credential|token|secret)s?\b`)

// credentialIssuerDown: the rejected credentials are ones their issuer
// could not renew (a sealed or unavailable secrets store): the workload
// presents what it last got, which expired. The cause is the issuer's
// failure, a dependency, not a wrong setting; the issuer is the entity
// when its own lines say so.
func (ev *Evidence) credentialIssuerDown(f *Finding, lines []LogLine, first *time.Time) bool {
	var said []LogLine
	for _, l := range ev.Logs {
		if reIssuerDown.MatchString(l.Message) && (first == nil || l.Timestamp == nil || l.Timestamp.Sub(*first) < time.Hour && first.Sub(*l.Timestamp) < 6*time.Hour) {
			said = append(said, l)
		}
	}
	if len(said) == 0 {
		return false
	}
	l := said[0]
	issuer := ""
	for _, x := range said {
		// The issuer that says it of itself ("vault is sealed" in vault's
		// log) over a client that reports it.
		if svc := ev.logService(x); svc != "" && strings.Contains(strings.ToLower(x.Message), strings.ToLower(svc)) {
			issuer, l = svc, x
			break
		}
	}
	f.Category = catDependency
	if issuer != "" {
		f.Entity = deploymentEntity(firstNonEmptyStr(l.Namespace, ev.alertField("namespace", "kube_namespace")), issuer)
	}
	f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), quote(l.Message)), citesOfLogs(said))
	f.Statement += fmt.Sprintf("; the credentials could not be renewed by their issuer (%s), so the workload presents expired ones", quote(clip(l.Message, 160)))
	f.inferred("The rejected credentials were valid until their lease ended: what failed is their renewal by the issuer, not the value the workload was configured with")
	f.Chain = []string{"The credential issuer cannot issue or renew credentials (" + clip(l.Message, 100) + ")", "The workload's credentials expire at the end of their lease", "The server rejects them and requests fail"}
	f.Remediation = []string{"Restore the credential issuer (unseal it, bring it back), then let the workloads fetch new credentials", "Alert on the issuer's health and on lease renewal failures ahead of expiry"}
	f.Score += 0.15
	return true
}

var rotationRe = regexp.MustCompile(`(?i)(rotat(ed|ion)|password (changed|reset|updated)|credential(s)? (changed|updated|rotated)|new (secret )?version)`)

func credScore(name string) int {
	n := strings.ToLower(name)
	switch {
	case containsFold(n, "db", "database", "postgres", "mysql", "pg"):
		return 3
	case containsFold(n, "cred", "password", "auth"):
		return 2
	case strings.Contains(n, "token"):
		return 1
	}
	return 0
}

var partitionRe = regexp.MustCompile(`(?i)(?:partition[ =:]*(\d+)|\b([a-z][a-z0-9._]*(?:-[a-z0-9._]+)*)-(\d+)\b)`)

func (ev *Evidence) refineDataQuality(f *Finding, ns string, lines []LogLine) {
	topic := ev.alertField("topic")
	var lag []Series
	for _, s := range ev.Series {
		if t := labelOf(s.Series, "topic"); t != "" && strings.Contains(strings.ToLower(s.Name), "lag") {
			lag = append(lag, s)
			if topic == "" {
				topic = t
			}
		}
	}
	if topic == "" {
		ev.refineInputFile(f, ns, lines)
		return
	}
	f.Entity = "topic/" + ns + "/" + topic
	// The partition the consumer is stuck on: the one whose lag grows.
	var worst *Series
	var worstGrowth float64
	for i := range lag {
		if labelOf(lag[i].Series, "topic") != topic {
			continue
		}
		r := riseOf(lag[i].Series)
		if g := r.tail - r.head; worst == nil || g > worstGrowth {
			worst, worstGrowth = &lag[i], g
		}
	}
	if worst != nil {
		part := labelOf(worst.Series, "partition")
		r := riseOf(worst.Series)
		what := fmt.Sprintf("%s of topic %s", worst.Name, topic)
		if part != "" {
			what += " partition " + part
		}
		f.validated(fmt.Sprintf("%s grew from %s to %s (%s)", what, num(r.head), num(r.tail), r.shape), worst.Cite)
		var flat []string
		for _, s := range lag {
			if s.Cite.PinIDs != nil && labelOf(s.Series, "partition") != part && labelOf(s.Series, "topic") == topic {
				if rr := riseOf(s.Series); rr.tail < 2*rr.head+100 {
					flat = appendUnique(flat, labelOf(s.Series, "partition"))
				}
			}
		}
		if part != "" {
			f.Statement += fmt.Sprintf("; only partition %s of %s falls behind", part, topic)
			if len(flat) > 0 {
				f.Statement += fmt.Sprintf(" (partitions %s keep up)", joinNames(flat))
			}
		}
	}
	f.Score += 0.15
	f.explains(ModeConsumerLag, "the lag grows because the consumer cannot get past a record it fails to parse, not because it lacks capacity")
	f.Chain = []string{"A producer writes a record the consumer cannot parse", "The consumer fails on it, retries and never commits past its offset", "Lag grows on that partition while the others keep up"}
}

func (ev *Evidence) refinePool(f *Finding, svc string) {
	var active, max, pending *Series
	for i := range ev.Series {
		s := &ev.Series[i]
		n := strings.ToLower(s.Name)
		if !containsFold(n, "pool", "hikari", "connections") || containsFold(n, "pg_", "mysql_", "db_") {
			continue
		}
		if svc != "" && labelOf(s.Series, "service", "app", "job") != "" && labelOf(s.Series, "service", "app", "job") != svc {
			continue
		}
		switch {
		case strings.Contains(n, "active") && active == nil:
			active = s
		case strings.Contains(n, "max") && max == nil:
			max = s
		case containsFold(n, "pending", "waiting") && pending == nil:
			pending = s
		}
	}
	if active != nil && max != nil && max.Latest > 0 && active.Peak >= 0.95*max.Latest {
		c := active.Cite
		c.merge(max.Cite)
		f.validated(fmt.Sprintf("%s reaches %s = %s %s (the pool's maximum size)", active.Name, num(active.Peak), max.Name, num(max.Latest)), c)
		f.Statement += fmt.Sprintf("; the pool is pinned at its maximum of %s connections", num(max.Latest))
		f.Score += 0.1
	}
	if pending != nil {
		r := riseOf(pending.Series)
		if r.tail > r.head {
			f.validated(fmt.Sprintf("%s grew from %s to %s: requests queue for a connection", pending.Name, num(r.head), num(r.tail)), pending.Cite)
		}
	}
	ev.citeConfig(f, poolConfigRe, 3)
	f.explains(ModeTrafficSaturation, "the extra load queues on the connection pool, which is the bottleneck")
}

// refineStoreFull names the datastore at its memory limit: a used/max series
// pair (same prefix, same labels) with used at the max.
func (ev *Evidence) refineStoreFull(f *Finding, ns string) {
	for i := range ev.Series {
		u := ev.Series[i]
		n := strings.ToLower(u.Name)
		if !strings.Contains(n, "used") || !strings.Contains(n, "memory") {
			continue
		}
		prefix := n[:strings.Index(n, "used")]
		for j := range ev.Series {
			m := ev.Series[j]
			mn := strings.ToLower(m.Name)
			if i == j || !strings.HasPrefix(mn, prefix) || !strings.Contains(mn, "max") || m.Latest <= 0 || seriesKey(m.Series)[len(m.Name):] != seriesKey(u.Series)[len(u.Name):] {
				continue
			}
			if u.Peak < 0.97*m.Latest {
				continue
			}
			owner := labelOf(u.Series, "pod", "instance", "service")
			if h, _, ok := strings.Cut(owner, ":"); ok {
				owner = h
			}
			ons := firstNonEmptyStr(labelOf(u.Series, "namespace"), ns)
			if m := rePodOrdinal.FindStringSubmatch(owner); m != nil {
				f.Entity = "statefulset/" + ons + "/" + m[1]
				owner = m[1]
			} else if owner != "" {
				f.Entity = "service/" + ons + "/" + owner
			}
			r := riseOf(u.Series)
			c := u.Cite
			c.merge(m.Cite)
			at := ""
			if t := crossing(u.Series, 0.99*m.Latest); t != nil {
				at = " at " + hhmm(t)
			}
			f.validated(fmt.Sprintf("%s of %s grew from %s to %s and hit %s = %s%s (its maxmemory limit)", u.Name, owner, bytesHuman(r.head), bytesHuman(u.Peak), m.Name, bytesHuman(m.Latest), at), c)
			f.Statement = fmt.Sprintf("Datastore %s is full: its memory reached the %s maxmemory limit%s and it rejects writes; %s", owner, bytesHuman(m.Latest), at, f.Statement)
			f.Score += 0.15
			f.Chain = []string{fmt.Sprintf("%s's data grows to its memory limit", owner), "With no room and no eviction it refuses writes (OOM command not allowed)", "Its clients fail the requests that write to it"}
			ev.citeConfig(f, storeConfigRe, 3)
			f.explains(ModeDeployRegression, "the errors come from the full datastore, not from a release")
			f.explains(ModeTrafficSaturation, "the errors come from the full datastore")
			return
		}
	}
}

var rePodOrdinal = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*?)-[0-9]+$`)

// crossing is the first time a series reaches v.
func crossing(s facts.Series, v float64) *time.Time {
	for _, p := range s.Downsampled {
		if p.V >= v {
			t := p.T
			return &t
		}
	}
	return nil
}

var (
	storeConfigRe = regexp.MustCompile(`(?i)(maxmemory|evict|max[-_]?memory|memory[-_]?limit)`)
	poolConfigRe  = regexp.MustCompile(`(?i)(pool[-_.]?size|maximum[-_]pool|max[-_]?pool|max[-_]?connections|pool[-_.]max)`)
)

// citeConfig quotes the ConfigMap settings in evidence that match re.
func (ev *Evidence) citeConfig(f *Finding, re *regexp.Regexp, n int) {
	shown := 0
	for _, r := range ev.Resources {
		if !strings.EqualFold(r.Kind, "ConfigMap") || len(r.Data) == 0 {
			continue
		}
		keys := make([]string, 0, len(r.Data))
		for k := range r.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, line := range strings.Split(r.Data[k], "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") || !re.MatchString(line) || shown >= n {
					continue
				}
				f.validated(fmt.Sprintf("ConfigMap %s/%s (%s): %s", r.Namespace, r.Name, k, clip(line, 160)), r.Cite)
				shown++
			}
		}
	}
}

// refineCert names the Secret holding the expired certificate from
// certificate-exporter series (expired flag or not-after time per secret).
func (ev *Evidence) refineCert(f *Finding) {
	var valid []string
	var vc Cite
	found := false
	for _, s := range ev.Series {
		n := strings.ToLower(s.Name)
		if !strings.Contains(n, "cert") || !strings.Contains(n, "expired") {
			continue
		}
		secret := labelOf(s.Series, "secret_name", "secret")
		if secret == "" {
			continue
		}
		sns := firstNonEmptyStr(labelOf(s.Series, "secret_namespace", "namespace"), ev.alertNamespace())
		if s.Latest < 1 {
			valid = appendUnique(valid, secret)
			vc.merge(s.Cite)
			continue
		}
		if found {
			continue
		}
		found = true
		f.Entity = "secret/" + sns + "/" + secret
		at := ""
		if t := crossing(s.Series, 1); t != nil && s.Peak >= 1 {
			at = " since " + hhmm(t)
		}
		cn := labelOf(s.Series, "subject_CN", "subject_cn", "cn")
		what := fmt.Sprintf("%s{secret_name=%s", s.Name, secret)
		if cn != "" {
			what += ", subject_CN=" + cn
		}
		what += fmt.Sprintf("} = 1%s: the certificate in Secret %s/%s has expired", at, sns, secret)
		f.validated(what, s.Cite)
		f.Statement += fmt.Sprintf("; the expired certificate is the one in Secret %s/%s", sns, secret)
		if cn != "" {
			f.Statement += " (" + cn + ")"
		}
		f.Score += 0.15
	}
	if found && len(valid) > 0 {
		f.validated(fmt.Sprintf("Other certificates are still valid: %s", strings.Join(valid, ", ")), vc)
	}
	if found {
		f.Chain = []string{"The certificate's renewal did not happen", "The certificate expired", "TLS handshakes with it fail (x509: certificate has expired)", "Requests that need it fail"}
		f.Remediation = []string{"Renew the certificate and fix its renewal (issuer, cert-manager Certificate status)", "Alert on certificate expiry days ahead"}
	}
}

var (
	inputFileRe = regexp.MustCompile(`(?i)(?:^|[\s=/:'"(])([\w.-]+\.(?:csv|tsv|jsonl?|ndjson|parquet|xml|avro|xlsx?|txt|dat)(?:\.gz)?)\b`)
	kvRe        = regexp.MustCompile(`\b([a-z][a-z0-9_]{1,30})=([^\s,;'"]+)`)
)

// refineInputFile names the input (a file) the parse errors point at, and
// weighs the data against the code: parse errors that start right after a
// release of the consumer are that release's defect (the finding then yields
// to the code-exception detector); without such a release the input changed,
// not the parser. Peers of the failing input (other values of the same
// key=value field in the consumer's own log lines) that keep succeeding show
// the consumer still works.
func (ev *Evidence) refineInputFile(f *Finding, ns string, lines []LogLine) {
	file := ""
	for _, l := range lines {
		if m := inputFileRe.FindStringSubmatch(l.Message); m != nil {
			file = m[1]
			break
		}
	}
	svc := ""
	if len(lines) > 0 {
		svc = ev.logService(lines[0])
	}
	var first *time.Time
	for _, l := range lines {
		if l.Timestamp != nil && (first == nil || l.Timestamp.Before(*first)) {
			first = l.Timestamp
		}
	}
	if d, ok := ev.deployBefore(svc, first); ok && !d.IsRollback {
		f.Score = minFaultScore
		f.inferred(fmt.Sprintf("Deploy %s of %s shortly precedes the first parse error: the release may have changed the parser", d.Revision, svc), d.Cite)
		return
	}
	if file != "" {
		if ns == "" {
			ns = ev.alertField("namespace", "kube_namespace")
		}
		f.Entity = "file/" + ns + "/" + file
		f.Statement = fmt.Sprintf("The input file %s is malformed: %s", file, f.Statement)
		for _, l := range ev.Logs {
			if isErrorLog(l.LogLine) || !strings.Contains(l.Message, file) || l.Timestamp == nil || first == nil || l.Timestamp.After(*first) {
				continue
			}
			f.validated(fmt.Sprintf("Before the first error (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
			break
		}
	}
	if svc != "" {
		f.inferred(fmt.Sprintf("No deploy of %s precedes the first parse error within %s: the input changed, not the code that reads it", svc, durHuman(time.Hour)))
	}
	// Peers: the key=value fields constant across the failing lines, and the
	// other values of those keys that the same service processes cleanly.
	fixed := map[string]string{}
	for i, l := range lines {
		seen := map[string]string{}
		for _, m := range kvRe.FindAllStringSubmatch(l.Message, -1) {
			seen[m[1]] = m[2]
		}
		if i == 0 {
			fixed = seen
			continue
		}
		for k, v := range fixed {
			if seen[k] != v {
				delete(fixed, k)
			}
		}
	}
	var keys []string
	for k := range fixed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "file" || strings.Contains(k, "reason") || strings.Contains(k, "error") {
			continue
		}
		var peers []string
		var cite Cite
		for _, l := range ev.Logs {
			if isErrorLog(l.LogLine) || (svc != "" && ev.logService(l) != svc) {
				continue
			}
			for _, m := range kvRe.FindAllStringSubmatch(l.Message, -1) {
				if m[1] == k && m[2] != fixed[k] {
					peers = appendUnique(peers, m[2])
					cite.merge(l.Cite)
				}
			}
		}
		if len(peers) == 0 || len(peers) > 8 {
			continue
		}
		f.validated(fmt.Sprintf("Only %s=%s fails: %s=%s keep being processed by %s without errors, so the consumer itself works", k, fixed[k], k, joinNames(peers), firstNonEmptyStr(svc, "the consumer")), cite)
		f.Statement += fmt.Sprintf("; only %s %s is affected (%s process cleanly)", k, fixed[k], joinNames(peers))
		f.Score += 0.05
	}
	f.Score += 0.05
	f.explains(ModeCodeException, "the exceptions are parse errors on one input, with no release of the parser before them: the data changed, not the code")
	f.Chain = []string{"A malformed input reaches the consumer", "Rows fail to parse and are rejected", "Imports fail and the alert fires"}
	f.Remediation = []string{"Quarantine the malformed input and ask its producer to resend it in the expected format", "Validate input files (header, delimiter, number format) before import and alert on the producer"}
}

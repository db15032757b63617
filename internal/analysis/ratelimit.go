package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// ModeUpstreamRateLimit is a downstream dependency answering 429 / rate
// limited: the caller hits that dependency's quota.
const ModeUpstreamRateLimit = "upstream_rate_limit"

var (
	rateLimitRe = regexp.MustCompile(`(?i)(\b429\b|too many requests|rate[ _-]?limit(ed|ing)?\b|rate_limit_exceeded|quota (exceeded|exhausted))`)
	// The dependency a rate-limit line names: upstream=X, "upstream X",
	// "X: 429", "rate limited by X".
	rlTargetRes = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bupstream[=:]\s*"?([a-z][\w.-]*[a-z0-9])`),
		regexp.MustCompile(`(?i)\brate[ _-]?limited (?:by )?([a-z][\w.-]*[a-z0-9])`),
		regexp.MustCompile(`(?i)\b([a-z][\w.-]*[a-z0-9]):? (?:status=)?429\b`),
		regexp.MustCompile(`(?i)\b([a-z][\w.-]*[a-z0-9]) (?:returned|answered|responded) (?:with )?(?:http )?429\b`),
	}
	rlLimitRe     = regexp.MustCompile(`(?i)\b(x-ratelimit-limit|ratelimit[_-]limit|limit_per_minute)"?[:=]\s*"?(\d+)`)
	rlUpstreamKV  = regexp.MustCompile(`(?i)\bupstream[=:]\s*"?([a-z][\w.-]*[a-z0-9])`)
	rlInboundWord = regexp.MustCompile(`(?i)(returning 429|respond(ed|ing)? (with )?429|client .{0,20}rate limited|-> 429)`)
)

// rlWords are generic words a target regexp may capture but that name no
// dependency.
var rlWords = map[string]bool{"status": true, "error": true, "http": true, "code": true, "upstream": true, "request": true, "requests": true, "response": true, "the": true, "with": true, "err": true, "failed": true}

func rlTarget(msg string) string {
	for _, re := range rlTargetRes {
		for _, m := range re.FindAllStringSubmatch(msg, -1) {
			t := strings.ToLower(strings.TrimRight(m[1], ".:"))
			if !rlWords[t] && !isIPLike(t) {
				return t
			}
		}
	}
	return ""
}

// detectUpstreamRateLimit: the caller's warnings and errors say a dependency
// answers 429 / rate limited. A quota is the dependency's limit: the caller
// fails because the dependency refuses it, which is a dependency failure
// (not the caller's resource exhaustion) unless the caller's own release
// right before the onset changed how much it calls. The quota value the
// dependency advertises, earlier higher values of it, other dependencies of
// the same caller that still answer, and the caller's last release are
// reported.
// rlGroup is the rate-limit lines that name one dependency, and the
// services that logged them.
type rlGroup struct {
	target  string
	lines   []LogLine
	callers []string
}

// first is the group's earliest line.
func (g *rlGroup) first() LogLine {
	first := g.lines[0]
	for _, l := range g.lines {
		if l.Timestamp != nil && (first.Timestamp == nil || l.Timestamp.Before(*first.Timestamp)) {
			first = l
		}
	}
	return first
}

// rateLimitGroups are the callers' warnings and errors that say a
// dependency answers 429 / rate limited, by dependency, most lines first.
func (ev *Evidence) rateLimitGroups() []*rlGroup {
	groups := map[string]*rlGroup{}
	var order []string
	for _, l := range ev.Logs {
		if !isErrorLog(l.LogLine) && logLevel(l.LogLine) != "WARN" {
			continue
		}
		if !rateLimitRe.MatchString(l.Message) || rlInboundWord.MatchString(l.Message) {
			continue
		}
		t := rlTarget(l.Message)
		svc := ev.logService(l)
		if t == "" || strings.EqualFold(t, svc) {
			continue
		}
		g := groups[t]
		if g == nil {
			g = &rlGroup{target: t}
			groups[t] = g
			order = append(order, t)
		}
		g.lines = append(g.lines, l)
		g.callers = appendUnique(g.callers, svc)
	}
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]].lines) > len(groups[order[j]].lines) })
	var out []*rlGroup
	for _, t := range order {
		if len(groups[t].lines) >= 3 {
			out = append(out, groups[t])
		}
	}
	return out
}

func detectUpstreamRateLimit(ev *Evidence) []Finding {
	var out []Finding
	for _, g := range ev.rateLimitGroups() {
		t := g.target
		caller := g.callers[0]
		first := g.first()
		f := Finding{Mode: ModeUpstreamRateLimit, Category: catDependency, Score: 0.82, Entity: "service/" + t}
		for _, r := range ev.Resources {
			if strings.EqualFold(r.Kind, "Service") && (r.Name == t || strings.HasPrefix(r.Name, t+"-")) {
				f.Entity = "service/" + r.Namespace + "/" + r.Name
			}
		}
		reps := representative(g.lines, 2)
		limitNow := ""
		for _, l := range g.lines {
			if m := rlLimitRe.FindStringSubmatch(l.Message); m != nil {
				limitNow = m[1] + ": " + m[2]
				break
			}
		}
		f.Statement = fmt.Sprintf("Dependency %s rate-limits %s: %s answer HTTP 429 / rate limited from %s (e.g. %s)",
			t, joinNames(g.callers), plural(len(g.lines), "call", "calls"), hhmm(first.Timestamp), quote(reps[0].Message))
		if limitNow != "" {
			f.Statement += fmt.Sprintf("; %s advertises %s", t, limitNow)
		}
		for _, l := range reps {
			f.validated(fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), logLevel(l.LogLine), quote(l.Message)), citesOfLogs(sameSig(g.lines, l)))
		}
		// Earlier, higher quota values of the same dependency: the limit was cut.
		for _, l := range ev.Logs {
			if l.Timestamp == nil || first.Timestamp == nil || !l.Timestamp.Before(*first.Timestamp) || !containsFold(l.Message, t) {
				continue
			}
			if m := rlLimitRe.FindStringSubmatch(l.Message); m != nil && limitNow != "" && !strings.HasSuffix(limitNow, ": "+m[2]) {
				f.validated(fmt.Sprintf("Before the onset %s advertised %s=%s (%s): the quota was lowered, the caller's volume did not jump", t, m[1], m[2], logOrigin(l)), l.Cite)
				f.Score += 0.05
				break
			}
		}
		// Other logs naming the dependency (notices, status pages) near the onset.
		for _, l := range ev.Logs {
			if isErrorLog(l.LogLine) || ev.logService(l) == caller || !containsFold(l.Message, t) || l.Timestamp == nil || first.Timestamp == nil {
				continue
			}
			if d := first.Timestamp.Sub(*l.Timestamp); d >= 0 && d <= codeDeployWindow {
				f.validated(fmt.Sprintf("%s log (%s): %s", l.Cite.Source("logs"), logOrigin(l), quote(l.Message)), l.Cite)
				break
			}
		}
		// Other dependencies of the same caller keep answering.
		var peers []string
		var pc Cite
		for _, l := range ev.Logs {
			if isErrorLog(l.LogLine) || logLevel(l.LogLine) == "WARN" || ev.logService(l) != caller {
				continue
			}
			if m := rlUpstreamKV.FindStringSubmatch(l.Message); m != nil && !strings.EqualFold(m[1], t) {
				peers = appendUnique(peers, strings.ToLower(m[1]))
				pc.merge(l.Cite)
			}
		}
		if len(peers) > 0 && len(peers) <= 6 {
			f.validated(fmt.Sprintf("Other dependencies of %s keep answering (%s): the caller and its network work", caller, joinNames(peers)), pc)
		}
		// The caller's own release: recent → it may call more; old → the caller did not change.
		if d, ok := ev.deployBefore(caller, first.Timestamp); ok && !d.IsRollback {
			f.Score -= 0.12
			f.inferred(fmt.Sprintf("Deploy %s of %s at %s precedes the first 429: the release may call %s more often", d.Revision, caller, hhmm(d.StartedAt), t), d.Cite)
		} else if d, ok := ev.lastDeployOf(caller); ok {
			f.validated(fmt.Sprintf("The last deploy of %s (%s at %s) is long before the first 429: the caller did not change", caller, d.Revision, hhmm(d.StartedAt)), d.Cite)
		}
		f.Chain = []string{fmt.Sprintf("%s enforces a request quota on %s", t, caller), "Calls beyond the quota are answered 429 (Too Many Requests)", fmt.Sprintf("%s fails the requests that need %s and the alert fires", caller, t)}
		f.Remediation = []string{fmt.Sprintf("Restore the quota of %s (plan, account) or negotiate a higher limit", t), fmt.Sprintf("Make %s respect Retry-After with backoff, cache or batch calls to %s, and shed non-critical calls", caller, t)}
		f.Signals = []string{"429", "rate limit", t}
		f.explains(ModeTrafficSaturation, "errors come from the dependency's quota, not from the caller's capacity")
		f.explains(ModeCodeException, "the failures are the dependency's 429 answers")
		f.explains(ModeAnomaly, "the dependency's 429 answers explain the abnormal signals")
		if c, ok := ev.quotaSharer(g); ok {
			// The quota is shared (an account, a key) and a consumer that
			// started just before the first 429 uses it: the quota is
			// exhausted by that consumer's demand, not cut by the
			// dependency. The consumer is the culprit.
			f.Category, f.Entity, f.Score = catResource, c.entity, f.Score+0.06
			f.Statement = fmt.Sprintf("%s exhausts the quota %s grants to %s: it started at %s, %s before the first 429, and uses the same %s (%s); %s",
				c.name, t, joinNames(g.callers), hhmm(c.started), durHuman(first.Timestamp.Sub(*c.started)), c.what, quote(c.line.Message), f.Statement)
			f.validated(fmt.Sprintf("%s log (%s): %s", c.line.Cite.Source("pod_logs"), logOrigin(c.line), quote(c.line.Message)), c.line.Cite)
			f.validated(fmt.Sprintf("Pod %s started at %s, %s before the first 429", c.pod.Name, hhmm(c.started), durHuman(first.Timestamp.Sub(*c.started))), c.pod.Cite)
			f.Chain = append([]string{fmt.Sprintf("%s starts and calls %s with the shared %s", c.name, t, c.what)}, f.Chain[1:]...)
			f.Remediation = append([]string{fmt.Sprintf("Throttle or pause %s (its concurrency, its schedule) so that it leaves %s's quota to %s", c.name, t, joinNames(g.callers))}, f.Remediation[1:]...)
		}
		out = append(out, f)
	}
	return out
}

// quotaConsumer is a workload that started before a dependency's first 429
// and uses the same quota as its callers.
type quotaConsumer struct {
	pod     Pod
	entity  string // the Job, or the owning workload
	name    string
	started *time.Time
	what    string // what it shares: the dependency's host, or a key
	line    LogLine
}

// quotaSharerLead: a consumer that started this long before the first 429
// can be the one that exhausts the quota.
const quotaSharerLead = 45 * time.Minute

// newConsumers are the pods of other workloads than callers that started
// within quotaSharerLead before t, earliest first.
func (ev *Evidence) newConsumers(callers []string, t *time.Time) []Pod {
	if t == nil {
		return nil
	}
	var out []Pod
	for _, p := range ev.Pods {
		st := podStarted(p)
		if st == nil || st.After(*t) || t.Sub(*st) > quotaSharerLead {
			continue
		}
		w := ev.workloadOf(p.Pod)
		if slices.ContainsFunc(callers, func(c string) bool { return strings.EqualFold(c, w) || strings.EqualFold(c, p.Name) }) {
			continue
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return timeOfPtr(podStarted(out[i])).Before(timeOfPtr(podStarted(out[j]))) })
	return out
}

// podStarted is when p started, else when it was created.
func podStarted(p Pod) *time.Time { return firstNonNilTime(p.StartTime, p.CreatedAt) }

// quotaSharer: a new consumer (newConsumers) whose own log, from before the
// first 429, names the dependency or an identifier the 429 lines name (the
// API key or account the quota is counted on).
func (ev *Evidence) quotaSharer(g *rlGroup) (quotaConsumer, bool) {
	first := g.first()
	var texts []string
	for _, l := range g.lines {
		texts = append(texts, l.Message)
	}
	for _, p := range ev.newConsumers(g.callers, first.Timestamp) {
		for _, l := range ev.Logs {
			if l.Pod != p.Name || isErrorLog(l.LogLine) || l.Timestamp != nil && l.Timestamp.After(*first.Timestamp) {
				continue
			}
			what := ""
			if containsFold(l.Message, g.target) {
				what = "dependency " + g.target
			} else {
				for _, id := range sharedIdentifiers(l.Message, texts) {
					if !strings.EqualFold(id, g.target) && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(id)) {
						what = "identity " + id
						break
					}
				}
			}
			if what == "" {
				continue
			}
			c := quotaConsumer{pod: p, name: p.Name, started: podStarted(p), what: what, line: l}
			switch {
			case strings.EqualFold(p.OwnerKind, "Job") && p.OwnerName != "":
				c.entity, c.name = "job/"+p.Namespace+"/"+p.OwnerName, "Job "+p.OwnerName
			case ev.ownerEntity(p) != "":
				c.entity = ev.ownerEntity(p)
				c.name = c.entity[strings.LastIndexByte(c.entity, '/')+1:]
			default:
				c.entity = podEntity(p.Pod)
			}
			return c, true
		}
	}
	return quotaConsumer{}, false
}

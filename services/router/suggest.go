package router

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// finding is what one pin shows, as the suggestion rules read it.
type finding struct {
	pin       *evidencev1.EvidencePin
	text      string // lower-cased claim, snippets and the head of the raw output
	namespace string
	service   string
	pod       string // a failing pod the pin names
	pods      []facts.Pod
	series    []facts.Series
	deploys   []facts.Deploy
}

// suggestionRule maps a finding to the quick-action chips that follow it up.
type suggestionRule struct {
	name  string
	match func(f *finding) bool
	chips func(f *finding) []chipSpec
}

type chipSpec struct {
	label  string
	intent string
	params map[string]any // semantic names: namespace, pod, service, kind, name, previous, query, level, since_minutes, involved_object
}

var (
	reOOM       = regexp.MustCompile(`\b(oomkilled|oom[- ]killed|out of memory|oom|exit code 137|memory limit)\b`)
	reCrashLoop = regexp.MustCompile(`\b(crashloopbackoff|crash ?loop|back-off restarting|backoff restarting)\b`)
	reImagePull = regexp.MustCompile(`\b(imagepullbackoff|errimagepull|image pull|manifest unknown|pull access denied)\b`)
	reSchedule  = regexp.MustCompile(`\b(failedscheduling|unschedulable|insufficient (?:cpu|memory)|didn't match node|untolerated taint)\b`)
	reProbe     = regexp.MustCompile(`\b((?:liveness|readiness|startup) probe failed|probe failed|unhealthy)\b`)
	reNodeDown  = regexp.MustCompile(`\b(notready|node not ready|kubelet stopped posting|nodehasdiskpressure|memorypressure|diskpressure)\b`)
	reErrRate   = regexp.MustCompile(`\b(5xx|http 5\d\d|status(?:=|: ?)5\d\d|code="?5|error rate|internal server error|bad gateway|service unavailable|gateway timeout)\b`)
	reLatency   = regexp.MustCompile(`\b(latency|p9[059]|slow(?:er)? responses?|response time|timed? ?out|deadline exceeded)\b`)
	reDeployTxt = regexp.MustCompile(`\b(deploy(?:ed|ment rolled|s)?|rollout|new revision|new image|release)\b`)
	rePodRef    = regexp.MustCompile(`\bpods?[/ ]([a-z0-9][a-z0-9.-]*[a-z0-9])\b`)
	reDBPress   = regexp.MustCompile(`\b(too many clients|connection slots|max_connections|connection pool|deadlock|replication lag|replica lag|lock wait|slow quer(?:y|ies))\b`)
)

var suggestionRules = []suggestionRule{
	{name: "oom_killed", match: func(f *finding) bool { return reOOM.MatchString(f.text) || podsOOM(f.pods) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Pull crash logs", intent: "fetch_pod_logs", params: map[string]any{"previous": true}},
				{label: "Check memory limits", intent: "describe_resource", params: map[string]any{"kind": "pod"}},
				{label: "Memory usage", intent: "query_prometheus", params: map[string]any{"query": promQL(promMemory, f.target(), "")}},
			}
		}},
	{name: "crash_loop", match: func(f *finding) bool { return reCrashLoop.MatchString(f.text) || podsRestarting(f.pods) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Pull crash logs", intent: "fetch_pod_logs", params: map[string]any{"previous": true}},
				{label: "Describe pod", intent: "describe_resource", params: map[string]any{"kind": "pod"}},
				{label: "View recent events", intent: "get_events", params: map[string]any{"since_minutes": 30.0}},
			}
		}},
	{name: "image_pull", match: func(f *finding) bool { return reImagePull.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Describe pod", intent: "describe_resource", params: map[string]any{"kind": "pod"}},
				{label: "View recent events", intent: "get_events", params: map[string]any{"since_minutes": 30.0}},
			}
		}},
	{name: "scheduling_failure", match: func(f *finding) bool { return reSchedule.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Check node health", intent: "get_node_health", params: map[string]any{}},
				{label: "Describe pod", intent: "describe_resource", params: map[string]any{"kind": "pod"}},
			}
		}},
	{name: "probe_failure", match: func(f *finding) bool { return reProbe.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Describe pod probes", intent: "describe_resource", params: map[string]any{"kind": "pod"}},
				{label: "Pull crash logs", intent: "fetch_pod_logs", params: map[string]any{"previous": true}},
			}
		}},
	{name: "node_not_ready", match: func(f *finding) bool { return reNodeDown.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{{label: "Check node health", intent: "get_node_health", params: map[string]any{}}}
		}},
	{name: "dns_errors", match: func(f *finding) bool { return reDNS.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Search DNS errors", intent: "search_logs", params: map[string]any{"query": dnsQuery}},
				{label: "View recent events", intent: "get_events", params: map[string]any{"since_minutes": 30.0}},
			}
		}},
	{name: "high_error_rate", match: func(f *finding) bool { return reErrRate.MatchString(f.text) || seriesNamed(f.series, "http_requests") },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Error rate", intent: "query_prometheus", params: map[string]any{"query": promQL(promErrorRate, f.target(), "")}},
				{label: "Search error logs", intent: "search_logs", params: map[string]any{"level": "ERROR", "query": "error"}},
				{label: "Check pod health", intent: "check_pod_status", params: map[string]any{}},
			}
		}},
	{name: "latency", match: func(f *finding) bool { return reLatency.MatchString(f.text) || seriesNamed(f.series, "duration") },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{{label: "p99 latency", intent: "query_prometheus", params: map[string]any{"query": promQL(promLatency, f.target(), "0.99")}}}
		}},
	{name: "memory_spike", match: func(f *finding) bool { return memorySpike(f.series) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{{label: "Run memory PromQL", intent: "query_prometheus", params: map[string]any{"query": promQL(promMemory, f.target(), "")}}}
		}},
	{name: "deploy_near_onset", match: func(f *finding) bool { return len(f.deploys) > 0 },
		chips: func(f *finding) []chipSpec {
			svc := f.service
			if svc == "" {
				svc = f.deploys[len(f.deploys)-1].Service
			}
			return []chipSpec{{label: "Commits in the deploy", intent: "get_commits", params: map[string]any{"service": svc}}}
		}},
	{name: "deploy_mentioned", match: func(f *finding) bool { return len(f.deploys) == 0 && reDeployTxt.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{{label: "Recent deploys", intent: "get_deploy_history", params: map[string]any{}}}
		}},
	{name: "db_pressure", match: func(f *finding) bool { return reDBPress.MatchString(f.text) },
		chips: func(f *finding) []chipSpec {
			return []chipSpec{
				{label: "Top database queries", intent: "get_db_top_queries", params: map[string]any{}},
				{label: "Database metrics", intent: "query_db_metrics", params: map[string]any{}},
			}
		}},
}

func podsOOM(pods []facts.Pod) bool {
	for _, p := range pods {
		if p.OOMKilled {
			return true
		}
		for _, c := range p.Containers {
			if strings.EqualFold(c.LastReason, "OOMKilled") || strings.EqualFold(c.Reason, "OOMKilled") {
				return true
			}
		}
	}
	return false
}

func podsRestarting(pods []facts.Pod) bool {
	for _, p := range pods {
		if p.Restarts >= 3 {
			return true
		}
	}
	return false
}

func seriesNamed(ss []facts.Series, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s.Name, sub) && len(s.Anomalies) > 0 {
			return true
		}
	}
	return false
}

func memorySpike(ss []facts.Series) bool {
	for _, s := range ss {
		if strings.Contains(s.Name, "memory") && (s.Shape == "spike" || s.Shape == "creep" || s.Shape == "step" || len(s.Anomalies) > 0) {
			return true
		}
	}
	return false
}

func (f *finding) target() metricTarget {
	return metricTarget{Namespace: f.namespace, Service: f.service, Pod: f.pod}
}

// readFinding extracts what the rules read from a pin.
func readFinding(p *evidencev1.EvidencePin, rc *evidencev1.RouterContext) *finding {
	f := &finding{pin: p}
	var b strings.Builder
	b.WriteString(p.GetClaim())
	for _, s := range p.GetSupportingEvidence() {
		b.WriteByte('\n')
		b.WriteString(s)
	}
	raw := p.GetRawOutput()
	raw = textutil.Truncate(raw, 8192)
	b.WriteByte('\n')
	b.WriteString(raw)
	f.text = strings.ToLower(b.String())
	// The call's own query echoed in its claim is not a finding.
	if q := strings.ToLower(p.GetParams().GetFields()["query"].GetStringValue()); q != "" {
		f.text = strings.ReplaceAll(f.text, q, " ")
	}
	md := p.GetMetadata()
	_, _ = facts.Decode(md, facts.KeyPods, &f.pods)
	_, _ = facts.Decode(md, facts.KeySeries, &f.series)
	_, _ = facts.Decode(md, facts.KeyDeploys, &f.deploys)
	params := p.GetParams().GetFields()
	f.namespace = firstNonEmpty(p.GetNamespace(), params["namespace"].GetStringValue(), rc.GetActiveNamespace())
	f.service = firstNonEmpty(p.GetService(), params["service"].GetStringValue(), rc.GetActiveService())
	var resolved string
	_, _ = facts.Decode(md, facts.KeyResolvedPod, &resolved)
	for _, pod := range f.pods {
		if pod.OOMKilled || pod.Restarts > 0 || !pod.Ready {
			f.pod = pod.Name
			if pod.Namespace != "" {
				f.namespace = pod.Namespace
			}
			break
		}
	}
	if f.pod == "" {
		if pp := params["pod"].GetStringValue(); pp != "" && !strings.Contains(pp, "*") {
			f.pod = pp
		}
	}
	f.pod = firstNonEmpty(f.pod, resolved)
	if f.pod == "" {
		var evs []facts.Event
		_, _ = facts.Decode(md, facts.KeyEvents, &evs)
		for _, ev := range evs {
			if strings.EqualFold(ev.InvolvedKind, "pod") && ev.InvolvedName != "" && strings.EqualFold(ev.Type, "warning") {
				f.pod = ev.InvolvedName
				f.namespace = firstNonEmpty(ev.Namespace, f.namespace)
				break
			}
		}
	}
	if f.pod == "" {
		if m := rePodRef.FindStringSubmatch(f.text); m != nil && !stopwords[m[1]] {
			f.pod = m[1]
		}
	}
	if f.pod == "" && strings.Contains(p.GetSourceTool(), "pod") && p.GetResourceName() != "" {
		f.pod = p.GetResourceName()
	}
	return f
}

// ListSuggestions derives suggestion chips from the session's pins.
func (s *Service) ListSuggestions(ctx context.Context, req *routerv1.ListSuggestionsRequest) (*routerv1.ListSuggestionsResponse, error) {
	session, err := sessionOf(req.GetSessionId(), nil)
	if err != nil {
		return nil, err
	}
	mdrc, err := contextFromMetadata(ctx)
	if err != nil {
		return nil, err
	}
	rc := s.sessionContext(session, mdrc)
	pins := s.pins(ctx, session)
	if len(pins) == 0 {
		return &routerv1.ListSuggestionsResponse{}, nil
	}
	reg, err := s.registry(ctx, session)
	if err != nil {
		return nil, err
	}
	return &routerv1.ListSuggestionsResponse{Chips: Suggest(reg, pins, rc, s.cfg.MaxSuggestions)}, nil
}

// Suggest applies the suggestion rules to pins (strongest first), keeping
// chips whose tool is available and whose parameters resolve, skipping calls
// the session already made, deduplicated, at most max.
func Suggest(reg *Registry, pins []*evidencev1.EvidencePin, rc *evidencev1.RouterContext, max int) []*routerv1.SuggestionChip {
	done := map[string]bool{}
	for _, p := range pins {
		t, ok := reg.Tool(p.GetSourceTool())
		if !ok {
			continue
		}
		c, err := ValidateParams(t, p.GetParams().AsMap())
		if err != nil {
			continue
		}
		done[callKey(c)] = true
		// a wildcard call covers the pod it resolved to
		var resolved string
		if ok, _ := facts.Decode(p.GetMetadata(), facts.KeyResolvedPod, &resolved); ok && resolved != "" {
			if _, has := c.Params["pod"]; has {
				c.Params["pod"] = resolved
				done[callKey(c)] = true
			}
		}
	}
	seen := map[string]bool{}
	var out []*routerv1.SuggestionChip
	for _, p := range rankPins(pins) {
		if p.GetValidationStatus() == evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED || p.GetNoData() {
			continue // a rejected pin or an empty result is no finding to follow up
		}
		f := readFinding(p, rc)
		for _, rule := range suggestionRules {
			if !rule.match(f) {
				continue
			}
			for _, spec := range rule.chips(f) {
				c := buildChip(reg, f, spec, rc)
				if c == nil {
					continue
				}
				key := callKey(c)
				if seen[key] || done[key] {
					continue
				}
				seen[key] = true
				params, err := paramsStruct(c.Params)
				if err != nil {
					continue
				}
				label := spec.label
				if tgt := firstNonEmpty(strVal(c.Params["pod"]), strVal(c.Params["name"]), strVal(c.Params["service"])); tgt != "" {
					label = fmt.Sprintf("%s (%s)", label, tgt)
				}
				out = append(out, &routerv1.SuggestionChip{
					Label:  label,
					Action: &routerv1.QuickActionPayload{Intent: c.Tool.GetIntent(), Params: params},
					Rule:   rule.name,
					PinId:  p.GetId(),
				})
				if len(out) >= max {
					return out
				}
			}
		}
	}
	return out
}

func strVal(v any) string {
	s, _ := v.(string)
	return s
}

// buildChip turns a chip spec into a complete call, or nil when the tool is
// missing, unavailable, or a required parameter cannot be resolved.
func buildChip(reg *Registry, f *finding, spec chipSpec, rc *evidencev1.RouterContext) *Call {
	t, ok := reg.Tool(spec.intent)
	if !ok || !t.GetAvailable() {
		return nil
	}
	c := &Call{Tool: t, Params: map[string]any{}}
	keys := make([]string, 0, len(spec.params))
	for k := range spec.params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m, ok := spec.params[k].(float64); ok && k == "since_minutes" {
			c.setWindow(m)
			continue
		}
		c.set(spec.params[k], k)
	}
	switch {
	case spec.intent == "describe_resource" && f.pod != "":
		c.set(f.pod, "name", "resource_name")
	case spec.intent == "get_events" && f.pod != "":
		c.set("pod/"+f.pod, "involved_object")
	}
	if f.pod != "" {
		c.set(f.pod, "pod")
	}
	c.set(f.namespace, "namespace")
	c.set(f.service, "service")
	if spec.intent == "search_logs" || spec.intent == "query_prometheus" {
		c.setWindow(0)
	}
	fc := proto.CloneOf(rc)
	if fc == nil {
		fc = &evidencev1.RouterContext{}
	}
	if f.namespace != "" {
		fc.ActiveNamespace = f.namespace
	}
	if f.pod != "" {
		fc.ActivePod = f.pod
	}
	missing, err := FillFromContext(c, fc)
	if err != nil || len(missing) > 0 {
		return nil
	}
	return c
}

// callKey identifies a call by intent and canonical parameters.
func callKey(c *Call) string {
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(c.Tool.GetIntent())
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", k, formatValue(c.Params[k]))
	}
	return b.String()
}

package brain

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// maxConfigFollowUps bounds the ConfigMaps read for one suspect;
// maxNamedFollowUps the objects named in failing lines described per round.
const (
	maxConfigFollowUps = 2
	maxNamedFollowUps  = 2
)

// followUps are a round's follow-up calls, made in the same round before
// the review, each unless an equivalent call ran: the objects the failing
// lines name; else what the leading finding asks for (data it carries,
// analysis.Result.LeadFollowUps); else what the leading entity's kind
// calls for (entityFollowUps).
func (s *Service) followUps(ctx context.Context, st *invState) []pendingCall {
	defs := s.toolDefs(ctx, st.rec.GetSessionId())
	if _, ok := defs[intentDescribe]; !ok {
		return nil
	}
	_, res, err := s.evidence(ctx, st)
	if err != nil {
		return nil
	}
	out := s.followUpsOf(ctx, st, defs, res)
	// A survey whose window was flat throughout, over the hours before.
	out = append(out, s.longSurvey(ctx, st)...)
	// The status pages of the outside providers the failing lines name
	// (the leading finding's first): the provider's own word on an outage,
	// whatever the leading hypothesis is; once per provider.
	for _, p := range res.ExternalProviders() {
		c := pendingCall{Intent: intentStatusPage, Params: map[string]any{"provider": p}, Origin: originExpand}
		if d, ok := defs[c.Intent]; ok && d.GetAvailable() && !st.ranEquivalent(c) && !slices.ContainsFunc(out, c.same) {
			out = append(out, c)
		}
	}
	return out
}

// same: the calls have the same intent and parameters.
func (c pendingCall) same(o pendingCall) bool {
	if c.Intent != o.Intent || len(c.Params) != len(o.Params) {
		return false
	}
	for k, v := range c.Params {
		if fmt.Sprint(o.Params[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// followUpsOf are the follow-ups the evidence calls for, by the rules of
// followUps.
func (s *Service) followUpsOf(ctx context.Context, st *invState, defs map[string]*evidencev1.ToolDefinition, res analysis.Result) []pendingCall {
	// Objects the failing lines name ("PodDisruptionBudget ns/name") are
	// described first: their spec and conditions are the next evidence,
	// whatever the leading hypothesis is.
	var named []pendingCall
	for _, o := range res.NamedObjects() {
		if len(named) >= maxNamedFollowUps {
			break
		}
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": o.Kind, "name": o.Name, "namespace": o.Namespace}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			named = append(named, c)
		}
	}
	if len(named) > 0 {
		return named
	}
	if len(res.Hypotheses) == 0 {
		// No detector proposed a cause: the entity with the strongest
		// abnormal signals is the suspect to read next, and its error's
		// history (was it seen, filed, accepted before?).
		out := s.signatureSearch(ctx, st, res.ErrorSignature())
		out = append(out, s.faultEvidence(ctx, st, res)...)
		if untargeted(st.rec.GetAlert()) {
			// Nor does the alert name a workload: what the workloads a
			// listing found logged is the evidence still unread.
			out = append(out, s.untargetedLogs(ctx, st)...)
		}
		if len(st.pods()) == 0 {
			// No workload found anywhere (the alert comes from outside
			// the cluster, or names a check): every namespace's lines over
			// the incident window are the evidence still unread.
			out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": "*"})...)
			// And every service's releases: what changed anywhere.
			out = append(out, s.fresh(ctx, st, intentDeploys, map[string]any{"service": "*"})...)
		}
		if code := res.RefusedStatus(); code != "" {
			// Only client errors: who sends the refused requests is in an
			// access log, wherever the edge logs it.
			out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": `" ` + code + ` "`})...)
		}
		if obj := res.ChangedObject(); obj != "" {
			// The object a change before the onset touched: its spec
			// says what the change set.
			parts := strings.Split(obj, "/")
			c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": parts[0], "name": parts[2], "namespace": parts[1]}, Origin: originExpand}
			if !st.ranEquivalent(c) {
				out = append(out, c)
			}
		}
		// What happened to the peers the target's own lines name (a
		// database failed over on a planned change).
		out = append(out, s.peerSearches(ctx, st, res)...)
		// What the cluster's controllers reported (a CronJob that stopped
		// scheduling, a quota that refused pods): nothing else explains
		// the alert yet.
		out = append(out, s.clusterEvents(ctx, st)...)
		out = append(out, s.culpritReads(ctx, st, defs, res)...)
		if ent := res.SuspectEntity(); ent != "" {
			// What other systems logged about the suspect (a deployer's
			// sync of its objects, a ticket), then what its kind calls for.
			out = append(out, s.contextSearches(ctx, st, ent)...)
			out = append(out, s.entityFollowUps(ctx, st, ent)...)
		}
		return out
	}
	asked, exclusive := res.LeadFollowUps()
	var lead, context []pendingCall
	if res.Healthy {
		// A healthy reading says why the alert fired: what was announced
		// or recorded about the target in the days before (a change record,
		// a load test, a decommission), across namespaces.
		context = s.contextSearches(ctx, st, res.Hypotheses[0].GetEntity())
		// What other systems did to what the target owns: they name it by
		// the words of its name ("pilots/roster-tls" of pilot-roster).
		context = append(context, s.nameWordSearch(ctx, st, res.Hypotheses[0].GetEntity())...)
		// What happened to the peers its own lines name (a cache its
		// provider patched, a database that failed over).
		context = append(context, s.peerSearches(ctx, st, res)...)
		context = append(context, s.clusterEvents(ctx, st)...)
		// The records written around the alert whatever they name (a
		// change record, an approved test, a platform upgrade, an audit
		// record of a write), over the same look-back.
		context = append(context, s.recordSearch(ctx, st)...)
		context = append(context, s.recordTrails(ctx, st, res)...)
		context = append(context, s.hostLogs(ctx, st, res)...)
		// What changed: no alert is called noise before the releases and
		// commits were read (a change that took traffic away reads as
		// health).
		if !st.readData(intentDeploys) {
			context = append(context, s.fresh(ctx, st, intentDeploys, map[string]any{"service": "*"})...)
		}
		if !st.readData(intentCommits) {
			context = append(context, s.fresh(ctx, st, intentCommits, map[string]any{"service": "*"})...)
		}
		// What every system logged over the incident window: the event
		// that set the symptoms off is often another system's line that
		// names nothing of the target ("full time" of a match before its
		// viewers' streams aborted).
		// Over the hours before the alert, not only its window: an alert
		// that measures a duration (a run not done in 30 minutes) fires
		// well after what was written about it.
		context = append(context, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": "*", "since_minutes": healthyLookback})...)
		if res.Hypotheses[0].GetEntity() == "" {
			// Health claimed of no target at all (the alert names a
			// product or a check, nothing in the cluster): what the
			// workloads themselves logged is the evidence still unread.
			context = append(context, s.untargetedLogs(ctx, st)...)
		}
	} else {
		// The mechanism is not established: what other systems logged
		// about the suspect (a deployer's sync of its objects, a ticket)
		// is the next evidence, read the same way.
		context = s.contextSearches(ctx, st, res.Hypotheses[0].GetEntity())
		// What other systems did to what the target owns: they name it by
		// the words of its name ("pilots/roster-tls" of pilot-roster).
		context = append(context, s.nameWordSearch(ctx, st, res.Hypotheses[0].GetEntity())...)
		// What happened to the peers its own lines name (a database
		// failed over on a planned change, a cache its provider patched).
		context = append(context, s.peerSearches(ctx, st, res)...)
		if untargeted(st.rec.GetAlert()) {
			// The alert names no workload (a check of a URL, a product):
			// the suspect came from shared logs alone, and what the
			// workloads themselves logged is the evidence still unread.
			context = append(context, s.untargetedLogs(ctx, st)...)
		}
	}
	context = append(context, s.faultEvidence(ctx, st, res)...)
	context = append(context, s.culpritReads(ctx, st, defs, res)...)
	if syms := res.ContractSymbols(); len(syms) > 0 {
		// A code or data failure that quotes a field or symbol: whether
		// another service (its producer) changed it is in every service's
		// commits.
		context = append(context, s.fresh(ctx, st, intentCommits, map[string]any{"service": "*"})...)
	}
	for _, fu := range asked {
		c := pendingCall{Intent: fu.Intent.String(), Params: fu.Params, Origin: originExpand}
		if serves(defs, c.Intent) && !st.ranEquivalent(c) && (c.Intent != intentStatusPage || defs[c.Intent].GetAvailable()) {
			lead = append(lead, c)
		}
	}
	if len(lead) > 0 || exclusive {
		return append(context, lead...)
	}
	return append(context, s.entityFollowUps(ctx, st, res.Hypotheses[0].GetEntity())...)
}

// faultEvidence is what a reading that is not healthy reads next,
// whatever its lead: the commits of releases no pin read, what other
// systems logged about the objects its errors name, and the logs of
// failed pods.
func (s *Service) faultEvidence(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	if res.Healthy {
		return nil
	}
	out := s.releaseCommits(ctx, st, res)
	if !st.readData(intentCommits) {
		// What changed is read before any fault is concluded: when no
		// call read a commit yet (none ran, or the alerted service's
		// found none: its settings live in another repository), every
		// service's recent commits (a
		// platform repository's change to a node setting explains the
		// timeouts a dependency reading would blame on the server).
		out = append(out, s.fresh(ctx, st, intentCommits, map[string]any{"service": "*"})...)
	}
	if !st.readData(intentDeploys) {
		// Nor is a fault concluded before the releases were read: when no
		// call read a deploy yet (none ran, or the alerted service had
		// none), every service's recent releases (another team's rollout
		// of a shared proxy, a controller, a library the target calls).
		out = append(out, s.fresh(ctx, st, intentDeploys, map[string]any{"service": "*"})...)
	}
	ran := st.executedIntents()
	if !slices.Contains(ran, intentSurveyMetrics) && !slices.Contains(ran, intentPromQL) {
		// Nor before the metrics were read: the scope's series (a
		// saturation, a rate that moved with the failures) confirm or
		// refute what the lines say.
		if c, miss := s.callFor(ctx, st, intentSurveyMetrics, originExpand); c.Intent != "" && miss == "" && serves(s.toolDefs(ctx, st.rec.GetSessionId()), c.Intent) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
	}
	if len(res.SuspectNodes()) > 0 && !slices.Contains(ran, string(intent.GetNodeHealth)) {
		// A node the evidence points at (a reboot, a NotReady, its own
		// series): whether it is Ready again is read before it is blamed.
		out = append(out, s.fresh(ctx, st, string(intent.GetNodeHealth), map[string]any{})...)
	}
	if !slices.Contains(ran, intentEvents) {
		// What the kubelet and the controllers said (a probe that kills
		// the container, a failed start, a refused pod) is read before any
		// fault is concluded, when no call read events yet.
		out = append(out, s.clusterEvents(ctx, st)...)
	}
	out = append(out, s.recordSearch(ctx, st)...)
	out = append(out, s.recordTrails(ctx, st, res)...)
	out = append(out, s.trailSearches(ctx, st, res)...)
	out = append(out, s.traceSearch(ctx, st, res)...)
	out = append(out, s.hostLogs(ctx, st, res)...)
	if res.InputsUnread() {
		// Failures on bad data, or none established: the loads of data
		// around the alert (a feed whose columns moved, a table loaded
		// empty), anywhere, and what the batch runs before it logged.
		out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": analysis.InputQuery(), "since_minutes": inputLookback})...)
		out = append(out, s.jobRunLogs(ctx, st)...)
	}
	out = append(out, s.namespaceConfigs(ctx, st, res)...)
	return append(out, s.failedPodLogs(ctx, st)...)
}

// namespaceConfigs: the ConfigMaps of the suspect's namespace (the
// leading entity's, else the alert's), unless a call listed them: the
// settings a workload or a datastore runs with (a memory policy, a cache
// lifetime, a retention) are read before a fault is concluded, mounted
// or not; the report quotes the lines its failure's words name.
func (s *Service) namespaceConfigs(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	ns := ""
	if len(res.Hypotheses) > 0 {
		if parts := strings.Split(res.Hypotheses[0].GetEntity(), "/"); len(parts) == 3 {
			ns = parts[1]
		}
	}
	if ns == "" {
		if parts := strings.Split(res.SuspectEntity(), "/"); len(parts) == 3 {
			ns = parts[1]
		}
	}
	if ns == "" {
		ns = st.rec.GetAlert().GetNamespace()
	}
	if ns == "" || ns == "all" {
		return nil
	}
	c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": "*", "namespace": ns}, Origin: originExpand}
	if !serves(s.toolDefs(ctx, st.rec.GetSessionId()), c.Intent) || st.ranEquivalent(c) {
		return nil
	}
	return []pendingCall{c}
}

// healthyLookback is how far back (minutes) a healthy reading reads every
// system's lines before it calls the alert noise.
const healthyLookback = 180

// maxJobRunLogs bounds the batch runs whose logs one round reads.
const maxJobRunLogs = 3

// jobRunLogs: the logs of the batch runs (Jobs) that started within
// inputLookback before the alert fired, newest first, whose pods no call
// read: a feed import or a nightly batch says what it loaded (a count
// beside yesterday's, a field it dropped) in its own log, which no search
// of shared logs finds. With no Job listing yet, the listing first.
func (s *Service) jobRunLogs(ctx context.Context, st *invState) []pendingCall {
	listed := false
	var jobs []facts.Resource
	for _, c := range st.rec.GetToolCalls() {
		if c.GetIntent() != intentJobs || c.GetError() != "" || c.GetPinId() == "" {
			continue
		}
		listed = true
		var rs []facts.Resource
		if ok, err := facts.Decode(st.pin(c.GetPinId()).GetMetadata(), facts.KeyResources, &rs); ok && err == nil {
			for _, r := range rs {
				if r.Kind == "Job" && r.CreatedAt != nil {
					jobs = append(jobs, r)
				}
			}
		}
	}
	if !listed {
		return s.fresh(ctx, st, intentJobs, map[string]any{"namespace": "all"})
	}
	at := st.toolsNow() // the tools' "now", not this process's clock
	if at.IsZero() {
		at = s.now()
	}
	if ts := st.rec.GetAlert().GetStartsAt(); ts != nil && !ts.AsTime().IsZero() {
		at = ts.AsTime()
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].CreatedAt.After(*jobs[j].CreatedAt) })
	var out []pendingCall
	for _, j := range jobs {
		if len(out) >= maxJobRunLogs {
			break
		}
		if j.CreatedAt.After(at) || at.Sub(*j.CreatedAt) > inputLookback*time.Minute || st.readLogsOf(j.Namespace, j.Name) {
			continue
		}
		out = append(out, s.fresh(ctx, st, intentPodLogs, map[string]any{"namespace": j.Namespace, "pod": j.Name + "-*"})...)
	}
	return out
}

// inputLookback: how far back the loads of data are read (minutes): a
// nightly load before a morning's failures.
const inputLookback = 24 * 60

// recordSearch: the records written around the alert whatever they name
// (a change record, an approved test, a platform upgrade, an audit record
// of a write), over the notice look-back, and the standing records about
// what it watches (a known issue filed against it, a rule found to flap),
// over the standing look-back; unless they ran.
func (s *Service) recordSearch(ctx context.Context, st *invState) []pendingCall {
	out := s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": analysis.RecordQuery(st.rec.GetAlert()), "since_minutes": contextLookback})
	if q := analysis.StandingQuery(st.rec.GetAlert()); q != "" {
		out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": q, "since_minutes": analysis.StandingLookBackMinutes, "exact": true})...)
	}
	// The notices that name the alert's day (a deadline, a booked test),
	// however far ahead they were sent: the day it fired, else the end of
	// its incident window (the tools' "now").
	a := st.rec.GetAlert()
	var at time.Time
	switch {
	case a.GetStartsAt() != nil && !a.GetStartsAt().AsTime().IsZero():
		at = a.GetStartsAt().AsTime()
	case a.GetIncidentWindow().GetEnd() != nil:
		at = a.GetIncidentWindow().GetEnd().AsTime()
	case st.rc.GetTimeWindow().GetEnd() != nil:
		at = st.rc.GetTimeWindow().GetEnd().AsTime()
	default:
		at = st.toolsNow()
	}
	if !at.IsZero() {
		out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": analysis.DayQuery(at), "end": at.UTC().Format(time.RFC3339), "since_minutes": analysis.DayNoticeLookBackMinutes, "exact": true})...)
	}
	return out
}

// toolsNow is the latest end of the windows the pins were read over: the
// "now" the tools read, when the alert carries no time of its own (zero
// before any pin).
func (st *invState) toolsNow() time.Time {
	var at time.Time
	for _, p := range st.pins {
		if e := p.GetTimeWindow().GetEnd(); e != nil && e.AsTime().After(at) {
			at = e.AsTime()
		}
	}
	return at
}

// hostLogs: what the hosts of the nodes that matter logged about
// themselves (kernel, kubelet, hardware monitors): lines that name the
// node, in any namespace, over the incident window. A host logs its short
// name as often as its full one; the short name matches both.
func (s *Service) hostLogs(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	var out []pendingCall
	for _, n := range res.HostNodes() {
		short := analysis.HostName(n)
		out = append(out, s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": `"` + strings.ReplaceAll(short, `"`, "") + `"`})...)
	}
	return out
}

// releaseCommits: a deploy before the alert whose commits no pin read;
// what it shipped (code, or settings only) is in every service's commits.
func (s *Service) releaseCommits(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	if !res.ReleasesUnread() {
		return nil
	}
	return s.fresh(ctx, st, intentCommits, map[string]any{"service": "*"})
}

// trailSearches: the objects the failing entity's errors name by an
// identifier (a key's UUID, an ARN's resource): what other systems logged
// about each (an audit record, a sweep) anywhere over contextLookback.
func (s *Service) trailSearches(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	return s.searchesAnywhere(ctx, st, res.TrailObjects())
}

// recordTrails: the records around the alert that name its target, each
// followed by its id over contextLookback (its close, its outcome).
func (s *Service) recordTrails(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	return s.searchesAnywhere(ctx, st, res.RecordIDs())
}

// searchesAnywhere: one log search per name, in any namespace, over
// contextLookback; unless one ran.
func (s *Service) searchesAnywhere(ctx context.Context, st *invState, names []string) []pendingCall {
	var out []pendingCall
	for _, n := range names {
		out = append(out, s.fresh(ctx, st, intentSearchLogs, searchAnywhere(n, contextLookback))...)
	}
	return out
}

// untargeted reports whether the alert names no workload, pod or object
// of the cluster (a synthetic check of a URL, a product's monitor): its
// target was not resolved to anything whose logs a call reads.
func untargeted(a *investigationv1.Alert) bool {
	return a.GetService() == "" && a.GetPod() == "" && a.GetResourceName() == ""
}

// peerSearches: one search per peer the target's own lines name
// (Result.Peers), anywhere over contextLookback; unless one ran.
func (s *Service) peerSearches(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	var out []pendingCall
	for _, p := range res.Peers() {
		out = append(out, s.fresh(ctx, st, intentSearchLogs, searchAnywhere(p, contextLookback))...)
	}
	return out
}

// maxUntargetedLogs bounds the workloads whose logs an untargeted
// healthy reading reads.
const maxUntargetedLogs = 4

// untargetedLogs: the logs of the workloads a cluster-wide listing found
// (one call per workload, system namespaces last), when the alert
// resolved to no target and no call read them yet.
func (s *Service) untargetedLogs(ctx context.Context, st *invState) []pendingCall {
	type wl struct{ ns, name, pod string }
	var apps, system []wl
	seen := map[string]bool{}
	for _, p := range st.pods() {
		name, pod := p.Workload, p.Workload+"-*"
		if name == "" {
			name, pod = p.Name, p.Name // a bare pod: itself
		}
		key := p.Namespace + "/" + name
		if seen[key] || st.readLogsOf(p.Namespace, name) {
			continue
		}
		seen[key] = true
		if strings.HasPrefix(p.Namespace, "kube-") || strings.EqualFold(p.OwnerKind, "DaemonSet") {
			system = append(system, wl{p.Namespace, name, pod})
		} else {
			apps = append(apps, wl{p.Namespace, name, pod})
		}
	}
	var out []pendingCall
	for _, w := range append(apps, system...) {
		if len(out) >= maxUntargetedLogs {
			break
		}
		out = append(out, s.fresh(ctx, st, intentPodLogs, map[string]any{"namespace": w.ns, "pod": w.pod})...)
	}
	return out
}

// maxFailedPodLogs bounds the failed pods whose logs one round reads.
const maxFailedPodLogs = 2

// failedPodLogs: the pods a listing shows Failed (a migration Job's run, a
// hook) whose logs no call read yet: how they ended is the first thing an
// SRE reads about them, whatever the leading hypothesis is.
func (s *Service) failedPodLogs(ctx context.Context, st *invState) []pendingCall {
	var out []pendingCall
	seen := map[string]bool{}
	for _, p := range st.pods() {
		if !strings.EqualFold(p.Phase, "Failed") || seen[p.Namespace+"/"+p.Name] || len(out) >= maxFailedPodLogs || st.readLogsOf(p.Namespace, p.Name) {
			continue
		}
		seen[p.Namespace+"/"+p.Name] = true
		out = append(out, s.fresh(ctx, st, intentPodLogs, map[string]any{"namespace": p.Namespace, "pod": p.Name})...)
	}
	return out
}

// contextLookback is how far back a healthy reading's context search
// reads (the analysis quotes records from as far back).
const contextLookback = 8 * 24 * 60 // minutes: a notice of planned work is sent days ahead (analysis.noticeLookBack)

// contextSearches are the searches for the lines that name the entity's
// workload, and the alert itself (a monitor's record that it cleared, a
// ticket about it), anywhere over contextLookback, each unless one ran.
func (s *Service) contextSearches(ctx context.Context, st *invState, ent string) []pendingCall {
	parts := strings.Split(ent, "/")
	name := parts[len(parts)-1]
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "service", "cronjob", "job", "node", "ingress":
	default:
		name = st.rec.GetAlert().GetService()
	}
	var out []pendingCall
	ns := ""
	if len(parts) == 3 && analysis.DistinctiveNamespace(strings.ToLower(parts[1])) {
		ns = parts[1] // what a janitor or CI logged about the target's own namespace
	}
	for _, n := range []string{name, variantBase(name), alertNameOf(st.rec.GetAlert()), ns} {
		if len(n) < 4 || len(out) > 0 && strings.EqualFold(n, name) {
			continue
		}
		out = append(out, s.fresh(ctx, st, intentSearchLogs, searchAnywhere(n, contextLookback))...)
	}
	return out
}

// nameWordSearch searches every namespace for the distinctive words of the
// workload's name (textutil.NameWords), any of them, over the context
// look-back: a certificate controller, an edge provider or a scheduler
// names what it did to a service's objects by the words of its name, not
// the name whole. Nothing when the name is one word (the name search
// covers it).
func (s *Service) nameWordSearch(ctx context.Context, st *invState, ent string) []pendingCall {
	parts := strings.Split(ent, "/")
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "service", "cronjob", "job":
	default:
		return nil
	}
	words := textutil.NameWords(parts[len(parts)-1])
	if len(words) < 2 {
		return nil
	}
	var qs []string
	for _, w := range words {
		qs = append(qs, `"`+w+`"`)
	}
	return s.fresh(ctx, st, intentSearchLogs, map[string]any{"namespace": "all", "query": strings.Join(qs, " OR "), "since_minutes": contextLookback})
}

// reVariantSuffix: the last word of a workload name that marks one variant
// of an application (a blue-green colour, a canary, a version).
var reVariantSuffix = regexp.MustCompile(`^(.+-.+)-(blue|green|canary|stable|primary|secondary|shadow|preview|v\d+)$`)

// variantBase is the application a variant's workload name belongs to
// (ice-schedule of ice-schedule-blue): records of a release or a cutover
// name the application and its variants in words of their own. "" when
// the name marks no variant.
func variantBase(name string) string {
	if m := reVariantSuffix.FindStringSubmatch(strings.ToLower(name)); m != nil {
		return m[1]
	}
	return ""
}

// clusterEvents is a healthy reading's call for what the cluster did
// around the alert (a node drained, consolidated or preempted, a rescale),
// reported as events outside the target's namespace; unless one ran.
func (s *Service) clusterEvents(ctx context.Context, st *invState) []pendingCall {
	return s.fresh(ctx, st, intentEvents, map[string]any{"namespace": "all"})
}

// signatureLookback is how far back an error's history is searched (a
// ticket that accepted it, its earlier occurrences).
const signatureLookback = 30 * 24 * 60 // minutes

// signatureSearch is the search for an error signature (an exception's
// class name) anywhere over signatureLookback, unless one ran.
func (s *Service) signatureSearch(ctx context.Context, st *invState, sig string) []pendingCall {
	if len(sig) < 8 {
		return nil
	}
	return s.fresh(ctx, st, intentSearchLogs, searchAnywhere(sig, signatureLookback))
}

// traceSearch is the search for the failing lines' rarest words over the
// context look-back up to the first failing line (analysis.TraceSearch):
// the record that changed what fails (a vendor's notice, a topic's
// retention altered, a partner onboarded) names it by the same words,
// often days before and from another system. Unless one ran.
func (s *Service) traceSearch(ctx context.Context, st *invState, res analysis.Result) []pendingCall {
	q, end := res.TraceSearch()
	if q == "" {
		return nil
	}
	p := map[string]any{"namespace": "all", "query": q, "since_minutes": contextLookback}
	if !end.IsZero() {
		p["end"] = end.UTC().Format(time.RFC3339)
	}
	return s.fresh(ctx, st, intentSearchLogs, p)
}

// searchAnywhere are the params of a phrase search in every namespace over
// the last sinceMinutes.
func searchAnywhere(phrase string, sinceMinutes int) map[string]any {
	return map[string]any{"namespace": "all", "query": `"` + strings.ReplaceAll(phrase, `"`, "") + `"`, "since_minutes": sinceMinutes}
}

// serves: a tool serves intent and its integration is not known to be
// down or unconfigured. A follow-up to an integration that is not there
// fails for certain and takes the place of one that could have answered.
func serves(defs map[string]*evidencev1.ToolDefinition, in string) bool {
	d, ok := defs[in]
	return ok && (d.GetAvailable() || d.GetUnavailableReason() == "")
}

// fresh is the follow-up call of intent with params, when a tool serves
// the intent and no equivalent call ran.
func (s *Service) fresh(ctx context.Context, st *invState, in string, params map[string]any) []pendingCall {
	c := pendingCall{Intent: in, Params: params, Origin: originExpand}
	if !serves(s.toolDefs(ctx, st.rec.GetSessionId()), in) || st.ranEquivalent(c) {
		return nil
	}
	return []pendingCall{c}
}

// alertNameOf is the alert's name when it is an identifier a monitor
// would log (CheckoutErrorRate, orders-5xx-alarm), not a sentence.
func alertNameOf(a *investigationv1.Alert) string {
	n := strings.TrimSpace(a.GetAlertName())
	if len(n) < 6 || strings.ContainsAny(n, " \t\n\"") {
		return ""
	}
	return n
}

// entityFollowUps are what the leading entity's kind calls for: a volume's
// or a pod's clients' lines that name it, a job's own output, a managed
// object's managers, a workload's mounted ConfigMaps (a suspect's settings
// such as limits, policies and pool sizes often are the explanation).
func (s *Service) entityFollowUps(ctx context.Context, st *invState, ent string) []pendingCall {
	defs := s.toolDefs(ctx, st.rec.GetSessionId())
	parts := strings.Split(ent, "/")
	if len(parts) < 2 {
		return nil
	}
	var out []pendingCall
	if (parts[0] == "persistentvolumeclaim" || parts[0] == "pod") && len(parts) == 3 {
		// How the rest of the namespace experiences the suspect: its
		// clients' log lines that name it (by its pod, the PVC's owner).
		target := parts[2]
		if parts[0] == "persistentvolumeclaim" {
			if i := strings.Index(target, "-"); i > 0 {
				target = target[i+1:] // data-<pod> → <pod>
			}
		}
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"namespace": parts[1], "query": `"` + target + `"`}, Origin: originExpand}
		if serves(defs, intentSearchLogs) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		if parts[0] == "persistentvolumeclaim" {
			return out
		}
		// The suspect pod's own log, when no call read it: what it said
		// (and, when it restarted, what it said last before it exited).
		c = pendingCall{Intent: intentPodLogs, Params: map[string]any{"namespace": parts[1], "pod": parts[2]}, Origin: originExpand}
		if serves(defs, intentPodLogs) && !st.ranEquivalent(c) && !st.readLogsOf(parts[1], parts[2]) {
			out = append(out, c)
		}
	}
	if parts[0] == "node" && len(parts) == 2 {
		// What was logged about the node anywhere: its kubelet and
		// container runtime, the cloud's operations on the instance.
		c := pendingCall{Intent: intentSearchLogs, Params: map[string]any{"namespace": "all", "query": `"` + parts[1] + `"`}, Origin: originExpand}
		if serves(defs, intentSearchLogs) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	if len(parts) == 3 && parts[0] == "job" {
		// A batch run is judged by its own output: how it ended.
		c := pendingCall{Intent: intentPodLogs, Params: map[string]any{"namespace": parts[1], "pod": parts[2] + "-*"}, Origin: originExpand}
		if serves(defs, intentPodLogs) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	if len(parts) == 3 && managedObjectKind(parts[0]) {
		// A Secret, ConfigMap or certificate is rarely wrong on its own:
		// whatever owns or manages it (an ExternalSecret, a Certificate,
		// an operator's custom resource) holds the settings that made it
		// so. Describing it brings its managers along.
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": parts[0], "name": parts[2], "namespace": parts[1]}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			out = append(out, c)
		}
		return out
	}
	switch parts[0] {
	case "deployment", "statefulset", "daemonset", "pod", "service":
	default:
		return out
	}
	name := parts[len(parts)-1]
	if len(parts) == 3 && parts[0] != "service" && parts[0] != "pod" {
		// The suspect workload's own logs, when no call read them yet: what
		// its containers said (and, when they restarted, what they said
		// last) is the first thing an SRE reads about it.
		c := pendingCall{Intent: intentPodLogs, Params: map[string]any{"namespace": parts[1], "pod": name + "-*"}, Origin: originExpand}
		if serves(defs, intentPodLogs) && !st.ranEquivalent(c) && !st.readLogsOf(parts[1], name) {
			out = append(out, c)
		}
	}
	if len(parts) == 3 && parts[0] == "deployment" {
		// The suspect's own object and what names it (a mesh route that
		// sends it traffic, or only mirrors it), unless a call described it.
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "deployment", "name": name, "namespace": parts[1]}, Origin: originExpand}
		if !st.ranEquivalent(c) {
			out = append(out, c)
		}
	}
	if len(parts) == 3 && parts[0] != "pod" {
		// What changed for the suspect: its releases and its commits,
		// when no call read them yet.
		for _, in := range []string{intentDeploys, intentCommits} {
			c := pendingCall{Intent: in, Params: map[string]any{"namespace": parts[1], "service": name}, Origin: originExpand}
			if serves(defs, in) && !st.ranEquivalent(c) && !st.ranFor(in, name) {
				out = append(out, c)
			}
		}
	}
	seen := map[string]bool{}
	configs := 0
	for _, p := range st.pods() {
		if p.Name != name && p.Workload != name && !strings.HasPrefix(p.Name, name+"-") {
			continue
		}
		for _, c := range p.Containers {
			for _, cm := range c.ConfigMaps {
				key := p.Namespace + "/" + cm
				if seen[key] || configs >= maxConfigFollowUps {
					continue
				}
				seen[key] = true
				call := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": "configmap", "name": cm, "namespace": p.Namespace}, Origin: originExpand}
				if !st.ranEquivalent(call) {
					out = append(out, call)
					configs++
				}
			}
		}
	}
	return out
}

const (
	intentEvents     = string(intent.GetEvents)
	intentDescribe   = string(intent.DescribeResource)
	intentDeploys    = string(intent.GetDeployHistory)
	intentCommits    = string(intent.GetCommits)
	intentCommitDiff = string(intent.GetCommitDiff)
)

// managedObjectKind: kinds of objects that hold configuration or
// credentials and are usually produced by something else (a controller's
// custom resource, an owner).
func managedObjectKind(kind string) bool {
	k := strings.ToLower(kind)
	switch k {
	case "secret", "configmap", "certificate", "certificaterequest":
		return true
	}
	return strings.Contains(k, "secret") || strings.Contains(k, "certificate")
}

const (
	intentStatusPage = string(intent.GetStatusPage)
	intentSearchLogs = string(intent.SearchLogs)
	intentPodLogs    = string(intent.FetchPodLogs)
	intentJobs       = string(intent.ListJobs)
)

// readLogsOf: a pod-log call already read the workload's pods (its name,
// a pattern of it, or one of its pods), in its namespace or without one.
func (st *invState) readLogsOf(ns, workload string) bool {
	for _, r := range st.rec.GetToolCalls() {
		if r.GetIntent() != intentPodLogs || r.GetError() != "" {
			continue
		}
		p := structMap(r.GetParams())
		if n := fmt.Sprint(p["namespace"]); p["namespace"] != nil && n != ns {
			continue
		}
		pod := strings.TrimSuffix(fmt.Sprint(p["pod"]), "*")
		if pod == workload || strings.HasPrefix(pod, workload+"-") {
			return true
		}
	}
	return false
}

// ranFor: a call of intent ran (without error) for service name, or for
// every service (no service parameter: its answer covers name too).
func (st *invState) ranFor(in, name string) bool {
	for _, r := range st.rec.GetToolCalls() {
		if r.GetIntent() != in || r.GetError() != "" {
			continue
		}
		p := structMap(r.GetParams())
		svc, _ := p["service"].(string)
		if svc == "" || svc == name {
			return true
		}
	}
	return false
}

// culpritReads: before the report blames an object, what it quotes of
// the object is read, each unless a call did: the object described (its
// spec, annotations and conditions), a scheduled Job's CronJob with it,
// the logs of the systems whose lines name an object that writes none
// (around those lines), and the diffs of the commits the reading blames
// (the history gives their summaries; the changed lines are fetched on
// demand, seed 003).
func (s *Service) culpritReads(ctx context.Context, st *invState, defs map[string]*evidencev1.ToolDefinition, res analysis.Result) []pendingCall {
	var out []pendingCall
	describe := func(kind, name, ns string) {
		c := pendingCall{Intent: intentDescribe, Params: map[string]any{"kind": kind, "name": name, "namespace": ns}, Origin: originExpand}
		if serves(defs, intentDescribe) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
	}
	if parts := strings.Split(res.Culprit(), "/"); len(parts) == 3 && parts[1] != "" && parts[2] != "" {
		if describableCulprit(parts[0]) {
			describe(parts[0], parts[2], parts[1])
		}
		if m := reScheduledRun.FindStringSubmatch(parts[2]); m != nil && strings.EqualFold(parts[0], "job") {
			// A scheduled run: the CronJob that made it holds its
			// schedule, time zone, deadlines and retries.
			describe("cronjob", m[1], parts[1])
		}
	}
	for _, w := range res.CulpritWriters() {
		// What the systems that name it logged around that line.
		p := map[string]any{"namespace": firstNonEmpty(w.Namespace, "all"), "query": "*"}
		if w.Service != "" {
			p["service"] = w.Service
		} else {
			p["pod"] = w.Pod
		}
		if w.SinceMinutes > 0 {
			p["since_minutes"] = w.SinceMinutes
		}
		c := pendingCall{Intent: intentSearchLogs, Params: p, Origin: originExpand}
		if serves(defs, intentSearchLogs) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
	}
	for _, sha := range res.CulpritCommits() {
		c := pendingCall{Intent: intentCommitDiff, Params: map[string]any{"sha": sha}, Origin: originExpand}
		if serves(defs, intentCommitDiff) && !st.ranEquivalent(c) {
			out = append(out, c)
		}
	}
	return out
}

// reScheduledRun: a Job a CronJob created, named <cronjob>-<minutes since
// the epoch>.
var reScheduledRun = regexp.MustCompile(`^(.+)-\d{8,}$`)

// describableCulprit: a kind whose object describe_resource reads (not a
// pod, whose status the pod listing carries, nor what is not a Kubernetes
// object: a commit, a database, a host, a queue).
func describableCulprit(kind string) bool {
	switch strings.ToLower(kind) {
	case "", "pod", "commit", "db", "database", "host", "queue", "environment", "node", "sidecar", "image", "topic", "table", "external", "api", "url", "dns":
		return false
	}
	return true
}

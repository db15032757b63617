package critic

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/intent"
	"github.com/rcamesh/rcamesh/internal/metrics"
)

// Objection check names (CriticReview.objections[].check).
const (
	CheckAccusedMetricsNormal   = "accused_metrics_normal"
	CheckRegressionBeforeDeploy = "regression_before_deploy"
	CheckDependencyBetter       = "dependency_better"
	CheckEvidenceNotConcrete    = "evidence_not_concrete"
	CheckContradictingPins      = "contradicting_pins"
	CheckIndependentSources     = "independent_sources"
	CheckAlternativeUnresolved  = "alternative_unresolved"
	CheckNoHypothesis           = "no_hypothesis"
)

// Weights of the checks in the review score; hard checks cap the score below
// the threshold when they fail definitely.
var checkWeights = map[string]float64{
	CheckAccusedMetricsNormal:   0.25,
	CheckRegressionBeforeDeploy: 0.20,
	CheckDependencyBetter:       0.20,
	CheckEvidenceNotConcrete:    0.15,
	CheckContradictingPins:      0.10,
	CheckIndependentSources:     0.05,
	CheckAlternativeUnresolved:  0.05,
}

var hardChecks = map[string]bool{
	CheckAccusedMetricsNormal:   true,
	CheckRegressionBeforeDeploy: true,
	CheckDependencyBetter:       true,
	CheckContradictingPins:      true,
}

// pinView is a pin with its profile and effective validation status (a pin
// still pending the critic gets the status the critic would give it alone).
type pinView struct {
	pin       *evidencev1.EvidencePin
	prof      *profile
	validated bool
}

func makeViews(pins []*evidencev1.EvidencePin) ([]*pinView, map[string]*pinView) {
	views := make([]*pinView, 0, len(pins))
	byID := map[string]*pinView{}
	for _, p := range pins {
		if p == nil {
			continue
		}
		v := &pinView{pin: p, prof: newProfile(p)}
		switch p.GetValidationStatus() {
		case statusValidated:
			v.validated = true
		case statusRejected:
		default:
			v.validated = p.GetSuccess() && p.GetError() == "" &&
				(p.GetNoData() || p.GetClaim() != "" || len(p.GetSupportingEvidence()) > 0 || p.GetRawOutput() != "" || bus.HasMetadata(p))
		}
		views = append(views, v)
		if p.GetId() != "" {
			byID[p.GetId()] = v
		}
	}
	return views, byID
}

// accusedNames reads the culprit names of a hypothesis: "kind/name" or
// "kind/namespace/name" -> name, plus the alert's service when none.
func accusedNames(h *investigationv1.Hypothesis, alert *investigationv1.Alert) []string {
	var out []string
	add := func(n string) {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			return
		}
		for _, x := range out {
			if x == n {
				return
			}
		}
		out = append(out, n)
	}
	if e := h.GetEntity(); e != "" {
		parts := strings.Split(e, "/")
		name := parts[len(parts)-1]
		add(name)
		add(facts.TrimReplicaSuffix(name))
	}
	if len(out) == 0 {
		add(alert.GetService())
		add(alert.GetResourceName())
	}
	return out
}

func matchesAny(accused []string, names map[string]bool) bool {
	for _, a := range accused {
		if matchesName(a, names) {
			return true
		}
	}
	return false
}

func nameSet(list ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range list {
		if n = strings.ToLower(n); n != "" {
			m[n] = true
		}
	}
	return m
}

// changeWords name a change as the cause ("deployment" alone is a Kubernetes kind, not a change).
var changeWords = regexp.MustCompile(`(?i)\b(deploy|deployed|deploys|redeploy(ed)?|commit|commits|release|released|rolled out|new version|upgrade|upgraded|pushed)\b`)

func blamesChange(h *investigationv1.Hypothesis, cited []*pinView) bool {
	if h.GetCategory() == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT {
		return true
	}
	text := h.GetStatement() + " " + strings.Join(h.GetSignals(), " ") + " " + strings.Join(h.GetCausalChain(), " ")
	if changeWords.MatchString(text) {
		return true
	}
	for _, v := range cited {
		if len(v.prof.deploys) > 0 || len(v.prof.commits) > 0 {
			return true
		}
	}
	return false
}

// suggestions are the tools that best settle doubts about a category.
func suggestions(cat investigationv1.RootCauseCategory) []string {
	switch cat {
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION:
		return intentNames(intent.CheckPodStatus, intent.QueryPrometheus, intent.GetEvents)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CONFIGURATION_ERROR:
		return intentNames(intent.DescribeResource, intent.GetEvents, intent.FetchPodLogs, intent.GetDeployHistory)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT:
		return intentNames(intent.GetDeployHistory, intent.GetCommits, intent.FetchPodLogs, intent.QueryPrometheus)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE:
		return intentNames(intent.SearchLogs, intent.QueryPrometheus, intent.ReinvestigateService)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_INFRASTRUCTURE:
		return intentNames(intent.GetNodeHealth, intent.GetEvents, intent.QueryDBMetrics)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DATA_QUALITY:
		return intentNames(intent.SearchLogs, intent.FetchPodLogs)
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY:
		return intentNames(intent.CheckPodStatus, intent.QueryPrometheus)
	}
	return intentNames(intent.FetchPodLogs, intent.QueryPrometheus, intent.GetEvents)
}

type checkResult struct {
	obj      *investigationv1.Objection
	credit   float64 // 1 passed, 0.5 unverified, 0 failed
	definite bool    // failed on evidence, not for lack of it
	na       bool    // not applicable: excluded from the score
	alt      func(h *investigationv1.Hypothesis) bool
}

func passed(check, detail string, pins ...string) checkResult {
	return checkResult{obj: &investigationv1.Objection{Check: check, Passed: true, Detail: detail, PinIds: pins}, credit: 1}
}

func notApplicable(check, detail string) checkResult {
	r := passed(check, "not applicable: "+detail)
	r.na = true
	return r
}

func unverified(check, detail string, intents []string, pins ...string) checkResult {
	return checkResult{obj: &investigationv1.Objection{Check: check, Detail: "unverified: " + detail, PinIds: pins, RequestedIntents: intents}, credit: 0.5}
}

func failed(check, detail string, intents []string, pins ...string) checkResult {
	return checkResult{obj: &investigationv1.Objection{Check: check, Detail: detail, PinIds: pins, RequestedIntents: intents}, definite: true}
}

// ReviewHypotheses tries to disprove the leading hypothesis (the Loop of Truth).
func (s *Service) ReviewHypotheses(ctx context.Context, req *criticv1.ReviewHypothesesRequest) (*criticv1.ReviewHypothesesResponse, error) {
	pins := req.GetPins()
	if len(pins) == 0 && req.GetSessionId() != "" {
		var err error
		if pins, err = s.sessionPins(ctx, req.GetSessionId()); err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
	}
	resp := s.review(req.GetHypotheses(), req.GetAlert(), req.GetRound(), pins, s.availability(ctx, req.GetSessionId()), req.GetNextCalls())
	r := resp.GetReview()
	metrics.CriticVerdicts.WithLabelValues(metrics.EnumLabel(r.GetAction().String(), "CRITIC_ACTION_")).Inc()
	metrics.CriticRounds.Observe(float64(r.GetRound()))
	metrics.CriticScore.Observe(r.GetScore())
	return resp, nil
}

// review runs the checks. avail says which tools can run (nil: unknown,
// all); next is the caller's account of the calls it can still make (nil:
// none given).
func (s *Service) review(set *investigationv1.HypothesisSet, alert *investigationv1.Alert, round int32, pins []*evidencev1.EvidencePin, avail map[string]bool, next *criticv1.NextCalls) *criticv1.ReviewHypothesesResponse {
	if round < 1 {
		round = 1
	}
	if set.GetRound() > round {
		round = set.GetRound()
	}
	views, byID := makeViews(pins)
	hyps := set.GetHypotheses()
	review := &investigationv1.CriticReview{Round: round, Threshold: s.cfg.Threshold}
	resp := &criticv1.ReviewHypothesesResponse{Review: review, Limits: s.cfg.Limits()}

	if len(hyps) == 0 {
		review.Objections = []*investigationv1.Objection{{
			Check: CheckNoHypothesis, Detail: "no hypothesis to review",
			RequestedIntents: suggestions(investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED),
		}}
		review.Objections[0].RequestedIntents = keepAvailable(review.Objections[0].RequestedIntents, avail)
		s.decide(resp, 0, nil, false, round, "no hypothesis was proposed", avail, executedTools(views), next)
		return resp
	}
	lead := hyps[0]
	review.LeadingHypothesisId = lead.GetId()
	accused := expandAccused(accusedNames(lead, alert), views)
	var cited []*pinView
	for _, id := range lead.GetPinIds() {
		if v := byID[id]; v != nil {
			cited = append(cited, v)
		}
	}

	results := []checkResult{
		s.checkAccusedMetrics(lead, accused, views),
		s.checkBeforeDeploy(lead, alert, accused, views, cited),
		s.checkDependency(lead, accused, views),
		s.checkConcrete(lead, cited),
		s.checkContradictions(lead, accused, cited, byID),
		s.checkSources(lead, accused, views, cited),
		s.checkAlternatives(lead, hyps),
	}
	// A doubt no available tool can settle does not hold the loop: it is
	// reported as unverifiable and left out of the score.
	for i, r := range results {
		if avail == nil || r.obj.GetPassed() {
			continue
		}
		kept := keepAvailable(r.obj.GetRequestedIntents(), avail)
		if r.credit == 0.5 && len(kept) == 0 && len(r.obj.GetRequestedIntents()) > 0 {
			results[i].obj.Passed = true
			results[i].obj.Detail = fmt.Sprintf("unverifiable here (none of %s is available): %s", strings.Join(r.obj.GetRequestedIntents(), ", "), strings.TrimPrefix(r.obj.GetDetail(), "unverified: "))
			results[i].na = true
		}
		results[i].obj.RequestedIntents = kept
	}
	var sum, weights float64
	hardFail := false
	var alt func(*investigationv1.Hypothesis) bool
	for _, r := range results {
		review.Objections = append(review.Objections, r.obj)
		if r.na {
			continue
		}
		w := checkWeights[r.obj.GetCheck()]
		sum += w * r.credit
		weights += w
		if !r.obj.GetPassed() && r.definite && hardChecks[r.obj.GetCheck()] {
			hardFail = true
			if alt == nil && r.alt != nil {
				alt = r.alt
			}
		}
	}
	checkScore := 1.0
	if weights > 0 {
		checkScore = sum / weights
	}
	conf := math.Max(0, math.Min(1, lead.GetConfidence()))
	score := 0.8*checkScore + 0.2*conf
	if hardFail {
		score = math.Min(score, s.cfg.Threshold*0.75)
	}
	score = math.Round(score*1000) / 1000

	// Re-rank when a definite objection points at another hypothesis.
	if hardFail && len(hyps) > 1 {
		if alt == nil {
			alt = func(h *investigationv1.Hypothesis) bool { return h.GetEntity() != lead.GetEntity() }
		}
		for i, h := range hyps[1:] {
			if !alt(h) {
				continue
			}
			demoted := proto.Clone(lead).(*investigationv1.Hypothesis)
			demoted.Confidence = math.Round(lead.GetConfidence()*0.7*1000) / 1000
			ranked := []*investigationv1.Hypothesis{h, demoted}
			for j, x := range hyps[1:] {
				if j != i {
					ranked = append(ranked, x)
				}
			}
			resp.Reranked = &investigationv1.HypothesisSet{Hypotheses: ranked, Round: round}
			review.LeadingHypothesisId = h.GetId()
			break
		}
	}
	s.decide(resp, score, lead, hardFail, round, "", avail, executedTools(views), next)
	return resp
}

// decide sets the action, summary and trips from the score.
func (s *Service) decide(resp *criticv1.ReviewHypothesesResponse, score float64, lead *investigationv1.Hypothesis, hardFail bool, round int32, note string, avail, executed map[string]bool, next *criticv1.NextCalls) {
	review := resp.Review
	review.Score = score
	var failedChecks, intents []string
	var conflictPins []string
	for _, o := range review.GetObjections() {
		if o.GetPassed() {
			continue
		}
		failedChecks = append(failedChecks, o.GetCheck()+": "+o.GetDetail())
		for _, i := range o.GetRequestedIntents() {
			intents = appendUnique(intents, i)
		}
		for _, p := range o.GetPinIds() {
			conflictPins = appendUnique(conflictPins, p)
		}
	}
	subject := "no hypothesis"
	if lead != nil {
		subject = fmt.Sprintf("hypothesis %s (%q)", lead.GetId(), capText(lead.GetStatement(), 160))
	}
	if note != "" {
		subject += ": " + note
	}
	now := s.now()
	switch {
	case score >= s.cfg.Threshold && !hardFail && lead != nil:
		review.Action = investigationv1.CriticAction_CRITIC_ACTION_ACCEPT
		review.Summary = fmt.Sprintf("ACCEPT %s: survived the critic with score %.2f >= %.2f in round %d", subject, score, s.cfg.Threshold, round)
		if len(failedChecks) > 0 {
			review.Summary += "; open doubts: " + strings.Join(failedChecks, " | ")
		}
		return
	case round < int32(s.cfg.MaxRounds):
		review.Action = investigationv1.CriticAction_CRITIC_ACTION_GATHER_MORE
		// Asking again for tools that already ran only replays them: widen
		// the search to available tools of the discovery order that have
		// not run yet.
		fresh := false
		for _, i := range intents {
			fresh = fresh || !executed[i]
		}
		if !fresh {
			var widen []string
			for _, i := range discoveryOrder {
				if len(widen) == 3 {
					break
				}
				if !executed[i] && (avail == nil || avail[i]) {
					widen = append(widen, i)
				}
			}
			for _, o := range review.GetObjections() {
				if !o.GetPassed() {
					for _, i := range widen {
						o.RequestedIntents = appendUnique(o.RequestedIntents, i)
					}
					break
				}
			}
			for _, i := range widen {
				intents = appendUnique(intents, i)
			}
		}
		if avail == nil || avail[intentReinvestigate] {
			for _, o := range review.GetObjections() {
				if !o.GetPassed() && len(o.GetRequestedIntents()) == 0 {
					o.RequestedIntents = []string{intentReinvestigate}
					intents = appendUnique(intents, intentReinvestigate)
				}
			}
		}
		review.WidenScope = widenScope(review.GetObjections(), next)
		review.Summary = fmt.Sprintf("GATHER_MORE for %s: score %.2f < %.2f in round %d of %d; objections: %s; requested: %s",
			subject, score, s.cfg.Threshold, round, s.cfg.MaxRounds, strings.Join(failedChecks, " | "), strings.Join(intents, ", "))
	default:
		review.Action = investigationv1.CriticAction_CRITIC_ACTION_ESCALATE
		review.Summary = fmt.Sprintf("ESCALATE: conflicting evidence; unable to resolve automatically after %d round(s). %s scored %.2f < %.2f. Unresolved: %s. Conflicting or weak pins: %s. Next fetches for a human: %s",
			round, subject, score, s.cfg.Threshold, strings.Join(failedChecks, " | "), orNone(conflictPins), orNone(intents))
		resp.Trips = append(resp.Trips, guardrail.Trip(GuardrailMaxRounds,
			fmt.Sprintf("Loop of Truth reached %d round(s) without a hypothesis scoring %.2f; escalated to a human", round, s.cfg.Threshold),
			float64(s.cfg.MaxRounds), float64(round), now))
	}
	resp.Trips = append([]*investigationv1.GuardrailTrip{guardrail.Trip(GuardrailThreshold,
		fmt.Sprintf("review score %.2f below %.2f in round %d: %s", score, s.cfg.Threshold, round, review.GetAction().String()),
		s.cfg.Threshold, score, now)}, resp.Trips...)
}

// widenScope is the one place scope widening is decided: the requests
// (the failed objections' intents, as the caller reads them) reach no new
// evidence by the caller's own account (next): each would repeat a call
// already made or cannot be called, and no planned action is left to fall
// back to. The caller then widens with the router's selection. Without
// the caller's account nothing is decided.
func widenScope(objections []*investigationv1.Objection, next *criticv1.NextCalls) bool {
	if next == nil {
		return false
	}
	fresh, callable := false, false
	for _, o := range objections {
		if o.GetPassed() {
			continue
		}
		for _, i := range o.GetRequestedIntents() {
			if slices.Contains(next.GetFreshIntents(), i) {
				fresh = true
			}
			if slices.Contains(next.GetRepeatIntents(), i) {
				callable = true
			}
		}
	}
	return !fresh && (callable || !next.GetPlanHasFreshCalls())
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func isHealthy(h *investigationv1.Hypothesis) bool {
	return h.GetCategory() == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY
}

// expectedLoadErrorFloor: an error rate (per second) under which errors
// at the end of the window do not count against a reading of announced
// load (a handful of errors among hundreds of requests a second); the
// analysis reads an error series as rising only above the same floor.
const expectedLoadErrorFloor = 0.05

func (s *Service) checkAccusedMetrics(lead *investigationv1.Hypothesis, accused []string, views []*pinView) checkResult {
	var anomalous, normal, failingPins, seriesPins []string
	var failingDetail string
	for _, v := range views {
		if !v.validated {
			continue
		}
		pinMatch := matchesAny(accused, v.prof.names)
		if v.prof.failing && pinMatch {
			failingPins = appendUnique(failingPins, v.pin.GetId())
			if failingDetail == "" {
				for _, k := range append(sortedKeys(v.prof.roots), sortedKeys(v.prof.symptoms)...) {
					if d := v.prof.roots[k]; d != "" {
						failingDetail = d
					} else {
						failingDetail = v.prof.symptoms[k]
					}
					break
				}
			}
		}
		for _, sv := range v.prof.series {
			match := matchesAny(accused, nameSet(sv.names...)) || len(sv.names) == 0 && pinMatch
			if !match {
				continue
			}
			seriesPins = appendUnique(seriesPins, v.pin.GetId())
			if sv.anomalous {
				anomalous = append(anomalous, sv.detail)
			} else if sv.normal {
				normal = append(normal, sv.name)
			}
		}
	}
	// Callers' errors naming the accused (an external dependency has no
	// metrics of its own here).
	if len(anomalous) == 0 && len(failingPins) == 0 {
		for _, v := range views {
			if !v.validated {
				continue
			}
			for _, l := range v.prof.errLines {
				low := strings.ToLower(l)
				for _, a := range accused {
					if len(a) >= 4 && strings.Contains(low, a) {
						failingPins = appendUnique(failingPins, v.pin.GetId())
						if failingDetail == "" {
							failingDetail = "errors name it: " + capText(l, 200)
						}
					}
				}
			}
		}
	}
	who := strings.Join(accused, "/")
	if who == "" {
		return unverified(CheckAccusedMetricsNormal, "the hypothesis names no culprit entity", intentNames(intent.QueryPrometheus, intent.CheckPodStatus))
	}
	if isHealthy(lead) && lead.GetDetector() == analysis.ModeNotPaged {
		return notApplicable(CheckAccusedMetricsNormal, "the verdict rests on the alert's environment, which is not paged, not on the system being healthy now")
	}
	if isHealthy(lead) {
		// Healthy means healthy now: a spike that went back to baseline is
		// history. A reading of load announced ahead expects its traffic
		// and latency up; errors and saturation still count against it.
		expectedLoad := slices.Contains(lead.GetSignals(), analysis.SignalExpectedLoad)
		var elevated, healthyPins []string
		for _, v := range views {
			if !v.validated {
				continue
			}
			for _, sv := range v.prof.series {
				if expectedLoad && (sv.class == "traffic" || sv.class == "latency" || sv.class == "error" && sv.latest < expectedLoadErrorFloor) {
					continue // the demand the reading says was announced, its latency, and errors below the floor
				}
				if sv.elevated && (matchesAny(accused, nameSet(sv.names...)) || len(sv.names) == 0 && matchesAny(accused, v.prof.names)) {
					elevated = append(elevated, sv.detail)
				}
			}
			for _, o := range v.prof.obs {
				if o.healthy && matchesAny(accused, nameSet(entityName(o.entity))) {
					healthyPins = appendUnique(healthyPins, v.pin.GetId())
				}
			}
		}
		ongoing, ongoingPins := ongoingErrors(accused, views)
		switch {
		case len(elevated) > 0:
			return failed(CheckAccusedMetricsNormal, fmt.Sprintf("the hypothesis says healthy but metrics of %s are still abnormal: %s", who, capText(strings.Join(elevated, "; "), 300)),
				intentNames(intent.QueryPrometheus), seriesPins...)
		case ongoing >= minOngoingErrors:
			return failed(CheckAccusedMetricsNormal, fmt.Sprintf("the hypothesis says healthy but %s still logs errors: %d error lines at the end of the window", who, ongoing),
				intentNames(intent.FetchPodLogs, intent.SearchLogs), ongoingPins...)
		case len(normal) > 0:
			return passed(CheckAccusedMetricsNormal, fmt.Sprintf("metrics of %s are normal now (%s), consistent with a healthy system", who, strings.Join(normal, ", ")), seriesPins...)
		case len(healthyPins) > 0:
			return passed(CheckAccusedMetricsNormal, "the current status of "+who+" is healthy", healthyPins...)
		}
		return unverified(CheckAccusedMetricsNormal, "no metrics or status of "+who+" confirm it is healthy", intentNames(intent.QueryPrometheus, intent.CheckPodStatus))
	}
	if analysis.ActsAsConfigured(lead.GetDetector()) {
		// The accused did what it was configured to do (removed what the
		// alert watches): running well is how it did it.
		return notApplicable(CheckAccusedMetricsNormal, "the accused "+lead.GetEntity()+" acted as configured; its own health does not clear it")
	}
	switch {
	case len(anomalous) > 0:
		return passed(CheckAccusedMetricsNormal, fmt.Sprintf("metrics of %s are abnormal: %s", who, capText(strings.Join(anomalous, "; "), 300)), seriesPins...)
	case len(failingPins) > 0:
		return passed(CheckAccusedMetricsNormal, fmt.Sprintf("%s shows failure evidence: %s", who, capText(failingDetail, 240)), failingPins...)
	case len(normal) > 0:
		r := failed(CheckAccusedMetricsNormal, fmt.Sprintf("metrics of the accused %s are normal (%s) and no pin shows it failing", who, strings.Join(normal, ", ")),
			intentNames(intent.QueryPrometheus, intent.ReinvestigateService), seriesPins...)
		return r
	}
	if routingObject(lead.GetEntity()) {
		// A route, an ingress, a setting or a policy fails by what it says,
		// not by crashing: the healthy pods of the workload it names do not
		// clear it.
		return notApplicable(CheckAccusedMetricsNormal, "the accused "+lead.GetEntity()+" is a configuration object; the health of the pods it routes to or configures does not clear it")
	}
	var healthyPins, healthyDetail []string
	for _, v := range views {
		if !v.validated {
			continue
		}
		for _, o := range v.prof.obs {
			if o.healthy && matchesAny(accused, nameSet(entityName(o.entity), o.workload)) {
				healthyPins = appendUnique(healthyPins, v.pin.GetId())
				healthyDetail = append(healthyDetail, o.detail)
			}
		}
	}
	if len(healthyPins) > 0 {
		return failed(CheckAccusedMetricsNormal, fmt.Sprintf("the accused %s is healthy (%s) and no pin shows it failing", who, capText(strings.Join(healthyDetail, "; "), 240)),
			intentNames(intent.QueryPrometheus, intent.ReinvestigateService), healthyPins...)
	}
	return unverified(CheckAccusedMetricsNormal, "no metric or status evidence about "+who, intentNames(intent.QueryPrometheus, intent.CheckPodStatus))
}

func (s *Service) checkBeforeDeploy(lead *investigationv1.Hypothesis, alert *investigationv1.Alert, accused []string, views, cited []*pinView) checkResult {
	if isHealthy(lead) || !blamesChange(lead, cited) {
		return notApplicable(CheckRegressionBeforeDeploy, "the hypothesis does not blame a change")
	}
	type dep struct {
		id    string
		start time.Time
		pin   string
	}
	collect := func(from []*pinView, match bool) []dep {
		var out []dep
		for _, v := range from {
			if !v.validated {
				continue
			}
			for _, d := range v.prof.deploys {
				if d.IsRollback || match && !matchesAny(accused, nameSet(d.Service)) {
					continue
				}
				t := d.StartedAt
				if t == nil {
					t = d.FinishedAt
				}
				if t == nil {
					continue
				}
				id := d.ID
				if id == "" {
					id = d.Service + "@" + d.Revision
				}
				out = append(out, dep{id, *t, v.pin.GetId()})
			}
		}
		return out
	}
	deps := collect(views, true)
	if len(deps) == 0 {
		deps = collect(cited, false)
	}
	if len(deps) == 0 {
		return unverified(CheckRegressionBeforeDeploy, "no deploy of the accused service with a start time in evidence", intentNames(intent.GetDeployHistory))
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].start.Before(deps[j].start) })

	var onset *time.Time
	var onsetPin string
	for _, pass := range []bool{true, false} {
		for _, v := range views {
			if !v.validated || !v.prof.failing || v.prof.onset == nil || pass && !matchesAny(accused, v.prof.names) {
				continue
			}
			at := v.prof.onset
			if pass {
				// A pin of many series (a metric survey) names many
				// entities: only the accused entity's series date its onset.
				if so, ok := seriesOnset(v.prof.series, accused); ok {
					if so == nil {
						continue
					}
					at = so
				}
			}
			if onset == nil || at.Before(*onset) {
				onset, onsetPin = at, v.pin.GetId()
			}
		}
		if onset != nil {
			break
		}
	}
	if onset == nil && alert.GetStartsAt() != nil {
		t := alert.GetStartsAt().AsTime()
		onset, onsetPin = &t, ""
		// The alert fired after the onset: it only proves "before" when it precedes every deploy.
		if !t.Before(deps[0].start.Add(-s.cfg.OnsetTolerance)) {
			return unverified(CheckRegressionBeforeDeploy, "onset of the regression not measured (only the alert time)", intentNames(intent.QueryPrometheus), deps[0].pin)
		}
	}
	if onset == nil {
		return unverified(CheckRegressionBeforeDeploy, "onset of the regression not measured", intentNames(intent.QueryPrometheus), deps[0].pin)
	}
	pins := []string{deps[0].pin}
	if onsetPin != "" {
		pins = appendUnique(pins, onsetPin)
	}
	var last *dep
	for i := range deps {
		if !deps[i].start.After(onset.Add(s.cfg.OnsetTolerance)) {
			last = &deps[i]
		}
	}
	if last == nil {
		r := failed(CheckRegressionBeforeDeploy, fmt.Sprintf("the regression began at %s, %s before deploy %s started (%s): the deploy cannot have caused it",
			onset.UTC().Format(time.RFC3339), deps[0].start.Sub(*onset).Round(time.Second), deps[0].id, deps[0].start.UTC().Format(time.RFC3339)),
			intentNames(intent.QueryPrometheus, intent.GetEvents, intent.ReinvestigateService), pins...)
		r.alt = func(h *investigationv1.Hypothesis) bool { return !blamesChange(h, nil) }
		return r
	}
	pins = appendUnique(pins, last.pin)
	return passed(CheckRegressionBeforeDeploy, fmt.Sprintf("deploy %s started %s before the onset (%s)", last.id, onset.Sub(last.start).Round(time.Second), onset.UTC().Format(time.RFC3339)), pins...)
}

var infraKinds = []string{kindDB, kindNode, kindDNS, kindDisk, kindStorage, kindCert}

func (s *Service) checkDependency(lead *investigationv1.Hypothesis, accused []string, views []*pinView) checkResult {
	if isHealthy(lead) {
		return notApplicable(CheckDependencyBetter, "the hypothesis says the system is healthy")
	}
	leadText := strings.ToLower(lead.GetEntity() + " " + lead.GetStatement() + " " + strings.Join(lead.GetCausalChain(), " "))
	accusedSet := nameSet(accused...)
	type cand struct {
		detail string
		pins   []string
		own    bool
	}
	cands := map[string]*cand{}
	add := func(name, detail, pin string, own bool) {
		if name == "" || matchesName(name, accusedSet) || matchesAny(accused, nameSet(name)) {
			return
		}
		c := cands[name]
		if c == nil {
			c = &cand{detail: detail}
			cands[name] = c
		}
		c.pins = appendUnique(c.pins, pin)
		if own && !c.own {
			c.own, c.detail = true, detail
		}
	}
	accusedOwn := ""
	for _, v := range views {
		if !v.validated || !v.prof.failing {
			continue
		}
		for name, line := range v.prof.downstream {
			add(name, "errors name "+name+": "+line, v.pin.GetId(), false)
		}
		overlap := matchesAny(accused, v.prof.names)
		for _, k := range sortedKeys(v.prof.roots) {
			if !deepRootKinds[k] {
				continue
			}
			if overlap {
				if accusedOwn == "" {
					accusedOwn = v.prof.roots[k]
				}
				continue
			}
			if !containsStr(infraKinds, k) {
				continue
			}
			names := sortedSet(v.prof.names)
			name := strings.ToLower(v.pin.GetResourceName())
			if name == "" && len(names) > 0 {
				name = names[0]
			}
			add(name, v.prof.roots[k], v.pin.GetId(), true)
		}
	}
	// A named downstream with its own failing evidence.
	for name, c := range cands {
		if c.own {
			continue
		}
		for _, v := range views {
			if v.validated && v.prof.failing && len(v.prof.roots) > 0 && matchesName(name, v.prof.names) {
				c.own = true
				c.pins = appendUnique(c.pins, v.pin.GetId())
				c.detail += "; and " + name + " fails itself"
				break
			}
		}
	}
	if len(cands) == 0 {
		return passed(CheckDependencyBetter, "no error names a dependency and no independent failure elsewhere")
	}
	names := make([]string, 0, len(cands))
	for n := range cands {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if cands[names[i]].own != cands[names[j]].own {
			return cands[names[i]].own
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		if strings.Contains(leadText, n) {
			return passed(CheckDependencyBetter, "the hypothesis already accounts for dependency "+n, cands[n].pins...)
		}
	}
	best := names[0]
	c := cands[best]
	intents := intentNames(intent.ReinvestigateService)
	if containsAny(c.detail+" "+best, "db", "database", "sql", "rds", "postgres", "mysql", "redis", "mongo") {
		intents = append(intents, "query_db_metrics", "get_db_events")
	}
	if containsAny(c.detail, "node ") {
		intents = append(intents, "get_node_health")
	}
	if accusedOwn != "" && !c.own {
		return passed(CheckDependencyBetter, fmt.Sprintf("errors name %s, but the accused has its own failure: %s", best, capText(accusedOwn, 200)), c.pins...)
	}
	if c.own && accusedOwn == "" || c.own && lead.GetCategory() == investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE {
		r := failed(CheckDependencyBetter, fmt.Sprintf("dependency %s is a better explanation: %s", best, capText(c.detail, 240)), intents, c.pins...)
		r.alt = func(h *investigationv1.Hypothesis) bool {
			return strings.Contains(strings.ToLower(h.GetEntity()+" "+h.GetStatement()), best)
		}
		return r
	}
	if c.own {
		return unverified(CheckDependencyBetter, fmt.Sprintf("both the accused (%s) and %s fail; which came first is not settled: %s", capText(accusedOwn, 120), best, capText(c.detail, 160)), intents, c.pins...)
	}
	return unverified(CheckDependencyBetter, fmt.Sprintf("errors name downstream %s, not checked yet: %s", best, capText(c.detail, 200)), intents, c.pins...)
}

func (s *Service) checkConcrete(lead *investigationv1.Hypothesis, cited []*pinView) checkResult {
	refs := map[string][]string{}
	var ids []string
	for _, v := range cited {
		if !v.validated {
			continue
		}
		ids = append(ids, v.pin.GetId())
		for k, vals := range v.prof.refs {
			refs[k] = append(refs[k], vals...)
		}
	}
	if len(ids) == 0 {
		return failed(CheckEvidenceNotConcrete, "the hypothesis cites no validated pin", suggestions(lead.GetCategory()))
	}
	has := func(kinds ...string) bool {
		for _, k := range kinds {
			if len(refs[k]) > 0 {
				return true
			}
		}
		return false
	}
	var missing []string
	var intents []string
	need := func(ok bool, what string, intent ...string) {
		if !ok {
			missing = append(missing, what)
			for _, i := range intent {
				intents = appendUnique(intents, i)
			}
		}
	}
	text := lead.GetStatement() + " " + strings.Join(lead.GetSignals(), " ")
	switch lead.GetCategory() {
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT:
		need(has(refCommit, refDeploy), "a deploy id or commit SHA", "get_deploy_history", "get_commits")
		need(has(refMetricWindow, refLogLine, refExitCode, refEvent), "a metric window, log line or exit code showing the failure", "query_prometheus", "fetch_pod_logs")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CONFIGURATION_ERROR:
		need(has(refResource, refDeploy, refEvent, refLogLine, refCommit), "the config object, event or log line naming the bad setting", "describe_resource", "get_events")
		need(has(refPod, refExitCode, refLogLine, refEvent, refMetricWindow), "the affected pod, exit code, error line or metric window", "check_pod_status", "fetch_pod_logs")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION:
		need(has(refMetricWindow, refExitCode, refEvent, refDBEvent, refNode), "a metric window, OOM exit code or node condition", "query_prometheus", "check_pod_status")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_INFRASTRUCTURE:
		need(has(refNode, refDBEvent, refEvent, refMetricWindow), "the node, database event or infrastructure metric", "get_node_health", "get_db_events")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE:
		need(has(refLogLine, refMetricWindow, refDBEvent, refEvent), "an error line or metric window naming the dependency", "search_logs", "query_prometheus")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_HEALTHY:
		need(has(refMetricWindow, refPod, refNode), "a metric window or pod status showing health", "query_prometheus", "check_pod_status")
	case investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DATA_QUALITY:
		// Bad input is told from a broken consumer by the consumer's own
		// logs: which inputs it rejects and which it still processes.
		own := has(refPod)
		for _, v := range cited {
			own = own || v.validated && v.pin.GetSourceTool() == "fetch_pod_logs"
		}
		need(own, "the consuming pod's own logs (which inputs it rejects and which it still processes)", "fetch_pod_logs")
	default:
		n := 0
		for _, v := range refs {
			if len(v) > 0 {
				n++
			}
		}
		need(n >= 1, "any concrete reference (deploy, commit, metric window, pod, exit code)", suggestions(lead.GetCategory())...)
	}
	if changeWords.MatchString(text) && !isHealthy(lead) && lead.GetCategory() != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_CODE_DEFECT {
		need(has(refDeploy, refCommit), "the deploy id or commit SHA the hypothesis blames", "get_deploy_history")
	}
	if len(missing) > 0 {
		return checkResult{obj: &investigationv1.Objection{Check: CheckEvidenceNotConcrete,
			Detail: "cited evidence lacks " + strings.Join(missing, "; "), PinIds: ids, RequestedIntents: intents}}
	}
	var have []string
	for _, k := range []string{refDeploy, refCommit, refMetricWindow, refPod, refExitCode, refNode, refEvent, refDBEvent, refLogLine, refResource} {
		if len(refs[k]) > 0 {
			have = append(have, fmt.Sprintf("%s %s", k, capText(refs[k][0], 60)))
		}
	}
	return passed(CheckEvidenceNotConcrete, "concrete: "+strings.Join(have, "; "), ids...)
}

func (s *Service) checkContradictions(lead *investigationv1.Hypothesis, accused []string, cited []*pinView, byID map[string]*pinView) checkResult {
	if len(cited) == 0 {
		if len(lead.GetPinIds()) == 0 {
			return failed(CheckContradictingPins, "the hypothesis cites no pin", suggestions(lead.GetCategory()))
		}
		return failed(CheckContradictingPins, "none of the cited pins is in the session's evidence: "+strings.Join(lead.GetPinIds(), ", "), suggestions(lead.GetCategory()), lead.GetPinIds()...)
	}
	var bad []string
	var pins []string
	validated := 0
	for _, v := range cited {
		if !v.validated {
			bad = append(bad, fmt.Sprintf("cited pin %s was rejected (%s)", v.pin.GetId(), capText(v.pin.GetCriticRationale(), 120)))
			pins = appendUnique(pins, v.pin.GetId())
			continue
		}
		validated++
		for _, cid := range v.pin.GetContradicts() {
			o := byID[cid]
			if o == nil || !o.validated {
				continue
			}
			if o.prof.at.IsZero() || v.prof.at.IsZero() || !o.prof.at.Before(v.prof.at) {
				bad = append(bad, fmt.Sprintf("cited pin %s is contradicted by pin %s", v.pin.GetId(), cid))
				pins = appendUnique(pins, v.pin.GetId())
				pins = appendUnique(pins, cid)
			}
		}
	}
	if validated == 0 {
		return failed(CheckContradictingPins, "the hypothesis cites no validated pin: "+strings.Join(bad, "; "), suggestions(lead.GetCategory()), pins...)
	}
	if isHealthy(lead) && lead.GetDetector() != analysis.ModeNotPaged {
		// A not-paged verdict does not claim the system works: pods failing
		// in that environment are what it reports, not a contradiction.
		views := make([]*pinView, 0, len(byID))
		for _, v := range byID {
			views = append(views, v)
		}
		for _, f := range currentFailures(accused, views) {
			bad = append(bad, fmt.Sprintf("pin %s shows %s failing now", f.pin, f.detail))
			pins = appendUnique(pins, f.pin)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return failed(CheckContradictingPins, strings.Join(bad, "; "), intentNames(intent.CheckPodStatus, intent.QueryPrometheus), pins...)
	}
	return passed(CheckContradictingPins, fmt.Sprintf("no pin contradicts the %d cited pin(s)", validated))
}

func (s *Service) checkSources(lead *investigationv1.Hypothesis, accused []string, views, cited []*pinView) checkResult {
	tools := map[string]bool{}
	var pins []string
	addView := func(v *pinView) {
		t := v.prof.tool
		if t == "" {
			t = strings.Join(v.pin.GetSources(), ",")
		}
		if t == "" {
			t = v.pin.GetId()
		}
		tools[t] = true
		pins = appendUnique(pins, v.pin.GetId())
	}
	for _, v := range cited {
		if v.validated {
			addView(v)
		}
	}
	for _, v := range views {
		if !v.validated || !matchesAny(accused, v.prof.names) {
			continue
		}
		if isHealthy(lead) && (v.prof.healthy || v.pin.GetNoData()) || !isHealthy(lead) && v.prof.failing {
			addView(v)
		}
	}
	have := sortedSet(tools)
	if len(tools) >= s.cfg.MinIndependentSources {
		return passed(CheckIndependentSources, fmt.Sprintf("%d independent sources: %s", len(tools), strings.Join(have, ", ")), pins...)
	}
	var intents []string
	for _, i := range suggestions(lead.GetCategory()) {
		if !tools[i] {
			intents = append(intents, i)
		}
	}
	return checkResult{obj: &investigationv1.Objection{Check: CheckIndependentSources,
		Detail:           fmt.Sprintf("only %d independent source(s) (%s); need %d", len(tools), strings.Join(have, ", "), s.cfg.MinIndependentSources),
		PinIds:           pins,
		RequestedIntents: intents}}
}

func (s *Service) checkAlternatives(lead *investigationv1.Hypothesis, hyps []*investigationv1.Hypothesis) checkResult {
	if len(hyps) < 2 {
		return passed(CheckAlternativeUnresolved, "no competing hypothesis")
	}
	second := hyps[1]
	if second.GetEntity() != lead.GetEntity() && second.GetConfidence() >= lead.GetConfidence()-s.cfg.AlternativeMargin {
		intents := suggestions(second.GetCategory())
		if len(intents) > 2 {
			intents = intents[:2]
		}
		return checkResult{obj: &investigationv1.Objection{Check: CheckAlternativeUnresolved,
			Detail:           fmt.Sprintf("alternative %s (%q, confidence %.2f) is within %.2f of the leader (%.2f)", second.GetId(), capText(second.GetStatement(), 120), second.GetConfidence(), s.cfg.AlternativeMargin, lead.GetConfidence()),
			PinIds:           second.GetPinIds(),
			RequestedIntents: intents}}
	}
	return passed(CheckAlternativeUnresolved, fmt.Sprintf("runner-up %s trails by %.2f", second.GetId(), lead.GetConfidence()-second.GetConfidence()))
}

const intentReinvestigate = string(intent.ReinvestigateService)

// minOngoingErrors error lines at the end of the window mean a failure is still going on.
const minOngoingErrors = 3

// concurrentWindow: observations this close together describe the same moment.
const concurrentWindow = 2 * time.Minute

func keepAvailable(intents []string, avail map[string]bool) []string {
	if avail == nil {
		return intents
	}
	var out []string
	for _, i := range intents {
		if avail[i] {
			out = append(out, i)
		}
	}
	return out
}

// entityName is the name part of an observation entity ("pod:ns/name" -> name).
func entityName(entity string) string {
	if i := strings.LastIndexAny(entity, ":/"); i >= 0 {
		return entity[i+1:]
	}
	return entity
}

type failure struct{ pin, detail string }

// currentFailures lists the accused's failing current-state observations
// (pods, deployments, nodes) that nothing fresher or broader overrides:
// a later healthy observation of the same entity, or a deployment reporting
// every replica ready for the pods' workload. Events and logs are history.
func currentFailures(accused []string, views []*pinView) []failure {
	type obsAt struct {
		o   observation
		pin *pinView
	}
	var all []obsAt
	for _, v := range views {
		if !v.validated || strings.Contains(v.pin.GetCriticRationale(), "contradicted by fresher") {
			continue
		}
		for _, o := range v.prof.obs {
			all = append(all, obsAt{o, v})
		}
	}
	// Observations of one round (seconds apart) are concurrent.
	notBefore := func(a, b time.Time) bool { return a.IsZero() || b.IsZero() || !a.Before(b.Add(-concurrentWindow)) }
	workloadOK := func(o observation) bool {
		ns, name := "", entityName(o.entity)
		if i := strings.Index(o.entity, ":"); i >= 0 {
			if j := strings.LastIndex(o.entity, "/"); j > i {
				ns = o.entity[i+1 : j]
			}
		}
		wl := o.workload
		if wl == "" {
			wl = facts.TrimReplicaSuffix(name)
		}
		deploymentReady := false
		for _, x := range all {
			if x.o.healthy && strings.HasPrefix(x.o.entity, "deployment:") && notBefore(x.o.at, o.at) &&
				(x.o.entity == entityKey("deployment", ns, wl) || x.o.entity == entityKey("deployment", ns, name)) {
				deploymentReady = true
			}
		}
		if !deploymentReady || o.rs == "" {
			return false
		}
		// The failing pod belongs to a superseded replica set: healthy pods
		// of another replica set of the same workload serve now.
		for _, x := range all {
			if x.o.healthy && strings.HasPrefix(x.o.entity, "pod:") && x.o.workload == wl && x.o.rs != "" && x.o.rs != o.rs && notBefore(x.o.at, o.at) {
				return true
			}
		}
		return false
	}
	var out []failure
	seen := map[string]bool{}
	for _, x := range all {
		o := x.o
		// Pod aggregates repeat what their pod observations say.
		if o.healthy || strings.HasPrefix(o.entity, "pods:") ||
			!matchesAny(accused, nameSet(entityName(o.entity), facts.TrimReplicaSuffix(entityName(o.entity)), o.workload)) {
			continue
		}
		overridden := false
		for _, y := range all {
			if y.o.healthy && y.o.entity == o.entity && y.pin != x.pin && notBefore(y.o.at, o.at) {
				overridden = true
				break
			}
		}
		if !overridden && strings.HasPrefix(o.entity, "pod:") && workloadOK(o) {
			overridden = true
		}
		if overridden || seen[x.pin.pin.GetId()] {
			continue
		}
		seen[x.pin.pin.GetId()] = true
		out = append(out, failure{pin: x.pin.pin.GetId(), detail: o.detail})
	}
	return out
}

// discoveryOrder ranks the tools that widen an investigation that found no
// explanation yet: logs and status first, then changes, metrics and databases.
var discoveryOrder = intentNames(
	intent.FetchPodLogs, intent.SearchLogs, intent.DescribeResource, intent.GetEvents, intent.CheckPodStatus, intent.ListPods,
	intent.ListDeployments, intent.GetNodeHealth, intent.GetDeployHistory, intent.GetCommits, intent.QueryPrometheus,
	intent.QueryDBMetrics, intent.GetDBEvents, intent.GetDBTopQueries, intent.ListMonitors,
)

// intentNames turns intents into the strings requests carry.
func intentNames(ns ...intent.Name) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.String()
	}
	return out
}

// executedTools are the intents whose pins are in the pool.
func executedTools(views []*pinView) map[string]bool {
	m := map[string]bool{}
	for _, v := range views {
		if v.prof.tool != "" {
			m[v.prof.tool] = true
		}
	}
	return m
}

// expandAccused adds the services of the deploys and commits an accused SHA
// or deploy id names: a release is judged by its service's behaviour.
func expandAccused(accused []string, views []*pinView) []string {
	out := append([]string(nil), accused...)
	for _, a := range accused {
		for _, v := range views {
			for _, d := range v.prof.deploys {
				if matchesName(a, nameSet(d.ID, d.Revision)) && d.Service != "" {
					out = appendUnique(out, strings.ToLower(d.Service))
				}
			}
			for _, c := range v.prof.commits {
				if matchesName(a, nameSet(c.SHA)) && c.Service != "" {
					out = appendUnique(out, strings.ToLower(c.Service))
				}
			}
		}
	}
	return out
}

// ongoingErrors counts the accused's error log lines in the last part of the
// window each pin looked at (the last 10 minutes, at most a fifth of it).
func ongoingErrors(accused []string, views []*pinView) (int, []string) {
	n := 0
	var pins []string
	for _, v := range views {
		if !v.validated || v.prof.windowEnd.IsZero() {
			continue
		}
		span := 10 * time.Minute
		if st := v.pin.GetTimeWindow().GetStart(); st != nil {
			if w := v.prof.windowEnd.Sub(st.AsTime()) / 5; w > 0 && w < span {
				span = w
			}
		}
		from := v.prof.windowEnd.Add(-span)
		for _, h := range v.prof.errLogs {
			if h.at == nil || h.at.Before(from) {
				continue
			}
			if matchesAny(accused, nameSet(h.service, h.pod, facts.TrimReplicaSuffix(h.pod))) ||
				h.service == "" && h.pod == "" && matchesAny(accused, v.prof.names) {
				n++
				pins = appendUnique(pins, v.pin.GetId())
			}
		}
	}
	return n, pins
}

// seriesOnset is the earliest onset of the anomalous series that name an
// accused entity; ok is false when the series carry no entity names at all
// (then the pin's own onset stands).
func seriesOnset(series []seriesView, accused []string) (*time.Time, bool) {
	named := false
	var out *time.Time
	for _, sv := range series {
		if len(sv.names) == 0 {
			continue
		}
		named = true
		if !sv.anomalous || sv.onset == nil || !matchesAny(accused, nameSet(sv.names...)) {
			continue
		}
		if out == nil || sv.onset.Before(*out) {
			out = sv.onset
		}
	}
	return out, named
}

// routingObject: entity (kind/namespace/name) is an object that routes to,
// configures or admits a workload rather than running it: an Ingress, a
// route, a Service's mapping, a ConfigMap, a Secret, a policy, a
// certificate.
func routingObject(entity string) bool {
	kind, _, ok := strings.Cut(strings.ToLower(entity), "/")
	if !ok {
		return false
	}
	switch kind {
	case "ingress", "httproute", "grpcroute", "gateway", "virtualservice", "destinationrule", "service", "configmap", "secret",
		"networkpolicy", "certificate", "issuer", "clusterissuer", "ingressclass", "poddisruptionbudget", "resourcequota", "limitrange", "priorityclass":
		return true
	}
	return false
}

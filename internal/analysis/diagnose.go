package analysis

import (
	"fmt"
	"slices"
	"strings"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// sourceNames are display names of evidence sources (file stems and
// integration names).
var sourceNames = map[string]string{
	"eks_pods":                 "pod status (eks_pods)",
	"eks_events":               "Kubernetes events (eks_events)",
	"eks_deployments":          "deployment status (eks_deployments)",
	"eks_node_health":          "node health (eks_node_health)",
	"eks_pod_logs":             "pod logs (eks_pod_logs)",
	"k8s":                      "Kubernetes API objects (k8s)",
	"kubernetes":               "Kubernetes API",
	"pod_logs":                 "pod logs (pod_logs)",
	"datadog_logs":             "Datadog logs (datadog_logs)",
	"datadog_monitors":         "Datadog monitors (datadog_monitors)",
	"logs":                     "log search (logs)",
	"prometheus":               "Prometheus metrics",
	"deploys":                  "deploy history",
	"commits":                  "commit history",
	"aws_cloudwatch_metrics":   "CloudWatch metrics (aws_cloudwatch_metrics)",
	"aws_performance_insights": "Performance Insights (aws_performance_insights)",
	"aws_rds_events":           "RDS events (aws_rds_events)",
}

// SourceName is the display name of an evidence source.
func SourceName(s string) string {
	if n, ok := sourceNames[s]; ok {
		return n
	}
	if strings.HasPrefix(s, "aws_cloudwatch_metrics") {
		return sourceNames["aws_cloudwatch_metrics"]
	}
	return s
}

// Diagnose turns an analysis into the structured diagnosis: root cause text
// naming the entity, the numbers and the evidence sources; category; entity;
// causal chain; claims; ruled-out alternatives; remediation; confidence.
func Diagnose(in Input, res Result) *investigationv1.Diagnosis {
	if res.ev != nil {
		res.ev.liftSolePods(&res)
	}
	d := &investigationv1.Diagnosis{
		Hypotheses: res.Hypotheses,
		RuledOut:   res.RuledOut,
		Unknowns:   res.Unknowns,
	}
	for _, c := range res.Claims {
		switch c.GetStatus() {
		case investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED:
			d.ValidatedClaims = append(d.ValidatedClaims, c)
		case investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, investigationv1.ClaimStatus_CLAIM_STATUS_CONFLICTING:
			d.NonValidatedClaims = append(d.NonValidatedClaims, c)
		}
	}
	ev := res.ev
	if ev == nil && len(in.Pins) > 0 {
		ev = NewEvidence(in.Alert, in.Pins)
		ev.prior = in.Prior
	}
	if a, ok := fallback(ev, res); ok {
		h := &investigationv1.Hypothesis{
			Id: "h0", Statement: a.Statement, Category: a.Category, Entity: a.Entity, Confidence: confidence(a),
			PinIds: a.PinIDs, Detector: ModeAnomaly, CausalChain: a.Chain, Remediation: a.Remediation, Signals: a.Signals,
		}
		res.Hypotheses = append([]*investigationv1.Hypothesis{h}, res.Hypotheses...)
		d.Hypotheses = res.Hypotheses
		var claims []*investigationv1.Claim
		for _, c := range a.Validated {
			claims = append(claims, &investigationv1.Claim{Claim: c.Text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: c.PinIDs})
		}
		d.ValidatedClaims = append(claims, d.ValidatedClaims...)
		claims = nil
		for _, c := range a.Inferred {
			claims = append(claims, &investigationv1.Claim{Claim: c.Text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_TENTATIVE, PinIds: c.PinIDs})
		}
		d.NonValidatedClaims = append(claims, d.NonValidatedClaims...)
		res.Sources = appendUnique(append([]string(nil), a.Sources...), res.Sources...)
		res.Composite = false
		if len(d.RuledOut) == 0 {
			// The common alternatives the evidence contradicts.
			d.RuledOut = ev.ruleOut([]Finding{a}, res.Findings)
			res.RuledOut = d.RuledOut
		}
		if a.Category == catUnknown {
			d.Unknowns = append(d.Unknowns, "the failure mode is not established: the summary names the strongest abnormal signals, not a confirmed cause")
		}
	}
	if len(in.Pins) > 0 {
		// The facts an SRE reads first, quoted with their pins, whatever
		// the hypothesis: observations, not conclusions.
		d.ValidatedClaims = append(d.ValidatedClaims, ev.keyEvidence(append(append([]*investigationv1.Claim(nil), d.ValidatedClaims...), d.NonValidatedClaims...))...)
		{
			// How the object the conclusion names is configured, as
			// describe shows it, and what its log says (culprit.go); with
			// no object named (no fault found, health of no entity), what
			// was written about the alert's target.
			known := claimsText(d.ValidatedClaims, d.NonValidatedClaims)
			ent := ""
			if len(res.Hypotheses) > 0 {
				ent = res.Hypotheses[0].GetEntity()
			}
			var refs []settingRef
			if ent != "" {
				refs = ev.culpritConfig(ent, known)
				refs = append(refs, ev.culpritLogs(ent, known)...)
			} else {
				refs = ev.targetLogs(known)
			}
			d.ValidatedClaims = append(d.ValidatedClaims, keyClaims(refs)...)
		}
		if !res.Healthy {
			// A fault: the bound settings at a "never" value, whatever
			// the hypothesis (extreme.go), and the records before the
			// failure that name its rarest words (tracewords.go).
			d.ValidatedClaims = append(d.ValidatedClaims, keyClaims(ev.extremeSettings(claimsText(d.ValidatedClaims)))...)
			d.ValidatedClaims = append(d.ValidatedClaims, ev.tracedRecords(claimsText(d.ValidatedClaims, d.NonValidatedClaims))...)
		}
	}
	if len(res.Hypotheses) == 0 {
		if what, ok := ev.nothingFound(); ok {
			// No failure anywhere in what was read: no fault found, said
			// with a low confidence and left for review, the alert's own
			// condition unobserved.
			d.RootCause = "No fault found in the evidence gathered: " + what
			if in.Alert != nil && in.Alert.GetAlertName() != "" {
				d.RootCause += ". The alert " + quote(in.Alert.GetAlertName()) + " is not explained by any failure there"
			}
			d.RootCause += "."
			d.Category = catHealthy
			d.Confidence = nothingFoundConfidence
			d.Status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW
			d.StopReason = "no failure in the evidence"
			d.Unknowns = append(d.Unknowns, "the alert's own condition was not observed in the evidence: check what its rule measures before closing it")
			// What was written about the alert's target around it (a
			// plan, a standing record of a known flap): why it fired.
			d.ValidatedClaims = append(d.ValidatedClaims, ev.contextClaims(claimsText(d.ValidatedClaims, d.NonValidatedClaims))...)
			notePriorOnHealth(in, ev, d)
			return d
		}
		d.RootCause = "Undetermined: the evidence gathered matches no known failure mode"
		if in.Alert != nil && in.Alert.GetAlertName() != "" {
			d.RootCause += " for alert " + in.Alert.GetAlertName()
		}
		d.Category = catUnknown
		d.Status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW
		d.StopReason = "no hypothesis"
		applyPrior(in, ev, d)
		return d
	}
	lead := res.Hypotheses[0]
	d.Category = lead.GetCategory()
	d.RootCauseEntity = lead.GetEntity()
	d.Confidence = lead.GetConfidence()
	d.CausalChain = append(d.CausalChain, lead.GetCausalChain()...)
	d.RemediationSteps = append(d.RemediationSteps, lead.GetRemediation()...)
	root := strings.TrimSuffix(lead.GetStatement(), ".")
	if res.Composite && len(res.Hypotheses) > 1 {
		second := res.Hypotheses[1]
		root = fmt.Sprintf("Two concurrent faults on %s, both needed to explain the alert: (1) %s; (2) %s",
			strings.TrimPrefix(lead.GetEntity(), "db/"), root, strings.TrimSuffix(second.GetStatement(), "."))
		for _, s := range second.GetCausalChain() {
			d.CausalChain = append(d.CausalChain, s)
		}
		d.RemediationSteps = append(d.RemediationSteps, second.GetRemediation()...)
		if second.GetConfidence() < d.Confidence {
			d.Confidence = (d.Confidence + second.GetConfidence()) / 2
		}
		if second.GetCategory() != lead.GetCategory() && second.GetConfidence() > lead.GetConfidence() {
			d.Category = second.GetCategory()
		}
	}
	if len(res.Sources) > 0 {
		root += ". Primary evidence source: " + SourceName(res.Sources[0])
		if len(res.Sources) > 1 {
			var rest []string
			for _, s := range res.Sources[1:] {
				rest = append(rest, SourceName(s))
			}
			root += "; corroborated by " + strings.Join(rest, ", ")
		}
	}
	d.RootCause = root + "."
	// The status is left to the owner of the conclusion gate (the critic
	// weighs the confidence against its configured gate); analysis only
	// states what the evidence shows.
	if res.Healthy {
		d.Status = investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED
		d.StopReason = "positive evidence of health"
		notePriorOnHealth(in, ev, d)
	} else {
		applyPrior(in, ev, d)
	}
	return d
}

// maxContextClaims bounds the records around the alert a reading of no
// fault found (or of no action needed, from words) quotes.
const maxContextClaims = 3

// contextClaims quote the records written around the alert that name its
// target (healthContext: planned work, a standing record of a known flap
// or of a rule that fires by design), those not quoted already, at most
// maxContextClaims: what a reader checks before closing the alert.
func (ev *Evidence) contextClaims(known string) []*investigationv1.Claim {
	if ev == nil {
		return nil
	}
	at := ev.alertTime()
	var out []*investigationv1.Claim
	for _, l := range ev.healthContext() {
		if len(out) == maxContextClaims {
			break
		}
		low := strings.ToLower(l.Message)
		if strings.Contains(known, low[:min(len(low), 60)]) {
			continue
		}
		text, _ := aroundAlert(l, at)
		out = append(out, &investigationv1.Claim{Claim: text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: l.Cite.PinIDs})
	}
	return out
}

// nothingFoundConfidence is the confidence of a "no fault found" reading:
// absence of failure, not positive evidence of health.
const nothingFoundConfidence = 0.3

// anyFailingSeries: some series of the evidence is a failure signal
// (failingSeries), whatever entity it belongs to, unless its own
// environment label says it is not paged.
func (ev *Evidence) anyFailingSeries() bool {
	return slices.ContainsFunc(ev.Series, func(s Series) bool { return failingSeries(s) && !ev.nonPagedSeries(s) })
}

// nothingFound says whether the evidence read shows no failure at all:
// every tool answered (none failed), something was read, no log line is
// an error, no event a warning, no pod unhealthy, no series moved; and
// what was read.
func (ev *Evidence) nothingFound() (string, bool) {
	if ev == nil || len(ev.Failed) > 0 || len(ev.Sources) == 0 {
		return "", false
	}
	for _, l := range ev.Logs {
		if ev.failingLine(l) {
			return "", false
		}
	}
	for _, e := range ev.Events {
		if strings.EqualFold(e.Type, "Warning") {
			return "", false
		}
	}
	for _, p := range ev.Pods {
		if !podHealthy(p.Pod) && !strings.EqualFold(p.Phase, "Succeeded") {
			return "", false
		}
	}
	for _, d := range ev.Deployments {
		if d.UnavailableReplicas > 0 || d.ReadyReplicas < d.Replicas {
			return "", false
		}
	}
	if ok, _ := ev.nodesReady(); !ok {
		return "", false
	}
	if len(ev.anomalyCandidates()) > 0 {
		return "", false
	}
	if ev.anyFailingSeries() {
		// An error, latency or steal series that rose, even one no
		// workload claims: not "nothing found".
		return "", false
	}
	if len(ev.limitsReached()) > 0 {
		// A measurement at its published bound (a table full, a pool at
		// its maximum): not "nothing found" either.
		return "", false
	}
	var read []string
	if n := len(ev.Pods); n > 0 {
		read = append(read, plural(n, "pod", "pods")+" running as they should")
	}
	if n := len(ev.Logs); n > 0 {
		read = append(read, plural(n, "log line", "log lines")+", none failing")
	}
	if n := len(ev.Series); n > 0 {
		read = append(read, plural(n, "series", "series")+" without an abnormal change")
	}
	if n := len(ev.Events); n > 0 {
		read = append(read, plural(n, "event", "events")+", none a warning")
	}
	if len(read) == 0 {
		return "", false
	}
	return strings.Join(read, "; "), true
}

// fallback builds the evidence-driven anomaly summary when no specific
// detector reached its bar: no hypothesis, or a leading fault hypothesis
// below the fault threshold. A healthy lead is never replaced (health needs
// positive evidence, and that evidence exists). The summary leads only when
// it is stronger than the weak hypothesis it replaces.
func fallback(ev *Evidence, res Result) (Finding, bool) {
	if len(res.Hypotheses) > 0 {
		lead := res.Hypotheses[0]
		if (lead.GetCategory() == catHealthy && !res.HealthVetoed) || (lead.GetCategory() != catHealthy && lead.GetConfidence() >= minFaultScore) {
			return Finding{}, false
		}
	}
	if ev == nil {
		return Finding{}, false
	}
	a, ok := ev.anomalySummary(res.Findings)
	if !ok {
		return Finding{}, false
	}
	if c, ok := ev.changeOfSummary(a); ok {
		a = c
	}
	if len(res.Hypotheses) > 0 && confidence(a) <= res.Hypotheses[0].GetConfidence() {
		return Finding{}, false
	}
	return a, true
}

// Markdown renders a diagnosis as a plain report (root cause, claims, chain,
// ruled out, unknowns, remediation).
func Markdown(d *investigationv1.Diagnosis) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Root cause\n\n%s\n\nCategory: %s. Entity: %s. Confidence: %.2f.\n", d.GetRootCause(),
		strings.ToLower(strings.TrimPrefix(d.GetCategory().String(), "ROOT_CAUSE_CATEGORY_")), d.GetRootCauseEntity(), d.GetConfidence())
	section := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", it)
		}
	}
	claims := func(cs []*investigationv1.Claim) []string {
		var out []string
		for _, c := range cs {
			s := c.GetClaim()
			if len(c.GetPinIds()) > 0 {
				s += " [" + strings.Join(c.GetPinIds(), ", ") + "]"
			}
			out = append(out, s)
		}
		return out
	}
	section("Validated claims", claims(d.GetValidatedClaims()))
	section("Non-validated claims", claims(d.GetNonValidatedClaims()))
	section("Causal chain", d.GetCausalChain())
	var ro []string
	for _, r := range d.GetRuledOut() {
		ro = append(ro, r.GetAlternative()+": "+r.GetReason())
	}
	section("Ruled out", ro)
	section("Unknowns", d.GetUnknowns())
	section("Remediation", d.GetRemediationSteps())
	return b.String()
}

// claimsText is the claims' text, lower-cased, one claim a line: what is
// already said, which a quote must not repeat.
func claimsText(groups ...[]*investigationv1.Claim) string {
	var b strings.Builder
	for _, g := range groups {
		for _, c := range g {
			b.WriteString(strings.ToLower(c.GetClaim()))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// keyClaims are quoted settings and lines as supported key-evidence
// claims citing their pins.
func keyClaims(refs []settingRef) []*investigationv1.Claim {
	var out []*investigationv1.Claim
	for _, st := range refs {
		out = append(out, &investigationv1.Claim{Claim: "Key evidence: " + st.text, Status: investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED, PinIds: st.cite.PinIDs})
	}
	return out
}

package analysis

import (
	"fmt"
	"regexp"
)

// A row of the cause-to-effect table for admission webhooks: the API
// server calls a validating or mutating webhook (a policy engine, a
// sidecar injector, a certificate manager) before it admits an object;
// when the webhook's service does not answer and its failure policy is
// Fail, every create of a matching object is refused ("failed calling
// webhook ... no endpoints available"), so replicas, Jobs and rollouts
// stall while their own code is fine. The webhook's service being down is
// the cause: a dependency failure, its workload the entity.

// ModeWebhookDown: an admission webhook's service does not answer.
const ModeWebhookDown = "webhook_down"

var (
	// reWebhookCall: the API server's error calling a webhook, with the
	// service URL it called.
	reWebhookCall = regexp.MustCompile(`(?i)failed calling webhook "?([^"\s:]+)"?[^\n]*?https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc\b`)
	// reWebhookDown: the call found nobody to answer.
	reWebhookCert = regexp.MustCompile(`(?i)x509|certificate`)
	reWebhookDown = regexp.MustCompile(`(?i)no endpoints available|connection refused|i/o timeout|context deadline exceeded|deadline exceeded|no route to host|service unavailable|\b503\b|\beof\b|connection reset|timed? ?out`)
)

func detectWebhookDown(ev *Evidence) []Finding {
	type call struct {
		hook, svc, ns, text string
		cite                Cite
		n                   int
	}
	var calls []*call
	add := func(text string, n int, c Cite) {
		m := reWebhookCall.FindStringSubmatch(text)
		if m == nil || !reWebhookDown.MatchString(text) || reWebhookCert.MatchString(text) {
			return // (a certificate the call refused is a setting: the certificate rows)
		}
		for _, x := range calls {
			if x.svc == m[2] && x.ns == m[3] {
				x.n += n
				x.cite.merge(c)
				return
			}
		}
		calls = append(calls, &call{hook: m[1], svc: m[2], ns: m[3], text: text, cite: c, n: n})
	}
	for _, e := range ev.Events {
		add(e.Message, max(1, int(e.Count)), e.Cite)
	}
	for _, l := range ev.Logs {
		add(l.Message, 1, l.Cite)
	}
	var out []Finding
	for _, c := range calls {
		// Below the findings that read why the webhook's own pods fail (out
		// of memory, crashing): their mechanism is the category when the
		// evidence has it.
		f := Finding{Mode: ModeWebhookDown, Category: catDependency, Score: 0.7, Entity: deploymentEntity(c.ns, c.svc)}
		f.Statement = fmt.Sprintf("The admission webhook %s does not answer (its service %s/%s): the API server refuses the objects it must check, %s (e.g. %s)",
			c.hook, c.ns, c.svc, plural(c.n, "refusal", "refusals"), quote(c.text))
		f.validated(fmt.Sprintf("The API server failed calling webhook %s: %s", c.hook, quote(c.text)), c.cite)
		f.inferred(fmt.Sprintf("A webhook whose failure policy is Fail blocks every create it matches while its service %s/%s has no ready endpoint: the workloads that cannot create pods are its victims", c.ns, c.svc))
		f.Chain = []string{
			fmt.Sprintf("The webhook's service %s/%s has no ready endpoint", c.ns, c.svc),
			fmt.Sprintf("The API server cannot call webhook %s and refuses matching creates", c.hook),
			"Replicas, Jobs and rollouts cannot create pods and the alert fires",
		}
		f.Remediation = []string{
			fmt.Sprintf("Bring %s/%s back (its pods, its endpoints)", c.ns, c.svc),
			"Exclude critical namespaces from the webhook (namespaceSelector) or give it failurePolicy Ignore where safe, and run it with several replicas and a PodDisruptionBudget",
		}
		f.Signals = []string{"webhook", c.hook, c.svc}
		for _, m := range []string{ModeAnomaly, ModeRolloutStuck, ModeUnschedulable, ModeQuotaExceeded, ModeDependencyFailure, ModeNoEndpoints, ModeTrafficSaturation} {
			f.explains(m, fmt.Sprintf("the refused creates are webhook %s's, which does not answer", c.hook))
		}
		out = append(out, f)
	}
	return out
}

package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rcamesh/rcamesh/internal/target"
)

// ModeNotPaged: the alert comes from an environment that is not paged
// (staging, development, test, ...): whatever the evidence shows there,
// no production action is needed.
const ModeNotPaged = "environment_not_paged"

// NonPagedEnvironments are environment names (compared case-insensitively,
// as a whole label value or a whole token of a cluster or namespace name)
// whose alerts need no production action. Package default; the brain
// passes its -brain.nonpaged-environments through Input.
var NonPagedEnvironments = []string{"staging", "stage", "stg", "dev", "development", "test", "testing", "qa", "uat", "sandbox", "preview", "perf", "loadtest", "demo", "sit", "nonprod", "non-prod"}

// explainsAll is the Explains key of a finding that accounts for every
// fault (the environment is not paged).
const explainsAll = "*"

// nonPagedSeries: the series' own environment label names an environment
// that is not paged (a staging soak test's errors).
func (ev *Evidence) nonPagedSeries(s Series) bool {
	v := strings.ToLower(target.Lookup(s.Labels, target.Environment))
	return v != "" && ev.nonPagedSet()[v]
}

// nonPagedSet is the environments that are not paged (the brain's list,
// else the package default), lower case.
func (ev *Evidence) nonPagedSet() map[string]bool {
	list := ev.NonPaged
	if list == nil {
		list = NonPagedEnvironments
	}
	set := make(map[string]bool, len(list))
	for _, e := range list {
		set[strings.ToLower(strings.TrimSpace(e))] = true
	}
	return set
}

func (ev *Evidence) nonPaged() (where, value string) {
	if ev.Alert == nil {
		return "", ""
	}
	set := ev.nonPagedSet()
	a := ev.Alert
	for _, m := range []map[string]string{a.GetLabels(), a.GetAnnotations()} {
		if v := target.Lookup(m, target.Environment); v != "" {
			if set[strings.ToLower(v)] {
				return "environment label", v
			}
			return "", "" // an explicit environment that is paged decides
		}
	}
	for _, f := range []struct{ what, v string }{{"cluster", a.GetCluster()}, {"namespace", a.GetNamespace()}} {
		toks := strings.FieldsFunc(strings.ToLower(f.v), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
		if slices.ContainsFunc(toks, func(t string) bool { return productionWords[t] }) {
			continue // "stage-lane-prod": a name that also says production is not a non-paged environment
		}
		for _, tok := range toks {
			if set[tok] {
				return f.what + " " + f.v, tok
			}
		}
	}
	return "", ""
}

// productionWords, as a token of a cluster or namespace name, say the name
// is production's whatever else it says.
var productionWords = map[string]bool{"prod": true, "production": true, "prd": true, "live": true}

// detectNotPaged: the alert's environment (its label, or a token of its
// cluster or namespace name) is one that is not paged. The finding explains
// every fault: they are reported as what the evidence shows there, not as
// a production incident.
func detectNotPaged(ev *Evidence) []Finding {
	where, env := ev.nonPaged()
	if env == "" {
		return nil
	}
	entity := firstNonEmptyStr(ev.workloadEntity(), "environment/"+env)
	f := healthyFinding(ModeNotPaged, entity, 0.9)
	f.Overrides = true
	f.explains(explainsAll, fmt.Sprintf("the alert comes from %s (%s), which is not paged", env, where))
	// The alert is not a pin: cite what the tools found in that
	// environment (its pods, else its errors), which the report describes.
	var seen Cite
	ns := ev.Alert.GetNamespace()
	var pods []Pod
	for _, p := range ev.Pods {
		if ns == "" || p.Namespace == ns {
			pods = append(pods, p)
		}
	}
	seen.merge(citesOfPods(pods))
	var errs []LogLine
	for _, l := range ev.Logs {
		if isErrorLog(l.LogLine) {
			errs = append(errs, l)
		}
	}
	seen.merge(citesOfLogs(errs))
	what := fmt.Sprintf("The alert's %s names environment %q, which is not a paged environment", where, env)
	if len(pods) > 0 || len(errs) > 0 {
		what += fmt.Sprintf("; the tools found %s and %s there", plural(len(pods), "pod", "pods"), plural(len(errs), "error line", "error lines"))
	}
	f.validated(what, seen)
	f.Statement = fmt.Sprintf("No production action needed: the alert %s comes from the %s environment (%s), which is not paged; what the evidence shows there is reported for the owning team, not as a production incident",
		quote(ev.Alert.GetAlertName()), env, where)
	f.Chain = []string{fmt.Sprintf("An alert rule also evaluates the %s environment", env), "It fires there and is routed to the on-call receiver", "The environment is not paged: the alert needs triage by its owners, not an incident"}
	f.Remediation = []string{fmt.Sprintf("Route %s alerts to the owning team's non-paging receiver (an Alertmanager route on the environment label)", env), "Review the findings below in that environment during working hours"}
	f.Signals = []string{"environment", env}
	return []Finding{f}
}

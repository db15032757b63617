package analysis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/textutil"
)

// ---- configuration read at start, changed after the pods started ----

// ModeStaleConfig: the workload's pods read a ConfigMap or Secret only at
// start (a file mounted with subPath, which the kubelet never refreshes;
// an env var, set when the container starts), the object changed after
// some of them started, and those pods fail since: they run the old
// configuration. Kubernetes documents both: a container using a ConfigMap
// as a subPath volume mount receives no updates, and env vars from a
// ConfigMap are not updated in running containers.
const ModeStaleConfig = "stale_config"

var (
	// reStartupMount: a container setting (Container.Settings) that mounts
	// a ConfigMap or Secret with subPath.
	reStartupMount = regexp.MustCompile(`^mount (\S+) from (configmap|secret) (\S+) subPath (\S+)`)
	// reStartupEnv: a container setting that sets env vars from a
	// ConfigMap or Secret ("env from configmap x", "env X from secret y key z").
	reStartupEnv = regexp.MustCompile(`^env (?:(\S+) )?from (configmap|secret) (\S+)`)
	// reConfigChanged: the words of a record that an object's content
	// changed.
	reConfigChanged = regexp.MustCompile(`(?i)\b(?:updated|changed|edited|patched|applied|rotated|modified|replaced|re-?keyed)\b`)
	// reIdentifierToken: a token that identifies a thing a configuration
	// points at (a host, a URL's host, a dashed or dotted name).
	reIdentifierToken = regexp.MustCompile(`[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+|[a-z0-9]+(?:-[a-z0-9]+)+`)
)

// staleConfigScore: pods that started before the change of what they read
// only at start, failing after it; more when the failures name what the
// change replaced.
const (
	staleConfigScore      = 0.72
	staleConfigNamedBonus = 0.1
)

// startupRead is a ConfigMap or Secret a workload's containers read only at
// start, and how.
type startupRead struct {
	kind, name, how string
}

// startupReads are the ConfigMaps and Secrets the pods of workload (ns,
// name) read only at start: from the Deployment's template settings and
// its pods' container settings.
func (ev *Evidence) startupReads(ns, name string) []startupRead {
	var settings []string
	for _, d := range ev.Deployments {
		if d.Name == name && (ns == "" || d.Namespace == "" || d.Namespace == ns) {
			settings = append(settings, d.Settings...)
		}
	}
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) != name || ns != "" && p.Namespace != "" && p.Namespace != ns {
			continue
		}
		for _, c := range p.Containers {
			settings = append(settings, c.Settings...)
		}
	}
	var out []startupRead
	seen := map[string]bool{}
	for _, st := range settings {
		var r startupRead
		if m := reStartupMount.FindStringSubmatch(st); m != nil {
			r = startupRead{kind: m[2], name: m[3], how: fmt.Sprintf("mounted at %s with subPath %s, which the kubelet never refreshes", m[1], m[4])}
		} else if m := reStartupEnv.FindStringSubmatch(st); m != nil {
			what := "env vars"
			if m[1] != "" {
				what = "env " + m[1]
			}
			r = startupRead{kind: m[2], name: m[3], how: what + ", set only when the container starts"}
		} else {
			continue
		}
		if k := r.kind + "/" + r.name; !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// configChange is the latest record before onset that the object (kind,
// name) changed: an edit of the object the change ledger read, or a line
// (not an error) that names it with the words of a change.
func (ev *Evidence) configChange(kind, name string, onset time.Time) (time.Time, string, Cite, bool) {
	var at time.Time
	var text string
	var cite Cite
	for _, c := range ev.ObjectChanges {
		if c.At == nil || !strings.EqualFold(c.Kind, kind) || c.Name != name || c.Action != "edited" || c.At.After(onset) {
			continue
		}
		if c.At.After(at) {
			at, text, cite = *c.At, objectChangeText(c.ObjectChange), c.Cite
		}
	}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Timestamp.After(onset) || isErrorLog(l.LogLine) {
			continue
		}
		if !textutil.ContainsWord(l.Message, name) || !reConfigChanged.MatchString(l.Message) {
			continue
		}
		if l.Timestamp.After(at) {
			at, text, cite = *l.Timestamp, fmt.Sprintf("%s log (%s, %s): %s", l.Cite.Source("logs"), logOrigin(l), hhmm(l.Timestamp), quote(l.Message)), l.Cite
		}
	}
	return at, text, cite, !at.IsZero()
}

// detectStaleConfig: a workload whose pods read a ConfigMap or Secret only
// at start, where the object changed after some of its pods started and
// its errors begin after the change, from those pods when the lines say
// which. A pod started after the change that does not fail is the
// contrast that confirms it; failures that name what the change record
// names (the old host, the retired endpoint) make it stronger.
func detectStaleConfig(ev *Evidence) []Finding {
	type wl struct{ ns, name string }
	var wls []wl
	seen := map[wl]bool{}
	for _, p := range ev.Pods {
		w := wl{p.Namespace, ev.workloadOf(p.Pod)}
		if w.name != "" && !seen[w] {
			seen[w] = true
			wls = append(wls, w)
		}
	}
	sort.Slice(wls, func(i, j int) bool { return wls[i].ns+"/"+wls[i].name < wls[j].ns+"/"+wls[j].name })
	var out []Finding
	allErrs := ev.errorLogs()
	for _, w := range wls {
		var errs []LogLine
		for _, l := range allErrs {
			if ev.logService(l) == w.name {
				errs = append(errs, l)
			}
		}
		podSeries, seriesCite := ev.failingPodSeries(w.name)
		if len(errs) == 0 && len(podSeries) == 0 {
			continue
		}
		sort.SliceStable(errs, func(i, j int) bool { return timeOrZero(errs[i].Timestamp).Before(timeOrZero(errs[j].Timestamp)) })
		var last time.Time
		if len(errs) > 0 {
			last = timeOrZero(errs[len(errs)-1].Timestamp)
		}
		for _, on := range podSeries {
			if on != nil && on.After(last) {
				last = *on
			}
		}
		for _, r := range ev.startupReads(w.ns, w.name) {
			tc, changeText, changeCite, ok := ev.configChange(r.kind, r.name, last)
			if !ok {
				continue
			}
			// The failures after the change.
			var after []LogLine
			for _, l := range errs {
				if l.Timestamp != nil && l.Timestamp.After(tc) {
					after = append(after, l)
				}
			}
			failingPods := map[string]bool{}
			for _, l := range after {
				if l.Pod != "" {
					failingPods[l.Pod] = true
				}
			}
			for pod, on := range podSeries {
				if on != nil && !on.Before(tc) {
					failingPods[pod] = true
				}
			}
			if len(after) == 0 && len(failingPods) == 0 {
				continue
			}
			stale, fresh := ev.podsStartedAround(w.ns, w.name, tc)
			if len(stale) == 0 {
				continue
			}
			podKnown := len(failingPods) > 0
			failingFresh := false
			for _, f := range fresh {
				failingFresh = failingFresh || failingPods[f]
			}
			if podKnown && failingFresh {
				continue // pods that read the new configuration fail too: not the stale copy
			}
			ent := "deployment/" + qualifiedName(w.ns, w.name)
			f := Finding{Mode: ModeStaleConfig, Category: catConfig, Entity: ent, Score: staleConfigScore, Settled: true}
			obj := r.kind + " " + qualifiedName(w.ns, r.name)
			f.validated(fmt.Sprintf("The pods of %s read %s only at start: %s", w.name, obj, r.how), ev.workloadCite(w.ns, w.name))
			f.validated("The "+r.kind+" changed after they started: "+changeText, changeCite)
			f.validated(fmt.Sprintf("%d of %d pods of %s started before the change and still run the configuration they read then: %s", len(stale), len(stale)+len(fresh), w.name, joinNames(stale)), ev.workloadCite(w.ns, w.name))
			failure := "its error series rose"
			var onset *time.Time
			if len(after) > 0 {
				onset = after[0].Timestamp
				failure = quote(clip(after[0].Message, 160))
				f.validated(fmt.Sprintf("%s fails since %s: %s", w.name, hhmm(onset), quote(clip(after[0].Message, 200))), citesOfLogs(after))
			}
			if len(failingPods) > 0 {
				pods := slices.Sorted(maps.Keys(failingPods))
				f.validated(fmt.Sprintf("The failing pods (%s) are among those started before the change", joinNames(pods)), seriesCite, citesOfLogs(after))
				for _, p := range pods {
					if on := podSeries[p]; on != nil && (onset == nil || on.Before(*onset)) {
						onset = on
					}
				}
			}
			named := ""
			if tok := sharedIdentifier(changeText, after); tok != "" {
				named = tok
				f.Score += staleConfigNamedBonus
				f.validated(fmt.Sprintf("The failures name %s, which the change record names too: the value the change replaced", quote(tok)), changeCite, citesOfLogs(after))
				// The failures to reach what the change replaced are this
				// stale copy's effect, not a fault of their own.
				why := "the failing calls go to " + quote(tok) + ", which the change to " + obj + " replaced; the pods still use it"
				f.Explains = map[string]string{ModeDNSFailure: why, ModeDependencyFailure: why}
			}
			if len(fresh) > 0 && podKnown {
				f.validated(fmt.Sprintf("The pods started after the change (%s) do not fail", joinNames(fresh)), ev.workloadCite(w.ns, w.name))
			}
			f.Statement = fmt.Sprintf("%s runs a stale copy of %s: its pods read it only at start (%s), the %s changed at %s, and %d of its pods started before that still use what they read then; they fail since %s (%s)",
				w.name, obj, r.how, r.kind, hhmm(&tc), len(stale), hhmm(onset), failure)
			if named != "" {
				f.Statement += fmt.Sprintf(", naming %s, which the change replaced", quote(named))
			}
			f.Chain = []string{
				fmt.Sprintf("The pods of %s read %s at start (%s)", w.name, obj, r.how),
				fmt.Sprintf("%s changes at %s; the running pods keep the old content", obj, hhmm(&tc)),
				fmt.Sprintf("The old configuration stops working; %s fails", w.name),
			}
			f.Remediation = []string{
				fmt.Sprintf("Restart %s (kubectl rollout restart deployment/%s) so every pod reads the current %s", w.name, w.name, r.kind),
				"Mount the " + r.kind + " without subPath (the kubelet refreshes a whole-volume mount), or roll the pods on each change (a checksum annotation of the config in the pod template)",
			}
			f.Signals = []string{"stale_config"}
			f.Sources = []string{"k8s", "logs"}
			out = append(out, f)
			break
		}
	}
	return out
}

// failingPodSeries are the pods of workload whose own error series rose,
// each with the rise's onset, and the series' pins: which pods fail when
// their logs were not all read.
func (ev *Evidence) failingPodSeries(workload string) (map[string]*time.Time, Cite) {
	out := map[string]*time.Time{}
	var c Cite
	for _, sr := range ev.Series {
		pod := sr.Labels["pod"]
		if pod == "" || seriesKindOf(sr.Series) != "errors" || !failingSeries(sr) {
			continue
		}
		for _, p := range ev.Pods {
			if p.Name == pod && ev.workloadOf(p.Pod) == workload {
				out[pod] = riseOf(asRate(sr.Series)).onset
				c.merge(sr.Cite)
			}
		}
	}
	return out, c
}

// podsStartedAround splits the pods of workload (ns, name) with a known
// start into those started before t (stale: they read the configuration
// before it changed) and those started since (fresh).
func (ev *Evidence) podsStartedAround(ns, name string, t time.Time) (stale, fresh []string) {
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) != name || ns != "" && p.Namespace != "" && p.Namespace != ns {
			continue
		}
		st := podStarted(p)
		if st == nil {
			continue
		}
		if st.Before(t) {
			stale = append(stale, p.Name)
		} else {
			fresh = append(fresh, p.Name)
		}
	}
	return stale, fresh
}

// sharedIdentifier is an identifier (a host, a dashed name) that the
// change record and a failure line both carry: what the failures still
// use that the change names.
func sharedIdentifier(change string, lines []LogLine) string {
	low := strings.ToLower(change)
	tokens := reIdentifierToken.FindAllString(low, -1)
	sort.SliceStable(tokens, func(i, j int) bool { return len(tokens[i]) > len(tokens[j]) })
	for _, t := range tokens {
		if len(t) < 6 || strings.Count(t, "-") == 0 && strings.Count(t, ".") == 0 {
			continue
		}
		for _, l := range lines {
			if textutil.ContainsWord(strings.ToLower(l.Message), t) {
				return t
			}
		}
	}
	return ""
}

// workloadCite is the pins of the workload's pods and Deployment.
func (ev *Evidence) workloadCite(ns, name string) Cite {
	var c Cite
	for _, p := range ev.Pods {
		if ev.workloadOf(p.Pod) == name && (ns == "" || p.Namespace == "" || p.Namespace == ns) {
			c.merge(p.Cite)
		}
	}
	for _, d := range ev.Deployments {
		if d.Name == name && (ns == "" || d.Namespace == "" || d.Namespace == ns) {
			c.merge(d.Cite)
		}
	}
	return c
}

// timeOrZero is *t, or the zero time.
func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

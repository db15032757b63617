package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// The change ledger's kinds, and what a change of each kind that precedes
// an onset makes of the failure (the cause side of the cause-to-effect
// table in causes.go).
const (
	changeCode     = "code"     // a release of new code
	changeConfig   = "config"   // a setting, flag, values file, ConfigMap, policy or limit
	changeInfra    = "infra"    // nodes, OS, kernel, network, zones
	changeData     = "data"     // a file, batch, dataset or table loaded
	changeCapacity = "capacity" // replicas, autoscaler bounds, quotas
)

// reChangeAnnouncement: a log line that announces a change (not an error):
// SRE vocabulary for edits, toggles, syncs, upgrades and loads.
var reChangeAnnouncement = regexp.MustCompile(`(?i)\b(enabled|disabled|toggled|flipped|turned (?:on|off)|switched|changed|updated|set to|applied|reloaded|re-?configured|synced|sync(?:ed)? (?:to|revision)|rolled out|upgraded|upgrading|downgraded|patched|rotated|drained|cordoned|migrated|imported|loaded|ingested|published|promoted|scaled (?:to|down|up)|resized|lowered|raised|rebooted|replaced)\b`)

var changeKinds = []struct {
	kind string
	re   *regexp.Regexp
}{
	{changeInfra, regexp.MustCompile(`(?i)\b(node|nodes|kernel|os|operating system|ami|image family|kubelet|containerd|cni|calico|cilium|route|routes|bgp|zone|az|availability zone|drain(ed)?|cordon(ed)?|reboot(ed)?|unattended-upgrades?|systemd|firmware|host)\b`)},
	{changeData, regexp.MustCompile(`(?i)\b(file|batch|dataset|feed|import(ed)?|ingest(ed)?|load(ed)?|csv|parquet|table|rows|records|snapshot|export|upload(ed)?|feature file|reference data)\b`)},
	{changeCapacity, regexp.MustCompile(`(?i)\b(replicas?|maxreplicas|minreplicas|hpa|autoscal\w*|keda|scaledobject|quota|limitrange|pool size|max_?connections|capacity)\b`)},
	{changeConfig, regexp.MustCompile(`(?i)\b(flag|feature|toggle|config|configuration|configmap|setting|settings|values|env|environment variable|parameter|property|secret|policy|networkpolicy|certificate|ca bundle|trust ?store|rule|rules|schedule|timeout|retry|dns|ndots|resolv|priorityclass|pdb|poddisruptionbudget|label|selector|annotation)\b`)},
}

// changeKindOf classifies the text of a change.
func changeKindOf(text string) string {
	for _, k := range changeKinds {
		if k.re.MatchString(text) {
			return k.kind
		}
	}
	return ""
}

// commitKind: a commit that changes only settings is a configuration
// change; anything else is code.
func commitKind(c facts.Commit) string {
	types := append([]string(nil), c.ChangeTypes...)
	for _, f := range c.Files {
		if f.ChangeType != "" {
			types = append(types, f.ChangeType)
		}
	}
	if len(types) == 0 {
		if k := changeKindOf(c.Message); k == changeConfig || k == changeCapacity {
			return changeConfig
		}
		return changeCode
	}
	if buildEnvironmentOnly(c) || manifestsOnly(c) {
		return changeConfig
	}
	for _, t := range types {
		if t != facts.ChangeConfig && t != facts.ChangeTimeoutRetry {
			return changeCode
		}
	}
	for _, f := range c.Files {
		if reProgramFile.MatchString(f.Path) && f.ChangeType != facts.ChangeConfig {
			// A timeout or retry written in a program's source (a retry
			// helper wrapped around a call) is code, not a setting.
			return changeCode
		}
	}
	return changeConfig
}

// reManifestFile: a file of a deployment's manifests (a Helm chart's
// Chart.yaml, lock and values, a kustomization, a helmfile, a chart's
// templates), not of the program it deploys.
var reManifestFile = regexp.MustCompile(`(?i)(^|/)(chart\.ya?ml|chart\.lock|requirements\.ya?ml|values[^/]*\.ya?ml|kustomization\.ya?ml|helmfile[^/]*\.ya?ml)$|(^|/)templates/[^/]+\.(ya?ml|tpl)$`)

// manifestsOnly: every file the commit touches is a deployment manifest (a
// chart bumped is its manifests changed: configuration, whatever change
// type the bump carries).
func manifestsOnly(c facts.Commit) bool {
	if len(c.Files) == 0 {
		return false
	}
	imageBump := true
	for _, f := range c.Files {
		if !reManifestFile.MatchString(f.Path) {
			return false
		}
		if f.ChangeType != facts.ChangeDependencyBump || !reValuesFile.MatchString(f.Path) {
			imageBump = false
		}
	}
	// An image tag bumped in a values file releases that image's new
	// software: a release, not a setting.
	return !imageBump
}

// reValuesFile: a chart's values file.
var reValuesFile = regexp.MustCompile(`(?i)(^|/)values[^/]*\.ya?ml$`)

// reProgramFile: a file of program source, not of settings.
var reProgramFile = regexp.MustCompile(`(?i)\.(go|py|java|kt|kts|scala|js|mjs|cjs|jsx|ts|tsx|rb|rs|cs|fs|php|c|cc|cpp|h|hpp|swift|m|ex|exs|erl|clj|lua|pl|sh)$`)

// reBuildEnvFile: a file that names what the service is built and run on
// (its container image's base, its language toolchain's version), not the
// code or libraries it links.
var reBuildEnvFile = regexp.MustCompile(`(?i)(^|/)((docker|container)file[^/]*|[^/]+\.(docker|container)file|go\.mod|go\.sum|\.tool-versions|\.nvmrc|\.node-version|\.python-version|\.ruby-version|\.java-version|runtime\.txt)$`)

// reContainerFile: a container build file.
var reContainerFile = regexp.MustCompile(`(?i)(^|/)((docker|container)file[^/]*|[^/]+\.(docker|container)file)$`)

// buildEnvironmentOnly: a commit that changes only the build environment
// (a container build file, with the toolchain's version files), as a
// version bump or a setting: a base image or toolchain change is build
// configuration, whatever its defaults then change at run time.
func buildEnvironmentOnly(c facts.Commit) bool {
	if len(c.Files) == 0 {
		return false
	}
	container := false
	for _, f := range c.Files {
		if !reBuildEnvFile.MatchString(f.Path) || f.ChangeType != "" && f.ChangeType != facts.ChangeConfig && f.ChangeType != facts.ChangeDependencyBump {
			return false
		}
		container = container || reContainerFile.MatchString(f.Path)
	}
	for _, t := range c.ChangeTypes {
		if t != facts.ChangeConfig && t != facts.ChangeDependencyBump {
			return false
		}
	}
	return container
}

// announcedChanges are the non-error log lines that announce a change,
// each classified by what it changes.
func (ev *Evidence) announcedChanges() []changeRef {
	var out []changeRef
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || !announcesChange(l.Message) {
			continue
		}
		kind := changeKindOf(l.Message)
		if kind == "" {
			continue
		}
		out = append(out, changeRef{
			text: fmt.Sprintf("%s change announced by %s at %s: %s", kind, logOrigin(l), hhmm(l.Timestamp), quote(l.Message)),
			at:   l.Timestamp, kind: kind, cite: l.Cite, commits: ev.commitsNamed(l.Message), commitIDs: commitIDs(l.Message),
		})
	}
	return append(out, ev.dbEventChanges()...)
}

// reCommitID: a token that reads as a commit id (7 to 40 hex digits, with
// letters and digits both).
var reCommitID = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// commitIDs are the commit-like tokens of text; a part of a dashed name (a
// UUID's group, a pod's hash) is not one.
func commitIDs(text string) []string {
	low := strings.ToLower(text)
	var out []string
	for _, m := range reCommitID.FindAllStringIndex(low, -1) {
		t := low[m[0]:m[1]]
		if m[0] > 0 && low[m[0]-1] == '-' || m[1] < len(low) && low[m[1]] == '-' {
			continue
		}
		if strings.IndexFunc(t, func(r rune) bool { return r >= 'a' && r <= 'f' }) >= 0 && strings.IndexFunc(t, func(r rune) bool { return r >= '0' && r <= '9' }) >= 0 {
			out = appendUnique(out, t)
		}
	}
	return out
}

// commitsNamed are the commits of the evidence a record names by id (a
// sync or upgrade of "cluster-addons 1f6d3b8"): what the change shipped,
// in its authors' words.
func (ev *Evidence) commitsNamed(text string) []Commit {
	var out []Commit
	for _, id := range commitIDs(text) {
		for _, c := range ev.Commits {
			if sha := strings.ToLower(c.SHA); len(sha) >= 7 && (strings.HasPrefix(sha, id) || strings.HasPrefix(id, sha)) {
				out = append(out, c)
			}
		}
	}
	return out
}

var (
	// reDBModification: a database event that records a modification.
	reDBModification = regexp.MustCompile(`(?i)\b(applying|applied|modification|modified|updated parameter|parameter group)\b`)
	// reParameterGroup: the parameter group a database event names.
	reParameterGroup = regexp.MustCompile(`(?i)\bparameter group ([A-Za-z0-9][A-Za-z0-9._-]*)`)
)

// reAlarmRaised: a system reporting an alarm, alert or error of its own
// ("alarm raised alarm=NOSPACE"): a symptom, not a change anyone made.
var reAlarmRaised = regexp.MustCompile(`(?i)\b(alarms?|alerts?|exceptions?|errors?|warnings?|incidents?)\s+(raised|triggered|fired)\b|\b(raised|triggered|fired)\s+(an?\s+)?(alarm|alert|exception|error|warning|incident)\b`)

// announcesChange: text announces a change someone or something made, not
// an alarm a system raised.
func announcesChange(text string) bool {
	return reChangeAnnouncement.MatchString(text) && !reAlarmRaised.MatchString(text)
}

// dbEventChanges are the changes a managed database's own events record
// (a parameter group's modification applied at a reboot, an instance
// modified), each classified by what it changes; a parameter group's
// modification is a setting whenever it is applied, the group its entity.
func (ev *Evidence) dbEventChanges() []changeRef {
	var out []changeRef
	for _, e := range ev.DBEvents {
		if e.Time == nil || !reChangeAnnouncement.MatchString(e.Message) && !reDBModification.MatchString(e.Message) {
			continue
		}
		kind, entity := changeKindOf(e.Message), ""
		if m := reParameterGroup.FindStringSubmatch(e.Message); m != nil {
			kind, entity = changeConfig, "dbparametergroup/"+m[1]
		}
		if kind == "" {
			continue
		}
		out = append(out, changeRef{
			text: fmt.Sprintf("%s change recorded by the database %s at %s: %s", kind, firstNonEmptyStr(e.SourceID, "instance"), hhmm(e.Time), quote(e.Message)),
			at:   e.Time, kind: kind, cite: e.Cite, entity: entity,
		})
	}
	return out
}

// changeVoteWindow: a non-release change this close before the onset is a
// suspect.
const changeVoteWindow = 45 * time.Minute

// objectChangeKind classifies an object's creation or edit by what it
// touches: a container image is a release, replica counts and autoscaler
// or quota bounds are capacity, a node's schedulability or taints is
// infrastructure, anything else an operator edits (settings, flags,
// policies, budgets, priorities, labels, schedules) is configuration.
func objectChangeKind(c facts.ObjectChange) string {
	kind := strings.ToLower(c.Kind)
	for _, f := range c.Fields {
		if strings.HasSuffix(f, ".image") {
			return changeCode
		}
	}
	if kind == "node" {
		if c.Action == "created" {
			return changeInfra // a node joining (autoscaling, upgrade surge) is infrastructure churn
		}
		for _, f := range c.Fields {
			if strings.HasPrefix(f, "spec.unschedulable") || strings.HasPrefix(f, "spec.taints") {
				return changeInfra
			}
		}
		return changeConfig
	}
	if strings.Contains(kind, "autoscal") || strings.Contains(kind, "scaled") || kind == "resourcequota" || kind == "limitrange" {
		return changeCapacity
	}
	switch kind {
	case "deployment", "statefulset", "daemonset", "replicaset":
		if c.Action == "created" {
			return changeCode // a new workload, or a rollout's new ReplicaSet, ships its image
		}
	}
	for _, f := range c.Fields {
		if leaf := f[strings.LastIndex(f, ".")+1:]; strings.Contains(strings.ToLower(leaf), "replica") {
			return changeCapacity
		}
	}
	return changeConfig
}

// objectChangeText renders one object change for the ledger and report.
func objectChangeText(c facts.ObjectChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s at %s", c.Kind, qualifiedName(c.Namespace, c.Name), c.Action, hhmm(c.At))
	if c.Manager != "" {
		fmt.Fprintf(&b, " by %s", c.Manager)
	}
	if len(c.Fields) > 0 {
		fmt.Fprintf(&b, " (fields: %s)", strings.Join(c.Fields, ", "))
	}
	if c.Note != "" {
		fmt.Fprintf(&b, ": %s", quote(c.Note))
	}
	return b.String()
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// objectChanges are the ledger rows of object creations and edits. A
// change is related to the alert when it is in the alert's namespace, is
// cluster-scoped, or its spec refers to an entity the alert names (a
// scaler's queue, a policy's target); other changes stay in the ledger,
// marked as elsewhere.
func (ev *Evidence) objectChanges() []changeRef {
	ns := ev.alertNamespace()
	var out []changeRef
	for _, c := range ev.ObjectChanges {
		if c.At == nil || (strings.EqualFold(c.Kind, "Node") && c.Action == "created") {
			continue // a node joining (autoscaling, an upgrade's surge) is churn, not a change anyone made
		}
		related := c.Namespace == "" || ns == "" || c.Namespace == ns || ev.namedByAlert(c.Refs)
		kind := objectChangeKind(c.ObjectChange)
		text := objectChangeText(c.ObjectChange)
		if !related {
			text += " (another namespace)"
		}
		entity := strings.ToLower(c.Kind) + "/" + qualifiedName(c.Namespace, c.Name)
		out = append(out, changeRef{text: text, at: c.At, kind: kind, deploy: kind == changeCode, cite: c.Cite, unrelated: !related, entity: entity, commits: ev.commitsApplied(c.ObjectChange, text)})
	}
	return out
}

// appliedCommitLookback: a commit this long before an object change can be
// what the change applied (a merge, then a sync or an apply).
const appliedCommitLookback = 24 * time.Hour

// commitsApplied is the commit an object change applied: the latest
// commit before it, within appliedCommitLookback, whose identifiers (the
// object's name, a field, a file) recur in the change's text. Its words
// (and its description) say what the change did.
func (ev *Evidence) commitsApplied(c facts.ObjectChange, text string) []Commit {
	if c.At == nil {
		return nil
	}
	var best *Commit
	for i := range ev.Commits {
		cm := &ev.Commits[i]
		if cm.Removed || cm.Timestamp == nil || cm.Timestamp.After(*c.At) || c.At.Sub(*cm.Timestamp) > appliedCommitLookback {
			continue
		}
		ctext := cm.Message + " " + cm.Summary
		for _, f := range cm.Files {
			ctext += " " + f.Path
		}
		if len(sharedIdentifiers(ctext, []string{text})) == 0 {
			continue
		}
		if best == nil || cm.Timestamp.After(*best.Timestamp) {
			best = cm
		}
	}
	if best == nil {
		return nil
	}
	return []Commit{*best}
}

// namedByAlert: one of refs names an entity of the alert (equal, or one
// extends the other at a separator: queue "vitals.hr" and
// "vitals.hr.v2").
func (ev *Evidence) namedByAlert(refs []string) bool {
	if ev.Alert == nil || len(refs) == 0 {
		return false
	}
	var vals []string
	for _, m := range []map[string]string{ev.Alert.GetLabels(), ev.Alert.GetAnnotations()} {
		for _, v := range m {
			if len(v) >= 4 && !strings.ContainsAny(v, " \n") {
				vals = append(vals, v)
			}
		}
	}
	for _, r := range refs {
		for _, v := range vals {
			if r == v || extendsName(r, v) || extendsName(v, r) {
				return true
			}
		}
	}
	return false
}

// extendsName: long is short followed by a separator and more.
func extendsName(long, short string) bool {
	return len(short) >= 4 && len(long) > len(short) && strings.HasPrefix(long, short) && strings.ContainsRune(".-_/:", rune(long[len(short)]))
}

// Weights of a change's vote (the cause side of the table). A change that
// precedes the onset closely is a stronger cause than the mechanism words
// of its effects: errors that read like exceptions or exhaustion are how a
// bad flag, budget or priority shows, not a second cause. A change whose
// own identifiers (the flag, the object, the setting) recur in the failing
// entity's errors is singled out further (specificity).
const (
	changeVoteBase     = 2.0
	changeVoteNear     = 4.0 // added when the change is within changeNearWindow of the onset
	changeVoteSpecific = 3.0 // added when its identifiers recur in the symptoms
	changeNearWindow   = 15 * time.Minute
	// codeWithoutRelease scales the code-defect vote of exceptions when no
	// release precedes the onset (twice when another change explains them).
	codeWithoutRelease = 0.5
)

func changeWeight(c *changeRef, onset time.Time, top *candidate) float64 {
	w := changeVoteBase
	if gap := onset.Sub(*c.at); gap <= changeNearWindow && !c.unrelated {
		w += changeVoteNear
	}
	if top != nil && len(sharedIdentifiers(c.text, top.symptomTexts())) > 0 {
		w += changeVoteSpecific
	}
	return w
}

// reIdentifier: a token that names something specific (a dotted, dashed
// or underscored name, or a CamelCase word), not an English word.
var reIdentifier = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:[._/-][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+`)

// sharedIdentifiers are the identifiers of text that occur in any of the
// texts, longest first.
func sharedIdentifiers(text string, texts []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, tok := range reIdentifier.FindAllString(text, -1) {
		// A path or a dotted name (kafka/topics/meter-events,
		// meter-events.retention) names its parts too: each part that is
		// an identifier itself is matched on its own.
		ids := []string{tok}
		if parts := strings.FieldsFunc(tok, func(r rune) bool { return r == '/' || r == '.' }); len(parts) > 1 {
			for _, p := range parts {
				if reIdentifier.FindString(p) == p {
					ids = append(ids, p)
				}
			}
		}
		for _, id := range ids {
			if len(id) < 6 || seen[id] {
				continue
			}
			seen[id] = true
			if slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, id) }) {
				out = append(out, id)
				break // one identifier per token: the whole, else its first part that matches
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// ReleasesUnread reports whether the lead is not a healthy reading and a deploy of the
// ledger within changeLookback before the alert shipped commits no pin has
// read: what it changed (code or settings only) decides its kind, and is
// in the commits of every service.
func (r Result) ReleasesUnread() bool {
	if r.ev == nil || len(r.Findings) > 0 && r.Findings[0].Healthy {
		return false
	}
	at := r.ev.alertTime()
	if at == nil {
		return false
	}
	for _, d := range r.ev.Deploys {
		t := d.FinishedAt
		if t == nil {
			t = d.StartedAt
		}
		if t == nil || t.After(at.Add(time.Minute)) || at.Sub(*t) > changeLookback || d.Revision == "" {
			continue
		}
		if len(r.ev.releaseCommits(d.Deploy)) == 0 {
			return true
		}
	}
	// A change record before the alert that names a commit no pin read.
	for _, c := range r.ev.announcedChanges() {
		if c.at != nil && !c.at.After(at.Add(time.Minute)) && at.Sub(*c.at) <= changeLookback && len(c.commitIDs) > 0 && len(c.commits) == 0 {
			return true
		}
	}
	return false
}

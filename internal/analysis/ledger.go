package analysis

import (
	"fmt"
	"regexp"
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
	for _, t := range types {
		if t != facts.ChangeConfig && t != facts.ChangeTimeoutRetry {
			return changeCode
		}
	}
	return changeConfig
}

// announcedChanges are the non-error log lines that announce a change,
// each classified by what it changes.
func (ev *Evidence) announcedChanges() []changeRef {
	var out []changeRef
	for _, l := range ev.Logs {
		if l.Timestamp == nil || isErrorLog(l.LogLine) || !reChangeAnnouncement.MatchString(l.Message) {
			continue
		}
		kind := changeKindOf(l.Message)
		if kind == "" {
			continue
		}
		out = append(out, changeRef{
			text: fmt.Sprintf("%s change announced by %s at %s: %s", kind, logOrigin(l), hhmm(l.Timestamp), quote(l.Message)),
			at:   l.Timestamp, kind: kind, cite: l.Cite,
		})
	}
	return out
}

// changeVoteWindow: a non-release change this close before the onset is a
// suspect.
const changeVoteWindow = 45 * time.Minute

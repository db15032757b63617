package analysis

import (
	"fmt"
	"regexp"
	"strings"
)

// A row of the cause-to-effect table for a consumer's position in a log
// (Kafka, and any broker that keeps committed offsets for a retention
// time): a group that stopped longer than the broker keeps its offsets
// loses them; when it comes back it finds no committed offset and starts
// where its reset policy says (the earliest message), so it processes
// again what it had processed: duplicates downstream. The settings (offset
// retention against the group's downtime, the reset policy) are the cause,
// a configuration error of the consumer; the duplicates are the symptom.

// ModeOffsetReset: a consumer group's committed offsets expired or were
// reset and it replays.
const ModeOffsetReset = "offset_reset"

var (
	// reOffsetLost: a broker or a consumer saying the group's committed
	// position is gone and where it restarts.
	reOffsetLost = regexp.MustCompile(`(?i)\bremoved \d+ expired offsets?\b|\bfound no committed offset\b|\bno committed offset\b|\bresetting (?:the )?offset\b|\bresetting offset for\b|\boffsets? (?:expired|were deleted)\b|\boffset out of range\b[^\n]{0,60}\breset`)
	// reOffsetGroup: the group a line names.
	reOffsetGroup = regexp.MustCompile(`(?i)\b(?:group(?:[ _]?id)?)\s*[=:]?\s*"?([A-Za-z][\w.-]{2,})"?`)
)

func detectOffsetReset(ev *Evidence) []Finding {
	var lines []LogLine
	for _, l := range ev.Logs {
		if reOffsetLost.MatchString(l.Message) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	// The consumer: the group the lines name when a workload of the
	// evidence has that name, else the service that says it lost its
	// position.
	known := ev.knownWorkloads()
	consumer := ""
	for _, l := range lines {
		for _, m := range reOffsetGroup.FindAllStringSubmatch(l.Message, -1) {
			for _, k := range known {
				if strings.EqualFold(k, m[1]) {
					consumer = k
				}
			}
		}
	}
	if consumer == "" {
		for _, l := range lines {
			if svc := ev.logService(l); svc != "" && !strings.Contains(strings.ToLower(svc), "kafka") && !strings.Contains(strings.ToLower(svc), "broker") {
				consumer = svc
				break
			}
		}
	}
	if consumer == "" {
		return nil
	}
	ns := ""
	for _, l := range ev.Logs {
		if ev.logService(l) == consumer && l.Namespace != "" {
			ns = l.Namespace
			break
		}
	}
	if ns == "" {
		ns = ev.alertField("namespace", "kube_namespace")
	}
	f := Finding{Mode: ModeOffsetReset, Category: catConfig, Score: 0.78, Entity: deploymentEntity(ns, consumer)}
	l := lines[0]
	f.Statement = fmt.Sprintf("%s lost its committed position in the log and restarted from where its reset policy points, processing again what it had processed: %s (e.g. %s)",
		consumer, plural(len(lines), "record of it", "records of it"), quote(l.Message))
	for _, x := range representative(lines, 2) {
		f.validated(fmt.Sprintf("%s log (%s, %s): %s", x.Cite.Source("logs"), logOrigin(x), logLevel(x.LogLine), quote(x.Message)), citesOfLogs(sameSig(lines, x)))
	}
	// Why it was gone: the group stopped (scaled to zero, paused) before.
	if first := l.Timestamp; first != nil {
		for _, x := range ev.Logs {
			if x.Timestamp == nil || !x.Timestamp.Before(*first) || !strings.Contains(strings.ToLower(x.Message), strings.ToLower(consumer)) {
				continue
			}
			if reStopped.MatchString(x.Message) {
				f.validated(fmt.Sprintf("%s log (%s, %s) at %s: %s", x.Cite.Source("logs"), logOrigin(x), logLevel(x.LogLine), hhmm(x.Timestamp), quote(x.Message)), x.Cite)
				f.inferred(fmt.Sprintf("%s stopped consuming at %s, longer than the broker keeps a group's offsets", consumer, hhmm(x.Timestamp)))
				break
			}
		}
	}
	f.inferred("The broker deletes a group's committed offsets after its offset retention once the group has no member; a group that comes back after that starts from its auto.offset.reset position, the earliest message, and replays")
	f.Chain = []string{
		fmt.Sprintf("%s stops longer than the broker's offset retention", consumer),
		"Its committed offsets expire; on return it finds none and resets to the earliest message",
		"It processes old messages again: duplicates downstream",
	}
	f.Remediation = []string{
		"Raise the broker's offset retention (offsets.retention.minutes) above the longest planned stop of a group, or commit offsets elsewhere",
		fmt.Sprintf("Make %s's processing idempotent and set auto.offset.reset to what a lost position should mean for it", consumer),
	}
	f.Signals = []string{"offsets", consumer}
	for _, m := range []string{ModeConsumerLag, ModeAnomaly, ModeDependencyFailure, ModeTrafficSaturation, ModeDataQuality} {
		f.explains(m, fmt.Sprintf("%s replays old messages after its offsets were lost", consumer))
	}
	return []Finding{f}
}

// reStopped: a workload stopped or paused (scaled to zero, suspended).
var reStopped = regexp.MustCompile(`(?i)\b(?:scaled? (?:\S+ )*?to 0\b|to 0 replicas|scale(?:d)? down to zero|paused|suspended|stopped)`)

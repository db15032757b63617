package brain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/target"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// RelatedAlertPrefix prefixes the annotations that carry the other alerts of
// one incident on its primary alert (related_alert_1, related_alert_2, ...).
const RelatedAlertPrefix = "related_alert_"

// maxRelatedAlerts bounds how many other alerts of one payload are carried
// on the primary (the rest are counted, not copied).
const maxRelatedAlerts = 50

// groupIncident makes the firing alerts of one payload one incident with
// several symptoms: the sender grouped them (an Alertmanager group, a
// Grafana notification), so they are investigated together, once, and
// every one of them is named in the investigation and its report. The
// primary is the first firing alert; the others ride on it as
// related_alert_N annotations (name, summary, the labels that name
// entities), its window spans them all, its severity is the highest, and
// scope fields it lacks (namespace, service, pod, cluster) are taken from
// the first alert that has them. Noise stays separate; resolutions beside
// firing alerts are recorded (they attach to the incident they end); a
// payload of resolutions only is one incident, investigated once.
func groupIncident(alerts []*investigationv1.Alert) []*investigationv1.Alert {
	var firing, resolved []int
	for i, a := range alerts {
		switch {
		case a.GetIsNoise():
		case a.GetResolved():
			resolved = append(resolved, i)
		default:
			firing = append(firing, i)
		}
	}
	if len(firing) == 0 {
		// A payload of resolutions only: why they fired is investigated
		// once, as one incident.
		firing = resolved
	} else if len(resolved) > 0 {
		// Resolutions beside firing alerts: the firing ones are the
		// incident; each resolution attaches to the open incident it ends,
		// or is recorded, not investigated apart.
		alerts = slices.Clone(alerts)
		for _, i := range resolved {
			a := proto.CloneOf(alerts[i])
			a.IsNoise = true
			a.NoiseReason = "resolved: the alert is no longer firing (state " + firstNonEmpty(a.GetState(), "resolved") + "), beside firing alerts of its group"
			alerts[i] = a
		}
	}
	if len(firing) < 2 {
		return alerts
	}
	primary := proto.CloneOf(alerts[firing[0]])
	if primary.Annotations == nil {
		primary.Annotations = map[string]string{}
	}
	names := []string{primary.GetAlertName()}
	for n, i := range firing[1:] {
		a := alerts[i]
		names = append(names, a.GetAlertName())
		if n < maxRelatedAlerts {
			primary.Annotations[fmt.Sprintf("%s%d", RelatedAlertPrefix, n+1)] = describeAlert(a)
		}
		primary.Namespace = firstNonEmpty(primary.GetNamespace(), a.GetNamespace())
		primary.Service = firstNonEmpty(primary.GetService(), a.GetService())
		primary.Pod = firstNonEmpty(primary.GetPod(), a.GetPod())
		primary.Cluster = firstNonEmpty(primary.GetCluster(), a.GetCluster())
		// Entities only another alert names (its node, database, queue,
		// workload) become the incident's too, so planning reaches them.
		for _, k := range []target.Kind{target.Node, target.Database, target.Deployment, target.StatefulSet, target.Queue, target.ConsumerGroup, target.Ingress} {
			if v := target.Lookup(a.GetLabels(), k); v != "" && target.Lookup(primary.GetLabels(), k) == "" && target.Lookup(primary.GetAnnotations(), k) == "" {
				primary.Annotations[target.CanonicalKey(k)] = v
			}
		}
		if severityRank(a.GetSeverity()) > severityRank(primary.GetSeverity()) {
			primary.Severity = a.GetSeverity()
		}
		if s := a.GetStartsAt(); s != nil && (primary.GetStartsAt() == nil || s.AsTime().Before(primary.GetStartsAt().AsTime())) {
			primary.StartsAt = proto.CloneOf(s)
		}
		primary.IncidentWindow = unionWindow(primary.GetIncidentWindow(), a.GetIncidentWindow())
	}
	primary.Annotations["rcamesh_incident_alerts"] = fmt.Sprintf("%d alerts in one incident: %s", len(firing), strings.Join(uniqueStrings(names), ", "))
	primary.Fingerprint = intake.GroupFingerprint(alertsAt(alerts, firing))
	out := []*investigationv1.Alert{primary}
	for _, a := range alerts {
		if a.GetIsNoise() {
			out = append(out, a)
		}
	}
	return out
}

func alertsAt(alerts []*investigationv1.Alert, idx []int) []*investigationv1.Alert {
	out := make([]*investigationv1.Alert, 0, len(idx))
	for _, i := range idx {
		out = append(out, alerts[i])
	}
	return out
}

// describeAlert is one line naming an alert: its name, summary and the
// labels that name entities.
func describeAlert(a *investigationv1.Alert) string {
	var b strings.Builder
	b.WriteString(firstNonEmpty(a.GetAlertName(), a.GetTitle()))
	if s := firstNonEmpty(a.GetSummary(), a.GetDescription()); s != "" && s != a.GetAlertName() {
		b.WriteString(": " + s)
	}
	keys := make([]string, 0, len(a.GetLabels()))
	for k := range a.GetLabels() {
		if k != "alertname" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var kv []string
	for _, k := range keys {
		kv = append(kv, k+"="+a.GetLabels()[k])
	}
	if len(kv) > 0 {
		b.WriteString(" {" + strings.Join(kv, ", ") + "}")
	}
	s := b.String()
	if len(s) > 1000 {
		s = textutil.Truncate(s, 1000)
	}
	return s
}

func severityRank(s string) int {
	switch strings.ToLower(s) {
	case "critical", "page", "p1", "high", "error", "emergency", "fatal":
		return 3
	case "warning", "warn", "p2", "p3", "medium", "major":
		return 2
	case "info", "low", "p4", "p5", "minor":
		return 1
	}
	return 0
}

func unionWindow(a, b *evidencev1.TimeWindow) *evidencev1.TimeWindow {
	if a == nil {
		return proto.CloneOf(b)
	}
	if b == nil {
		return a
	}
	out := proto.CloneOf(a)
	if b.GetStart() != nil && (out.GetStart() == nil || b.GetStart().AsTime().Before(out.GetStart().AsTime())) {
		out.Start = timestamppb.New(b.GetStart().AsTime())
	}
	if b.GetEnd() != nil && (out.GetEnd() == nil || b.GetEnd().AsTime().After(out.GetEnd().AsTime())) {
		out.End = timestamppb.New(b.GetEnd().AsTime())
	}
	return out
}

func uniqueStrings(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

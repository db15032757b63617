package mutate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/intake"
)

// Redeliver rewrites an alert payload, in any format the intake reads, as
// the same alert delivered in format: an Alertmanager v4 webhook, a Grafana
// unified-alerting webhook, or a PagerDuty v3 webhook whose labels and
// annotations appear only in the incident body's details text (as
// Alertmanager's PagerDuty integration renders them). The original is read
// with the intake's own parser, so the new payload carries what the
// pipeline saw: alert name, title, severity, state, start, labels and
// annotations (the values the intake derives, such as entities resolved
// from text, are not turned into labels).
func Redeliver(raw []byte, format string) ([]byte, error) {
	alerts, err := intake.Parse(raw, "")
	if err != nil {
		return nil, fmt.Errorf("mutate: redeliver: the intake cannot parse the original alert: %w", err)
	}
	generic := genericTopLevel(raw)
	ds := make([]delivered, 0, len(alerts))
	for i, a := range alerts {
		var top map[string]any
		if i < len(generic) {
			top = generic[i]
		}
		ds = append(ds, fromNormalized(a, top))
	}
	var doc any
	switch format {
	case FormatAlertmanager:
		doc = alertmanagerPayload(ds)
	case FormatGrafana:
		doc = grafanaPayload(ds)
	case FormatPagerDuty:
		doc = pagerDutyPayload(ds)
	default:
		return nil, fmt.Errorf("mutate: redeliver: unknown format %q (want %s, %s or %s)", format, FormatAlertmanager, FormatGrafana, FormatPagerDuty)
	}
	return encodeJSON(doc, true)
}

// delivered is one alert as a sender would hold it.
type delivered struct {
	name, title, severity string
	resolved              bool
	startsAt              time.Time
	labels, annotations   map[string]string
	generatorURL          string
	valueString           string
	externalURL           string
}

// derivedAnnotations are annotation keys the intake writes from payload
// structure rather than from the sender's annotations.
var derivedAnnotations = []string{"generator_url", "external_url", "value_string", "rule_url"}

// pagerDutyAnnotations are what the intake reads from a PagerDuty
// incident's structure; a re-delivery makes its own.
var pagerDutyAnnotations = []string{"pagerduty_service", "html_url", "incident_key", "id", "number", "urgency", "event_type"}

// resolvedAnnotation is where the intake lists entities it resolved from
// text (intake.ResolvedAnnotation): "key=value (origin); ...".
const resolvedAnnotation = "rcamesh_resolved"

func fromNormalized(a *investigationv1.Alert, top map[string]any) delivered {
	d := delivered{
		name: a.GetAlertName(), title: a.GetTitle(), severity: a.GetSeverity(), resolved: a.GetResolved(),
		labels: map[string]string{}, annotations: map[string]string{},
		generatorURL: a.GetAnnotations()["generator_url"],
		valueString:  a.GetAnnotations()["value_string"],
		externalURL:  a.GetAnnotations()["external_url"],
	}
	if a.GetStartsAt() != nil {
		d.startsAt = a.GetStartsAt().AsTime().UTC()
	}
	for k, v := range a.GetLabels() {
		d.labels[k] = v
	}
	for k, v := range a.GetAnnotations() {
		d.annotations[k] = v
	}
	for _, k := range derivedAnnotations {
		delete(d.annotations, k)
	}
	if a.GetFormat() == investigationv1.AlertFormat_ALERT_FORMAT_PAGERDUTY {
		for _, k := range pagerDutyAnnotations {
			delete(d.annotations, k)
		}
		delete(d.labels, "priority") // the incident's priority, not a label
	}
	if notes, ok := d.annotations[resolvedAnnotation]; ok {
		delete(d.annotations, resolvedAnnotation)
		for _, n := range strings.Split(notes, "; ") {
			k, rest, ok := strings.Cut(n, "=")
			if !ok {
				continue
			}
			v, _, _ := strings.Cut(rest, " (")
			if d.annotations[k] == v {
				delete(d.annotations, k)
			}
		}
	}
	// A generic alert names its target in top-level fields; a webhook
	// carries them as labels.
	for _, f := range []struct{ label string }{{"namespace"}, {"service"}, {"service_name"}, {"pod"}, {"pod_name"}, {"cluster"}, {"cluster_name"}, {"resource_kind"}, {"resource_name"}} {
		if s, ok := top[f.label].(string); ok && strings.TrimSpace(s) != "" {
			if _, has := d.labels[f.label]; !has {
				d.labels[f.label] = strings.TrimSpace(s)
			}
		}
	}
	setIfMissing(d.labels, "alertname", d.name)
	setIfMissing(d.labels, "severity", d.severity)
	setIfMissing(d.annotations, "summary", a.GetSummary())
	setIfMissing(d.annotations, "description", a.GetDescription())
	if a.GetErrorMessage() != "" && !hasValue(d.annotations, a.GetErrorMessage()) {
		setIfMissing(d.annotations, "error_message", a.GetErrorMessage())
	}
	if d.title != "" && d.title != d.annotations["summary"] && d.title != d.name {
		setIfMissing(d.annotations, "title", d.title)
	}
	return d
}

func setIfMissing(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok && strings.TrimSpace(v) != "" {
		m[k] = v
	}
}

func hasValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// genericTopLevel returns the top-level objects of a generic payload (one
// per alert), nil for other formats.
func genericTopLevel(raw []byte) []map[string]any {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil
	}
	var objs []map[string]any
	switch t := v.(type) {
	case map[string]any:
		objs = []map[string]any{t}
	case []any:
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil
			}
			objs = append(objs, m)
		}
	}
	for _, o := range objs {
		if f, err := intake.Detect(o); err != nil || f != intake.SourceGeneric {
			return nil
		}
	}
	return objs
}

const zeroTime = "0001-01-01T00:00:00Z"

func (d delivered) status() string {
	if d.resolved {
		return "resolved"
	}
	return "firing"
}

func (d delivered) starts() string {
	if d.startsAt.IsZero() {
		return zeroTime
	}
	return d.startsAt.Format(time.RFC3339)
}

func shortHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

func labelText(m map[string]string) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + fmt.Sprintf("%q", m[k])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// common is the key/value pairs every map shares.
func common(ms []map[string]string) map[string]string {
	out := map[string]string{}
	if len(ms) == 0 {
		return out
	}
	for k, v := range ms[0] {
		all := true
		for _, m := range ms[1:] {
			if m[k] != v {
				all = false
				break
			}
		}
		if all {
			out[k] = v
		}
	}
	return out
}

func groupStatus(ds []delivered) string {
	for _, d := range ds {
		if !d.resolved {
			return "firing"
		}
	}
	return "resolved"
}

func countFiring(ds []delivered) int {
	n := 0
	for _, d := range ds {
		if !d.resolved {
			n++
		}
	}
	return n
}

type webhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	// Grafana only.
	SilenceURL   string `json:"silenceURL,omitempty"`
	DashboardURL string `json:"dashboardURL,omitempty"`
	PanelURL     string `json:"panelURL,omitempty"`
	ValueString  string `json:"valueString,omitempty"`
}

// alertmanagerPayload is the Alertmanager webhook (version 4).
func alertmanagerPayload(ds []delivered) map[string]any {
	alerts := make([]webhookAlert, len(ds))
	var labels, anns []map[string]string
	for i, d := range ds {
		ann := d.annotations
		if d.valueString != "" {
			ann = copyMap(ann)
			ann["value_string"] = d.valueString
		}
		alerts[i] = webhookAlert{Status: d.status(), Labels: d.labels, Annotations: ann, StartsAt: d.starts(), EndsAt: zeroTime,
			GeneratorURL: d.generatorURL, Fingerprint: shortHash(labelText(d.labels))[:16]}
		labels, anns = append(labels, d.labels), append(anns, ann)
	}
	cl := common(labels)
	group := map[string]string{}
	if n, ok := cl["alertname"]; ok {
		group["alertname"] = n
	}
	ext := firstNonEmptyStr(ds[0].externalURL, "https://alertmanager.example.com")
	return map[string]any{
		"version": "4", "receiver": "rcamesh", "status": groupStatus(ds), "alerts": alerts,
		"groupLabels": group, "commonLabels": cl, "commonAnnotations": common(anns),
		"externalURL": ext, "groupKey": "{}:{" + labelText(group) + "}", "truncatedAlerts": 0,
	}
}

// grafanaPayload is Grafana unified alerting's webhook (version 1).
func grafanaPayload(ds []delivered) map[string]any {
	alerts := make([]webhookAlert, len(ds))
	var labels, anns []map[string]string
	var msg strings.Builder
	ext := firstNonEmptyStr(ds[0].externalURL, "https://grafana.example.com/")
	ext = strings.TrimRight(ext, "/") + "/"
	for i, d := range ds {
		fp := shortHash(labelText(d.labels))[:16]
		gen := firstNonEmptyStr(d.generatorURL, ext+"alerting/grafana/"+fp[:8]+"/view?orgId=1")
		alerts[i] = webhookAlert{Status: d.status(), Labels: d.labels, Annotations: d.annotations, StartsAt: d.starts(), EndsAt: zeroTime,
			GeneratorURL: gen, Fingerprint: fp,
			SilenceURL:  ext + "alerting/silence/new?alertmanager=grafana&matcher=alertname%3D" + strings.ReplaceAll(d.name, " ", "+"),
			ValueString: d.valueString}
		labels, anns = append(labels, d.labels), append(anns, d.annotations)
		if i == 0 {
			fmt.Fprintf(&msg, "**%s**\n\n", map[string]string{"firing": "Firing", "resolved": "Resolved"}[d.status()])
		}
		renderAlertText(&msg, d)
	}
	cl := common(labels)
	group := map[string]string{}
	if n, ok := cl["alertname"]; ok {
		group["alertname"] = n
	}
	state := "alerting"
	if groupStatus(ds) == "resolved" {
		state = "ok"
	}
	return map[string]any{
		"receiver": "rcamesh", "status": groupStatus(ds), "orgId": 1, "alerts": alerts,
		"groupLabels": group, "commonLabels": cl, "commonAnnotations": common(anns),
		"externalURL": ext, "version": "1", "groupKey": "{}/{}:{" + labelText(group) + "}", "truncatedAlerts": 0,
		"title": fmt.Sprintf("[%s:%d] %s", strings.ToUpper(groupStatus(ds)), max(countFiring(ds), 1), ds[0].name),
		"state": state, "message": strings.TrimRight(msg.String(), "\n"),
	}
}

// renderAlertText writes an alert as Alertmanager's and Grafana's default
// notification templates do: "Labels:" and "Annotations:" lists of
// " - key = value" lines, then the source link.
func renderAlertText(b *strings.Builder, d delivered) {
	if d.valueString != "" {
		fmt.Fprintf(b, "Value: %s\n", d.valueString)
	}
	b.WriteString("Labels:\n")
	for _, k := range sortedKeys(d.labels) {
		fmt.Fprintf(b, " - %s = %s\n", k, d.labels[k])
	}
	if len(d.annotations) > 0 {
		b.WriteString("Annotations:\n")
		for _, k := range sortedKeys(d.annotations) {
			fmt.Fprintf(b, " - %s = %s\n", k, d.annotations[k])
		}
	}
	if d.generatorURL != "" {
		fmt.Fprintf(b, "Source: %s\n", d.generatorURL)
	}
	b.WriteString("\n")
}

// pagerDutyPriority maps a severity to the incident's priority and
// urgency, the inverse of what the intake reads.
func pagerDutyPriority(sev string) (priority, urgency string) {
	switch strings.ToLower(sev) {
	case "critical", "page", "p1", "sev1", "emergency", "fatal":
		return "P1", "high"
	case "error", "high", "major", "p2", "sev2":
		return "P2", "high"
	case "warning", "warn", "medium", "minor", "p3", "sev3":
		return "P3", "low"
	case "info", "informational", "low", "none", "ok", "debug", "p4", "p5":
		return "P4", "low"
	}
	return "", "high"
}

// pagerDutyPayload is a PagerDuty v3 webhook (incident.triggered or
// incident.resolved) for an incident an Alertmanager integration opened:
// no structured labels; every label and annotation is in the body's
// details text. The incident has no service reference (the PagerDuty
// service is a routing entity the intake would read as the workload).
func pagerDutyPayload(ds []delivered) map[string]any {
	d := ds[0]
	var text strings.Builder
	fmt.Fprintf(&text, "[%s:%d] %s\n", strings.ToUpper(groupStatus(ds)), max(countFiring(ds), 1), d.name)
	for _, x := range ds {
		renderAlertText(&text, x)
	}
	id := strings.ToUpper(shortHash("pd", d.name, d.starts(), labelText(d.labels)))
	eventType, status := "incident.triggered", "triggered"
	if groupStatus(ds) == "resolved" {
		eventType, status = "incident.resolved", "resolved"
	}
	data := map[string]any{
		"id": "Q" + id[:13], "type": "incident",
		"self":     "https://api.pagerduty.com/incidents/Q" + id[:13],
		"html_url": "https://example.pagerduty.com/incidents/Q" + id[:13],
		"number":   10000 + int(hexValue(id[26:30])), "status": status, "incident_key": strings.ToLower(id[:32]),
		"title":     firstNonEmptyStr(d.title, d.name),
		"body":      map[string]any{"type": "incident_body", "details": strings.TrimRight(text.String(), "\n")},
		"assignees": []any{}, "teams": []any{}, "conference_bridge": nil, "resolve_reason": nil,
	}
	prio, urgency := pagerDutyPriority(d.severity)
	data["urgency"] = urgency
	if prio != "" {
		data["priority"] = map[string]any{"id": "PRIO" + prio, "summary": prio, "type": "priority_reference"}
	}
	ev := map[string]any{
		"id": id[:26], "event_type": eventType, "resource_type": "incident",
		"agent":  map[string]any{"id": "PAGENT1", "summary": "Prometheus Alertmanager", "type": "service_reference"},
		"client": nil, "data": data,
	}
	if !d.startsAt.IsZero() {
		ev["occurred_at"] = d.starts()
		data["created_at"] = d.starts()
	}
	return map[string]any{"event": ev}
}

func hexValue(s string) uint64 {
	n, _ := strconv.ParseUint(s, 16, 64)
	return n
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func firstNonEmptyStr(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

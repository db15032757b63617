package intake

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/target"
)

// ---- generic ----

// genericKeys are the keys that make an object a generic alert.
var genericKeys = []string{"alert_name", "alertname", "alertName", "title", "name", "labels", "summary", "message", "text",
	"check", "check_name", "monitor", "monitor_name", "test_name", "description", "error"}

// eventNamed: the object names what happened by a string event type (a
// certificate monitor's "event": "cert_issued"), not by a nested event
// object that wraps another product's alert.
func eventNamed(obj map[string]any) bool {
	for _, k := range []string{"event", "event_type"} {
		if v, ok := obj[k].(string); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// reWhoObject: a nested object about who sent or owns the alert (the
// sending application, the user, the installation), not the alert: its
// name is the sender's.
var reWhoObject = regexp.MustCompile(`(?i)^(actor|sender|user|owner|author|creator|assignee|installation|organi[sz]ation|org|account|team|integration|app|application|client|agent|source|reporter)$`)

// alertKeyWeights: how strongly a generic key says an object is the
// alert: a title or alert name most, what happened next, a bare name or
// labels least.
var alertKeyWeights = map[string]int{
	"alert_name": 3, "alertname": 3, "alertName": 3, "title": 3, "check_name": 3, "monitor_name": 3, "test_name": 3,
	"summary": 2, "message": 2, "text": 2, "description": 2, "error": 2, "check": 2, "monitor": 2,
	"name": 1, "labels": 1,
}

// alertLikeObject is the nested object (two levels, the first object of a
// list included) whose generic keys say most strongly that it is the
// alert, a sender's object never; the first in key order on a tie; nil
// when none has a generic key.
func alertLikeObject(obj map[string]any) map[string]any {
	var best map[string]any
	bestScore := 0
	var find func(m map[string]any, depth int)
	find = func(m map[string]any, depth int) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			sub, ok := m[k].(map[string]any)
			if !ok {
				if list, ok := m[k].([]any); ok && len(list) > 0 {
					sub, _ = list[0].(map[string]any)
				}
			}
			if sub == nil || reWhoObject.MatchString(k) {
				continue
			}
			score := 0
			for g, w := range alertKeyWeights {
				if str(sub[g]) != "" {
					score += w
				}
			}
			if score > bestScore {
				best, bestScore = sub, score
			}
			if depth < 2 {
				find(sub, depth+1)
			}
		}
	}
	find(obj, 1)
	return best
}

// wrappedAlert reads a vendor envelope no table knows: a search or watch
// tool's webhook puts the alert in a nested object (a result, a payload,
// a context) and names it in a key of its own ("search_name",
// "watch_name", "rule_title"). The alert is the first nested object (two
// levels at most, keys in sorted order) with a generic alert's keys, or
// the envelope itself named by a key ending in name or title; the
// envelope's other string fields become annotations. ok is false when
// neither exists: the caller's unknown-format error stands.
//
// Strictly, a name field of whom it is sent to or what it runs on
// (CONTACTNAME, HOSTNAME) does not name the alert: a loosely shaped
// envelope (looseAlert) is read first. Not strictly, any name field does:
// an envelope that names nothing else (an SNMP trap's hostname) is read
// rather than refused.
func wrappedAlert(obj map[string]any, strict bool) (map[string]any, bool) {
	inner := alertLikeObject(obj)
	name := ""
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		l := strings.ToLower(k)
		if v, ok := obj[k].(string); ok && strings.TrimSpace(v) != "" && (strings.HasSuffix(l, "name") || strings.HasSuffix(l, "title")) && !(strict && reRecipientField.MatchString(k)) {
			name = v
			break
		}
	}
	if inner == nil && name == "" {
		return nil, false
	}
	out := map[string]any{}
	maps.Copy(out, inner)
	ann := map[string]any{}
	if a, ok := out["annotations"].(map[string]any); ok {
		maps.Copy(ann, a)
	}
	for k, v := range obj {
		if v, ok := v.(string); ok && strings.TrimSpace(v) != "" && ann[k] == nil {
			ann[k] = truncate(v, 500)
		}
	}
	out["annotations"] = ann
	if str(out["alert_name"]) == "" && str(out["name"]) == "" && str(out["title"]) == "" && name != "" {
		out["alert_name"] = name
	}
	for _, k := range []string{"severity", "status", "state", "namespace", "service", "cluster", "url", "timestamp", "time"} {
		if _, ok := out[k]; !ok {
			if v, ok := obj[k]; ok {
				out[k] = v
			}
		}
	}
	return out, true
}

// reRecipientField: a name field of whom a notification is for or what
// the check runs on.
var reRecipientField = regexp.MustCompile(`(?i)(host|user|owner|author|team|contact|assignee|recipient|org|account|project)_?(display_?)?name$`)

func parseGeneric(obj map[string]any) ([]*investigationv1.Alert, error) {
	envelope := obj
	wrapped := false
	if !hasAnyKey(obj, genericKeys) {
		// A nested alert (a ticket, a check) first; the envelope's own
		// string event type (eventNamed) names it only when nothing
		// nested or loosely shaped does.
		if w, ok := wrappedAlert(obj, true); ok {
			obj, wrapped = w, true
		} else if w, ok := looseAlert(obj); ok {
			obj, wrapped = w, true
		} else if w, ok := wrappedAlert(obj, false); ok {
			obj, wrapped = w, true
		}
	}
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_GENERIC,
		Labels:      strMap(obj["labels"]),
		Annotations: strMap(firstPresent(obj, "annotations")),
	}
	if wrapped {
		// The envelope's nested fields that name an entity by a known
		// key (Elastic's kubernetes.pod.name, a result's service.name)
		// are labels, and the first sample message it carries says what
		// fired.
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		mergeMissing(a.Labels, tagsMap(firstPresent(envelope, "tags", "Tags")))
		sample := nestedEntities(envelope, a.Labels)
		if sample != "" {
			if a.Annotations == nil {
				a.Annotations = map[string]string{}
			}
			setMissing(a.Annotations, "sample_message", truncate(sample, 500))
		}
	}
	if nested := nestedOnly(envelope); !wrapped && len(nested) > 0 {
		// An envelope read by its generic keys (an error tracker's
		// message) still names its entities in nested objects: the
		// notice's host, the request's URL. Every field is read.
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		nestedEntities(nested, a.Labels)
	}
	// Tags as a Datadog-style list or a map.
	mergeMissing(a.Labels, tagsMap(firstPresent(obj, "tags", "Tags")))
	a.AlertName = firstName(obj, "alert_name", "alertname", "alertName", "name", "rule_name", "ruleName", "check", "check_name", "monitor", "monitor_name", "test_name")
	if a.AlertName == "" && !wrapped {
		a.AlertName = firstStr(obj, "event_type", "event") // the envelope is the alert: its event type names it
	}
	if a.AlertName == "" {
		a.AlertName = a.Labels["alertname"]
	}
	a.Title = firstStr(obj, "title", "subject", "headline")
	a.Severity = firstStr(obj, "severity", "priority", "level")
	a.State = firstStr(obj, "state", "status")
	a.AlertSource = firstStr(obj, "source", "alert_source", "origin")
	// An entity given as an object (a service with its display name and
	// project) is named by its name, never by its JSON.
	a.Namespace = firstName(obj, "namespace")
	a.Service = firstName(obj, "service", "service_name")
	a.Pod = firstName(obj, "pod", "pod_name")
	a.Cluster = firstName(obj, "cluster", "cluster_name")
	a.ErrorMessage = firstStr(obj, "error_message", "error", "exception")
	a.Summary = firstStr(obj, "summary")
	a.Description = firstStr(obj, "description", "details", "detail", "body")
	// What an uptime or synthetics check probes is the target, not a link
	// to the monitoring system.
	if u := firstStr(obj, "url", "target_url", "endpoint", "target"); u != "" {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		setMissing(a.Annotations, "probe_target", u)
	}
	msg := firstStr(obj, "message", "text", "msg")
	if a.State == "" {
		// No state field: a notifier's text leads with the state it
		// reports ("[Sheet booking] [✅ Up] 200 - OK", "RESOLVED: disk").
		a.State = stateInText(a.Title, msg, a.Summary)
	}
	if a.State == "" {
		// Or a field of another name whose whole value is a state word
		// (UptimeRobot's alertTypeFriendlyName "Up", an "event_state").
		a.State = firstNonEmpty(stateField(obj), stateField(envelope))
	}
	if a.State == "" {
		// Or one level down, in the object the payload is about (a status
		// page's component_update.new_status "operational").
		a.State = nestedStateField(obj)
	}
	if a.ErrorMessage == "" && a.Summary == "" && a.Description == "" {
		a.Summary = msg
	} else if a.Description == "" {
		a.Description = msg
	}
	a.ResourceKind = firstStr(obj, "resource_kind", "kind")
	a.ResourceName = firstStr(obj, "resource_name", "resource")
	if t, ok := firstTime(obj, "starts_at", "startsAt", "started_at", "timestamp", "time", "fired_at", "date"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	a.Resolved = isResolvedState(a.State)
	if !wrapped {
		// Nothing is lost: the alert's other fields (a resource's name, an
		// info line, a type) are its annotations, read like any other.
		keepUnread(a, obj)
		// And those of its metadata object (a Flux event's metadata, a
		// webhook's meta), whose values may be label pairs written as
		// text ("cluster: fire-staging").
		for _, mk := range []string{"metadata", "meta"} {
			m, ok := obj[mk].(map[string]any)
			if !ok {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				v := strings.TrimSpace(str(m[k]))
				if v == "" || len(a.Annotations) >= maxKeptFields*2 {
					continue
				}
				if a.Annotations == nil {
					a.Annotations = map[string]string{}
				}
				setMissing(a.Annotations, mk+"."+k, truncate(v, 500))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(a.Annotations)) {
			if pairs, ok := textPairs(a.Annotations[k]); ok {
				if a.Labels == nil {
					a.Labels = map[string]string{}
				}
				mergeMissing(a.Labels, pairs)
			}
		}
		if a.Cluster == "" {
			a.Cluster = a.Labels["cluster"]
		}
	}
	if a.AlertName == "" && a.Title == "" && a.Summary == "" {
		// A check's payload with neither name nor title: its error or
		// description says what fired.
		if t := firstNonEmpty(a.ErrorMessage, a.Description); t != "" {
			a.Title = truncate(t, 120)
		}
	}
	if a.AlertName == "" && a.Title == "" && len(a.Labels) == 0 && a.Summary == "" {
		if !wrapped {
			// Known keys that name nothing: the envelope's own fields, by
			// the shape of their names, may still say what fired.
			if w, ok := looseAlert(envelope); ok {
				return parseGeneric(w)
			}
		}
		return nil, fmt.Errorf("%w: generic alert needs alert_name or title (or labels.alertname)", ErrBadFormat)
	}
	if a.AlertName == "" && a.Title == "" && len(a.Labels) == 0 {
		// A bare message: a chat line, not an alert, unless it reads like one.
		a.Title = truncate(headline(a.Summary), 120)
		if looksLikeChat(a.Summary) {
			a.IsNoise = true
			a.NoiseReason = "chat message, not an alert: " + truncate(a.Summary, 60)
		}
	}
	return []*investigationv1.Alert{a}, nil
}

// maxKeptFields bounds the fields keepUnread keeps.
const maxKeptFields = 32

// keepUnread sets, as annotations when absent, the top-level string and
// number fields of obj the generic keys did not read (clipped, at most
// maxKeptFields, in key order). Keys the target vocabulary reads as an
// entity are left out: they would name a target the format does not.
// reTextPair: one "key: value" or "key=value" pair of a label written as
// text, the value one word.
var reTextPair = regexp.MustCompile(`^([A-Za-z][\w.-]{0,30})\s*[:=]\s*([\w./@-]{1,80})$`)

// textPairs reads a text made only of label pairs ("cluster: fire-staging",
// "env=prod, region=eu-west-1"), at most 8; ok is false for any other text.
func textPairs(v string) (map[string]string, bool) {
	items := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == '\n' })
	if len(items) == 0 || len(items) > 8 {
		return nil, false
	}
	out := map[string]string{}
	for _, it := range items {
		m := reTextPair.FindStringSubmatch(strings.TrimSpace(it))
		if m == nil {
			return nil, false
		}
		out[strings.ToLower(m[1])] = m[2]
	}
	return out, true
}

func keepUnread(a *investigationv1.Alert, obj map[string]any) {
	kept := 0
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if kept >= maxKeptFields {
			return
		}
		if slices.Contains(genericKeys, k) || k == "labels" || k == "annotations" || target.KindOf(k) != "" {
			continue // read, or an entity key of the vocabulary the generic keys chose not to read (an application is not a service)
		}
		var v string
		switch x := obj[k].(type) {
		case string:
			v = strings.TrimSpace(x)
		case json.Number:
			v = x.String()
		}
		if v == "" {
			continue
		}
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		if _, ok := a.Annotations[k]; !ok {
			a.Annotations[k] = truncate(v, 500)
			kept++
		}
	}
}

// nestedEntities walks a vendor envelope (depth 14, 2000 leaves at most)
// and sets in labels, when absent, every string leaf whose key path ends in
// a known entity key (the last one, two or three path segments folded:
// kubernetes.pod.name, container.name, service); it returns the first
// leaf named message.
// allStrings: every element of l is a string.
func allStrings(l []any) bool {
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return len(l) > 0
}

// nestedOnly is obj without its top-level scalar fields: what the generic
// keys do not already read.
func nestedOnly(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		switch v.(type) {
		case map[string]any, []any:
			out[k] = v
		}
	}
	return out
}

func nestedEntities(obj map[string]any, labels map[string]string) string {
	sample := ""
	leaves := 0
	var walk func(v any, path []string, depth int)
	walk = func(v any, path []string, depth int) {
		if depth > 14 || leaves > 2000 {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], append(path, k), depth+1)
			}
		case []any:
			if allStrings(t) {
				// A list of names under one key (a platform, then the
				// application): the last, most specific, is read first.
				for i := len(t) - 1; i >= 0; i-- {
					walk(t[i], path, depth+1)
				}
				return
			}
			for _, e := range t {
				walk(e, path, depth+1)
			}
		case string:
			leaves++
			if len(path) == 0 || strings.TrimSpace(t) == "" || len(t) > 253 {
				if len(path) > 0 && path[len(path)-1] == "message" && sample == "" {
					sample = t
				}
				return
			}
			if path[len(path)-1] == "message" && sample == "" {
				sample = t
			}
			for n := min(3, len(path)); n >= 1; n-- {
				key := target.Fold(strings.Join(path[len(path)-n:], "_"))
				if target.KindOf(key) == "" {
					continue
				}
				if _, ok := labels[key]; !ok && !strings.ContainsAny(t, " \n") {
					labels[key] = t
				}
				break
			}
		}
	}
	walk(obj, nil, 0)
	return sample
}

// ---- Alertmanager webhook v4 and Grafana unified alerting ----

func parseAlertmanager(obj map[string]any) ([]*investigationv1.Alert, error) {
	return parseGrouped(obj, investigationv1.AlertFormat_ALERT_FORMAT_ALERTMANAGER, "alertmanager")
}

func parseGrafana(obj map[string]any) ([]*investigationv1.Alert, error) {
	if _, ok := obj["alerts"]; !ok {
		return parseGrafanaLegacy(obj)
	}
	return parseGrouped(obj, investigationv1.AlertFormat_ALERT_FORMAT_GRAFANA, "grafana")
}

func parseGrouped(obj map[string]any, format investigationv1.AlertFormat, source string) ([]*investigationv1.Alert, error) {
	rawAlerts, ok := obj["alerts"]
	if !ok {
		return nil, fmt.Errorf("%w: %s webhook needs an alerts[] array (and version, groupLabels, commonLabels)", ErrBadFormat, source)
	}
	list, ok := rawAlerts.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s webhook field alerts is a %s, want an array", ErrBadFormat, source, jsonKind(rawAlerts))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: %s webhook alerts[] is empty", ErrNoAlerts, source)
	}
	if format == investigationv1.AlertFormat_ALERT_FORMAT_ALERTMANAGER {
		if v := str(obj["version"]); v != "" && v != "4" {
			return nil, fmt.Errorf("%w: alertmanager webhook version %q, want \"4\"", ErrBadFormat, v)
		}
	}
	common := strMap(obj["commonLabels"])
	group := strMap(obj["groupLabels"])
	commonAnn := strMap(obj["commonAnnotations"])
	groupStatus := str(obj["status"])
	externalURL := str(obj["externalURL"])
	out := make([]*investigationv1.Alert, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s alerts[%d] is a %s, want an object", ErrBadFormat, source, i, jsonKind(e))
		}
		labels := strMap(m["labels"])
		mergeMissing(labels, common)
		mergeMissing(labels, group)
		ann := strMap(m["annotations"])
		mergeMissing(ann, commonAnn)
		if u := str(m["generatorURL"]); u != "" {
			setMissing(ann, "generator_url", u)
		}
		if externalURL != "" {
			setMissing(ann, "external_url", externalURL)
		}
		if vs := str(m["valueString"]); vs != "" {
			setMissing(ann, "value_string", vs)
		}
		state := str(m["status"])
		if state == "" {
			state = groupStatus
		}
		a := &investigationv1.Alert{
			Format:      format,
			AlertName:   labels["alertname"],
			Severity:    labels["severity"],
			AlertSource: source,
			State:       state,
			Resolved:    isResolvedState(state),
			Labels:      labels,
			Annotations: ann,
		}
		if a.AlertName == "" {
			a.AlertName = labels["__alert_rule_title__"]
		}
		a.Title = firstNonEmpty(ann["title"], ann["summary"], str(obj["title"]), a.AlertName)
		if t, ok := parseTime(m["startsAt"]); ok {
			a.StartsAt = timestamppb.New(t)
		}
		if a.AlertName == "" && a.Title == "" {
			return nil, fmt.Errorf("%w: %s alerts[%d] has no labels.alertname", ErrBadFormat, source, i)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseGrafanaLegacy(obj map[string]any) ([]*investigationv1.Alert, error) {
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_GRAFANA,
		AlertName:   firstStr(obj, "ruleName", "title"),
		Title:       firstStr(obj, "title", "ruleName"),
		AlertSource: "grafana",
		State:       str(obj["state"]),
		Labels:      strMap(obj["tags"]),
		Annotations: map[string]string{},
		Summary:     str(obj["message"]),
	}
	if u := str(obj["ruleUrl"]); u != "" {
		a.Annotations["rule_url"] = u
	}
	// The series that matched the rule carry their own labels: those every
	// match agrees on name the target (a service, a pod) too.
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	var matches []map[string]string
	var metrics []string
	if ms, ok := obj["evalMatches"].([]any); ok {
		for _, m := range ms {
			mm, ok := m.(map[string]any)
			if !ok {
				continue
			}
			matches = append(matches, strMap(mm["tags"]))
			if n := str(mm["metric"]); n != "" {
				metrics = append(metrics, n+"="+str(mm["value"]))
			}
		}
	}
	for k, v := range commonValues(matches) {
		setMissing(a.Labels, k, v)
	}
	if len(metrics) > 0 {
		a.Annotations["eval_matches"] = strings.Join(metrics, ", ")
	}
	a.Severity = a.Labels["severity"]
	a.Resolved = isResolvedState(a.State)
	if a.AlertName == "" {
		return nil, fmt.Errorf("%w: grafana legacy alert needs ruleName or title", ErrBadFormat)
	}
	return []*investigationv1.Alert{a}, nil
}

// commonValues are the key/value pairs every one of ms has (none of ms
// empty).
func commonValues(ms []map[string]string) map[string]string {
	if len(ms) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range ms[0] {
		same := v != ""
		for _, m := range ms[1:] {
			if m[k] != v {
				same = false
				break
			}
		}
		if same {
			out[k] = v
		}
	}
	return out
}

// ---- Datadog webhook ----

func parseDatadog(obj map[string]any) ([]*investigationv1.Alert, error) {
	title := firstStr(obj, "title", "event_title", "alert_title")
	if title == "" {
		return nil, fmt.Errorf("%w: datadog webhook needs title (with alert_type, tags, date)", ErrBadFormat)
	}
	labels := tagsMap(obj["tags"])
	mergeMissing(labels, tagsMap(obj["alert_scope"]))
	ann := map[string]string{}
	for _, k := range []string{"url", "link", "alert_query", "alert_metric", "alert_id", "id", "priority", "org", "hostname", "aggreg_key", "event_type"} {
		if v := str(obj[k]); v != "" {
			ann[k] = v
		}
	}
	alertType := strings.ToLower(str(obj["alert_type"]))
	transition := str(obj["alert_transition"])
	state := firstNonEmpty(transition, str(obj["alert_status"]), alertType)
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_DATADOG,
		Title:       strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(title, "[Triggered]"), "[Recovered]")),
		AlertName:   firstNonEmpty(labels["alertname"], labels["monitor"], str(obj["alert_id"]), title),
		Severity:    firstNonEmpty(labels["severity"], datadogSeverity(alertType, str(obj["priority"]))),
		AlertSource: "datadog",
		State:       state,
		Labels:      labels,
		Annotations: ann,
	}
	a.Title = strings.TrimSpace(a.Title)
	body := firstStr(obj, "body", "text", "event_msg", "message")
	a.Description = body
	a.Resolved = strings.EqualFold(transition, "Recovered") || alertType == "success" || isResolvedState(str(obj["alert_status"]))
	if t, ok := firstTime(obj, "date", "last_updated", "timestamp"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	if hn := str(obj["hostname"]); hn != "" {
		setMissing(a.Labels, "host", hn)
	}
	return []*investigationv1.Alert{a}, nil
}

func datadogSeverity(alertType, priority string) string {
	switch strings.ToLower(priority) {
	case "p1", "p2":
		return "critical"
	}
	switch alertType {
	case "error":
		return "critical"
	case "warning":
		return "warning"
	case "info", "success":
		return "info"
	}
	return ""
}

// ---- PagerDuty v3 webhook ----

func parsePagerDuty(obj map[string]any) ([]*investigationv1.Alert, error) {
	ev, ok := obj["event"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: pagerduty v3 webhook needs an event object with event.data (the incident)", ErrBadFormat)
	}
	data, ok := ev["data"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: pagerduty v3 webhook needs event.data (the incident)", ErrBadFormat)
	}
	eventType := str(ev["event_type"])
	status := firstNonEmpty(str(data["status"]), strings.TrimPrefix(eventType, "incident."))
	title := firstStr(data, "title", "summary", "description")
	if title == "" {
		return nil, fmt.Errorf("%w: pagerduty event.data has no title", ErrBadFormat)
	}
	labels := map[string]string{}
	ann := map[string]string{}
	// The PagerDuty service is a routing entity; the incident's own details
	// (the source alert's labels) name the workload and win over it.
	pdService := ""
	if svc, ok := data["service"].(map[string]any); ok {
		pdService = firstStr(svc, "summary", "name")
		if pdService != "" {
			ann["pagerduty_service"] = pdService
		}
	}
	if p, ok := data["priority"].(map[string]any); ok {
		if s := firstStr(p, "summary", "name"); s != "" {
			labels["priority"] = s
		}
	}
	for _, k := range []string{"html_url", "incident_key", "id", "number", "urgency"} {
		if v := str(data[k]); v != "" {
			ann[k] = v
		}
	}
	if v := str(ev["event_type"]); v != "" {
		ann["event_type"] = v
	}
	var details string
	if body, ok := data["body"].(map[string]any); ok {
		switch d := body["details"].(type) {
		case string:
			details = d
		case map[string]any:
			mergeMissing(labels, strMap(d))
		}
	}
	if d, ok := data["custom_details"].(map[string]any); ok {
		mergeMissing(labels, strMap(d))
	}
	mergeTextBlocks(labels, ann, details)
	if !namesWorkload(labels) && pdService != "" && reWorkloadName.MatchString(pdService) {
		// A PagerDuty service named like a workload stands for it; a display
		// name ("Scores platform") is a routing entity only.
		labels["service"] = pdService
	}
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_PAGERDUTY,
		AlertName:   firstNonEmpty(labels["alertname"], title),
		Title:       title,
		Severity:    firstNonEmpty(labels["severity"], pagerDutySeverity(str(data["urgency"]), labels["priority"])),
		AlertSource: "pagerduty",
		State:       status,
		Resolved:    eventType == "incident.resolved" || isResolvedState(status),
		Labels:      labels,
		Annotations: ann,
		Description: describedText(details, ann),
	}
	if t, ok := firstTime(data, "created_at"); ok {
		a.StartsAt = timestamppb.New(t)
	} else if t, ok := firstTime(ev, "occurred_at"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	return []*investigationv1.Alert{a}, nil
}

func pagerDutySeverity(urgency, priority string) string {
	switch strings.ToUpper(priority) {
	case "P1", "P2":
		return "critical"
	case "P3":
		return "warning"
	case "P4", "P5":
		return "info"
	}
	switch strings.ToLower(urgency) {
	case "high":
		return "critical"
	case "low":
		return "warning"
	}
	return ""
}

// ---- opensre-style object ----

func parseOpenSRE(obj map[string]any) ([]*investigationv1.Alert, error) {
	labels := strMap(obj["commonLabels"])
	ann := strMap(obj["commonAnnotations"])
	mergeMissing(labels, strMap(obj["labels"]))
	mergeMissing(ann, strMap(obj["annotations"]))
	title := str(obj["title"])
	if title == "" && labels["alertname"] == "" {
		return nil, fmt.Errorf("%w: opensre-style alert needs title or commonLabels.alertname", ErrBadFormat)
	}
	state := firstStr(obj, "state", "status")
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_OPENSRE,
		AlertName:   firstNonEmpty(labels["alertname"], title),
		Title:       firstNonEmpty(title, ann["summary"], labels["alertname"]),
		Severity:    firstNonEmpty(labels["severity"], str(obj["severity"])),
		AlertSource: firstNonEmpty(str(obj["alert_source"]), "opensre"),
		State:       state,
		Resolved:    isResolvedState(state),
		Labels:      labels,
		Annotations: ann,
	}
	if t, ok := firstTime(obj, "startsAt", "starts_at", "fired_at", "timestamp"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	return []*investigationv1.Alert{a}, nil
}

// ---- helpers ----

// reTextState is a state word a notifier's text leads with or puts in
// brackets, an emoji before it allowed: "[✅ Up]", "[🔴 Down]",
// "RESOLVED: ...", "[OK] ...".
var reTextState = regexp.MustCompile(`(?i)(?:^|\[)\s*(?:[^\pL\pN\s\]]+\s*)?(resolved|recovered|up|ok|down|firing|problem|triggered|alerting)\s*(?:\]|:)`)

// stateInText is the first state word reTextState finds in texts, lower
// case; "" when none.
func stateInText(texts ...string) string {
	for _, t := range texts {
		if m := reTextState.FindStringSubmatch(t); m != nil {
			return strings.ToLower(m[1])
		}
		if m := reEmphasisState.FindStringSubmatch(t); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}

// reEmphasisState: a text that leads with a state word set in bold (HTML
// as Telegram and e-mail notifiers write it, Markdown as chat notifiers
// do): "<b>RESOLVED</b> KubeDeploymentReplicasMismatch", "**FIRING** ...".
var reEmphasisState = regexp.MustCompile(`(?i)^\s*(?:<(?:b|strong)>|\*{1,2})\s*(resolved|recovered|up|ok|down|firing|problem|triggered|alerting)\s*(?:</(?:b|strong)>|\*{1,2})`)

// reStateKey: a field name that can carry a state (its type, state,
// status or event); reStateWord: a value that is a state word whole.
var (
	reStateKey  = regexp.MustCompile(`(?i)type|state|status|event`)
	rePriorKey  = regexp.MustCompile(`(?i)^(?:old|prev|previous|prior|from|last)[_-]?|[_-](?:old|before|previous|prior)$`)
	reStateWord = regexp.MustCompile(`(?i)^(?:resolved|recovered|up|ok|down|firing|problem|triggered|alerting|operational|major_outage|partial_outage|degraded_performance)$`)
)

// stateField is the state a top-level field carries whose name can carry
// one and whose whole value is a state word, lower case; "" when none. A
// firing word wins over a resolution in another field (Icinga's
// notification_type PROBLEM beside a host_state UP: the host is up, the
// service is not).
func stateField(obj map[string]any) string {
	var states []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v, ok := obj[k].(string)
		if !ok || !reStateKey.MatchString(k) || rePriorKey.MatchString(k) || !reStateWord.MatchString(strings.TrimSpace(v)) {
			continue // a prior state ("old_status") is not the current one
		}
		states = append(states, strings.ToLower(strings.TrimSpace(v)))
	}
	return firingFirst(states)
}

// nestedStateField is stateField of the objects one level inside obj, in
// key order, ranked as stateField ranks its fields.
func nestedStateField(obj map[string]any) string {
	var states []string
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if m, ok := obj[k].(map[string]any); ok {
			states = append(states, stateField(m))
		}
	}
	return firingFirst(states)
}

// firingFirst is the first state that is not resolved, else the first
// one; "" when there is none.
func firingFirst(states []string) string {
	found := ""
	for _, w := range states {
		if w == "" {
			continue
		}
		if !isResolvedState(w) {
			return w
		}
		if found == "" {
			found = w
		}
	}
	return found
}

// isResolvedState reports whether a state string says the alert is over.
// "normal" is not resolved: scheduled checks report it while still asking for a look.
// "completed" is a status page's maintenance (or a job's run) that is over;
// "up" is an uptime check's target answering again; "operational" a status
// page's component serving again.
func isResolvedState(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "resolved", "ok", "recovered", "closed", "success", "completed", "up", "operational":
		return true
	}
	return false
}

func str(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(t)
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any, []any:
		b, err := json.Marshal(t)
		if err != nil {
			return ""
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

func hasAnyKey(obj map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// firstName is firstStr for a field that names the alert: an object there
// (an uptime monitor's "monitor": {...}) names it by its own name or title.
func firstName(obj map[string]any, keys ...string) string {
	for _, k := range keys {
		if m, ok := obj[k].(map[string]any); ok {
			if n := firstStr(m, "name", "title", "friendly_name", "display_name"); n != "" {
				return n
			}
			continue
		}
		if l, ok := obj[k].([]any); ok {
			// A list of names (Alerta's service: a platform, then the
			// application): the last, most specific one.
			for i := len(l) - 1; i >= 0; i-- {
				if s, ok := l[i].(string); ok && strings.TrimSpace(s) != "" {
					return strings.TrimSpace(s)
				}
			}
			continue
		}
		if s := str(obj[k]); s != "" {
			return s
		}
	}
	return ""
}

func firstStr(obj map[string]any, keys ...string) string {
	for _, k := range keys {
		if s := str(obj[k]); s != "" {
			return s
		}
	}
	return ""
}

func firstPresent(obj map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			return v
		}
	}
	return nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// strMap converts a JSON object to a string map (non-string values as JSON text).
func strMap(v any) map[string]string {
	out := map[string]string{}
	m, ok := v.(map[string]any)
	if !ok {
		return out
	}
	for k, val := range m {
		if s := str(val); s != "" {
			out[k] = s
		}
	}
	return out
}

// tagsMap reads Datadog-style tags: a "k:v,k2:v2" string, a ["k:v"] list, or an object.
func tagsMap(v any) map[string]string {
	out := map[string]string{}
	var items []string
	switch t := v.(type) {
	case string:
		items = strings.Split(t, ",")
	case []any:
		for _, e := range t {
			// A tag as a pair: ["key", "value"] (an error tracker's
			// tags) or {"key": ..., "value": ...}.
			if k, v, ok := tagPair(e); ok {
				setMissing(out, k, v)
				continue
			}
			items = append(items, str(e))
		}
	case map[string]any:
		return strMap(t)
	}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		k, val, ok := strings.Cut(it, ":")
		if eq := strings.Index(it, "="); eq > 0 && (!ok || eq < strings.Index(it, ":")) {
			k, val, ok = it[:eq], it[eq+1:], true // "cluster=prod" (Alerta, Sensu)
		}
		if !ok {
			setMissing(out, it, "true")
			continue
		}
		// Dynatrace writes a tag's context before its key:
		// "[Kubernetes]app:hive-ingest".
		if strings.HasPrefix(k, "[") {
			if i := strings.Index(k, "]"); i > 0 {
				k = k[i+1:]
			}
		}
		setMissing(out, strings.TrimSpace(k), strings.TrimSpace(val))
	}
	return out
}

// tagPair reads one tag written as a pair: a two-element array of strings,
// or an object with only a key (or name) and a value.
func tagPair(e any) (k, v string, ok bool) {
	switch x := e.(type) {
	case []any:
		if len(x) == 2 {
			k, v = str(x[0]), str(x[1])
		}
	case map[string]any:
		if len(x) == 2 {
			k, v = firstNonEmpty(str(x["key"]), str(x["name"])), str(x["value"])
		}
	}
	k = strings.TrimSpace(k)
	return k, strings.TrimSpace(v), k != "" && v != "" && len(k) <= 64
}

func mergeMissing(dst, src map[string]string) {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		setMissing(dst, k, src[k])
	}
}

func setMissing(m map[string]string, k, v string) {
	if _, ok := m[k]; !ok && v != "" {
		m[k] = v
	}
}

func firstTime(obj map[string]any, keys ...string) (time.Time, bool) {
	for _, k := range keys {
		if t, ok := parseTime(obj[k]); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// The last second a record's timestamp can hold (9999-12-31T23:59:59Z).
const (
	maxUnixSecond = 253402300799
	maxUnixMilli  = (maxUnixSecond + 1) * 1000
)

// parseTime reads RFC 3339 text, or epoch seconds / milliseconds as a number or numeric string.
func parseTime(v any) (time.Time, bool) {
	var s string
	switch t := v.(type) {
	case string:
		s = strings.TrimSpace(t)
	case json.Number:
		s = t.String()
	case float64:
		s = strconv.FormatFloat(t, 'f', -1, 64)
	default:
		return time.Time{}, false
	}
	if s == "" {
		return time.Time{}, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return time.Time{}, false
		}
		if f > 1e14 && f < 1e17 {
			// Microseconds (Sysdig, InfluxDB): 16-17 digits. As
			// milliseconds they would be years past 5138.
			return time.UnixMicro(int64(f)).UTC(), true
		}
		if f > 1e11 { // milliseconds
			if f >= maxUnixMilli {
				// Beyond what int64 milliseconds (or a record) can hold: the
				// first instant past 9999, which Parse refuses by name.
				return time.Unix(maxUnixSecond+1, 0).UTC(), true
			}
			return time.UnixMilli(int64(f)).UTC(), true
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
	}
	// RFC 3339, and ISO 8601 with a numeric offset without a colon
	// (CloudWatch's "2026-03-02T10:15:00.000+0000").
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() <= 1 { // Alertmanager's zero time
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

var chatWords = []string{"hi", "hello", "hey", "thanks", "thank you", "ok", "okay", "lgtm", "+1", "good morning", "ack", "ty"}

// looksLikeChat reports whether a bare message is a greeting or a reply rather than an alert.
func looksLikeChat(s string) bool {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(s), "!.?:) "))
	if t == "" {
		return true
	}
	for _, w := range chatWords {
		if t == w || strings.HasPrefix(t, w+" ") && len(strings.Fields(t)) <= 4 {
			return true
		}
	}
	return false
}

// reWorkloadName: a Kubernetes object name (DNS-1123 label).
var reWorkloadName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// namesWorkload: the labels name the alerting workload under any spelling
// (a service, a Deployment, StatefulSet, DaemonSet, Job or pod).
func namesWorkload(labels map[string]string) bool {
	for _, k := range []target.Kind{target.Service, target.Deployment, target.StatefulSet, target.DaemonSet, target.Job, target.CronJob, target.Pod} {
		if target.Lookup(labels, k) != "" {
			return true
		}
	}
	return false
}

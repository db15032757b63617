package intake

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// ---- Opsgenie outgoing webhook ----
//
// {"action": "Create", "alert": {"alertId", "message", "description",
// "tags": ["k:v", ...], "details": {...}, "entity", "alias", "priority",
// "source", "createdAt": <epoch ms>}, "source": {...}, "integrationName"}.
// The source alert's labels arrive as "key:value" tags, as details, or only
// inside the description text (Alertmanager's default template).

// isOpsgenie: an Opsgenie webhook wraps the alert in "alert" and names the
// action or the integration at the top.
func isOpsgenie(obj map[string]any) bool {
	a, ok := obj["alert"].(map[string]any)
	if !ok {
		return false
	}
	if _, ok := a["message"]; !ok {
		if _, ok := a["alertId"]; !ok {
			return false
		}
	}
	for _, k := range []string{"action", "integrationName", "integrationId", "integrationType"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	_, tiny := a["tinyId"]
	return tiny
}

func parseOpsgenie(obj map[string]any) ([]*investigationv1.Alert, error) {
	al, ok := obj["alert"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: opsgenie webhook needs an alert object", ErrBadFormat)
	}
	title := firstStr(al, "message", "alias")
	if title == "" {
		return nil, fmt.Errorf("%w: opsgenie alert has no message", ErrBadFormat)
	}
	labels := tagsMap(al["tags"])
	ann := map[string]string{}
	mergeMissing(labels, strMap(al["details"]))
	for _, k := range []string{"alertId", "tinyId", "alias", "entity", "source", "team"} {
		if v := str(al[k]); v != "" {
			ann["opsgenie_"+strings.ToLower(k)] = v
		}
	}
	action := str(obj["action"])
	if action != "" {
		ann["opsgenie_action"] = action
	}
	desc := str(al["description"])
	mergeTextBlocks(labels, ann, desc)
	status := firstNonEmpty(str(al["status"]), action)
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_GENERIC,
		AlertName:   firstNonEmpty(labels["alertname"], title),
		Title:       title,
		Severity:    firstNonEmpty(labels["severity"], pagerDutySeverity("", str(al["priority"]))),
		AlertSource: "opsgenie",
		State:       status,
		Resolved:    strings.EqualFold(action, "Close") || isResolvedState(status),
		Labels:      labels,
		Annotations: ann,
		Description: describedText(desc, ann),
	}
	if t, ok := firstTime(al, "createdAt", "created_at", "timestamp"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	return []*investigationv1.Alert{a}, nil
}

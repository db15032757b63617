package intake

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/textutil"
)

// ---- Slack message (incoming-webhook) and Discord embed notifications ----
//
// {"text": "...", "attachments": [{"title", "fallback", "text", "color",
// "ts", "fields": [{"title", "value"}], "title_link", "footer"}]}.
// Grafana, Alertmanager's slack_configs, Datadog and many others notify in
// this shape when pointed at a Slack-compatible receiver; each attachment
// is one alert, its labels in its fields or in a "Labels:" line of its
// text. Discord's webhook carries the same cards as "embeds" (title,
// description, url, timestamp, fields of name and value).

// SourceSlack names the Slack message format.
const SourceSlack = "slack"

// slackAttachments are the attachments of a Slack message that say what
// fired (a title, a fallback or a text); nil when obj is not one.
func slackAttachments(obj map[string]any) []map[string]any {
	raw, ok := obj["attachments"].([]any)
	if !ok || len(raw) == 0 {
		// Discord's execute-webhook message: the same cards as "embeds".
		if raw, ok = obj["embeds"].([]any); !ok || len(raw) == 0 {
			return nil
		}
	}
	var out []map[string]any
	for _, e := range raw {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		if firstStr(m, "title", "fallback", "text", "pretext", "description") == "" {
			continue
		}
		out = append(out, m)
	}
	return out
}

func parseSlack(obj map[string]any) ([]*investigationv1.Alert, error) {
	atts := slackAttachments(obj)
	if len(atts) == 0 {
		return nil, fmt.Errorf("%w: slack message needs attachments[] with a title, fallback or text", ErrBadFormat)
	}
	var out []*investigationv1.Alert
	for _, m := range atts {
		title := firstStr(m, "title", "fallback", "pretext")
		text := firstStr(m, "text", "description")
		labels := map[string]string{}
		ann := map[string]string{}
		if fs, ok := m["fields"].([]any); ok {
			for _, f := range fs {
				fm, ok := f.(map[string]any)
				if !ok {
					continue
				}
				k, v := strings.TrimSpace(firstStr(fm, "title", "name")), strings.TrimSpace(str(fm["value"]))
				if k == "" || v == "" {
					continue
				}
				if strings.ContainsAny(v, "\n") || strings.Contains(k, " ") {
					setMissing(ann, strings.ToLower(k), v)
				} else {
					setMissing(labels, strings.ToLower(k), v)
				}
			}
		}
		if u := firstStr(m, "title_link", "url"); u != "" {
			ann["generator_url"] = u
		}
		mergeTextBlocks(labels, ann, text+"\n", str(obj["text"])+"\n")
		state := "firing"
		upper := strings.ToUpper(title)
		if strings.Contains(upper, "[RESOLVED") || strings.Contains(upper, "[OK]") || strings.EqualFold(str(m["color"]), "good") {
			state = "resolved"
		}
		name := firstNonEmpty(labels["alertname"], stripStatePrefix(title))
		a := &investigationv1.Alert{
			Format:      investigationv1.AlertFormat_ALERT_FORMAT_GENERIC,
			AlertName:   name,
			Title:       title,
			Severity:    labels["severity"],
			AlertSource: firstNonEmpty(strings.ToLower(str(obj["username"])), SourceSlack),
			State:       state,
			Resolved:    state == "resolved",
			Labels:      labels,
			Annotations: ann,
			Summary:     textutil.FirstLine(text),
			Description: describedText(text, ann),
		}
		if t, ok := firstTime(m, "ts", "timestamp"); ok {
			a.StartsAt = timestamppb.New(t)
		}
		out = append(out, a)
	}
	return out, nil
}

// stripStatePrefix drops a notification's "[FIRING]"/"[FIRING:2]" prefix.
func stripStatePrefix(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 && i < 24 {
			return strings.TrimSpace(s[i+1:])
		}
	}
	return s
}

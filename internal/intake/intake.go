// Package intake turns a raw alert payload into normalised Alerts (the
// pipeline stage extract_alert). It detects the payload format — generic JSON,
// Alertmanager webhook v4, Grafana unified alerting, Datadog webhook,
// PagerDuty v3 webhook, or the opensre-style object — extracts the fields an
// investigation needs, computes a stable fingerprint of the alert's identity
// and classifies noise (resolved-only, test/heartbeat alerts, informational
// alerts without a symptom).
package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sort"
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/protocheck"
)

// MaxPayloadBytes is the largest payload Parse accepts.
const MaxPayloadBytes = 1 << 20

// Errors Parse wraps; test with errors.Is.
var (
	ErrEmpty         = errors.New("intake: empty payload")
	ErrTooBig        = errors.New("intake: payload too big")
	ErrNotJSON       = errors.New("intake: payload is not JSON")
	ErrNoAlerts      = errors.New("intake: payload holds no alerts")
	ErrUnknownFormat = errors.New("intake: unknown alert format")
	ErrUnknownSource = errors.New("intake: unknown source")
	ErrBadFormat     = errors.New("intake: payload does not match its format")
)

// Source names accepted as hints (SubmitAlertRequest.source).
const (
	SourceAuto         = "auto"
	SourceGeneric      = "generic"
	SourceAlertmanager = "alertmanager"
	SourceGrafana      = "grafana"
	SourceDatadog      = "datadog"
	SourcePagerDuty    = "pagerduty"
	SourceOpenSRE      = "opensre"
	SourceOpsgenie     = "opsgenie"
)

type parseFunc func(obj map[string]any) ([]*investigationv1.Alert, error)

// formats maps a source name to its format and parser. Aliases are listed too.
var formats = map[string]struct {
	format investigationv1.AlertFormat
	parse  parseFunc
}{
	SourceGeneric:      {investigationv1.AlertFormat_ALERT_FORMAT_GENERIC, parseGeneric},
	SourceAlertmanager: {investigationv1.AlertFormat_ALERT_FORMAT_ALERTMANAGER, parseAlertmanager},
	"prometheus":       {investigationv1.AlertFormat_ALERT_FORMAT_ALERTMANAGER, parseAlertmanager},
	SourceGrafana:      {investigationv1.AlertFormat_ALERT_FORMAT_GRAFANA, parseGrafana},
	SourceDatadog:      {investigationv1.AlertFormat_ALERT_FORMAT_DATADOG, parseDatadog},
	SourcePagerDuty:    {investigationv1.AlertFormat_ALERT_FORMAT_PAGERDUTY, parsePagerDuty},
	SourceOpenSRE:      {investigationv1.AlertFormat_ALERT_FORMAT_OPENSRE, parseOpenSRE},
	SourceOpsgenie:     {investigationv1.AlertFormat_ALERT_FORMAT_GENERIC, parseOpsgenie},
	SourceCloudWatch:   {investigationv1.AlertFormat_ALERT_FORMAT_GENERIC, parseCloudWatch},
	SourceSlack:        {investigationv1.AlertFormat_ALERT_FORMAT_GENERIC, parseSlack},
}

// Sources lists the accepted source hints (besides "" and "auto"), sorted.
func Sources() []string {
	out := make([]string, 0, len(formats))
	for k := range formats {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Parse detects the format of raw (or uses sourceHint when it names one),
// and returns one Alert per alert the payload carries, each with its
// fingerprint, incident window and noise classification. Errors name the
// problem and wrap one of the Err* values.
func Parse(raw []byte, sourceHint string) ([]*investigationv1.Alert, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: the request body has no alert", ErrEmpty)
	}
	if len(raw) > MaxPayloadBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d bytes (1 MiB)", ErrTooBig, len(raw), MaxPayloadBytes)
	}
	hint := strings.ToLower(strings.TrimSpace(sourceHint))
	var parse parseFunc
	if hint != "" && hint != SourceAuto {
		f, ok := formats[hint]
		if !ok {
			return nil, fmt.Errorf("%w %q: want one of auto, %s", ErrUnknownSource, sourceHint, strings.Join(Sources(), ", "))
		}
		parse = f.parse
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		if arr, ok := unwrapArray(m); ok {
			v = arr // an array payload wrapped by WrapArray
		}
	}
	var objs []map[string]any
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return nil, fmt.Errorf("%w: the JSON object has no fields", ErrEmpty)
		}
		objs = []map[string]any{t}
	case []any:
		if len(t) == 0 {
			return nil, fmt.Errorf("%w: the top-level array is empty", ErrNoAlerts)
		}
		for i, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: element %d of the top-level array is %s, want an object", ErrBadFormat, i, jsonKind(e))
			}
			objs = append(objs, m)
		}
	default:
		return nil, fmt.Errorf("%w: the payload is a JSON %s, want an object", ErrBadFormat, jsonKind(v))
	}
	var out []*investigationv1.Alert
	for i, obj := range objs {
		p := parse
		detected := ""
		if p == nil {
			name, derr := Detect(obj)
			detected = name
			if derr != nil {
				if len(objs) > 1 {
					return nil, fmt.Errorf("element %d: %w", i, derr)
				}
				return nil, derr
			}
			p = formats[name].parse
		}
		alerts, err := p(obj)
		if err != nil && (detected == SourceDatadog || detected == SourceOpenSRE) && errors.Is(err, ErrBadFormat) {
			// A format detected by a key it shares with other vendors'
			// envelopes (alert_type, event_type, commonLabels) whose parser
			// refuses the payload is read as a generic alert before it is
			// refused.
			if ga, gerr := parseGeneric(obj); gerr == nil {
				alerts, err = ga, nil
			}
		}
		if err != nil {
			if len(objs) > 1 {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			return nil, err
		}
		for _, a := range alerts {
			if a.GetStartsAt() == nil {
				if t, ok := inferStart(obj); ok {
					a.StartsAt = timestamppb.New(t)
				} else if t, ok := textStart(a.GetSummary(), a.GetDescription(), a.GetTitle(), a.GetErrorMessage()); ok {
					// No field says when: the text the notification printed does.
					a.StartsAt = timestamppb.New(t)
				}
			}
			if a.GetResolved() && a.GetStartsAt() != nil && a.GetIncidentWindow() == nil && len(alerts) == 1 {
				// A resolution's window reaches past its end: whether
				// anything still fails after it is the question.
				start := a.GetStartsAt().AsTime()
				if end, ok := inferEnd(obj, start); ok { // after start, within a day
					a.IncidentWindow = &evidencev1.TimeWindow{Start: timestamppb.New(start.Add(-WindowBefore)), End: timestamppb.New(end.Add(WindowAfter))}
				}
			}
		}
		out = append(out, alerts...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w", ErrNoAlerts)
	}
	for i, a := range out {
		finish(a)
		if err := protocheck.Timestamps(a); err != nil {
			// A time no record can hold (past 9999-12-31, or its incident
			// window is): the sender's error, not ours to store.
			if len(out) > 1 {
				return nil, fmt.Errorf("%w: alert %d: %v (times must fall in years 1 to 9999)", ErrBadFormat, i, err)
			}
			return nil, fmt.Errorf("%w: %v (times must fall in years 1 to 9999)", ErrBadFormat, err)
		}
	}
	return out, nil
}

func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the first JSON value", ErrNotJSON)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%w: trailing data after the first JSON value", ErrNotJSON)
	}
	return v, nil
}

// Detect names the format of one decoded payload object.
func Detect(obj map[string]any) (string, error) {
	if ev, ok := obj["event"].(map[string]any); ok {
		if _, ok := ev["data"].(map[string]any); ok {
			return SourcePagerDuty, nil
		}
		if et := str(ev["event_type"]); strings.HasPrefix(et, "incident.") {
			return SourcePagerDuty, nil
		}
	}
	if isOpsgenie(obj) {
		return SourceOpsgenie, nil
	}
	if _, ok := cloudWatchAlarm(obj); ok {
		return SourceCloudWatch, nil
	}
	if _, ok := obj["alerts"]; !ok && len(slackAttachments(obj)) > 0 {
		return SourceSlack, nil
	}
	if _, ok := obj["alerts"]; ok {
		if _, ok := obj["orgId"]; ok {
			return SourceGrafana, nil
		}
		if str(obj["version"]) == "1" {
			return SourceGrafana, nil
		}
		if alerts, ok := obj["alerts"].([]any); ok {
			for _, a := range alerts {
				if m, ok := a.(map[string]any); ok {
					if _, ok := m["valueString"]; ok {
						return SourceGrafana, nil
					}
					if _, ok := m["dashboardURL"]; ok {
						return SourceGrafana, nil
					}
				}
			}
		}
		return SourceAlertmanager, nil
	}
	// Grafana legacy alerting: ruleName/ruleId/evalMatches.
	if _, ok := obj["ruleName"]; ok {
		return SourceGrafana, nil
	}
	if _, ok := obj["evalMatches"]; ok {
		return SourceGrafana, nil
	}
	for _, k := range []string{"alert_type", "alert_transition", "alert_id", "event_type", "alert_status"} {
		if _, ok := obj[k]; ok {
			if _, has := obj["commonLabels"]; !has {
				return SourceDatadog, nil
			}
		}
	}
	if _, ok := obj["commonLabels"]; ok {
		return SourceOpenSRE, nil
	}
	if _, ok := obj["commonAnnotations"]; ok {
		return SourceOpenSRE, nil
	}
	if hasAnyKey(obj, genericKeys) || eventNamed(obj) {
		return SourceGeneric, nil
	}
	if _, ok := wrappedAlert(obj, false); ok {
		return SourceGeneric, nil
	}
	if _, ok := looseAlert(obj); ok {
		return SourceGeneric, nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 12 {
		keys = append(keys[:12], "...")
	}
	return "", fmt.Errorf("%w: found keys [%s]; want an Alertmanager/Grafana webhook (alerts[]), "+
		"an opensre-style object (title, state, commonLabels, commonAnnotations), a Datadog webhook (title, alert_type, tags), "+
		"a PagerDuty v3 webhook (event.data), an Opsgenie webhook (action, alert), a CloudWatch alarm (AlarmName, bare, via SNS or EventBridge), a Slack or Discord message (attachments[] or embeds[]) or a generic alert (alert_name or title, severity, labels, annotations)",
		ErrUnknownFormat, strings.Join(keys, ", "))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

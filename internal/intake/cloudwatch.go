package intake

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// ---- Amazon CloudWatch alarms ----
//
// Three documented shapes carry one alarm:
//   - an SNS notification: {"Type": "Notification", "TopicArn", "Subject",
//     "Message": "<the alarm as a JSON string>", "Timestamp"};
//   - the alarm itself (what the SNS message holds, or a Lambda relays):
//     {"AlarmName", "AlarmDescription", "NewStateValue", "NewStateReason",
//     "StateChangeTime", "Region", "Trigger": {"MetricName", "Namespace",
//     "Dimensions": [{"name", "value"}], "Threshold", ...}};
//   - an EventBridge event: {"source": "aws.cloudwatch", "detail-type":
//     "CloudWatch Alarm State Change", "detail": {"alarmName", "state":
//     {"value", "reason", "timestamp"}, "configuration": {"description",
//     "metrics": [{"metricStat": {"metric": {"namespace", "name",
//     "dimensions": {...}}}}]}}}.
// Metric dimensions become labels (a ClusterName, a ServiceName, a
// DBInstanceIdentifier name the target as they do in the console).

// SourceCloudWatch names the CloudWatch alarm formats.
const SourceCloudWatch = "cloudwatch"

// cloudWatchAlarm returns the alarm object of obj (unwrapping an SNS
// notification's JSON message) and whether obj is a CloudWatch alarm.
func cloudWatchAlarm(obj map[string]any) (map[string]any, bool) {
	if _, ok := obj["AlarmName"]; ok {
		return obj, true
	}
	if msg, ok := obj["Message"].(string); ok && (str(obj["Type"]) == "Notification" || str(obj["TopicArn"]) != "") {
		var inner map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(msg)), &inner); err == nil {
			if _, ok := inner["AlarmName"]; ok {
				// The envelope's time and subject are kept beside the alarm.
				for _, k := range []string{"Subject", "Timestamp", "TopicArn"} {
					if _, has := inner["sns"+k]; !has && str(obj[k]) != "" {
						inner["sns"+k] = obj[k]
					}
				}
				return inner, true
			}
		}
	}
	if str(obj["source"]) == "aws.cloudwatch" || strings.Contains(str(obj["detail-type"]), "CloudWatch Alarm") {
		if d, ok := obj["detail"].(map[string]any); ok && str(d["alarmName"]) != "" {
			return eventBridgeAlarm(obj, d), true
		}
	}
	return nil, false
}

// eventBridgeAlarm rewrites an EventBridge alarm state change in the SNS
// message's vocabulary.
func eventBridgeAlarm(obj, d map[string]any) map[string]any {
	out := map[string]any{"AlarmName": d["alarmName"], "Region": obj["region"], "AWSAccountId": obj["account"]}
	if st, ok := d["state"].(map[string]any); ok {
		out["NewStateValue"], out["NewStateReason"], out["StateChangeTime"] = st["value"], st["reason"], st["timestamp"]
	}
	if st, ok := d["previousState"].(map[string]any); ok {
		out["OldStateValue"] = st["value"]
	}
	if out["StateChangeTime"] == nil {
		out["StateChangeTime"] = obj["time"]
	}
	trig := map[string]any{}
	if cfg, ok := d["configuration"].(map[string]any); ok {
		out["AlarmDescription"] = cfg["description"]
		if ms, ok := cfg["metrics"].([]any); ok {
			for _, m := range ms {
				mm, _ := m.(map[string]any)
				stat, _ := mm["metricStat"].(map[string]any)
				metric, _ := stat["metric"].(map[string]any)
				if metric == nil {
					continue
				}
				trig["MetricName"], trig["Namespace"] = metric["name"], metric["namespace"]
				var dims []any
				if dm, ok := metric["dimensions"].(map[string]any); ok {
					for k, v := range dm {
						dims = append(dims, map[string]any{"name": k, "value": v})
					}
				}
				trig["Dimensions"] = dims
				break
			}
		}
	}
	out["Trigger"] = trig
	return out
}

func parseCloudWatch(obj map[string]any) ([]*investigationv1.Alert, error) {
	al, ok := cloudWatchAlarm(obj)
	if !ok {
		return nil, fmt.Errorf("%w: a CloudWatch alarm needs AlarmName (bare, in an SNS notification's Message, or an EventBridge detail.alarmName)", ErrBadFormat)
	}
	name := strings.TrimSpace(str(al["AlarmName"]))
	if name == "" {
		return nil, fmt.Errorf("%w: CloudWatch alarm has an empty AlarmName", ErrBadFormat)
	}
	labels := map[string]string{"alertname": name}
	ann := map[string]string{}
	trig, _ := al["Trigger"].(map[string]any)
	if trig != nil {
		dims, _ := trig["Dimensions"].([]any)
		for _, d := range dims {
			dm, _ := d.(map[string]any)
			k := firstStr(dm, "name", "Name")
			v := firstStr(dm, "value", "Value")
			if k != "" && v != "" {
				labels[k] = v
			}
		}
		for _, k := range []string{"MetricName", "Namespace", "Statistic", "ExtendedStatistic", "ComparisonOperator", "Threshold", "Period", "EvaluationPeriods"} {
			if v := str(trig[k]); v != "" {
				ann["cloudwatch_"+strings.ToLower(k)] = v
			}
		}
		if m := str(trig["MetricName"]); m != "" {
			ann["expr"] = fmt.Sprintf("%s %s %s %s", firstNonEmpty(str(trig["Statistic"]), str(trig["ExtendedStatistic"])), m, comparisonWord(str(trig["ComparisonOperator"])), str(trig["Threshold"]))
		}
	}
	for _, k := range []string{"Region", "AWSAccountId", "AlarmArn", "OldStateValue", "snsTopicArn", "snsSubject"} {
		if v := str(al[k]); v != "" {
			ann[strings.ToLower(k)] = v
		}
	}
	if r := str(al["Region"]); r != "" {
		setMissing(labels, "region", r)
	}
	state := str(al["NewStateValue"])
	a := &investigationv1.Alert{
		Format:      investigationv1.AlertFormat_ALERT_FORMAT_GENERIC,
		Title:       name,
		AlertName:   name,
		Summary:     str(al["NewStateReason"]),
		Description: str(al["AlarmDescription"]),
		Severity:    "critical",
		AlertSource: "cloudwatch",
		State:       state,
		Labels:      labels,
		Annotations: ann,
		Resolved:    strings.EqualFold(state, "OK"),
	}
	if strings.EqualFold(state, "INSUFFICIENT_DATA") {
		a.Severity = "warning"
	}
	if t, ok := firstTime(al, "StateChangeTime", "snsTimestamp"); ok {
		a.StartsAt = timestamppb.New(t)
	}
	return []*investigationv1.Alert{a}, nil
}

// comparisonWord renders a CloudWatch comparison operator.
func comparisonWord(op string) string {
	switch op {
	case "GreaterThanThreshold":
		return ">"
	case "GreaterThanOrEqualToThreshold":
		return ">="
	case "LessThanThreshold":
		return "<"
	case "LessThanOrEqualToThreshold":
		return "<="
	}
	return op
}

package intake

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/target"
)

// One alarm, three documented envelopes: each reads as the same alert,
// with the metric's dimensions as labels.
func TestCloudWatchAlarmEnvelopes(t *testing.T) {
	alarm := map[string]any{
		"AlarmName": "orders-api-5xx", "AlarmDescription": "5xx rate of the orders ALB target group",
		"NewStateValue": "ALARM", "NewStateReason": "Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0).",
		"StateChangeTime": "2026-03-02T10:15:00.000+0000", "Region": "EU (Ireland)", "OldStateValue": "OK",
		"Trigger": map[string]any{"MetricName": "HTTPCode_Target_5XX_Count", "Namespace": "AWS/ApplicationELB", "Statistic": "SUM",
			"ComparisonOperator": "GreaterThanThreshold", "Threshold": 10.0,
			"Dimensions": []any{map[string]any{"name": "ServiceName", "value": "orders-api"}, map[string]any{"name": "ClusterName", "value": "shop-prod"}}},
	}
	msg, _ := json.Marshal(alarm)
	sns, _ := json.Marshal(map[string]any{"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:eu-west-1:123:alarms",
		"Subject": `ALARM: "orders-api-5xx" in EU (Ireland)`, "Message": string(msg), "Timestamp": "2026-03-02T10:15:01.000Z"})
	bare, _ := json.Marshal(alarm)
	eb, _ := json.Marshal(map[string]any{"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm State Change", "region": "eu-west-1",
		"time": "2026-03-02T10:15:00Z", "detail": map[string]any{"alarmName": "orders-api-5xx",
			"state":         map[string]any{"value": "ALARM", "reason": "Threshold Crossed", "timestamp": "2026-03-02T10:15:00.000+0000"},
			"configuration": map[string]any{"description": "5xx rate", "metrics": []any{map[string]any{"metricStat": map[string]any{"metric": map[string]any{"namespace": "AWS/ApplicationELB", "name": "HTTPCode_Target_5XX_Count", "dimensions": map[string]any{"ServiceName": "orders-api"}}}}}}}})
	for name, raw := range map[string][]byte{"sns": sns, "bare": bare, "eventbridge": eb} {
		t.Run(name, func(t *testing.T) {
			if got, err := Detect(mustObj(t, raw)); err != nil || got != SourceCloudWatch {
				t.Fatalf("Detect = %q, %v; want cloudwatch", got, err)
			}
			as, err := Parse(raw, "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if a.GetAlertName() != "orders-api-5xx" || a.GetResolved() {
				t.Errorf("alert %q resolved=%v", a.GetAlertName(), a.GetResolved())
			}
			if a.GetStartsAt() == nil || a.GetStartsAt().AsTime().Minute() != 15 {
				t.Errorf("starts at %v, want 10:15", a.GetStartsAt())
			}
			if target.Lookup(a.GetLabels(), target.Service) != "orders-api" {
				t.Errorf("labels %v: the ServiceName dimension must name the service", a.GetLabels())
			}
			if !strings.Contains(a.GetAnnotations()["expr"], "HTTPCode_Target_5XX_Count") {
				t.Errorf("annotations %v lack the metric", a.GetAnnotations())
			}
		})
	}
	// An SNS notification whose message is not an alarm is not one.
	other, _ := json.Marshal(map[string]any{"Type": "Notification", "TopicArn": "arn:x", "Message": "hello"})
	if _, ok := cloudWatchAlarm(mustObj(t, other)); ok {
		t.Error("a plain SNS message read as an alarm")
	}
	ok, _ := json.Marshal(map[string]any{"AlarmName": "x", "NewStateValue": "OK"})
	if as, err := Parse(ok, "cloudwatch"); err != nil || !as[0].GetResolved() {
		t.Errorf("an OK state must read resolved: %v %v", as, err)
	}
}

func mustObj(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A search tool's envelope names the target deep inside its result (ECS
// field names): those fields become labels, and the sample hit's message
// says what fired.
func TestNestedEntitiesOfAnEnvelope(t *testing.T) {
	raw := []byte(`{"watch_id": "indexing-failures", "state": "firing",
	 "metadata": {"name": "Indexing failures", "severity": "high"},
	 "result": {"input": {"payload": {"hits": {"total": 9, "hits": [{"_source": {
	   "kubernetes": {"pod": {"name": "indexer-5c9d-x2k"}, "container": {"name": "indexer"}, "namespace": "search"},
	   "message": "bulk failed items=12 error=cluster_block_exception"}}]}}}}}`)
	as, err := Parse(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	if got := target.Lookup(a.GetLabels(), target.Pod); got != "indexer-5c9d-x2k" {
		t.Errorf("pod = %q (labels %v)", got, a.GetLabels())
	}
	if got := target.Lookup(a.GetLabels(), target.Namespace); got != "search" {
		t.Errorf("namespace = %q (labels %v)", got, a.GetLabels())
	}
	if !strings.Contains(a.GetAnnotations()["sample_message"], "cluster_block_exception") {
		t.Errorf("annotations %v lack the sample message", a.GetAnnotations())
	}
}

// Tags as vendors write them: "key:value", a bare word, and Dynatrace's
// context prefix before the key.
func TestTagsMap(t *testing.T) {
	got := tagsMap("env:prod, team:hive, [Kubernetes]app:hive-ingest, canary")
	for k, want := range map[string]string{"env": "prod", "team": "hive", "app": "hive-ingest", "canary": "true"} {
		if got[k] != want {
			t.Errorf("tag %s = %q, want %q (all %v)", k, got[k], want, got)
		}
	}
}

// A problem notification's tags are read from its envelope, context
// prefixes and all.
func TestEnvelopeTags(t *testing.T) {
	raw := []byte(`{"ProblemID": "P-1", "ProblemTitle": "Failure rate increase", "State": "OPEN", "ImpactedEntity": "HiveIngest",
	 "Tags": "env:prod, [Kubernetes]app:hive-ingest"}`)
	as, err := Parse(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := as[0].GetLabels()["app"]; got != "hive-ingest" {
		t.Errorf("app = %q (labels %v)", got, as[0].GetLabels())
	}
}

package analysis

import (
	"context"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// TestSameInputMeansSameAnalysis: the critic's verdict on a pin (what
// SameInput ignores) does not change the analysis, and a change SameInput
// sees does.
func TestSameInputMeansSameAnalysis(t *testing.T) {
	alert := &investigationv1.Alert{AlertName: "WebErrors", Namespace: "shop", Service: "web"}
	logs := []facts.LogLine{
		{Pod: "web-1", Service: "web", Level: "ERROR", Message: "upstream payments-gw:8443 failed: connection refused", Timestamp: at(0)},
		{Pod: "web-2", Service: "web", Level: "ERROR", Message: "upstream payments-gw:8443 failed: connection refused", Timestamp: at(1)},
	}
	pods := pin(t, "p", "list_pods", "pods", facts.KeyPods, []facts.Pod{healthyPod("web-1"), healthyPod("web-2")})
	lines := pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, logs)
	judged := proto.CloneOf(lines)
	judged.ValidationStatus = evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED
	judged.CausalRole = evidencev1.CausalRole_CAUSAL_ROLE_ROOT_CAUSE
	judged.CriticRationale, judged.Confidence, judged.Version = "checked", 0.9, 2
	if !SameInput(lines, judged) {
		t.Fatal("a verdict changes the input")
	}
	other := pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, logs[:1])
	if SameInput(lines, other) {
		t.Fatal("other facts are the same input")
	}
	result := func(ps ...*evidencev1.EvidencePin) string {
		res, err := Analyze(context.Background(), Input{Alert: alert, Pins: ps})
		if err != nil {
			t.Fatal(err)
		}
		d := Diagnose(Input{Alert: alert, Pins: ps}, res)
		b, err := protojson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := result(pods, lines), result(pods, judged); a != b {
		t.Fatalf("the verdict changed the analysis:\n%s\n%s", a, b)
	}
	if a, b := result(pods, lines), result(pods, other); a == b {
		t.Fatal("other facts gave the same analysis")
	}
}

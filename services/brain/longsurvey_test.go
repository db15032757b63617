package brain

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/structpb"
)

// A survey whose window was flat throughout is read again over the hours
// before, with the same scope, once; a survey that saw a change is not.
func TestLongSurveyAfterFlatWindow(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs, &evidencev1.ToolDefinition{Intent: intentSurveyMetrics, ParamsSchema: []*evidencev1.ToolParam{
		{Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	h.svc.defs = nil
	scope, _ := structpb.NewStruct(map[string]any{"service": "telemetry-ingest"})
	state := func(shape string) *invState {
		ss := []facts.Series{{Name: "aws_rds_burst_balance_average", Shape: "flat", Count: 3}, {Name: "ingest_queue_depth", Shape: shape, Count: 3}}
		return &invState{
			rec:    &investigationv1.InvestigationRecord{SessionId: "s", ToolCalls: []*investigationv1.ToolCallRecord{{Intent: intentSurveyMetrics, Params: scope, PinId: "pin_s"}}},
			rc:     &evidencev1.RouterContext{},
			pins:   []*evidencev1.EvidencePin{{Id: "pin_s", SourceTool: intentSurveyMetrics, Metadata: factsStruct(t, facts.KeySeries, ss), Success: true}},
			pinIdx: map[string]int{"pin_s": 0},
		}
	}
	st := state("flat")
	cs := h.svc.longSurvey(testCtx(t), st)
	if len(cs) != 1 || cs[0].Intent != intentSurveyMetrics || cs[0].Params["since"] != surveyLookback || cs[0].Params["service"] != "telemetry-ingest" {
		t.Fatalf("long survey %+v, want the same scope over %s", cs, surveyLookback)
	}
	p, _ := structpb.NewStruct(cs[0].Params)
	st.rec.ToolCalls = append(st.rec.ToolCalls, &investigationv1.ToolCallRecord{Intent: intentSurveyMetrics, Params: p, PinId: "pin_l"})
	if cs := h.svc.longSurvey(testCtx(t), st); len(cs) != 0 {
		t.Errorf("the long survey again: %+v", cs)
	}
	if cs := h.svc.longSurvey(testCtx(t), state("creep")); len(cs) != 0 {
		t.Errorf("a window that saw a change read again: %+v", cs)
	}
}

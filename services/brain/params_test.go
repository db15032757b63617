package brain

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func TestInferParamsForRequestedIntents(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs,
		&evidencev1.ToolDefinition{Intent: "get_node_health", ParamsSchema: []*evidencev1.ToolParam{{Name: "name", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}},
		&evidencev1.ToolDefinition{Intent: "search_logs", Category: evidencev1.ToolCategory_TOOL_CATEGORY_LOGS, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING, Required: true}, {Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}},
	)
	cases := []struct {
		name   string
		alert  *investigationv1.Alert
		intent string
		want   map[string]any
		absent []string
	}{
		{"a node tool's name is never the alerted pod", &investigationv1.Alert{Namespace: "shop", Pod: "cart-6d7f8b9c5-ab1cd", Service: "cart"}, "get_node_health", nil, []string{"name"}},
		{"scoped log search reads every line", &investigationv1.Alert{Namespace: "shop", Service: "cart"}, "search_logs", map[string]any{"query": "*", "service": "cart"}, nil},
		{"the alert's error text is the query", &investigationv1.Alert{Namespace: "shop", Service: "cart", ErrorMessage: "deadline exceeded"}, "search_logs", map[string]any{"query": "deadline exceeded"}, nil},
		{"pods of the workload by prefix when none is known", &investigationv1.Alert{Namespace: "shop", Service: "cart"}, "fetch_pod_logs", map[string]any{"pod": "cart-*"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: tc.alert}, rc: &evidencev1.RouterContext{}}
			h.svc.defs = nil // fresh definitions for each case
			got := h.svc.inferParams(testCtx(t), st, tc.intent)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all %v)", k, got[k], v, got)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s should be unset, got %v", k, got[k])
				}
			}
		})
	}
}

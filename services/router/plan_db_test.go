package router

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// A managed-database alert without a Kubernetes namespace looks
// cluster-wide: batch work, recent events and logs naming the database.
func TestPlanManagedDatabaseWithoutNamespace(t *testing.T) {
	defs := append(testRegistry(), &evidencev1.ToolDefinition{Intent: "list_jobs", Label: "jobs", Category: evidencev1.ToolCategory_TOOL_CATEGORY_CLUSTER, Available: true,
		ParamsSchema: []*evidencev1.ToolParam{str("namespace"), str("name")}})
	reg := NewRegistry(defs)
	dbAlert := &investigationv1.Alert{Title: "[Triggered] orbit-pg CPU above 85%", AlertSource: "datadog", Labels: map[string]string{"dbinstanceidentifier": "orbit-pg"}}
	nsAlert := &investigationv1.Alert{Title: "orbit-pg CPU above 85%", Namespace: "space", Labels: map[string]string{"dbinstanceidentifier": "orbit-pg"}}
	cases := []struct {
		name   string
		alert  *investigationv1.Alert
		intent string
		want   map[string]any
		absent bool
	}{
		{"jobs in every namespace", dbAlert, "list_jobs", map[string]any{"namespace": "all"}, false},
		{"events in every namespace", dbAlert, "get_events", map[string]any{"namespace": "all"}, false},
		{"logs naming the database", dbAlert, "search_logs", map[string]any{"query": `"orbit-pg"`}, false},
		{"a namespaced database alert keeps its namespace", nsAlert, "list_jobs", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _, err := Plan(reg, tc.alert, 10)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := actionOf(p, tc.intent)
			if tc.absent {
				if a != nil && a.GetParams().AsMap()["namespace"] == "all" {
					t.Fatalf("%s planned cluster-wide for a namespaced alert: %v", tc.intent, a.GetParams().AsMap())
				}
				return
			}
			if a == nil {
				t.Fatalf("%s not planned: %v", tc.intent, intentsOf(p))
			}
			got := a.GetParams().AsMap()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s param %s = %v, want %v (all %v)", tc.intent, k, got[k], v, got)
				}
			}
		})
	}
}

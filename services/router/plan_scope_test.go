package router

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func scopeRegistry(t *testing.T) *Registry {
	t.Helper()
	defs := testRegistry()
	defs = append(defs,
		&evidencev1.ToolDefinition{Intent: "survey_metrics", Label: "survey", Category: evidencev1.ToolCategory_TOOL_CATEGORY_METRICS, Available: true,
			ParamsSchema: []*evidencev1.ToolParam{str("namespace"), str("service"), str("pod"), str("node")}})
	return NewRegistry(defs)
}

func TestPlanScopesFromTheAlert(t *testing.T) {
	cases := []struct {
		name   string
		alert  *investigationv1.Alert
		intent string
		want   map[string]any
	}{
		{"workload from a deployment pod name", &investigationv1.Alert{AlertName: "PodOOMKilled", Namespace: "docs", Pod: "render-7f8c9d6b5-x2k4p", Summary: "container OOMKilled, exit code 137"},
			"survey_metrics", map[string]any{"namespace": "docs", "service": "render"}},
		{"node alert surveys the node and reads events everywhere", &investigationv1.Alert{AlertName: "NodeDiskPressure", Labels: map[string]string{"node": "wk-pool-3"}, Summary: "node wk-pool-3 has disk pressure"},
			"get_events", map[string]any{"namespace": "all"}},
		{"node alert surveys the node", &investigationv1.Alert{AlertName: "NodeDiskPressure", Labels: map[string]string{"node": "wk-pool-3"}, Summary: "node wk-pool-3 has disk pressure"},
			"survey_metrics", map[string]any{"node": "wk-pool-3"}},
		{"consumer group names the consumer", &investigationv1.Alert{AlertName: "ConsumerLagHigh", Namespace: "streams", Labels: map[string]string{"consumergroup": "enricher", "topic": "clicks"}, Summary: "consumer group enricher lag 90k"},
			"fetch_pod_logs", map[string]any{"namespace": "streams", "pod": "enricher-*"}},
		{"synthetic check searches its location", &investigationv1.Alert{AlertName: "SyntheticFailing", Service: "shopfront", Labels: map[string]string{"synthetics_location": "gcp:eu-north1"}, Summary: "browser test failed on 1 of 4 locations"},
			"search_logs", map[string]any{"query": `"gcp:eu-north1"`}},
		{"a namespace alone is read whole, INFO included", &investigationv1.Alert{AlertName: "SearchClusterYellow", Namespace: "archive", Summary: "cluster health yellow: 5xx errors from the search tier"},
			"search_logs", map[string]any{"query": "*", "namespace": "archive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _, err := Plan(scopeRegistry(t), tc.alert, 12)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := actionOf(p, tc.intent)
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

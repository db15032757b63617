package router

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
)

func crashAlert() *investigationv1.Alert {
	return &investigationv1.Alert{
		AlertName: "KubePodCrashLooping", AlertSource: "alertmanager", Namespace: "payments", Service: "payments-api",
		Pod:         "payments-api-6c9f7d-abcde",
		Summary:     "Pod payments-api-6c9f7d-abcde restarted 8 times in 25 minutes",
		Description: "Container exit code 137 reported by kubelet",
		Labels:      map[string]string{"severity": "critical", "workload_type": "deployment", "workload_name": "payments-api"},
	}
}

func dbAlert() *investigationv1.Alert {
	return &investigationv1.Alert{
		Title: "Connection exhaustion on orders-db", AlertSource: "cloudwatch",
		Labels:      map[string]string{"alertname": "RDSConnectionsHigh", "service": "rds", "engine": "postgres"},
		Annotations: map[string]string{"db_instance_identifier": "orders-db", "summary": "DatabaseConnections reached 97% of max_connections"},
	}
}

func errorRateAlert() *investigationv1.Alert {
	return &investigationv1.Alert{
		AlertName: "HighErrorRate", AlertSource: "prometheus", Namespace: "shop", Service: "checkout",
		Summary: "checkout HTTP 5xx error rate above 5% for 10 minutes",
	}
}

func plan(t *testing.T, h *harness, a *investigationv1.Alert, budget int32) *routerv1.PlanActionsResponse {
	t.Helper()
	resp, err := h.client.PlanActions(context.Background(), &routerv1.PlanActionsRequest{SessionId: "s1", Alert: a, ToolBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func actionOf(p *investigationv1.TaskPlan, intent string) (*investigationv1.PlannedAction, int) {
	for i, a := range p.GetActions() {
		if a.GetIntent() == intent {
			return a, i
		}
	}
	return nil, -1
}

func TestPlanActions(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name     string
		alert    *investigationv1.Alert
		top      []string // intents expected within the first len(top) actions
		params   map[string]map[string]any
		contains map[string]string // intent -> substring of its query param
		absent   []string
	}{
		{name: "crash loop", alert: crashAlert(),
			top: []string{"fetch_pod_logs", "check_pod_status", "get_events", "describe_resource"},
			params: map[string]map[string]any{
				"fetch_pod_logs":    {"previous": true, "pod": "payments-api-6c9f7d-abcde", "namespace": "payments"},
				"describe_resource": {"kind": "pod", "name": "payments-api-6c9f7d-abcde"},
				"get_events":        {"involved_object": "pod/payments-api-6c9f7d-abcde"},
			},
			absent: []string{"query_db_metrics", "get_db_top_queries", "re_investigate_service"}},
		{name: "database", alert: dbAlert(),
			top: []string{"query_db_metrics", "get_db_top_queries", "get_db_events"},
			params: map[string]map[string]any{
				"query_db_metrics":   {"instance": "orders-db"},
				"get_db_top_queries": {"instance": "orders-db"},
			},
			absent: []string{"check_pod_status", "fetch_pod_logs", "describe_resource", "get_deploy_history"}},
		{name: "error rate", alert: errorRateAlert(),
			top:      []string{"query_prometheus", "get_deploy_history"},
			params:   map[string]map[string]any{"get_deploy_history": {"service": "checkout"}},
			contains: map[string]string{"query_prometheus": `http_requests_total{service="checkout",code=~"5.."}`},
			absent:   []string{"query_db_metrics"}},
		{name: "uptime check without workload or namespace", alert: &investigationv1.Alert{
			Title: "homepage down", AlertSource: "uptime", Summary: "https://www.example.test/ returns HTTP 404 from 4 of 4 locations",
			Labels: map[string]string{"monitor": "homepage", "status": "down"}},
			top:      []string{"search_logs"},
			contains: map[string]string{"search_logs": "error"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := plan(t, h, tc.alert, 0)
			p := resp.GetPlan()
			if p.GetFallback() || p.GetToolBudget() != 10 || len(p.GetActions()) == 0 || len(p.GetActions()) > 10 {
				t.Fatalf("plan = %v", p)
			}
			for _, in := range tc.top {
				a, i := actionOf(p, in)
				if a == nil || i >= len(tc.top) {
					t.Errorf("%s at position %d, want within the top %d: %v", in, i, len(tc.top), intentsOf(p))
				}
			}
			for _, a := range p.GetActions() {
				if a.GetScore() <= 0 || a.GetRationale() == "" || a.GetWorker() == "" {
					t.Errorf("action %v lacks score, rationale or worker", a)
				}
			}
			for in, want := range tc.params {
				a, _ := actionOf(p, in)
				got := a.GetParams().AsMap()
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s param %s = %#v, want %#v", in, k, got[k], v)
					}
				}
			}
			for in, sub := range tc.contains {
				a, _ := actionOf(p, in)
				if q, _ := a.GetParams().AsMap()["query"].(string); !strings.Contains(q, sub) {
					t.Errorf("%s query %q lacks %q", in, q, sub)
				}
			}
			for _, in := range tc.absent {
				if a, _ := actionOf(p, in); a != nil {
					t.Errorf("%s planned for %s: %v", in, tc.name, a)
				}
			}
			if len(resp.GetTrips()) != 0 {
				t.Errorf("unexpected trips %v", resp.GetTrips())
			}
			if !strings.Contains(p.GetRationale(), "signals:") {
				t.Errorf("rationale = %q", p.GetRationale())
			}
		})
	}
}

func intentsOf(p *investigationv1.TaskPlan) []string {
	var out []string
	for _, a := range p.GetActions() {
		out = append(out, a.GetIntent())
	}
	return out
}

func TestPlanActionsBudgetTrip(t *testing.T) {
	h := newHarness(t)
	resp := plan(t, h, crashAlert(), 3)
	if n := len(resp.GetPlan().GetActions()); n != 3 {
		t.Fatalf("%d actions, want 3", n)
	}
	if len(resp.GetTrips()) != 1 {
		t.Fatalf("trips = %v", resp.GetTrips())
	}
	trip := resp.GetTrips()[0]
	if trip.GetKind() != GuardrailToolBudget || trip.GetOwner() != "router" || trip.GetLimit() != 3 || trip.GetValue() <= 3 || trip.GetTime() == nil {
		t.Errorf("trip = %v", trip)
	}
	if _, err := h.client.PlanActions(context.Background(), &routerv1.PlanActionsRequest{Alert: crashAlert(), ToolBudget: -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative budget: %v", err)
	}
	if _, err := h.client.PlanActions(context.Background(), &routerv1.PlanActionsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no alert: %v", err)
	}
}

func TestPlanActionsFallback(t *testing.T) {
	h := newHarness(t)
	resp := plan(t, h, &investigationv1.Alert{Title: "Something odd happened", AlertSource: "webhook"}, 4)
	p := resp.GetPlan()
	if !p.GetFallback() || len(p.GetActions()) != 4 || !strings.Contains(p.GetRationale(), "fallback") {
		t.Fatalf("plan = %v", p)
	}
	for _, a := range p.GetActions() {
		if !strings.Contains(a.GetRationale(), "fallback") || a.GetIntent() == "re_investigate_service" {
			t.Errorf("action %v", a)
		}
	}
	// runnable tools (no missing required params) come first
	first := p.GetActions()[0]
	if strings.Contains(first.GetRationale(), "needs") {
		t.Errorf("first fallback action needs params: %v", first)
	}
	if len(resp.GetTrips()) != 1 || resp.GetTrips()[0].GetKind() != GuardrailToolBudget {
		t.Errorf("trips = %v", resp.GetTrips())
	}
}

func TestPlanActionsSkipsUnavailable(t *testing.T) {
	h := newHarness(t)
	for _, tl := range h.tools.tools {
		if tl.GetIntent() == "fetch_pod_logs" {
			tl.Available = false
		}
	}
	if a, _ := actionOf(plan(t, h, crashAlert(), 0).GetPlan(), "fetch_pod_logs"); a != nil {
		t.Errorf("unavailable tool planned: %v", a)
	}
}

func bigRegistry(extraPrimary, secondary int) []*evidencev1.ToolDefinition {
	tools := testRegistry()
	for i := range extraPrimary {
		tools = append(tools, &evidencev1.ToolDefinition{Intent: fmt.Sprintf("extra_tool_%02d", i), Available: true,
			Category: evidencev1.ToolCategory_TOOL_CATEGORY_NETWORK, Description: "an extra integration"})
	}
	for i := range secondary {
		tools = append(tools, &evidencev1.ToolDefinition{Intent: fmt.Sprintf("think_%d", i), Available: true, Secondary: true,
			Description: "reasoning helper"})
	}
	tools = append(tools, &evidencev1.ToolDefinition{Intent: "not_configured", Available: false})
	return tools
}

func TestSelectTools(t *testing.T) {
	ctx := context.Background()
	planned := &investigationv1.TaskPlan{Actions: []*investigationv1.PlannedAction{{Intent: "get_events"}, {Intent: "think_4"}, {Intent: "fetch_pod_logs"}}}
	tests := []struct {
		name          string
		primary, sec  int
		max           int32
		plan          *investigationv1.TaskPlan
		wantN         int
		wantSecondary int
		wantDropped   int
		wantTrips     []investigationv1.Guardrail
	}{
		{name: "cap bites with reserve", primary: 26, sec: 5, plan: planned, wantN: 32, wantSecondary: 4, wantDropped: 13,
			wantTrips: []investigationv1.Guardrail{GuardrailMaxToolSchemas, GuardrailSecondaryReserve}},
		{name: "override cap", primary: 0, sec: 5, max: 6, plan: planned, wantN: 6, wantSecondary: 4, wantDropped: 13,
			wantTrips: []investigationv1.Guardrail{GuardrailMaxToolSchemas, GuardrailSecondaryReserve}},
		{name: "fits", primary: 0, sec: 2, wantN: 16, wantSecondary: 2},
		{name: "reserve not needed", primary: 30, sec: 0, wantN: 32, wantDropped: 12, wantTrips: []investigationv1.Guardrail{GuardrailMaxToolSchemas}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.tools.tools = bigRegistry(tc.primary, tc.sec)
			resp, err := h.client.SelectTools(ctx, &routerv1.SelectToolsRequest{SessionId: "s1", Plan: tc.plan, Alert: crashAlert(), MaxSchemas: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.GetTools()) != tc.wantN || len(resp.GetDropped()) != tc.wantDropped {
				t.Fatalf("selected %d dropped %d (%v), want %d/%d", len(resp.GetTools()), len(resp.GetDropped()), resp.GetDropped(), tc.wantN, tc.wantDropped)
			}
			sec := 0
			seen := map[string]bool{}
			for _, tl := range resp.GetTools() {
				if tl.GetSecondary() {
					sec++
				}
				if !tl.GetAvailable() || seen[tl.GetIntent()] {
					t.Errorf("selected unavailable or duplicate %s", tl.GetIntent())
				}
				seen[tl.GetIntent()] = true
			}
			if sec != tc.wantSecondary {
				t.Errorf("%d secondary tools selected, want %d", sec, tc.wantSecondary)
			}
			if tc.plan != nil {
				for i, a := range tc.plan.GetActions() {
					if resp.GetTools()[i].GetIntent() != a.GetIntent() {
						t.Errorf("position %d = %s, want planned %s", i, resp.GetTools()[i].GetIntent(), a.GetIntent())
					}
				}
			}
			var trips []investigationv1.Guardrail
			for _, tr := range resp.GetTrips() {
				trips = append(trips, tr.GetKind())
				if tr.GetOwner() != "router" || tr.GetDetail() == "" {
					t.Errorf("trip %v", tr)
				}
			}
			if !slices.Equal(trips, tc.wantTrips) {
				t.Errorf("trips = %v, want %v", trips, tc.wantTrips)
			}
			wantMax := tc.max
			if wantMax == 0 {
				wantMax = 32
			}
			if resp.GetMaxSchemas() != wantMax || resp.GetSecondaryReserve() != 3 {
				t.Errorf("max %d reserve %d", resp.GetMaxSchemas(), resp.GetSecondaryReserve())
			}
		})
	}
	h := newHarness(t)
	if _, err := h.client.SelectTools(ctx, &routerv1.SelectToolsRequest{MaxSchemas: -2}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("negative cap: %v", err)
	}
}

func BenchmarkPlanActions(b *testing.B) {
	reg := NewRegistry(bigRegistry(26, 5))
	a := crashAlert()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Plan(reg, a, 10); err != nil {
			b.Fatal(err)
		}
	}
}

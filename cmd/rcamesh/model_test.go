package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/backend/fixture"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
	"github.com/rcamesh/rcamesh/internal/scenario"
)

// TestModelLoopThroughTheMesh runs the demo investigation with a model
// configured (an OpenAI-compatible server that replays scripted turns over
// real HTTP) and checks the brain's guardrails against it: an endless
// tool-caller is stopped, and a model answering garbage degrades to the
// rules diagnosis with all the evidence kept.
func TestModelLoopThroughTheMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mesh")
	}
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name   string
		script func(s *llmtest.Server)
		check  func(t *testing.T, res map[string]any)
	}{
		{
			name:   "endless tool caller is stopped",
			script: func(s *llmtest.Server) { s.Endless("check_pod_status", `{"namespace":"retail"}`) },
			check: func(t *testing.T, res map[string]any) {
				loops, _ := res["loops"].(float64)
				calls, _ := res["llm_calls"].(float64)
				if calls < 2 || loops > 20 {
					t.Fatalf("want several model calls stopped within the loop cap, got %v calls, %v loops", calls, loops)
				}
				if res["root_cause"] == "" {
					t.Fatalf("no diagnosis after the breaker: %v", res)
				}
				trips, _ := res["guardrail_trips"].([]any)
				brainTrip := false
				for _, tr := range trips {
					if m, _ := tr.(map[string]any); m["owner"] == "brain" {
						brainTrip = true
					}
				}
				if !brainTrip {
					t.Fatalf("the brain's guardrail did not trip against an endless tool caller: %v", trips)
				}
			},
		},
		{
			name: "garbage answers degrade and keep the evidence",
			script: func(s *llmtest.Server) {
				for i := 0; i < 30; i++ {
					s.Push(llmtest.Turn{Raw: "this is not json"})
				}
			},
			check: func(t *testing.T, res map[string]any) {
				if tc, _ := res["tools_called"].([]any); len(tc) == 0 {
					t.Fatalf("the evidence gathered before the model failed was lost: %v", res)
				}
				if res["root_cause_category"] == "" || res["root_cause"] == "" {
					t.Fatalf("no degraded diagnosis: %v", res)
				}
			},
		},
		{
			// The critic refuses an answer whose claims cite tool names
			// instead of pin ids; at its rejection limit its decision is the
			// outcome: NEEDS_REVIEW with the limit's trip in the record,
			// never CONCLUDED at the model's own confidence.
			name: "rejection limit ends needs review",
			script: func(s *llmtest.Server) {
				answer := `{"root_cause": "The checkout pods run out of memory", "root_cause_category": "resource_exhaustion",
 "root_cause_entity": "deployment/checkout", "validated_claims": [{"claim": "pods were OOMKilled", "pin_ids": ["check_pod_status", "get_events"]}],
 "confidence": 0.88}`
				for i := 0; i < 30; i++ {
					s.Push(llmtest.Text(answer))
				}
			},
			check: func(t *testing.T, res map[string]any) {
				if res["status"] != "needs_review" {
					t.Fatalf("status %v, want needs_review (stop: %v)", res["status"], res["stop_reason"])
				}
				trips, _ := res["guardrail_trips"].([]any)
				limit := 0
				for _, tr := range trips {
					if m, _ := tr.(map[string]any); m["guardrail"] == "evaluator_rejection_limit" && m["owner"] == "critic" {
						limit++
					}
				}
				if limit != 1 {
					t.Fatalf("want the critic's rejection-limit trip once in the record, got %d: %v", limit, trips)
				}
				if calls, _ := res["llm_calls"].(float64); calls != 3 {
					t.Fatalf("want the loop stopped at the third refused answer (3 model calls), got %v", calls)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			tt.script(srv)
			set, err := fixture.New(sc, logger)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m, err := startMesh(ctx, set, filepath.Join(t.TempDir(), "data"), logger, []string{
				"-llm.provider=openai-compatible", "-llm.base-url=" + srv.BaseURL(), "-llm.model=scripted", "-llm.max-retries=0", "-llm.timeout=5s"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.investigateAlert(ctx, sc.AlertRaw, sc.ID)
			if stopErr := m.stop(); stopErr != nil {
				t.Errorf("stop: %v", stopErr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(srv.Requests()) == 0 {
				t.Fatal("the model was never called")
			}
			b, err := json.Marshal(res.Scoring)
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			tt.check(t, out)
		})
	}
}

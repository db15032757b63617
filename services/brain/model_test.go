package brain

import (
	"context"
	"strings"
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/eval/score"
	"github.com/rcamesh/rcamesh/internal/intake"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
)

func newModel(t *testing.T, srv *llmtest.Server) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Config{Provider: llm.ProviderOpenAICompatible, Model: "test-model", BaseURL: srv.BaseURL(),
		APIKey: "test-key", Timeout: 10 * time.Second, MaxRetries: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const finalJSON = `{"root_cause":"cart container OOM-killed (exit 137) under its 256Mi limit","root_cause_category":"resource_exhaustion",
"root_cause_entity":"pod/shop/cart-7d9f-abcde","causal_chain":["memory grows","limit reached","OOM kill","crash loop"],
"validated_claims":[{"claim":"exit code 137","pin_ids":["p1"]}],"non_validated_claims":["traffic grew"],
"ruled_out":[{"alternative":"bad deploy","reason":"no rollout in window"}],"remediation_steps":["raise the memory limit"],"confidence":0.86}`

func investigateWithModel(t *testing.T, cfg *Config, script []llmtest.Turn, setup func(*harness)) (*investigationv1.InvestigationRecord, *llmtest.Server, *harness) {
	t.Helper()
	srv := llmtest.New(t, script...)
	h := newHarness(t, harnessOpts{cfg: cfg, model: newModel(t, srv)})
	if setup != nil {
		setup(h)
	}
	alerts, err := intake.Parse([]byte(crashAlert), "")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return rec, srv, h
}

func TestModelLoopConcludes(t *testing.T) {
	rec, srv, h := investigateWithModel(t, nil, []llmtest.Turn{
		llmtest.Tools(llmtest.Call{ID: "c1", Name: "get_events", Arguments: `{"namespace":"shop"}`}),
		llmtest.Text("Here is my conclusion:\n```json\n" + finalJSON + "\n```"),
	}, nil)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := reqs[0].Messages()
	if len(msgs) != 5 || msgs[0]["role"] != "system" || msgs[2]["role"] != "assistant" {
		t.Fatalf("first request messages %v", msgs)
	}
	calls, _ := msgs[2]["tool_calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("seed calls injected: %v", msgs[2])
	}
	for i, c := range calls {
		id := c.(map[string]any)["id"]
		if msgs[3+i]["role"] != "tool" || msgs[3+i]["tool_call_id"] != id {
			t.Errorf("tool result %d answers %v, want %v", i, msgs[3+i]["tool_call_id"], id)
		}
	}
	if n := len(reqs[0].Tools()); n != 4 {
		t.Errorf("%d tools offered", n)
	}
	if got := strings.Join(h.tools.intents(), ","); got != "check_pod_status,fetch_pod_logs,get_events" {
		t.Errorf("tool calls %s", got)
	}
	tc := rec.GetToolCalls()
	if tc[0].GetOrigin() != originSeed || tc[0].GetIteration() != 0 || tc[2].GetOrigin() != originModel || tc[2].GetIteration() != 1 {
		t.Errorf("tool call records %v", tc)
	}
	d := rec.GetDiagnosis()
	if d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_CONCLUDED ||
		d.GetCategory() != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION ||
		!strings.Contains(d.GetRootCause(), "OOM-killed") || d.GetHypotheses()[0].GetDetector() != "model" || d.GetConfidence() != 0.86 {
		t.Errorf("diagnosis %v", d)
	}
	if len(rec.GetModelCalls()) != 2 || rec.GetTokens() != 30 || rec.GetModelCalls()[0].GetModel() == "" {
		t.Errorf("model calls %v tokens %d", rec.GetModelCalls(), rec.GetTokens())
	}
	if rec.GetGuardrails().GetMaxToolSchemas() != 32 {
		t.Errorf("router schema cap not recorded: %v", rec.GetGuardrails())
	}
	score := score.Record(rec, nil, "s", "")
	if score["llm_calls"] != 2 || score["root_cause_category"] != "resource_exhaustion" {
		t.Errorf("scoring %v", score)
	}
}

func TestModelDegraded(t *testing.T) {
	tests := []struct {
		name   string
		script []llmtest.Turn
	}{
		{"server error", []llmtest.Turn{llmtest.Status(500, "")}},
		{"garbage answer", []llmtest.Turn{llmtest.Text("honestly no idea, looks weird")}},
		{"error after evidence", []llmtest.Turn{
			llmtest.Tools(llmtest.Call{ID: "c1", Name: "get_events", Arguments: `{"namespace":"shop"}`}),
			llmtest.Status(503, ""),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, h := investigateWithModel(t, nil, tc.script, nil)
			d := rec.GetDiagnosis()
			if d.GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_DEGRADED || !strings.HasPrefix(d.GetStopReason(), "degraded") {
				t.Fatalf("status %v stop %q", d.GetStatus(), d.GetStopReason())
			}
			if !hasTrip(rec, GuardrailDegraded) {
				t.Errorf("no degraded trip: %v", rec.GetGuardrailTrips())
			}
			// Nothing lost: every call that ran is in the record and the rules
			// diagnosis is built over all of it.
			if len(rec.GetToolCalls()) != len(h.tools.Calls()) || len(rec.GetToolCalls()) < 2 {
				t.Errorf("record %d calls, tools saw %d", len(rec.GetToolCalls()), len(h.tools.Calls()))
			}
			if len(rec.GetEvidenceSources()) != len(h.tools.Calls()) {
				t.Errorf("evidence sources %v", rec.GetEvidenceSources())
			}
			if stageStatus(rec, stageGather) != "degraded" || stageStatus(rec, stageDeliver) != "ok" {
				t.Errorf("stages %v", rec.GetStages())
			}
			if len(rec.GetModelCalls()) == 0 {
				t.Errorf("model calls not recorded")
			}
		})
	}
}

func TestModelStagnationBreaker(t *testing.T) {
	cfg := DefaultConfig()
	// Both calls repeat the seed call exactly: replays.
	repeat := llmtest.Call{Name: "check_pod_status", Arguments: `{"namespace":"shop"}`}
	rec, srv, _ := investigateWithModel(t, &cfg, []llmtest.Turn{
		llmtest.Tools(repeat), llmtest.Tools(repeat), llmtest.Text(finalJSON),
	}, nil)
	if !hasTrip(rec, GuardrailStagnation) {
		t.Fatalf("no stagnation trip: %v", rec.GetGuardrailTrips())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if len(reqs[1].Tools()) == 0 || len(reqs[2].Tools()) != 0 {
		t.Errorf("tools offered: %d then %d (want stripped on the last turn)", len(reqs[1].Tools()), len(reqs[2].Tools()))
	}
	last := reqs[1].Messages()
	if c, _ := last[len(last)-2]["content"].(string); !strings.Contains(c, "already made this exact call") {
		t.Errorf("the replay was not told to the model: %q", c)
	}
	if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW ||
		!strings.Contains(rec.GetDiagnosis().GetRootCause(), "OOM-killed") {
		t.Errorf("diagnosis %v", rec.GetDiagnosis())
	}
	if n := len(rec.GetToolCalls()); n != 4 || !rec.GetToolCalls()[3].GetReplayed() {
		t.Errorf("tool calls %v", rec.GetToolCalls())
	}
}

func TestModelLoopCap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxLoops, cfg.MaxStagnantIterations, cfg.MaxStalledRetrievals = 3, 10, 10
	srv := llmtest.New(t)
	srv.Endless("get_events", `{"namespace":"shop"}`)
	h := newHarness(t, harnessOpts{cfg: &cfg, model: newModel(t, srv)})
	alerts, _ := intake.Parse([]byte(crashAlert), "")
	rec, err := h.svc.Investigate(testCtx(t), alerts[0], "")
	if err != nil {
		t.Fatal(err)
	}
	if !hasTrip(rec, GuardrailMaxLoops) || rec.GetLoops() != 3 || len(rec.GetModelCalls()) != 3 {
		t.Fatalf("trips %v loops %d model calls %d", rec.GetGuardrailTrips(), rec.GetLoops(), len(rec.GetModelCalls()))
	}
	if rec.GetDiagnosis().GetStatus() != investigationv1.DiagnosisStatus_DIAGNOSIS_STATUS_NEEDS_REVIEW {
		t.Errorf("status %v", rec.GetDiagnosis().GetStatus())
	}
}

func TestContextBudgetEviction(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ContextBudgetChars = 5000
	rec, srv, _ := investigateWithModel(t, &cfg, []llmtest.Turn{llmtest.Text(finalJSON)}, func(h *harness) {
		h.tools.exec = func(_ context.Context, req *toolsv1.ExecuteToolRequest, _ int) (*toolsv1.ExecuteToolResponse, error) {
			size, noData := 3000, false
			if req.GetIntent() == "fetch_pod_logs" {
				size, noData = 1500, true
			}
			raw := strings.Repeat("y", size)
			return &toolsv1.ExecuteToolResponse{
				Result: &evidencev1.ToolResult{Success: true, NoData: noData, RawOutput: raw},
				Pin: &evidencev1.EvidencePin{Id: "pin-" + req.GetIntent(), SourceTool: req.GetIntent(), Claim: req.GetIntent() + " result",
					RawOutput: raw, NoData: noData, Success: true, Version: 1},
			}, nil
		}
	})
	if !hasTrip(rec, GuardrailContextBudget) {
		t.Fatalf("no context budget trip: %v", rec.GetGuardrailTrips())
	}
	msgs := srv.Requests()[0].Messages()
	total, byCall := 0, map[string]string{}
	for _, m := range msgs {
		c, _ := m["content"].(string)
		total += len(c)
		if id, ok := m["tool_call_id"].(string); ok {
			byCall[id] = c
		}
	}
	if total > 5000 {
		t.Errorf("request of %d chars exceeds the budget", total)
	}
	var noDataMsg, dataMsg string
	for _, c := range byCall {
		if strings.Contains(c, "fetch_pod_logs") {
			noDataMsg = c
		} else {
			dataMsg = c
		}
	}
	if !strings.HasPrefix(noDataMsg, evictedPrefix) || strings.HasPrefix(dataMsg, evictedPrefix) {
		t.Errorf("low-value evidence must go first:\nno-data: %.120q\ndata: %.120q", noDataMsg, dataMsg)
	}
	if !strings.Contains(noDataMsg, "pin-fetch_pod_logs") {
		t.Errorf("evicted result lost its one-line summary: %q", noDataMsg)
	}
}

func TestParseModelDiagnosis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		ok         bool
		cat        investigationv1.RootCauseCategory
	}{
		{"json", finalJSON, true, investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION},
		{"fenced in prose", "ok\n```json\n" + finalJSON + "\n```\nbye", true, investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_RESOURCE_EXHAUSTION},
		{"sections", "ROOT_CAUSE: the DNS resolver in kube-system is failing\nROOT_CAUSE_CATEGORY: dependency_failure\nVALIDATED_CLAIMS:\n- lookups time out [pin p-1]\nCONFIDENCE: 80%",
			true, investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_DEPENDENCY_FAILURE},
		{"garbage", "no idea", false, 0},
		{"json without root cause", `{"confidence":0.3}`, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := parseModelDiagnosis(tc.text)
			if ok != tc.ok {
				t.Fatalf("ok = %v", ok)
			}
			if ok && d.GetCategory() != tc.cat {
				t.Errorf("category %v", d.GetCategory())
			}
			if tc.name == "sections" && (d.GetConfidence() != 0.8 || len(d.GetValidatedClaims()) != 1 || d.GetValidatedClaims()[0].GetPinIds()[0] != "p-1") {
				t.Errorf("sections parsed as %v", d)
			}
		})
	}
}

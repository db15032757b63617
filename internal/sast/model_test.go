package sast

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/llm/llmtest"
	"github.com/rcamesh/rcamesh/internal/sast/javaflow"
)

func modelTriager(t *testing.T, turns ...llmtest.Turn) (*Triager, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t, turns...)
	p, err := llm.New(llm.Config{Provider: llm.ProviderOpenAICompatible, Model: "test-model", BaseURL: srv.BaseURL(),
		APIKey: "test-key", Timeout: 10 * time.Second, MaxRetries: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRepo(t, map[string]string{"app/App.java": app})
	tr := newTriager(t, r)
	tr.Analyst = &ModelAnalyst{Model: p}
	return tr, srv
}

const modelTP = `{"verdict":"TRUE_POSITIVE","analysis":"the p parameter is concatenated into the query",
"claims":[{"id":"source","text":"request parameter","status":"supported","evidence":[{"file":"app/App.java","startLine":7,"endLine":7}]},
{"id":"path","text":"concatenated into the SQL text","status":"supported","evidence":[{"file":"app/App.java","startLine":7,"endLine":9}]},
{"id":"sanitiser","text":"no escaping","status":"supported","evidence":[{"file":"app/App.java","startLine":9,"endLine":9}]}],"unknowns":[]}`

func TestModelAgentConcludes(t *testing.T) {
	tr, srv := modelTriager(t,
		llmtest.Tools(llmtest.Call{ID: "c1", Name: "search_codebase", Arguments: `{"pattern":"executeQuery","scope":"*.java"}`}),
		llmtest.Tools(llmtest.Call{ID: "c2", Name: "fetch_code", Arguments: `{"identifier":"App.doPost"}`}),
		llmtest.Text("```json\n"+modelTP+"\n```"),
	)
	res := tr.One(context.Background(), Finding{RuleID: "sql", File: "app/App.java", StartLine: 9, Category: "sqli", CWEs: []int{89}})
	if res.Verdict != javaflow.TruePositive || res.StopReason != "evaluator_passed" {
		t.Fatalf("verdict %s stop %s err %s rejections %+v", res.Verdict, res.StopReason, res.Error, res.Rejections)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if n := len(reqs[0].Tools()); n != 3 {
		t.Errorf("%d tools offered, want 3", n)
	}
	last := reqs[2].Messages()
	tool := last[len(last)-1]
	if tool["role"] != "tool" || !strings.Contains(tool["content"].(string), `st.executeQuery("SELECT " + param);`) {
		t.Errorf("the fetch_code result did not reach the model: %v", tool)
	}
	if res.Cost.ToolCalls < 3 || res.Cost.Iterations != 3 {
		t.Errorf("cost %+v", res.Cost)
	}
}

func TestModelAgentRejectedThenNeedsReview(t *testing.T) {
	// a false-positive verdict with nothing cited: rejected three times
	fp := llmtest.Text(`{"verdict":"FALSE_POSITIVE","analysis":"looks fine","claims":[{"id":"source","text":"constant","status":"supported","evidence":[]}]}`)
	tr, srv := modelTriager(t, fp, fp, fp)
	res := tr.One(context.Background(), Finding{RuleID: "sql", File: "app/App.java", StartLine: 9, Category: "sqli"})
	if res.Verdict != javaflow.NeedsReview || res.StopReason != "evaluator_rejections" || len(res.Rejections) != 3 {
		t.Fatalf("verdict %s stop %s rejections %d", res.Verdict, res.StopReason, len(res.Rejections))
	}
	if len(res.Unknowns) == 0 {
		t.Error("NEEDS_REVIEW without the remaining unknowns")
	}
	msgs := srv.Requests()[1].Messages()
	if !strings.Contains(msgs[len(msgs)-1]["content"].(string), "Blocking gaps") {
		t.Errorf("the rejection did not reach the model: %v", msgs[len(msgs)-1])
	}
}

func TestModelAgentDown(t *testing.T) {
	tr, _ := modelTriager(t, llmtest.Status(500, ""))
	res := tr.One(context.Background(), Finding{RuleID: "sql", File: "app/App.java", StartLine: 9, Category: "sqli"})
	if res.Verdict != javaflow.NeedsReview || res.Error == "" {
		t.Fatalf("a failing model: %s %q, want NEEDS_REVIEW with the error", res.Verdict, res.Error)
	}
}

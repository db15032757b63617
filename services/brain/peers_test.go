package brain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// An alert names no workload when it has no service, pod or object of the
// cluster (a URL check); any of them makes it targeted.
func TestUntargeted(t *testing.T) {
	for _, tc := range []struct {
		a    *investigationv1.Alert
		want bool
	}{
		{&investigationv1.Alert{AlertName: "card-draw", Namespace: "bingo"}, true},
		{&investigationv1.Alert{AlertName: "x", Service: "game-engine"}, false},
		{&investigationv1.Alert{AlertName: "x", Pod: "game-engine-59d7c6b8f-5l578"}, false},
		{&investigationv1.Alert{AlertName: "x", ResourceKind: "node", ResourceName: "w-1"}, false},
	} {
		if got := untargeted(tc.a); got != tc.want {
			t.Errorf("untargeted(%v) = %v, want %v", tc.a, got, tc.want)
		}
	}
}

// A fault reading searches, anywhere and over the context look-back, the
// peers its target's own lines name (the database host its errors dial),
// once; and reads every service's commits before concluding when no call
// read one (none ran, or the one that ran found none).
func TestFaultReadingSearchesPeersAndCommits(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs,
		&evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}}},
		&evidencev1.ToolDefinition{Intent: intentCommits, ParamsSchema: []*evidencev1.ToolParam{{Name: "service", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	at := time.Date(2026, 3, 12, 21, 4, 0, 0, time.UTC)
	var lines []facts.LogLine
	for i := 0; i < 3; i++ {
		ts := at.Add(time.Duration(i-2) * time.Minute)
		lines = append(lines, facts.LogLine{Timestamp: &ts, Namespace: "reed", Service: "quote-builder", Level: "ERROR", Message: "PSQLException: Connection to reed-prod.cluster.example:5432 refused"})
	}
	res, st := logReading(t, &investigationv1.Alert{AlertName: "HTTP 5xx rate", Namespace: "reed", Service: "quote-builder", StartsAt: timestamppb.New(at)}, lines)
	h.svc.defs = nil
	cs := h.svc.peerSearches(testCtx(t), st, res)
	if len(cs) != 1 || cs[0].Params["query"] != `"reed-prod"` || cs[0].Params["namespace"] != "all" || cs[0].Params["since_minutes"] != contextLookback {
		t.Fatalf("peer searches %+v, want one search of reed-prod anywhere over the context look-back", cs)
	}
	commits := func() bool {
		for _, c := range h.svc.faultEvidence(testCtx(t), st, res) {
			if c.Intent == intentCommits && fmt.Sprint(c.Params["service"]) == "*" {
				return true
			}
		}
		return false
	}
	if !commits() {
		t.Error("no commits read before a fault is concluded")
	}
	p, _ := structpb.NewStruct(map[string]any{"service": "quote-builder"})
	st.rec.ToolCalls = []*investigationv1.ToolCallRecord{{Intent: intentCommits, Params: p, PinId: "pin_c", NoData: true}}
	if !commits() {
		t.Error("the alerted service's commits found none (its settings live in another repository), and every service's were not read")
	}
	st.rec.ToolCalls = []*investigationv1.ToolCallRecord{{Intent: intentCommits, Params: p, PinId: "pin_c"}}
	if commits() {
		t.Error("every service's commits read again after a commits call read some")
	}
}

// A fault reading searches the history, anywhere over the context
// look-back and up to just before the first failing line, for the failing
// lines' rarest words (what changed them was written earlier, by another
// system); once.
func TestFaultReadingTracesItsWords(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tools.defs = append(h.tools.defs,
		&evidencev1.ToolDefinition{Intent: intentSearchLogs, ParamsSchema: []*evidencev1.ToolParam{
			{Name: "query", Type: evidencev1.ParamType_PARAM_TYPE_STRING}, {Name: "namespace", Type: evidencev1.ParamType_PARAM_TYPE_STRING},
			{Name: "since_minutes", Type: evidencev1.ParamType_PARAM_TYPE_NUMBER}, {Name: "end", Type: evidencev1.ParamType_PARAM_TYPE_STRING}}})
	at := time.Date(2026, 8, 2, 6, 30, 0, 0, time.UTC)
	var lines []facts.LogLine
	for i := 0; i < 3; i++ {
		ts := at.Add(time.Duration(i) * time.Minute)
		lines = append(lines, facts.LogLine{Timestamp: &ts, Namespace: "orchard", Service: "crate-import", Level: "ERROR", Message: fmt.Sprintf("row %d rejected: quince grading code outside codebook", i)})
	}
	res, st := logReading(t, &investigationv1.Alert{AlertName: "ImportRejects", Namespace: "orchard", Service: "crate-import", StartsAt: timestamppb.New(at)}, lines)
	h.svc.defs = nil
	cs := h.svc.traceSearch(testCtx(t), st, res)
	if len(cs) != 1 {
		t.Fatalf("trace searches %+v, want one", cs)
	}
	q := fmt.Sprint(cs[0].Params["query"])
	if !strings.Contains(q, `"quince"`) || !strings.Contains(q, `"codebook"`) || strings.Contains(q, "crate") || cs[0].Params["since_minutes"] != contextLookback {
		t.Errorf("trace search %+v: want the failing lines' rare words, not the alert's names, over the context look-back", cs[0].Params)
	}
	if end := fmt.Sprint(cs[0].Params["end"]); end != at.Add(-time.Second).Format(time.RFC3339) {
		t.Errorf("trace search ends at %s, want just before the first failing line", end)
	}
	p, _ := structpb.NewStruct(cs[0].Params)
	st.rec.ToolCalls = []*investigationv1.ToolCallRecord{{Intent: intentSearchLogs, Params: p, PinId: "pin_t"}}
	if cs := h.svc.traceSearch(testCtx(t), st, res); len(cs) != 0 {
		t.Errorf("the same trace search again: %+v", cs)
	}
}

// logReading analyses one pin of log lines under alert, and the
// investigation state that holds it.
func logReading(t *testing.T, alert *investigationv1.Alert, lines []facts.LogLine) (analysis.Result, *invState) {
	t.Helper()
	pins := []*evidencev1.EvidencePin{{Id: "pin_logs", SourceTool: intentSearchLogs, Metadata: factsStruct(t, facts.KeyLogLines, lines), Success: true}}
	res, err := analysis.Analyze(testCtx(t), analysis.Input{Alert: alert, Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	return res, &invState{rec: &investigationv1.InvestigationRecord{SessionId: "s", Alert: alert}, rc: &evidencev1.RouterContext{}, pins: pins}
}

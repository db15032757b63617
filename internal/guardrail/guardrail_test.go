package guardrail

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

func TestTripNamesAndOwner(t *testing.T) {
	tests := []struct {
		g           G
		name, owner string
	}{
		{investigationv1.Guardrail_GUARDRAIL_MAX_LOOPS, "max_loops", "brain"},
		{investigationv1.Guardrail_GUARDRAIL_ALERT_FINGERPRINT_DEDUP, "alert_fingerprint_dedup", "delivery"},
		{investigationv1.Guardrail_GUARDRAIL_DUPLICATE_CALL_REPLAYED, "duplicate_call_replayed", "tools"},
		{investigationv1.Guardrail_GUARDRAIL_UNSPECIFIED, "unspecified", ""},
		{G(999), "", ""},
	}
	for _, tc := range tests {
		tr := Trip(tc.g, "detail", 2, 3, time.Unix(10, 0))
		if tr.GetGuardrail() != tc.name || tr.GetOwner() != tc.owner || tr.GetKind() != tc.g || tr.GetTime().GetSeconds() != 10 {
			t.Errorf("Trip(%v) = %v, want name %q owner %q", tc.g, tr, tc.name, tc.owner)
		}
		if tc.owner != "" && Parse(tc.name) != tc.g {
			t.Errorf("Parse(%q) = %v, want %v", tc.name, Parse(tc.name), tc.g)
		}
	}
	if Parse("no_such_guardrail") != investigationv1.Guardrail_GUARDRAIL_UNSPECIFIED {
		t.Error("an unknown name parsed")
	}
	if n := len(All()); n != len(investigationv1.Guardrail_name)-1 {
		t.Errorf("All() has %d values, the enum %d", n, len(investigationv1.Guardrail_name)-1)
	}
}

func TestMergeKeepsWhatOthersReported(t *testing.T) {
	rec := &investigationv1.Guardrails{MaxLoops: 20, ToolBudget: 10}
	Merge(rec, &investigationv1.Guardrails{ToolTimeoutMs: 5000, ReadOnly: proto.Bool(false)})
	Merge(rec, nil)
	if rec.GetMaxLoops() != 20 || rec.GetToolBudget() != 10 || rec.GetToolTimeoutMs() != 5000 || rec.ReadOnly == nil || rec.GetReadOnly() {
		t.Errorf("merged %v", rec)
	}
}

package analysis

import (
	"slices"

	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// SameInput reports whether two versions of a pin are the same input to
// Analyze, which reads a pin's id, tool, sources, no-data flag, error and
// facts (NewEvidence) and never the critic's verdict on it (validation
// status, causal role, rationale, confidence, version). A caller that keeps
// an analysis across pin updates keys it on this.
func SameInput(a, b *evidencev1.EvidencePin) bool {
	return a.GetId() == b.GetId() && a.GetSourceTool() == b.GetSourceTool() &&
		a.GetNoData() == b.GetNoData() && a.GetError() == b.GetError() &&
		slices.Equal(a.GetSources(), b.GetSources()) && proto.Equal(a.GetMetadata(), b.GetMetadata())
}

package router

import (
	"testing"

	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

// TestDiscardAnswer: the request is encoded exactly as the protobuf codec
// encodes it, under its name (so the server decodes it as usual), and an
// answer is left undecoded.
func TestDiscardAnswer(t *testing.T) {
	c := discardAnswer{encoding.GetCodecV2(gproto.Name)}
	if c.Name() != gproto.Name {
		t.Fatalf("codec name %q, want %q", c.Name(), gproto.Name)
	}
	req := &toolsv1.ExecuteToolRequest{SessionId: "s", Intent: "check_pod_status", PinId: "p1"}
	data, err := c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got toolsv1.ExecuteToolRequest
	if err := proto.Unmarshal(data.Materialize(), &got); err != nil || !proto.Equal(&got, req) {
		t.Fatalf("request decoded as %v (%v), want %v", &got, err, req)
	}
	answer, err := proto.Marshal(&toolsv1.ExecuteToolResponse{Pin: &evidencev1.EvidencePin{Id: "p1", Claim: "facts"}})
	if err != nil {
		t.Fatal(err)
	}
	var resp toolsv1.ExecuteToolResponse
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(answer)}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetPin() != nil {
		t.Errorf("the answer was decoded: %v", &resp)
	}
}

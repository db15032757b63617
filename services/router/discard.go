package router

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// A dispatched tool call's answer is not read: the tools service has
// published the pin by then, and the router only needs to know whether the
// call failed, which the call's status says. The answer carries the pin
// and the tool result, each with all of the tool's facts; decoding it cost
// the router two copies of those facts per call. The request also asks the
// tools service not to send it (omit_answer); a tools service that predates
// the field still sends it, and this codec still leaves it undecoded.

// discardAnswer encodes the request as protobuf and leaves the answer's
// body undecoded (its status is still read).
type discardAnswer struct{ encoding.CodecV2 }

func (discardAnswer) Unmarshal(mem.BufferSlice, any) error { return nil }

// skipAnswer is the call option of a call whose answer's body is not read.
var skipAnswer = grpc.ForceCodecV2(discardAnswer{encoding.GetCodecV2(proto.Name)})

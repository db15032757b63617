package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rcamesh/rcamesh/internal/sessionid"
)

// Id fields checked by the id interceptors: a request's own fields of these
// names, and those of a RouterContext it carries in a field named "context".
const (
	fieldSessionID       = "session_id"
	fieldParentSessionID = "parent_session_id"
	fieldInvestigationID = "investigation_id"
	fieldContext         = "context"
)

// optionalSession lists the requests whose session_id may be empty (the
// service then derives one, or the session does not matter). Every other
// request with a session_id field needs one.
var optionalSession = map[protoreflect.FullName]bool{
	"rcamesh.brain.v1.SubmitAlertRequest":         true, // derived from the alert fingerprint
	"rcamesh.triage.v1.TriageFindingsRequest":     true, // derived from the repository and the SARIF
	"rcamesh.tools.v1.ListToolDefinitionsRequest": true, // the registry without session state
	"rcamesh.evidence.v1.RouterContext":           true, // nested: the request's own session_id rules
}

// CheckIDs validates the ids of a request message against
// internal/sessionid: session_id must be set (unless the request is one of
// the few where it is optional) and valid; parent_session_id and
// investigation_id, when set, follow the same rules; so do those of a
// message (a RouterContext) in a field named "context". The error is
// an InvalidArgument status (HTTP 400 through the gateway).
func CheckIDs(req any) error {
	m, ok := req.(proto.Message)
	if !ok || m == nil {
		return nil
	}
	return checkIDs(m.ProtoReflect(), "")
}

func checkIDs(m protoreflect.Message, prefix string) error {
	if !m.IsValid() && prefix != "" {
		return nil
	}
	fields := m.Descriptor().Fields()
	for _, name := range []protoreflect.Name{fieldSessionID, fieldParentSessionID, fieldInvestigationID} {
		fd := fields.ByName(name)
		if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
			continue
		}
		v := m.Get(fd).String()
		if v == "" && (name != fieldSessionID || optionalSession[m.Descriptor().FullName()]) {
			continue
		}
		if err := sessionid.Check(prefix+string(name), v); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
	if prefix != "" {
		return nil
	}
	if fd := fields.ByName(fieldContext); fd != nil && fd.Message() != nil && !fd.IsList() && !fd.IsMap() && m.Has(fd) {
		return checkIDs(m.Get(fd).Message(), fieldContext+".")
	}
	return nil
}

// unaryIDs refuses a unary request whose ids CheckIDs rejects, before the
// handler (and so NATS, KV and logs) sees them.
func unaryIDs() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if quiet(info.FullMethod) {
			return handler(ctx, req)
		}
		if err := CheckIDs(req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// streamIDs checks every message a streaming handler receives.
func streamIDs() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if quiet(info.FullMethod) {
			return handler(srv, ss)
		}
		return handler(srv, idCheckingStream{ss})
	}
}

type idCheckingStream struct{ grpc.ServerStream }

func (s idCheckingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return CheckIDs(m)
}

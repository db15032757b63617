package brain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/paging"
)

// GetSession returns a session's state.
func (s *Service) GetSession(ctx context.Context, req *brainv1.GetSessionRequest) (*brainv1.GetSessionResponse, error) {
	e, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Service) session(ctx context.Context, sid string) (*sessionEntry, error) {
	if strings.TrimSpace(sid) == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	e, _, err := store.getSession(ctx, sid)
	if errors.Is(err, errNotFound) {
		return nil, status.Errorf(codes.NotFound, "session %q not found", sid)
	}
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "load session %q: %v", sid, err)
	}
	return e, nil
}

// ListSessions lists sessions, newest first.
func (s *Service) ListSessions(ctx context.Context, req *brainv1.ListSessionsRequest) (*brainv1.ListSessionsResponse, error) {
	size, err := paging.Size(req.GetPageSize(), req.GetLimit(), 50, 1000)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	offset, err := paging.Offset("sessions", req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	all, err := store.listSessions(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list sessions: %v", err)
	}
	from, to, next := paging.Page("sessions", len(all), offset, size)
	out := &brainv1.ListSessionsResponse{NextPageToken: next}
	for _, e := range all[from:to] {
		out.Sessions = append(out.Sessions, e.GetSession())
	}
	return out, nil
}

// Pin page bounds: a page holds at most maxPinPage pins and, whatever the
// page size, stops before maxPinPageBytes (a response always fits the
// 4 MiB gRPC message limit; one pin is capped well below it by the tools).
const (
	defaultPinPage  = 100
	maxPinPage      = 500
	maxPinPageBytes = 2 << 20
)

// ListPins returns a page of the session's pins in their latest state, in
// arrival order.
func (s *Service) ListPins(ctx context.Context, req *brainv1.ListPinsRequest) (*brainv1.ListPinsResponse, error) {
	sid := strings.TrimSpace(req.GetSessionId())
	if sid == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	size, err := paging.Size(req.GetPageSize(), 0, defaultPinPage, maxPinPage)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	offset, err := paging.Offset("pins", req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	pins, seq, err := s.sessionPins(ctx, sid)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "pins of session %q: %v", sid, err)
	}
	if len(pins) == 0 {
		if _, err := s.session(ctx, sid); err != nil {
			return nil, err
		}
	}
	from, to, next := paging.Page("pins", len(pins), offset, size)
	bytes := 0
	for i := from; i < to; i++ {
		bytes += proto.Size(pins[i])
		if bytes > maxPinPageBytes && i > from {
			to, next = i, paging.Token("pins", i)
			break
		}
	}
	return &brainv1.ListPinsResponse{Pins: pins[from:to], Sequence: seq, NextPageToken: next, Total: int32(len(pins))}, nil
}

// Pins returns a session's pins in their latest state (library form of ListPins).
func (s *Service) Pins(ctx context.Context, sessionID string) ([]*evidencev1.EvidencePin, error) {
	pins, _, err := s.sessionPins(ctx, sessionID)
	return pins, err
}

// sessionPins replays the session's pin events (latest version of each pin,
// in arrival order); without a bus it reads the investigations' checkpoints.
func (s *Service) sessionPins(ctx context.Context, sid string) ([]*evidencev1.EvidencePin, uint64, error) {
	if s.bus != nil {
		evs, err := s.bus.Replay(ctx, pinFilter(sid), 0)
		if err != nil {
			return nil, 0, err
		}
		var seq uint64
		st := &invState{}
		for _, ev := range evs {
			seq = max(seq, ev.GetSequence())
			if p := ev.GetPin().GetPin(); p != nil {
				st.addPin(p)
			}
		}
		return st.pins, seq, nil
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, _, err := store.getSession(ctx, sid)
	if errors.Is(err, errNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	acc := &invState{}
	for _, id := range e.GetInvestigationIds() {
		st, err := store.loadState(ctx, id)
		if err != nil {
			continue
		}
		for _, p := range st.pins {
			acc.addPin(p)
		}
	}
	return acc.pins, 0, nil
}

func pinFilter(sid string) string {
	return bus.SubjectPrefix + ".session." + bus.Token(sid) + ".pin.>"
}

// StreamEvents streams a session's events: history after from_sequence, then live.
func (s *Service) StreamEvents(req *brainv1.StreamEventsRequest, stream grpc.ServerStreamingServer[brainv1.StreamEventsResponse]) error {
	sid := strings.TrimSpace(req.GetSessionId())
	if sid == "" {
		return status.Error(codes.InvalidArgument, "session_id is required")
	}
	if s.bus == nil {
		return status.Error(codes.FailedPrecondition, "event streaming needs the event bus (the brain runs without one)")
	}
	ctx := stream.Context()
	filter := bus.SessionFilter(sid)
	if req.GetPinsOnly() {
		filter = pinFilter(sid)
	}
	send := func(_ context.Context, ev *evidencev1.SessionEvent) error {
		return stream.Send(&brainv1.StreamEventsResponse{Event: ev})
	}
	if req.GetNoFollow() {
		evs, err := s.bus.Replay(ctx, filter, req.GetFromSequence())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return status.Errorf(codes.Unavailable, "replay session %q: %v", sid, err)
		}
		for _, ev := range evs {
			if err := send(ctx, ev); err != nil {
				return err
			}
		}
		return nil
	}
	// The events are only passed on: their pins' facts stay encoded (the
	// subscriber decodes them), instead of being decoded here into maps of
	// values and encoded again.
	if err := s.bus.Follow(ctx, filter, req.GetFromSequence(), send, bus.FactsEncoded()); err != nil {
		if ctx.Err() != nil {
			return nil // the client went away
		}
		return status.Errorf(codes.Unavailable, "follow session %q: %v", sid, err)
	}
	return nil
}

// latest returns the state of an investigation of a session (the latest when invID is empty).
func (s *Service) latest(ctx context.Context, sid, invID string) (*invState, error) {
	e, err := s.session(ctx, sid)
	if err != nil {
		return nil, err
	}
	if invID == "" {
		ids := e.GetInvestigationIds()
		if len(ids) == 0 {
			return nil, status.Errorf(codes.NotFound, "session %q has no investigation", sid)
		}
		invID = ids[len(ids)-1]
	} else {
		found := false
		for _, id := range e.GetInvestigationIds() {
			found = found || id == invID
		}
		if !found {
			return nil, status.Errorf(codes.NotFound, "investigation %q is not part of session %q", invID, sid)
		}
	}
	store, err := s.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "brain state store: %v", err)
	}
	st, err := store.loadState(ctx, invID)
	if errors.Is(err, errNotFound) {
		return nil, status.Errorf(codes.NotFound, "investigation %q of session %q not found", invID, sid)
	}
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "load investigation %q: %v", invID, err)
	}
	return st, nil
}

// GetDiagnosis returns the session's latest diagnosis.
func (s *Service) GetDiagnosis(ctx context.Context, req *brainv1.GetDiagnosisRequest) (*brainv1.GetDiagnosisResponse, error) {
	st, err := s.latest(ctx, req.GetSessionId(), "")
	if err != nil {
		return nil, err
	}
	if st.rec.GetDiagnosis() == nil {
		return nil, status.Errorf(codes.NotFound, "session %q has no diagnosis yet: investigation %q is %s",
			req.GetSessionId(), st.rec.GetInvestigationId(), st.rec.GetState())
	}
	return &brainv1.GetDiagnosisResponse{Diagnosis: st.rec.GetDiagnosis(), InvestigationId: st.rec.GetInvestigationId()}, nil
}

// GetRecord returns an investigation record.
func (s *Service) GetRecord(ctx context.Context, req *brainv1.GetRecordRequest) (*brainv1.GetRecordResponse, error) {
	st, err := s.latest(ctx, req.GetSessionId(), req.GetInvestigationId())
	if err != nil {
		return nil, err
	}
	return &brainv1.GetRecordResponse{Record: st.rec}, nil
}

// Report returns the delivered report markdown of an investigation ("" when none).
func (s *Service) Report(ctx context.Context, investigationID string) (string, error) {
	store, err := s.store(ctx)
	if err != nil {
		return "", err
	}
	st, err := store.loadState(ctx, investigationID)
	if err != nil {
		return "", fmt.Errorf("brain: report of %s: %w", investigationID, err)
	}
	return st.report, nil
}

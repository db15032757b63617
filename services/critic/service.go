// Package critic is the CriticService: it tries to disprove. It revalidates
// every new evidence pin against the session's pool (delta revalidation:
// only what the new pin can change), reviews hypothesis sets (the Loop of
// Truth: each hypothesis must survive checks that try to refute it) and
// decides whether the investigation loop may conclude (the evaluator gate).
//
// Guardrails owned here (Config): the Loop of Truth threshold (0.80) and round
// limit (3), evidence sufficiency for a conclusion, and the evaluator
// rejection limit (3). Each reports a GuardrailTrip with owner "critic".
package critic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/nats-io/nuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Deps are the critic's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Bus may be nil only in unit tests that do not publish; Run then idles.
	Bus *bus.Bus
	// Tools says which tools can run, for the acceptance gate; nil counts
	// every planned tool as runnable.
	Tools toolsv1.ToolsServiceClient
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Service implements criticv1.CriticServiceServer.
type Service struct {
	criticv1.UnimplementedCriticServiceServer

	cfg   Config
	log   *slog.Logger
	bus   *bus.Bus
	now   func() time.Time
	tools toolsv1.ToolsServiceClient
	mu    sync.Mutex
	pools map[string]*sessionPool
	tick  int64
	// id names this replica as the holder of session leases (lease.go).
	id string

	availMu sync.Mutex
	avail   map[string]availEntry
}

// New builds the service; the config is validated.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("critic: %w", err)
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &Service{
		cfg:   cfg,
		log:   logger.With("service", mesh.Critic),
		bus:   deps.Bus,
		now:   now,
		pools: map[string]*sessionPool{},
		id:    replicaID(),
		tools: deps.Tools,
		avail: map[string]availEntry{},
	}, nil
}

// replicaID is unique per process: host, pid and a random suffix.
func replicaID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), nuid.Next())
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Register registers the CriticService on gs.
func (s *Service) Register(gs *grpc.Server) { criticv1.RegisterCriticServiceServer(gs, s) }

// RegisterGateway is a no-op: the critic has no REST surface.
func (s *Service) RegisterGateway(context.Context, *runtime.ServeMux, *grpc.ClientConn) error {
	return nil
}

// Run consumes pin.added events of every session with the durable consumer
// bus.ConsumerCritic and revalidates each pin. It returns nil when ctx is done.
func (s *Service) Run(ctx context.Context) error {
	if s.bus == nil {
		s.log.WarnContext(ctx, "critic: no bus configured; delta revalidation consumer idle")
		<-ctx.Done()
		return nil
	}
	// Pins come with their facts encoded: judging reads them once, into
	// the pin's profile (bus.Metadata); the pool entry keeps the encoding
	// and a verdict carries it on, instead of each encoding them again.
	batching := bus.Batching{Max: s.cfg.BatchMax, Wait: s.cfg.BatchWait}
	err := s.bus.ConsumeDurableBatches(ctx, bus.ConsumerCritic, bus.PinAddedFilter, batching, s.handleBatch, bus.FactsEncoded())
	s.giveBackAll()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("critic: consume %s: %w", bus.PinAddedFilter, err)
	}
	return nil
}

// handle revalidates one pin.added event; an error naks it for redelivery.
func (s *Service) handle(ctx context.Context, ev *evidencev1.SessionEvent) error {
	return s.handleBatch(ctx, []bus.Delivery{{Ctx: ctx, Event: ev}})[0]
}

// handleBatch revalidates a batch of pin.added events, each session's pins
// together (revalidateBatch) in stream order; the result of each event is
// its session's (an error naks it for redelivery).
func (s *Service) handleBatch(ctx context.Context, batch []bus.Delivery) []error {
	errs := make([]error, len(batch))
	var sessions []string
	bySession := map[string][]toJudge{}
	at := map[string][]int{}
	for i, d := range batch {
		ev := d.Event
		pe := ev.GetPin()
		if pe == nil || pe.GetPin() == nil || pe.GetKind() != evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED {
			continue
		}
		session := sessionOf(pe)
		pin := pe.GetPin()
		if session == "" || pin.GetId() == "" {
			s.log.WarnContext(d.Ctx, "critic: pin event without session or pin id ignored", "seq", ev.GetSequence())
			continue
		}
		if pin.GetSessionId() == "" {
			pin.SessionId = session
		}
		if _, ok := bySession[session]; !ok {
			sessions = append(sessions, session)
		}
		bySession[session] = append(bySession[session], toJudge{ctx: d.Ctx, pin: pin})
		at[session] = append(at[session], i)
	}
	for _, session := range sessions {
		err := s.revalidateBatch(ctx, session, bySession[session])
		if err == nil {
			continue
		}
		s.log.WarnContext(ctx, "critic: revalidation failed; will retry", "session", session, "pins", len(at[session]), "err", err)
		for _, i := range at[session] {
			errs[i] = err
		}
	}
	return errs
}

// RevalidatePin runs delta revalidation of one pin synchronously.
func (s *Service) RevalidatePin(ctx context.Context, req *criticv1.RevalidatePinRequest) (*criticv1.RevalidatePinResponse, error) {
	session := req.GetSessionId()
	if session == "" {
		session = req.GetPin().GetSessionId()
	}
	if session == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	pinID := req.GetPinId()
	var given *evidencev1.EvidencePin
	if req.GetPin() != nil {
		given = req.GetPin()
		if given.GetId() == "" {
			if pinID == "" {
				return nil, status.Error(codes.InvalidArgument, "pin.id or pin_id is required")
			}
			given.Id = pinID
		}
		if pinID != "" && pinID != given.GetId() {
			return nil, status.Errorf(codes.InvalidArgument, "pin_id %q does not match pin.id %q", pinID, given.GetId())
		}
		pinID = given.GetId()
		if given.GetSessionId() == "" {
			given.SessionId = session
		}
	}
	if pinID == "" {
		return nil, status.Error(codes.InvalidArgument, "pin_id or pin is required")
	}
	out, contradicted, err := s.revalidate(ctx, session, pinID, given, !req.GetSkipPublish())
	switch {
	case errors.Is(err, errPinNotFound):
		return nil, status.Error(codes.NotFound, err.Error())
	case err != nil:
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &criticv1.RevalidatePinResponse{Pin: out, Contradicted: contradicted}, nil
}

// sessionPins returns a snapshot of the session's pool (loaded from the stream
// on first sight).
func (s *Service) sessionPins(ctx context.Context, session string) ([]*evidencev1.EvidencePin, error) {
	if session == "" {
		return nil, nil
	}
	sp := s.pool(session)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := s.ensureLoaded(ctx, session, sp); err != nil {
		return nil, err
	}
	shared, err := s.sharedStamp(ctx, session, sp)
	if err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, session, sp, shared); err != nil {
		return nil, err
	}
	out := make([]*evidencev1.EvidencePin, 0, len(sp.entries))
	for _, e := range sp.ordered() {
		out = append(out, e.full())
	}
	return out, nil
}

type availEntry struct {
	at    time.Time
	tools map[string]bool
}

// availabilityTTL is how long the tool registry's availability is cached.
const availabilityTTL = 30 * time.Second

// availability asks the tools service which intents can run in the session
// (cached briefly). nil means unknown: every tool counts as available.
func (s *Service) availability(ctx context.Context, session string) map[string]bool {
	if s.tools == nil {
		return nil
	}
	now := s.now()
	s.availMu.Lock()
	if e, ok := s.avail[session]; ok && now.Sub(e.at) < availabilityTTL && !now.Before(e.at) {
		s.availMu.Unlock()
		return e.tools
	}
	s.availMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	defs, err := mesh.ToolDefinitions(cctx, s.tools, session)
	if err != nil {
		s.log.WarnContext(ctx, "critic: tool availability unknown", "session", session, "err", err)
		return nil
	}
	m := make(map[string]bool, len(defs))
	for _, t := range defs {
		m[t.GetIntent()] = t.GetAvailable()
	}
	s.availMu.Lock()
	if len(s.avail) >= s.cfg.MaxSessions {
		s.avail = map[string]availEntry{}
	}
	s.avail[session] = availEntry{at: now, tools: m}
	s.availMu.Unlock()
	return m
}

// Package brain is the BrainService: it runs investigations. Its files
// follow an investigation's state in flow order:
//
//   - intake.go, intake_incident.go: an alert arrives (SubmitAlert,
//     StartInvestigation), is grouped with its incident, de-duplicated on
//     its fingerprint and queued as an investigation state (invState,
//     state.go).
//   - service.go: the work queue hands the state to the pipeline (JetStream
//     work queue, so several brain processes share investigations).
//   - pipeline.go, pipeline_scope.go, pipeline_retry.go: the stages
//     resolve_integrations, extract_alert (with the scope: namespace and
//     workload), plan_actions, gather_evidence, diagnose and deliver,
//     checkpointed after each and retried when a dependency is down.
//   - round.go, round_calls.go, round_params.go, round_followups.go: the
//     loop core, a round's primitives shared by both loops: seed, the loop
//     cap and breakers, running calls, progress, the evidence model (one
//     analysis per evidence state), the critic's review and conclusion gate.
//   - loop_rules.go (no model) and loop_model.go, loop_model_answer.go (a
//     tool-calling model): the two gather_evidence loops over the core.
//   - store.go: checkpoints, sessions and fingerprints in KV, and the
//     sweeper that requeues orphaned investigations; api.go reads them
//     back (sessions, pins, events, diagnosis, record, report).
//
// The brain owns the loop iteration cap, the stagnation breaker, the context
// budget, the tool-call / wall-time / stalled-retrieval circuit breakers and
// the degraded result on model failure (Config); trips are reported in the
// investigation record as trips owned by "brain" (the Guardrail enum).
package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/catprior"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Deps are the brain's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Bus carries events, the work queue and the KV state. Nil keeps state in
	// memory and runs investigations in-process (tests, one-shot CLI runs).
	Bus *bus.Bus
	// The services the brain calls (all required).
	Router   routerv1.RouterServiceClient
	Tools    toolsv1.ToolsServiceClient
	Critic   criticv1.CriticServiceClient
	Delivery deliveryv1.DeliveryServiceClient
	// LLM is the model of the ReAct loop; nil runs the offline rules supervisor.
	LLM llm.Provider
	// ModelMaxRetries is the model client's retries per call (llm.max-retries),
	// the limit behind a degraded result; recorded with the other limits.
	ModelMaxRetries int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service implements brainv1.BrainServiceServer.
type Service struct {
	brainv1.UnimplementedBrainServiceServer

	cfg     Config
	log     *slog.Logger
	bus     *bus.Bus
	clients mesh.Clients
	model   llm.Provider
	now     func() time.Time
	// modelRetries is Deps.ModelMaxRetries, nil without a model.
	modelRetries *int32

	storeMu sync.Mutex
	st      *stateStore

	// local work queue when there is no bus.
	local chan workItem

	// changed is closed (and replaced) whenever a checkpoint is saved: waiters wake.
	chMu    sync.Mutex
	changed chan struct{}

	// defs caches tool definitions per process.
	defsMu sync.Mutex
	defs   map[string]*evidencev1.ToolDefinition
	defsAt time.Time
	// analyses counts evidence models built (analysis.Analyze runs).
	analyses atomic.Int64
	// prior is the category prior (Config.CategoryPrior), nil when off.
	prior *catprior.Model
}

// New builds the service.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	if deps.Tools == nil || deps.Router == nil || deps.Critic == nil || deps.Delivery == nil {
		return nil, errors.New("brain: Deps needs the tools, router, critic and delivery clients")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	s := &Service{
		cfg:     cfg,
		log:     log.With("service", mesh.Brain),
		bus:     deps.Bus,
		clients: mesh.Clients{Router: deps.Router, Tools: deps.Tools, Critic: deps.Critic, Delivery: deps.Delivery},
		model:   deps.LLM,
		now:     now,
		local:   make(chan workItem, 1024),
		changed: make(chan struct{}),
	}
	prior, err := catprior.Open(cfg.CategoryPrior, cfg.CategoryPriorWithout)
	if err != nil {
		return nil, fmt.Errorf("brain: brain.category-prior: %w", err)
	}
	s.prior = prior
	if deps.LLM != nil {
		s.modelRetries = proto.Int32(int32(deps.ModelMaxRetries))
	}
	if deps.Bus == nil {
		s.st = &stateStore{sessions: newMemKV(), records: newMemKV(), fingerprints: newMemKV(), open: newMemKV()}
	}
	return s, nil
}

// Register registers the BrainService on gs.
func (s *Service) Register(gs *grpc.Server) { brainv1.RegisterBrainServiceServer(gs, s) }

// RegisterGateway registers the REST routes of the BrainService on mux.
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	if err := brainv1.RegisterBrainServiceHandler(ctx, mux, conn); err != nil {
		return fmt.Errorf("brain: register gateway: %w", err)
	}
	return nil
}

// Run consumes the work queue (Config.Workers consumers; with a bus the
// durable consumer is shared by every brain process) until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.bus != nil && s.cfg.SweepInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sweepLoop(ctx)
		}()
	}
	errs := make(chan error, s.cfg.Workers)
	for i := 0; i < s.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if s.bus != nil {
				err = s.bus.ConsumeWork(ctx, s.handleWork)
			} else {
				err = s.consumeLocal(ctx)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(all...)
}

func (s *Service) consumeLocal(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case it := <-s.local:
			if err := s.processItem(ctx, it); err != nil && !errors.Is(err, bus.ErrHeldElsewhere) && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "investigation failed", "investigation_id", it.InvestigationID, "err", err)
			}
		}
	}
}

// workItem is the payload of the work queue.
type workItem struct {
	SessionID       string `json:"session_id"`
	InvestigationID string `json:"investigation_id"`
}

func (s *Service) handleWork(ctx context.Context, data []byte) error {
	var it workItem
	if err := json.Unmarshal(data, &it); err != nil || it.InvestigationID == "" {
		// Unusable forever: log and drop (ack) rather than redeliver.
		s.log.ErrorContext(ctx, "dropping undecodable work item", "err", err, "bytes", len(data))
		return nil
	}
	return s.processItem(ctx, it)
}

// processItem runs (or resumes) the investigation of a work item. It returns
// an error only when the item should be redelivered.
func (s *Service) processItem(ctx context.Context, it workItem) error {
	store, err := s.store(ctx)
	if err != nil {
		return err
	}
	st, err := store.loadState(ctx, it.InvestigationID)
	if errors.Is(err, errNotFound) {
		s.log.WarnContext(ctx, "work item names an unknown investigation; dropped", "investigation_id", it.InvestigationID)
		return nil
	}
	if err != nil {
		return err
	}
	if isFinal(st.rec.GetState()) {
		return nil // already done (a redelivery after completion)
	}
	err = s.runPipeline(ctx, st)
	if errors.Is(err, errFenced) {
		// The replica that took over holds the work item now and finishes it;
		// the item is left to it (see bus.ErrHeldElsewhere), not acknowledged.
		s.log.WarnContext(ctx, "investigation taken over by another brain replica; stopping here", "investigation_id", it.InvestigationID)
		return bus.ErrHeldElsewhere
	}
	return err
}

// enqueue queues the work item of an investigation, keyed by its id (so the
// sweeper can tell whether the queue still holds it); requeue distinguishes
// the sweeper's re-queues from the first enqueue for de-duplication.
func (s *Service) enqueue(ctx context.Context, it workItem, requeue int) error {
	if s.bus == nil {
		select {
		case s.local <- it:
			return nil
		default:
			return errors.New("local work queue is full")
		}
	}
	data, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("encode work item: %w", err)
	}
	return s.bus.EnqueueKeyed(ctx, it.InvestigationID, fmt.Sprintf("work:%s:%d", it.InvestigationID, requeue), data)
}

package history

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	"github.com/rcamesh/rcamesh/internal/bus"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/sessionid"
)

// Store kinds (-store).
const (
	StoreKV       = "kv"
	StorePostgres = "postgres"
)

// EnvDSN supplies -store.dsn's default, so that a password stays out of
// the process list.
const EnvDSN = "RCAMESH_STORE_DSN"

// Config is the history module's configuration.
type Config struct {
	// Store is kv (JetStream KV, the default) or postgres (-store).
	Store string
	// DSN of PostgreSQL (-store.dsn, env RCAMESH_STORE_DSN).
	DSN string
	// Retention deletes investigations that finished longer ago; 0 keeps
	// them forever (-store.retention).
	Retention time.Duration
	// RetentionInterval is how often retention runs.
	RetentionInterval time.Duration
	// RetryFor bounds the retries of one database operation (-store.retry-for).
	RetryFor time.Duration
	// MaxConns of the PostgreSQL pool (-store.max-conns; 0: pgx's default).
	MaxConns int
}

// DefaultConfig keeps history in JetStream KV for 90 days.
func DefaultConfig() Config {
	return Config{Store: StoreKV, Retention: 90 * 24 * time.Hour, RetentionInterval: time.Hour, RetryFor: 30 * time.Second}
}

// RegisterFlags registers the -store.* flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	if c.DSN == "" {
		c.DSN = os.Getenv(EnvDSN)
	}
	fs.StringVar(&c.Store, "store", c.Store, "investigation history store: kv (JetStream KV) or postgres")
	fs.StringVar(&c.DSN, "store.dsn", c.DSN, "PostgreSQL connection string for -store=postgres, e.g. postgres://rcamesh@db:5432/rcamesh (env "+EnvDSN+"; prefer the env var or a .pgpass for passwords)")
	fs.DurationVar(&c.Retention, "store.retention", c.Retention, "delete past investigations that finished longer ago than this; 0 keeps them forever")
	fs.DurationVar(&c.RetryFor, "store.retry-for", c.RetryFor, "how long one history write or read retries while the database is unreachable")
	fs.IntVar(&c.MaxConns, "store.max-conns", c.MaxConns, "maximum PostgreSQL connections (0: pgx's default)")
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch c.Store {
	case StoreKV:
	case StorePostgres:
		if strings.TrimSpace(c.DSN) == "" {
			return fmt.Errorf("history: -store=postgres needs -store.dsn (or %s)", EnvDSN)
		}
	default:
		return fmt.Errorf("history: -store %q: want kv or postgres", c.Store)
	}
	if c.Retention < 0 {
		return fmt.Errorf("history: -store.retention must not be negative, got %s", c.Retention)
	}
	if c.RetryFor < 0 {
		return fmt.Errorf("history: -store.retry-for must not be negative, got %s", c.RetryFor)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("history: -store.max-conns must not be negative, got %d", c.MaxConns)
	}
	return nil
}

// Open opens the configured store (running PostgreSQL migrations).
func Open(ctx context.Context, cfg Config, b *bus.Bus, logger *slog.Logger) (Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Store == StorePostgres {
		return OpenPostgres(ctx, PostgresConfig{DSN: cfg.DSN, RetryFor: cfg.RetryFor, MaxConns: int32(cfg.MaxConns)}, logger)
	}
	if b == nil {
		return nil, errors.New("history: the kv store needs the bus")
	}
	kv, err := b.KV(ctx, bus.BucketHistory)
	if err != nil {
		return nil, err
	}
	return NewKV(kv), nil
}

// Service is the history module: the HistoryService API over a store, the
// recorder that fills it, and the retention loop.
type Service struct {
	historyv1.UnimplementedHistoryServiceServer
	cfg   Config
	store Store
	bus   *bus.Bus
	rec   *Recorder
	log   *slog.Logger
	now   func() time.Time
}

// Deps are what the module uses.
type Deps struct {
	Logger  *slog.Logger
	Bus     *bus.Bus
	Clients mesh.Clients
	Store   Store
}

// New builds the module over deps.Store.
func New(cfg Config, deps Deps) (*Service, error) {
	if deps.Store == nil {
		return nil, errors.New("history: no store")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg: cfg, store: deps.Store, bus: deps.Bus, log: log, now: time.Now,
		rec: &Recorder{Store: deps.Store, Brain: deps.Clients.Brain, Delivery: deps.Clients.Delivery, Logger: log},
	}, nil
}

// Store is the module's store.
func (s *Service) Store() Store { return s.store }

// Register implements app.Module.
func (s *Service) Register(gs *grpc.Server) { historyv1.RegisterHistoryServiceServer(gs, s) }

// RegisterGateway implements app.Module.
func (s *Service) RegisterGateway(ctx context.Context, mux *runtime.ServeMux, conn *grpc.ClientConn) error {
	return historyv1.RegisterHistoryServiceHandler(ctx, mux, conn)
}

// Run records finished investigations and applies retention until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	defer s.store.Close()
	errc := make(chan error, 1)
	go func() { errc <- s.retention(ctx) }()
	var err error
	if s.bus != nil {
		err = s.bus.ConsumeDurable(ctx, bus.ConsumerHistory, bus.LifecycleAllFilter, s.rec.Handle)
	} else {
		<-ctx.Done()
	}
	if rerr := <-errc; err == nil {
		err = rerr
	}
	return err
}

// retention deletes expired investigations every RetentionInterval.
func (s *Service) retention(ctx context.Context) error {
	if s.cfg.Retention <= 0 {
		return nil
	}
	every := s.cfg.RetentionInterval
	if every <= 0 {
		every = time.Hour
	}
	for {
		n, err := s.store.DeleteFinishedBefore(ctx, s.now().Add(-s.cfg.Retention))
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.WarnContext(ctx, "history retention failed; retrying at the next interval", "err", err)
		case n > 0:
			s.log.InfoContext(ctx, "history retention", "deleted", n, "older_than", s.cfg.Retention)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// ListInvestigations implements HistoryService.
func (s *Service) ListInvestigations(ctx context.Context, req *historyv1.ListInvestigationsRequest) (*historyv1.ListInvestigationsResponse, error) {
	after, err := DecodeCursor(req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	q := Query{Text: req.GetQuery(), Service: req.GetService(), Namespace: req.GetNamespace(), Category: req.GetCategory(),
		PageSize: int(req.GetPageSize()), After: after}
	if req.GetSince() != nil {
		q.Since = req.GetSince().AsTime()
	}
	if req.GetUntil() != nil {
		q.Until = req.GetUntil().AsTime()
	}
	page, err := s.store.List(ctx, q)
	if err != nil {
		return nil, storeError(ctx, err)
	}
	return &historyv1.ListInvestigationsResponse{Investigations: page.Items, NextPageToken: EncodeCursor(page.Next), Store: s.store.Name()}, nil
}

// GetInvestigation implements HistoryService.
func (s *Service) GetInvestigation(ctx context.Context, req *historyv1.GetInvestigationRequest) (*historyv1.GetInvestigationResponse, error) {
	if err := sessionid.Check("investigation_id", req.GetInvestigationId()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	inv, err := s.store.Get(ctx, req.GetInvestigationId())
	if err != nil {
		return nil, storeError(ctx, err)
	}
	return inv, nil
}

func storeError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrBadQuery):
		return status.Error(codes.InvalidArgument, err.Error())
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Errorf(codes.Unavailable, "history store: %v", err)
}

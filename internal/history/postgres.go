package history

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory lock key that serializes migrations of
// several rcamesh processes starting against one database.
const migrationLock = 0x7263616d657368 // "rcamesh"

// Migration is one versioned schema change (migrations/NNNN_name.sql).
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("history: migration file %q is not NNNN_name.sql", name)
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("history: migrations must be numbered 1..n without gaps; found %d at position %d", m.Version, i+1)
		}
	}
	return out, nil
}

// PostgresConfig configures the PostgreSQL store.
type PostgresConfig struct {
	// DSN is a libpq connection string or postgres:// URL.
	DSN string
	// RetryFor bounds how long one operation retries while the database is
	// unreachable or restarting (then the error is returned).
	RetryFor time.Duration
	// MaxConns of the pool (0: pgxpool's default).
	MaxConns int32
}

// Postgres is the PostgreSQL store (pgx v5 pool).
type Postgres struct {
	pool     *pgxpool.Pool
	retryFor time.Duration
	log      *slog.Logger
}

// OpenPostgres connects (retrying while the database starts), runs the
// pending migrations and returns the store.
func OpenPostgres(ctx context.Context, cfg PostgresConfig, logger *slog.Logger) (*Postgres, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(cfg.DSN) == "" {
		return nil, errors.New("history: -store.dsn is required with -store=postgres")
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// pgx's message may quote the DSN; never echo a password.
		return nil, fmt.Errorf("history: -store.dsn is not a valid PostgreSQL connection string")
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 30 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("history: postgres pool: %w", err)
	}
	p := &Postgres{pool: pool, retryFor: cfg.RetryFor, log: logger}
	if err := p.retry(ctx, "migrate", p.migrate); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

// Name implements Store.
func (p *Postgres) Name() string { return "postgres" }

// Close closes the pool.
func (p *Postgres) Close() { p.pool.Close() }

// SchemaVersion is the highest applied migration.
func (p *Postgres) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM rcamesh_schema_migrations`).Scan(&v)
	return v, err
}

// migrate applies the pending migrations, each in its own transaction,
// under an advisory lock.
func (p *Postgres) migrate(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return err
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS rcamesh_schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM rcamesh_schema_migrations`).Scan(&have); err != nil {
		return err
	}
	if have > len(ms) {
		return fmt.Errorf("history: the database schema is at version %d, newer than this binary's %d: upgrade rcamesh", have, len(ms))
	}
	for _, m := range ms[have:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("history: migration %04d_%s: %w", m.Version, m.Name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO rcamesh_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return err
		}
		p.log.Info("history schema migrated", "version", m.Version, "name", m.Name)
	}
	return nil
}

// retryable reports whether err may go away by itself: the connection was
// lost or refused, the server is shutting down or starting, or a
// serialization conflict. Constraint and syntax errors are not retried.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57P"),         // admin/crash shutdown, cannot connect now
			pgErr.Code == "40001", pgErr.Code == "40P01", // serialization failure, deadlock
			pgErr.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var netErr net.Error
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "failed to connect") || strings.Contains(err.Error(), "conn closed")
}

// retry runs fn until it succeeds, fails for good, or retryFor passes.
// Every operation is idempotent, so a retry after an ambiguous failure (the
// commit may or may not have happened) is safe.
func (p *Postgres) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	deadline := time.Now().Add(p.retryFor)
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if !retryable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("history: postgres %s (attempt %d): %w", op, attempt, err)
		}
		p.log.WarnContext(ctx, "postgres unavailable; retrying", "op", op, "attempt", attempt, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("history: postgres %s: %w", op, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 2*time.Second)
	}
}

func marshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

func tsOrNil(t *timestamppb.Timestamp) any {
	if t == nil {
		return nil
	}
	return t.AsTime()
}

// Save implements Store: one transaction replaces the investigation and
// everything that belongs to it.
func (p *Postgres) Save(ctx context.Context, inv *Investigation) error {
	rec := inv.GetRecord()
	id := rec.GetInvestigationId()
	if id == "" {
		return errors.New("history: investigation without an id")
	}
	s := Summarize(inv)
	recBytes, err := marshal(rec)
	if err != nil {
		return fmt.Errorf("history: encode record %s: %w", id, err)
	}
	// A batch remembers the statements it prepared on its connection: each
	// attempt gets a fresh one (a retry may run on a new connection).
	batch := func() (*pgx.Batch, error) {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO investigations (id, session_id, title, alert_name, service, namespace, category, status, state,
				root_cause, confidence, started_at, finished_at, tool_calls, pin_count, loops, silent, record, search, saved_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18, to_tsvector('english', $19), now())
			ON CONFLICT (id) DO UPDATE SET session_id=EXCLUDED.session_id, title=EXCLUDED.title, alert_name=EXCLUDED.alert_name,
				service=EXCLUDED.service, namespace=EXCLUDED.namespace, category=EXCLUDED.category, status=EXCLUDED.status,
				state=EXCLUDED.state, root_cause=EXCLUDED.root_cause, confidence=EXCLUDED.confidence, started_at=EXCLUDED.started_at,
				finished_at=EXCLUDED.finished_at, tool_calls=EXCLUDED.tool_calls, pin_count=EXCLUDED.pin_count, loops=EXCLUDED.loops,
				silent=EXCLUDED.silent, record=EXCLUDED.record, search=EXCLUDED.search, saved_at=now()`,
			id, s.GetSessionId(), s.GetTitle(), s.GetAlertName(), s.GetService(), s.GetNamespace(), s.GetCategory().String(),
			s.GetStatus().String(), s.GetState(), s.GetRootCause(), s.GetConfidence(), startedAt(inv), tsOrNil(rec.GetFinishedAt()),
			s.GetToolCalls(), s.GetPins(), s.GetLoops(), s.GetSilent(), recBytes, stripNUL(searchText(inv)))
		b.Queue(`DELETE FROM reports WHERE investigation_id = $1`, id)
		b.Queue(`DELETE FROM pins WHERE investigation_id = $1`, id)
		b.Queue(`DELETE FROM critic_verdicts WHERE investigation_id = $1`, id)
		if r := inv.GetReport(); r != nil {
			rb, err := marshal(r)
			if err != nil {
				return nil, fmt.Errorf("history: encode report of %s: %w", id, err)
			}
			b.Queue(`INSERT INTO reports (investigation_id, session_id, markdown, confidence, silent, created_at, report)
				VALUES ($1,$2,$3,$4,$5,$6,$7)`, id, r.GetSessionId(), stripNUL(r.GetMarkdown()), r.GetConfidence(), r.GetSilent(), tsOrNil(r.GetCreatedAt()), rb)
		}
		for i, pin := range inv.GetPins() {
			pb, err := marshal(pin)
			if err != nil {
				return nil, fmt.Errorf("history: encode pin %s: %w", pin.GetId(), err)
			}
			b.Queue(`INSERT INTO pins (investigation_id, pin_id, ordinal, source_tool, validation_status, claim, pin)
				VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (investigation_id, pin_id) DO NOTHING`,
				id, pin.GetId(), i, pin.GetSourceTool(), pin.GetValidationStatus().String(), stripNUL(pin.GetClaim()), pb)
		}
		for i, v := range inv.GetCriticVerdicts() {
			vb, err := marshal(v)
			if err != nil {
				return nil, fmt.Errorf("history: encode critic verdict of %s: %w", id, err)
			}
			b.Queue(`INSERT INTO critic_verdicts (investigation_id, ordinal, round, score, action, summary, leading_hypothesis_id, review)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`, id, i, v.GetRound(), v.GetScore(), v.GetAction().String(), stripNUL(v.GetSummary()), v.GetLeadingHypothesisId(), vb)
		}
		return b, nil
	}
	if _, err := batch(); err != nil {
		return err
	}
	return p.retry(ctx, "save "+id, func(ctx context.Context) error {
		b, err := batch()
		if err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			return tx.SendBatch(ctx, b).Close()
		})
	})
}

// stripNUL removes NUL bytes, which PostgreSQL text cannot hold.
func stripNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

// Get implements Store.
func (p *Postgres) Get(ctx context.Context, id string) (*Investigation, error) {
	var inv *Investigation
	err := p.retry(ctx, "get "+id, func(ctx context.Context) error {
		inv = &Investigation{}
		var recBytes []byte
		err := p.pool.QueryRow(ctx, `SELECT record FROM investigations WHERE id = $1`, id).Scan(&recBytes)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		inv.Record = &investigationv1.InvestigationRecord{}
		if err := proto.Unmarshal(recBytes, inv.Record); err != nil {
			return fmt.Errorf("history: decode record %s: %w", id, err)
		}
		var rb []byte
		switch err := p.pool.QueryRow(ctx, `SELECT report FROM reports WHERE investigation_id = $1`, id).Scan(&rb); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			inv.Report = &investigationv1.Report{}
			if err := proto.Unmarshal(rb, inv.Report); err != nil {
				return fmt.Errorf("history: decode report %s: %w", id, err)
			}
		}
		if inv.Pins, err = queryMessages(ctx, p.pool, `SELECT pin FROM pins WHERE investigation_id = $1 ORDER BY ordinal`, id,
			func() *evidencev1.EvidencePin { return &evidencev1.EvidencePin{} }); err != nil {
			return err
		}
		inv.CriticVerdicts, err = queryMessages(ctx, p.pool, `SELECT review FROM critic_verdicts WHERE investigation_id = $1 ORDER BY ordinal`, id,
			func() *investigationv1.CriticReview { return &investigationv1.CriticReview{} })
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	inv.Summary = Summarize(inv)
	return inv, nil
}

func queryMessages[M proto.Message](ctx context.Context, pool *pgxpool.Pool, sql, id string, newM func() M) ([]M, error) {
	rows, err := pool.Query(ctx, sql, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (M, error) {
		var b []byte
		m := newM()
		if err := row.Scan(&b); err != nil {
			return m, err
		}
		return m, proto.Unmarshal(b, m)
	})
}

// List implements Store.
func (p *Postgres) List(ctx context.Context, q Query) (Page, error) {
	q, err := q.Normalize()
	if err != nil {
		return Page{}, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Text != "" {
		where = append(where, "search @@ websearch_to_tsquery('english', "+arg(q.Text)+")")
	}
	if q.Service != "" {
		where = append(where, "service = "+arg(q.Service))
	}
	if q.Namespace != "" {
		where = append(where, "namespace = "+arg(q.Namespace))
	}
	if q.Category != investigationv1.RootCauseCategory_ROOT_CAUSE_CATEGORY_UNSPECIFIED {
		where = append(where, "category = "+arg(q.Category.String()))
	}
	if !q.Since.IsZero() {
		where = append(where, "started_at >= "+arg(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "started_at < "+arg(q.Until))
	}
	if q.After != nil {
		where = append(where, "(started_at, id) < ("+arg(q.After.StartedAt)+", "+arg(q.After.ID)+")")
	}
	sql := `SELECT id, session_id, title, alert_name, service, namespace, category, status, state, root_cause, confidence,
		started_at, finished_at, tool_calls, pin_count, loops, silent FROM investigations`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY started_at DESC, id DESC LIMIT " + arg(q.PageSize+1)
	var page Page
	err = p.retry(ctx, "list", func(ctx context.Context) error {
		rows, err := p.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		page.Items, err = pgx.CollectRows(rows, scanSummary)
		return err
	})
	if err != nil {
		return Page{}, err
	}
	if len(page.Items) > q.PageSize {
		page.Items = page.Items[:q.PageSize]
		last := page.Items[len(page.Items)-1]
		page.Next = &Cursor{StartedAt: last.GetStartedAt().AsTime(), ID: last.GetInvestigationId()}
	}
	return page, nil
}

func scanSummary(row pgx.CollectableRow) (*historyv1.InvestigationSummary, error) {
	s := &historyv1.InvestigationSummary{}
	var category, status string
	var started time.Time
	var finished *time.Time
	if err := row.Scan(&s.InvestigationId, &s.SessionId, &s.Title, &s.AlertName, &s.Service, &s.Namespace, &category, &status,
		&s.State, &s.RootCause, &s.Confidence, &started, &finished, &s.ToolCalls, &s.Pins, &s.Loops, &s.Silent); err != nil {
		return nil, err
	}
	s.Category = investigationv1.RootCauseCategory(investigationv1.RootCauseCategory_value[category])
	s.Status = investigationv1.DiagnosisStatus(investigationv1.DiagnosisStatus_value[status])
	s.StartedAt = timestamppb.New(started)
	if finished != nil {
		s.FinishedAt = timestamppb.New(*finished)
	}
	return s, nil
}

// DeleteFinishedBefore implements Store (reports, pins and verdicts go by cascade).
func (p *Postgres) DeleteFinishedBefore(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := p.retry(ctx, "retention", func(ctx context.Context) error {
		tag, err := p.pool.Exec(ctx, `DELETE FROM investigations WHERE finished_at < $1`, t)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

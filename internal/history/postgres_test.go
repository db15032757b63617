package history

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rcamesh/rcamesh/internal/history/pgtest"
)

// pgCluster starts one throwaway cluster for the test (skipped under -short).
func pgCluster(t testing.TB) *pgtest.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real PostgreSQL")
	}
	return pgtest.Start(t)
}

func openPG(t testing.TB, c *pgtest.Cluster, retryFor time.Duration) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), PostgresConfig{DSN: c.DSN(), RetryFor: retryFor}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Log())
	}
	t.Cleanup(p.Close)
	return p
}

func TestPostgresStore(t *testing.T) {
	c := pgCluster(t)
	conformance(t, func(t testing.TB) Store { return openPG(t, c, 10*time.Second) })
}

func TestPostgresMigrations(t *testing.T) {
	c := pgCluster(t)
	ctx := context.Background()
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 || ms[0].Version != 1 {
		t.Fatalf("migrations %v", ms)
	}
	// Two processes starting at once: the advisory lock serializes them and
	// every migration is applied once.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			p, err := OpenPostgres(ctx, PostgresConfig{DSN: c.DSN(), RetryFor: 10 * time.Second}, nil)
			if err == nil {
				p.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p := openPG(t, c, 10*time.Second) // a third start is a no-op
	v, err := p.SchemaVersion(ctx)
	if err != nil || v != len(ms) {
		t.Fatalf("schema version %d (%v), want %d", v, err, len(ms))
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM rcamesh_schema_migrations`).Scan(&n); err != nil || n != len(ms) {
		t.Fatalf("%d migration rows (%v), want %d", n, err, len(ms))
	}
	for _, table := range []string{"investigations", "reports", "pins", "critic_verdicts"} {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing (%v)", table, err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT to_regclass('investigations_session_idx') IS NOT NULL`).Scan(new(bool)); err != nil {
		t.Error(err)
	}
	// A database migrated by a newer rcamesh is refused, not corrupted.
	if _, err := conn.Exec(ctx, `INSERT INTO rcamesh_schema_migrations (version, name) VALUES ($1, 'future')`, len(ms)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPostgres(ctx, PostgresConfig{DSN: c.DSN(), RetryFor: time.Second}, nil); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestPostgresBadDSN(t *testing.T) {
	_, err := OpenPostgres(context.Background(), PostgresConfig{DSN: "postgres://rcamesh:s3cr3t-pw@[::1", RetryFor: time.Second}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("bad DSN: %v", err)
	}
}

// TestPostgresRestartDuringWrites writes investigations from several
// goroutines while the database crashes (immediate stop) and comes back:
// every Save that returned nil is readable afterwards, and every Save
// eventually succeeds through the client-side retry.
func TestPostgresRestartDuringWrites(t *testing.T) {
	c := pgCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := openPG(t, c, time.Minute)

	const writers, perWriter = 4, 30
	var acked sync.Map
	var saved, duringOutage atomic.Int64
	var down atomic.Bool
	restarted := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				f := fixtures[i%len(fixtures)]
				f.id = fmt.Sprintf("inv-w%d-%03d", w, i)
				f.start = time.Duration(w*perWriter+i) * time.Minute
				if err := p.Save(ctx, f.investigation()); err != nil {
					errc <- fmt.Errorf("save %s: %w", f.id, err)
					return
				}
				if down.Load() {
					duringOutage.Add(1)
				}
				acked.Store(f.id, true)
				if saved.Add(1) == writers*perWriter/3 {
					go func() { // crash the database a third of the way in
						down.Store(true)
						if err := c.Stop(true); err != nil {
							errc <- err
						}
						time.Sleep(500 * time.Millisecond) // the outage writers must ride through
						err := c.StartServer()
						down.Store(false)
						if err != nil {
							errc <- err
						}
						close(restarted)
					}()
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-restarted:
	case <-ctx.Done():
		t.Fatal("database never restarted")
	}
	close(errc)
	for err := range errc {
		t.Fatalf("%v\n%s", err, c.Log())
	}
	if !strings.Contains(c.Log(), "database system was interrupted") && !strings.Contains(c.Log(), "redo") {
		t.Logf("server log has no crash recovery:\n%s", c.Log())
	}
	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		if _, err := p.Get(ctx, k.(string)); err != nil {
			t.Errorf("acknowledged %s lost: %v", k, err)
		}
		return true
	})
	if n != writers*perWriter {
		t.Fatalf("%d saves acknowledged, want %d", n, writers*perWriter)
	}
	page, err := p.List(ctx, Query{PageSize: MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != writers*perWriter {
		t.Errorf("list has %d investigations, want %d", len(page.Items), writers*perWriter)
	}
	t.Logf("%d saves, %d of them acknowledged after the crash began and before the restart finished", n, duringOutage.Load())
}

package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestSlowRecordDuration(t *testing.T) {
	tests := []struct {
		msg  string
		want time.Duration
	}{
		{`slowlog id=3 duration_us=2390000 command="KEYS a:*"`, 2390 * time.Millisecond},
		{`# Query_time: 4.2 slow query app=reports`, 4200 * time.Millisecond},
		{`slow query took 1800ms app=reports`, 1800 * time.Millisecond},
		{`Slow query: duration=3.5s application_name=exporter`, 3500 * time.Millisecond},
		{`slow op durationMillis: 950 appName: "ledger-sync"`, 950 * time.Millisecond},
		{`slowlog entry without a duration`, 0},
	}
	for _, tc := range tests {
		if got := slowRecordDuration(tc.msg); got != tc.want {
			t.Errorf("slowRecordDuration(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// A store's slow records name the client that blocks it; the other
// clients' timeouts are its victims. Variants: Redis's SLOWLOG with
// CLIENT SETNAME, a PostgreSQL slow-query log with application_name,
// MongoDB's appName; the culprit is the client's commit whose change
// names the command. Without victims, or when the named client is not a
// workload of the evidence, nothing is proposed.
func TestSlowCommandHolder(t *testing.T) {
	cases := []struct {
		name, store, client, slow, victim string
		commitDiff                        string
		wantEntity                        string
	}{
		{"redis keys", "cache-redis", "panel-admin", `slowlog entry id=%d duration_us=2100000 command="KEYS basket:*" client=10.1.2.3:5000 name=panel-admin`,
			"redis: i/o timeout after 500ms (HGET basket:77)", "+\tids, err := rdb.Keys(ctx, \"basket:*\").Result()", "commit/a1b2c3d"},
		{"postgres slow query", "orders-db", "nightly-export", `LOG: slow query duration=%d500ms application_name=nightly-export statement: SELECT * FROM orders o JOIN lines l ON true`,
			"pq: canceling statement due to statement timeout", "+  rows = db.query('SELECT * FROM orders o JOIN lines l ON true')", "commit/a1b2c3d"},
		{"mongo slow op, no commit", "catalog-mongo", "price-sweeper", `Slow query {"durationMillis": %d900, "appName": "price-sweeper", "command": "find"}`,
			"MongoTimeoutError: Timed out after 3000 ms while waiting for a server", "", "deployment/shop/price-sweeper"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines []facts.LogLine
			for i := 1; i <= 4; i++ {
				lines = append(lines, facts.LogLine{Timestamp: at(i * 3), Namespace: "shop", Service: tc.store, Level: "WARN", Message: strings.Replace(tc.slow, "%d", string(rune('0'+i)), 1)})
				lines = append(lines, errLine(i*3+1, "checkout-7d8f9-abc12", "checkout", tc.victim))
			}
			lines = append(lines, facts.LogLine{Timestamp: at(1), Namespace: "shop", Service: tc.client, Level: "INFO", Message: "started"})
			var commits []facts.Commit
			if tc.commitDiff != "" {
				commits = []facts.Commit{
					{SHA: "a1b2c3d4e5", Service: tc.client, Message: "admin: count active entries", Diff: tc.commitDiff, HasDiff: true, Timestamp: at(-120)},
					{SHA: "f0f0f0f0f0", Service: tc.client, Message: "reports: date format", Diff: "+ fmt := \"02/01/2006\"", HasDiff: true, Timestamp: at(-60)},
				}
			}
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines), pin(t, "com", "get_commits", "commits", facts.KeyCommits, commits))
			if len(res.Findings) == 0 {
				t.Fatal("no finding")
			}
			f := res.Findings[0]
			if f.Mode != ModeSlowCommandHolder || f.Category != catCode || f.Entity != tc.wantEntity {
				t.Fatalf("lead %s %s %s, want the slow-command holder %s", f.Mode, f.Category, f.Entity, tc.wantEntity)
			}
			if !strings.Contains(f.Statement, tc.client) || !strings.Contains(f.Statement, tc.store) {
				t.Fatalf("statement %q names neither client nor store", f.Statement)
			}
		})
	}
	t.Run("no victims", func(t *testing.T) {
		var lines []facts.LogLine
		for i := 1; i <= 4; i++ {
			lines = append(lines, facts.LogLine{Timestamp: at(i), Namespace: "shop", Service: "cache-redis", Level: "WARN", Message: `slowlog id=1 duration_us=2100000 command="KEYS basket:*" name=panel-admin`})
		}
		lines = append(lines, facts.LogLine{Timestamp: at(1), Namespace: "shop", Service: "panel-admin", Level: "INFO", Message: "started"})
		res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
		for _, f := range res.Findings {
			if f.Mode == ModeSlowCommandHolder {
				t.Fatalf("holder proposed without victims: %s", f.Statement)
			}
		}
	})
	t.Run("client unknown", func(t *testing.T) {
		var lines []facts.LogLine
		for i := 1; i <= 4; i++ {
			lines = append(lines, facts.LogLine{Timestamp: at(i), Namespace: "shop", Service: "cache-redis", Level: "WARN", Message: `slowlog id=1 duration_us=2100000 command="KEYS basket:*" name=someone`})
			lines = append(lines, errLine(i, "checkout-7d8f9-abc12", "checkout", "redis: i/o timeout"))
		}
		res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
		for _, f := range res.Findings {
			if f.Mode == ModeSlowCommandHolder {
				t.Fatalf("holder proposed for a client no evidence knows: %s", f.Statement)
			}
		}
	})
}

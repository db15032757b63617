package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A release whose commit removed the cache in front of the calls that are
// now throttled is the cause of the throttling: a code defect on the
// commit. A release whose commit names nothing of the failure, one after
// the onset, or a configuration-only release is not this row.
func TestCodeChangeNamesTheMechanism(t *testing.T) {
	alertAt := time.Date(2027, 2, 3, 9, 40, 0, 0, time.UTC)
	at := func(d, h, m int) *time.Time { x := time.Date(2027, 2, d, h, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit, deployAt *time.Time) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "QuoteErrors", Namespace: "fx", Service: "quote-api", StartsAt: timestamppb.New(alertAt)}, nil)
		for i := 0; i < 3; i++ {
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(3, 9, 20+i), Service: "quote-api", Level: "ERROR",
				Message: "rate lookup failed: operation error Pricing: GetRateCard, ThrottlingException: Rate exceeded"}})
		}
		ev.Commits = []Commit{{Commit: c}}
		ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "quote-api", Namespace: "fx", Revision: c.SHA[:7], PreviousRevision: "1111111", StartedAt: deployAt, FinishedAt: deployAt}}}
		return ev
	}
	lead := Finding{Mode: ModeAnomaly, Category: catResource, Score: 0.7, Entity: "deployment/fx/quote-api", Statement: "quote-api is throttled: ThrottlingException on GetRateCard"}
	removed := facts.Commit{SHA: "abc1234def", Service: "quote-api", Message: "refactor(pricing): call GetRateCard directly", Summary: "Removes the RateCardCache wrapper; every quote calls GetRateCard.", Timestamp: at(2, 16, 0),
		Files: []facts.CommitFile{{Path: "src/pricing/client.go", ChangeType: facts.ChangeFeature}}, ChangeTypes: []string{facts.ChangeFeature}}
	ev := build(removed, at(3, 9, 5))
	sc := ev.scanChanges(alertAt)
	f, ok := ev.codeChange(lead, sc)
	if !ok {
		t.Fatal("no finding for the release that removed the cache in front of the throttled call")
	}
	if f.Category != catCode || f.Entity != "commit/abc1234" || !strings.Contains(f.Statement, "GetRateCard") {
		t.Errorf("finding %s on %s: %q, want a code defect on the commit naming GetRateCard", f.Category, f.Entity, f.Statement)
	}

	leak := lead
	leak.Statement = "quote-api runs out of heap (OutOfMemoryError) after GetRateCard responses are kept"
	if f, ok := ev.codeChange(leak, sc); ok {
		t.Errorf("the process's own memory running out was read as the release's code defect: %s", f.Statement)
	}

	unrelated := removed
	unrelated.Message, unrelated.Summary = "feat(ui): dark mode", "Adds a theme switch."
	after := removed
	config := removed
	config.Files, config.ChangeTypes = []facts.CommitFile{{Path: "deploy/values.yaml", ChangeType: facts.ChangeConfig}}, []string{facts.ChangeConfig}
	for name, tc := range map[string]struct {
		c  facts.Commit
		at *time.Time
	}{"names nothing of the failure": {unrelated, at(3, 9, 5)}, "shipped after the onset": {after, at(3, 9, 30)}, "configuration only": {config, at(3, 9, 5)}} {
		ev := build(tc.c, tc.at)
		if name == "shipped after the onset" {
			ev.Commits[0].Timestamp = at(3, 9, 25)
		}
		if f, ok := ev.codeChange(lead, ev.scanChanges(alertAt)); ok {
			t.Errorf("%s: promoted to %s: %s", name, f.Entity, f.Statement)
		}
	}
}

// The runtime's crash report of a process that keeps restarting weighs
// more than the same line from a process that does not restart.
func TestCrashReportOfARestartingProcessWeighs(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "SlotsDown", Namespace: "spa", Service: "slots"}, nil)
	crash := LogLine{LogLine: facts.LogLine{Service: "slots", Level: "FATAL", Message: "fatal error: concurrent map writes"}}
	score := func(restarts int32) float64 {
		top := &candidate{kind: "workload", name: "slots", entity: "deployment/spa/slots", errLines: []LogLine{crash}, restarts: restarts}
		best, all := ev.inferCategory(top, nil, nil)
		for _, v := range append(all, best) {
			if v.cat == catCode {
				return v.score
			}
		}
		return 0
	}
	if still, restarting := score(0), score(4); restarting < still+2 {
		t.Errorf("code vote %.1f for a restarting process, %.1f otherwise: the crash report of a restarting process must weigh more", restarting, still)
	}
}

// A backlog that grows while its consumer's own errors name another
// mechanism (a permission refused) is that failure's effect: the
// consumer's mechanism leads. Without such errors, the growing backlog
// still votes for a capacity limit.
func TestBacklogIsTheEffectOfAFailingConsumer(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "UploadsStuck", Namespace: "permits", Service: "uploader"}, nil)
	denied := LogLine{LogLine: facts.LogLine{Service: "uploader", Level: "ERROR", Message: "upload failed: AccessDenied: not authorized to perform sts:AssumeRoleWithWebIdentity, status code: 403"}}
	backlog := seriesChange{s: Series{Series: facts.Series{Name: "upload_queue_depth"}}, r: rise{head: 3, tail: 1400, peak: 1466, shape: "creep"}, magnitude: 8, kind: "saturation"}
	top := &candidate{kind: "workload", name: "uploader", entity: "deployment/permits/uploader", errLines: []LogLine{denied, denied, denied}, changes: []seriesChange{backlog}}
	if best, all := ev.inferCategory(top, nil, nil); best.cat != catConfig {
		t.Errorf("category %v (votes %+v), want configuration: the refused permission, not the backlog it causes", best.cat, all)
	}
	top.errLines = nil
	if best, _ := ev.inferCategory(top, nil, nil); best.cat != catResource {
		t.Errorf("without the consumer's errors: %v, want resource exhaustion", best.cat)
	}
	// A policy created before the onset, the consumer logging errors the
	// table does not read: the backlog is the change's effect too.
	created := time.Date(2027, 3, 30, 13, 42, 0, 0, time.UTC)
	onset := created.Add(18 * time.Minute)
	policy := &changeRef{text: "Sidecar permits/default created at 13:42:00Z", at: &created, kind: changeConfig, entity: "sidecar/permits/default"}
	opaque := LogLine{LogLine: facts.LogLine{Service: "uploader", Level: "ERROR", Message: "send failed item=V-77 provider=vaultbox"}}
	top.errLines = []LogLine{opaque, opaque}
	if best, all := ev.inferCategory(top, policy, &onset); best.cat != catConfig {
		t.Errorf("a policy change before the onset, errors after it: %v (votes %+v), want configuration", best.cat, all)
	}
	top.errLines = nil
	if best, all := ev.inferCategory(top, policy, &onset); best.cat == catConfig {
		t.Errorf("a policy change before the onset, no errors: %v (votes %+v), want the backlog's reading to stand", best.cat, all)
	}
}

// Most of a service's errors being failed calls to one downstream is that
// downstream's failure unless the release names it.
func TestDependencyShareAndCommitsNamingIt(t *testing.T) {
	errs := []string{
		"POST https://eu.api.paygate.example/v4/auth -> 502 Bad Gateway",
		"POST https://eu.api.paygate.example/v4/auth -> 503 Service Unavailable",
		"template render failed: missing field",
	}
	host, share := dependencyShare(errs, "booking")
	if host != "eu.api.paygate.example" || share < 0.6 || share > 0.7 {
		t.Errorf("dependencyShare = %q %.2f, want the payment host at 2/3", host, share)
	}
	if h, s := dependencyShare([]string{"nil pointer dereference in handler"}, "booking"); h != "" || s != 0 {
		t.Errorf("a code error named a dependency: %q %.2f", h, s)
	}
	unrelated := []Commit{{Commit: facts.Commit{Message: "emails: new confirmation template"}}}
	related := []Commit{{Commit: facts.Commit{Message: "payments: new PayGate client"}}}
	if namedInCommits(host, unrelated) || !namedInCommits(host, related) {
		t.Errorf("namedInCommits: unrelated %v, related %v", namedInCommits(host, unrelated), namedInCommits(host, related))
	}
}

// A workload whose failing pods all run on one node, while its pods on
// other nodes are fine, fails through that node; failing pods on two
// nodes, or a single failing pod, are not confined.
func TestConfinedNode(t *testing.T) {
	pod := func(name, node string) Pod {
		return Pod{Pod: facts.Pod{Name: name, Node: node, Workload: "game"}}
	}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "Slow", Namespace: "play", Service: "game"}, nil)
	ev.Pods = []Pod{pod("game-a", "w3"), pod("game-b", "w3"), pod("game-c", "w1"), pod("game-d", "w2"), pod("game-e", "w4")}
	errs := func(pods ...string) []LogLine {
		var out []LogLine
		for _, p := range pods {
			out = append(out, LogLine{LogLine: facts.LogLine{Pod: p, Level: "WARN", Message: "ping timeout, reconnecting"}})
		}
		return out
	}
	top := &candidate{kind: "workload", name: "game", entity: "deployment/play/game", errLines: errs("game-a", "game-b")}
	node, bad, fine, ok := ev.confinedNode(top)
	if !ok || node != "w3" || len(bad) != 2 || fine != 3 {
		t.Fatalf("confinedNode = %q %v %d %v, want w3, 2 pods, 3 other nodes", node, bad, fine, ok)
	}
	if best, _ := ev.inferCategory(top, nil, nil); best.cat != catInfra {
		t.Errorf("category %v, want infrastructure", best.cat)
	}
	for name, lines := range map[string][]LogLine{"two nodes": errs("game-a", "game-c"), "one pod": errs("game-a")} {
		top.errLines = lines
		if _, _, _, ok := ev.confinedNode(top); ok {
			t.Errorf("%s: confined", name)
		}
	}
}

// A release that ships a schema migration before the caller's sessions
// wait on a table lock is the cause of the pile-up behind them, even when
// the alert is about the database and the lock waits are logged by the
// caller: the lock wait ties them, not a shared symbol. The same release
// without a migration, or lock waits absent, is not this row.
func TestCodeChangeMigrationLocks(t *testing.T) {
	alertAt := time.Date(2027, 6, 2, 9, 30, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { x := time.Date(2027, 6, 2, h, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit, msg string) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "DBConnectionsHigh", Namespace: "rent", Service: "rentdb", StartsAt: timestamppb.New(alertAt)}, nil)
		for i := 0; i < 3; i++ {
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(9, 10+i), Service: "lease-api", Pod: "lease-api-7d8f6cbb95-m2jwl", Level: "ERROR", Message: msg}})
		}
		ev.Commits = []Commit{{Commit: c}}
		ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "lease-api", Namespace: "rent", Revision: c.SHA[:7], PreviousRevision: "2222222", StartedAt: at(9, 4), FinishedAt: at(9, 6)}}}
		return ev
	}
	lead := Finding{Mode: ModeConnExhaustion, Category: catResource, Score: 0.7, Entity: "deployment/rent/lease-api", Statement: "lease-api fails because its connection pool is exhausted: Too many connections"}
	migration := facts.Commit{SHA: "5e6f7a8b9c", Service: "lease-api", Message: "feat: deposit terms", Timestamp: at(8, 40),
		Files:       []facts.CommitFile{{Path: "db/migrations/0042_add_deposit_terms.sql", ChangeType: facts.ChangeDBMigration}, {Path: "src/lease.go", ChangeType: facts.ChangeFeature}},
		ChangeTypes: []string{facts.ChangeDBMigration, facts.ChangeFeature}}
	waits := "Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction"
	ev := build(migration, waits)
	f, ok := ev.codeChange(lead, ev.scanChanges(alertAt))
	if !ok {
		t.Fatal("no finding for the release whose migration the sessions wait behind")
	}
	if f.Category != catCode || f.Entity != "commit/5e6f7a8" || !strings.Contains(f.Statement, "lock wait timeout") {
		t.Errorf("finding %s on %s: %q, want a code defect on the commit naming the lock wait", f.Category, f.Entity, f.Statement)
	}
	noMigration := migration
	noMigration.Files, noMigration.ChangeTypes = migration.Files[1:], []string{facts.ChangeFeature}
	for name, ev := range map[string]*Evidence{"no migration shipped": build(noMigration, waits), "no lock waits": build(migration, "dial tcp 10.0.3.9:3306: connect: connection refused")} {
		if f, ok := ev.codeChange(lead, ev.scanChanges(alertAt)); ok {
			t.Errorf("%s: promoted to %s: %s", name, f.Entity, f.Statement)
		}
	}
}

// A deadlock the runtime reports outweighs the threads blocked behind it:
// they are its effect, not a saturated pool.
func TestDeadlockReportOutweighsBlockedThreads(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ThreadsBlocked", Namespace: "press", Service: "binder"}, nil)
	line := LogLine{LogLine: facts.LogLine{Service: "binder", Level: "ERROR", Message: "Found one Java-level deadlock:"}}
	var changes []seriesChange
	for _, pod := range []string{"binder-6f5d8c7b94-j7lj9", "binder-6f5d8c7b94-jv8b6", "binder-6f5d8c7b94-pvp2f"} {
		s := facts.Series{Name: "jvm_threads_states_threads", Labels: map[string]string{"pod": pod, "state": "blocked"}, Baseline: 0, Latest: 200, Peak: 200, Shape: "creep"}
		changes = append(changes, seriesChange{s: Series{Series: s}, r: rise{head: 0, tail: 200, shape: "creep"}, magnitude: 5})
	}
	top := &candidate{kind: "workload", name: "binder", entity: "deployment/press/binder", errLines: []LogLine{line}, changes: changes}
	best, all := ev.inferCategory(top, nil, nil)
	if best.cat != catCode {
		t.Errorf("category %v (votes %+v), want a code defect", best.cat, all)
	}
}

// A settings change hours before the onset votes for its kind only when
// the symptoms name what it changed (an identifier that is not the
// failing workload's own name): specificity ties it, not time.
func TestSpecificChangeVotesPastTheWindow(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ConsumerSkips", Namespace: "tides", Service: "surge-model"}, nil)
	changed := time.Date(2026, 6, 18, 2, 50, 0, 0, time.UTC)
	onset := changed.Add(3*time.Hour + 19*time.Minute)
	warn := LogLine{LogLine: facts.LogLine{Service: "surge-model", Level: "WARN", Message: "Fetch position offset=8811204 is out of range for partition gauge-readings-4, resetting offset"}}
	top := &candidate{kind: "workload", name: "surge-model", entity: "deployment/tides/surge-model", errLines: []LogLine{warn, warn, warn}}
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"names the topic", "commit 7a2c9e4 of tides-infra (kafka: gauge-readings retention to one week) at 02:50:00Z", true},
		{"names the topic's path", "config change announced by topic-operator at 02:50:00Z: “kafka/topics/gauge-readings reconciled”", true},
		{"names the workload only", "commit 7a2c9e4 of tides-infra (surge-model: raise replicas) at 02:50:00Z", false},
		{"names nothing", "commit 7a2c9e4 of tides-infra (docs) at 02:50:00Z", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := &changeRef{text: tc.text, at: &changed, kind: changeConfig, entity: "commit/7a2c9e4"}
			best, all := ev.inferCategory(top, ch, &onset)
			if got := best.cat == catConfig; got != tc.want {
				t.Errorf("configuration = %v (votes %+v), want %v", got, all, tc.want)
			}
		})
	}
}

// A release that bumped a library whose name the caller's failing lines
// carry (a client's log prefix) is the code that changed: a code defect
// on the commit, where a dependency reading blamed the server. A bump of
// a library no failing line names, or a name only inside a longer word,
// is not.
func TestCodeChangeBumpedLibrary(t *testing.T) {
	alertAt := time.Date(2026, 4, 2, 9, 40, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { x := time.Date(2026, 4, 2, h, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit, line string) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "OrdersFailing", Namespace: "loft", Service: "order-api", StartsAt: timestamppb.New(alertAt)}, nil)
		for i := 0; i < 3; i++ {
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(9, 20+i), Service: "order-api", Level: "ERROR", Message: line}})
		}
		ev.Commits = []Commit{{Commit: c}}
		ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "order-api", Namespace: "loft", Revision: c.SHA[:7], PreviousRevision: "1111111", StartedAt: at(5, 10), FinishedAt: at(5, 12)}}}
		return ev
	}
	lead := Finding{Mode: ModeAnomaly, Category: catDependency, Score: 0.7, Entity: "service/stock.loft.svc", Statement: "Downstream dependency stock.loft.svc is failing"}
	bump := facts.Commit{SHA: "e5b20c7aa1", Service: "order-api", Message: "chore(deps): bump httpkit from 2.9.4 to 3.0.1", Summary: "Release notes: retries on 5xx by default.", Timestamp: at(5, 0),
		Files: []facts.CommitFile{{Path: "go.mod", ChangeType: "dependency_bump"}}, ChangeTypes: []string{"dependency_bump"}}
	named := "httpkit: POST http://stock.loft.svc/reservations attempt 5/6 failed: context deadline exceeded, retrying immediately"
	f, ok := build(bump, named).codeChange(lead, build(bump, named).scanChanges(alertAt))
	if !ok || f.Category != catCode || f.Entity != "commit/e5b20c7" || !strings.Contains(f.Statement, "httpkit") {
		t.Fatalf("bumped library named by the failures: %v %+v", ok, f)
	}
	renovate := bump
	renovate.Message = "fix(deps): update module github.com/acme/httpkit to v3"
	if ev := build(renovate, named); !func() bool { _, ok := ev.codeChange(lead, ev.scanChanges(alertAt)); return ok }() {
		t.Error("a module path's bump (renovate's wording) was not tied to its name in the failures")
	}
	for name, line := range map[string]string{
		"a library no failing line names": "POST http://stock.loft.svc/reservations failed: context deadline exceeded",
		"a name inside a longer word":     "myhttpkitproxy: POST http://stock.loft.svc/reservations failed: context deadline exceeded",
	} {
		ev := build(bump, line)
		if f, ok := ev.codeChange(lead, ev.scanChanges(alertAt)); ok {
			t.Errorf("%s: promoted %s", name, f.Entity)
		}
	}
}

// A capacity exhausted after a code change of the exhausted entity that,
// in its own words, stopped bounding what it takes (a handle never closed,
// keys written without expiry, a client without a timeout) is that
// change's code defect; a change that bounds more, one of another entity
// naming nothing of it, or one after the onset is not.
func TestUnboundedChangeIsTheCause(t *testing.T) {
	alertAt := time.Date(2027, 5, 9, 11, 30, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { x := time.Date(2027, 5, 9, h, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "TilesDown", Namespace: "maps", Service: "tiler", StartsAt: timestamppb.New(alertAt)}, nil)
		for i := 0; i < 3; i++ {
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(11, 20+i), Service: "tiler", Level: "ERROR", Message: "open /tiles/12/34.png: too many open files"}})
		}
		ev.Commits = []Commit{{Commit: c}}
		return ev
	}
	lead := Finding{Mode: ModeAnomaly, Category: catResource, Score: 0.7, Entity: "deployment/maps/tiler", Statement: "tiler ran out of file descriptors: process_open_fds at its limit 1024"}
	base := facts.Commit{SHA: "f0e1d2c3b4", Service: "tiler", Message: "tiles: stream tiles from disk", Timestamp: at(4, 0),
		Files: []facts.CommitFile{{Path: "src/tiles.go", ChangeType: facts.ChangeFeature}}, ChangeTypes: []string{facts.ChangeFeature}}
	for _, tc := range []struct {
		name    string
		service string
		summary string
		at      *time.Time
		want    bool
	}{
		{"handle never closed", "tiler", "Opens each tile for streaming and never closes the file handle.", at(4, 0), true},
		{"close skipped on a path", "tiler", "The early return skips the close() in the finally block.", at(4, 0), true},
		{"keys without expiry, another service naming the entity", "streaks", "Writes one key per visitor to tiler's cache without TTL.", at(4, 0), true},
		{"backoff removed", "tiler", "Retries five times; the exponential backoff helper is removed.", at(4, 0), true},
		{"a change that adds a bound", "tiler", "Closes every tile handle after streaming and adds a timeout.", at(4, 0), false},
		{"a change that says it leaves the bounds alone", "tiler", "Renames the tile loader; does not change limits or timeouts, no change to the TTL.", at(4, 0), false},
		{"another entity naming nothing of it", "billing", "Invoices are written without TTL.", at(4, 0), false},
		{"after the onset", "tiler", "Opens each tile and never closes the file handle.", at(11, 25), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Service, c.Summary, c.Timestamp = tc.service, tc.summary, tc.at
			ev := build(c)
			f, ok := ev.codeChange(lead, ev.scanChanges(alertAt))
			if ok != tc.want {
				t.Fatalf("finding %v (%s), want %v", ok, f.Statement, tc.want)
			}
			if ok && (f.Category != catCode || f.Entity != "commit/f0e1d2c") {
				t.Errorf("finding %s on %s, want a code defect on the commit", f.Category, f.Entity)
			}
		})
	}
}

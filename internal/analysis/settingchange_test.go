package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A settings change hours before the onset whose own identifiers recur in
// the failing lines (not a name of the target) is the cause of a capacity
// or dependency reading, in any vocabulary; a change naming only the
// target, a code change, a change after the onset or past the look-back,
// and a healthy lead are not.
func TestSettingChange(t *testing.T) {
	onset := time.Date(2026, 8, 1, 5, 30, 0, 0, time.UTC)
	before := func(d time.Duration) *time.Time { x := onset.Add(-d); return &x }
	type tcase struct {
		name    string
		lines   []string
		commit  facts.Commit
		lead    Finding
		want    bool
		wantIDs string
	}
	consumer := Finding{Mode: ModeTrafficSaturation, Category: catResource, Score: 0.7, Entity: "consumergroup/ticket-validations", Statement: "Kafka consumer group ticket-validations falls behind on topic boardings"}
	pool := Finding{Mode: ModeTrafficSaturation, Category: catDependency, Score: 0.7, Entity: "deployment/scores/score-api", Statement: "score-api fails on its database"}
	kafka := []string{"[Consumer clientId=validator-1] consumer poll timeout has expired: the time between calls to poll() was longer than the configured max.poll.interval.ms"}
	mysql := []string{"ERROR HikariPool-1 - Failed to validate connection (No operations allowed after connection closed). Possibly consider using a shorter maxLifetime value."}
	cfg := func(msg, summary string, at *time.Time) facts.Commit {
		return facts.Commit{SHA: "7a3c9e1b5d", Service: "validator", Message: msg, Summary: summary, Timestamp: at,
			ChangeTypes: []string{facts.ChangeConfig}, Files: []facts.CommitFile{{Path: "config/application-prod.yaml", ChangeType: facts.ChangeConfig}}}
	}
	tests := []tcase{
		{"the setting the failure names, six hours before", kafka, cfg("consumer: bigger batches", "Raises max.poll.records to 2000; max.poll.interval.ms stays 300000", before(6*time.Hour)), consumer, true, "max.poll.interval.ms"},
		{"other vocabulary: a pool's lifetime", mysql, cfg("db: keep connections longer", "Sets maxLifetime to 4h for the scores pool", before(3*time.Hour)), pool, true, "maxLifetime"},
		{"names only a pod of the evidence", []string{"ERROR route-pg-0: could not write to file pg_wal/xlogtemp: No space left on device"}, cfg("route-pg-0: reload", "route-pg-0 received SIGHUP, reloading configuration files", before(6*time.Hour)), consumer, false, ""},
		{"the change made the holder", []string{"ERROR Failed to pull image docker.io/library/nginx: toomanyrequests from registry-1.docker.io"}, cfg("add node-audit CronJob", "pulls docker.io/library images on every node every 10 minutes", before(6*time.Hour)), Finding{Category: catResource, Score: 0.7, Entity: "cronjob/security/node-audit", Statement: "CronJob node-audit exhausts the pull rate limit of docker.io"}, false, ""},
		{"names only the target", kafka, cfg("ticket-validations: bump", "ticket-validations consumer tuning", before(time.Hour)), consumer, false, ""},
		{"a code change", kafka, func() facts.Commit {
			c := cfg("consumer: bigger batches", "names max.poll.interval.ms", before(time.Hour))
			c.ChangeTypes, c.Files = []string{facts.ChangeFeature}, []facts.CommitFile{{Path: "src/Consumer.java", ChangeType: facts.ChangeFeature}}
			return c
		}(), consumer, false, ""},
		{"after the onset", kafka, cfg("consumer: bigger batches", "names max.poll.interval.ms", before(-10*time.Minute)), consumer, false, ""},
		{"past the look-back", kafka, cfg("consumer: bigger batches", "names max.poll.interval.ms", before(30*time.Hour)), consumer, false, ""},
		{"a healthy lead", kafka, cfg("consumer: bigger batches", "names max.poll.interval.ms", before(time.Hour)), Finding{Healthy: true, Category: catHealthy, Entity: "deployment/x/y"}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "ConsumerLag", Namespace: "boarding", StartsAt: timestamppb.New(onset)}, nil)
			for _, m := range tc.lines {
				ts := onset.Add(2 * time.Minute)
				level := "WARN"
				if strings.HasPrefix(m, "ERROR ") {
					level, m = "ERROR", strings.TrimPrefix(m, "ERROR ")
				}
				ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Service: "validator", Level: level, Message: m}})
			}
			ev.Commits = []Commit{{Commit: tc.commit}}
			ev.Pods = []Pod{{Pod: healthyPod("route-pg-0")}}
			sc := changeScan{at: onset, onset: onset, hasOnset: true, refs: ev.limitChangeRefs(onset)}
			f, ok := ev.settingChange(tc.lead, sc)
			if ok != tc.want {
				t.Fatalf("promoted = %v (%+v), want %v", ok, f, tc.want)
			}
			if ok && (f.Category != catConfig || f.Entity != "commit/7a3c9e1" || !strings.Contains(f.Statement, tc.wantIDs)) {
				t.Errorf("finding %s %s %q, want configuration on the commit naming %s", f.Category, f.Entity, f.Statement, tc.wantIDs)
			}
		})
	}
}

package analysis

import (
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A failure whose words are a spec row's effect, on pods whose containers
// carry the row's setting, becomes a configuration fault of their workload
// with the setting quoted; the same words without the setting, or the
// setting without the words, change nothing.
func TestSpecExplained(t *testing.T) {
	pod := func(name string, settings ...string) Pod {
		return Pod{Pod: facts.Pod{Namespace: "ledger", Name: name, OwnerKind: "ReplicaSet", OwnerName: "tally-7d9c",
			Containers: []facts.Container{{Name: "app", Settings: settings}}}}
	}
	deps := []Deployment{{Deployment: facts.Deployment{Namespace: "ledger", Name: "tally"}}}
	for _, tc := range []struct {
		name     string
		settings []string
		line     string
		entity   string
		wantEnt  string
		wantSet  string
	}{
		{"read-only root filesystem (Go's words)", []string{"securityContext readOnlyRootFilesystem: true"}, "open /var/cache/x.db: read-only file system", "pod/ledger/tally-7d9c-a1", "deployment/ledger/tally", "readOnlyRootFilesystem"},
		{"read-only root filesystem (errno name)", []string{"mount /data from emptyDir data", "securityContext readOnlyRootFilesystem: true"}, "write failed: EROFS", "deployment/ledger/tally", "deployment/ledger/tally", "readOnlyRootFilesystem"},
		{"host network with ClusterFirst, cluster name unresolved", []string{"pod hostNetwork: true, dnsPolicy: ClusterFirst"}, "dial tcp: lookup books-db.ledger.svc.cluster.local: no such host", "service/ledger/books-db", "deployment/ledger/tally", "hostNetwork"},
		{"host network with ClusterFirstWithHostNet is not the cause", []string{"pod hostNetwork: true, dnsPolicy: ClusterFirstWithHostNet"}, "lookup books-db.ledger.svc.cluster.local: no such host", "service/ledger/books-db", "service/ledger/books-db", ""},
		{"the words without the setting (a disk remounted read-only)", []string{"env MODE=prod"}, "open /var/cache/x.db: read-only file system", "pod/ledger/tally-7d9c-a1", "pod/ledger/tally-7d9c-a1", ""},
		{"the setting without the words", []string{"securityContext readOnlyRootFilesystem: true"}, "connection refused to books-db:5432", "pod/ledger/tally-7d9c-a1", "pod/ledger/tally-7d9c-a1", ""},
		{"non-root user and a refused file write", []string{"securityContext runAsNonRoot: true"}, "mkdir /srv/tally/spool: permission denied", "pod/ledger/tally-7d9c-a1", "deployment/ledger/tally", "runAsNonRoot"},
		{"non-root user and a database's permission error", []string{"securityContext runAsNonRoot: true"}, "ERROR: permission denied for table invoices", "pod/ledger/tally-7d9c-a1", "pod/ledger/tally-7d9c-a1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Pods: []Pod{pod("tally-7d9c-a1", tc.settings...)}, Deployments: deps}
			fs := []Finding{{Mode: ModeCrashLoop, Category: catInfra, Entity: tc.entity, Statement: "tally fails"}}
			fs[0].validated("Container logs (tally-7d9c-a1): " + quote(tc.line))
			ev.specExplained(fs)
			if fs[0].Entity != tc.wantEnt {
				t.Errorf("entity %s, want %s", fs[0].Entity, tc.wantEnt)
			}
			if tc.wantSet == "" {
				if fs[0].Category != catInfra {
					t.Errorf("category changed to %v without a spec row", fs[0].Category)
				}
				return
			}
			if fs[0].Category != catConfig || !strings.Contains(fs[0].Statement, tc.wantSet) {
				t.Errorf("want a configuration fault quoting %s, got %v: %s", tc.wantSet, fs[0].Category, fs[0].Statement)
			}
		})
	}
}

// A healthy reading is never rewritten by a spec row.
func TestSpecExplainedLeavesHealthAlone(t *testing.T) {
	ev := &Evidence{Pods: []Pod{{Pod: facts.Pod{Namespace: "ledger", Name: "tally-1", Containers: []facts.Container{{Name: "app", Settings: []string{"securityContext readOnlyRootFilesystem: true"}}}}}}}
	fs := []Finding{{Healthy: true, Category: catHealthy, Entity: "pod/ledger/tally-1", Statement: "tally-1 recovered after read-only file system errors"}}
	ev.specExplained(fs)
	if fs[0].Category != catHealthy || fs[0].Entity != "pod/ledger/tally-1" {
		t.Errorf("healthy finding rewritten: %+v", fs[0])
	}
}

// The resolver's own account of a name that fails (a validation failure,
// an expired signature), logged by another origin than the callers, is
// found whatever its level; a caller's own line, a line about another
// name, and a line that only says the name does not exist are not.
func TestResolverAccount(t *testing.T) {
	l := func(pod, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Pod: pod, Level: "INFO", Message: msg}}
	}
	callers := []string{"tides-api-1"}
	for _, tc := range []struct {
		line LogLine
		want bool
	}{
		{l("unbound-0", "info: validation failure <api.gauge.example. A IN>: signature expired from 198.51.100.9"), true},
		{l("tides-api-1", "lookup api.gauge.example: failure in name resolution"), false},
		{l("unbound-0", "info: validation failure <other.example. A IN>: signature expired"), false},
		{l("unbound-0", "api.gauge.example: NXDOMAIN"), false},
	} {
		if _, got := resolverAccount([]LogLine{tc.line}, "api.gauge.example", callers); got != tc.want {
			t.Errorf("%q from %s: %v, want %v", tc.line.Message, tc.line.Pod, got, tc.want)
		}
	}
}

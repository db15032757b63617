package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestChangeKinds(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{"feature flag checkout.bundles enabled for 100% of users", changeConfig},
		{"argocd: synced networkpolicy default-deny to revision e18b6c4", changeConfig},
		{"node pool upgraded: kernel 6.1 -> 6.8 on 12 nodes", changeInfra},
		{"supplier feed prices_0600.csv loaded (41k rows)", changeData},
		{"hpa maxReplicas lowered from 12 to 4", changeCapacity},
		{"GET /healthz 200", ""},
		// An alarm a system raises is a symptom, not a change.
		{"alarm raised alarm=NOSPACE from=etcd-0 quota 8GiB", ""},
	}
	for _, tc := range tests {
		got := ""
		if announcesChange(tc.text) {
			got = changeKindOf(tc.text)
		}
		if got != tc.want {
			t.Errorf("%q: kind %q, want %q", tc.text, got, tc.want)
		}
	}
	cfg := facts.Commit{ChangeTypes: []string{facts.ChangeConfig}}
	code := facts.Commit{ChangeTypes: []string{facts.ChangeConfig, facts.ChangeFeature}}
	if commitKind(cfg) != changeConfig || commitKind(code) != changeCode {
		t.Errorf("commitKind: config-only %q, mixed %q", commitKind(cfg), commitKind(code))
	}
}

func TestAnnouncedChangeVotes(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 3, 3, 9, m, 0, 0, time.UTC); return &x }
	ev := NewEvidence(nil, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: at(10), Level: "INFO", Service: "flags", Message: "feature flag bundle_pricing enabled for all tenants"}},
		{LogLine: facts.LogLine{Timestamp: at(12), Level: "ERROR", Service: "cart", Message: "bundle total mismatch"}},
	}
	ch := ev.nearestChange("cart", at(12))
	if ch == nil || ch.kind != changeConfig || ch.deploy {
		t.Fatalf("nearestChange = %+v, want the announced config change", ch)
	}
	if cat, _, ok := changeVote(ch.kind); !ok || cat != catConfig {
		t.Errorf("vote %v, want configuration_error", cat)
	}
	// A change after the onset is not a cause.
	if ch := ev.nearestChange("cart", at(5)); ch != nil {
		t.Errorf("a change after the onset was taken: %+v", ch)
	}
}

// A commit that changes only the build environment (a container build
// file, with the toolchain's version files) is configuration; a library
// bump, or a build file changed with code, is code.
func TestCommitKindBuildEnvironment(t *testing.T) {
	file := func(path, typ string) facts.CommitFile { return facts.CommitFile{Path: path, ChangeType: typ} }
	tests := []struct {
		name  string
		types []string
		files []facts.CommitFile
		want  string
	}{
		{"base image bump", []string{facts.ChangeDependencyBump}, []facts.CommitFile{file("Dockerfile", facts.ChangeDependencyBump)}, changeConfig},
		{"toolchain bump with its module file", []string{facts.ChangeDependencyBump}, []facts.CommitFile{file("build/Dockerfile", facts.ChangeDependencyBump), file("go.mod", facts.ChangeDependencyBump)}, changeConfig},
		{"named container file", []string{facts.ChangeConfig, facts.ChangeDependencyBump}, []facts.CommitFile{file("images/api.Dockerfile", ""), file(".tool-versions", "")}, changeConfig},
		{"a library bump", []string{facts.ChangeDependencyBump}, []facts.CommitFile{file("go.mod", facts.ChangeDependencyBump), file("go.sum", facts.ChangeDependencyBump)}, changeCode},
		{"a Python library bump", []string{facts.ChangeDependencyBump}, []facts.CommitFile{file("requirements.txt", facts.ChangeDependencyBump)}, changeCode},
		{"build file and code", []string{facts.ChangeDependencyBump, facts.ChangeFeature}, []facts.CommitFile{file("Dockerfile", facts.ChangeDependencyBump), file("src/main.go", facts.ChangeFeature)}, changeCode},
		{"build file as a refactor", []string{facts.ChangeRefactor}, []facts.CommitFile{file("Dockerfile", facts.ChangeRefactor)}, changeCode},
		// A timeout or retry is a setting in a settings file and code in
		// a program's source.
		{"a retry count in a values file", []string{facts.ChangeTimeoutRetry}, []facts.CommitFile{file("deploy/values-prod.yaml", facts.ChangeTimeoutRetry)}, changeConfig},
		{"a retry helper wrapped around a call", []string{facts.ChangeTimeoutRetry}, []facts.CommitFile{file("payments/charge.py", facts.ChangeTimeoutRetry)}, changeCode},
		{"a timeout constant in Go source", []string{facts.ChangeTimeoutRetry}, []facts.CommitFile{file("internal/client/http.go", "")}, changeCode},
		// A chart bumped is its manifests changed; with code, code.
		{"a Helm chart bump", []string{facts.ChangeDependencyBump, facts.ChangeConfig}, []facts.CommitFile{file("deploy/Chart.yaml", facts.ChangeDependencyBump), file("deploy/values.yaml", facts.ChangeConfig)}, changeConfig},
		{"a chart template rewritten", []string{facts.ChangeRefactor}, []facts.CommitFile{file("charts/web/templates/ingress.yaml", facts.ChangeRefactor)}, changeConfig},
		{"an image tag bumped in a values file", []string{facts.ChangeDependencyBump}, []facts.CommitFile{file("clusters/prod/pgbouncer/values.yaml", facts.ChangeDependencyBump)}, changeCode},
		{"a chart bump with code", []string{facts.ChangeDependencyBump, facts.ChangeFeature}, []facts.CommitFile{file("deploy/Chart.yaml", facts.ChangeDependencyBump), file("src/qr.ts", facts.ChangeFeature)}, changeCode},
	}
	for _, tc := range tests {
		if got := commitKind(facts.Commit{ChangeTypes: tc.types, Files: tc.files}); got != tc.want {
			t.Errorf("%s: kind %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Another service's release is related to the alerted workload when the
// workload calls it (its environment names the service's host), not only
// when the symptoms name it; a release of settings only then makes the
// commit the culprit. A service it does not call stays unrelated.
func TestCalledServiceReleaseIsRelated(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2027, 4, 6, 13, m, 0, 0, time.UTC); return &x }
	for _, tc := range []struct {
		name          string
		calls         []string
		wantUnrelated bool
		wantEntity    string
	}{
		{"called by its environment", []string{"conn-pooler"}, false, "commit/ab12cd3"},
		{"not called", []string{"ledger-cache"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Deployments = []Deployment{{Deployment: facts.Deployment{Namespace: "pay", Name: "refund-api", Calls: tc.calls}}}
			ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "conn-pooler", Namespace: "pay", Revision: "ab12cd3", PreviousRevision: "0f0f0f0", StartedAt: at(1), FinishedAt: at(2)}}}
			ev.Commits = []Commit{{Commit: facts.Commit{SHA: "ab12cd3ef4567890", Service: "pay-infra", Timestamp: at(0), Message: "pooler: lower the pool size", ChangeTypes: []string{"config"}}}}
			ch := ev.nearestChange("refund-api", at(5), "ERROR: statement s12 does not exist")
			if ch == nil {
				t.Fatal("no change found")
			}
			if ch.unrelated != tc.wantUnrelated || ch.entity != tc.wantEntity {
				t.Errorf("unrelated=%v entity=%q, want %v %q (%s)", ch.unrelated, ch.entity, tc.wantUnrelated, tc.wantEntity, ch.text)
			}
			if ch.kind != changeConfig {
				t.Errorf("kind %q, want config (the release shipped a settings-only commit)", ch.kind)
			}
		})
	}
}

// The failing service's earlier changes, past the change look-back and
// before the onset, newest first and at most two; another service's, one
// inside the look-back (the nearest-change rows read those) and one after
// the onset are not.
func TestEarlierCommits(t *testing.T) {
	onset := time.Date(2027, 12, 2, 0, 0, 0, 0, time.UTC)
	ago := func(h int) *time.Time { x := onset.Add(-time.Duration(h) * time.Hour); return &x }
	ev := NewEvidence(nil, nil)
	ev.Commits = []Commit{
		{Commit: facts.Commit{SHA: "a1", Service: "indexer", Timestamp: ago(24 * 6), Message: "daily indices per tenant"}},
		{Commit: facts.Commit{SHA: "a2", Service: "indexer", Timestamp: ago(24 * 20), Message: "older"}},
		{Commit: facts.Commit{SHA: "a3", Service: "indexer", Timestamp: ago(24 * 2), Message: "newest earlier"}},
		{Commit: facts.Commit{SHA: "b1", Service: "billing", Timestamp: ago(30), Message: "other service"}},
		{Commit: facts.Commit{SHA: "a4", Service: "indexer", Timestamp: ago(1), Message: "inside the look-back"}},
		{Commit: facts.Commit{SHA: "a5", Service: "indexer", Timestamp: ago(-1), Message: "after the onset"}},
	}
	got := ev.earlierCommits("indexer", &onset)
	var shas []string
	for _, c := range got {
		shas = append(shas, c.SHA)
	}
	if strings.Join(shas, ",") != "a3,a1" {
		t.Fatalf("earlierCommits = %v, want [a3 a1]", shas)
	}
}

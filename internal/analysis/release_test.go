package analysis

import (
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// What a release shipped: the commit its revision names, or, for a
// revision that is a version number, the service's commits since its
// previous deploy, not those another deploy names, not another service's.
func TestReleaseCommits(t *testing.T) {
	day := time.Date(2026, 9, 14, 0, 0, 0, 0, time.UTC)
	h := func(hours float64) *time.Time { x := day.Add(time.Duration(hours * float64(time.Hour))); return &x }
	commit := func(sha, svc string, at *time.Time) Commit {
		return Commit{Commit: facts.Commit{SHA: sha, Service: svc, Timestamp: at, Message: "change " + sha}}
	}
	deploy := func(svc, rev string, at *time.Time) Deploy {
		return Deploy{Deploy: facts.Deploy{Service: svc, Revision: rev, StartedAt: at, FinishedAt: at}}
	}
	commits := []Commit{
		commit("aa11111", "label-service", h(-30)), // shipped by 3.3.7
		commit("bb22222", "label-service", h(7)),   // after 3.3.7, before 3.4.0
		commit("cc33333", "label-service", h(9)),
		commit("dd44444", "map-service", h(8)),      // another service
		commit("ee55555", "label-service", h(10.5)), // after 3.4.0
		commit("ff66666", "label-service", h(8.5)),  // named by a deploy of its own in one case
	}
	tests := []struct {
		name    string
		deploys []Deploy
		of      int
		want    []string
	}{
		{"a version number ships the commits since the previous deploy", []Deploy{deploy("label-service", "3.3.7", h(-20)), deploy("label-service", "3.4.0", h(10))}, 1, []string{"bb22222", "cc33333", "ff66666"}},
		{"not a commit another deploy names", []Deploy{deploy("label-service", "3.3.7", h(-20)), deploy("label-service", "ff66666", h(8.6)), deploy("label-service", "3.4.0", h(10))}, 2, []string{"cc33333"}},
		{"a revision that names a commit ships it", []Deploy{deploy("label-service", "ff66666", h(8.6))}, 0, []string{"ff66666"}},
		{"no earlier deploy: the commits of the last two weeks", []Deploy{deploy("label-service", "3.4.0", h(10))}, 0, []string{"aa11111", "bb22222", "cc33333", "ff66666"}},
		{"a rollback ships nothing new", []Deploy{{Deploy: facts.Deploy{Service: "label-service", Revision: "3.3.7", IsRollback: true, StartedAt: h(11)}}}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "LabelLookupsFailing"}, nil)
			ev.Commits = commits
			ev.Deploys = tc.deploys
			var got []string
			for _, c := range ev.releaseCommits(tc.deploys[tc.of].Deploy) {
				got = append(got, c.SHA)
			}
			if len(tc.want) == 0 && len(got) == 0 {
				return
			}
			if !equalStrings(got, tc.want) {
				t.Errorf("releaseCommits = %v, want %v", got, tc.want)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Commit ids in a record's words: hex tokens with letters and digits, not
// a word, a number, a UUID's group or a pod's hash.
func TestCommitIDs(t *testing.T) {
	got := commitIDs("upgraded release ingress (cluster-addons 1f6d3b8) for request 3f2b9c1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d on pod api-7f9c6d5b84-x2kq; deadbeef 12345678")
	if !equalStrings(got, []string{"1f6d3b8"}) {
		t.Errorf("commitIDs = %v, want [1f6d3b8]", got)
	}
}

package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A Deployment cut to a fixed count while its autoscaler sets a larger
// one: the manifest's replicas count fights the autoscaler, the commit
// that wrote it is the culprit. A cut no autoscaler answers, a rollout's
// step-down, or an autoscaler that wants no more, and nothing is claimed.
func TestScaleReset(t *testing.T) {
	ts := func(h, m int) *time.Time { x := time.Date(2026, 3, 11, h, m, 0, 0, time.UTC); return &x }
	ev := func(kind, name, reason, msg string, at *time.Time) Event {
		return Event{Event: facts.Event{Namespace: "harbour", Type: "Normal", Reason: reason, Message: msg, InvolvedKind: kind, InvolvedName: name, FirstSeen: at, LastSeen: at}}
	}
	cut := ev("Deployment", "berth-planner", "ScalingReplicaSet", "Scaled down replica set berth-planner-5c8d7b9f42 from 16 to 3", ts(10, 12))
	step := ev("Deployment", "berth-planner", "ScalingReplicaSet", "Scaled down replica set berth-planner-5c8d7b9f42 from 16 to 12", ts(10, 12))
	rescale := ev("HorizontalPodAutoscaler", "berth-planner", "SuccessfulRescale", "New size: 17; reason: cpu resource utilization above target", ts(10, 14))
	rescaleSmall := ev("HorizontalPodAutoscaler", "berth-planner", "SuccessfulRescale", "New size: 3; reason: All metrics below target", ts(10, 14))
	commit := Commit{Commit: facts.Commit{SHA: "b91c4e07d2", Service: "berth-planner", Message: "crane schedule view; tidy manifest", Timestamp: ts(10, 5),
		Files: []facts.CommitFile{{Path: "k8s/berth-planner/deployment.yaml"}}, Summary: "re-adds replicas: 3 to the Deployment spec"}}
	for _, tc := range []struct {
		name    string
		events  []Event
		commits []Commit
		want    string // entity, "" for none
	}{
		{"cut, autoscaler wants more, commit sets replicas", []Event{cut, rescale}, []Commit{commit}, "commit/b91c4e0"},
		{"cut, autoscaler wants more, no commit", []Event{cut, rescale}, nil, "deployment/harbour/berth-planner"},
		{"no autoscaler answers", []Event{cut}, []Commit{commit}, ""},
		{"a step down, not a cut", []Event{step, rescale}, []Commit{commit}, ""},
		{"the autoscaler wants no more", []Event{cut, rescaleSmall}, []Commit{commit}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEvidence(nil, nil)
			e.Events = tc.events
			e.Commits = tc.commits
			got := detectScaleReset(e)
			ent := ""
			if len(got) == 1 {
				ent = got[0].Entity
				if got[0].Category != catConfig || !strings.Contains(got[0].Statement, "from 16 to 3") {
					t.Errorf("finding %s: %s", got[0].Category, got[0].Statement)
				}
			}
			if ent != tc.want {
				t.Fatalf("entity %q, want %q", ent, tc.want)
			}
		})
	}
}

package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestAbnormalCondition(t *testing.T) {
	tests := []struct {
		typ, status string
		want        bool
	}{
		{"Available", "True", false},
		{"Available", "False", true},
		{"Progressing", "False", true},
		{"ReplicaFailure", "True", true},
		{"ReplicaFailure", "False", false},
		{"DiskPressure", "True", true},
		{"Ready", "Unknown", false},
		{"SomeVendorThing", "False", false}, // unknown polarity: not judged
	}
	for _, tc := range []struct {
		reason string
		want   bool
	}{{"TooManyReplicas", true}, {"TooFewReplicas", false}, {"DesiredWithinRange", false}} {
		if got := abnormalCondition(facts.Condition{Type: "ScalingLimited", Status: "True", Reason: tc.reason}); got != tc.want {
			t.Errorf("ScalingLimited=True (%s): abnormal %v, want %v", tc.reason, got, tc.want)
		}
	}
	for _, tc := range tests {
		if got := abnormalCondition(facts.Condition{Type: tc.typ, Status: tc.status}); got != tc.want {
			t.Errorf("%s=%s: abnormal %v, want %v", tc.typ, tc.status, got, tc.want)
		}
	}
}

// Pods of the old revision Running and Ready do not make a workload whose
// rollout cannot create pods healthy: the failed condition and the
// controller's recurring FailedCreate veto the healthy reading.
func TestActiveAbnormalVetoesHealthy(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC); return &x }
	build := func(failing bool) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "RolloutStuck", Namespace: "shop", Service: "basket",
			Labels: map[string]string{"namespace": "shop", "deployment": "basket"}}, nil)
		ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "shop", Name: "basket-6d9-abcde", Phase: "Running", Ready: true,
			Containers: []facts.Container{{Name: "basket", Ready: true, State: "running"}}}}}
		d := facts.Deployment{Namespace: "shop", Name: "basket", Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []facts.Condition{{Type: "Available", Status: "True"}}}
		if failing {
			d.Conditions = append(d.Conditions, facts.Condition{Type: "ReplicaFailure", Status: "True", Reason: "FailedCreate", Message: "quota exceeded"})
			ev.Events = []Event{{Event: facts.Event{Namespace: "shop", Type: "Warning", Reason: "FailedCreate", InvolvedKind: "ReplicaSet",
				InvolvedName: "basket-7f8", Message: "Error creating: quota exceeded", Count: 12, FirstSeen: at(10), LastSeen: at(40)}}}
		}
		ev.Deployments = []Deployment{{Deployment: d}}
		ev.Now = *at(41)
		return ev
	}
	if got := build(false).activeAbnormal(); len(got) != 0 {
		t.Fatalf("a healthy rollout has active abnormalities: %+v", got)
	}
	got := build(true).activeAbnormal()
	if len(got) != 2 {
		t.Fatalf("active abnormalities = %+v, want the condition and the recurring event", got)
	}
	healthy := healthyFinding(ModeHealthy, "deployment/shop/basket", 0.8)
	if res := rank(build(false), []Finding{healthy}); res.HealthVetoed {
		t.Error("a healthy rollout's healthy reading was vetoed")
	}
	if res := rank(build(true), []Finding{healthy}); !res.HealthVetoed {
		t.Error("the healthy reading of a failing rollout was not vetoed")
	}
}

// A change whose identifiers recur in the symptoms is chosen over a nearer
// one that no symptom names.
func TestNearestChangePrefersTheSpecificChange(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC); return &x }
	ev := NewEvidence(&investigationv1.Alert{Namespace: "shop"}, nil)
	ev.ObjectChanges = []ObjectChange{{ObjectChange: facts.ObjectChange{Kind: "ClusterPolicy", Name: "require-signed-images", Action: "created", At: at(5)}}}
	ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "basket", Revision: "2.4.0", PreviousRevision: "2.3.9", FinishedAt: at(20)}}}
	symptoms := []string{`FailedCreate: admission webhook "require-signed-images.policy.example" denied the request`}
	ch := ev.nearestChange("basket", at(25), symptoms...)
	if ch == nil || ch.entity != "clusterpolicy/require-signed-images" {
		t.Fatalf("change = %+v, want the ClusterPolicy the symptoms name", ch)
	}
	if ch := ev.nearestChange("basket", at(25)); ch == nil || ch.entity != "" {
		t.Errorf("without symptoms the nearest change (the deploy) must win, got %+v", ch)
	}
}

// Another service's deploy is related only when the symptoms name it (a
// call edge): then it is a candidate release; otherwise it is context and
// casts no code vote.
func TestAnotherServiceDeployNeedsACallEdge(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC); return &x }
	ev := NewEvidence(&investigationv1.Alert{Namespace: "shop", Service: "home-rows"}, nil)
	ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "title-catalog", Revision: "8.4.0", PreviousRevision: "8.3.2", FinishedAt: at(10)}}}
	named := []string{"GetRow from title-catalog failed: message larger than max"}
	if ch := ev.nearestChange("home-rows", at(20), named...); ch == nil || ch.unrelated || !ch.deploy {
		t.Fatalf("a deploy of the dependency the errors name: %+v, want a related release", ch)
	}
	if ch := ev.nearestChange("home-rows", at(20), "upstream timed out"); ch == nil || !ch.unrelated {
		t.Fatalf("a deploy of a service no symptom names: %+v, want it marked unrelated", ch)
	}
}

// The ledger's rows the leading explanation does not rest on are ruled out
// with their concrete reason.
func TestChangesRuledOut(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC); return &x }
	alert := &investigationv1.Alert{Namespace: "shop", Service: "basket", Labels: map[string]string{"namespace": "shop", "deployment": "basket"},
		StartsAt: timestamppb.New(*at(20))}
	ev := NewEvidence(alert, nil)
	ev.Deploys = []Deploy{
		{Deploy: facts.Deploy{Service: "banner", Revision: "b7", FinishedAt: at(5)}},
		{Deploy: facts.Deploy{Service: "basket", Revision: "r9", FinishedAt: at(40)}},
		{Deploy: facts.Deploy{Service: "basket", Revision: "r8", FinishedAt: at(2)}},
	}
	lead := Finding{Mode: "x", Entity: "deployment/shop/basket", Statement: "release r8 of basket broke checkout", Score: 0.8}
	got := map[string]string{}
	for _, ro := range ev.ruleOut([]Finding{lead}, []Finding{lead}) {
		got[ro.GetAlternative()] = ro.GetReason()
	}
	want := map[string]string{"b7": "belongs to banner", "r9": "after the alert fired"}
	for rev, reason := range want {
		found := false
		for alt, why := range got {
			if strings.Contains(alt, rev) {
				found = true
				if !strings.Contains(why, reason) {
					t.Errorf("%s ruled out because %q, want %q", alt, why, reason)
				}
			}
		}
		if !found {
			t.Errorf("deploy %s not ruled out: %v", rev, got)
		}
	}
	for alt := range got {
		if strings.Contains(alt, "r8") {
			t.Errorf("the release the lead rests on was ruled out: %s", alt)
		}
	}
}

// An object whose own condition is abnormal is a candidate, and its
// category is configuration (its spec blocks the operation).
func TestObjectConditionCandidate(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "NodeDrainStuck", Labels: map[string]string{"node": "worker-4"}}, nil)
	ev.Resources = []Resource{{Resource: facts.Resource{Kind: "PodDisruptionBudget", Namespace: "rides", Name: "matcher-pdb",
		Conditions: []facts.Condition{{Type: "DisruptionAllowed", Status: "False", Reason: "InsufficientPods"}}}}}
	f, ok := ev.anomalySummary(nil)
	if !ok || f.Entity != "poddisruptionbudget/rides/matcher-pdb" || f.Category != catConfig {
		t.Fatalf("finding %q %v (ok %v), want the budget as a configuration error", f.Entity, f.Category, ok)
	}
}

// A crash loop whose logs say nothing takes its category from the
// container's termination message, through the effect rows.
func TestCrashLoopReadsTheTerminationMessage(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want investigationv1.RootCauseCategory
	}{
		{"OSError: [Errno 28] No space left on device: '/scratch/tmp'", catResource},
		{"java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached", catResource},
		{"fatal: environment variable DATABASE_URL is not set", catConfig},
	} {
		p := Pod{Pod: facts.Pod{Namespace: "lab", Name: "worker-7d5c9b8f6-4lk2x", Phase: "Running", Restarts: 7,
			Containers: []facts.Container{{Name: "worker", State: "waiting", Reason: "CrashLoopBackOff", LastReason: "Error", LastMessage: tc.msg}}}}
		c, ok := terminationCause([]Pod{p})
		if !ok || c.category != tc.want {
			t.Errorf("%q: category %v (ok %v), want %v", tc.msg, c.category, ok, tc.want)
		}
	}
}

// Several unrelated dependencies failing only from pods on one node: the
// node's network is the common cause; failures from two nodes are not.
func TestCommonCallerNode(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC); return &x }
	build := func(secondNode bool) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{Namespace: "ship"}, nil)
		ev.Pods = []Pod{
			{Pod: facts.Pod{Namespace: "ship", Name: "planner-a", Node: "wk-4", Phase: "Running", Ready: true}},
			{Pod: facts.Pod{Namespace: "ship", Name: "planner-b", Node: "wk-2", Phase: "Running", Ready: true}},
		}
		from := func(pod string) string { return pod }
		second := "planner-a"
		if secondNode {
			second = "planner-b"
		}
		for i := 0; i < 3; i++ {
			ev.Logs = append(ev.Logs,
				LogLine{LogLine: facts.LogLine{Timestamp: at(i), Level: "ERROR", Pod: from("planner-a"), Service: "planner", Message: "db: dial tcp 10.96.44.12:5432: connect: no route to host"}},
				LogLine{LogLine: facts.LogLine{Timestamp: at(i), Level: "ERROR", Pod: from(second), Service: "planner", Message: "routing: dial tcp 10.96.120.9:80: connect: no route to host"}})
		}
		return ev
	}
	fs := detectDependencyFailure(build(false))
	if len(fs) == 0 || fs[0].Mode != ModeNodeNetwork || fs[0].Entity != "node/wk-4" || fs[0].Category != catInfra {
		t.Fatalf("one node: %+v, want the node's network first", fs)
	}
	for _, f := range detectDependencyFailure(build(true)) {
		if f.Mode == ModeNodeNetwork {
			t.Fatalf("failures from two nodes were pinned on one: %+v", f)
		}
	}
}

// A Job's failed attempt is superseded by a later pod of the same Job that
// succeeded; without the success it still counts.
func TestJobRetrySupersedesTheFailedAttempt(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 5, 4, 4, m, 0, 0, time.UTC); return &x }
	failed := Pod{Pod: facts.Pod{Namespace: "tides", Name: "publish-1-aaaaa", OwnerKind: "Job", OwnerName: "publish-1", Phase: "Failed", StartTime: at(0)}}
	ok := Pod{Pod: facts.Pod{Namespace: "tides", Name: "publish-1-bbbbb", OwnerKind: "Job", OwnerName: "publish-1", Phase: "Succeeded", StartTime: at(3)}}
	ev := NewEvidence(nil, nil)
	ev.Pods = []Pod{failed, ok}
	if cur, sup := ev.superseded(failed); !sup || cur != ok.Name {
		t.Errorf("superseded = %q %v, want the succeeded retry", cur, sup)
	}
	ev.Pods = []Pod{failed}
	if _, sup := ev.superseded(failed); sup {
		t.Error("a failed Job pod with no successful retry was set aside")
	}
}

// A commit the symptoms name by an identifier that is not the failing
// workload's name is a candidate even when a release of another service
// is nearer, and even past the look-back of plain nearness (a topic's
// retention changed hours before its consumer first reads past it); the
// failing workload's own name ties nothing, and a commit no symptom names
// stays out.
func TestNearestChangeSpecificCommit(t *testing.T) {
	onset := time.Date(2026, 6, 18, 6, 9, 0, 0, time.UTC)
	before := func(d time.Duration) *time.Time { x := onset.Add(-d); return &x }
	symptoms := []string{"Fetch position offset=88 is out of range for partition meter-events-4, resetting offset"}
	tests := []struct {
		name       string
		commit     facts.Commit
		wantCommit bool
	}{
		{"names the topic, 3h before", facts.Commit{SHA: "7a2c9e4aa", Service: "infra", Message: "kafka: meter-events retention to one week", Timestamp: before(3 * time.Hour), ChangeTypes: []string{facts.ChangeConfig}}, true},
		{"other vocabulary, 40 min before", facts.Commit{SHA: "b1c2d3e4f", Service: "platform", Message: "topics: shrink meter-events.retention", Timestamp: before(40 * time.Minute), ChangeTypes: []string{facts.ChangeConfig}}, true},
		{"names the failing workload only", facts.Commit{SHA: "c1c2d3e4f", Service: "infra", Message: "bump surge-model replicas", Timestamp: before(3 * time.Hour), ChangeTypes: []string{facts.ChangeConfig}}, false},
		{"names nothing", facts.Commit{SHA: "d1c2d3e4f", Service: "infra", Message: "docs: typo", Timestamp: before(40 * time.Minute)}, false},
		{"past the specific look-back", facts.Commit{SHA: "e1c2d3e4f", Service: "infra", Message: "kafka: meter-events retention to one week", Timestamp: before(30 * time.Hour), ChangeTypes: []string{facts.ChangeConfig}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{Namespace: "tides", Service: "surge-model"}, nil)
			ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "gauge-ingest", Revision: "1.22.0", PreviousRevision: "1.21.4", FinishedAt: before(26 * time.Minute)}}}
			ev.Commits = []Commit{{Commit: tc.commit}}
			got := ev.nearestChange("surge-model", &onset, append(symptoms, "surge-model-7f9 restarted")...)
			isCommit := got != nil && len(got.commits) == 1 && got.commits[0].SHA == tc.commit.SHA
			if isCommit != tc.wantCommit {
				t.Fatalf("nearest change = %+v, want the commit: %v", got, tc.wantCommit)
			}
			if tc.wantCommit && (got.unrelated || got.entity != "commit/"+short(tc.commit.SHA)) {
				t.Errorf("the specific commit must be related and its own entity: %+v", got)
			}
		})
	}
}

// A failing pod of the Deployment's current revision is the rollout's new
// pod, whatever the start times say: the ready pods of the previous
// revision do not supersede it. Without the revision, they do.
func TestCurrentRevisionPodIsNotSuperseded(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 8, 14, 6, m, 0, 0, time.UTC); return &x }
	pod := func(name, rs string, ready bool, start *time.Time) Pod {
		p := Pod{Pod: facts.Pod{Namespace: "launch", Name: name, Workload: "briefing", OwnerKind: "ReplicaSet", OwnerName: rs, Phase: "Running", Ready: ready, StartTime: start}}
		if !ready {
			p.Containers = []facts.Container{{Name: "app", State: "waiting", Reason: "CrashLoopBackOff", RestartCount: 6}}
		}
		return p
	}
	failing := pod("briefing-8cdd6556c5-q4ngl", "briefing-8cdd6556c5", false, at(0))
	build := func(revision string) *Evidence {
		ev := NewEvidence(nil, nil)
		ev.Pods = []Pod{failing, pod("briefing-fb74ba4764-a1", "briefing-fb74ba4764", true, at(5)), pod("briefing-fb74ba4764-a2", "briefing-fb74ba4764", true, at(6))}
		ev.Deployments = []Deployment{{Deployment: facts.Deployment{Namespace: "launch", Name: "briefing", Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, Revision: revision,
			RolloutHistory: []facts.Revision{{Revision: "11", Name: "briefing-fb74ba4764"}, {Revision: "12", Name: "briefing-8cdd6556c5"}}}}}
		return ev
	}
	if _, sup := build("12").superseded(failing); sup {
		t.Error("the failing pod of the current revision was read as an old pod being scaled down")
	}
	if cur, sup := build("").superseded(failing); !sup || cur != "briefing-fb74ba4764" {
		t.Errorf("without a revision: superseded = %q %v, want the ready ReplicaSet", cur, sup)
	}
}

package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A workload's replicas cut to half or less in one step, minutes before it
// saturates with flat demand, is the configuration change that explains the
// saturation; a rolling update's step, a rollout's old ReplicaSet scaled to
// zero, a cut after the onset, another namespace's cut, or demand that
// doubled leave the capacity failure as it is.
func TestCutChange(t *testing.T) {
	alertAt := time.Date(2027, 3, 4, 9, 30, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := time.Date(2027, 3, 4, 9, m, 0, 0, time.UTC); return &x }
	event := func(ns, msg string, when *time.Time) Event {
		return Event{Event: facts.Event{Namespace: ns, Type: "Normal", Reason: "ScalingReplicaSet", Message: msg,
			InvolvedKind: "Deployment", InvolvedName: "ledger-api", FirstSeen: when, LastSeen: when}}
	}
	flat := func(name string, v float64) Series {
		return Series{Series: facts.Series{Name: name, Labels: map[string]string{"service": "ledger-api", "namespace": "books"}, Baseline: v, Latest: v, Mean: v, Peak: v}}
	}
	lead := Finding{Mode: ModeCPUThrottling, Category: catResource, Score: 0.7, Entity: "deployment/books/ledger-api",
		Statement: "CPU throttling of ledger-api: the CPU limit caps the containers"}
	tests := []struct {
		name       string
		events     []Event
		series     []Series
		wantCut    bool
		wantInText string
	}{
		{"old order of the counts", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 2 from 12", at(12))}, nil, true, "from 12 to 2"},
		{"new order of the counts", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 from 9 to 3", at(12))}, nil, true, "from 9 to 3"},
		{"desired replicas series", nil, []Series{{Series: facts.Series{Name: "kube_deployment_spec_replicas", Labels: map[string]string{"deployment": "ledger-api", "namespace": "books"},
			Baseline: 10, Latest: 4, Shape: "drop", OnsetAt: at(11)}}}, true, "from 10 to 4"},
		{"a rolling update's step", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 9 from 12", at(12))}, nil, false, ""},
		{"a rollout's old ReplicaSet to zero", []Event{event("books", "Scaled up replica set ledger-api-7a8b9c0d1f to 12", at(10)), event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 0 from 12", at(12))}, nil, false, ""},
		{"scaled to zero with no rollout", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 0 from 2", at(12))}, nil, true, "from 2 to 0"},
		{"desired replicas series to zero", nil, []Series{{Series: facts.Series{Name: "kube_deployment_spec_replicas", Labels: map[string]string{"deployment": "ledger-api", "namespace": "books"},
			Baseline: 2, Latest: 0, Shape: "drop", OnsetAt: at(11)}}}, true, "from 2 to 0"},
		{"after the onset", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 2 from 12", at(25))}, nil, false, ""},
		{"another namespace", []Event{event("archive", "Scaled down replica set ledger-api-6f7d8c9b5 to 2 from 12", at(12))}, nil, false, ""},
		{"demand doubled", []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 2 from 12", at(12))},
			[]Series{{Series: facts.Series{Name: "http_requests_total", Labels: map[string]string{"service": "ledger-api", "namespace": "books"},
				Baseline: 100, Latest: 400, Mean: 250, Peak: 400, Shape: "step", OnsetAt: at(14)}}}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "LedgerLatency", Namespace: "books", Service: "ledger-api", StartsAt: timestamppb.New(alertAt)}, nil)
			ev.Events = tc.events
			ev.Series = append([]Series{flat("container_cpu_usage_seconds_total", 1)}, tc.series...)
			sc := changeScan{at: alertAt, onset: *at(18), hasOnset: true}
			f, ok := ev.cutChange(lead, sc)
			if ok != tc.wantCut {
				t.Fatalf("cutChange = %v (%s), want %v", ok, f.Statement, tc.wantCut)
			}
			if !ok {
				return
			}
			if f.Category != catConfig || f.Entity != "deployment/books/ledger-api" || f.Score <= lead.Score {
				t.Errorf("finding %s %s %.2f, want a configuration error of the workload above the lead", f.Category, f.Entity, f.Score)
			}
			if !strings.Contains(f.Statement, tc.wantInText) || !strings.Contains(f.Statement, "CPU throttling") {
				t.Errorf("statement %q must give the cut (%s) and keep the saturation it explains", f.Statement, tc.wantInText)
			}
			if _, ok := f.Explains[lead.Mode]; !ok {
				t.Errorf("the finding must explain the capacity lead (%s)", lead.Mode)
			}
		})
	}
	// A backlog that grows on a broker is its consumer's: a cut of a
	// workload in the alert's scope explains it, though the lead is the
	// broker's.
	backlog := Finding{Mode: ModeAnomaly, Category: catResource, Score: 0.6, Entity: "deployment/books/broker",
		Statement: "queue ledger.entries of broker keeps growing: messages_ready from 40 to 950000"}
	bev := NewEvidence(&investigationv1.Alert{AlertName: "LedgerBacklog", Namespace: "books", Service: "ledger-api", StartsAt: timestamppb.New(alertAt)}, nil)
	bev.Events = []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 0 from 2", at(12))}
	if f, ok := bev.cutChange(backlog, changeScan{at: alertAt, onset: *at(18), hasOnset: true}); !ok || f.Entity != "deployment/books/ledger-api" {
		t.Errorf("backlog lead: %v %q, want the consumer's cut", ok, f.Entity)
	}
	// A failing dependency (a server that times out) whose own replicas
	// were cut is explained by its cut; another workload's cut does not
	// explain it.
	dep := Finding{Mode: ModeDNSFailure, Category: catDependency, Score: 0.9, Entity: "deployment/books/ledger-api", Statement: "names cannot be resolved: the server times out"}
	dev := NewEvidence(&investigationv1.Alert{AlertName: "PrintFailures", Namespace: "books", Service: "label-api", StartsAt: timestamppb.New(alertAt)}, nil)
	dev.Events = []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 1 from 6", at(12))}
	if f, ok := dev.cutChange(dep, changeScan{at: alertAt, onset: *at(18), hasOnset: true}); !ok || f.Category != catConfig {
		t.Errorf("dependency lead: %v %s, want its own cut as the configuration cause", ok, f.Category)
	}
	other := dep
	other.Entity = "deployment/books/printer-gw"
	if f, ok := dev.cutChange(other, changeScan{at: alertAt, onset: *at(18), hasOnset: true}); ok {
		t.Errorf("another workload's cut explained a dependency: %s", f.Statement)
	}
	notCapacity := lead
	notCapacity.Category = catCode
	ev := NewEvidence(&investigationv1.Alert{AlertName: "LedgerLatency", Namespace: "books", Service: "ledger-api", StartsAt: timestamppb.New(alertAt)}, nil)
	ev.Events = []Event{event("books", "Scaled down replica set ledger-api-6f7d8c9b5 to 2 from 12", at(12))}
	if _, ok := ev.cutChange(notCapacity, changeScan{at: alertAt, onset: *at(18), hasOnset: true}); ok {
		t.Error("a code defect lead was promoted to a replica cut")
	}
}

// A cut nothing failed after (a scale-down, planned or not) votes for no
// category; the same cut before errors votes configuration.
func TestCutWithoutFailureVotesNothing(t *testing.T) {
	at := time.Date(2027, 3, 4, 21, 0, 0, 0, time.UTC)
	onset := at.Add(time.Minute)
	cut := &changeRef{text: "capacity change: replicas of scoring cut from 3 to 0", at: &at, kind: changeCapacity, cut: true, entity: "deployment/fence/scoring", service: "scoring"}
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ScoringDown", Namespace: "fence", Service: "scoring"}, nil)
	quiet := &candidate{kind: "workload", name: "scoring", entity: "deployment/fence/scoring"}
	if best, votes := ev.inferCategory(quiet, cut, &onset); best.cat != catUnknown {
		t.Errorf("a cut nothing failed after: %v (%+v), want no category", best.cat, votes)
	}
	failing := &candidate{kind: "workload", name: "scoring", entity: "deployment/fence/scoring",
		errLines: []LogLine{{LogLine: facts.LogLine{Service: "scoring", Level: "ERROR", Message: "POST /bouts 503 no healthy upstream"}}}}
	if best, votes := ev.inferCategory(failing, cut, &onset); best.cat != catConfig {
		t.Errorf("a cut before errors: %v (%+v), want configuration", best.cat, votes)
	}
}

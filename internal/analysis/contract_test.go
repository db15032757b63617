package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A consumer's error quoting a field, and a producer's commit before the
// onset naming that field (in another case convention), make the commit
// the cause; the consumer's own commit, a commit after the onset and a
// commit naming nothing of the error do not.
func TestContractChange(t *testing.T) {
	at := func(h, m int) *time.Time { x := time.Date(2026, 8, 2, h, m, 0, 0, time.UTC); return &x }
	onset := *at(10, 12)
	build := func(c facts.Commit) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "DeadLetters", Namespace: "rescue", Service: "triage", StartsAt: timestamppb.New(onset)}, nil)
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &onset, Service: "triage", Level: "ERROR", Message: "failed to handle animal.admitted: KeyError: 'ward_code'"}}}
		ev.Commits = []Commit{{Commit: c}}
		return ev
	}
	lead := Finding{Category: catCode, Entity: "deployment/rescue/triage", Score: 0.7, Statement: "triage throws runtime exceptions"}
	sc := changeScan{onset: onset, hasOnset: true}
	producer := facts.Commit{SHA: "47c77ebaa", Service: "intake", Message: "api: camelCase JSON everywhere", Summary: "events now carry wardCode", Timestamp: at(8, 40)}
	ev := build(producer)
	f, ok := ev.contractChange(lead, sc)
	if !ok || f.Entity != "commit/47c77eb" || f.Category != catCode || !strings.Contains(f.Statement, "ward_code") {
		t.Fatalf("contract change = %v %+v", ok, f)
	}
	own := producer
	own.Service = "triage"
	late := producer
	late.Timestamp = at(10, 30)
	unrelated := producer
	unrelated.Summary = "docs"
	for name, c := range map[string]facts.Commit{"the consumer's own": own, "after the onset": late, "names nothing": unrelated} {
		if f, ok := build(c).contractChange(lead, sc); ok {
			t.Errorf("%s: promoted %s", name, f.Entity)
		}
	}
	// A producer's commit of settings only (a parameter file, change type
	// config) is the cause by the same tie, and its mechanism a setting.
	settings := producer
	settings.Message, settings.Summary = "db defaults: align parameters with the baseline", "sets ward_code_max_len = 8 for every instance"
	settings.ChangeTypes = []string{facts.ChangeConfig}
	settings.Files = []facts.CommitFile{{Path: "modules/db/params.tf", ChangeType: facts.ChangeConfig}}
	if f, ok := build(settings).contractChange(lead, sc); !ok || f.Category != catConfig || f.Entity != "commit/47c77eb" {
		t.Errorf("settings-only contract change = %v %+v", ok, f)
	}
	if got := symbolKey("wardCode") == symbolKey("ward_code"); !got {
		t.Error("symbolKey does not fold case conventions")
	}
}

// An alert whose own signal is not in the evidence, on a healthy target,
// with a configuration change touching the target shortly before: the
// change is the tentative cause (configuration, the changed object); a
// change long before, or to another target, is not.
func TestUnobservedChange(t *testing.T) {
	alertAt := time.Date(2027, 2, 10, 18, 8, 0, 0, time.UTC)
	build := func(name string, at time.Time) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "BookARoom", Namespace: "bookings", Service: "room-booking", StartsAt: timestamppb.New(alertAt)}, nil)
		ev.ObjectChanges = []ObjectChange{{ObjectChange: facts.ObjectChange{Kind: "HTTPRoute", Namespace: "bookings", Name: name, At: &at, Action: "edited", Manager: "flux"}}}
		return ev
	}
	lead := Finding{Mode: ModeHealthy, Healthy: true, Category: catUnknown, Entity: "deployment/bookings/room-booking", Score: 0.38}
	ev := build("room-booking", alertAt.Add(-2*time.Minute))
	f, ok := ev.boundSetByChange([]Finding{lead})
	if !ok || f.Entity != "httproute/bookings/room-booking" || f.Category != catConfig || f.Score < minFaultScore {
		t.Fatalf("unobserved change = %v %+v", ok, f)
	}
	for name, ev := range map[string]*Evidence{"long before": build("room-booking", alertAt.Add(-3*time.Hour)), "another target": build("gift-cards", alertAt.Add(-2*time.Minute))} {
		if f, ok := ev.boundSetByChange([]Finding{lead}); ok {
			t.Errorf("%s: promoted %s", name, f.Entity)
		}
	}
	observed := lead
	observed.Category = catHealthy
	if f, ok := ev.boundSetByChange([]Finding{observed}); ok {
		t.Errorf("a healthy reading with its signal observed was overridden by %s", f.Entity)
	}
}

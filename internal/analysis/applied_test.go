package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A deployer's log line that reports what it did to an object is a row of
// the change ledger, in any of the ways deployers name an object; errors,
// plain words and unknown kinds are not.
func TestAppliedChanges(t *testing.T) {
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		msg, level string
		want       string // kind/namespace/name action, "" for none
	}{
		{"sync shop revision 8f41c2d: Ingress shop/web configured (ingressClassName a -> b)", "INFO", "Ingress/shop/web edited"},
		{"ingress.networking.k8s.io/web configured", "INFO", "Ingress/edge/web edited"},
		{"configmap/flags created", "", "ConfigMap/edge/flags created"},
		{"deployment.apps/api configured (image reg/api:v2)", "INFO", "Deployment/edge/api edited"},
		{"HorizontalPodAutoscaler shop/api updated: maxReplicas 10 -> 4", "INFO", "HorizontalPodAutoscaler/shop/api edited"},
		{"order 42 created", "INFO", ""},
		{"widget/blue configured", "INFO", ""},
		// Any kind, in the forms deployers print: "Kind/ns/name" with the
		// kind capitalised, or a resource with its API group.
		{"app mesh synced to 5f46a5d: Sidecar/visits/default created", "INFO", "Sidecar/visits/default created"},
		{"app mesh synced: PeerAuthentication/tolls/default configured", "INFO", "PeerAuthentication/tolls/default edited"},
		{"sidecar.networking.istio.io/default configured", "INFO", "sidecar/edge/default edited"},
		{"Order/42 created", "INFO", ""},
		{"Order/eu/42 created", "INFO", "Order/eu/42 created"},
		{"order/42 created", "INFO", ""},
		{"ORDER/42 created", "INFO", ""},
		{"apply failed: ingress/web configured with errors", "ERROR", ""},
	}
	for _, tc := range tests {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "X", StartsAt: timestamppb.New(at)}, nil)
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &at, Namespace: "edge", Service: "argocd", Level: tc.level, Message: tc.msg}}}
		got := ""
		for _, c := range ev.appliedChanges() {
			got = c.Kind + "/" + c.Namespace + "/" + c.Name + " " + c.Action
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// A reference without a namespace, logged by a deployer in its own
// namespace, names the object where the evidence has it: the object
// itself, else the workload it is named after; with neither (or two
// namespaces holding one) the line's namespace stands.
func TestAppliedChangeNamespace(t *testing.T) {
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		res   []Resource
		deps  []Deployment
		wantN string
	}{
		{"the object in evidence", []Resource{{Resource: facts.Resource{Kind: "DestinationRule", Namespace: "loans", Name: "pricing"}}}, nil, "loans"},
		{"the workload it is named after", nil, []Deployment{{Deployment: facts.Deployment{Namespace: "drops", Name: "pricing"}}}, "drops"},
		{"two namespaces: the line's", nil, []Deployment{{Deployment: facts.Deployment{Namespace: "a", Name: "pricing"}}, {Deployment: facts.Deployment{Namespace: "b", Name: "pricing"}}}, "argocd"},
		{"nothing known: the line's", nil, nil, "argocd"},
	}
	for _, tc := range tests {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "X", StartsAt: timestamppb.New(at)}, nil)
		ev.Resources, ev.Deployments = tc.res, tc.deps
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &at, Namespace: "argocd", Service: "argocd", Level: "INFO", Message: "app mesh synced to 4a1b2c3: DestinationRule/pricing configured"}}}
		cs := ev.appliedChanges()
		if len(cs) != 1 || cs[0].Namespace != tc.wantN || cs[0].Kind != "DestinationRule" {
			t.Errorf("%s: %+v, want DestinationRule in %s", tc.name, cs, tc.wantN)
		}
	}
}

// An applied change joins the object edits and is the nearest change
// before an onset; the commit it applied (sharing its identifiers) is
// quoted with it, so the commit is not ruled out.
func TestAppliedChangeIsTheNearestChange(t *testing.T) {
	onset := time.Date(2026, 5, 4, 10, 12, 0, 0, time.UTC)
	sync := onset.Add(-time.Minute)
	merged := onset.Add(-50 * time.Minute)
	ev := NewEvidence(&investigationv1.Alert{AlertName: "UploadsLow", Namespace: "shop", Service: "photos", StartsAt: timestamppb.New(onset)}, nil)
	ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &sync, Namespace: "argocd", Service: "argocd-application-controller", Level: "INFO", Message: "sync photos revision 8f41c2d: Ingress shop/photos configured (ingressClassName traefik -> nginx)"}}}
	ev.Commits = []Commit{
		{Commit: facts.Commit{SHA: "27b9445cf72d", Service: "photos", Message: "ingress: move photos to nginx", Summary: "sets ingressClassName nginx; no body-size annotation", Timestamp: &merged}},
		{Commit: facts.Commit{SHA: "99aa001bb2cc", Service: "billing", Message: "bump client", Timestamp: &merged}},
	}
	for _, a := range ev.appliedChanges() {
		ev.ObjectChanges = append(ev.ObjectChanges, a)
	}
	c := ev.nearestChange("photos", &onset)
	if c == nil || c.entity != "ingress/shop/photos" || c.kind != changeConfig {
		t.Fatalf("nearest change = %+v, want the Ingress edit (config)", c)
	}
	if len(c.commits) != 1 || !strings.HasPrefix(c.commits[0].SHA, "27b9445") {
		t.Errorf("commits = %+v, want the merge it applied", c.commits)
	}
}

// A managed database's event that records a parameter group's
// modification is a configuration row of the ledger, the group its entity;
// an event that changes nothing is not a row.
func TestDBEventChanges(t *testing.T) {
	at := time.Date(2028, 2, 13, 4, 5, 0, 0, time.UTC)
	ev := NewEvidence(&investigationv1.Alert{AlertName: "X"}, nil)
	ev.DBEvents = []DBEvent{
		{DBEvent: facts.DBEvent{Time: &at, SourceID: "club-prod", Message: "Finished applying modification to DB parameter group club-pg15 (pending-reboot): max_connections"}},
		{DBEvent: facts.DBEvent{Time: &at, SourceID: "club-prod", Message: "Backing up DB instance"}},
	}
	rs := ev.dbEventChanges()
	if len(rs) != 1 || rs[0].kind != changeConfig || rs[0].entity != "dbparametergroup/club-pg15" {
		t.Fatalf("rows = %+v, want one configuration change of the parameter group", rs)
	}
}

// A refusal at a limit (too many clients) is at a bound its own words
// name: a configuration change naming that limit before the onset set it.
func TestRefusalIsAtABound(t *testing.T) {
	alertAt := time.Date(2028, 2, 13, 4, 19, 0, 0, time.UTC)
	changed := alertAt.Add(-14 * time.Minute)
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ClubDBConnections", StartsAt: timestamppb.New(alertAt)}, nil)
	lead := Finding{Mode: "connection_exhaustion", Category: catResource, Entity: "db/club-prod", Score: 0.8, Statement: "Connection exhaustion on club-prod: clients are refused: sorry, too many clients already (max_connections=120)"}
	change := changeRef{text: "config change recorded by the database club-prod at 04:05: parameter group club-pg15 modified: max_connections", at: &changed, kind: changeConfig, entity: "dbparametergroup/club-pg15"}
	sc := changeScan{at: alertAt, refs: []changeRef{change}, onset: alertAt.Add(-10 * time.Minute), hasOnset: true}
	f, ok := ev.limitChange(lead, sc)
	if !ok || f.Entity != "dbparametergroup/club-pg15" || f.Category != catConfig {
		t.Fatalf("limit change = %v %+v, want the parameter group's configuration change", ok, f)
	}
	lead.Statement = "club-prod is slow"
	if f, ok := ev.limitChange(lead, sc); ok {
		t.Errorf("a failure that names no limit was tied to %s", f.Entity)
	}
}

// With no release in the ledger, the service's nearest commit is the
// change; a commit of settings only is the culprit itself (its entity), a
// commit of code stays the service's change.
func TestSettingsCommitIsTheCulprit(t *testing.T) {
	onset := time.Date(2026, 5, 4, 10, 40, 0, 0, time.UTC)
	merged := onset.Add(-33 * time.Minute)
	for _, tc := range []struct {
		types []string
		want  string
	}{
		{[]string{"config"}, "commit/b96ba4c"},
		{[]string{"feature"}, ""},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "PricingErrors", Namespace: "loans", Service: "pricing", StartsAt: timestamppb.New(onset)}, nil)
		ev.Commits = []Commit{{Commit: facts.Commit{SHA: "b96ba4c4bd48", Service: "pricing", Message: "mesh: eject failing pods fast", ChangeTypes: tc.types, Timestamp: &merged}}}
		c := ev.nearestChange("pricing", &onset)
		if c == nil || c.entity != tc.want {
			t.Errorf("%v: change %+v, want entity %q", tc.types, c, tc.want)
		}
	}
}

// A rollout that shipped the images it already ran (or a deploy of the
// revision it already ran) changed settings only: the ledger reads it as
// configuration, and the object change it applied just before is the
// nearest change, not the rollout; a rollout of new images stays a release.
func TestSettingsOnlyRollout(t *testing.T) {
	onset := time.Date(2026, 9, 14, 7, 13, 30, 0, time.UTC)
	sync := onset.Add(-40 * time.Second)
	rolled := onset.Add(-30 * time.Second)
	earlier := onset.Add(-48 * time.Hour)
	for _, tc := range []struct {
		name       string
		newImage   string
		deploy     *facts.Deploy
		wantEntity string
		wantKind   string
	}{
		{"same images: the ConfigMap", "reg/ingest:4.12.0", nil, "configmap/hives/ingest-grpc", changeConfig},
		{"new images: the release", "reg/ingest:4.13.0", nil, "", changeCode},
		{"deploy of the same revision: the ConfigMap", "", &facts.Deploy{Service: "ingest", Revision: "4.12.0", PreviousRevision: "4.12.0", FinishedAt: &rolled}, "configmap/hives/ingest-grpc", changeConfig},
		{"deploy of a new revision: the release", "", &facts.Deploy{Service: "ingest", Revision: "4.13.0", PreviousRevision: "4.12.0", FinishedAt: &rolled}, "", changeCode},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "IngestErrors", Namespace: "hives", Service: "ingest", StartsAt: timestamppb.New(onset)}, nil)
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &sync, Namespace: "argocd", Service: "argocd", Level: "INFO", Message: "Sync operation to 2f7e19c succeeded: ConfigMap hives/ingest-grpc configured"}}}
		if tc.newImage != "" {
			ev.Deployments = []Deployment{{Deployment: facts.Deployment{Namespace: "hives", Name: "ingest", RolloutHistory: []facts.Revision{
				{Revision: "37", Name: "ingest-a", Images: []string{"reg/ingest:4.12.0"}, CreatedAt: &earlier},
				{Revision: "38", Name: "ingest-b", Images: []string{tc.newImage}, CreatedAt: &rolled},
			}}}}
		}
		if tc.deploy != nil {
			ev.Deploys = []Deploy{{Deploy: *tc.deploy}}
		}
		for _, a := range ev.appliedChanges() {
			ev.ObjectChanges = append(ev.ObjectChanges, a)
		}
		c := ev.nearestChange("ingest", &onset)
		if c == nil || c.entity != tc.wantEntity || c.kind != tc.wantKind {
			t.Errorf("%s: nearest change = %+v, want entity %q kind %s", tc.name, c, tc.wantEntity, tc.wantKind)
		}
	}
}

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

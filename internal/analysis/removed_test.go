package analysis

import (
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// What the alert watches, removed shortly before it fired, is the cause:
// the remover's configuration. The verb stands next to the name (a DNS
// controller's "DELETE host A", a pipeline's "host deregistered"); not a
// removal of something else the same sentence mentions, not one put back
// before the alert, not one after it, not one too long before.
func TestDetectRemovedTarget(t *testing.T) {
	fired := time.Date(2026, 5, 5, 9, 4, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := fired.Add(time.Duration(m) * time.Minute); return &x }
	line := func(svc string, m int, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at(m), Service: svc, Namespace: "edge", Level: "INFO", Message: msg}}
	}
	alert := func(labels map[string]string, ann map[string]string) *investigationv1.Alert {
		return &investigationv1.Alert{AlertName: "homepage check", StartsAt: timestamppb.New(fired), Labels: labels, Annotations: ann}
	}
	byHost := alert(map[string]string{"hostname": "www.kites.example"}, nil)
	byURL := alert(nil, map[string]string{"probe_target": "https://api.kites.example/health"})
	tests := []struct {
		name  string
		alert *investigationv1.Alert
		logs  []LogLine
		want  string
	}{
		{"a DNS controller deleted the record", byHost, []LogLine{
			line("dns-sync", -6, "Desired change: DELETE www.kites.example A [zone Z1]"),
			line("dns-sync", -5, "Desired change: CREATE www.kites.example A ... skipped: owned by another id; no changes"),
		}, "deployment/edge/dns-sync"},
		{"a pipeline deregistered the target (URL form, name first)", byURL, []LogLine{
			line("lb-pipeline", -20, "target api.kites.example deregistered from pool blue"),
		}, "deployment/edge/lb-pipeline"},
		{"put back before the alert", byHost, []LogLine{
			line("dns-sync", -30, "DELETE www.kites.example A"),
			line("dns-sync", -25, "record www.kites.example A created"),
		}, ""},
		{"another name removed in the same sentence", byHost, []LogLine{
			line("cert-sync", -10, "Certificate legacy deleted, its Secret for www.kites.example kept"),
		}, ""},
		{"the environment it served was torn down on purpose", alert(map[string]string{"hostname": "pr-88.preview.kites.example"}, nil), []LogLine{
			line("appset-controller", -8, "deleted application preview-pr-88 (pull request closed); namespace preview-pr-88 pruned"),
			line("dns-sync", -6, "delete record pr-88.preview.kites.example A"),
		}, ""},
		{"removed after the alert", byHost, []LogLine{
			line("dns-sync", 3, "DELETE www.kites.example A"),
		}, ""},
		{"removed three hours before", byHost, []LogLine{
			line("dns-sync", -180, "DELETE www.kites.example A"),
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(tc.alert, nil)
			ev.Logs = tc.logs
			fs := detectRemovedTarget(ev)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %q (%s), want none", fs[0].Entity, fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Entity != tc.want || fs[0].Category != catConfig {
				t.Fatalf("findings %+v, want a configuration error of %s", fs, tc.want)
			}
		})
	}
}

// A removal's lead asks what retired the target, by the distinctive parts
// of its first label.
func TestRemovedFollowUps(t *testing.T) {
	fus, _ := removedFollowUps(nil, Finding{Mode: ModeRemovedTarget, Signals: []string{"removed", "pr-88.preview.kites.example"}})
	if len(fus) != 1 || fus[0].Params["query"] != `"88"` || fus[0].Params["namespace"] != "all" {
		t.Fatalf("follow-ups %+v, want a search for \"88\" everywhere", fus)
	}
	fus, _ = removedFollowUps(nil, Finding{Mode: ModeRemovedTarget, Signals: []string{"removed", "shop-frontend.kites.example"}})
	if len(fus) != 1 || fus[0].Params["query"] != `"shop" OR "frontend"` {
		t.Fatalf("follow-ups %+v, want the words of the first label", fus)
	}
}

package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestKeyEvidence(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 4, 1, 8, m, 0, 0, time.UTC); return &x }
	ev := NewEvidence(&investigationv1.Alert{AlertName: "X", StartsAt: nil}, nil)
	c := Cite{PinIDs: []string{"p1"}, Sources: []string{"pod_logs"}}
	for i := 0; i < 5; i++ {
		ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(10 + i), Level: "ERROR", Pod: "api-1", Message: "dial tcp 10.0.0.9:5432: i/o timeout"}, Cite: c})
	}
	ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(11), Level: "WARN", Pod: "api-1", Message: "pool pending=40 max=20"}, Cite: c})
	ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(11), Level: "INFO", Pod: "api-1", Message: "GET /healthz 200"}, Cite: c})
	ev.Events = []Event{{Event: facts.Event{Type: "Warning", Reason: "Preempted", Message: "preempted by batch/train-7", InvolvedKind: "Pod", InvolvedName: "api-2", Count: 3}, Cite: Cite{PinIDs: []string{"p2"}}}}
	ev.Resources = []Resource{{Resource: facts.Resource{Kind: "CronJob", Namespace: "ops", Name: "nightly", Signals: []string{"schedule '0 2 31 2 *' never fires; lastScheduleTime 2026-01-31"}}, Cite: Cite{PinIDs: []string{"p3"}}}}
	already := []*investigationv1.Claim{{Claim: "pod logs (api-1): 'pool pending=40 max=20'"}}
	got := ev.keyEvidence(already)
	var text []string
	for _, k := range got {
		text = append(text, k.GetClaim())
		if len(k.GetPinIds()) == 0 || k.GetStatus() != investigationv1.ClaimStatus_CLAIM_STATUS_SUPPORTED {
			t.Errorf("key evidence %q must be a supported claim citing pins", k.GetClaim())
		}
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"i/o timeout", "x5", "Preempted", "pod/api-2", "CronJob ops/nightly", "lastScheduleTime"} {
		if !strings.Contains(all, want) {
			t.Errorf("key evidence lacks %q:\n%s", want, all)
		}
	}
	for _, not := range []string{"GET /healthz", "pool pending"} {
		if strings.Contains(all, not) {
			t.Errorf("key evidence repeats or includes %q:\n%s", not, all)
		}
	}
}

// The report quotes what the suspect commits changed: the commits the
// diagnosis names, else the latest before the alert; never one after it or
// one rolled back.
func TestSuspectCommits(t *testing.T) {
	at := time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) *time.Time { x := at.Add(d); return &x }
	commit := func(sha string, d time.Duration, summary, diff string) Commit {
		return Commit{Commit: facts.Commit{SHA: sha, Service: "quote-api", Timestamp: ts(d), Message: "change " + sha[:4], Summary: summary, Diff: diff}}
	}
	ev := &Evidence{Commits: []Commit{
		commit("aaaa1111bbbb", -90*time.Minute, "Raises the pool timeout to 30s.", ""),
		commit("cccc2222dddd", -20*time.Minute, "Sets retries to 0 for the pricing client.", "--- a/values.yaml\n+++ b/values.yaml\n@@ -3 +3 @@\n-  retries: 3\n+  retries: 0\n"),
		commit("eeee3333ffff", 10*time.Minute, "After the alert.", ""),
	}}
	got := ev.suspectCommits("", &at)
	if len(got) != 1 || !strings.Contains(got[0].text, "cccc222") || !strings.Contains(got[0].text, "retries: 0") || !strings.Contains(got[0].text, "- retries: 3") || strings.Contains(got[0].text, "+++") {
		t.Fatalf("latest before the alert, summary and changed lines: %+v", got)
	}
	named := ev.suspectCommits("the release aaaa111 of quote-api", &at)
	if len(named) != 1 || !strings.Contains(named[0].text, "pool timeout") {
		t.Errorf("the named commit goes first: %+v", named)
	}
	ev.Commits[1].Removed = true
	if got := ev.suspectCommits("", &at); len(got) != 1 || !strings.Contains(got[0].text, "aaaa111") {
		t.Errorf("a rolled-back commit is not quoted: %+v", got)
	}
}

// The lines of an object the diagnosis names come first among the
// described objects' lines, then lines that share a word with it.
func TestRankedResourceSignals(t *testing.T) {
	ev := &Evidence{Resources: []Resource{
		{Resource: facts.Resource{Kind: "ConfigMap", Namespace: "shop", Name: "banner-text", Signals: []string{"data.title=Spring sale"}}},
		{Resource: facts.Resource{Kind: "Certificate", Namespace: "shop", Name: "shop-tls", Signals: []string{"spec.duration=2160h", "spec.renewBefore=336h"}}},
		{Resource: facts.Resource{Kind: "Service", Namespace: "shop", Name: "cart", Signals: []string{"spec.sessionAffinity=ClientIP"}}},
	}}
	claims := []*investigationv1.Claim{{Claim: "the cart's clients stick to one pod: sessionAffinity pins them"}}
	got := ev.rankedResourceSignals(claims, "the certificate shop-tls expires")
	if len(got) != 4 || got[0].r.Name != "shop-tls" || got[1].r.Name != "shop-tls" || got[2].sig != "spec.sessionAffinity=ClientIP" {
		t.Errorf("ranking: %+v", got)
	}
}

// One-off lines: a statement written once around the alert is quoted; the
// steady chatter, errors, debug lines and lines outside the window are not;
// what shares words with the diagnosis ranks first; the bound holds.
func TestOneOffLines(t *testing.T) {
	alertAt := time.Date(2027, 3, 9, 14, 0, 0, 0, time.UTC)
	line := func(d time.Duration, svc, level, msg string) LogLine {
		x := alertAt.Add(d)
		return LogLine{LogLine: facts.LogLine{Timestamp: &x, Service: svc, Level: level, Message: msg}}
	}
	chatter := func(svc string, n int) []LogLine {
		var out []LogLine
		for i := range n {
			out = append(out, line(-time.Duration(i)*time.Minute, svc, "INFO", fmt.Sprintf("GET /quotes 200 %dms", 10+i)))
		}
		return out
	}
	tests := []struct {
		name    string
		logs    []LogLine
		said    []string
		n       int
		want    []string
		notWant []string
	}{
		{
			name: "a note among chatter",
			logs: append(chatter("quote-api", 12),
				line(-50*time.Minute, "platform-notes", "INFO", "broker-pool maxConnections=40 set in 2025 for the old traffic plan"),
				line(-3*time.Minute, "quote-api", "ERROR", "pool exhausted: 40/40 connections busy"),
				line(-9*time.Minute, "quote-api", "DEBUG", "pool stats sampled")),
			said:    []string{"quote-api pool exhausted: 40/40 connections busy"},
			n:       3,
			want:    []string{"maxConnections=40"},
			notWant: []string{"GET /quotes", "pool exhausted", "pool stats"},
		},
		{
			name: "other vocabulary, line read twice counts once",
			logs: append(chatter("ledger", 6),
				line(-20*time.Minute, "status-feed", "notice", "provider incident: elevated error rates for object writes in region north-2"),
				line(-20*time.Minute, "status-feed", "", "provider incident: elevated error rates for object writes in region north-2")),
			n:    2,
			want: []string{"region north-2"},
		},
		{
			name: "outside the window",
			logs: append(chatter("ledger", 4),
				line(-5*24*time.Hour, "notes", "INFO", "ledger retention shortened to 3 days"),
				line(2*time.Hour, "notes", "INFO", "postmortem scheduled for ledger")),
			n:       3,
			notWant: []string{"retention shortened", "postmortem"},
		},
		{
			name: "relevance first, then the bound",
			logs: []LogLine{
				line(-1*time.Minute, "janitor", "INFO", "janitor run finished, 0 files removed"),
				line(-2*time.Minute, "backup", "INFO", "backup of volume photos-data started"),
				line(-90*time.Minute, "infra", "INFO", "nodegroup gpu-pool-b scaled to zero by cost policy"),
			},
			said:    []string{"render-worker pods pending: 0/3 nodes match node selector gpu-pool-b"},
			n:       1,
			want:    []string{"gpu-pool-b scaled to zero"},
			notWant: []string{"janitor", "backup"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evidence{Logs: tc.logs}
			got := ev.oneOffLines(alertAt, tc.n, tc.said, nil)
			if len(got) > tc.n {
				t.Fatalf("%d lines, bound %d", len(got), tc.n)
			}
			var msgs []string
			for _, l := range got {
				msgs = append(msgs, l.Message)
			}
			joined := strings.Join(msgs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("lack %q:\n%s", w, joined)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(joined, w) {
					t.Errorf("hold %q:\n%s", w, joined)
				}
			}
			if strings.Count(joined, "region north-2") > 1 {
				t.Errorf("one line read twice quoted twice:\n%s", joined)
			}
			// A line quoted already is no candidate, and leaves its slot to
			// the next.
			skipped := ev.oneOffLines(alertAt, tc.n, tc.said, func(msg string) bool { return len(msgs) > 0 && msg == msgs[0] })
			for _, l := range skipped {
				if len(msgs) > 0 && l.Message == msgs[0] {
					t.Errorf("a line quoted already was quoted again: %q", l.Message)
				}
			}
			if len(msgs) > 0 && len(skipped) < min(tc.n, len(msgs)) && len(skipped) < len(msgs)-1 {
				t.Errorf("skipping one line left %d of %d slots used", len(skipped), tc.n)
			}
		})
	}
}

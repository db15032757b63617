package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A consumer group that lost its committed offsets (the broker expired
// them, the consumer found none and reset) replays: a configuration of the
// consumer, named by its group or its own log; a stop of the group before
// it is quoted. Variants: the broker's words, the consumer client's, a
// group named by the broker only. No offset record, no finding.
func TestOffsetReset(t *testing.T) {
	cases := []struct {
		name  string
		lines []facts.LogLine
		want  string
	}{
		{"consumer client", []facts.LogLine{
			{Timestamp: at(-60), Service: "ops-calendar", Level: "INFO", Message: "scaled deployment billing/statement-mailer to 0 replicas for the ledger migration"},
			{Timestamp: at(1), Namespace: "billing", Service: "statement-mailer", Pod: "statement-mailer-7d6c5b4a3-abcde", Level: "INFO", Message: "[Consumer clientId=statement-mailer-1, groupId=statement-mailer] Found no committed offset for partition statements-0"},
			{Timestamp: at(1), Namespace: "billing", Service: "statement-mailer", Pod: "statement-mailer-7d6c5b4a3-abcde", Level: "INFO", Message: "[Consumer clientId=statement-mailer-1, groupId=statement-mailer] Resetting offset for partition statements-0 to position FetchPosition{offset=0}"},
		}, "deployment/billing/statement-mailer"},
		{"broker names the group", []facts.LogLine{
			{Timestamp: at(0), Namespace: "billing", Service: "kafka", Level: "INFO", Message: "[GroupMetadataManager brokerId=1] Removed 4 expired offsets in 3 milliseconds (group nudge-sender)"},
			{Timestamp: at(2), Namespace: "billing", Service: "nudge-sender", Level: "INFO", Message: "sent nudge N-1 to member M-7"},
		}, "deployment/billing/nudge-sender"},
		{"no offset record", []facts.LogLine{
			{Timestamp: at(2), Namespace: "billing", Service: "nudge-sender", Level: "INFO", Message: "sent nudge N-1 to member M-7"},
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, tc.lines))
			f := modeFinding(res, ModeOffsetReset)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("offset reset proposed: %s", f.Statement)
				}
				return
			}
			if f == nil || f.Entity != tc.want || f.Category != catConfig {
				t.Fatalf("findings %v, want the offset reset of %s", modesOf(res.Findings), tc.want)
			}
		})
	}
}

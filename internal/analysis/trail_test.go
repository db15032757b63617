package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// What another system logged about the object the errors name by an
// identifier, before the errors, is the nearest and most specific change;
// after the onset, as an error of its own, or from the failing service
// itself it is none. Variants: a KMS key by ARN and UUID, a queue by its
// ARN's name, a vault key by a bare UUID.
func TestTrailChanges(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2027, 3, 3, 10, m, 0, 0, time.UTC); return &x }
	tests := []struct {
		name    string
		symptom string
		trail   facts.LogLine
		want    bool
	}{
		{"kms key disabled by a janitor",
			`api error KMS.DisabledException: arn:aws:kms:eu-west-1:1111:key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c is disabled.`,
			facts.LogLine{Timestamp: at(18), Service: "audit", Level: "INFO", Message: "eventName=DisableKey requestParameters.keyId=key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c"}, true},
		{"queue purged and re-created",
			`SendMessage failed: AWS.SimpleQueueService.NonExistentQueue: arn:aws:sqs:us-east-1:2222:payout-requests-v2`,
			facts.LogLine{Timestamp: at(5), Service: "terraform", Level: "INFO", Message: "aws_sqs_queue.payout-requests-v2: destroying"}, true},
		{"vault key rotated",
			`decrypt failed for key 0e7c2a51-9b3d-4c6e-8f10-2a4b6c8d0e1f: key version not found`,
			facts.LogLine{Timestamp: at(0), Service: "key-rotator", Level: "INFO", Message: "rotated 0e7c2a51-9b3d-4c6e-8f10-2a4b6c8d0e1f, old version purged"}, true},
		{"a record after the onset",
			`api error KMS.DisabledException: arn:aws:kms:eu-west-1:1111:key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c is disabled.`,
			facts.LogLine{Timestamp: at(40), Service: "audit", Level: "INFO", Message: "eventName=EnableKey keyId=5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c"}, false},
		{"another system's error about it",
			`api error KMS.DisabledException: arn:aws:kms:eu-west-1:1111:key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c is disabled.`,
			facts.LogLine{Timestamp: at(18), Service: "reports", Level: "ERROR", Message: "decrypt with 5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c failed"}, false},
		{"the failing service's own line",
			`api error KMS.DisabledException: arn:aws:kms:eu-west-1:1111:key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c is disabled.`,
			facts.LogLine{Timestamp: at(18), Service: "docs-api", Level: "INFO", Message: "using key 5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(nil, nil)
			ev.Logs = []LogLine{{LogLine: tc.trail}}
			ch := ev.nearestChange("docs-api", at(19), tc.symptom)
			got := ch != nil && ch.object != ""
			if got != tc.want {
				t.Fatalf("trail change %v, want %v (%+v)", got, tc.want, ch)
			}
			if got {
				if cat, _, _ := changeVote(ch.kind); cat != catConfig && cat != catData {
					t.Errorf("kind %q votes %v", ch.kind, cat)
				}
				if !strings.Contains(ch.text, tc.trail.Service) {
					t.Errorf("text %q does not name who recorded it", ch.text)
				}
			}
		})
	}
}

// Beside the errors, what other systems logged about the host or object
// they name (a prober's verdict, an audit record) is quoted, nearest
// first; the failing entity's own lines, other hosts and lines far from
// the onset are not.
func TestObservations(t *testing.T) {
	onset := time.Date(2027, 2, 27, 6, 1, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := onset.Add(time.Duration(m) * time.Minute); return &x }
	symptom := `SSLHandshakeException: PKIX path building failed. POST https://api.tramway.example/v2/tickets`
	ev := NewEvidence(nil, nil)
	ev.Logs = []LogLine{
		{LogLine: facts.LogLine{Timestamp: at(2), Service: "tls-check", Level: "INFO", Message: "openssl s_client -connect api.tramway.example:443: Verify return code: 20 (unable to get local issuer certificate)"}},
		{LogLine: facts.LogLine{Timestamp: at(1), Service: "ticket-app", Level: "INFO", Message: "retrying api.tramway.example in 2s"}},
		{LogLine: facts.LogLine{Timestamp: at(3), Service: "tls-check", Level: "INFO", Message: "openssl s_client -connect cdn.tramway.example:443: Verify return code: 0 (ok)"}},
		{LogLine: facts.LogLine{Timestamp: at(-600), Service: "dns-audit", Level: "INFO", Message: "api.tramway.example A record unchanged"}},
	}
	got := ev.observations("ticket-app", &onset, []string{symptom})
	if len(got) != 1 || got[0].Service != "tls-check" || !strings.Contains(got[0].Message, "api.tramway.example") {
		t.Fatalf("observations = %+v, want the prober's verdict on api.tramway.example only", got)
	}
	if names := observedNames([]string{symptom, `key arn:aws:kms:eu-west-1:1:key/5c1e9a0b-77d3-4f2e-a0c1-9d8e7f6a5b4c is disabled`}); len(names) != 2 {
		t.Errorf("observedNames = %v, want the UUID and the host", names)
	}
}

package analysis

import (
	"strings"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
)

// A public name that no longer resolves is its provider's failure: the
// finding quotes what other systems (not its callers) logged about the
// provider around the onset, and its follow-ups are a dependency's (the
// provider searched everywhere).
func TestOutsideHostThatDoesNotResolve(t *testing.T) {
	base := time.Date(2027, 4, 3, 6, 10, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := base.Add(time.Duration(m) * time.Minute); return &x }
	ev := NewEvidence(&investigationv1.Alert{AlertName: "RecordFetchErrors", Service: "records"}, nil)
	for i := 0; i < 4; i++ {
		ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: at(i), Service: "records", Pod: "records-6f8b9d7c5d-fkvvk", Level: "ERROR",
			Message: "fetch failed: getaddrinfo ENOTFOUND api.parishscan.example"}})
	}
	ev.Logs = append(ev.Logs,
		LogLine{LogLine: facts.LogLine{Timestamp: at(5), Service: "domain-watch", Level: "INFO", Message: "lookup parishscan.example: Domain Status: clientHold since 2027-04-02"}},
		LogLine{LogLine: facts.LogLine{Timestamp: at(6), Service: "records", Level: "INFO", Message: "retrying parishscan in 30s"}},
		LogLine{LogLine: facts.LogLine{Timestamp: at(-5 * 24 * 60), Service: "domain-watch", Level: "INFO", Message: "renewal reminder sent for parishscan.example"}})
	var dns *Finding
	for _, f := range detectDNS(ev) {
		if f.Mode == ModeDNSFailure {
			f := f
			dns = &f
		}
	}
	if dns == nil || dns.Entity != "host/api.parishscan.example" || dns.Category != catDependency {
		t.Fatalf("finding %+v, want the provider's dependency failure", dns)
	}
	var quoted []string
	for _, c := range dns.Validated {
		if strings.HasPrefix(c.Text, "What ") {
			quoted = append(quoted, c.Text)
		}
	}
	if len(quoted) != 1 || !strings.Contains(quoted[0], "clientHold") {
		t.Errorf("provider context %q, want only the watcher's line around the onset (not the caller's own, not one days before)", quoted)
	}
	fus, _ := dnsFollowUps(ev, *dns)
	found := false
	for _, fu := range fus {
		if fu.Intent == intent.SearchLogs && fu.Params["namespace"] == "all" && strings.Contains(fu.Params["query"].(string), "parishscan") {
			found = true
		}
	}
	if !found {
		t.Errorf("follow-ups %+v, want the provider searched everywhere", fus)
	}
}

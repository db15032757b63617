package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestMovedAddress(t *testing.T) {
	tests := []struct {
		text, old, new string
	}{
		{"failover completed; orders-db.internal now resolves to 10.72.9.41 (was 10.72.3.18)", "10.72.3.18", "10.72.9.41"},
		{"primary moved from 10.1.0.5 to 10.1.4.9 after host replacement", "10.1.0.5", "10.1.4.9"},
		{"VIP reassigned 192.168.7.10 -> 192.168.7.22", "192.168.7.10", "192.168.7.22"},
		{"gateway moved to standby site; DNS A record now 10.9.18.7 (TTL 60s); old address 10.9.14.21 drained", "10.9.14.21", "10.9.18.7"},
	}
	for _, tc := range tests {
		old, nw, ok := movedAddress(tc.text)
		if !ok || old != tc.old || nw != tc.new {
			t.Errorf("movedAddress(%q) = %q %q %v, want %q %q", tc.text, old, nw, ok, tc.old, tc.new)
		}
	}
	if _, _, ok := movedAddress("connected to 10.0.0.1:5432"); ok {
		t.Error("a single address read as a move")
	}
}

// A client that keeps failing on an endpoint's old address after the
// endpoint moved (while another client reaches the new one) is a
// configuration of the client (its DNS cache), whatever its pool reports.
// Failures on another address, or before the move, are not.
func TestStaleAddress(t *testing.T) {
	move := facts.LogLine{Timestamp: at(0), Service: "db-events", Level: "INFO", Message: "Multi-AZ failover completed; ledger-db.internal now resolves to 10.40.9.41 (was 10.40.3.18)"}
	refused := func(min int, ip string) facts.LogLine {
		return errLine(min, "fare-api-5d6c7b8a9-zz1", "fare-api", "HikariPool-1 - Connection is not available; PSQLException: Connection to "+ip+":5432 refused.")
	}
	other := facts.LogLine{Timestamp: at(2), Namespace: "shop", Service: "fare-batch", Level: "INFO", Message: "connected to ledger-db.internal (10.40.9.41) after failover"}
	cases := []struct {
		name  string
		lines []facts.LogLine
		want  bool
	}{
		{"old address after the move", []facts.LogLine{move, other, refused(3, "10.40.3.18"), refused(5, "10.40.3.18"), refused(7, "10.40.3.18")}, true},
		{"another address", []facts.LogLine{move, refused(3, "10.40.5.5"), refused(5, "10.40.5.5"), refused(7, "10.40.5.5")}, false},
		{"before the move", []facts.LogLine{refused(-7, "10.40.3.18"), refused(-5, "10.40.3.18"), move}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, tc.lines))
			lead := res.Findings[0]
			got := lead.Mode == ModeStaleAddress
			if got != tc.want {
				t.Fatalf("lead %s %s, want stale address %v", lead.Mode, lead.Entity, tc.want)
			}
			if got && (lead.Entity != "deployment/shop/fare-api" || lead.Category != catConfig) {
				t.Fatalf("lead %s %v, want fare-api's configuration", lead.Entity, lead.Category)
			}
		})
	}
}

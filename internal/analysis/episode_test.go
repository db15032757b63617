package analysis

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A failure told by log lines that ended: the callers of a dependency
// fail on it for two minutes, log that it works again, and nothing fails
// for the rest of the window. The episode is history, whatever the
// vocabulary; a failure after the recovery line, a recovery line from
// another source or about another host, or a window that ends too soon
// after the last failure leave the fault reading alone.
func TestEpisodeEnded(t *testing.T) {
	type line struct {
		min                 int
		svc, level, message string
	}
	failing := func(host string) []line {
		return []line{
			{0, "booking-web", "WARN", "upstream https://" + host + ": TLS handshake timeout after 5s (retrying)"},
			{1, "booking-web", "ERROR", "GET https://" + host + "/v2/geocode failed: connection reset by peer"},
		}
	}
	tests := []struct {
		name    string
		lines   []line
		end     int // window end, minutes after the first failure
		healthy bool
	}{
		{"recovered and quiet", append(failing("maps-api.example.net"), line{3, "booking-web", "INFO", "upstream https://maps-api.example.net reachable again (handshake 41ms)"}), 30, true},
		{"other vocabulary", append(failing("tiles.cartoserve.example"), line{4, "booking-web", "INFO", "tiles.cartoserve.example: calls succeed, circuit closed"}), 25, true},
		{"no recovery line", failing("maps-api.example.net"), 30, false},
		{"fails again after", append(failing("maps-api.example.net"), line{3, "booking-web", "INFO", "upstream https://maps-api.example.net reachable again"}, line{12, "booking-web", "ERROR", "GET https://maps-api.example.net/v2/geocode failed: connection reset by peer"}), 30, false},
		{"another service fails after", append(failing("maps-api.example.net"), line{3, "booking-web", "INFO", "upstream https://maps-api.example.net reachable again"}, line{15, "payments", "ERROR", "charge failed: card processor unavailable"}), 30, false},
		{"recovery line from another source", append(failing("maps-api.example.net"), line{3, "status-feed", "INFO", "maps-api.example.net status: resolved"}), 30, false},
		{"recovery line about another host", append(failing("maps-api.example.net"), line{3, "booking-web", "INFO", "upstream https://geo.other.example reachable again"}), 30, false},
		{"window ends too soon", append(failing("maps-api.example.net"), line{3, "booking-web", "INFO", "upstream https://maps-api.example.net reachable again"}), 8, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ls []facts.LogLine
			for _, l := range tc.lines {
				ls = append(ls, facts.LogLine{Timestamp: at(l.min), Namespace: "tuning", Service: l.svc, Level: l.level, Message: l.message})
			}
			p := pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, ls)
			p.TimeWindow = &evidencev1.TimeWindow{Start: timestamppb.New(t0.Add(-30 * time.Minute)), End: timestamppb.New(*at(tc.end))}
			in := Input{Alert: &investigationv1.Alert{AlertName: "booking-web homepage", StartsAt: timestamppb.New(*at(1))}, Pins: []*evidencev1.EvidencePin{p}}
			res, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			ended := len(res.Findings) > 0 && res.Findings[0].Mode == ModeEpisodeEnded
			if ended != tc.healthy || res.Healthy != tc.healthy {
				lead := ""
				if len(res.Findings) > 0 {
					lead = res.Findings[0].Mode + ": " + res.Findings[0].Statement
				}
				t.Fatalf("episode ended = %v, healthy = %v, want %v (lead %s)", ended, res.Healthy, tc.healthy, lead)
			}
			if tc.healthy && !strings.Contains(res.Findings[0].Statement, "ended") {
				t.Errorf("statement %q must say the failures ended", res.Findings[0].Statement)
			}
		})
	}
}

// An alert its source reports resolved (or completed), whose failing
// lines all ended well before the window's end: healthy, whatever the
// vocabulary. A resolution whose failures go on to the window's end, a
// firing alert with the same evidence, or a window that ends too soon
// after the last failure keep the fault reading.
func TestAlertResolved(t *testing.T) {
	type line struct {
		min                 int
		svc, level, message string
	}
	failing := []line{
		{0, "map-renderer", "WARN", "tile fetch https://api.tilehost.example/v4/tiles/12/1.pbf 503, served stale tile from cache"},
		{4, "map-renderer", "WARN", "tile fetch https://api.tilehost.example/v4/tiles/12/2.pbf 503, served stale tile from cache"},
		{8, "map-renderer", "ERROR", "tile fetch https://api.tilehost.example/v4/tiles/12/3.pbf failed: 503"},
	}
	tests := []struct {
		name     string
		lines    []line
		state    string
		resolved bool
		end      int
		healthy  bool
	}{
		{"completed, quiet since", failing, "completed", true, 40, true},
		{"resolved, other vocabulary", []line{{0, "ledger", "ERROR", "INSERT into ledger_2027 failed: could not extend file: No space left on device"}, {6, "ledger", "ERROR", "INSERT into ledger_2027 failed: could not extend file: No space left on device"}}, "resolved", true, 30, true},
		{"resolved, still failing", append(failing, line{36, "map-renderer", "ERROR", "tile fetch https://api.tilehost.example/v4/tiles/12/9.pbf failed: 503"}), "resolved", true, 40, false},
		{"firing", failing, "firing", false, 40, false},
		{"window ends too soon", failing, "resolved", true, 14, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ls []facts.LogLine
			for _, l := range tc.lines {
				ls = append(ls, facts.LogLine{Timestamp: at(l.min), Namespace: "maps", Service: l.svc, Level: l.level, Message: l.message})
			}
			p := pin(t, "lg", "search_logs", "logs", facts.KeyLogLines, ls)
			p.TimeWindow = &evidencev1.TimeWindow{Start: timestamppb.New(t0.Add(-30 * time.Minute)), End: timestamppb.New(*at(tc.end))}
			in := Input{Alert: &investigationv1.Alert{AlertName: "Tile storage migration", State: tc.state, Resolved: tc.resolved, StartsAt: timestamppb.New(*at(0))}, Pins: []*evidencev1.EvidencePin{p}}
			res, err := Analyze(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := len(res.Findings) > 0 && res.Findings[0].Mode == ModeAlertResolved
			if got != tc.healthy || res.Healthy != tc.healthy {
				lead := ""
				if len(res.Findings) > 0 {
					lead = res.Findings[0].Mode + ": " + res.Findings[0].Statement
				}
				t.Fatalf("resolved reading = %v, healthy = %v, want %v (lead %s)", got, res.Healthy, tc.healthy, lead)
			}
			if tc.healthy && !strings.Contains(res.Findings[0].Statement, tc.state) {
				t.Errorf("statement %q must name the source's state", res.Findings[0].Statement)
			}
		})
	}
}

package analysis

import (
	"strings"
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Outbound connections that run out of source ports: a gateway's
// allocation errors (AWS NAT Gateway's metric as a log line, Cloud NAT's
// flow log, a series) or the kernel's EADDRNOTAVAIL, beside a client's
// connect timeouts to a remote. The finding is the exhausted resource's
// (the gateway, else the client's own port range), it quotes the
// client's latest commit, and no change row turns it into the commit's
// configuration or code, nor the remote's dependency failure.
func TestSourcePortExhaustion(t *testing.T) {
	timeout := func(min int, svc string) facts.LogLine {
		return errLine(min, svc+"-6f7d8c9b5-x1y2z", svc, `POST https://api.partner.example/v1/quotes: dial tcp 203.0.113.9:443: connect: connection timed out`)
	}
	cases := []struct {
		name       string
		signal     *facts.LogLine
		series     []facts.Series
		client     string
		wantEntity string
	}{
		{"aws metric line", &facts.LogLine{Timestamp: at(2), Service: "cw-exporter", Level: "WARN", Message: "AWS/NATGateway ErrorPortAllocation Sum=912 (1m) NatGatewayId=nat-0a1b2c3d4e5f; ActiveConnectionCount max=55000"}, nil, "quote-engine", "natgateway/nat-0a1b2c3d4e5f"},
		{"cloud nat flow log", &facts.LogLine{Timestamp: at(2), Service: "cloud-nat", Level: "ERROR", Message: `{"allocation_status":"DROPPED","connection":{"src_ip":"10.1.0.4","dest_ip":"203.0.113.9","dest_port":443},"gateway_identifiers":{"gateway_name":"egress-nat-west","region":"europe-west4"}}`}, nil, "ledger-sync", "natgateway/egress-nat-west"},
		{"series", nil, []facts.Series{metric("aws_natgateway_error_port_allocation_sum", map[string]string{"nat_gateway_id": "nat-77aa88bb"}, ramp(0, 900, 12)...)}, "fare-cache", "natgateway/nat-77aa88bb"},
		{"kernel ephemeral range", &facts.LogLine{Timestamp: at(2), Service: "scanner", Namespace: "shop", Level: "ERROR", Message: "fetch: dial tcp 10.0.0.5:0->198.51.100.7:443: connect: cannot assign requested address"}, nil, "scanner", "deployment/shop/scanner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := []facts.LogLine{}
			if tc.signal != nil {
				lines = append(lines, *tc.signal)
			}
			for i := 0; i < 5; i++ {
				lines = append(lines, timeout(3+i, tc.client))
			}
			commits := []facts.Commit{{SHA: "c0ffee12345", Service: tc.client, Message: tc.client + " http client: keepAlive false, one agent per request", ChangeTypes: []string{facts.ChangeConfig}, Timestamp: at(-300)}}
			deploys := []facts.Deploy{{Service: tc.client, Namespace: "shop", Revision: "c0ffee1", PreviousRevision: "aaaa111", StartedAt: at(-290), FinishedAt: at(-288)}}
			pins := []*evidencev1.EvidencePin{
				pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines),
				pin(t, "com", "get_commits", "commits", facts.KeyCommits, commits),
				pin(t, "dep", "get_deploy_history", "deploys", facts.KeyDeploys, deploys),
			}
			if tc.series != nil {
				pins = append(pins, pin(t, "m", "survey_metrics", "prometheus", facts.KeySeries, tc.series))
			}
			alert := &investigationv1.Alert{AlertName: "PartnerQuotesFailing", Service: tc.client, StartsAt: timestamppb.New(*at(6))}
			res, d := analyze(t, alert, pins...)
			f := res.Findings[0]
			if f.Mode != ModeSourcePortExhaustion || f.Category != catResource || f.Entity != tc.wantEntity {
				t.Fatalf("lead %s %s %s, want source port exhaustion at %s", f.Mode, f.Category, f.Entity, tc.wantEntity)
			}
			if d.GetCategory() != catResource {
				t.Fatalf("diagnosis category %v, want resource exhaustion (no change row on its symptoms)", d.GetCategory())
			}
			if !strings.Contains(f.Statement, "c0ffee1") || !strings.Contains(f.Statement, tc.client) {
				t.Fatalf("statement %q does not name the client and its latest commit", f.Statement)
			}
		})
	}
	t.Run("timeouts alone", func(t *testing.T) {
		var lines []facts.LogLine
		for i := 0; i < 5; i++ {
			lines = append(lines, timeout(3+i, "quote-engine"))
		}
		res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
		for _, f := range res.Findings {
			if f.Mode == ModeSourcePortExhaustion {
				t.Fatalf("port exhaustion proposed without an allocation record: %s", f.Statement)
			}
		}
	})
}

// A finding a stronger one explains is its symptom: no change row is tied
// to it.
func TestExplainedBy(t *testing.T) {
	dep := Finding{Mode: ModeDependencyFailure, Score: 0.4}
	ports := Finding{Mode: ModeSourcePortExhaustion, Score: 0.86}
	ports.explains(ModeDependencyFailure, "the connect failures are the ports")
	if !explainedBy(dep, []Finding{ports}) {
		t.Fatal("the dependency failure the port exhaustion explains is not its symptom")
	}
	weak := ports
	weak.Score = 0.3
	if explainedBy(dep, []Finding{weak}) {
		t.Fatal("a weaker finding made a stronger one its symptom")
	}
	if explainedBy(Finding{Mode: ModeOOMKilled, Score: 0.4}, []Finding{ports}) {
		t.Fatal("a mode the finding does not explain was made its symptom")
	}
}

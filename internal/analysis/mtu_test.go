package analysis

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// A path that drops full-size packets: an MTU record (an overlay agent's
// warning, a firewall's dropped fragmentation-needed ICMP) beside a
// client's stalled transfers. Variants of record and stall; the commit
// whose change names the MTU is the entity when there is one. Stalls
// without a record, or a record without stalls, propose nothing.
func TestMTUBlackhole(t *testing.T) {
	stall := func(min int, svc, msg string) facts.LogLine { return errLine(min, svc+"-5c6d7e8f9-k2l3m", svc, msg) }
	cases := []struct {
		name    string
		record  string
		stalls  []facts.LogLine
		commits []facts.Commit
		want    string // entity, "" for no finding
	}{
		{"overlay agent warning and a commit", `level=warning msg="Configured MTU 1500 does not leave room for encryption overhead; effective route MTU should be 1420" subsys=mtu`,
			[]facts.LogLine{stall(3, "atlas-web", "GET tiles/7.bin: context deadline exceeded after 30s (received 0 of 2300000 bytes)"), stall(5, "atlas-web", "GET tiles/9.bin: context deadline exceeded after 30s (received 0 of 2310000 bytes)")},
			[]facts.Commit{{SHA: "4d5e6f70aa", Service: "platform", Message: "network: enable node-to-node encryption, keep MTU 1500", Timestamp: at(-60)}}, "commit/4d5e6f7"},
		{"firewall drops fragmentation needed", "deny icmp type 3 code 4 (fragmentation needed, next-hop mtu 1372) from 100.64.1.1 to 10.7.1.22",
			[]facts.LogLine{stall(3, "sample-uploader", "upload S-1.raw: read timeout after 120s (sent 1448 of 28 MB)"), stall(8, "sample-uploader", "upload S-2.raw: read timeout after 120s (sent 1448 of 28 MB)")},
			nil, "deployment/shop/edge-fw"},
		{"stalls without a record", "",
			[]facts.LogLine{stall(3, "atlas-web", "GET tiles/7.bin: context deadline exceeded"), stall(5, "atlas-web", "GET tiles/9.bin: context deadline exceeded")}, nil, ""},
		{"record without stalls", "deny icmp type 3 code 4 (fragmentation needed, next-hop mtu 1372)", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := append([]facts.LogLine(nil), tc.stalls...)
			if tc.record != "" {
				lines = append(lines, facts.LogLine{Timestamp: at(1), Namespace: "shop", Service: "edge-fw", Level: "WARN", Message: tc.record})
			}
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines), pin(t, "com", "get_commits", "commits", facts.KeyCommits, tc.commits))
			got := modeFinding(res, ModeMTUBlackhole)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("MTU finding proposed: %s", got.Statement)
				}
				return
			}
			if got == nil || got.Entity != tc.want || got.Category != catConfig || res.Findings[0].Mode != ModeMTUBlackhole {
				t.Fatalf("findings %v, want the MTU blackhole leading at %s", modesOf(res.Findings), tc.want)
			}
		})
	}
}

func modesOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Mode+" "+f.Entity)
	}
	return out
}

// modeFinding is the last finding of the mode, nil when none.
func modeFinding(res Result, mode string) *Finding {
	var f *Finding
	for i := range res.Findings {
		if res.Findings[i].Mode == mode {
			f = &res.Findings[i]
		}
	}
	return f
}

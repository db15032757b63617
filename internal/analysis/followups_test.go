package analysis

import (
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
)

// TestLeadFollowUps: the leading finding carries the next evidence it asks
// for; a dependency whose callers time out while connecting adds the
// caller namespace's NetworkPolicies, one that refuses does not.
func TestLeadFollowUps(t *testing.T) {
	line := func(pod, msg string) facts.LogLine {
		return facts.LogLine{Pod: pod, Service: "web", Level: "ERROR", Message: msg, Timestamp: at(0)}
	}
	alert := &investigationv1.Alert{AlertName: "WebErrors", Namespace: "shop", Service: "web"}
	cases := []struct {
		name      string
		logs      []facts.LogLine
		want      []intent.Name
		exclusive bool
	}{
		{"a cluster name that does not resolve", []facts.LogLine{
			line("web-1", "Get \"http://inventory.shop.svc.cluster.local/items\": dial tcp: lookup inventory.shop.svc.cluster.local: no such host"),
			line("web-2", "lookup inventory.shop.svc.cluster.local: no such host"),
		}, []intent.Name{intent.FetchPodLogs, intent.DescribeResource}, true},
		{"a dependency that refuses", []facts.LogLine{
			line("web-1", "upstream payments-gw:8443 failed: connection refused"),
			line("web-2", "upstream payments-gw:8443 failed: connection refused"),
		}, []intent.Name{intent.SearchLogs}, false},
		{"a dependency whose connections time out", []facts.LogLine{
			line("web-1", "upstream payments-gw:8443 failed: dial tcp 10.0.0.7:8443: i/o timeout"),
			line("web-2", "upstream payments-gw:8443 failed: dial tcp 10.0.0.7:8443: i/o timeout"),
		}, []intent.Name{intent.SearchLogs, intent.DescribeResource}, false},
		{"a named in-cluster dependency dialled by address, timing out", []facts.LogLine{
			line("web-1", "db ping failed: failed to connect to `host=ledger-pg.books.svc user=web`: dial error (dial tcp 172.20.8.14:5432: i/o timeout)"),
			line("web-2", "db ping failed: failed to connect to `host=ledger-pg.books.svc user=web`: dial error (dial tcp 172.20.8.14:5432: i/o timeout)"),
		}, []intent.Name{intent.SearchLogs, intent.SearchLogs, intent.ListPods, intent.DescribeResource, intent.DescribeResource, intent.DescribeResource}, false}, // its pods in books are unread; its Service, then the policies of both namespaces
		{"no follow-up of its own (an OOM kill)", nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := []facts.Pod{healthyPod("web-1"), healthyPod("web-2")}
			if tc.logs == nil {
				p := healthyPod("web-1")
				p.Restarts, p.OOMKilled = 3, true
				p.Containers[0].LastReason, p.Containers[0].LastExitCode, p.Containers[0].RestartCount = "OOMKilled", i32(137), 3
				pods[0] = p
			}
			res, _ := analyze(t, alert, pin(t, "p", "list_pods", "pods", facts.KeyPods, pods), pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, tc.logs))
			calls, exclusive := res.LeadFollowUps()
			var got []intent.Name
			for _, c := range calls {
				got = append(got, c.Intent)
			}
			if len(got) != len(tc.want) || exclusive != tc.exclusive {
				t.Fatalf("lead %s: follow-ups %v (exclusive %v), want %v (exclusive %v)", res.Hypotheses[0].GetDetector(), got, exclusive, tc.want, tc.exclusive)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("follow-ups %v, want %v", got, tc.want)
				}
			}
			if len(calls) >= 2 && tc.want[1] == intent.SearchLogs {
				// What the rest of the system says about the named dependency.
				if q := calls[1].Params["query"]; q != `"ledger-pg"` {
					t.Errorf("dependency search query %v, want the dependency's name", q)
				}
				calls = calls[1:]
			}
			if len(calls) >= 2 && calls[1].Intent == intent.DescribeResource && !tc.exclusive {
				if p := calls[1].Params; p["kind"] != "networkpolicy" || p["namespace"] != "shop" {
					t.Errorf("NetworkPolicy follow-up %v", p)
				}
			}
			if len(calls) == 3 {
				// The dependency is the name the line gives, not the address
				// it dialled, and its own namespace's policies come next.
				if ent := res.Hypotheses[0].GetEntity(); ent != "service/books/ledger-pg" {
					t.Errorf("lead entity %s, want service/books/ledger-pg", ent)
				}
				if p := calls[2].Params; p["kind"] != "networkpolicy" || p["namespace"] != "books" {
					t.Errorf("callee NetworkPolicy follow-up %v", p)
				}
			}
		})
	}
}

// An outside host's provider name (its status page speaks of itself by
// it); none for the cluster's names, addresses or a bare name.
func TestProviderName(t *testing.T) {
	for host, want := range map[string]string{
		"api.mailvolt.example":            "mailvolt",
		"eu1.send.parcelwave.co.uk":       "parcelwave",
		"status.cloudvendor.com":          "cloudvendor",
		"payments.shop.svc":               "",
		"payments.shop.svc.cluster.local": "",
		"10.2.3.4":                        "",
		"redis":                           "",
		"db.corp.internal":                "",
		"x.io":                            "",
	} {
		if got := providerName(host); got != want {
			t.Errorf("providerName(%q) = %q, want %q", host, got, want)
		}
	}
}

// The signature of the strongest entity's most frequent error is its most
// specific code symbol, without its package path.
func TestErrorSignature(t *testing.T) {
	ev := NewEvidence(&investigationv1.Alert{AlertName: "ClipErrors", Namespace: "media", Service: "clips"}, nil)
	for i := 0; i < 3; i++ {
		ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Service: "clips", Namespace: "media", Level: "ERROR", Message: "Servlet.service() threw exception org.apache.catalina.connector.ClientAbortException: java.io.IOException: Broken pipe"}})
	}
	r := Result{ev: ev}
	if got := r.ErrorSignature(); got != "ClientAbortException" {
		t.Errorf("signature %q, want ClientAbortException", got)
	}
	if got := (Result{}).ErrorSignature(); got != "" {
		t.Errorf("no evidence: signature %q", got)
	}
}

// The status a workload refuses its clients with, when its only abnormal
// error series are client errors; none when a server error moved too.
func TestRefusedStatus(t *testing.T) {
	mk := func(code string, from, to float64) Series {
		t0 := time.Date(2027, 1, 1, 10, 0, 0, 0, time.UTC)
		var pts []facts.Point
		for i := 0; i < 60; i++ {
			v := from
			if i >= 30 {
				v = to
			}
			pts = append(pts, facts.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return Series{Series: facts.Series{Name: "rate(http_responses_total[5m])", Labels: map[string]string{"namespace": "shop", "pod": "cart-7f9c-aaaa1", "code": code}, Downsampled: pts, Latest: to, Count: len(pts)}}
	}
	for _, tc := range []struct {
		name   string
		series []Series
		want   string
	}{
		{"client errors only", []Series{mk("400", 0, 40)}, "400"},
		{"a server error too", []Series{mk("400", 0, 40), mk("503", 0, 30)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "CartErrors", Namespace: "shop", Service: "cart"}, nil)
			ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "shop", Name: "cart-7f9c-aaaa1", Workload: "cart", Ready: true}}}
			ev.Series = tc.series
			if got := (Result{ev: ev}).RefusedStatus(); got != tc.want {
				t.Errorf("RefusedStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

// Name lookups that time out ask for the egress policies of the callers'
// namespaces beside the cluster DNS server's own logs; NXDOMAIN answers do
// not.
func TestDNSTimeoutsAskForCallerPolicies(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"dial tcp: lookup kv.store-data.svc.cluster.local on 10.96.0.10:53: read udp 10.244.1.9:50112->10.96.0.10:53: i/o timeout", true},
		{"dial tcp: lookup kv.store-data.svc.cluster.local on 10.96.0.10:53: no such host", false},
	} {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "TillSyncErrors"}, nil)
		ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "tills", Service: "till-sync", Level: "ERROR", Message: tc.msg}}}
		fus, _ := dnsFollowUps(ev, Finding{Entity: "service/store-data/kv"})
		got := false
		for _, fu := range fus {
			if fu.Intent == intent.DescribeResource && fu.Params["kind"] == "networkpolicy" && fu.Params["namespace"] == "tills" {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%q: asks for the callers' policies = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

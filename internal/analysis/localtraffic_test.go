package analysis

import (
	"testing"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A Service with internalTrafficPolicy Local whose callers fail only on
// nodes without its endpoints is the cause (configuration, the Service);
// callers failing beside its endpoints too, a Cluster policy, or calls
// naming another Service are not its effect.
func TestServiceLocalTraffic(t *testing.T) {
	svc := func(signal string) facts.Resource {
		r := facts.Resource{Kind: "Service", Namespace: "pay", Name: "ledger"}
		if signal != "" {
			r.Signals = []string{facts.SignalLocalTraffic + signal}
		}
		return r
	}
	caller := func(name, node string) facts.Pod {
		p := healthyPod(name)
		p.Namespace, p.Node = "pay", node
		return p
	}
	pods := []facts.Pod{caller("checkout-1", "n-3"), caller("checkout-2", "n-4"), caller("checkout-3", "n-1")}
	fail := func(pod, host string) facts.LogLine {
		return facts.LogLine{Timestamp: at(-3), Pod: pod, Level: "ERROR", Message: `post "http://` + host + `/v1/entries": dial tcp 10.0.4.9:80: i/o timeout`}
	}
	tests := []struct {
		name  string
		svc   facts.Resource
		lines []facts.LogLine
		want  bool
	}{
		{"callers off the endpoint nodes fail", svc("internal nodes=n-1,n-2"), []facts.LogLine{fail("checkout-1", "ledger.pay.svc"), fail("checkout-2", "ledger.pay.svc.cluster.local")}, true},
		{"bare name inside the namespace", svc("internal nodes=n-1,n-2"), []facts.LogLine{fail("checkout-1", "ledger:8080")}, true},
		{"callers beside an endpoint fail as much", svc("internal nodes=n-1,n-2"), []facts.LogLine{fail("checkout-1", "ledger.pay.svc"), fail("checkout-3", "ledger.pay.svc")}, true},
		{"only the caller beside an endpoint fails", svc("internal nodes=n-1,n-2"), []facts.LogLine{fail("checkout-3", "ledger.pay.svc")}, false},
		{"no Local policy", svc(""), []facts.LogLine{fail("checkout-1", "ledger.pay.svc")}, false},
		{"an external policy only", svc("external nodes=n-1"), []facts.LogLine{fail("checkout-1", "ledger.pay.svc")}, false},
		{"calls to another Service", svc("internal nodes=n-1,n-2"), []facts.LogLine{fail("checkout-1", "fx.pay.svc")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "CheckoutErrors", Namespace: "pay", Service: "checkout"}, []*evidencev1.EvidencePin{
				pin(t, "p", "list_pods", "k8s", facts.KeyPods, pods),
				pin(t, "s", "describe_resource", "k8s", facts.KeyResources, []facts.Resource{tc.svc}),
				pin(t, "l", "fetch_pod_logs", "pod_logs", facts.KeyLogLines, tc.lines),
			})
			fs := detectServiceLocalTraffic(ev)
			if !tc.want {
				if len(fs) > 0 {
					t.Fatalf("finding %q, want none", fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Entity != "service/pay/ledger" || fs[0].Category != catConfig {
				t.Fatalf("findings %+v, want a configuration finding on service/pay/ledger", fs)
			}
		})
	}
}

package analysis

import (
	"testing"
	"time"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"

	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestObjectChangeKind(t *testing.T) {
	for _, tc := range []struct {
		c    facts.ObjectChange
		want string
	}{
		{facts.ObjectChange{Kind: "Deployment", Fields: []string{`spec.template.spec.containers[{"name":"app"}].image`}}, changeCode},
		{facts.ObjectChange{Kind: "Deployment", Fields: []string{`spec.template.spec.containers[{"name":"app"}].env[{"name":"POOL"}].value`}}, changeConfig},
		{facts.ObjectChange{Kind: "Deployment", Fields: []string{"spec.replicas"}}, changeCapacity},
		{facts.ObjectChange{Kind: "ScaledObject", Fields: []string{"spec.minReplicaCount"}}, changeCapacity},
		{facts.ObjectChange{Kind: "HorizontalPodAutoscaler", Fields: []string{"spec.metrics"}}, changeCapacity},
		{facts.ObjectChange{Kind: "Node", Fields: []string{"spec.unschedulable"}}, changeInfra},
		{facts.ObjectChange{Kind: "Node", Fields: []string{"metadata.labels.zone"}}, changeConfig},
		{facts.ObjectChange{Kind: "Node", Action: "created"}, changeInfra},
		{facts.ObjectChange{Kind: "PriorityClass", Action: "created"}, changeConfig},
		{facts.ObjectChange{Kind: "Deployment", Action: "created"}, changeCode}, // a new workload ships its image
		{facts.ObjectChange{Kind: "ReplicaSet", Action: "created"}, changeCode}, // a rollout's new revision
		{facts.ObjectChange{Kind: "ConfigMap", Action: "created"}, changeConfig},
		{facts.ObjectChange{Kind: "FeatureFlag", Fields: []string{"spec.flagSpec"}}, changeConfig},
	} {
		if got := objectChangeKind(tc.c); got != tc.want {
			t.Errorf("%s %v: got %s, want %s", tc.c.Kind, tc.c.Fields, got, tc.want)
		}
	}
}

func TestSharedIdentifiers(t *testing.T) {
	change := "FeatureFlag cart/cart-flags edited at 17:31Z: 'pricing.bundle-discounts-v2 off -> on'"
	symptoms := []string{"pricing failed (flag pricing.bundle-discounts-v2=on): BundleServiceException", "GET /healthz 200"}
	got := sharedIdentifiers(change, symptoms)
	if len(got) != 1 || got[0] != "pricing.bundle-discounts-v2" {
		t.Errorf("shared = %v, want the flag's name only", got)
	}
	if got := sharedIdentifiers("ConfigMap shop/limits edited", symptoms); len(got) != 0 {
		t.Errorf("unrelated change shares %v", got)
	}
}

func TestLogTemplateMasksIdentifiers(t *testing.T) {
	a := logTemplate("pricing failed for cart c_a36fc491 on [nio-8080-exec-11]")
	b := logTemplate("pricing failed for cart c_7685dcf2 on [nio-8080-exec-46]")
	if a != b {
		t.Errorf("one message, two templates:\n%s\n%s", a, b)
	}
	if logTemplate("connection refused") == logTemplate("connection reset") {
		t.Error("different messages share a template")
	}
}

func TestNamedObjects(t *testing.T) {
	warn := func(msg string) LogLine { return LogLine{LogLine: facts.LogLine{Level: "WARN", Message: msg}} }
	ev := &Evidence{
		Logs: []LogLine{
			warn("node pool-a-1 still has 1 pod protected by PodDisruptionBudget docks/dock-pdb; retrying"),
			warn("node pool-a-2 still has 1 pod protected by PodDisruptionBudget docks/dock-pdb; retrying"),
			{LogLine: facts.LogLine{Level: "INFO", Message: "loaded ConfigMap shop/ignored-because-info"}},
			{LogLine: facts.LogLine{Level: "ERROR", Message: "Secret billing/stripe-key not found"}},
		},
		Events: []Event{{Event: facts.Event{Type: "Warning", Message: "Error creating: pods are forbidden by ResourceQuota team-a/compute"}}},
	}
	got := Result{ev: ev}.NamedObjects()
	want := []ObjectRef{{"poddisruptionbudget", "docks", "dock-pdb"}, {"secret", "billing", "stripe-key"}, {"resourcequota", "team-a", "compute"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if (Result{}).NamedObjects() != nil {
		t.Error("a hand-built result names objects")
	}
}

func TestPeerCertExpired(t *testing.T) {
	line := func(msg string) []LogLine { return []LogLine{{LogLine: facts.LogLine{Level: "ERROR", Message: msg}}} }
	for _, tc := range []struct {
		msg, want string
	}{
		{`Get "https://api.vendor.example/v2/codes": tls: failed to verify certificate: x509: certificate has expired or is not yet valid`, "api.vendor.example"},
		{`Post "https://token-issuer.identity.svc:8443/oauth2/token": x509: certificate has expired or is not yet valid`, ""}, // in-cluster: ours to rotate
		{`handshake with https://partner.example.net: remote error: tls: expired certificate`, ""},                            // the peer rejects our certificate
		{`x509: certificate has expired or is not yet valid`, ""},                                                             // no peer named
	} {
		if got := peerCertExpired(line(tc.msg), "checkout"); got != tc.want {
			t.Errorf("peerCertExpired(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestRolloutImageChanged(t *testing.T) {
	hist := []facts.Revision{
		{Revision: "4", Name: "api-aaa", Images: []string{"reg/api:1.4"}},
		{Revision: "5", Name: "api-bbb", Images: []string{"reg/api:1.5"}},
		{Revision: "6", Name: "api-ccc", Images: []string{"reg/api:1.5"}}, // a settings-only rollout
	}
	d := Deployment{Deployment: facts.Deployment{RolloutHistory: hist}}
	for _, tc := range []struct {
		rs   string
		want bool
	}{{"api-bbb", true}, {"api-ccc", false}, {"api-aaa", false}, {"api-zzz", false}} {
		if got := (rollout{deployment: d, found: true, failingRS: tc.rs}).imageChanged(); got != tc.want {
			t.Errorf("imageChanged(%s) = %v, want %v", tc.rs, got, tc.want)
		}
	}
}

// Healthy pods and nodes do not clear an alert whose own signal was never
// observed: the healthy reading stays below the delivery gate until a
// series of the alerted kind is in the evidence.
func TestHealthyNeedsTheAlertedSignal(t *testing.T) {
	pods := pin(t, "pods", "list_pods", "k8s", facts.KeyPods, []facts.Pod{healthyPod("api-5d9-a"), healthyPod("api-5d9-b")})
	nodes := pin(t, "nodes", "get_node_health", "k8s", facts.KeyNodes, readyNodes())
	alert := &investigationv1.Alert{AlertName: "ApiErrorRateHigh", Title: "api 5xx error rate above 5%", Service: "api", Namespace: "shop"}
	errs := facts.Series{Name: "http_requests_total", Labels: map[string]string{"service": "api", "code": "500"}, Count: 10, Latest: 1, Baseline: 1}
	for i := 0; i < 10; i++ {
		errs.Downsampled = append(errs.Downsampled, facts.Point{T: time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute), V: 1})
	}
	for _, tc := range []struct {
		name string
		pins []*evidencev1.EvidencePin
		max  float64
	}{
		{"alerted signal never observed", []*evidencev1.EvidencePin{pods, nodes}, unobservedHealthyShare},
		{"alerted signal observed flat", []*evidencev1.EvidencePin{pods, nodes, pin(t, "prom", "query_prometheus", "prometheus", facts.KeySeries, []facts.Series{errs})}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectK8sHealthy(NewEvidence(alert, tc.pins))
			if len(fs) != 1 {
				t.Fatalf("want one healthy finding, got %d", len(fs))
			}
			if fs[0].Score > tc.max || (tc.max == 1 && fs[0].Score <= unobservedHealthyShare) {
				t.Errorf("score %.2f (max %.2f)", fs[0].Score, tc.max)
			}
			// Health is claimed only when the alerted signal was seen.
			if wantHealthy := tc.max == 1; (fs[0].Category == catHealthy) != wantHealthy {
				t.Errorf("category %v, want healthy=%v", fs[0].Category, wantHealthy)
			}
		})
	}
}

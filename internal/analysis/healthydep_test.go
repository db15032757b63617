package analysis

import (
	"fmt"
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
)

// Calls to an in-cluster dependency that fail while the dependency's own
// signals are normal are the callers' configuration error, the calling
// workload its entity; a dependency whose own signals are abnormal, one
// without signals of its own, or a host outside the cluster stays the
// failing dependency.
func TestDependencyWithNormalSignals(t *testing.T) {
	base := time.Date(2027, 5, 6, 10, 0, 0, 0, time.UTC)
	timeout := `context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
	expired := `tls: failed to verify certificate: x509: certificate has expired or is not yet valid`
	callerLines := func(url string, why ...string) []LogLine {
		reason := timeout
		if len(why) > 0 {
			reason = why[0]
		}
		var out []LogLine
		for i := 0; i < 6; i++ {
			ts := base.Add(time.Duration(i) * time.Minute)
			out = append(out, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "cover", Service: "quote-api", Pod: "quote-api-84fd6b7c5d-sf772", Level: "ERROR",
				Message: fmt.Sprintf(`pricing call failed: Post "%s/price": %s`, url, reason)}})
		}
		return out
	}
	own := func(shape string, baseline, latest float64) Series {
		return Series{Series: facts.Series{Name: "http_server_request_duration_seconds_count", Labels: map[string]string{"service_name": "risk-pricer", "namespace": "cover"},
			Baseline: baseline, Latest: latest, Mean: (baseline + latest) / 2, Peak: max(baseline, latest), Shape: shape}}
	}
	tests := []struct {
		name    string
		url     string
		series  []Series
		wantCat investigationv1.RootCauseCategory
		wantEnt string
		why     string
	}{
		{"dependency's own signals normal", "http://risk-pricer.cover.svc.cluster.local:8080", []Series{own("flat", 20, 20)}, catConfig, "deployment/cover/quote-api", timeout},
		{"no signals of its own", "http://risk-pricer.cover.svc.cluster.local:8080", nil, catDependency, "service/cover/risk-pricer", timeout},
		{"a host outside the cluster", "https://api.riskgate.example", nil, catDependency, "host/api.riskgate.example", timeout},
		// Its certificate lapsed (a call that names its timeout, as an
		// admission webhook's does): a certificate issued inside the
		// cluster is configuration; a provider's outside it stays the
		// provider's.
		{"an expired certificate inside the cluster", "https://risk-pricer.cover.svc:8443/mutate?timeout=10s", nil, catConfig, "service/cover/risk-pricer", expired},
		{"an expired certificate outside the cluster", "https://api.riskgate.example/v2?timeout=10s", nil, catDependency, "host/api.riskgate.example", expired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "QuoteErrors", Namespace: "cover", Service: "quote-api"}, nil)
			ev.Logs = callerLines(tc.url, tc.why)
			ev.Series = tc.series
			var got *Finding
			for _, f := range detectDependencyFailure(ev) {
				if f.Mode == ModeDependencyFailure {
					f := f
					got = &f
				}
			}
			if got == nil {
				t.Fatal("no dependency finding")
			}
			if got.Category != tc.wantCat || got.Entity != tc.wantEnt {
				t.Errorf("%s on %s (%s), want %s on %s", got.Category, got.Entity, got.Statement, tc.wantCat, tc.wantEnt)
			}
		})
	}
	// Its own server errors rising: the dependency failed.
	ev := NewEvidence(&investigationv1.Alert{AlertName: "QuoteErrors", Namespace: "cover", Service: "quote-api"}, nil)
	ev.Logs = callerLines("http://risk-pricer.cover.svc.cluster.local:8080")
	ts := base.Add(2 * time.Minute)
	ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "cover", Service: "risk-pricer", Pod: "risk-pricer-5c7d9f8b6-q2wxz", Level: "ERROR", Message: "price model worker pool saturated, request dropped"}})
	ev.Series = []Series{own("flat", 20, 20)}
	if name, ok := ev.dependencyNormal("service/cover/risk-pricer", "risk-pricer.cover.svc.cluster.local:8080"); ok {
		t.Errorf("%s logs errors of its own, yet its signals read as normal", name)
	}
}

// A dependency in the cluster whose own state no listing read stays below
// the critic's bar, and its lead asks for its namespace's pods; once a pod
// of it is read, the cap and the call go.
func TestUnreadDependencyAsksForItsPods(t *testing.T) {
	base := time.Date(2027, 5, 6, 10, 0, 0, 0, time.UTC)
	mk := func(pods []Pod) (Finding, []FollowUp) {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "IntakeErrors", Namespace: "claims", Service: "intake-api"}, nil)
		for i := 0; i < 6; i++ {
			ts := base.Add(time.Duration(i) * time.Minute)
			ev.Logs = append(ev.Logs, LogLine{LogLine: facts.LogLine{Timestamp: &ts, Namespace: "claims", Service: "intake-api", Level: "ERROR",
				Message: `lookup call failed: Post "https://geo-lookup.shared-svc.svc:443/v1/find": connection refused`}})
		}
		ev.Pods = pods
		var got Finding
		for _, f := range detectDependencyFailure(ev) {
			if f.Mode == ModeDependencyFailure {
				got = f
			}
		}
		fus, _ := dependencyFollowUps(ev, got)
		return got, fus
	}
	listsPods := func(fus []FollowUp) bool {
		for _, fu := range fus {
			if fu.Intent == intent.ListPods && fu.Params["namespace"] == "shared-svc" {
				return true
			}
		}
		return false
	}
	f, fus := mk(nil)
	if f.Score > unreadDependencyScore || !listsPods(fus) {
		t.Errorf("unread dependency: score %.2f, follow-ups %v; want <= %.2f and its namespace's pods", f.Score, fus, unreadDependencyScore)
	}
	f, fus = mk([]Pod{{Pod: facts.Pod{Namespace: "shared-svc", Name: "geo-lookup-6b7c8d9f5-abcde", Workload: "geo-lookup", Phase: "Running", Ready: true}}})
	if listsPods(fus) {
		t.Errorf("its pods were read, yet the listing is asked again: %v", fus)
	}
	if f.Score <= unreadDependencyScore {
		t.Errorf("read dependency still capped at %.2f", f.Score)
	}
}

// A peer outside the cluster that answers another client while the
// callers fail is up: found from another source, at no error level, naming
// the host with an answered call, between the first failure and a while
// after the last; not from the failing source, not before the failures,
// not another host.
func TestServedOthers(t *testing.T) {
	base := time.Date(2026, 5, 2, 15, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := base.Add(time.Duration(m) * time.Minute); return &x }
	fail := func(m int) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at(m), Service: "quote", Level: "ERROR", Message: "POST https://api.courier.example/v3/quotes failed: certificate verify failed: certificate has expired"}}
	}
	failing := []LogLine{fail(0), fail(5), fail(10)}
	for _, tc := range []struct {
		name string
		line LogLine
		want bool
	}{
		{"another client served", LogLine{LogLine: facts.LogLine{Timestamp: at(20), Service: "labels", Level: "INFO", Message: "api.courier.example label created 200"}}, true},
		{"the failing service's own success", LogLine{LogLine: facts.LogLine{Timestamp: at(6), Service: "quote", Level: "INFO", Message: "api.courier.example ping ok"}}, false},
		{"served before the failures", LogLine{LogLine: facts.LogLine{Timestamp: at(-30), Service: "labels", Level: "INFO", Message: "api.courier.example label created 200"}}, false},
		{"another client failing too", LogLine{LogLine: facts.LogLine{Timestamp: at(7), Service: "labels", Level: "ERROR", Message: "api.courier.example label failed 503"}}, false},
		{"a proxy's tunnel for the same calls", LogLine{LogLine: facts.LogLine{Timestamp: at(7), Service: "egress-relay", Level: "INFO", Message: "CONNECT api.courier.example:443 200"}}, false},
		{"another host", LogLine{LogLine: facts.LogLine{Timestamp: at(7), Service: "labels", Level: "INFO", Message: "api.parcels.example label created 200"}}, false},
		// Another client that reconnected to the same host after its
		// failover is served by it; one that lost it is not.
		{"another client reconnected", LogLine{LogLine: facts.LogLine{Timestamp: at(8), Service: "labels", Level: "INFO", Message: "reconnected to api.courier.example (10.40.7.88)"}}, true},
		{"another client disconnected", LogLine{LogLine: facts.LogLine{Timestamp: at(8), Service: "labels", Level: "INFO", Message: "disconnected from api.courier.example"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "QuoteErrors"}, nil)
			ev.Logs = append(append([]LogLine{}, failing...), tc.line)
			if _, got := ev.servedOthers("api.courier.example", failing); got != tc.want {
				t.Fatalf("served others %v, want %v", got, tc.want)
			}
		})
	}
}

package critic

import (
	"testing"

	"github.com/rcamesh/rcamesh/internal/analysis"
	"github.com/rcamesh/rcamesh/internal/facts"
)

func TestTextSignals(t *testing.T) {
	for _, tc := range []struct {
		line    string
		root    string
		symptom string
	}{
		{line: "no healthy upstream", symptom: kindConnection},
		{line: "write /data/x: no space left on device", root: kindDisk},
		{line: "dial tcp: lookup orders-db on 10.0.0.10:53: no such host", root: kindDNS},
		{line: "No OOM kills found in the window"},
		{line: "0 errors in 1h"},
		{line: "java.lang.OutOfMemoryError: Java heap space", root: kindOOM},
		{line: "Error: environment variable DATABASE_URL is not set", root: kindConfig},
		{line: "HTTP 503 Service Unavailable from checkout", symptom: kindHTTP5xx},
	} {
		pr := &profile{roots: map[string]string{}, symptoms: map[string]string{}, refs: map[string][]string{}}
		pr.scanText(tc.line, false)
		if tc.root != "" && pr.roots[tc.root] == "" {
			t.Errorf("%q: no root %s (roots %v)", tc.line, tc.root, pr.roots)
		}
		if tc.symptom != "" && pr.symptoms[tc.symptom] == "" {
			t.Errorf("%q: no symptom %s (symptoms %v)", tc.line, tc.symptom, pr.symptoms)
		}
		if tc.root == "" && tc.symptom == "" && (len(pr.roots) > 0 || len(pr.symptoms) > 0) {
			t.Errorf("%q: negated line classified: %v %v", tc.line, pr.roots, pr.symptoms)
		}
	}
}

// The critic reads a line's failure with the detectors' own phrases: a
// line a detector reads as DNS, a certificate, a full disk, a code defect
// or a configuration error is the same kind for the critic.
func TestTextSignalsShareTheDetectorsPhrases(t *testing.T) {
	for _, tc := range []struct {
		line, phrase, root string
	}{
		{"getaddrinfo ENOTFOUND payments.internal", analysis.PhraseDNS, kindDNS},
		{"lookup db on 10.0.0.10:53: temporary failure in name resolution", analysis.PhraseDNS, kindDNS},
		{"tls: expired certificate", analysis.PhraseCert, kindCert},
		{"write failed: ENOSPC", analysis.PhraseDisk, kindDisk},
		{"panic: runtime error: index out of range [3] with length 3", analysis.PhraseCode, kindCode},
	} {
		if !analysis.FailurePhrase(tc.phrase, tc.line) {
			t.Fatalf("%q is not a %s phrase for the detectors", tc.line, tc.phrase)
		}
		pr := &profile{roots: map[string]string{}, symptoms: map[string]string{}, refs: map[string][]string{}}
		pr.scanText(tc.line, false)
		if pr.roots[tc.root] == "" {
			t.Errorf("%q: the detectors read %s, the critic found roots %v", tc.line, tc.phrase, pr.roots)
		}
	}
}

func TestDownstreamNames(t *testing.T) {
	pr := &profile{downstream: map[string]string{}}
	for _, l := range []string{
		"dial tcp ledger.shop.svc.cluster.local:8080: connect: connection refused",
		"upstream=inventory request failed: timeout",
		"GET http://10.1.2.3:8080/health failed",
	} {
		pr.scanDownstream(l)
	}
	for _, want := range []string{"ledger", "inventory"} {
		if pr.downstream[want] == "" {
			t.Errorf("downstream %v lacks %s", pr.downstream, want)
		}
	}
	if _, ok := pr.downstream["10.1.2.3"]; ok {
		t.Error("IP addresses are not dependency names")
	}
}

func TestWorkloadOf(t *testing.T) {
	for _, tc := range []struct {
		pod  facts.Pod
		want string
	}{
		{facts.Pod{Name: "x", Workload: "api"}, "api"},
		{facts.Pod{Name: "api-7d9f8b6c5-x2x1z", OwnerKind: "ReplicaSet", OwnerName: "api-7d9f8b6c5"}, "api"},
		{facts.Pod{Name: "api-7d9f8b6c5-x2x1z"}, "api"},
		{facts.Pod{Name: "db-0", OwnerKind: "StatefulSet", OwnerName: "db"}, "db"},
	} {
		if got := workloadOf(tc.pod); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.pod, got, tc.want)
		}
	}
}

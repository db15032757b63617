package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Bound settings at a "never"/"nothing" value are quoted, in any of the
// shapes configuration takes (a properties line, YAML, an env var, a -D
// flag); other settings, and values that bound something, are not.
func TestExtremeSettings(t *testing.T) {
	ev := NewEvidence(nil, nil)
	ev.Resources = []Resource{{Resource: facts.Resource{Kind: "ConfigMap", Namespace: "tram", Name: "java-security", Data: map[string]string{
		"java.security": "jdk.tls.disabledAlgorithms=SSLv3\nnetworkaddress.cache.ttl=-1\n# networkaddress.cache.negative.ttl=0\n",
		"auth.yaml":     "jwks:\n  url: https://id.example/jwks.json\n  cache_ttl: 0   # forever\n  verbose: false\n",
		"POOL_MAX":      "20",
	}}, Cite: Cite{PinIDs: []string{"pin_cm"}}}}
	ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "tram", Name: "menu-1", Workload: "menu", Containers: []facts.Container{{Name: "app",
		Settings: []string{"env JAVA_OPTS=-Dsun.net.inetaddr.ttl=-1 -Xmx768m", "env DEBUG=false", "env DB_TIMEOUT_MS=5000"}}}}, Cite: Cite{PinIDs: []string{"pin_p"}}}}
	var got []string
	for _, st := range ev.extremeSettings("") {
		got = append(got, st.text)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"networkaddress.cache.ttl=-1", "cache_ttl=0", "sun.net.inetaddr.ttl=-1"} {
		if !strings.Contains(all, want) {
			t.Errorf("settings %q: %s missing", got, want)
		}
	}
	for _, not := range []string{"verbose", "DEBUG", "POOL_MAX", "DB_TIMEOUT_MS", "negative.ttl", "SSLv3"} {
		if strings.Contains(all, not) {
			t.Errorf("settings %q: %s quoted", got, not)
		}
	}
	// A setting the diagnosis already names is not repeated.
	for _, st := range ev.extremeSettings("the jvm caches it: networkaddress.cache.ttl is -1") {
		if strings.Contains(st.text, "networkaddress.cache.ttl") {
			t.Errorf("quoted again: %s", st.text)
		}
	}
}

// Evidence read in full that shows no failure anywhere is "no fault found",
// left for review at a low confidence; a tool that failed, or one failing
// line, keeps it undetermined.
func TestNothingFoundIsNoFaultForReview(t *testing.T) {
	build := func() *Evidence {
		ev := NewEvidence(nil, nil)
		ev.Sources = map[string]bool{"k8s": true, "logs": true}
		ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "law", Name: "search-0", Phase: "Running", Ready: true}}}
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Level: "INFO", Service: "search", Message: "weekly reindex started (by design, runs 4h)"}}}
		return ev
	}
	if what, ok := build().nothingFound(); !ok || !strings.Contains(what, "1 pod") {
		t.Errorf("clean evidence: %q %v, want no fault found", what, ok)
	}
	failed := build()
	failed.Failed = map[string][]string{"query_prometheus": {"timeout"}}
	if _, ok := failed.nothingFound(); ok {
		t.Error("a tool that failed was read as nothing found")
	}
	erroring := build()
	erroring.Logs = append(erroring.Logs, LogLine{LogLine: facts.LogLine{Level: "ERROR", Service: "search", Message: "shard allocation failed: disk watermark exceeded"}})
	if _, ok := erroring.nothingFound(); ok {
		t.Error("a failing line was read as nothing found")
	}
	if _, ok := NewEvidence(nil, nil).nothingFound(); ok {
		t.Error("nothing read was read as nothing found")
	}
}

// A node that rebooted (a reboot daemon's drain and restart) and is Ready
// again, its pods running, is a recovered flap, as one that went NotReady
// briefly is; while it is still NotReady it is not.
func TestRebootedNodeBackIsAFlap(t *testing.T) {
	at := func(m int) *time.Time { x := time.Date(2026, 10, 20, 2, m, 0, 0, time.UTC); return &x }
	build := func(ready string) *Evidence {
		ev := NewEvidence(nil, nil)
		ev.Events = []Event{{Event: facts.Event{Type: "Warning", Reason: "Rebooted", InvolvedKind: "Node", InvolvedName: "pen-2", Message: "Node pen-2 has been rebooted, boot id: 85e6", FirstSeen: at(9), LastSeen: at(9)}}}
		ev.Nodes = []Node{{Node: facts.Node{Name: "pen-2", Conditions: []facts.Condition{{Type: "Ready", Status: ready}}}}}
		ev.Pods = []Pod{{Pod: facts.Pod{Namespace: "farm", Name: "feeder-1", Node: "pen-2", Phase: "Running", Ready: true}}}
		return ev
	}
	fs := detectNodeFlap(build("True"))
	if len(fs) != 1 || !fs[0].Healthy || !strings.Contains(fs[0].Statement, "rebooted") {
		t.Fatalf("rebooted and back: %+v", fs)
	}
	if fs := detectNodeFlap(build("False")); len(fs) != 0 {
		t.Errorf("a node still NotReady after its reboot was read as recovered: %s", fs[0].Statement)
	}
	if got := (Result{ev: build("True")}).SuspectNodes(); len(got) != 1 || got[0] != "pen-2" {
		t.Errorf("suspect nodes %v, want the rebooted node", got)
	}
}

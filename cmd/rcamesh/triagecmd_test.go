package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTriageExample runs the README's third command on the bundled example.
func TestTriageExample(t *testing.T) {
	const sarif, repoDir = "../../examples/sast-demo/findings.sarif", "../../examples/sast-demo"
	var md bytes.Buffer
	if err := triageCmd(context.Background(), []string{"-sarif", sarif, "-repo", repoDir}, &md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "12 findings: 5 TRUE_POSITIVE, 5 FALSE_POSITIVE, 2 NEEDS_REVIEW") {
		t.Errorf("summary:\n%s", md.String()[:min(400, md.Len())])
	}
	var js bytes.Buffer
	if err := triageCmd(context.Background(), []string{"-sarif", sarif, "-repo", repoDir, "-format", "json"}, &js); err != nil {
		t.Fatal(err)
	}
	var rs []struct {
		Verdict string
		Finding struct{ File string }
		Error   string
	}
	if err := json.Unmarshal(js.Bytes(), &rs); err != nil {
		t.Fatal(err)
	}
	want := []string{"TRUE_POSITIVE", "FALSE_POSITIVE", "FALSE_POSITIVE", "TRUE_POSITIVE", "TRUE_POSITIVE", "FALSE_POSITIVE", "TRUE_POSITIVE", "FALSE_POSITIVE", "TRUE_POSITIVE", "FALSE_POSITIVE", "NEEDS_REVIEW", "NEEDS_REVIEW"}
	for i, w := range want {
		if rs[i].Verdict != w {
			t.Errorf("finding %d (%s): %s, want %s", i+1, rs[i].Finding.File, rs[i].Verdict, w)
		}
	}
	var sf bytes.Buffer
	if err := triageCmd(context.Background(), []string{"-sarif", sarif, "-repo", repoDir, "-format", "sarif"}, &sf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sf.String(), `"suppressions"`) || !strings.Contains(sf.String(), `"rcamesh/verdict"`) {
		t.Error("SARIF output lacks suppressions or verdict properties")
	}
	for _, bad := range [][]string{{"-repo", repoDir}, {"-sarif", sarif, "-repo", repoDir, "-format", "xml"}} {
		if err := triageCmd(context.Background(), bad, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
	if err := triageCmd(context.Background(), []string{"-sarif", sarif, "-repo", repoDir, "-allowed-root", t.TempDir()}, &bytes.Buffer{}); err == nil {
		t.Error("a repository outside -allowed-root: want an error")
	}
}

// TestTriageSplit runs the triage service and the critic in two processes:
// every verdict of POST /api/v4/findings is judged by the other process's
// critic over gRPC (the triage process runs no critic), which re-reads the
// cited code under its own -critic.code-root.
func TestTriageSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary twice")
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	natsAddr := freeAddr(t)
	aHTTP, aGRPC := freeAddr(t), freeAddr(t)
	bHTTP, bGRPC := freeAddr(t), freeAddr(t)
	key, _, _ := meshSecrets(t)
	startBinary(t, aHTTP, "-target=router,brain,delivery,triage", "-data.dir="+t.TempDir(), "-nats.listen="+natsAddr,
		"-mesh.key-file="+key, "-http.addr="+aHTTP, "-grpc.addr="+aGRPC, "-tools.addr="+bGRPC, "-critic.addr="+bGRPC,
		"-triage.code-root="+examples)
	startBinary(t, bHTTP, "-target=tools,critic", "-nats.url=nats://"+natsAddr, "-mesh.key-file="+key,
		"-http.addr="+bHTTP, "-grpc.addr="+bGRPC, "-brain.addr="+aGRPC, "-router.addr="+aGRPC, "-delivery.addr="+aGRPC,
		"-critic.code-root="+examples)
	doc, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"repo": "sast-demo", "session_id": "split-triage", "sarif": json.RawMessage(doc)})
	code, resp := postJSON(t, "http://"+aHTTP+"/api/v4/findings", string(body))
	if code != 200 {
		t.Fatalf("findings: %d %v", code, resp)
	}
	results, _ := resp["results"].([]any)
	passed, failed := 0, 0
	for _, r := range results {
		m, _ := r.(map[string]any)
		if e, _ := m["error"].(string); e != "" {
			failed++ // the example's bad locations (a missing file, a path outside)
		}
		if m["stop_reason"] == "evaluator_passed" {
			passed++
		}
	}
	if len(results) != 12 || passed != 10 || failed != 2 || resp["true_positives"] != float64(5) || resp["false_positives"] != float64(5) {
		t.Fatalf("%d results, %d passed by the critic, TP %v FP %v", len(results), passed, resp["true_positives"], resp["false_positives"])
	}
}

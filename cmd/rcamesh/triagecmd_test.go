package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

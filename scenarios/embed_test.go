package scenarios

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExtractDemo(t *testing.T) {
	dir, err := Extract(Demo, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"alert.json", "answer.yml", "prometheus.json", "k8s/objects.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("extracted demo lacks %s: %v", f, err)
		}
	}
	if _, err := Extract("no-such-scenario", t.TempDir()); err == nil {
		t.Fatal("unknown scenario must be an error")
	}
}

package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseCannotEscapeTheSuite: `base:` names a sibling folder of the same
// suite; "..", ".", paths and symbolic links that lead outside are refused
// and nothing from outside is read.
func TestBaseCannotEscapeTheSuite(t *testing.T) {
	root := t.TempDir()
	secret := `{"pods":[{"name":"outside-the-suite"}]}`
	write(t, root, map[string]string{"eks_pods.json": secret}) // the suite's parent
	write(t, filepath.Join(root, "outside"), map[string]string{"alert.json": alertJSON, "eks_pods.json": secret})
	suite := filepath.Join(root, "suite")
	write(t, filepath.Join(suite, "sibling"), map[string]string{"alert.json": alertJSON, "eks_events.json": `{"warning_events":[]}`})
	write(t, suite, map[string]string{"eks_pods.json": secret}) // the suite folder itself is no scenario
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(suite, "link-out")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	if err := os.Symlink(filepath.Join(suite, "sibling"), filepath.Join(suite, "link-in")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		base    string
		ok      bool
		mention string
	}{
		{"..", false, "sibling"},
		{".", false, "sibling"},
		{"../outside", false, "sibling"},
		{"..\\outside", false, "sibling"},
		{"sibling/..", false, "sibling"},
		{filepath.Join(root, "outside"), false, "sibling"},
		{"link-out", false, "outside the suite"},
		{"sibling", true, ""},
		{"link-in", true, ""},
	}
	for _, tt := range tests {
		dir := filepath.Join(suite, "s")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		write(t, dir, map[string]string{"alert.json": alertJSON, "scenario.yml": "base: '" + tt.base + "'\n"})
		sc, err := Load(dir)
		if !tt.ok {
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("base %q: Load = %v, want an error mentioning %q", tt.base, err, tt.mention)
			}
			continue
		}
		if err != nil {
			t.Errorf("base %q: %v", tt.base, err)
			continue
		}
		if _, ok := sc.Evidence["eks_events"]; !ok {
			t.Errorf("base %q: sibling evidence not inherited: %v", tt.base, sc.Sources())
		}
		if strings.Contains(string(sc.Evidence["eks_pods"]), "outside-the-suite") {
			t.Errorf("base %q: read evidence from outside the suite", tt.base)
		}
	}
}

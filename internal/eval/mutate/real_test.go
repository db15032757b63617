package mutate

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/eval/benchdata"
	"github.com/rcamesh/rcamesh/internal/intake"
)

// TestOpensreScenarioRewrite rewrites real suite scenarios and checks that
// no entity name survives in the answer's keywords.
func TestOpensreScenarioRewrite(t *testing.T) {
	root := benchdata.Dir(t, "opensre-synthetic")
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "0*"))
	if len(dirs) == 0 {
		t.Fatalf("no scenario under %s", root)
	}
	for _, d := range dirs {
		dst := t.TempDir()
		mapping, err := Scenario(d, dst, DefaultOptions(7))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(mapping) == 0 {
			t.Errorf("%s: nothing renamed", d)
		}
		ans, err := os.ReadFile(filepath.Join(dst, "answer.yml"))
		if err != nil {
			t.Fatal(err)
		}
		for old := range mapping {
			if len(old) > 6 && strings.Contains(string(ans), old) {
				t.Errorf("%s: answer still names %q", filepath.Base(d), old)
			}
		}
	}
}

// TestRedeliverRealAlerts re-delivers every alert of our corpus and held-out
// scenarios (and of the opensre suite when present) in each format: the
// intake must read the same name, severity and labels back (PagerDuty: the
// title and severity; its labels live in text).
func TestRedeliverRealAlerts(t *testing.T) {
	var files []string
	for _, g := range []string{"../../../scenarios/corpus/*/alert.json", "../../../scenarios/heldout/*/alert.json"} {
		fs, _ := filepath.Glob(g)
		files = append(files, fs...)
	}
	if root, ok := benchdata.Lookup("opensre-synthetic"); ok {
		fs, _ := filepath.Glob(filepath.Join(root, "*", "*", "alert.json"))
		files = append(files, fs...)
	}
	if len(files) == 0 {
		t.Fatal("no alert found")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(f))
		origs, err := intake.Parse(raw, "")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		orig := origs[0]
		for _, format := range []string{FormatAlertmanager, FormatGrafana, FormatPagerDuty} {
			out, err := Redeliver(raw, format)
			if err != nil {
				t.Errorf("%s as %s: %v", name, format, err)
				continue
			}
			as, err := intake.Parse(out, "")
			if err != nil || len(as) == 0 {
				t.Errorf("%s as %s: the intake cannot read it back: %v", name, format, err)
				continue
			}
			if len(as) != len(origs) && format != FormatPagerDuty {
				t.Errorf("%s as %s: %d alerts, want %d", name, format, len(as), len(origs))
			}
			a := as[0]
			if a.GetSeverity() != orig.GetSeverity() || a.GetResolved() != orig.GetResolved() || a.GetIsNoise() != orig.GetIsNoise() {
				t.Errorf("%s as %s: severity/resolved/noise %q/%v/%v, want %q/%v/%v", name, format,
					a.GetSeverity(), a.GetResolved(), a.GetIsNoise(), orig.GetSeverity(), orig.GetResolved(), orig.GetIsNoise())
			}
			if format == FormatPagerDuty {
				if a.GetTitle() != orig.GetTitle() {
					t.Errorf("%s as %s: title %q, want %q", name, format, a.GetTitle(), orig.GetTitle())
				}
				continue
			}
			want := maps.Clone(orig.GetLabels())
			if orig.GetFormat().String() == "ALERT_FORMAT_PAGERDUTY" {
				delete(want, "priority")
			}
			want["alertname"] = orig.GetAlertName()
			if orig.GetSeverity() != "" {
				if _, ok := want["severity"]; !ok {
					want["severity"] = orig.GetSeverity()
				}
			}
			got := maps.Clone(a.GetLabels())
			for k, v := range got {
				if _, ok := want[k]; !ok && (v == orig.GetNamespace() || v == orig.GetService() || v == orig.GetPod() || v == orig.GetCluster() || v == orig.GetResourceName() || v == orig.GetResourceKind()) {
					delete(got, k) // a generic alert's top-level target field, now a label
				}
			}
			if a.GetAlertName() != orig.GetAlertName() || a.GetTitle() != orig.GetTitle() || !maps.Equal(got, want) {
				t.Errorf("%s as %s: name/title %q/%q labels %v; want %q/%q %v", name, format, a.GetAlertName(), a.GetTitle(), got,
					orig.GetAlertName(), orig.GetTitle(), want)
			}
			if a.GetNamespace() != orig.GetNamespace() || a.GetService() != orig.GetService() || a.GetPod() != orig.GetPod() {
				t.Errorf("%s as %s: namespace/service/pod %q/%q/%q, want %q/%q/%q", name, format,
					a.GetNamespace(), a.GetService(), a.GetPod(), orig.GetNamespace(), orig.GetService(), orig.GetPod())
			}
		}
	}
}

package intake

import (
	"testing"
)

// Label pairs written as text are read as labels; any other text is not.
func TestTextPairs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"cluster: fire-staging", map[string]string{"cluster": "fire-staging"}},
		{"env=prod, region=eu-west-1", map[string]string{"env": "prod", "region": "eu-west-1"}},
		{"Cluster: prod-eu; Team: kiln", map[string]string{"cluster": "prod-eu", "team": "kiln"}},
		{"error: disk full on /var", nil},
		{"Helm upgrade failed for release lookout/x: context deadline exceeded", nil},
		{"", nil},
	} {
		got, ok := textPairs(tc.in)
		if ok != (tc.want != nil) || len(got) != len(tc.want) {
			t.Errorf("textPairs(%q) = %v %v, want %v", tc.in, got, ok, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("textPairs(%q)[%s] = %q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}

// An event whose metadata carries the cluster as text (a Flux
// notification's summary) names that cluster; its secrets stay redacted.
func TestMetadataPairsNameTheCluster(t *testing.T) {
	as, err := Parse([]byte(`{"involvedObject":{"kind":"HelmRelease","namespace":"kiosk","name":"menu-canary"},
		"severity":"error","timestamp":"2026-06-24T13:01:00Z","reason":"UpgradeFailed",
		"message":"Helm upgrade failed for release kiosk/menu-canary: timed out waiting for the condition",
		"metadata":{"revision":"2.0.0-rc.1","summary":"cluster: orchard-stage","token":"s3cr3t-token-value"}}`), "")
	if err != nil || len(as) != 1 {
		t.Fatalf("parse: %v %d", err, len(as))
	}
	a := as[0]
	if a.GetCluster() != "orchard-stage" || a.GetLabels()["cluster"] != "orchard-stage" {
		t.Errorf("cluster %q labels %v, want orchard-stage", a.GetCluster(), a.GetLabels())
	}
	if a.GetAnnotations()["metadata.revision"] != "2.0.0-rc.1" {
		t.Errorf("annotations %v: metadata revision missing", a.GetAnnotations())
	}
	for k, v := range a.GetAnnotations() {
		if v == "s3cr3t-token-value" {
			t.Errorf("annotation %s carries the token", k)
		}
	}
}

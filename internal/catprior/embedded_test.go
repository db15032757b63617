package catprior

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const scenarioRoot = "../../scenarios"

// The embedded model is what `rcamesh prior` writes from the sets it names:
// anyone can rebuild it, and nobody can change it by hand.
func TestEmbeddedIsCurrent(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sets) == 0 || m.Incidents() < 100 {
		t.Fatalf("embedded model too small: %d sets, %d incidents", len(m.Sets), m.Incidents())
	}
	again, err := Train(scenarioRoot, m.Sets)
	if err != nil {
		t.Fatal(err)
	}
	b, err := again.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, embedded) {
		t.Fatalf("internal/catprior/model.json.gz is stale: rerun `rcamesh prior -sets %s -out internal/catprior/model.json.gz`", strings.Join(m.Sets, ","))
	}
}

// Left out one set at a time, the model reads the fault category of the
// set's incidents far above chance (1 in 6) and above always answering
// the commonest category, and calls almost no fault healthy: it learned
// words of failure kinds, not of the incidents it saw.
func TestLeaveOneSetOut(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every scenario set")
	}
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	right, total := 0, 0
	commonest := make([]int, len(Categories))
	healthy, healthyRead, faultsReadHealthy := 0, 0, 0
	for _, set := range m.Sets {
		w := m.Without(set)
		entries, err := os.ReadDir(filepath.Join(scenarioRoot, set))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			dir := filepath.Join(scenarioRoot, set, e.Name())
			label, err := Label(dir)
			if err != nil || label != Healthy && !slices.Contains(Categories, label) {
				continue
			}
			doc, err := DocumentOf(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := w.Score(doc)
			if label == Healthy {
				healthy++
				if r.Healthy > 0 {
					healthyRead++
				}
				continue
			}
			if r.Healthy > 0 {
				faultsReadHealthy++
			}
			total++
			commonest[slices.Index(Categories, label)]++
			if len(r.Scores) > 0 && r.Scores[0].Category == label {
				right++
			}
		}
	}
	base := slices.Max(commonest)
	t.Logf("leave-one-set-out: %d of %d fault categories (commonest category alone: %d)", right, total, base)
	if total == 0 || float64(right) < 1.4*float64(base) {
		t.Fatalf("leave-one-set-out: %d of %d, not clearly above the commonest category's %d", right, total, base)
	}
	// Health against faults at the model's own boundary (log-odds 0, what
	// the analysis uses when no detector established a failure): some
	// no-action incidents read so, almost no fault does.
	t.Logf("leave-one-set-out: %d of %d no-action incidents read as such, %d of %d faults", healthyRead, healthy, faultsReadHealthy, total)
	if healthyRead*20 < healthy || faultsReadHealthy*200 > total {
		t.Fatalf("health read: %d of %d no-action incidents, %d of %d faults (want at least 5%% and at most 0.5%%)", healthyRead, healthy, faultsReadHealthy, total)
	}
}

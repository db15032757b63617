package router

import (
	"testing"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// An alert whose wording names no known signal (a business KPI) on a known
// workload still gathers every kind of evidence; without a scope there is
// no sweep, and a specific reason always outranks the floor.
func TestPlanBaselineSweep(t *testing.T) {
	reg := NewRegistry(testRegistry())
	vague := &investigationv1.Alert{AlertName: "OrdersBelowForecast", Summary: "orders per minute below forecast", Namespace: "shop", Service: "checkout"}
	p, _, err := Plan(reg, vague, 10)
	if err != nil {
		t.Fatal(err)
	}
	for intent := range baselineSweep {
		if _, ok := reg.Tool(intent); !ok {
			continue // not in the test registry
		}
		a, _ := actionOf(p, intent)
		if a == nil {
			t.Errorf("%s not planned for a scoped alert with no recognised signal (plan: %s)", intent, p.GetRationale())
		}
	}
	unscoped := &investigationv1.Alert{AlertName: "OrdersBelowForecast", Summary: "orders per minute below forecast"}
	p, _, _ = Plan(reg, unscoped, 10)
	for _, a := range p.GetActions() {
		if a.GetScore() == baselineScore {
			t.Errorf("%s planned by the baseline sweep without a scope", a.GetIntent())
		}
	}
	crash := &investigationv1.Alert{AlertName: "KubePodCrashLooping", Summary: "pod is crash looping", Namespace: "shop", Service: "checkout"}
	p, _, _ = Plan(reg, crash, 10)
	if first := p.GetActions()[0]; first.GetScore() <= baselineScore {
		t.Errorf("first action %s scored %v: a specific reason must outrank the sweep", first.GetIntent(), first.GetScore())
	}
}

package critic

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unique"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// TestPoolIndexMatchesScan holds the pool's index to what a walk of every
// pin of the pool gives (the way judge read the pool before the index), over
// random sequences of pins added and versions replacing each other
// (validated, rejected, pending again, in and out of arrival order).
func TestPoolIndexMatchesScan(t *testing.T) {
	tools := []string{"", "check_pod_status", "get_logs", "get_metrics"}
	names := []string{"api", "db", "cache", "web", "queue"}
	statuses := []evidencev1.ValidationStatus{
		evidencev1.ValidationStatus_VALIDATION_STATUS_UNSPECIFIED,
		statusValidated, statusValidated, statusRejected,
	}
	roots := []string{"", kindCrash, kindOOM, kindConfig}
	for run := range 40 {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		randProfile := func(id string) *profile {
			tool := tools[rng.IntN(len(tools))]
			pr := &profile{pinID: id, tool: tool, toolID: unique.Make(tool), roots: map[string]string{}, names: map[string]bool{}}
			switch rng.IntN(3) {
			case 0:
				pr.failing = true
				if k := roots[rng.IntN(len(roots))]; k != "" {
					pr.roots[k] = k + " seen"
				}
				if rng.IntN(4) > 0 {
					pr.onset = tp(t0.Add(time.Duration(rng.IntN(20)) * time.Minute))
				}
			case 1:
				pr.healthy = true
			}
			for _, n := range names {
				if rng.IntN(3) == 0 {
					pr.names[n] = true
				}
			}
			return pr
		}
		pin := func(id string, version int64) *evidencev1.EvidencePin {
			return &evidencev1.EvidencePin{Id: id, Version: version, ValidationStatus: statuses[rng.IntN(len(statuses))]}
		}
		sp := newSessionPool()
		for op := range 300 {
			if len(sp.order) == 0 || rng.IntN(3) == 0 {
				id := fmt.Sprintf("p%d", op)
				sp.add(newEntry(pin(id, 1), randProfile(id)))
			} else {
				e := sp.order[rng.IntN(len(sp.order))]
				sp.replace(e, pin(e.pin.GetId(), e.pin.GetVersion()+1))
			}
			checkIndex(t, run, op, sp)
			q := randProfile("query")
			var self *entry
			if rng.IntN(2) == 0 {
				self = sp.order[rng.IntN(len(sp.order))]
				q = self.prof
			}
			if got, want := sp.supports(q, self), supportsByScan(sp, q, self); !slices.Equal(got, want) {
				t.Fatalf("run %d op %d: supports %v, a walk of the pool gives %v", run, op, got, want)
			}
		}
	}
}

func checkIndex(t *testing.T, run, op int, sp *sessionPool) {
	t.Helper()
	var validated, deep []*entry
	byTool := map[unique.Handle[string]][]*entry{}
	var onset *time.Time
	for _, e := range sp.order {
		if e.prof.failing && e.pin.GetValidationStatus() != statusRejected && e.prof.onset != nil &&
			(onset == nil || e.prof.onset.Before(*onset)) {
			onset = e.prof.onset
		}
		if e.pin.GetValidationStatus() != statusValidated {
			continue
		}
		validated = append(validated, e)
		byTool[e.prof.toolID] = append(byTool[e.prof.toolID], e)
		if hasDeepRoot(e.prof) {
			deep = append(deep, e)
		}
	}
	if !slices.Equal(sp.idx.validated, validated) {
		t.Fatalf("run %d op %d: %d validated entries indexed, %d in the pool", run, op, len(sp.idx.validated), len(validated))
	}
	if !slices.Equal(sp.idx.deep, deep) {
		t.Fatalf("run %d op %d: %d entries with a deep root indexed, %d in the pool", run, op, len(sp.idx.deep), len(deep))
	}
	for tool, list := range sp.idx.byTool {
		if !slices.Equal(list, byTool[tool]) {
			t.Fatalf("run %d op %d: tool %q: %d entries indexed, %d in the pool", run, op, tool.Value(), len(list), len(byTool[tool]))
		}
	}
	for tool, list := range byTool {
		if !slices.Equal(sp.idx.byTool[tool], list) {
			t.Fatalf("run %d op %d: tool %q not indexed", run, op, tool.Value())
		}
	}
	got := sp.earliestOnset()
	if (got == nil) != (onset == nil) || got != nil && !got.Equal(*onset) {
		t.Fatalf("run %d op %d: earliest onset %v, the pool's is %v", run, op, got, onset)
	}
}

// supportsByScan is how judge found supports before the index: a walk of
// the pool's validated pins in arrival order.
func supportsByScan(sp *sessionPool, prof *profile, self *entry) []string {
	var supports []string
	for _, e := range sp.order {
		if e == self || e.pin.GetValidationStatus() != statusValidated {
			continue
		}
		if len(supports) >= 10 {
			break
		}
		if e.prof.toolID == prof.toolID && prof.tool != "" {
			continue
		}
		same := prof.failing && e.prof.failing || prof.healthy && e.prof.healthy && !e.prof.failing
		if same && overlaps(prof.names, e.prof.names) {
			supports = append(supports, e.pin.GetId())
		}
	}
	return supports
}

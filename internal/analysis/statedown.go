package analysis

import (
	"net/url"
	"strings"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/target"
)

// ---- a state gauge that went from 1 to 0 ----

// stateDownHold: the last points of a state gauge that read 0 before it
// counts as down (one scrape of 0 is a blip).
const stateDownHold = 2

// stateDown: a gauge that only ever reads 0 or 1 (a state: a link up, a
// clock synchronised, a battery's check passing, a target scraped, a
// condition true) read 1 at the start of its window and 0 at its end for
// at least stateDownHold points. Whatever the gauge names, 1 is the state
// it was built to report and 0 its loss: the thing it watches went down
// and has not come back.
func stateDown(s facts.Series) bool {
	pts := s.Downsampled
	if len(pts) < 4 || isCounterName(strings.ToLower(s.Name)) {
		return false
	}
	for _, p := range pts {
		if p.V != 0 && p.V != 1 {
			return false
		}
	}
	if pts[0].V != 1 || pts[1].V != 1 {
		return false
	}
	for _, p := range pts[len(pts)-stateDownHold:] {
		if p.V != 0 {
			return false
		}
	}
	return true
}

// machineState: a state gauge of a machine, a device or a link (no label
// of a workload, by the label vocabulary's kinds; not a probe of an
// address, which measures the far end's reachability from here).
func machineState(s facts.Series) bool {
	for k, v := range s.Labels {
		if v == "" {
			continue
		}
		switch target.KindOf(k) {
		case target.Service, target.Deployment, target.StatefulSet, target.DaemonSet, target.Pod, target.Container, target.Job, target.CronJob:
			return false
		}
		if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
			return false
		}
	}
	return true
}

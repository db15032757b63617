package analysis

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// A free-capacity measure (free bytes, available inodes, remaining
// balance) that keeps falling at the end of the window runs out at its
// recent rate: how SREs forecast a disk (predict_linear). The forecast
// uses the last third of the window, so a fall that stopped (a one-off
// import that ended) forecasts nothing.

// runOutHorizon: a resource that runs out within this long at its recent
// rate is being exhausted now.
const runOutHorizon = 24 * time.Hour

// minRunOutFall: the measure fell at least this share of its first value
// over the window (a real decline, not noise around a level).
const minRunOutFall = 0.25

// runOut is how long series s, a free-capacity measure, lasts at the rate
// it fell over the last third of its samples; ok only when it keeps
// falling, fell at least minRunOutFall over the window and runs out within
// runOutHorizon.
func runOut(s Series) (time.Duration, bool) {
	if !freeCapacityName(s.Name) || isCounterName(strings.ToLower(s.Name)) {
		return 0, false
	}
	pts := s.Downsampled
	if len(pts) < 6 {
		return 0, false
	}
	first, last := pts[0], pts[len(pts)-1]
	if first.V <= 0 || last.V <= 0 || math.IsNaN(last.V) || first.V-last.V < minRunOutFall*first.V {
		return 0, false
	}
	tail := pts[len(pts)-len(pts)/3-1:]
	a, b := tail[0], tail[len(tail)-1]
	dt := b.T.Sub(a.T)
	if dt <= 0 || b.V >= a.V {
		return 0, false // no longer falling
	}
	rate := (a.V - b.V) / dt.Seconds() // per second
	left := time.Duration(last.V / rate * float64(time.Second))
	if left <= 0 || left > runOutHorizon {
		return 0, false
	}
	return left, true
}

// freeCapacityName: the series measures what is left of a resource.
func freeCapacityName(name string) bool { return containsFold(name, leftWords...) }

// runningOut is the free-capacity series in evidence that runs out soonest
// at its recent rate, with the forecast's text.
func (ev *Evidence) runningOut() (Series, string, bool) {
	var best Series
	var bestLeft time.Duration
	found := false
	for _, s := range ev.Series {
		if left, ok := runOut(s); ok && (!found || left < bestLeft) {
			best, bestLeft, found = s, left, true
		}
	}
	if !found {
		return Series{}, "", false
	}
	pts := best.Downsampled
	return best, fmt.Sprintf("%s%s fell from %s to %s and, at its rate over the last part of the window, runs out in about %s",
		best.Name, seriesSelector(best.Series), num(pts[0].V), num(pts[len(pts)-1].V), durHuman(bestLeft)), true
}

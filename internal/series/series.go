// Package series summarises a time series into facts.Series: statistics, a
// robust baseline, anomalous points, a short downsampled copy and the shape of
// the change with its onset. Everything here is a pure function.
//
// Shapes (facts.Series.Shape):
//
//	flat       no significant change against the baseline
//	step       abrupt sustained rise that has not returned
//	drop       abrupt sustained fall that has not returned
//	creep      gradual sustained trend (either direction: compare Latest with Baseline)
//	spike      brief excursion (either direction) already back near the baseline
//	recovered  sustained excursion (either direction) already back near the baseline
//
// Method: two models are fitted by least squares, three constant levels with
// two change points (covers steps, spikes, plateaus, staircases) and "flat,
// then a straight line" (creep). The noise is the larger of the MAD of first
// differences and the best model's residual deviation. A change is
// significant when it exceeds both 4x that noise and 15% of the baseline's
// magnitude, so noisy healthy metrics stay flat and a rise from zero counts.
// The baseline is the level the window starts with (median before onset).
// Series longer than 240 points are searched on bucket means.
package series

import (
	"math"
	"sort"
	"time"

	"github.com/rcamesh/rcamesh/internal/facts"
)

// Shapes.
const (
	ShapeFlat      = "flat"
	ShapeStep      = "step"
	ShapeDrop      = "drop"
	ShapeCreep     = "creep"
	ShapeSpike     = "spike"
	ShapeRecovered = "recovered"
)

// MaxDownsampled is the largest number of points Summarize keeps in Downsampled.
const MaxDownsampled = 60

const (
	noiseFactor    = 4.0
	relativeChange = 0.15
)

// Summarize computes the statistics of pts (any order; NaN and Inf samples
// are ignored). labels is copied.
func Summarize(name string, labels map[string]string, pts []facts.Point) facts.Series {
	s := facts.Series{Name: name}
	if len(labels) > 0 {
		s.Labels = make(map[string]string, len(labels))
		for k, v := range labels {
			s.Labels[k] = v
		}
	}
	p := clean(pts)
	n := len(p)
	s.Count = n
	if n == 0 {
		return s
	}
	vals := make([]float64, n)
	for i, x := range p {
		vals[i] = x.V
	}
	s.Latest = vals[n-1]
	s.Min, s.Peak = vals[0], vals[0]
	peakAt := p[0].T
	sum := 0.0
	for i, v := range vals {
		sum += v
		if v > s.Peak {
			s.Peak, peakAt = v, p[i].T
		}
		if v < s.Min {
			s.Min = v
		}
	}
	s.PeakAt = &peakAt
	s.Mean = sum / float64(n)
	ss := 0.0
	for _, v := range vals {
		ss += (v - s.Mean) * (v - s.Mean)
	}
	s.Stddev = math.Sqrt(ss / float64(n))

	sh := classifyLong(vals)
	s.Shape = sh.shape
	s.Baseline = sh.baseline
	if sh.onset >= 0 {
		t := p[sh.onset].T
		s.OnsetAt = &t
	}
	sig := significance(sh.noise, sh.baseline)
	peakExc := s.Peak - s.Baseline
	for i, v := range vals {
		up := v - s.Baseline
		if up <= sig {
			continue
		}
		if (s.Stddev > 0 && v > s.Mean+2*s.Stddev) || (s.Shape != ShapeFlat && up >= 0.5*peakExc) {
			s.Anomalies = append(s.Anomalies, p[i])
		}
	}
	s.Downsampled = Downsample(p, MaxDownsampled)
	return s
}

// Points builds points from parallel slices of times and values (the shorter
// length wins).
func Points(ts []time.Time, vs []float64) []facts.Point {
	n := min(len(ts), len(vs))
	out := make([]facts.Point, n)
	for i := 0; i < n; i++ {
		out[i] = facts.Point{T: ts[i], V: vs[i]}
	}
	return out
}

// Downsample returns at most max points of pts (sorted by time), keeping each
// bucket's minimum and maximum so peaks and dips survive. max < 2 means 2.
func Downsample(pts []facts.Point, max int) []facts.Point {
	if max < 2 {
		max = 2
	}
	if len(pts) <= max {
		out := make([]facts.Point, len(pts))
		copy(out, pts)
		return out
	}
	buckets := max / 2
	out := make([]facts.Point, 0, max)
	n := len(pts)
	for b := 0; b < buckets; b++ {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		if lo >= hi {
			continue
		}
		mi, ma := lo, lo
		for i := lo; i < hi; i++ {
			if pts[i].V < pts[mi].V {
				mi = i
			}
			if pts[i].V > pts[ma].V {
				ma = i
			}
		}
		switch {
		case mi == ma:
			out = append(out, pts[mi])
		case mi < ma:
			out = append(out, pts[mi], pts[ma])
		default:
			out = append(out, pts[ma], pts[mi])
		}
	}
	return out
}

type shapeResult struct {
	shape    string
	baseline float64
	onset    int // index, -1 when none
	noise    float64
}

// threeLevel fits three constant levels on [0,i), [i,j) and [j,n) (j == n:
// two levels, a plain shift) and returns i, j and the residual SSE.
func threeLevel(v []float64) (bi, bj int, bsse float64) {
	n := len(v)
	ps := make([]float64, n+1)
	pq := make([]float64, n+1)
	for k, x := range v {
		ps[k+1] = ps[k] + x
		pq[k+1] = pq[k] + x*x
	}
	seg := func(a, b int) float64 {
		m := float64(b - a)
		if m <= 0 {
			return 0
		}
		sv := ps[b] - ps[a]
		return (pq[b] - pq[a]) - sv*sv/m
	}
	bsse = math.Inf(1)
	for i := 1; i < n; i++ {
		head := seg(0, i)
		for j := i + 1; j <= n; j++ {
			sse := head + seg(i, j) + seg(j, n)
			if math.IsInf(bsse, 1) || sse < bsse-1e-9*math.Abs(bsse) {
				bi, bj, bsse = i, j, sse
			}
		}
	}
	if bsse < 0 {
		bsse = 0
	}
	return bi, bj, bsse
}

// hinge fits "flat until k, then a straight line" (k == 0: one line over
// the whole window) and returns k, the slope per sample and the residual SSE.
func hinge(v []float64) (bk int, bslope, bsse float64) {
	n := len(v)
	var S, Q, T, TT, TV = make([]float64, n+1), make([]float64, n+1), make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for k, x := range v {
		t := float64(k)
		S[k+1], Q[k+1], T[k+1], TT[k+1], TV[k+1] = S[k]+x, Q[k]+x*x, T[k]+t, TT[k]+t*t, TV[k]+t*x
	}
	constSSE := func(a, b int) float64 {
		m := float64(b - a)
		if m == 0 {
			return 0
		}
		sv := S[b] - S[a]
		return (Q[b] - Q[a]) - sv*sv/m
	}
	linSSE := func(a, b int) (float64, float64) {
		m := float64(b - a)
		sv, st := S[b]-S[a], T[b]-T[a]
		vt := (TT[b] - TT[a]) - st*st/m
		vv := (Q[b] - Q[a]) - sv*sv/m
		if vt <= 0 {
			return vv, 0
		}
		cov := (TV[b] - TV[a]) - st*sv/m
		return vv - cov*cov/vt, cov / vt
	}
	bsse = math.Inf(1)
	for k := 0; k <= n-3; k++ {
		ls, slope := linSSE(k, n)
		sse := constSSE(0, k) + ls
		if math.IsInf(bsse, 1) || sse < bsse-1e-9*math.Abs(bsse) {
			bk, bslope, bsse = k, slope, sse
		}
	}
	if bsse < 0 {
		bsse = 0
	}
	return bk, bslope, bsse
}

func classify(v []float64) shapeResult {
	n := len(v)
	head := max(1, min(n, max(3, n/4)))
	if n < 4 {
		head = 1
	}
	res := shapeResult{shape: ShapeFlat, baseline: median(v[:head]), onset: -1, noise: noiseOf(v)}
	if n < 3 {
		if n == 2 && math.Abs(v[1]-v[0]) > significance(res.noise, v[0]) {
			res.onset = 1
			res.baseline = v[0]
			res.shape = ShapeStep
			if v[1] < v[0] {
				res.shape = ShapeDrop
			}
		}
		return res
	}
	i, j, sse3 := threeLevel(v)
	k, slope, sseH := hinge(v)
	res.noise = math.Max(res.noise, math.Sqrt(math.Min(sse3/float64(max(1, n-5)), sseH/float64(max(1, n-4)))))
	tailN := max(1, min(3, n/5))
	tail := median(v[n-tailN:])

	// A gradual trend that a hinge explains much better than level shifts.
	if n >= 5 && sseH < 0.5*sse3 {
		var hb float64
		if k > 0 {
			hb = median(v[:k])
		} else {
			hb = (sumOf(v) - slope*float64(n*(n-1))/2) / float64(n) // fitted value at the start
		}
		sig := significance(res.noise, hb)
		if ramp := slope * float64(n-1-k); math.Abs(ramp) > sig && math.Abs(tail-hb) > sig {
			// The hinge point itself often still sits on the baseline.
			for k > 0 && k < n-2 && math.Abs(v[k]-hb) <= math.Max(res.noise, 0.02*math.Abs(ramp)) {
				k++
				hb = median(v[:k])
			}
			res.shape, res.onset, res.baseline = ShapeCreep, k, hb
			return res
		}
	}

	// Levels: a (the window's start, the baseline), b, then c.
	a := median(v[:i])
	bl := median(v[i:j])
	c := bl
	if j < n {
		c = median(v[j:])
	}
	sig := significance(res.noise, a)
	var onset int
	var dir float64
	sustained := math.Abs(c-a) > sig
	if !sustained && j < n {
		// The window ends at a level beyond anything seen before it.
		lo, hi := v[0], v[0]
		for _, x := range v[:j] {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		margin := relativeChange * math.Abs(a)
		sustained = (c > hi+margin || c < lo-margin) && math.Abs(c-a) > relativeChange*math.Abs(a)
	}
	switch {
	case sustained:
		dir = math.Copysign(1, c-a)
		onset = j
		if j == n || (math.Abs(bl-a) > sig && dir*(bl-a) > 0) {
			onset = i // a staircase (or a plain shift) starts at i
		}
	case math.Abs(bl-a) > sig:
		dir = math.Copysign(1, bl-a)
		onset = i
	default:
		return res
	}
	base := a
	if onset != i {
		base = median(v[:onset])
	}
	// Walk back over a short ramp: the onset is the first point that moved.
	for onset > 1 && dir*(v[onset-1]-base) > sig {
		onset--
		base = median(v[:onset])
	}
	res.baseline, res.onset = base, onset
	if !sustained {
		res.shape = ShapeRecovered
		if j-onset <= max(2, n/5) {
			res.shape = ShapeSpike
		}
		return res
	}
	// Sustained change: abrupt (step/drop) or gradual (creep)?
	total := tail - base
	if dir*total <= 0 {
		total = c - base
	}
	bigJump := 0.0
	for k := max(1, onset-2); k < n; k++ {
		jmp := dir * (v[k] - v[k-1])
		if k >= 2 {
			jmp = math.Max(jmp, dir*(v[k]-v[k-2]))
		}
		bigJump = math.Max(bigJump, jmp)
	}
	if bigJump >= 0.5*math.Abs(total) {
		res.shape = ShapeStep
		if dir < 0 {
			res.shape = ShapeDrop
		}
		return res
	}
	// Creep: the onset is the start of the final run beyond the noise.
	res.shape = ShapeCreep
	b0 := median(v[:head])
	thr := math.Max(noiseFactor*noiseOf(v), 0.05*math.Abs(total))
	r := n - 1
	for r > 0 && dir*(v[r-1]-b0) > thr {
		r--
	}
	if r == 0 {
		r = onset
	}
	res.onset = r
	res.baseline = median(v[:r])
	return res
}

// maxChangePoints bounds the O(n²) change-point search: longer series are
// reduced to bucket means first (a one-sample spike in a long series then
// shows in Anomalies rather than in Shape).
const maxChangePoints = 240

func classifyLong(v []float64) shapeResult {
	n := len(v)
	if n <= maxChangePoints {
		return classify(v)
	}
	size := (n + maxChangePoints - 1) / maxChangePoints
	var red []float64
	for a := 0; a < n; a += size {
		b := min(n, a+size)
		red = append(red, sumOf(v[a:b])/float64(b-a))
	}
	res := classify(red)
	if res.onset >= 0 {
		res.onset *= size
		if res.onset > 0 {
			res.baseline = median(v[:res.onset])
		}
	} else {
		head := max(3, n/4)
		res.baseline = median(v[:head])
	}
	res.noise = math.Max(res.noise, noiseOf(v))
	return res
}

// significance is the smallest deviation from base that counts as a change.
func significance(noise, base float64) float64 {
	return math.Max(noiseFactor*noise, relativeChange*math.Abs(base))
}

// noiseOf estimates the noise standard deviation from the median absolute
// deviation of first differences (robust to steps and spikes).
func noiseOf(v []float64) float64 {
	scale := 0.0
	for _, x := range v {
		scale = math.Max(scale, math.Abs(x))
	}
	floor := 1e-9*scale + 1e-12
	if len(v) < 3 {
		return floor
	}
	d := make([]float64, len(v)-1)
	for i := 1; i < len(v); i++ {
		d[i-1] = v[i] - v[i-1]
	}
	md := median(d)
	ad := make([]float64, len(d))
	for i, x := range d {
		ad[i] = math.Abs(x - md)
	}
	sigma := 1.4826 * median(ad) / math.Sqrt2
	return math.Max(sigma, floor)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := make([]float64, len(v))
	copy(c, v)
	sort.Float64s(c)
	m := len(c) / 2
	if len(c)%2 == 1 {
		return c[m]
	}
	return (c[m-1] + c[m]) / 2
}

// clean drops NaN/Inf samples and sorts by time (stable).
func clean(pts []facts.Point) []facts.Point {
	out := make([]facts.Point, 0, len(pts))
	for _, p := range pts {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			continue
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

// sumOf is the sum of v.
func sumOf(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

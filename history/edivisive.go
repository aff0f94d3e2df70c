package history

import (
	"math"
	"math/rand/v2"
	"sort"
)

// E-Divisive means (Matteson & James, "A Nonparametric Approach for Multiple Change Point
// Analysis of Multivariate Data", 2014), the method behind Apache Otava (formerly Hunter) and
// MongoDB's performance CI, written for one-dimensional series:
//
//   - The divergence of a split of the segment Z[s:κ) at τ is
//     Q = (a·b/(a+b)) · ( 2/(a·b)·Σ|X−Y| − Σ|X−X'|/C(a,2) − Σ|Y−Y'|/C(b,2) ),
//     with X = Z[s:τ), Y = Z[τ:κ), a = τ−s, b = κ−τ (the energy distance with exponent 1, scaled
//     by the harmonic size). It is maximized over both τ and κ, so a later change does not dilute
//     the signal of an earlier one.
//   - Significance: the permutation test of the original work. The segment is shuffled R
//     times and the maximum Q recomputed; p = (1 + #{Q_perm ≥ Q}) / (R + 1). Because the null
//     distribution is built from the segment's own values, the test scales with the series' own
//     noise (night-to-night spread and each run's within-run noise alike) and holds its level
//     for heavy-tailed noise too. Otava replaced this test by a t-test for speed; a nightly
//     history is short enough for the exact method. Shuffles are seeded, so results are
//     reproducible.
//   - Hierarchical: the best split over all current segments is tested; a significant one is
//     kept and the search repeats, until a test fails.
//   - Weak level (Hunter's refinement): candidates are searched at the weak level, then each is
//     re-tested within the segment bounded by its neighbours, and dropped when it fails there;
//     survivors at the strict level are changes, the rest "weak" changes that need more runs to
//     confirm.
//
// Cost: O(m²) per shuffle of an m-point segment (a 2-D prefix sum of the distance matrix makes
// every (τ, κ) O(1)); non-significant tests stop early once the weak level cannot be reached.

// DetectOptions configure Detect. Zero values take the defaults.
type DetectOptions struct {
	// MinSize is the fewest runs on each side of a change (default 3).
	MinSize int
	// Alpha is the significance level of a change (default 0.01).
	Alpha float64
	// WeakAlpha is the level of a weak change (default 0.05; at least Alpha).
	WeakAlpha float64
	// Permutations is the number of shuffles of each test (default 199).
	Permutations int
	// Seed seeds the shuffles (the same series and seed give the same answer).
	Seed uint64
}

// Default detection settings.
const (
	DefaultMinSize      = 3
	DefaultAlpha        = 0.01
	DefaultWeakAlpha    = 0.05
	DefaultPermutations = 199
)

func (o DetectOptions) withDefaults() DetectOptions {
	if o.MinSize <= 0 {
		o.MinSize = DefaultMinSize
	}
	if o.MinSize < 2 {
		o.MinSize = 2
	}
	if o.Alpha <= 0 {
		o.Alpha = DefaultAlpha
	}
	if o.WeakAlpha <= 0 {
		o.WeakAlpha = DefaultWeakAlpha
	}
	if o.WeakAlpha < o.Alpha {
		o.WeakAlpha = o.Alpha
	}
	if o.Permutations <= 0 {
		o.Permutations = DefaultPermutations
	}
	return o
}

// ChangePoint is one change found by Detect.
type ChangePoint struct {
	// Index is the first point after the change (the first run of the new level).
	Index int
	// P is the permutation p-value of the change within the segment bounded by its
	// neighbouring changes.
	P float64
	// Weak is true when P is above Alpha (but at most WeakAlpha).
	Weak bool
	// Q is the divergence of the split.
	Q float64
}

// Detect finds change points in x with E-Divisive means. NaN values must be removed first.
func Detect(x []float64, o DetectOptions) []ChangePoint {
	o = o.withDefaults()
	n := len(x)
	d := &detector{x: x, o: o}
	var cps []int
	// Hierarchical search at the weak level.
	for {
		bounds := append(append([]int{0}, cps...), n)
		bestQ, bestT, bestS, bestE := -1.0, -1, 0, 0
		for i := 0; i+1 < len(bounds); i++ {
			s, e := bounds[i], bounds[i+1]
			t, q, ok := d.best(x[s:e])
			if ok && q > bestQ {
				bestQ, bestT, bestS, bestE = q, s+t, s, e
			}
		}
		if bestT < 0 || bestQ <= 0 {
			break
		}
		if p := d.pvalue(bestS, bestE, bestQ); p > o.WeakAlpha {
			break
		}
		cps = append(cps, bestT)
		sort.Ints(cps)
	}
	// Re-test each candidate between its neighbours until the set is stable.
	ps := make([]float64, len(cps))
	qs := make([]float64, len(cps))
	for iter := 0; iter < 4*len(cps)+4; iter++ {
		changed := false
		for k := 0; k < len(cps); k++ {
			s, e := 0, n
			if k > 0 {
				s = cps[k-1]
			}
			if k+1 < len(cps) {
				e = cps[k+1]
			}
			t, q, ok := d.best(x[s:e])
			p := 1.0
			if ok && q > 0 {
				p = d.pvalue(s, e, q)
			}
			if p > o.WeakAlpha {
				cps = append(cps[:k], cps[k+1:]...)
				ps = append(ps[:k], ps[k+1:]...)
				qs = append(qs[:k], qs[k+1:]...)
				changed = true
				break
			}
			if s+t != cps[k] {
				cps[k] = s + t
				changed = true
			}
			ps[k], qs[k] = p, q
		}
		if !changed {
			break
		}
	}
	out := make([]ChangePoint, len(cps))
	for k, c := range cps {
		out[k] = ChangePoint{Index: c, P: ps[k], Q: qs[k], Weak: ps[k] > o.Alpha}
	}
	return out
}

type detector struct {
	x      []float64
	o      DetectOptions
	prefix []float64 // reused (m+1)² prefix sums
	perm   []float64 // reused shuffle buffer
	// tested memoizes p-values by segment: the shuffles of a segment are seeded by its bounds,
	// so a segment tested again (a lone change re-tested between its neighbours) gives the same
	// p-value.
	tested map[[2]int]float64
}

// best returns the split τ (local index) of y with the largest divergence over every κ, with
// at least MinSize points on each side; ok is false when y is too short.
func (d *detector) best(y []float64) (tau int, q float64, ok bool) {
	m, ms := len(y), d.o.MinSize
	if m < 2*ms {
		return 0, 0, false
	}
	w := m + 1
	if cap(d.prefix) < w*w {
		d.prefix = make([]float64, w*w)
	}
	p := d.prefix[:w*w]
	// p[i*w+j] = Σ_{a<i, b<j} |y_a − y_b|.
	for j := 0; j < w; j++ {
		p[j] = 0
	}
	for i := 0; i < m; i++ {
		row, next := p[i*w:(i+1)*w], p[(i+1)*w:(i+2)*w]
		next[0] = 0
		acc := 0.0
		yi := y[i]
		for j := 0; j < m; j++ {
			acc += math.Abs(yi - y[j])
			next[j+1] = row[j+1] + acc
		}
	}
	// The distance matrix is symmetric, so p is too, and p[0][·] = 0: the sum between X = y[0:t)
	// and Y = y[t:k) is p[t][k] − p[t][t], and within Y it is (p[k][k] − 2·p[t][k] + p[t][t]) / 2.
	diag := make([]float64, w)
	for k := range diag {
		diag[k] = p[k*w+k]
	}
	tau, q = -1, math.Inf(-1)
	for t := ms; t <= m-ms; t++ {
		a := float64(t)
		row := p[t*w : (t+1)*w]
		ptt := row[t]
		withinX := ptt / (a * (a - 1))
		for k := t + ms; k <= m; k++ {
			b := float64(k - t)
			pk := row[k]
			e := 2*(pk-ptt)/(a*b) - withinX - (diag[k]-2*pk+ptt)/(b*(b-1))
			if v := a * b / (a + b) * e; v > q {
				tau, q = t, v
			}
		}
	}
	return tau, q, tau >= 0
}

// pvalue is the permutation p-value of the largest divergence qObs of segment x[s:e). It
// stops early once the weak level is out of reach (the estimate is then (1+k)/(1+r) after r
// shuffles, above the weak level).
func (d *detector) pvalue(s, e int, qObs float64) float64 {
	key := [2]int{s, e}
	if p, ok := d.tested[key]; ok {
		return p
	}
	p := d.shuffleTest(s, e, qObs)
	if d.tested == nil {
		d.tested = map[[2]int]float64{}
	}
	d.tested[key] = p
	return p
}

func (d *detector) shuffleTest(s, e int, qObs float64) float64 {
	seg := d.x[s:e]
	if cap(d.perm) < len(seg) {
		d.perm = make([]float64, len(seg))
	}
	y := d.perm[:len(seg)]
	copy(y, seg)
	rng := rand.New(rand.NewPCG(d.o.Seed, uint64(s)<<32|uint64(e)))
	r := d.o.Permutations
	limit := int(math.Floor(d.o.WeakAlpha*float64(r+1))) - 1 // most exceedances with p ≤ WeakAlpha
	// A tiny tolerance so that shuffles reproducing the observed value count as ties.
	tol := 1e-12 * math.Max(1, math.Abs(qObs))
	k := 0
	for i := 1; i <= r; i++ {
		rng.Shuffle(len(y), func(a, b int) { y[a], y[b] = y[b], y[a] })
		if _, q, _ := d.best(y); q >= qObs-tol {
			k++
			if k > limit {
				return float64(1+k) / float64(1+i)
			}
		}
	}
	return float64(1+k) / float64(1+r)
}

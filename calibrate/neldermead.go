package calibrate

import (
	"math"
	"sort"
)

// nelderMead minimizes f from x0 with the Nelder–Mead simplex method (reflection 1, expansion
// 2, contraction ½, shrink ½), starting with a simplex of side step along each axis, and stops
// after maxEvals evaluations or when the simplex's values agree to 1e-10. It returns the best
// point and its value. f may return +Inf for points outside its domain.
func nelderMead(f func([]float64) float64, x0 []float64, step float64, maxEvals int) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	evals := 0
	eval := func(x []float64) vertex {
		evals++
		return vertex{x, f(x)}
	}
	simplex := []vertex{eval(append([]float64(nil), x0...))}
	for i := range n {
		x := append([]float64(nil), x0...)
		x[i] += step
		simplex = append(simplex, eval(x))
	}
	along := func(c, x []float64, t float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = c[i] + t*(x[i]-c[i])
		}
		return out
	}
	for evals < maxEvals {
		sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].v < simplex[b].v })
		best, worst := simplex[0], simplex[n]
		if math.Abs(worst.v-best.v) <= 1e-10 {
			break
		}
		centroid := make([]float64, n)
		for _, s := range simplex[:n] {
			for i := range centroid {
				centroid[i] += s.x[i] / float64(n)
			}
		}
		refl := eval(along(centroid, worst.x, -1))
		switch {
		case refl.v < best.v:
			if exp := eval(along(centroid, worst.x, -2)); exp.v < refl.v {
				simplex[n] = exp
			} else {
				simplex[n] = refl
			}
		case refl.v < simplex[n-1].v:
			simplex[n] = refl
		default:
			con := eval(along(centroid, worst.x, 0.5))
			if con.v < worst.v {
				simplex[n] = con
				continue
			}
			for i := 1; i <= n; i++ {
				simplex[i] = eval(along(best.x, simplex[i].x, 0.5))
			}
		}
	}
	sort.SliceStable(simplex, func(a, b int) bool { return simplex[a].v < simplex[b].v })
	return simplex[0].x, simplex[0].v
}

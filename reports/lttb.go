package reports

// LTTB picks at most threshold indices of the series (xs[i], ys[i]) with the
// Largest-Triangle-Three-Buckets algorithm (Steinarsson 2013): the first and last points are
// kept and, for every bucket in between, the point forming the largest triangle with the
// previously kept point and the average of the next bucket. The shape of the series (peaks,
// dips, plateaus) survives while the point count becomes bounded. xs must be ascending. The
// result is ascending; when the series is already short enough every index is returned.
func LTTB(xs, ys []float64, threshold int) []int {
	n := min(len(xs), len(ys))
	if threshold >= n || threshold <= 0 {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	if threshold < 3 {
		threshold = 3
	}
	out := make([]int, 0, threshold)
	out = append(out, 0)
	// Buckets cover the points strictly between the first and the last.
	every := float64(n-2) / float64(threshold-2)
	a := 0
	for b := 0; b < threshold-2; b++ {
		lo := int(float64(b)*every) + 1
		hi := int(float64(b+1)*every) + 1
		if hi > n-1 {
			hi = n - 1
		}
		// Average of the next bucket (the last point for the final bucket).
		nlo, nhi := hi, int(float64(b+2)*every)+1
		if nhi > n {
			nhi = n
		}
		if b == threshold-3 {
			nlo, nhi = n-1, n
		}
		var ax, ay float64
		for j := nlo; j < nhi; j++ {
			ax += xs[j]
			ay += ys[j]
		}
		cnt := float64(nhi - nlo)
		ax /= cnt
		ay /= cnt
		best, bestArea := lo, -1.0
		for j := lo; j < hi; j++ {
			area := (xs[a]-ax)*(ys[j]-ys[a]) - (xs[a]-xs[j])*(ay-ys[a])
			if area < 0 {
				area = -area
			}
			if area > bestArea {
				best, bestArea = j, area
			}
		}
		out = append(out, best)
		a = best
	}
	return append(out, n-1)
}

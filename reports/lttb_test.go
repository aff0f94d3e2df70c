package reports

import (
	"math"
	"testing"
)

func TestLTTBShortSeriesUnchanged(t *testing.T) {
	xs := []float64{0, 1, 2, 3}
	got := LTTB(xs, []float64{5, 6, 7, 8}, 10)
	if len(got) != 4 || got[0] != 0 || got[3] != 3 {
		t.Fatalf("got %v, want every index", got)
	}
}

func TestLTTBKeepsEndsPeaksAndBound(t *testing.T) {
	const n = 10000
	xs := make([]float64, n)
	ys := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
		ys[i] = math.Sin(float64(i) / 300)
	}
	ys[4321] = 50  // a lone spike must survive
	ys[7777] = -40 // and a lone dip
	for _, threshold := range []int{3, 10, 100, 500} {
		got := LTTB(xs, ys, threshold)
		if len(got) != threshold {
			t.Fatalf("threshold %d: got %d points", threshold, len(got))
		}
		if got[0] != 0 || got[len(got)-1] != n-1 {
			t.Fatalf("threshold %d: ends not kept: first %d last %d", threshold, got[0], got[len(got)-1])
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("threshold %d: indices not ascending at %d: %v", threshold, i, got[i-1:i+1])
			}
		}
		if threshold >= 10 && (!contains(got, 4321) || !contains(got, 7777)) {
			t.Errorf("threshold %d: spike or dip dropped", threshold)
		}
	}
}

func TestLTTBPicksLargestTriangle(t *testing.T) {
	// Five points, three kept: the middle bucket holds indices 1..3 and index 2 sticks out.
	xs := []float64{0, 1, 2, 3, 4}
	ys := []float64{0, 0.1, 3, 0.2, 0}
	got := LTTB(xs, ys, 3)
	if len(got) != 3 || got[1] != 2 {
		t.Fatalf("got %v, want [0 2 4]", got)
	}
}

func contains(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func BenchmarkLTTB100k(b *testing.B) {
	const n = 100000
	xs := make([]float64, n)
	ys := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
		ys[i] = math.Sin(float64(i) / 100)
	}
	b.ResetTimer()
	for range b.N {
		LTTB(xs, ys, 1000)
	}
}

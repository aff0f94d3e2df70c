package metrics

import (
	"math/bits"
	"slices"
)

// sparseHist is a log-linear histogram of µs values stored as sorted (bin, count) pairs.
type sparseHist []binCount

type binCount struct {
	bin   uint32
	count int64
}

const subBits = 7 // 128 sub-buckets per power of two above 256

func binOf(v int64) uint32 {
	if v < 0 {
		v = 0
	}
	if v < 2<<subBits {
		return uint32(v)
	}
	shift := bits.Len64(uint64(v)) - (subBits + 1)
	m := uint32(v >> shift) // in [128, 255]
	return uint32(2<<subBits) + uint32(shift-1)<<subBits + (m - 1<<subBits)
}

// binValue is the midpoint of a bin, in µs.
func binValue(b uint32) float64 {
	if b < 2<<subBits {
		return float64(b)
	}
	rest := b - 2<<subBits
	shift := int(rest>>subBits) + 1
	m := int64(rest&(1<<subBits-1)) + 1<<subBits
	lo := m << shift
	return float64(lo) + float64(int64(1)<<shift-1)/2
}

func (h sparseHist) add(v, n int64) sparseHist {
	b := binOf(v)
	lo, hi := 0, len(h)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if h[mid].bin < b {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(h) && h[lo].bin == b {
		h[lo].count += n
		return h
	}
	return slices.Insert(h, lo, binCount{b, n})
}

// quantiles returns two quantiles in ms (0 when empty) by the package's quantile rule
// (quantileRank), each the midpoint of its bin.
func (h sparseHist) quantiles(q1, q2 float64) (float64, float64) {
	var total int64
	for _, e := range h {
		total += e.count
	}
	if total == 0 {
		return 0, 0
	}
	at := func(q float64) float64 {
		rank := int64(quantileRank(q, float64(total)))
		var c int64
		for _, e := range h {
			c += e.count
			if c >= rank {
				return binValue(e.bin) / 1000
			}
		}
		return binValue(h[len(h)-1].bin) / 1000
	}
	return at(q1), at(q2)
}

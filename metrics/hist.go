package metrics

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry shared by every histogram this package writes, so that encodings of the
// same name always merge without loss. Durations are recorded in microseconds from 0 to one
// hour with 3 significant digits (0.1% relative precision); longer values are clamped to one
// hour and negative ones to 0. Counts (tokens per chunk) and the fluidity index (scaled by
// fluidityScal, exact at that scale) use the same geometry.
const (
	histLowest   = 1
	histHighest  = 3_600_000_000 // one hour in µs
	histSigFigs  = 3
	fluidityScal = 1000 // the fluidity index is recorded as round(index * 1000): exact buckets
)

// hist wraps an HdrHistogram with clamping. The HdrHistogram (about 190 KB at this geometry)
// is allocated on the first value, so unused histograms cost nothing. It is not safe for
// concurrent use.
type hist struct {
	h *hdrhistogram.Histogram
}

func newHist() *hist { return &hist{} }

func (h *hist) ensure() {
	if h.h == nil {
		h.h = hdrhistogram.New(histLowest, histHighest, histSigFigs)
	}
}

// quantile is the value at percentile p (0-100), 0 when empty.
func (h *hist) quantile(p float64) int64 {
	if h.h == nil {
		return 0
	}
	return h.h.ValueAtQuantile(p)
}

// mean is the histogram's mean, 0 when empty.
func (h *hist) mean() float64 {
	if h.h == nil {
		return 0
	}
	return h.h.Mean()
}

// recordValue records v (in the histogram's unit) clamped to the trackable range.
func (h *hist) recordValue(v int64) {
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v = histHighest
	}
	h.ensure()
	// In range by construction, so RecordValue cannot fail.
	_ = h.h.RecordValue(v)
}

// recordValues records n copies of v.
func (h *hist) recordValues(v, n int64) {
	if n <= 0 {
		return
	}
	if v < 0 {
		v = 0
	}
	if v > histHighest {
		v = histHighest
	}
	h.ensure()
	_ = h.h.RecordValues(v, n)
}

// recordNs records a duration given in nanoseconds, as microseconds rounded to nearest.
func (h *hist) recordNs(ns int64) { h.recordValue(nsToMicros(ns)) }

func nsToMicros(ns int64) int64 {
	if ns < 0 {
		return 0
	}
	return (ns + 500) / 1000
}

func (h *hist) count() int64 {
	if h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// merge adds other's counts into h. Both share the package geometry, so nothing is dropped.
func (h *hist) merge(other *hist) {
	if other.count() == 0 {
		return
	}
	h.ensure()
	h.h.Merge(other.h)
}

// encode returns the HdrHistogram V2 compressed encoding (base64 text), the standard
// interchange format of HdrHistogram implementations.
func (h *hist) encode() (string, error) {
	h.ensure()
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// decodeHist reads an encoding written by encode (or by any HdrHistogram V2 writer).
func decodeHist(s string) (*hist, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return &hist{h: h}, nil
}

// cdfQuantiles are the quantiles a Dist's CDF lists: every 2% up to 90%, every 1% up to 99%,
// then 99.5%, 99.9%, 99.99% and the maximum (59 points).
var cdfQuantiles = func() []float64 {
	var q []float64
	for i := 0; i <= 90; i += 2 {
		q = append(q, float64(i)/100)
	}
	for i := 91; i <= 99; i++ {
		q = append(q, float64(i)/100)
	}
	return append(q, 0.995, 0.999, 0.9999, 1)
}()

// distPercentiles are the percentiles dist asks for in one scan: P50, P90, P95, P99, P99.9,
// then the CDF's.
var distPercentiles = func() []float64 {
	p := []float64{50, 90, 95, 99, 99.9}
	for _, q := range cdfQuantiles {
		p = append(p, q*100)
	}
	return p
}()

// dist summarizes h, multiplying every value by scale (1e-3 turns µs into ms).
func (h *hist) dist(scale float64) Dist {
	n := h.count()
	if n == 0 {
		return Dist{}
	}
	v := h.h.ValueAtPercentilesSlice(distPercentiles)
	at := func(i int) float64 { return float64(v[i]) * scale }
	d := Dist{
		Mean:  h.h.Mean() * scale,
		P50:   at(0),
		P90:   at(1),
		P95:   at(2),
		P99:   at(3),
		P999:  at(4),
		Max:   float64(h.h.Max()) * scale,
		Min:   float64(h.h.Min()) * scale,
		Count: n,
	}
	d.CDF = make([]CDFPoint, len(cdfQuantiles))
	for i, q := range cdfQuantiles {
		d.CDF[i] = CDFPoint{Q: q, Value: at(5 + i)}
	}
	d.CDF[0].Value = d.Min
	d.CDF[len(d.CDF)-1].Value = d.Max
	return d
}

// Unit scales applied when a histogram becomes a Dist.
const (
	scaleMicrosToMs = 1e-3
	scaleCount      = 1.0
	scaleFluidity   = 1.0 / fluidityScal
)

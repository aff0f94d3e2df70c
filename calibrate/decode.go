package calibrate

import (
	"fmt"
	"math"
	"sort"
)

// Decode that slows with the batch (issue 45, item 3). A GPU decoding a few sequences reads
// its weights once per step whatever the batch, so its decode step barely grows with the
// number running: the roofline's memory term. A CPU, or a server whose per-request work is
// not overlapped with the device (sampling, output processing, llama.cpp's slots), pays a
// cost for every running sequence in every step, and its TPOT grows with the batch (the
// issue's llama.cpp server: 3.1 ms per token alone, 7.1 ms at three times the load). The
// step-time model carries that cost as perf's StepOverheadPerSeq: it adds to the step
// outside the roofline, as the host's work does.
//
// The decode stretches (decodeGaps: steps of decode alone, their batch known from the
// records: which requests were streaming and how far each had got) are fitted twice, with
// the bandwidth and the step overhead alone and with the per-sequence cost as well. The cost
// enters the model only when the stretches were seen at more than one batch size and it
// leaves under perSeqGain of the loss without it: a GPU server at low batch shows neither,
// and its fit is what it was. The residuals then compare the model's decode step with the
// measured one at each batch size (decodeResiduals), so a server whose decode grows with the
// batch in some other way (quadratically, in steps) shows up there and in the warnings.

// A per-sequence cost is kept when the fit with it leaves under perSeqGain of the loss
// without it, that loss is at least perSeqMisfit (the stretches' Cauchy loss: 0.01 is a
// systematic error of about 0.5%; below it the model already fits and a gain is numerical),
// and the cost is at least perSeqShare of the mean decode step at the stretches' mean batch.
const (
	perSeqGain   = 0.8
	perSeqMisfit = 0.01
	perSeqShare  = 0.01
)

// fitDecode fits the decode stretches' model (g) over the bandwidth and step overhead at
// x, then, when the stretches show more than one batch size, over the per-sequence cost as
// well, keeping it (f.perSeq) when it pays (perSeqGain). budget bounds each search.
func (f *fitter) fitDecode(g func([]float64) float64, x []float64, gaps []gapObs, budget int) []float64 {
	f.perSeq = false
	off := f.search(g, x, []int{0, 2}, budget)
	if distinctBatches(gaps) < 2 {
		if len(gaps) > 0 {
			f.notes = append(f.notes, "decode was seen at one batch size only: a cost per running sequence cannot be told from the step overhead (none fitted)")
		}
		return off
	}
	lossOff := g(off)
	f.perSeq = true
	start := append([]float64(nil), off...)
	start[3] = math.Log(perSeqGuess(gaps) * 1e6)
	on := f.search(g, start, []int{0, 2, 3}, budget)
	n, step := meanStep(gaps)
	if lossOn := g(on); lossOff >= perSeqMisfit && lossOn < perSeqGain*lossOff &&
		f.toConst(on).StepOverheadPerSeq.Seconds()*n >= perSeqShare*step {
		return on
	}
	f.perSeq = false
	return off
}

// meanStep is the stretches' mean batch and mean decode step in seconds.
func meanStep(gaps []gapObs) (batch, step float64) {
	var seqs, steps int
	var dt float64
	for _, o := range gaps {
		for _, w := range o.works {
			seqs += w.Seqs
		}
		steps += len(o.works)
		dt += o.dt
	}
	if steps == 0 {
		return 0, 0
	}
	return float64(seqs) / float64(steps), dt / float64(steps)
}

// decodeCoords are the coordinates the decode stretches fit: bandwidth and step overhead,
// and the per-sequence cost when it is in the model.
func (f *fitter) decodeCoords() []int {
	if f.perSeq {
		return []int{0, 2, 3}
	}
	return []int{0, 2}
}

// distinctBatches counts the batch sizes (each stretch's mean, rounded) the stretches show.
func distinctBatches(gaps []gapObs) int {
	seen := map[int]bool{}
	for _, o := range gaps {
		seen[meanBatch(o)] = true
	}
	return len(seen)
}

// meanBatch is a stretch's mean number of running sequences, rounded.
func meanBatch(o gapObs) int {
	n := 0
	for _, w := range o.works {
		n += w.Seqs
	}
	return int(math.Round(float64(n) / float64(len(o.works))))
}

// perSeqGuess is where the per-sequence cost's search starts, in seconds: half the slope of
// the stretches' mean step time against their mean batch (half: the KV cache's reads grow
// with the batch too), at least 1 µs.
func perSeqGuess(gaps []gapObs) float64 {
	xs, ys := make([]float64, len(gaps)), make([]float64, len(gaps))
	for i, o := range gaps {
		n := 0
		for _, w := range o.works {
			n += w.Seqs
		}
		xs[i] = float64(n) / float64(len(o.works))
		ys[i] = o.dt / float64(len(o.works))
	}
	_, b := lineFit(xs, ys)
	return math.Max(b/2, 1e-6)
}

// Decode residuals need this many stretches and steps at a batch size.
const (
	minBatchStretches = 3
	minBatchSteps     = 40
)

// batchBucket groups batch sizes for the decode residuals: 1 to 4 each alone, then powers of
// two (5–8, 9–16, …); it returns the bucket's lower end and its name.
func batchBucket(n int) (int, string) {
	if n <= 4 {
		return n, fmt.Sprintf("decode_b%d", n)
	}
	lo := 5
	for hi := 8; ; hi *= 2 {
		if n <= hi {
			return lo, fmt.Sprintf("decode_b%d-%d", lo, hi)
		}
		lo = hi + 1
	}
}

// decodeResiduals compares, for each batch size (a stretch's mean, rounded; batchBucket)
// seen in enough stretches, the mean decode step the model gives (step, seconds per modelled
// step) with the measured one: quantity "decode_b<n>" or "decode_b<lo>-<hi>", in ms per step.
func decodeResiduals(path string, gaps []gapObs, step func(gapObs) float64) []Residual {
	type acc struct {
		name             string
		stretches, steps int
		meas, sim        float64
	}
	by := map[int]*acc{}
	for _, o := range gaps {
		b, name := batchBucket(meanBatch(o))
		a := by[b]
		if a == nil {
			a = &acc{name: name}
			by[b] = a
		}
		a.stretches++
		a.steps += len(o.works)
		a.meas += o.dt
		a.sim += step(o)
	}
	var sizes []int
	for b, a := range by {
		if a.stretches >= minBatchStretches && a.steps >= minBatchSteps {
			sizes = append(sizes, b)
		}
	}
	sort.Ints(sizes)
	var out []Residual
	for _, b := range sizes {
		a := by[b]
		m, s := a.meas/float64(a.steps)*1e3, a.sim/float64(a.steps)*1e3
		out = append(out, Residual{Run: path, Quantity: a.name, Unit: "ms", Measured: m, Simulated: s, RelErr: (s - m) / m})
	}
	return out
}

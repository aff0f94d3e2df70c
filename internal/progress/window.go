package progress

import (
	"math"
	"math/bits"
	"time"
)

// The live panel's rolling statistics: the requests that finished in the last WindowSlots
// seconds, in one-second slots. These are display figures only (the results come from the
// records, summarized by package metrics); they are cheap: an observation costs a few array
// increments, a frame merges ten small histograms.

// WindowSlots is the length of the rolling window in one-second slots.
const WindowSlots = 10

// logHist is a log-linear histogram of microsecond values: 16 bins per power of two (about
// 4% wide), from 1 µs to about 1.2 hours.
type logHist [logBins]uint32

const logBins = 16 * 33

func logBin(us int64) int {
	if us < 1 {
		return 0
	}
	e := 63 - bits.LeadingZeros64(uint64(us)) // us in [2^e, 2^(e+1))
	sub := 0
	if e >= 4 {
		sub = int((uint64(us) >> (e - 4)) & 15)
	} else {
		sub = int((uint64(us) << (4 - e)) & 15)
	}
	return min(e*16+sub, logBins-1)
}

// binMid is the value in the middle of bin i, in µs.
func binMid(i int) float64 {
	e, sub := i/16, i%16
	lo := math.Ldexp(1+float64(sub)/16, e)
	hi := math.Ldexp(1+float64(sub+1)/16, e)
	return (lo + hi) / 2
}

func (h *logHist) add(us int64, n uint32) { h[logBin(us)] += n }

// slot is one second of the window.
type slot struct {
	sec       int64 // seconds since the display started; -1 when unused
	ttft, itl logHist
	lag       logHist
	n         int   // requests that finished
	tokens    int64 // their output tokens
}

type window struct {
	slots [WindowSlots]slot
	// stale takes an observation of a second older than the window holds (a simulation's
	// records can come out of order); it is never read.
	stale slot
}

func newWindow() *window {
	w := &window{}
	for i := range w.slots {
		w.slots[i].sec = -1
	}
	return w
}

// at returns the slot for second sec, clearing it when it held an older second.
func (w *window) at(sec int64) *slot {
	s := &w.slots[sec%WindowSlots]
	if s.sec > sec {
		return &w.stale // older than the window: keep the newer second's figures
	}
	if s.sec != sec {
		*s = slot{sec: sec}
	}
	return s
}

// figures are the window's merged statistics at second now.
type figures struct {
	requests                         int
	tokens                           int64
	ttftP50, ttftP99, itlP50, itlP99 float64 // ms; NaN without samples
	lagP99                           float64
}

func (w *window) figures(now int64) figures {
	var ttft, itl, lag logHist
	var f figures
	for i := range w.slots {
		s := &w.slots[i]
		if s.sec < 0 || s.sec <= now-WindowSlots || s.sec > now {
			continue
		}
		f.requests += s.n
		f.tokens += s.tokens
		for b := range ttft {
			ttft[b] += s.ttft[b]
			itl[b] += s.itl[b]
			lag[b] += s.lag[b]
		}
	}
	f.ttftP50, f.ttftP99 = quantileMs(&ttft, 0.5), quantileMs(&ttft, 0.99)
	f.itlP50, f.itlP99 = quantileMs(&itl, 0.5), quantileMs(&itl, 0.99)
	f.lagP99 = quantileMs(&lag, 0.99)
	return f
}

// quantileMs is the value at quantile q in ms (nearest rank, as package metrics), NaN for an
// empty histogram. The first bin holds values under 1 µs, shown as 0.
func quantileMs(h *logHist, q float64) float64 {
	var n uint64
	for _, c := range h {
		n += uint64(c)
	}
	if n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Max(1, math.Min(float64(n), math.Floor(q*float64(n)+0.5))))
	var c uint64
	for i, v := range h {
		c += uint64(v)
		if c >= rank {
			if i == 0 {
				return 0
			}
			return binMid(i) / 1000
		}
	}
	return math.NaN()
}

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

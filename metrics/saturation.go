package metrics

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Online saturation detection (issue 39): while a point runs, judge from what the client sees
// whether the offered load exceeds what the server completes. The rule extends GuideLLM's
// (after 30 s, median TTFT above 2.5 s and both concurrency and TTFT still rising) with the
// completion rate: the requests completed over the window fall short of those sent. It is a
// pure function of a per-second series (JudgeSaturation), so it is tested on a virtual clock;
// SaturationWatch builds the series from a live run. docs/capacity.md has its measured
// false-stop rate and time to stop.

// OverSaturated is the words for an offered load beyond what the server completes, used alike
// by a run stopped at saturation and by simulate's overload report (runner/engineadapter).
func OverSaturated(offeredPerS, completedPerS float64) string {
	return fmt.Sprintf("over-saturated at %.3g req/s (completed %.3g req/s)", offeredPerS, completedPerS)
}

// SaturationSample is one bucket of the series the detector judges.
type SaturationSample struct {
	// At is the end of the bucket, from the run's start (the engine's time under a time scale).
	At time.Duration
	// Sent and Done are cumulative by At: requests sent, and requests finished (completed or
	// failed).
	Sent, Done int64
	// TTFTP50 is the median TTFT of the requests that finished in the bucket with a first
	// token; negative when none did.
	TTFTP50 time.Duration
}

// SaturationRule configures JudgeSaturation. Zero fields take the defaults.
type SaturationRule struct {
	// MinTime is the least time run before any judgment (default 30 s, GuideLLM's).
	MinTime time.Duration
	// MinTTFT is the median TTFT over the window a saturated run must exceed (default 2.5 s,
	// GuideLLM's).
	MinTTFT time.Duration
	// CompletionRatio: the window's completion rate must be below this fraction of its send
	// rate (default 0.9).
	CompletionRatio float64
}

// Defaults of SaturationRule.
const (
	DefaultSaturationMinTime  = 30 * time.Second
	DefaultSaturationMinTTFT  = 2500 * time.Millisecond
	DefaultSaturationComplete = 0.9
)

func (r SaturationRule) withDefaults() SaturationRule {
	if r.MinTime <= 0 {
		r.MinTime = DefaultSaturationMinTime
	}
	if r.MinTTFT <= 0 {
		r.MinTTFT = DefaultSaturationMinTTFT
	}
	if r.CompletionRatio <= 0 || r.CompletionRatio > 1 {
		r.CompletionRatio = DefaultSaturationComplete
	}
	return r
}

// SaturationVerdict is the detector's judgment at the end of a series (summary.json
// "saturation").
type SaturationVerdict struct {
	Saturated bool `json:"saturated"`
	// AtS is when it was judged, seconds from the run's start.
	AtS float64 `json:"at_s"`
	// OfferedPerS and CompletedPerS are the window's send and completion rates.
	OfferedPerS   float64 `json:"offered_requests_per_s"`
	CompletedPerS float64 `json:"completed_requests_per_s"`
	// InFlightFrom/To and TTFTFromMs/ToMs are the in-flight count and the median TTFT at the
	// window's start and end.
	InFlightFrom int64   `json:"in_flight_from"`
	InFlightTo   int64   `json:"in_flight_to"`
	TTFTFromMs   float64 `json:"ttft_p50_from_ms"`
	TTFTToMs     float64 `json:"ttft_p50_to_ms"`
	WindowS      float64 `json:"window_s"`
	// Stopped is true when the run was stopped at this verdict (--stop-on-saturation).
	Stopped bool `json:"stopped"`
	// Reason says it in words ("" unless Saturated).
	Reason string `json:"reason,omitempty"`
}

// saturationWindow is the trailing part of a series the detector judges: the last half of the
// time run, at most MinTime, so that a queue that began growing late is still seen.
func saturationWindow(series []SaturationSample, minTime time.Duration) []SaturationSample {
	last := series[len(series)-1].At
	from := last - min(last/2, minTime)
	i := sort.Search(len(series), func(i int) bool { return series[i].At >= from })
	return series[i:]
}

// JudgeSaturation judges a series of buckets in time order: saturated when, at least
// rule.MinTime into the run, over the trailing window (saturationWindow) the requests completed
// per second fall below rule.CompletionRatio of those sent, the in-flight count rises (a
// positive least-squares slope and a net growth), and the buckets' median TTFT rises (positive
// slope, the later half's median above the earlier half's) with the window's median above
// rule.MinTTFT. A series too short to judge is not saturated.
func JudgeSaturation(series []SaturationSample, rule SaturationRule) SaturationVerdict {
	rule = rule.withDefaults()
	if len(series) < 3 || series[len(series)-1].At < rule.MinTime {
		return SaturationVerdict{}
	}
	win := saturationWindow(series, rule.MinTime)
	if len(win) < 3 {
		return SaturationVerdict{}
	}
	first, last := win[0], win[len(win)-1]
	span := (last.At - first.At).Seconds()
	v := SaturationVerdict{AtS: last.At.Seconds(), WindowS: span,
		OfferedPerS: float64(last.Sent-first.Sent) / span, CompletedPerS: float64(last.Done-first.Done) / span,
		InFlightFrom: first.Sent - first.Done, InFlightTo: last.Sent - last.Done}
	var xs, inflight, tx, ttft []float64
	for _, s := range win {
		x := (s.At - first.At).Seconds()
		xs = append(xs, x)
		inflight = append(inflight, float64(s.Sent-s.Done))
		if s.TTFTP50 >= 0 {
			tx = append(tx, x)
			ttft = append(ttft, float64(s.TTFTP50)/float64(time.Millisecond))
		}
	}
	if len(ttft) < 4 {
		return v
	}
	half := len(ttft) / 2
	v.TTFTFromMs, v.TTFTToMs = median(ttft[:half]), median(ttft[half:])
	minTTFT := float64(rule.MinTTFT) / float64(time.Millisecond)
	switch {
	case v.OfferedPerS <= 0 || v.CompletedPerS >= rule.CompletionRatio*v.OfferedPerS:
	case slope(xs, inflight) <= 0 || v.InFlightTo <= v.InFlightFrom:
	case slope(tx, ttft) <= 0 || v.TTFTToMs <= v.TTFTFromMs || median(ttft) < minTTFT:
	default:
		v.Saturated = true
		v.Reason = fmt.Sprintf("%s: over the last %.0f s, %d → %d requests in flight and TTFT p50 %.0f → %.0f ms, still rising",
			OverSaturated(v.OfferedPerS, v.CompletedPerS), span, v.InFlightFrom, v.InFlightTo, v.TTFTFromMs, v.TTFTToMs)
	}
	return v
}

// slope is the least-squares slope of ys over xs (0 for fewer than two points or no spread).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// SaturationWatch builds the detector's series from a live run: Finished is told of each
// finished request (from any goroutine), Tick closes a bucket with the run's cumulative counts
// and judges the series so far. It holds one sample per bucket and the TTFTs of the open one.
type SaturationWatch struct {
	Rule SaturationRule

	mu     sync.Mutex
	ttfts  []float64 // ms, of the open bucket
	series []SaturationSample
}

// Finished counts one finished request; ttft < 0 when it had no first token.
func (w *SaturationWatch) Finished(ttft time.Duration) {
	if ttft < 0 {
		return
	}
	w.mu.Lock()
	w.ttfts = append(w.ttfts, float64(ttft)/float64(time.Millisecond))
	w.mu.Unlock()
}

// Tick closes the bucket ending at at (from the run's start) with the cumulative sent and
// finished counts, and judges the series.
func (w *SaturationWatch) Tick(at time.Duration, sent, done int64) SaturationVerdict {
	w.mu.Lock()
	s := SaturationSample{At: at, Sent: sent, Done: done, TTFTP50: -1}
	if len(w.ttfts) > 0 {
		s.TTFTP50 = time.Duration(median(w.ttfts) * float64(time.Millisecond))
	}
	w.ttfts = w.ttfts[:0]
	w.series = append(w.series, s)
	series := w.series
	w.mu.Unlock()
	return JudgeSaturation(series, w.Rule)
}

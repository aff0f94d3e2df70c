package metrics

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// SweepPoint is one load point of a sweep: the offered load and what the run achieved.
type SweepPoint struct {
	// Rate is the offered load: requests per second (open loop) or the concurrency (closed loop).
	Rate             float64 `json:"rate"`
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	GoodputFraction  float64 `json:"goodput_fraction"`
	GoodputPerS      float64 `json:"goodput_per_s"`
	TTFTP50          float64 `json:"ttft_p50_ms"`
	TTFTP99          float64 `json:"ttft_p99_ms"`
	TPOTP50          float64 `json:"tpot_p50_ms"`
	TPOTP99          float64 `json:"tpot_p99_ms"`
	ITLP99           float64 `json:"itl_p99_ms"`
	E2EP99           float64 `json:"e2e_p99_ms"`
	FailedFraction   float64 `json:"failed_fraction"`
	// Saturated is true when the endpoint could not keep up with the offered load (see
	// Saturated); Reason says why.
	Saturated bool `json:"saturated"`
	// Limited, when set, says why this point measured the harness rather than the server: the
	// client was the bottleneck (schedule lag or CPU), or the sending window was too short for
	// completions to show saturation (a short trace at a high rate or time scale). A limited
	// point is never the capacity, nor the failing bound of the search.
	Limited string `json:"limited,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Dir is the point's results directory (filled by the caller).
	Dir string `json:"dir,omitempty"`
	// Quality is the pass rate of the graded requests at this load (issue 17), when the
	// trace carries expect checks.
	Quality *QualityCounts `json:"quality,omitempty"`
	// JoulesPerRequest and OutputTokensPerJoule are the point's energy figures (issue 39;
	// energy.go) when its GPUs' power was read and known; absent otherwise.
	JoulesPerRequest     *float64 `json:"joules_per_request,omitempty"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule,omitempty"`

	// StoppedAtS (issue 39): when the online watch stopped the point at saturation
	// (--stop-on-saturation), the seconds it ran; 0 when it ran to the end.
	StoppedAtS float64 `json:"stopped_at_s,omitempty"`
}

// SaturationRatio: an open-loop point that completes fewer than this fraction of the requests
// it sends, counted over the time it was sending, is saturated (the queue grows without
// bound). It is lenient because requests still in flight when sending stops are not yet
// complete; the TTFT-growth rule (see ttftGrowth) catches queues that build more slowly.
const SaturationRatio = 0.8

// QueueGrowth is the words for an offered load beyond what the server serves, said of a
// saturated sweep point (PointFrom) and of an overloaded simulation (runner/engineadapter).
const QueueGrowth = "requests queue faster than they are served"

// PointFrom reads a sweep point from a run's summary. openLoop says whether rate is a request
// rate (saturation is then judged against it) or a concurrency.
func PointFrom(rate float64, openLoop bool, s *Summary) SweepPoint {
	p := SweepPoint{
		Rate:             rate,
		RequestsPerS:     s.Throughput.RequestsPerS,
		OutputTokensPerS: s.Throughput.OutputTokensPerS,
		GoodputFraction:  s.Goodput.Fraction,
		GoodputPerS:      s.Goodput.RequestsPerS,
		TTFTP50:          s.Latency.TTFT.P50,
		TTFTP99:          s.Latency.TTFT.P99,
		TPOTP50:          s.Latency.TPOT.P50,
		TPOTP99:          s.Latency.TPOT.P99,
		ITLP99:           s.Latency.ITL.P99,
		E2EP99:           s.Latency.E2E.P99,
	}
	if s.Requests.Total > 0 {
		p.FailedFraction = float64(s.Requests.Failed) / float64(s.Requests.Total)
	}
	if s.Quality != nil && s.Quality.Graded > 0 {
		q := s.Quality.QualityCounts
		p.Quality = &q
	}
	if e := s.Energy; e != nil && e.Available {
		p.JoulesPerRequest, p.OutputTokensPerJoule = e.JoulesPerRequest, e.OutputTokensPerJoule
	}
	grew, from, to := ttftGrowth(s.TimeSeries)
	done, sent := completedWhileSending(s.TimeSeries)
	window := sendingWindow(s.TimeSeries)
	// A request's service time without its queueing (which saturation inflates).
	service := math.Max(s.Latency.E2E.P50-s.Latency.TTFT.P50, 0) / 1000
	shortWindow := openLoop && !grew && window > 0 && service > 0 && window < minWindowE2Es*service
	switch {
	case s.Client.Limited:
		p.Limited = "client-limited: " + strings.TrimPrefix(s.Client.Reason, "client-limited: ")
	case shortWindow:
		p.Limited = fmt.Sprintf("window-limited: requests were sent over %.1f s, under %g× their median decode time of %.1f s, too short for completions to show whether the server keeps up (use a longer trace or --min-duration)", window, minWindowE2Es, service)
	}
	switch {
	case openLoop && grew:
		p.Saturated = true
		p.Reason = fmt.Sprintf("TTFT p50 grew from %.0f ms to %.0f ms while sending: %s", from, to, QueueGrowth)
	case openLoop && !shortWindow && sent > 0 && float64(done) < SaturationRatio*float64(sent):
		p.Saturated = true
		p.Reason = fmt.Sprintf("completed %d requests while %d were sent (below %.0f%%)", done, sent, SaturationRatio*100)
	case p.FailedFraction > 0.5:
		p.Saturated = true
		p.Reason = fmt.Sprintf("%.0f%% of requests failed", p.FailedFraction*100)
	}
	if v := s.Saturation; v != nil && v.Saturated {
		// Issue 39: the online watch judged it over-saturated while it ran (and may have
		// stopped it, its in-flight requests cancelled: they are not the server's failures).
		p.Saturated, p.Reason, p.Limited = true, v.Reason, ""
		if v.Stopped {
			p.StoppedAtS = v.AtS
		}
	}
	return p
}

// sendingSpan returns the first and last time-series buckets in which requests were sent.
func sendingSpan(ts *TimeSeries) (first, last int, ok bool) {
	if ts == nil {
		return 0, 0, false
	}
	first, last = -1, -1
	for i, n := range ts.Sent {
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
}

// ttftGrowth reports whether the median TTFT grew markedly from the first third to the last
// third of the buckets in which requests were sent: more than twice as high and by more than
// 100 ms, the mark of a queue that grows without bound. It needs six buckets with first
// tokens; from and to are the two medians in ms.
func ttftGrowth(ts *TimeSeries) (grew bool, from, to float64) {
	first, last, ok := sendingSpan(ts)
	if !ok {
		return false, 0, 0
	}
	var vals []float64
	for i := first; i <= last && i < len(ts.TTFTP50); i++ {
		if ts.TTFTP50[i] > 0 {
			vals = append(vals, ts.TTFTP50[i])
		}
	}
	if len(vals) < 6 {
		return false, 0, 0
	}
	third := len(vals) / 3
	from, to = median(vals[:third]), median(vals[len(vals)-third:])
	return to > 2*from && to-from > 100, from, to
}

// completedWhileSending counts requests completed and sent during the sending span.
// minWindowE2Es is how many median decode times (E2E − TTFT) the sending window must span for
// the completion count to tell saturation.
const minWindowE2Es = 4.0

// sendingWindow is the span of the buckets in which requests were sent, in seconds.
func sendingWindow(ts *TimeSeries) float64 {
	first, last, ok := sendingSpan(ts)
	if !ok {
		return 0
	}
	return float64(last-first+1) * ts.BucketS
}

func completedWhileSending(ts *TimeSeries) (done, sent int) {
	first, last, ok := sendingSpan(ts)
	if !ok {
		return 0, 0
	}
	for i := first; i <= last; i++ {
		sent += ts.Sent[i]
		if i < len(ts.Completed) {
			done += ts.Completed[i]
		}
		if i < len(ts.Failed) {
			done += ts.Failed[i]
		}
	}
	return done, sent
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

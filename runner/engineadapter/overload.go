package engineadapter

import (
	"fmt"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// queueChecks is the number of equal parts of the arrival span at whose ends a queueWatch
// counts the engine's waiting requests.
const queueChecks = 10

// minQueueWatch is the fewest requests a queueWatch judges: below it, ten parts of the span
// hold too few arrivals for a queue's growth to tell overload from chance.
const minQueueWatch = 100

// minWindowServices is how many mean service times (first scheduled to finish) the watched
// window must span for its completions to measure a capacity: a queue that grows over a
// shorter window may only be waiting for the first requests to finish (a sweep's point is
// window-limited by the same rule, metrics/sweep.go).
const minWindowServices = 4

// queueWatch tells, from the engine's ground truth, whether a simulated trace offered more
// load than the engine serves: the requests waiting (arrived, not yet scheduled) at the ends
// of ten equal parts of the arrival span grow from each end to the next, the first one
// included, so the queue grew for the whole run, and the window from the first end to the
// last spans minWindowServices mean service times. The capacity is what the engine served
// meanwhile: the requests (and their output tokens) that finished between the first end and
// the last, per second. It sees each timeline once, in any order, and holds nothing per
// request; a nil *queueWatch watches nothing.
type queueWatch struct {
	first, last  time.Duration // the span of the (scaled) arrivals
	n            int           // requests in the trace
	at           [queueChecks]time.Duration
	waiting      [queueChecks]int
	served       int           // requests that finished in (at[0], at[last]]
	servedTokens int64         // their output tokens
	services     int           // requests that were scheduled and finished
	serviceTime  time.Duration // their times from first scheduled to finish, summed
}

// newQueueWatch watches a trace of n requests arriving from first to last (the engine's
// times).
func newQueueWatch(first, last time.Duration, n int) *queueWatch {
	w := &queueWatch{first: first, last: last, n: n}
	for i := range w.at {
		w.at[i] = first + time.Duration(float64(last-first)*float64(i+1)/queueChecks)
	}
	w.at[queueChecks-1] = last
	return w
}

// observe counts one finished (or never scheduled) timeline.
func (w *queueWatch) observe(tl *refengine.Timeline) {
	if w == nil {
		return
	}
	for i, at := range w.at {
		if tl.Arrival <= at && (tl.FirstScheduled < 0 || tl.FirstScheduled > at) {
			w.waiting[i]++
		}
	}
	if !tl.Done || tl.FirstScheduled < 0 {
		return
	}
	w.services++
	w.serviceTime += tl.Finish - tl.FirstScheduled
	if tl.Finish > w.at[0] && tl.Finish <= w.at[queueChecks-1] {
		w.served++
		w.servedTokens += int64(tl.OutputTokens)
	}
}

// overloaded reports whether the waiting queue grew for the whole run.
func (w *queueWatch) overloaded() bool {
	if w.n < minQueueWatch || w.last <= w.first || w.waiting[0] == 0 || w.served == 0 {
		return false
	}
	meanService := w.serviceTime / time.Duration(w.services) // services >= served > 0
	if w.at[queueChecks-1]-w.at[0] < minWindowServices*meanService {
		return false
	}
	for i := 1; i < queueChecks; i++ {
		if w.waiting[i] <= w.waiting[i-1] {
			return false
		}
	}
	return true
}

// capacity is what the engine served while the queue was watched: requests and output tokens
// per second.
func (w *queueWatch) capacity() (reqPerS, tokPerS float64) {
	window := (w.at[queueChecks-1] - w.at[0]).Seconds()
	if window <= 0 {
		return 0, 0
	}
	return float64(w.served) / window, float64(w.servedTokens) / window
}

// warning is the summary's warning for an overloaded run ("" when the run was not), in the
// words a sweep uses for a saturated point (metrics.QueueGrowth) and a run stopped at
// saturation (metrics.OverSaturated).
func (w *queueWatch) warning() string {
	if w == nil || !w.overloaded() {
		return ""
	}
	offered := float64(w.n-1) / (w.last - w.first).Seconds()
	reqs, toks := w.capacity()
	return fmt.Sprintf("saturated: %s, the engine's capacity (%.0f output tok/s) measured while its waiting queue grew from %d to %d requests: %s; TTFT and E2E include a wait that grows with the trace's length (lower --rate-scale to measure below capacity)",
		metrics.OverSaturated(offered, reqs), toks, w.waiting[0], w.waiting[queueChecks-1], metrics.QueueGrowth)
}

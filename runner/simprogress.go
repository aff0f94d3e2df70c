package runner

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// SimProgressOptions configure the live display of a simulation (llmbench simulate).
type SimProgressOptions struct {
	// W receives the display (stderr); Terminal redraws a panel in place, otherwise a plain
	// line comes every few seconds. Width bounds a panel's lines (0: 100 columns).
	W        io.Writer
	Terminal bool
	Width    int
	// Trace is the trace being simulated: its length is the request total and its span over
	// RateScale (≤ 0: 1) the nominal length in virtual time.
	Trace     traces.Source
	RateScale float64
	// Every is the refresh period (0: the display's default); Now the wall clock (nil:
	// time.Now). Tests set both.
	Every time.Duration
	Now   func() time.Time
}

// SimProgress is the live view of a simulation: the virtual clock (the latest arrival of a
// finished request: the simulator hands records over in about arrival order, and the trace's
// nominal length is in arrivals too), the requests done and failed, the rate at which they are
// simulated in wall time, and the rolling TTFT, ITL and output tokens of the requests that
// arrived in the last 10 s of virtual time. It only reads the records it is handed; the
// results are the records' summary, as for run.
type SimProgress struct {
	virtual, done, failed, tokens atomic.Int64
	d                             *progress.Display
}

// StartSimProgress starts drawing; wrap the simulator's Producer with Wrap and call Stop when
// the simulation ends.
func StartSimProgress(o SimProgressOptions) *SimProgress {
	rate := o.RateScale
	if rate <= 0 {
		rate = 1
	}
	first, last := o.Trace.Span()
	expected := time.Duration(float64(metrics.ReplayLength(first, last, o.Trace.Len())) / rate)
	sp := &SimProgress{}
	sp.d = progress.Start(progress.Options{
		W: o.W, Terminal: o.Terminal, Width: o.Width, Every: o.Every, Now: o.Now,
		Total: o.Trace.Len(), Expected: expected,
		Snap: func() progress.Snapshot {
			return progress.Snapshot{Done: sp.done.Load(), Failed: sp.failed.Load(), OutputTokens: sp.tokens.Load()}
		},
		Virtual: func() time.Duration { return time.Duration(sp.virtual.Load()) },
	})
	return sp
}

// Wrap returns produce with every finished Record shown on the display before it reaches the
// sink (which may recycle it; the sink may be called concurrently). The display draws its last
// frame and stops when produce returns, before the summary is made.
func (sp *SimProgress) Wrap(produce Producer) Producer {
	return func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		defer sp.Stop()
		return produce(ctx, trace, func(r *metrics.Record) {
			sp.observe(r)
			sink(r)
		})
	}
}

func (sp *SimProgress) observe(r *metrics.Record) {
	at := r.Intended
	for {
		cur := sp.virtual.Load()
		if at <= cur || sp.virtual.CompareAndSwap(cur, at) {
			break
		}
	}
	q := liveRequest(r)
	q.Lag = -1 // no client on the virtual clock
	q.At = time.Duration(at)
	sp.d.Observe(q)
	sp.tokens.Add(int64(r.OutputTokens))
	if !r.OK() {
		sp.failed.Add(1)
	}
	sp.done.Add(1)
}

// Stop draws the final state and ends the display; later calls do nothing.
func (sp *SimProgress) Stop() { sp.d.Stop() }

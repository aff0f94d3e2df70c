package runner

import (
	"context"
	"sync"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// HTTPProducer replays requests with loadgen against an endpoint. When timeScale > 1 the
// target is a reference engine running timeScale times faster than real time; the trace is
// compressed by the same factor and every recorded time is stretched back, so the numbers read
// as if the run had happened in real time (the harness's own overhead is magnified by the
// factor; use it for quick checks, not for client-health figures).
func HTTPProducer(lo loadgen.Options, timeScale float64) Producer {
	return newSizingCache(lo.Sizer).producer(lo, timeScale)
}

// HTTPProducers returns an arm's HTTPProducer and its salted variant (SaltedHTTPProducer),
// sharing one prompt sizing: the target is measured once for the warm-up and every repeat,
// salted or not (the sizing prices the target's tokenizer, which no salt changes).
func HTTPProducers(lo loadgen.Options, timeScale float64) (Producer, func(salt uint64) Producer) {
	c := newSizingCache(lo.Sizer)
	return c.producer(lo, timeScale), c.salted(lo, timeScale)
}

// sizingCache holds the prompt sizing measured by the first run of a target, reused by the
// later ones (ab's repeats of an arm): one target, one measurement.
type sizingCache struct {
	mu    sync.Mutex
	sizer *loadgen.Sizer
}

func newSizingCache(s *loadgen.Sizer) *sizingCache { return &sizingCache{sizer: s} }

func (c *sizingCache) get() *loadgen.Sizer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sizer
}

func (c *sizingCache) keep(s *loadgen.Sizer) {
	if s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizer = s
}

func (c *sizingCache) producer(lo loadgen.Options, timeScale float64) Producer {
	return func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		o := lo
		o.Sizer = c.get()
		if timeScale > 1 {
			if o.RateScale == 0 {
				o.RateScale = 1
			}
			o.RateScale *= timeScale
			o.Warmup = scaleDur(o.Warmup, 1/timeScale)
			o.Cooldown = scaleDur(o.Cooldown, 1/timeScale)
			o.Duration = scaleDur(o.Duration, 1/timeScale)
			// Timeouts are given in the engine's (real-GPU) time, like every reported time.
			o.Target.Timeouts.Connect = scaleDur(o.Target.Timeouts.Connect, 1/timeScale)
			o.Target.Timeouts.Headers = scaleDur(o.Target.Timeouts.Headers, 1/timeScale)
			o.Target.Timeouts.FirstToken = scaleDur(o.Target.Timeouts.FirstToken, 1/timeScale)
			o.Target.Timeouts.Idle = scaleDur(o.Target.Timeouts.Idle, 1/timeScale)
			o.Target.Timeouts.Total = scaleDur(o.Target.Timeouts.Total, 1/timeScale)
			o.CancelScale = timeScale // cancel_after_ms, like the timeouts (loadgen/cancel.go)
			inner := sink
			sink = func(r *metrics.Record) {
				scaleRecordTimes(r, timeScale)
				inner(r)
			}
		}
		res, err := loadgen.RunSource(ctx, trace, o, sink)
		if err != nil {
			return nil, err
		}
		c.keep(res.Sizer)
		p := &Produced{Start: res.Start, Model: res.Model, Sizing: res.Sizer.String(), Interrupted: res.Interrupted, ClientCPUFraction: res.ClientCPUFraction, CPUStealFraction: res.CPUStealFraction, Skipped: res.Skipped, Err: res.TraceErr, LateStart: res.LateStart}
		if timeScale > 1 {
			p.Duration = scaleDur(res.Elapsed, timeScale)
		}
		return p, nil
	}
}

// ThenClose runs p and calls done right after it returns: a sweep point's embedded engine is
// stopped at once, so that points do not share engine state.
func ThenClose(p Producer, done func()) Producer {
	return func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		defer done()
		return p(ctx, trace, sink)
	}
}

func scaleDur[T ~int64](d T, f float64) T { return T(float64(d) * f) }

// scaleRecordTimes multiplies every time of r by f (used to map a time-scaled run back to
// real time), except the schedule lag (Dispatched - Intended), which stays in wall time: it
// measures the client, which did not run any slower.
func scaleRecordTimes(r *metrics.Record, f float64) {
	s := func(t int64) int64 { return int64(float64(t) * f) }
	lag := r.Dispatched - r.Intended
	r.Intended = s(r.Intended)
	if r.Dispatched != 0 {
		r.Dispatched = r.Intended + lag
	}
	r.Sent = s(r.Sent)
	r.Headers = s(r.Headers)
	r.FirstToken = s(r.FirstToken)
	if r.FirstAnswer != 0 {
		r.FirstAnswer = s(r.FirstAnswer)
	}
	r.End = s(r.End)
	for i := range r.Chunks {
		r.Chunks[i].T = s(r.Chunks[i].T)
	}
	// Agentic sessions: the waits a turn's Intended includes.
	r.Think, r.ToolDelay = s(r.Think), s(r.ToolDelay)
}

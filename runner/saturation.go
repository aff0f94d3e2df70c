package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// SaturationOptions configures the online saturation watch of an open-loop run over HTTP
// (issue 39, docs/capacity.md): every Every of wall time it closes a bucket of the run's sent
// and finished counts and its TTFTs, and judges the series with metrics.JudgeSaturation.
type SaturationOptions struct {
	// Rule is the detector's rule (zero fields: its defaults), in the engine's time under a
	// time scale.
	Rule metrics.SaturationRule
	// Stop cancels the run at the first saturated verdict (--stop-on-saturation): requests in
	// flight are recorded as cancelled, those not yet sent are left out (loadgen.ErrStopped).
	// Without it the run goes on and the summary says when it saturated.
	Stop bool
	// Every is the bucket length in wall time (0: one second of the engine's time, one second
	// over the time scale).
	Every time.Duration
	// OnSaturated, when set, is told of the first saturated verdict (the CLI prints a line).
	OnSaturated func(metrics.SaturationVerdict)
	// Now is the wall clock (time.Now when nil).
	Now func() time.Time
}

// saturationWatch is one run's watch: its series, its latest verdict for the live display,
// and the first saturated one.
type saturationWatch struct {
	o         SaturationOptions
	timeScale float64
	prog      *loadgen.Progress
	w         metrics.SaturationWatch

	mu     sync.Mutex
	latest metrics.SaturationVerdict
	first  *metrics.SaturationVerdict
	ticks  int
}

func newSaturationWatch(o SaturationOptions, prog *loadgen.Progress, timeScale float64) *saturationWatch {
	timeScale = max(timeScale, 1)
	if o.Every <= 0 {
		o.Every = time.Duration(float64(time.Second) / timeScale)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &saturationWatch{o: o, timeScale: timeScale, prog: prog, w: metrics.SaturationWatch{Rule: o.Rule}}
}

// SaturationProducer is HTTPProducer with the saturation watch of o (lo.Progress is made when
// nil: the watch reads its counters). A closed loop cannot over-saturate (it sends only as
// requests finish); the caller refuses the watch for one.
func SaturationProducer(lo loadgen.Options, timeScale float64, o SaturationOptions) Producer {
	if lo.Progress == nil {
		lo.Progress = &loadgen.Progress{}
	}
	return newSaturationWatch(o, lo.Progress, timeScale).producer(HTTPProducer(lo, timeScale))
}

// producer wraps inner (whose loadgen.Options.Progress is s.prog) with the watch.
func (s *saturationWatch) producer(inner Producer) Producer {
	return func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(done, cancel)
		}()
		p, err := inner(ctx, trace, func(r *metrics.Record) {
			if r.OK() && r.FirstToken != 0 {
				s.w.Finished(time.Duration(r.FirstToken - r.Intended))
			}
			sink(r)
		})
		close(done)
		wg.Wait()
		if p != nil {
			s.settle(p)
		}
		return p, err
	}
}

// loop ticks until done, judging each bucket; with Stop, the first saturated verdict cancels
// the run with loadgen.ErrStopped.
func (s *saturationWatch) loop(done <-chan struct{}, cancel context.CancelCauseFunc) {
	t := time.NewTicker(s.o.Every)
	defer t.Stop()
	var start time.Time // the end of the first bucket with a request sent, less one bucket
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		sent, fin := s.prog.Sent.Load(), s.prog.Done.Load()
		now := s.o.Now()
		if start.IsZero() {
			if sent == 0 {
				continue
			}
			start = now.Add(-s.o.Every)
		}
		at := time.Duration(float64(now.Sub(start)) * s.timeScale)
		v := s.w.Tick(at, sent, fin)
		if s.record(v) && s.o.Stop {
			cancel(fmt.Errorf("%w: %s", loadgen.ErrStopped, v.Reason))
			return
		}
	}
}

// record keeps v as the latest verdict and reports whether it is the first saturated one.
func (s *saturationWatch) record(v metrics.SaturationVerdict) bool {
	s.mu.Lock()
	s.latest = v
	s.ticks++
	first := v.Saturated && s.first == nil
	if first {
		v.Stopped = s.o.Stop
		s.first = &v
	}
	s.mu.Unlock()
	if first && s.o.OnSaturated != nil {
		s.o.OnSaturated(v)
	}
	return first
}

// settle adds the first saturated verdict to the run's Produced, and its warning.
func (s *saturationWatch) settle(p *Produced) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		return
	}
	v := *s.first
	p.Saturation = &v
	p.Warnings = append(p.Warnings, saturationWarning(v))
}

// saturationWarning is the summary's warning for a saturated verdict.
func saturationWarning(v metrics.SaturationVerdict) string {
	w := "saturated: " + v.Reason
	if v.Stopped {
		w += fmt.Sprintf("; stopped at %.0f s (--stop-on-saturation): requests in flight were cancelled, the rest not sent", v.AtS)
	}
	return w
}

// note is the live display's line about saturation.
func (s *saturationWatch) note() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rule := s.o.Rule
	if rule.MinTime <= 0 {
		rule.MinTime = metrics.DefaultSaturationMinTime
	}
	switch {
	case s.first != nil && s.first.Stopped:
		return "saturation: " + s.first.Reason + " — stopping"
	case s.first != nil:
		return "saturation: " + s.first.Reason
	case s.latest.WindowS > 0:
		return fmt.Sprintf("saturation: not saturated (completed %.3g of %.3g req/s sent over the last %.0f s)", s.latest.CompletedPerS, s.latest.OfferedPerS, s.latest.WindowS)
	default:
		return fmt.Sprintf("saturation: watching; judged from %.0f s", rule.MinTime.Seconds())
	}
}

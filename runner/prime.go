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

// PrefixPriming makes a run start its measured window from a known prefix cache (issue 34,
// controlled hit rate): the server's cache is flushed where the backend allows it
// (cacheflush.go), then one request per prefix group of the trace sends the group's shared
// prefix (traces.PrimeRequests). Their records are not kept, and the server's counters are
// scraped from after them. With RequestedHitRate set, the run checks the measured window's
// hit rate against it and warns when it misses (metrics.CheckPrefixHitRate).
type PrefixPriming struct {
	// RequestedHitRate is the hit rate the trace is meant to run at; < 0: none (prime only).
	RequestedHitRate float64
	// Tolerance is the miss beyond which the run warns (<= 0: metrics.DefaultPrefixHitTolerance).
	Tolerance float64
}

// primed is what priming did, for the summary.
type primed struct {
	block *metrics.PrefixPriming
	reqs  []traces.Request // the priming requests, seen before the trace in its designed reuse
	warns []string
}

// primePrefixes flushes the target's prefix cache and sends the trace's priming requests with
// the run's load options (prompts sized by produce's sizing, as the measured run's). A flush
// the server does not offer, or priming requests that fail, are warnings, not errors; a trace
// that cannot be read is an error.
func primePrefixes(ctx context.Context, s HTTPRun, sc *sizingCache) (*primed, error) {
	reqs, err := s.Trace.Requests()
	if err != nil {
		return nil, fmt.Errorf("prime prefixes: %w", err)
	}
	bt := s.Load.PromptBlockTokens
	if bt <= 0 {
		bt = traces.DefaultBlockTokens
	}
	p := &primed{block: &metrics.PrefixPriming{}, reqs: traces.PrimeRequests(reqs, bt)}
	if r := s.Prime.RequestedHitRate; r >= 0 {
		p.block.RequestedHitRate = &r
		p.block.Tolerance = s.Prime.Tolerance
		if p.block.Tolerance <= 0 {
			p.block.Tolerance = metrics.DefaultPrefixHitTolerance
		}
	}
	if fl, err := NewCacheFlush(ctx, s.Load.Target.URL, s.Load.Target.APIKey); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.block.FlushNote = err.Error()
		p.warns = append(p.warns, "prefix cache not flushed before priming (the measured window starts from whatever the server held): "+err.Error())
	} else {
		p.block.Flushed = fl.Method
	}
	if len(p.reqs) == 0 {
		p.warns = append(p.warns, "prefix priming: nothing to prime, the trace has no prefix group (requests whose synthesized prompts share leading hash_ids)")
		return p, nil
	}
	for _, r := range p.reqs {
		p.block.Tokens += int64(r.InputTokens)
	}
	p.block.Groups = len(p.reqs)
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, "prefix priming: sending %d request(s), one per prefix group (%d prompt tokens)\n", len(p.reqs), p.block.Tokens)
	}
	failed, first, err := sendPriming(ctx, s, sc, p.reqs)
	if err != nil {
		return nil, fmt.Errorf("prime prefixes: %w", err)
	}
	if p.block.Failed = failed; failed > 0 {
		p.warns = append(p.warns, fmt.Sprintf("prefix priming: %d of %d priming requests failed (first: %s); their groups start uncached", failed, len(p.reqs), first))
	}
	return p, nil
}

// sendPriming sends reqs at once, open loop, with the run's target and prompt options, and
// returns how many failed and the first failure.
func sendPriming(ctx context.Context, s HTTPRun, sc *sizingCache, reqs []traces.Request) (int, string, error) {
	lo := s.Load
	lo.Concurrency, lo.MaxWaiting, lo.RateScale = 0, 0, 1
	lo.Duration, lo.MaxRequests, lo.Repeat = 0, 0, 0
	lo.Warmup, lo.Cooldown = 0, 0
	lo.KeepOutput, lo.Progress = false, nil
	lo.StartAt, lo.Whole = time.Time{}, loadgen.TraceShape{}
	var mu sync.Mutex
	failed, first := 0, ""
	// Timeouts and times are the engine's under a time scale, as for the measured run.
	_, err := sc.producer(lo, s.TimeScale)(ctx, traces.FromSlice(reqs), func(r *metrics.Record) {
		if r.OK() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if failed++; first == "" {
			first = string(r.Failure)
			if r.Error != "" {
				first += ": " + r.Error
			}
		}
	})
	return failed, first, err
}

// finish fills the summary's prefix_priming block and adds the warnings of priming and of the
// hit-rate check.
func (p *primed) finish(sum *metrics.Summary) {
	sum.PrefixPriming = p.block
	sum.Warnings = append(sum.Warnings, p.warns...)
	sum.Warnings = append(sum.Warnings, metrics.CheckPrefixHitRate(p.block, sum.PrefixCache, sum.ServerPrefixCache)...)
}

// primedRequests are the priming requests sent before the run, if any.
func (o *Options) primedRequests() []traces.Request {
	if o.primed == nil {
		return nil
	}
	return o.primed.reqs
}

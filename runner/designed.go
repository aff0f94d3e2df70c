package runner

import (
	"sync"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// designedReuse is the summary's source of the trace's designed prefix-cache reuse
// (metrics.Options.DesignedReuse, traces/designed.go). The trace is walked on the first call
// only, so a run whose server reports no cached tokens never reads it again; a trace that
// cannot be read leaves every request unknown (the summary then has no designed rate).
// The requests of primed (traces.PrimeRequests, prime.go) count as sent before the trace.
func designedReuse(src traces.Source, primed []traces.Request, blockTokens int) func(id string, repeat int) (int64, int64, bool) {
	var once sync.Once
	var byID *traces.DesignedIndex
	return func(id string, repeat int) (int64, int64, bool) {
		once.Do(func() {
			// Walked as it is read: the trace is not held (a simulation's summary asks while
			// the simulation runs).
			byID, _ = traces.IndexDesignedReuse(src, primed, blockTokens)
		})
		d, ok := byID.Lookup(id)
		if !ok {
			return 0, 0, false
		}
		if repeat > 0 {
			return d.Again, d.Input, true
		}
		return d.First, d.Input, true
	}
}

// withDesignedReuse is mopts with the designed reuse of trace, blockTokens tokens per hash_ids
// block (<= 0: traces.DefaultBlockTokens); unchanged when trace is nil.
func withDesignedReuse(mopts metrics.Options, trace traces.Source, blockTokens int) metrics.Options {
	return withDesignedReuseAfter(mopts, trace, nil, blockTokens)
}

// withDesignedReuseAfter is withDesignedReuse when the requests of primed were sent before the
// trace (prime.go).
func withDesignedReuseAfter(mopts metrics.Options, trace traces.Source, primed []traces.Request, blockTokens int) metrics.Options {
	if trace != nil {
		mopts.DesignedReuse = designedReuse(trace, primed, blockTokens)
	}
	return mopts
}

// keepDesigned copies old's designed prefix-cache reuse into sum, recomputed from the same
// records without the trace (Resummarize): the requests it counts — succeeded, steady,
// reporting — do not depend on the metric options, so it holds as long as the block counts the
// same requests.
func keepDesigned(sum, old *metrics.Summary) {
	pc, was := sum.PrefixCache, old.PrefixCache
	if pc == nil || was == nil || was.DesignedHitRate == nil || pc.DesignedHitRate != nil ||
		pc.Reported != was.Reported || pc.PromptTokens != was.PromptTokens {
		return
	}
	d := *was.DesignedHitRate
	pc.DesignedHitRate, pc.DesignedCachedTokens, pc.DesignedPromptTokens = &d, was.DesignedCachedTokens, was.DesignedPromptTokens
	if w := metrics.WarmWarning(pc); w != "" {
		sum.Warnings = append(sum.Warnings, w) // Summarize could not tell without the design
	}
}

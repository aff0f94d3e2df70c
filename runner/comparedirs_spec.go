package runner

import (
	"context"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Speculative acceptance in a comparison (issue 38): each side's pooled summary is computed from
// the records, which carry the per-response fields but not the server's counters; the counters'
// window deltas live in each run's summary.json. attachSpeculative pools them per side (their
// sums over the side's runs) and puts them into the side's summary, so that compare and ab show
// the arms' acceptance beside their facts (reports/speculative.go, specArmFact).
func attachSpeculative(c *metrics.Comparison, base, cand []string) {
	for _, sd := range []struct {
		side *metrics.ComparisonSide
		dirs []string
	}{{&c.Base, base}, {&c.Cand, cand}} {
		if sd.side.Summary == nil {
			continue
		}
		metrics.AttachServerSpeculative(sd.side.Summary, pooledServerSpeculative(sd.dirs))
	}
}

// pooledServerSpeculative sums the server counters' deltas of the runs in dirs (nil when no run
// has them).
func pooledServerSpeculative(dirs []string) *metrics.ServerSpeculative {
	var out *metrics.ServerSpeculative
	for _, d := range dirs {
		s, err := ReadSummary(d)
		if err != nil || s.Speculative == nil || s.Speculative.Server == nil || !s.Speculative.Server.Available {
			continue
		}
		sv := s.Speculative.Server
		if out == nil {
			out = &metrics.ServerSpeculative{Backend: sv.Backend, Available: true, Source: sv.Source, WindowStartS: sv.WindowStartS, WindowEndS: sv.WindowEndS,
				Note: "the counters' deltas summed over the side's runs"}
		}
		out.Drafts += sv.Drafts
		out.DraftTokens += sv.DraftTokens
		out.Accepted += sv.Accepted
		out.Resets += sv.Resets
	}
	if out == nil {
		return nil
	}
	if out.DraftTokens > 0 {
		out.AcceptanceRate = out.Accepted / out.DraftTokens
	}
	if out.Drafts > 0 {
		out.MeanAcceptedLength = 1 + out.Accepted/out.Drafts
	}
	return out
}

// scrapeArm starts polling an arm's /metrics and returns the scraper with produce wrapped to
// stop it when the run's requests are done (as RunHTTP does for run --scrape-metrics).
func scrapeArm(ctx context.Context, a *ArmScrape, produce Producer) (*scraper, Producer) {
	scr := startScraper(ctx, scrapeOptions{URL: a.URL, TimeScale: a.TimeScale})
	return scr, func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		p, err := produce(ctx, trace, sink)
		scr.Stop()
		return p, err
	}
}

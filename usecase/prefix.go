package usecase

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// PrefixOptions are run's controlled prefix-cache hit-rate flags (issue 34;
// docs/prefix-cache.md, "Controlled hit rate").
type PrefixOptions struct {
	Prime     bool     // --prime-prefixes
	HitRate   float64  // --prefix-hit-rate (when HitRateSet)
	Tolerance float64  // --prefix-hit-tolerance
	Workers   []string // --scrape-workers
	// Cold and PromptSalt (issue 45): --cold flushes the server's prefix cache and salts the
	// prompts (a fresh salt unless PromptSalt gives one); --prompt-salt alone salts them.
	Cold       bool
	PromptSalt uint64
	// Draw, when set, draws a fresh salt (tests); nil: crypto/rand.
	Draw func() uint64
	// Changed says which of the flags were given.
	Changed Changed
}

func (f *PrefixOptions) changed(name string) bool { return f.Changed != nil && f.Changed(name) }

// Priming is the run's runner.PrefixPriming (nil without --prime-prefixes or
// --prefix-hit-rate); sharded is whether the run is one shard of several.
func (f *PrefixOptions) Priming(sharded bool) (*runner.PrefixPriming, error) {
	rate := f.changed("prefix-hit-rate")
	if f.changed("prefix-hit-tolerance") && !rate {
		return nil, fmt.Errorf("--prefix-hit-tolerance applies with --prefix-hit-rate")
	}
	if !f.Prime && !rate {
		return nil, nil
	}
	if sharded {
		return nil, fmt.Errorf("--prime-prefixes and --prefix-hit-rate apply to an unsharded run: every shard would flush the cache the others fill")
	}
	p := &runner.PrefixPriming{RequestedHitRate: -1, Tolerance: f.Tolerance}
	if rate {
		if math.IsNaN(f.HitRate) || f.HitRate < 0 || f.HitRate >= 1 {
			return nil, fmt.Errorf("--prefix-hit-rate %v: want a fraction in [0, 1)", f.HitRate)
		}
		p.RequestedHitRate = f.HitRate
	}
	if math.IsNaN(f.Tolerance) || f.Tolerance <= 0 || f.Tolerance >= 1 {
		return nil, fmt.Errorf("--prefix-hit-tolerance %v: want a fraction in (0, 1)", f.Tolerance)
	}
	return p, nil
}

// ScrapeWorkers is --scrape-workers, checked: each an http(s) URL, only with --endpoint.
func (f *PrefixOptions) ScrapeWorkers(endpoint string) ([]string, error) {
	if len(f.Workers) == 0 {
		return nil, nil
	}
	if endpoint == "" {
		return nil, fmt.Errorf("--scrape-workers names the workers behind --endpoint; the embedded engine has none")
	}
	for _, w := range f.Workers {
		if err := CheckEndpoint(w); err != nil {
			return nil, fmt.Errorf("--scrape-workers: %w", err)
		}
	}
	return f.Workers, nil
}

// ColdStart is the run's runner.ColdStart (nil without --cold or --prompt-salt); sharded is
// whether the run is one shard of several.
func (f *PrefixOptions) ColdStart(sharded bool) (*runner.ColdStart, error) {
	if !f.Cold && f.PromptSalt == 0 {
		return nil, nil
	}
	if f.Cold && sharded {
		return nil, fmt.Errorf("--cold applies to an unsharded run: every shard would flush the cache the others fill (salt the shards' prompts alike with --prompt-salt S)")
	}
	c := &runner.ColdStart{Flush: f.Cold, Salt: f.PromptSalt}
	if c.Salt == 0 {
		draw := f.Draw
		if draw == nil {
			draw = drawSalt
		}
		c.Salt = draw()
	}
	return c, nil
}

// drawSalt is a fresh nonzero salt from the operating system's generator.
func drawSalt() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand's Read never fails (Go 1.24)
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// DefaultPrefixHitTolerance is --prefix-hit-tolerance's default.
const DefaultPrefixHitTolerance = metrics.DefaultPrefixHitTolerance

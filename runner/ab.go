package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// Arm is one side of an A/B experiment.
type Arm struct {
	Name    string // "A" or "B" (or a user label)
	Produce Producer
	Info    metrics.RunInfo
	// Config is every configuration fact llmbench can see for this arm (engine flags, model,
	// server version); differences between the arms are listed in the result.
	Config map[string]string
	// Salted, when set, returns the arm's producer with its synthesized prompts salted
	// (workloads.SaltedSeed): AB uses it for the warm-up and every measured run, with salts
	// from ABOptions.SaltNonce (RepeatSalt: the repeat's own with Independence.Salt, else one
	// for the invocation). Without it the arm sends the plain prompts of its seed (and cannot
	// run with Independence.Salt).
	Salted func(salt uint64) Producer
	// Flush drops the prefix cache of the arm's server (CacheFlush.Flush); FlushMethod names
	// how. AB calls it before every measured run when ABOptions.Independence.Flush is set.
	Flush       func(ctx context.Context) error
	FlushMethod string

	// Scrape, when set, polls the arm's Prometheus /metrics during each measured run, as run
	// --scrape-metrics does, so that the arm's summary has its server's counters over the run
	// (the speculative acceptance ab shows in the arm facts, comparedirs_spec.go).
	Scrape *ArmScrape
	// Power are DCGM exporters' metrics URLs (ab --a-power-metrics), polled as given during
	// each measured run as run --power-metrics polls them: the arm's energy comes from them
	// (scrape_energy.go) and their scrapes go to the run's power-metrics.json.
	Power []string
}

// ArmScrape is where an arm's /metrics is (its base URL) and the time scale of an embedded
// engine (0 or 1: real time).
type ArmScrape struct {
	URL       string
	TimeScale float64
}

// ABOptions configures a fair A/B: the identical requests (same prompts and seeds) replayed
// against both arms from the same client, in interleaved repeats A B B A A B …, after a
// warm-up of each arm that is not measured. Independence keeps the repeats independent of
// the servers' prefix caches (salted prompts per repeat, or cache flushes).
type ABOptions struct {
	// Trace is the trace both arms replay (read again for each run); when nil, Requests (held
	// in memory) is.
	Trace    traces.Source
	Requests []traces.Request
	Repeats  int // measured runs per arm (default 2)
	// AutoRepeats keeps adding interleaved repeats, from 2 up to MaxRepeats (default 10),
	// until every --fail-on metric's confidence interval is narrower than its rule's limit
	// (NarrowEnough); Repeats is then ignored. It needs Compare.Thresholds.
	AutoRepeats bool
	MaxRepeats  int
	// WarmupRequests are sent to each arm before the measured runs and discarded (default 8;
	// 0 after defaults means none).
	WarmupRequests int
	NoWarmup       bool
	OutDir         string
	Metrics        metrics.Options
	Compare        metrics.CompareOptions
	HTML           reports.HTMLOptions
	// Independence says how the repeats are kept independent of the servers' prefix caches
	// (abrepeats.go). The zero value sends identical prompts in every repeat.
	Independence Independence
	// OnRun is told before each measured run starts (for progress lines).
	OnRun func(arm string, repeat, of int)
	// BlockTokens is the prompts' tokens per hash_ids block, for the designed prefix-cache
	// reuse (Options.BlockTokens).
	BlockTokens int
	// SaltNonce is this invocation's nonce, from which every prompt salt comes (RepeatSalt),
	// so that an experiment never meets the prompts of an earlier one in a server's prefix
	// cache; the CLI draws a fresh one unless given one to reproduce a run (ab --salt-nonce).
	// 0 is a nonce like any other.
	SaltNonce uint64
}

// ConfigDiff is one configuration fact that differs between the arms.
type ConfigDiff struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// ABResult is a finished A/B experiment.
type ABResult struct {
	Dirs       map[string][]string           `json:"dirs"`
	Order      []string                      `json:"order"`
	ConfigDiff []ConfigDiff                  `json:"config_diff"`
	Comparison *metrics.Comparison           `json:"comparison"`
	Summaries  map[string][]*metrics.Summary `json:"-"`
	// Repeats is the number of measured runs per arm; with AutoRepeats, StopReason says why
	// no more were added.
	Repeats    int    `json:"repeats"`
	StopReason string `json:"stop_reason,omitempty"`
	// Independence says in words how the repeats were kept independent (salted prompts, cache
	// flushes, or neither); ConfigIgnored lists the configuration facts that differed but
	// change with every server process (VolatileConfigKey), left out of ConfigDiff.
	Independence  string   `json:"independence"`
	ConfigIgnored []string `json:"config_ignored,omitempty"`
	// SaltNonce is the invocation's nonce of the prompt salts (ABOptions.SaltNonce): ab
	// --salt-nonce with it sends the same prompts again.
	SaltNonce uint64 `json:"salt_nonce"`
}

// Order returns the interleaved arm order for n repeats: A B, B A, A B, ...
func Order(n int) []int {
	out := make([]int, 0, 2*n)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			out = append(out, 0, 1)
		} else {
			out = append(out, 1, 0)
		}
	}
	return out
}

// AB runs the experiment and compares B (candidate) against A (base) with paired statistics.
func AB(ctx context.Context, opts ABOptions, a, b Arm) (*ABResult, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	arms := []Arm{a, b}
	diff, ignored := diffConfig(a.Config, b.Config)
	res := &ABResult{Dirs: map[string][]string{}, Summaries: map[string][]*metrics.Summary{}, ConfigDiff: diff, ConfigIgnored: ignored,
		SaltNonce: opts.SaltNonce}
	var independenceWarning string
	var err error
	if res.Independence, independenceWarning, err = describeIndependence(opts, arms); err != nil {
		return nil, err
	}
	if !opts.NoWarmup && opts.WarmupRequests > 0 {
		warm, err := traces.Head(opts.Trace, opts.WarmupRequests)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		for _, arm := range arms {
			produce := arm.Produce
			if arm.Salted != nil {
				produce = arm.Salted(RepeatSalt(opts.SaltNonce, 0)) // prompts no measured run sends
			}
			if _, err := produce(ctx, warm, func(*metrics.Record) {}); err != nil {
				return nil, fmt.Errorf("warm-up of arm %s: %w", arm.Name, err)
			}
		}
	}
	copts := opts.Compare
	copts.Summary = opts.Metrics
	if copts.BaseLabel == "" {
		copts.BaseLabel = a.Name
	}
	if copts.CandLabel == "" {
		copts.CandLabel = b.Name
	}
	c, err := runRepeats(ctx, opts, copts, arms, res)
	if err != nil {
		return res, err
	}
	res.Repeats = min(len(res.Dirs[a.Name]), len(res.Dirs[b.Name]))
	if len(res.Dirs[a.Name]) == 0 || len(res.Dirs[b.Name]) == 0 {
		return res, errors.New("interrupted before both arms completed a run")
	}
	if c == nil || c.Base.Runs != len(res.Dirs[a.Name]) || c.Cand.Runs != len(res.Dirs[b.Name]) {
		if c, err = metrics.Compare(sources(res.Dirs[a.Name]), sources(res.Dirs[b.Name]), designedSides(copts, res, a.Name, b.Name)); err != nil {
			return res, err
		}
	}
	if independenceWarning != "" && res.Repeats > 1 {
		c.Warnings = append(c.Warnings, independenceWarning)
	}
	AttachRunFacts(c, res.Dirs[a.Name], res.Dirs[b.Name])
	res.Comparison = c
	if err := WriteJSON(filepath.Join(opts.OutDir, abFile), res); err != nil {
		return res, err
	}
	return res, nil
}

// defaults fills the zero fields (see ABOptions) and checks the automatic repeats.
func (opts *ABOptions) defaults() error {
	if opts.Repeats <= 0 {
		opts.Repeats = 2
	}
	if opts.WarmupRequests == 0 && !opts.NoWarmup {
		opts.WarmupRequests = 8
	}
	if opts.Trace == nil {
		opts.Trace = traces.FromSlice(opts.Requests)
	}
	if !opts.AutoRepeats {
		return nil
	}
	if len(opts.Compare.Thresholds) == 0 {
		return errors.New("automatic repeats need --fail-on rules: they stop when each rule's metric is measured more precisely than its limit")
	}
	if opts.MaxRepeats <= 0 {
		opts.MaxRepeats = 10
	}
	if opts.MaxRepeats < 2 {
		return fmt.Errorf("max repeats %d: automatic repeats need at least 2", opts.MaxRepeats)
	}
	return nil
}

// runRepeats runs the interleaved measured runs into res and returns the last comparison
// made to decide on more repeats (nil without AutoRepeats).
func runRepeats(ctx context.Context, opts ABOptions, copts metrics.CompareOptions, arms []Arm, res *ABResult) (*metrics.Comparison, error) {
	of := opts.Repeats
	if opts.AutoRepeats {
		of = opts.MaxRepeats
	}
	a, b := arms[0], arms[1]
	count := map[string]int{}
	var c *metrics.Comparison
	for rep := 0; rep < of; rep++ {
		for _, idx := range Order(rep + 1)[2*rep:] {
			if ctx.Err() != nil {
				break
			}
			arm := arms[idx]
			count[arm.Name]++
			if opts.OnRun != nil {
				opts.OnRun(arm.Name, count[arm.Name], of)
			}
			if err := runArm(ctx, opts, arm, rep+1, count[arm.Name], res); err != nil {
				return c, err
			}
		}
		if ctx.Err() != nil {
			break
		}
		if !opts.AutoRepeats || rep < 1 {
			continue
		}
		var err error
		if c, err = metrics.Compare(sources(res.Dirs[a.Name]), sources(res.Dirs[b.Name]), designedSides(copts, res, a.Name, b.Name)); err != nil {
			return c, err
		}
		if ok, why := NarrowEnough(c); ok {
			res.StopReason = fmt.Sprintf("after %d repeats: %s", rep+1, why)
			break
		} else if rep+1 == of {
			res.StopReason = fmt.Sprintf("stopped at --max-runs %d: %s", of, why)
		}
	}
	return c, nil
}

// runArm makes arm's n-th measured run, the one of repeat rep (1-based): its cache flushed
// and its prompts salted as opts.Independence says, its results in OutDir/<arm>-<n>.
func runArm(ctx context.Context, opts ABOptions, arm Arm, rep, n int, res *ABResult) error {
	if opts.Independence.Flush {
		if err := arm.Flush(ctx); err != nil {
			return fmt.Errorf("arm %s run %d: flushing the server's prefix cache: %w", arm.Name, n, err)
		}
	}
	produce := arm.Produce
	dir := filepath.Join(opts.OutDir, fmt.Sprintf("%s-%d", arm.Name, n))
	info := arm.Info
	info.Repeat = n
	if arm.Salted != nil {
		salt := measuredSalt(opts.Independence, opts.SaltNonce, rep)
		produce = arm.Salted(salt)
		info.PromptSalt, info.SaltNonce = salt, opts.SaltNonce
	}
	ro := Options{Trace: opts.Trace, OutDir: dir, Metrics: opts.Metrics, Info: info, HTML: opts.HTML, BlockTokens: opts.BlockTokens}
	if arm.Scrape != nil {
		ro.scraper, produce = scrapeArm(ctx, arm.Scrape, produce)
	}
	if len(arm.Power) > 0 {
		ro.power, produce = powerArm(ctx, arm.Power, produce)
	}
	r, err := Execute(ctx, ro, produce)
	if err != nil {
		return fmt.Errorf("arm %s run %d: %w", arm.Name, n, err)
	}
	res.Order = append(res.Order, arm.Name)
	res.Dirs[arm.Name] = append(res.Dirs[arm.Name], dir)
	res.Summaries[arm.Name] = append(res.Summaries[arm.Name], r.Summary)
	return nil
}

// NarrowEnough reports whether every metric named by a --fail-on rule of c has a confidence
// interval narrower than the rule's limit (in the rule's unit: percent of base, or the
// metric's own), and says which are not. A metric with no interval (n/a), or whose verdict is
// withheld (a prefix-cache confound), cannot be settled by more runs and does not hold the
// experiment back.
func NarrowEnough(c *metrics.Comparison) (bool, string) {
	var wide, fine []string
	for _, t := range c.Thresholds {
		for _, m := range c.Metrics {
			if m.Name != t.Metric || m.Verdict == metrics.VerdictNA || m.Verdict == metrics.VerdictWithheld {
				continue
			}
			width := m.CIHigh - m.CILow
			if t.Relative {
				width = m.CIHighPct - m.CILowPct
			}
			limit := t.Value
			if limit < 0 {
				limit = -limit
			}
			desc := fmt.Sprintf("%s interval %.3g wide vs limit %g", m.Name, width, limit)
			if t.Relative {
				desc = fmt.Sprintf("%s interval %.3g%% wide vs limit %g%%", m.Name, width, limit)
			}
			if m.Verdict == metrics.VerdictNotAssessable || width >= limit {
				wide = append(wide, desc)
			} else {
				fine = append(fine, desc)
			}
		}
	}
	if len(wide) > 0 {
		return false, "still too wide: " + strings.Join(wide, "; ")
	}
	return true, "every gated interval is narrower than its limit: " + strings.Join(fine, "; ")
}

// designedSides is copts with each arm's designed prefix-cache hit rate, pooled over its runs
// so far (their summaries carry it), for the confound check (metrics/cacheconfound.go).
func designedSides(copts metrics.CompareOptions, res *ABResult, a, b string) metrics.CompareOptions {
	copts.DesignedHitRate = [2]*float64{metrics.PooledDesignedHitRate(res.Summaries[a]), metrics.PooledDesignedHitRate(res.Summaries[b])}
	return copts
}

func sources(dirs []string) []metrics.Source {
	out := make([]metrics.Source, len(dirs))
	for i, d := range dirs {
		out[i] = metrics.FileSource(filepath.Join(d, RecordsFile))
	}
	return out
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
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
}

// ABOptions configures a fair A/B: the identical requests (same prompts and seeds) replayed
// against both arms from the same client, in interleaved repeats A B B A A B …, after a
// warm-up of each arm that is not measured.
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
	// OnRun is told before each measured run starts (for progress lines).
	OnRun func(arm string, repeat, of int)
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
	if opts.Repeats <= 0 {
		opts.Repeats = 2
	}
	if opts.WarmupRequests == 0 && !opts.NoWarmup {
		opts.WarmupRequests = 8
	}
	if opts.Trace == nil {
		opts.Trace = traces.FromSlice(opts.Requests)
	}
	arms := []Arm{a, b}
	res := &ABResult{Dirs: map[string][]string{}, Summaries: map[string][]*metrics.Summary{}, ConfigDiff: DiffConfig(a.Config, b.Config)}
	if !opts.NoWarmup && opts.WarmupRequests > 0 {
		warm, err := traces.Head(opts.Trace, opts.WarmupRequests)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		for _, arm := range arms {
			if _, err := arm.Produce(ctx, warm, func(*metrics.Record) {}); err != nil {
				return nil, fmt.Errorf("warm-up of arm %s: %w", arm.Name, err)
			}
		}
	}
	if opts.AutoRepeats {
		if len(opts.Compare.Thresholds) == 0 {
			return nil, errors.New("automatic repeats need --fail-on rules: they stop when each rule's metric is measured more precisely than its limit")
		}
		if opts.MaxRepeats <= 0 {
			opts.MaxRepeats = 10
		}
		if opts.MaxRepeats < 2 {
			return nil, fmt.Errorf("max repeats %d: automatic repeats need at least 2", opts.MaxRepeats)
		}
	}
	of := opts.Repeats
	if opts.AutoRepeats {
		of = opts.MaxRepeats
	}
	copts := opts.Compare
	copts.Summary = opts.Metrics
	if copts.BaseLabel == "" {
		copts.BaseLabel = a.Name
	}
	if copts.CandLabel == "" {
		copts.CandLabel = b.Name
	}
	count := map[string]int{}
	var c *metrics.Comparison
	for rep := 0; rep < of; rep++ {
		for _, idx := range Order(rep + 1)[2*rep:] {
			if err := ctx.Err(); err != nil {
				break
			}
			arm := arms[idx]
			count[arm.Name]++
			if opts.OnRun != nil {
				opts.OnRun(arm.Name, count[arm.Name], of)
			}
			dir := filepath.Join(opts.OutDir, fmt.Sprintf("%s-%d", arm.Name, count[arm.Name]))
			info := arm.Info
			info.Repeat = count[arm.Name]
			r, err := Execute(ctx, Options{Trace: opts.Trace, OutDir: dir, Metrics: opts.Metrics, Info: info, HTML: opts.HTML}, arm.Produce)
			if err != nil {
				return res, fmt.Errorf("arm %s run %d: %w", arm.Name, count[arm.Name], err)
			}
			res.Order = append(res.Order, arm.Name)
			res.Dirs[arm.Name] = append(res.Dirs[arm.Name], dir)
			res.Summaries[arm.Name] = append(res.Summaries[arm.Name], r.Summary)
		}
		if ctx.Err() != nil {
			break
		}
		if !opts.AutoRepeats || rep < 1 {
			continue
		}
		var err error
		if c, err = metrics.Compare(sources(res.Dirs[a.Name]), sources(res.Dirs[b.Name]), copts); err != nil {
			return res, err
		}
		if ok, why := NarrowEnough(c); ok {
			res.StopReason = fmt.Sprintf("after %d repeats: %s", rep+1, why)
			break
		} else if rep+1 == of {
			res.StopReason = fmt.Sprintf("stopped at --max-repeats %d: %s", of, why)
		}
	}
	res.Repeats = min(len(res.Dirs[a.Name]), len(res.Dirs[b.Name]))
	if len(res.Dirs[a.Name]) == 0 || len(res.Dirs[b.Name]) == 0 {
		return res, errors.New("interrupted before both arms completed a run")
	}
	if c == nil || c.Base.Runs != len(res.Dirs[a.Name]) || c.Cand.Runs != len(res.Dirs[b.Name]) {
		var err error
		if c, err = metrics.Compare(sources(res.Dirs[a.Name]), sources(res.Dirs[b.Name]), copts); err != nil {
			return res, err
		}
	}
	AttachRunFacts(c, res.Dirs[a.Name], res.Dirs[b.Name])
	res.Comparison = c
	if err := WriteJSON(filepath.Join(opts.OutDir, abFile), res); err != nil {
		return res, err
	}
	return res, nil
}

// NarrowEnough reports whether every metric named by a --fail-on rule of c has a confidence
// interval narrower than the rule's limit (in the rule's unit: percent of base, or the
// metric's own), and says which are not. A metric with no interval (n/a) cannot be narrowed
// by more runs and does not hold the experiment back.
func NarrowEnough(c *metrics.Comparison) (bool, string) {
	var wide, fine []string
	for _, t := range c.Thresholds {
		for _, m := range c.Metrics {
			if m.Name != t.Metric || m.Verdict == metrics.VerdictNA {
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

func sources(dirs []string) []metrics.Source {
	out := make([]metrics.Source, len(dirs))
	for i, d := range dirs {
		out[i] = metrics.FileSource(filepath.Join(d, RecordsFile))
	}
	return out
}

// DiffConfig lists the keys whose values differ between two configurations (a key missing on
// one side shows as "").
func DiffConfig(a, b map[string]string) []ConfigDiff {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []ConfigDiff
	for k := range keys {
		if a[k] != b[k] {
			out = append(out, ConfigDiff{Key: k, A: a[k], B: b[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

package usecase

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// LoadOptions shape the traffic (--concurrency, --rate-scale, --time-scale, …).
type LoadOptions struct {
	Concurrency    int
	MaxConcurrency int
	RateScale      float64
	TimeScale      float64
	Duration       time.Duration
	MaxRequests    int
	Warmup         time.Duration
	Cooldown       time.Duration
	Repeat         int
	Seed           int64
	Grace          time.Duration
	BlockTokens    int
}

// Options checks the load flags and builds loadgen's options for target t.
func (f *LoadOptions) Options(t loadgen.Target, tok tokenizer.Tokenizer) (loadgen.Options, error) {
	if f.Concurrency < 0 || f.MaxConcurrency < 0 || f.MaxRequests < 0 || f.Repeat < 1 {
		return loadgen.Options{}, fmt.Errorf("--concurrency, --max-concurrency and --max-requests must be >= 0 and --repeat >= 1")
	}
	if f.Concurrency > 0 && f.MaxConcurrency > 0 {
		return loadgen.Options{}, fmt.Errorf("--concurrency (closed loop) and --max-concurrency (open-loop cap) exclude each other")
	}
	if f.RateScale <= 0 || f.TimeScale <= 0 {
		return loadgen.Options{}, fmt.Errorf("--rate-scale and --time-scale must be > 0")
	}
	return loadgen.Options{
		Target:            t,
		Concurrency:       f.Concurrency,
		MaxConcurrency:    f.MaxConcurrency,
		RateScale:         f.RateScale,
		Duration:          f.Duration,
		MaxRequests:       f.MaxRequests,
		Warmup:            f.Warmup,
		Cooldown:          f.Cooldown,
		Repeat:            f.Repeat,
		Seed:              f.Seed,
		Tokenizer:         tok,
		PromptBlockTokens: f.BlockTokens,
		Grace:             f.Grace,
	}, nil
}

// Mode is the run's loop: closed-loop with --concurrency, else open-loop.
func (f *LoadOptions) Mode() string {
	if f.Concurrency > 0 {
		return "closed-loop"
	}
	return "open-loop"
}

// metricFlagNames lists the flags of MetricOptions.
var metricFlagNames = []string{"slo", "class-slo", "stall-threshold", "price-input", "price-output",
	"gpu-hour-cost", "gpus", "currency", "lag-limit", "fluidity-ttft", "fluidity-tbt", "input-tolerance"}

// MetricOptions set SLOs, stall rules and prices (--slo, --stall-threshold, --price-input, …).
type MetricOptions struct {
	InputTol  float64
	SLO       string
	ClassSLO  []string
	Stall     string
	PriceIn   float64
	PriceOut  float64
	GPUHour   float64
	GPUs      int
	Currency  string
	LagLimit  time.Duration
	FluidTTFT time.Duration
	FluidTBT  time.Duration
	// Changed says which of these flags were given (--gpus and --currency need a price).
	Changed Changed
}

// Options checks the metric flags and builds metrics' options.
func (f *MetricOptions) Options() (metrics.Options, error) {
	var o metrics.Options
	if err := ParseSLOFlags(&o, f.SLO, f.ClassSLO); err != nil {
		return o, err
	}
	if err := parseStall(&o, f.Stall); err != nil {
		return o, err
	}
	if f.PriceIn < 0 || f.PriceOut < 0 || f.GPUHour < 0 || f.GPUs < 1 {
		return o, fmt.Errorf("prices must be >= 0 and --gpus >= 1")
	}
	tokenPriced := f.PriceIn > 0 || f.PriceOut > 0
	switch {
	case tokenPriced && f.GPUHour > 0:
		return o, fmt.Errorf("--gpu-hour-cost and --price-input/--price-output are two ways to price a run (the GPUs you rent, or the tokens an API bills): give one")
	case f.Changed.Has("gpus") && f.GPUHour == 0:
		return o, fmt.Errorf("--gpus counts the GPUs for --gpu-hour-cost; give --gpu-hour-cost too, or drop --gpus")
	case f.Changed.Has("currency") && !tokenPriced && f.GPUHour == 0:
		return o, fmt.Errorf("--currency labels a cost; give --price-input/--price-output or --gpu-hour-cost too, or drop --currency")
	}
	o.PricePerMInput, o.PricePerMOutput = f.PriceIn, f.PriceOut
	o.GPUHourCost, o.GPUCount, o.Currency = f.GPUHour, f.GPUs, f.Currency
	o.LagLimit = f.LagLimit
	if !(f.InputTol > 0) || math.IsInf(f.InputTol, 0) {
		return o, fmt.Errorf("--input-tolerance %g: want a fraction > 0, e.g. 0.05 for 5%%", f.InputTol)
	}
	o.InputTolerance = f.InputTol
	o.FluidityTTFT, o.FluidityTBT = f.FluidTTFT, f.FluidTBT
	return o, nil
}

// parseStall sets o's stall rule from --stall-threshold: a multiple (5x) or a duration.
func parseStall(o *metrics.Options, stall string) error {
	st := strings.TrimSpace(stall)
	if st == "" {
		return nil
	}
	if m, ok := strings.CutSuffix(st, "x"); ok {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) { // NaNx and Infx are no multiple
			return fmt.Errorf("--stall-threshold %q: want a positive multiple like 5x or a duration like 250ms", st)
		}
		o.StallMultiple = v
		return nil
	}
	d, err := time.ParseDuration(st)
	if err != nil || d <= 0 {
		return fmt.Errorf("--stall-threshold %q: want a positive multiple like 5x or a duration like 250ms", st)
	}
	o.StallThreshold = d
	return nil
}

// ParseSLOFlags sets o's SLO and ClassSLO from --slo and --class-slo values.
func ParseSLOFlags(o *metrics.Options, slo string, classSLO []string) error {
	if slo != "" {
		s, err := metrics.ParseSLO(slo)
		if err != nil {
			return fmt.Errorf("--slo: %w", err)
		}
		o.SLO = s
	}
	for _, cs := range classSLO {
		class, spec, ok := strings.Cut(cs, ":")
		if !ok || class == "" {
			return fmt.Errorf("--class-slo %q: want CLASS:ttft=…", cs)
		}
		s, err := metrics.ParseSLO(spec)
		if err != nil {
			return fmt.Errorf("--class-slo %s: %w", class, err)
		}
		if o.ClassSLO == nil {
			o.ClassSLO = map[string]metrics.SLO{}
		}
		o.ClassSLO[class] = s
	}
	return nil
}

// OutputOptions choose where results go and how the report is built.
type OutputOptions struct {
	Out        string
	EChartsJS  string
	NoProgress bool
}

// HTML is the report's options (--echarts-js, else $LLMBENCH_ECHARTS_JS through getenv).
func (f *OutputOptions) HTML(getenv func(string) string) reports.HTMLOptions {
	return reports.HTMLOptions{EChartsJS: f.EChartsJS, Getenv: getenv}
}

// TraceOptions name the trace a command replays.
type TraceOptions struct {
	Path    string
	Lenient bool
	MaxSpan time.Duration
	// RateScale and TimeScale shorten a replay (1 where the command has no such flag, or its
	// value is not > 0).
	RateScale, TimeScale float64
	// SHA256, when set, refuses a trace file with another digest (--trace-sha256): a trace
	// shipped to another machine is checked before anything is sent.
	SHA256 string
}

// checkDigest refuses the trace file when --trace-sha256 names another digest.
func (f *TraceOptions) checkDigest() error {
	if f.SHA256 == "" {
		return nil
	}
	if err := traces.CheckSHA256(f.Path, f.SHA256); err != nil {
		return fmt.Errorf("--trace-sha256: %w", err)
	}
	return nil
}

// DefaultMaxSpan is the longest replay run, ab, sweep and simulate accept without --max-span.
const DefaultMaxSpan = 24 * time.Hour

// HeldNoteMin is the trace length from which holding it in memory is worth a note (a
// variable so that tests can lower it).
var HeldNoteMin = 100_000

// Read reads the whole trace and checks its span.
func (f *TraceOptions) Read() ([]traces.Request, error) {
	if err := f.checkDigest(); err != nil {
		return nil, err
	}
	reqs, err := traces.ReadFile(f.Path, traces.ReadOptions{Lenient: f.Lenient})
	if err != nil {
		return nil, err
	}
	return reqs, f.CheckSpan(traces.FromSlice(reqs))
}

// CheckSpan refuses a trace whose replay would take longer than --max-span, before anything
// starts waiting. The replay's length is the trace's span divided by the rate and time
// scales.
func (f *TraceOptions) CheckSpan(src traces.Source) error {
	span := TraceSpan(src)
	scale := positiveOr1(f.RateScale) * positiveOr1(f.TimeScale)
	replay := time.Duration(float64(span) / scale)
	if f.MaxSpan > 0 && replay > f.MaxSpan {
		return fmt.Errorf("%s: the replay would span %v (%.0f s from the start to the last request, at %g times the trace's rate); "+
			"check arrival_s and think_s, or give --max-span %v to replay it as it is",
			safetext.Escape(f.Path, 300), replay.Round(time.Second), span.Seconds(), scale, replay.Round(time.Hour)+time.Hour)
	}
	return nil
}

func positiveOr1(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	return v
}

// TraceSpan is how long a replay of src lasts at least: its last arrival, or a session's
// first arrival plus all its think times, whichever is later.
func TraceSpan(src traces.Source) time.Duration {
	_, span := src.Span()
	start := map[string]time.Duration{}
	think := map[string]time.Duration{}
	src.Sessions(func(_ int, q *traces.Request) {
		if s, ok := start[q.Session]; !ok || q.Arrival < s {
			start[q.Session] = q.Arrival
		}
		think[q.Session] += q.Think
	})
	for s, t0 := range start {
		span = max(span, t0+think[s])
	}
	return span
}

// Open checks the trace like Read, and returns it to be replayed from its file (read again on
// each pass, so that a long trace costs no memory) when it is in arrival order. A long trace
// that must be held instead gets a note on w saying how to avoid it.
func (f *TraceOptions) Open(w io.Writer) (traces.Source, error) {
	if err := f.checkDigest(); err != nil {
		return nil, err
	}
	src, err := traces.OpenFile(f.Path, traces.ReadOptions{Lenient: f.Lenient})
	if err == nil {
		if err := f.CheckSpan(src); err != nil {
			return nil, err
		}
	}
	if err == nil && traces.Held(src) && src.Len() >= HeldNoteMin {
		if st, serr := os.Stat(f.Path); serr == nil && !st.Mode().IsRegular() {
			fmt.Fprintf(w, "note: %s is held in memory (%d requests) because a pipe can be read only once; "+
				"write the trace to a file to replay it as it is read\n", f.Path, src.Len())
		} else {
			fmt.Fprintf(w, "note: %s is held in memory (%d requests) because its lines are not in arrival order; "+
				"`llmbench trace scale %s --factor 1 -o sorted.jsonl` writes a sorted copy that is replayed as it is read\n",
				f.Path, src.Len(), f.Path)
		}
	}
	return src, err
}

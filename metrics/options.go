package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLO is a set of per-request service-level objectives. A zero field is not set. A request
// meets the SLO when it succeeded and every set limit holds: TTFT (FirstToken - Intended),
// TPOT (vLLM's definition), ITLP99 (the 99th percentile of that request's per-token gaps),
// MaxGap (its largest chunk gap) and E2E (End - Intended).
type SLO struct {
	TTFT, TPOT, ITLP99, MaxGap, E2E time.Duration
}

// IsZero reports whether no limit is set.
func (s SLO) IsZero() bool { return s == SLO{} }

// sloKeys maps ParseSLO keys to fields, in the order String writes them.
var sloKeys = []string{"ttft", "tpot", "itl_p99", "max_gap", "e2e"}

func (s *SLO) field(key string) *time.Duration {
	switch key {
	case "ttft":
		return &s.TTFT
	case "tpot":
		return &s.TPOT
	case "itl_p99", "itl":
		return &s.ITLP99
	case "max_gap", "maxgap":
		return &s.MaxGap
	case "e2e":
		return &s.E2E
	}
	return nil
}

// ParseSLO parses "ttft=500ms,tpot=50ms,max_gap=1s,e2e=20s,itl_p99=100ms". Values are Go
// durations; a bare number is milliseconds. Keys: ttft, tpot, itl_p99 (alias itl), max_gap,
// e2e. Every value must be positive; a key may appear once. An empty string gives a zero SLO.
func ParseSLO(s string) (SLO, error) {
	var out SLO
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	seen := map[string]bool{}
	for i, raw := range strings.Split(s, ",") {
		part := strings.TrimSpace(raw)
		if part == "" {
			return SLO{}, fmt.Errorf("slo item %d is empty (stray comma in %q)", i+1, s)
		}
		key, val, ok := strings.Cut(part, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !ok || val == "" {
			return SLO{}, fmt.Errorf("slo item %q: write KEY=VALUE, e.g. ttft=500ms", part)
		}
		f := out.field(key)
		if f == nil {
			return SLO{}, fmt.Errorf("slo item %q: unknown key %q; use one of %s", part, key, strings.Join(sloKeys, ", "))
		}
		canon := key
		switch key {
		case "itl":
			canon = "itl_p99"
		case "maxgap":
			canon = "max_gap"
		}
		if seen[canon] {
			return SLO{}, fmt.Errorf("slo item %q: %s is given twice", part, canon)
		}
		seen[canon] = true
		d, err := parseMillis(val)
		if err != nil {
			return SLO{}, fmt.Errorf("slo item %q: %w", part, err)
		}
		if d <= 0 {
			return SLO{}, fmt.Errorf("slo item %q: the limit must be positive", part)
		}
		*f = d
	}
	return out, nil
}

// parseMillis reads a Go duration, or a bare number of milliseconds.
func parseMillis(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if !isFinite(f) || math.Abs(f) > float64(math.MaxInt64/int64(time.Millisecond)) {
			return 0, fmt.Errorf("value %q is out of range", v)
		}
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: use a number of ms (500) or a duration (500ms, 1.5s)", v)
	}
	return d, nil
}

// String renders the SLO in ParseSLO's syntax (set fields only).
func (s SLO) String() string {
	var parts []string
	for _, k := range sloKeys {
		if d := *s.field(k); d > 0 {
			parts = append(parts, k+"="+d.String())
		}
	}
	return strings.Join(parts, ",")
}

// millisMap is the summary.json form: key -> limit in ms, set fields only.
func (s SLO) millisMap() map[string]float64 {
	m := map[string]float64{}
	for _, k := range sloKeys {
		if d := *s.field(k); d > 0 {
			m[k] = ms(d)
		}
	}
	return m
}

// Defaults used when an Options field is zero.
const (
	// DefaultStallMultiple: a gap between bursts longer than 5x the run's median per-burst ITL
	// (the decode cadence per engine pass, derive.go), and at least DefaultStallFloor, is a
	// stall. Five passes is far outside decode jitter yet catches a preemption or a long
	// prefill interleaved into the batch. Per pass, not per token: speculative decoding
	// delivers several tokens per pass, which lowers TPOT but not the time between passes, so
	// the same gap is a stall, or not, with speculation on and off (deadlines.go).
	DefaultStallMultiple = 5.0
	// DefaultFluidityTBT is the per-token deadline when Options.FluidityTTFT is given but
	// neither Options.FluidityTBT nor an SLO (TPOT, then ITLP99) gives one: 50 ms, i.e. 20
	// tokens/s, faster than people read. With no deadline and no SLO at all, the deadlines
	// are derived from the run (DefaultFluidityPace).
	DefaultFluidityTBT = 50 * time.Millisecond
	// DefaultFluidityTTFT is the fixed part of the first-token deadline when a TBT deadline
	// is given but neither Options.FluidityTTFT nor SLO.TTFT gives one.
	DefaultFluidityTTFT = 500 * time.Millisecond
	// DefaultFluidityPrefillRate: the first-token deadline grows by one second per 10,000
	// prompt tokens (100 ms per 1,000), so long prompts get a prefill allowance.
	DefaultFluidityPrefillRate = 10000.0
	// DefaultBucket is the time-series bucket width.
	DefaultBucket = time.Second
	// DefaultLagLimit: a schedule-lag P99 above 5 ms means the client could not keep to the
	// schedule, so the latencies it measured include its own delay.
	DefaultLagLimit = 5 * time.Millisecond
	// DefaultCPULimit: client CPU use above 80% of the machine flags a client-limited run.
	DefaultCPULimit = 0.8
	// DefaultCurrency is used for costs when Options.Currency is empty.
	DefaultCurrency = "USD"
	// tokenMismatchLimit: more than 2% of requests whose client token count differs from the
	// server's usage earns a warning.
	tokenMismatchLimit = 0.02
)

// Options configures Summarize. The zero value is valid: every zero field takes the default
// documented on it.
type Options struct {
	// InputTolerance is the relative difference between the synthesized prompts' intended
	// and server-counted tokens beyond which Summary.Inputs is Exceeded; 0 or less (or not
	// finite) means DefaultInputTolerance.
	InputTolerance float64

	// SLO applies to every request without a class SLO; ClassSLO overrides it per class.
	SLO      SLO
	ClassSLO map[string]SLO

	// StallThreshold is an absolute stall threshold on the gaps between bursts; 0 derives one
	// (deadlines.go): the SLO's MaxGap when set, else StallMultiple times the SLO's per-token
	// deadline (TPOT, else ITLP99) when set, else StallMultiple times the median per-burst ITL
	// of the run's steady-state successful requests; a derived threshold is at least
	// DefaultStallFloor. Deriving from the run needs a second pass over the Source.
	// StallMultiple defaults to DefaultStallMultiple.
	StallThreshold time.Duration
	StallMultiple  float64

	// FluidityTTFT is the fixed part of the first-token deadline (default SLO.TTFT, else
	// DefaultFluidityTTFT). FluidityPrefillRate adds InputTokens/rate seconds to it (default
	// DefaultFluidityPrefillRate tokens/s; negative: no prompt-length allowance).
	// FluidityTBT is the deadline between tokens (default SLO.TPOT, else SLO.ITLP99, else
	// DefaultFluidityTBT). When none of FluidityTTFT, FluidityTBT and the SLO's TTFT, TPOT
	// and ITLP99 is set, both deadlines are derived from the run instead:
	// DefaultFluidityPace times its median TTFT and TPOT, with no prompt allowance.
	FluidityTTFT        time.Duration
	FluidityPrefillRate float64
	FluidityTBT         time.Duration

	// PricePerMInput / PricePerMOutput are token prices per million; GPUHourCost with GPUCount
	// prices the steady window instead (used when no token price is set).
	PricePerMInput, PricePerMOutput float64
	GPUHourCost                     float64
	GPUCount                        int
	Currency                        string

	// Bucket is the time-series bucket width (default DefaultBucket). Runs long enough to
	// need more than MaxBuckets buckets get a wider bucket (a whole multiple).
	Bucket time.Duration

	// ClientCPUFraction is the client's CPU use over the run (CPU time / (wall * cores)),
	// measured by the caller; 0 = not measured.
	ClientCPUFraction float64
	// ClientStealFraction is the share of the machine's CPU time a hypervisor gave to other
	// machines during the run, measured by the caller; 0 or less = none or not measured.
	// Above StealWarning the summary warns that the timing figures include those stalls.
	ClientStealFraction float64
	// LagLimit: a schedule-lag P99 above it flags the run as client-limited (default
	// DefaultLagLimit). CPULimit does the same for ClientCPUFraction (default DefaultCPULimit).
	LagLimit time.Duration
	CPULimit float64

	// DesignedReuse, when set, gives a record's designed prefix-cache reuse from the trace
	// (traces.DesignedReuse: reused and input tokens, by request ID and repeat); ok is false
	// when the trace does not know the request. The prefix_cache block then carries the
	// designed hit rate over the same requests as the achieved one (prefixcache.go).
	DesignedReuse func(id string, repeat int) (reused, input int64, ok bool) `json:"-"`
}

// MaxBuckets bounds the time series' length.
const MaxBuckets = 3600

func (o Options) withDefaults() Options {
	if o.StallMultiple <= 0 {
		o.StallMultiple = DefaultStallMultiple
	}
	if o.Bucket <= 0 {
		o.Bucket = DefaultBucket
	}
	if o.LagLimit <= 0 {
		o.LagLimit = DefaultLagLimit
	}
	if o.CPULimit <= 0 {
		o.CPULimit = DefaultCPULimit
	}
	if o.Currency == "" {
		o.Currency = DefaultCurrency
	}
	if o.FluidityPrefillRate == 0 {
		o.FluidityPrefillRate = DefaultFluidityPrefillRate
	}
	if o.FluidityTTFT <= 0 {
		o.FluidityTTFT = DefaultFluidityTTFT
		if o.SLO.TTFT > 0 {
			o.FluidityTTFT = o.SLO.TTFT
		}
	}
	if o.FluidityTBT <= 0 {
		switch {
		case o.SLO.TPOT > 0:
			o.FluidityTBT = o.SLO.TPOT
		case o.SLO.ITLP99 > 0:
			o.FluidityTBT = o.SLO.ITLP99
		default:
			o.FluidityTBT = DefaultFluidityTBT
		}
	}
	return o
}

// sloFor returns the SLO that applies to class.
func (o *Options) sloFor(class string) SLO {
	if s, ok := o.ClassSLO[class]; ok {
		return s
	}
	return o.SLO
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// SweepOptions configures a capacity search: the trace is replayed at increasing load until
// it saturates, then the boundary is bisected to find the highest load whose goodput
// fraction still meets Target.
type SweepOptions struct {
	Requests []traces.Request
	// Concurrency switches from arrival-rate points (req/s, open loop) to concurrency points
	// (closed loop).
	Concurrency bool
	// Points, when given, are measured as they are (no search).
	Points []float64
	// Start is the first load of the search (req/s or concurrency); Max bounds it.
	Start, Max float64
	// Target is the goodput fraction a load must reach to count as within SLO (e.g. 0.9).
	Target float64
	// Bisections after bracketing (default 4).
	Bisections int
	OutDir     string
	Metrics    metrics.Options
	Info       metrics.RunInfo
	HTML       reports.HTMLOptions
	// OnPoint is told before each point starts.
	OnPoint func(load float64)
}

// SweepPoint is one measured load.
type SweepPoint struct {
	Load             float64            `json:"load"` // offered req/s, or concurrency
	Dir              string             `json:"dir"`
	AchievedRPS      float64            `json:"achieved_requests_per_s"`
	OutputTokPerS    float64            `json:"output_tokens_per_s"`
	GoodputRPS       float64            `json:"goodput_requests_per_s"`
	GoodputFraction  float64            `json:"goodput_fraction"`
	Failed           int                `json:"failed"`
	TTFTP50, TTFTP99 float64            `json:"-"`
	TPOTP50, TPOTP99 float64            `json:"-"`
	E2EP99           float64            `json:"-"`
	Latency          map[string]float64 `json:"latency_ms"`
	Meets            bool               `json:"meets_target"`
	Saturated        bool               `json:"saturated"`
	ClientLimited    bool               `json:"client_limited"`
}

// SweepResult is the latency–throughput curve and the capacity found.
type SweepResult struct {
	Mode     string             `json:"mode"` // "rate" or "concurrency"
	Target   float64            `json:"goodput_target"`
	SLO      map[string]float64 `json:"slo"`
	Points   []SweepPoint       `json:"points"`   // sorted by load
	Capacity float64            `json:"capacity"` // highest load meeting Target (0 if none)
	// CapacityDir is the results directory of the capacity point.
	CapacityDir string `json:"capacity_dir,omitempty"`
	Note        string `json:"note,omitempty"`
}

// Sweep runs the search. produce returns the Producer for a load.
func Sweep(ctx context.Context, opts SweepOptions, produce func(load float64) (Producer, metrics.RunInfo, error)) (*SweepResult, error) {
	if opts.Target <= 0 || opts.Target > 1 {
		return nil, fmt.Errorf("goodput target %.3g: want a fraction in (0, 1]", opts.Target)
	}
	if opts.Bisections <= 0 {
		opts.Bisections = 4
	}
	mode := "rate"
	if opts.Concurrency {
		mode = "concurrency"
	}
	res := &SweepResult{Mode: mode, Target: opts.Target, SLO: sloMap(opts.Metrics.SLO)}
	seen := map[float64]*SweepPoint{}
	measure := func(load float64) (*SweepPoint, error) {
		if opts.Concurrency {
			load = math.Max(1, math.Round(load))
		}
		if p, ok := seen[load]; ok {
			return p, nil
		}
		if opts.OnPoint != nil {
			opts.OnPoint(load)
		}
		prod, info, err := produce(load)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(opts.OutDir, fmt.Sprintf("%s-%s", mode, strconv.FormatFloat(load, 'f', -1, 64)))
		r, err := Execute(ctx, Options{Requests: opts.Requests, OutDir: dir, Metrics: opts.Metrics, Info: info, HTML: opts.HTML}, prod)
		if err != nil {
			return nil, fmt.Errorf("load %g: %w", load, err)
		}
		p := pointOf(load, dir, r.Summary, opts)
		seen[load] = p
		res.Points = append(res.Points, *p)
		return p, nil
	}
	var err error
	if len(opts.Points) > 0 {
		for _, l := range opts.Points {
			if ctx.Err() != nil {
				break
			}
			if _, err = measure(l); err != nil {
				break
			}
		}
	} else {
		err = search(ctx, opts, measure)
	}
	sort.Slice(res.Points, func(i, j int) bool { return res.Points[i].Load < res.Points[j].Load })
	for _, p := range res.Points {
		if p.Meets && p.Load > res.Capacity {
			res.Capacity, res.CapacityDir = p.Load, p.Dir
		}
	}
	if res.Capacity == 0 && len(res.Points) > 0 {
		res.Note = "no measured load met the goodput target; lower --start"
	}
	if werr := WriteJSON(filepath.Join(opts.OutDir, sweepFile), res); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// search brackets the boundary by doubling from Start, then bisects it.
func search(ctx context.Context, opts SweepOptions, measure func(float64) (*SweepPoint, error)) error {
	start := opts.Start
	if start <= 0 {
		return errors.New("sweep needs --start > 0 (or explicit --points)")
	}
	max := opts.Max
	if max <= 0 {
		max = start * 1024
	}
	lo, hi := 0.0, 0.0
	for l := start; l <= max; l *= 2 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p, err := measure(l)
		if err != nil {
			return err
		}
		if !p.Meets || p.Saturated {
			hi = l
			break
		}
		lo = l
	}
	if hi == 0 || lo == 0 {
		return nil // never failed up to max, or failed at the start: nothing to bisect
	}
	for i := 0; i < opts.Bisections; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if opts.Concurrency && hi-lo <= 1 {
			break
		}
		mid := (lo + hi) / 2
		p, err := measure(mid)
		if err != nil {
			return err
		}
		if p.Meets && !p.Saturated {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}

func pointOf(load float64, dir string, s *metrics.Summary, opts SweepOptions) *SweepPoint {
	p := &SweepPoint{
		Load:            load,
		Dir:             dir,
		AchievedRPS:     s.Throughput.RequestsPerS,
		OutputTokPerS:   s.Throughput.OutputTokensPerS,
		GoodputRPS:      s.Goodput.RequestsPerS,
		GoodputFraction: s.Goodput.Fraction,
		Failed:          s.Requests.Failed,
		ClientLimited:   s.Client.Limited,
		Latency: map[string]float64{
			"ttft_p50": s.Latency.TTFT.P50, "ttft_p99": s.Latency.TTFT.P99,
			"tpot_p50": s.Latency.TPOT.P50, "tpot_p99": s.Latency.TPOT.P99,
			"itl_p99": s.Latency.ITL.P99, "e2e_p99": s.Latency.E2E.P99,
		},
	}
	p.Meets = p.GoodputFraction >= opts.Target
	// An open-loop point is saturated when the server completes clearly fewer requests per
	// second than were offered: queues grow without bound and latency depends on run length.
	if !opts.Concurrency && load > 0 && p.AchievedRPS < 0.8*load {
		p.Saturated = true
	}
	return p
}

func sloMap(s metrics.SLO) map[string]float64 {
	m := map[string]float64{}
	add := func(k string, d float64) {
		if d > 0 {
			m[k] = d
		}
	}
	add("ttft", float64(s.TTFT.Microseconds())/1000)
	add("tpot", float64(s.TPOT.Microseconds())/1000)
	add("itl_p99", float64(s.ITLP99.Microseconds())/1000)
	add("max_gap", float64(s.MaxGap.Microseconds())/1000)
	add("e2e", float64(s.E2E.Microseconds())/1000)
	return m
}

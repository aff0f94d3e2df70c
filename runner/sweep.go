package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// SweepOptions configures a capacity search: the trace is replayed at a sequence of loads
// chosen by CapacitySearch (bracketing, then bisection) to find the highest load whose
// goodput fraction still meets Target; or at exactly the given Points.
type SweepOptions struct {
	// Trace is the trace each point replays (read again for each point); when nil, Requests
	// (held in memory) is.
	Trace    traces.Source
	Requests []traces.Request
	// Concurrency switches from arrival-rate points (req/s, open loop) to concurrency points
	// (closed loop).
	Concurrency bool
	// Points, when given, are measured as they are (no search).
	Points []float64
	// Start is the first load of the search (req/s or concurrency).
	Start float64
	// Target is the goodput fraction a load must reach to count as within SLO (e.g. 0.9).
	Target float64
	// Precision is the relative width of the final bracket (default 0.05); MaxPoints bounds
	// the search (default 12).
	Precision float64
	MaxPoints int
	OutDir    string
	Metrics   metrics.Options
	HTML      reports.HTMLOptions
	// OnPoint is told before each point starts.
	OnPoint func(load float64)
	// BlockTokens is the prompts' tokens per hash_ids block, for the designed prefix-cache
	// reuse (Options.BlockTokens).
	BlockTokens int
	// MinDuration is the least time a rate point sends for: a trace that would be shorter at
	// that rate is replayed back to back (ids get a "~k" suffix) until it is long enough, so
	// that a point measures a steady state rather than a ramp and a drain. BaseRate is the
	// trace's own rate (requests per second at rate scale 1). Both 0 = no tiling.
	MinDuration time.Duration
	BaseRate    float64
	// Power are DCGM exporters' metrics URLs (sweep --power-metrics), polled as given during
	// each point as run --power-metrics polls them: each point's summary has its energy.
	Power []string
}

// SweepResult is the latency–throughput curve and the capacity found (sweep.json).
type SweepResult struct {
	Mode     string               `json:"mode"` // "rate" or "concurrency"
	Target   float64              `json:"goodput_target"`
	SLO      string               `json:"slo"`
	Points   []metrics.SweepPoint `json:"points"` // sorted by load
	Capacity Capacity             `json:"capacity"`
	// CapacityDir is the results directory of the capacity point.
	CapacityDir string `json:"capacity_dir,omitempty"`
	// CapacityLowerBound is true when the load above the capacity was limited by the harness
	// (client lag or CPU, a short sending window): the server may hold more than this.
	CapacityLowerBound bool `json:"capacity_lower_bound"`

	// Skipped (issue 39) are the given points (--points) not measured because a lower one was
	// stopped over-saturated (--stop-on-saturation): hopeless.
	Skipped []SkippedPoint `json:"skipped,omitempty"`
}

// SkippedPoint is a load a sweep did not measure, and why.
type SkippedPoint struct {
	Rate   float64 `json:"rate"`
	Reason string  `json:"reason"`
}

// hopeless says why load need not be measured ("" when it must): a lower load was stopped
// over-saturated, so this one would be too.
func (w *sweeper) hopeless(load float64) string {
	for _, p := range w.res.Points {
		if p.StoppedAtS > 0 && p.Rate < load {
			return fmt.Sprintf("not measured: the lower load %.4g was stopped over-saturated (%s)", p.Rate, p.Reason)
		}
	}
	return ""
}

// usablePoints are the points as the capacity search sees them: a limited point (the harness,
// not the server, set its numbers; metrics.SweepPoint Limited) never passes, so it is never
// the capacity, and the search looks below it.
func usablePoints(ps []metrics.SweepPoint) []metrics.SweepPoint {
	out := append([]metrics.SweepPoint(nil), ps...)
	for i := range out {
		if out[i].Limited != "" {
			out[i].Saturated = true
		}
	}
	return out
}

// capacityReason says in words why the capacity is what it is: the point that failed above it
// (or that none did), and the points left out as limited.
func capacityReason(res *SweepResult, target float64) string {
	why := res.Capacity.Reason
	var limited []string
	var failing *metrics.SweepPoint
	for i := range res.Points {
		p := &res.Points[i]
		if p.Limited != "" {
			limited = append(limited, fmt.Sprintf("%.3g (%s)", p.Rate, p.Limited))
		}
		if p.Rate == res.Capacity.Failing {
			failing = p
		}
	}
	var parts []string
	switch {
	case res.Capacity.Rate > 0 && failing != nil:
		fail := fmt.Sprintf("goodput %.0f%% < %.0f%%", failing.GoodputFraction*100, target*100)
		switch {
		case failing.Limited != "":
			fail = "limited by the harness"
		case failing.Saturated:
			fail = "saturated: " + failing.Reason
		}
		parts = append(parts, fmt.Sprintf("the highest load that met the target unsaturated; the next, %.3g, did not (%s)", failing.Rate, fail))
	case res.Capacity.Rate > 0:
		parts = append(parts, "the highest load measured that the harness did not limit; every such load met the target")
	}
	if why != "" {
		parts = append(parts, why)
	}
	if len(limited) > 0 {
		parts = append(parts, "never taken as capacity, limited by the harness rather than the server: "+strings.Join(limited, "; "))
	}
	return strings.Join(parts, "; ")
}

// Sweep runs the points. produce returns the Producer (and run facts) for a load.
func Sweep(ctx context.Context, opts SweepOptions, produce func(load float64) (Producer, metrics.RunInfo, error)) (*SweepResult, error) {
	if opts.Target <= 0 || opts.Target > 1 {
		return nil, fmt.Errorf("goodput target %.3g: want a fraction in (0, 1]", opts.Target)
	}
	if opts.Trace == nil {
		opts.Trace = traces.FromSlice(opts.Requests)
	}
	mode := "rate"
	if opts.Concurrency {
		mode = "concurrency"
	}
	w := &sweeper{ctx: ctx, opts: opts, produce: produce, mode: mode, measured: map[float64]bool{},
		res: &SweepResult{Mode: mode, Target: opts.Target, SLO: opts.Metrics.SLO.String()}}
	search := CapacitySearch{Target: opts.Target, Precision: opts.Precision, MaxPoints: opts.MaxPoints}
	if opts.Concurrency {
		search.MinRate = 1
	}
	var err error
	if len(opts.Points) > 0 {
		err = w.explicit(search)
	} else {
		if opts.Start <= 0 {
			return nil, errors.New("sweep needs a start load > 0 (or explicit points)")
		}
		err = w.search(search)
	}
	res := w.res
	res.settle(opts.Target)
	if werr := WriteJSON(filepath.Join(opts.OutDir, sweepFile), res); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// sweeper is a sweep in progress: the points measured so far, in the order they were.
type sweeper struct {
	ctx      context.Context
	opts     SweepOptions
	produce  func(load float64) (Producer, metrics.RunInfo, error)
	mode     string // "rate" or "concurrency", the prefix of each point's directory
	res      *SweepResult
	measured map[float64]bool
}

// measure runs one load into its own results directory under opts.OutDir (the trace tiled to
// last opts.MinDuration at that rate) and adds its point to the result.
func (w *sweeper) measure(load float64) error {
	opts := w.opts
	if opts.OnPoint != nil {
		opts.OnPoint(load)
	}
	prod, info, err := w.produce(load)
	if err != nil {
		return err
	}
	dir := filepath.Join(opts.OutDir, fmt.Sprintf("%s-%s", w.mode, strconv.FormatFloat(load, 'g', 6, 64)))
	trace := opts.Trace
	if !opts.Concurrency && opts.MinDuration > 0 && opts.BaseRate > 0 {
		trace = traces.Tile(trace, copiesFor(trace, opts.MinDuration, load/opts.BaseRate))
	}
	ro := Options{Trace: trace, OutDir: dir, Metrics: opts.Metrics, Info: info, HTML: opts.HTML, BlockTokens: opts.BlockTokens}
	if len(opts.Power) > 0 {
		ro.power, prod = powerArm(w.ctx, opts.Power, prod)
	}
	r, err := Execute(w.ctx, ro, prod)
	if err != nil {
		return fmt.Errorf("load %g: %w", load, err)
	}
	p := metrics.PointFrom(load, !opts.Concurrency, r.Summary)
	p.Dir = dir
	w.res.Points = append(w.res.Points, p)
	w.measured[load] = true
	return nil
}

// explicit measures the given points in order, until one fails or the sweep is canceled,
// and judges the capacity among those measured.
func (w *sweeper) explicit(search CapacitySearch) error {
	var err error
	for _, l := range w.opts.Points {
		if err = w.ctx.Err(); err != nil {
			break
		}
		if why := w.hopeless(l); why != "" {
			w.res.Skipped = append(w.res.Skipped, SkippedPoint{Rate: l, Reason: why})
			continue
		}
		if err = w.measure(l); err != nil {
			break
		}
	}
	_, w.res.Capacity = search.Next(w.opts.Points[0], usablePoints(w.res.Points))
	return err
}

// search measures the loads the capacity search asks for from opts.Start until it is done,
// a point fails or the sweep is canceled.
func (w *sweeper) search(search CapacitySearch) error {
	for {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		next, c := search.Next(w.opts.Start, usablePoints(w.res.Points))
		w.res.Capacity = c
		if c.Done {
			return nil
		}
		if w.opts.Concurrency {
			next = math.Max(1, math.Round(next))
		}
		if w.measured[next] { // concurrency bisection cannot split the bracket further
			w.res.Capacity.Done, w.res.Capacity.Reason = true, "bracket cannot be split further"
			return nil
		}
		if err := w.measure(next); err != nil {
			return err
		}
	}
}

// settle orders the points by load and sets what follows from the capacity found: its
// reason, whether it is only a lower bound (the next load was limited by the harness), and
// the results directory of the capacity point.
func (res *SweepResult) settle(target float64) {
	sort.Slice(res.Points, func(i, j int) bool { return res.Points[i].Rate < res.Points[j].Rate })
	res.Capacity.Reason = capacityReason(res, target)
	for _, p := range res.Points {
		if p.Rate == res.Capacity.Failing && p.Limited != "" {
			res.CapacityLowerBound = true
		}
	}
	for _, p := range res.Points {
		if p.Rate == res.Capacity.Rate && res.Capacity.Rate > 0 {
			res.CapacityDir = p.Dir
		}
	}
}

// copiesFor returns how many back-to-back copies of trace last at least min at rate scale.
func copiesFor(trace traces.Source, min time.Duration, scale float64) int {
	if trace.Len() == 0 || scale <= 0 {
		return 1
	}
	first, last := trace.Span()
	span := float64(traces.TilePeriod(first, last, trace.Len())) / scale
	if span <= 0 {
		return 1
	}
	return max(1, int(math.Ceil(float64(min)/span)))
}

// Tile replays reqs n times back to back: copy k (from 1) has every arrival shifted by k
// periods and "~k" appended to its ids and session names, so ids stay unique and sessions
// stay separate.
func Tile(reqs []traces.Request, n int) []traces.Request {
	if n <= 1 || len(reqs) == 0 {
		return reqs
	}
	out, _ := traces.Tile(traces.FromSlice(reqs), n).Requests() // a slice is read without error
	return out
}

package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// RunInterval is one metric of one run with the interval of the variation inside that run:
// how far the figure would move on a rerun if nothing but the requests' own noise changed
// (queues, batches and the order requests met each other in). It is the within-run level of
// the variance model (variance.go): a block bootstrap over the run's time blocks, so
// neighbouring requests, which share queues and batches, are resampled together.
//
// Between-run noise (another machine, another night) is not in it; history's change-point
// check sees that in the spread of the series and uses these intervals for what a series
// cannot show: the noise of each point.
type RunInterval struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// SE is the standard error: the standard deviation of the resampled values.
	SE float64 `json:"se"`
}

// RunIntervalOptions configure RunIntervals.
type RunIntervalOptions struct {
	// Summary are the options the run's summary was made with (its run.json's metrics block):
	// SLOs, stall threshold and fluidity deadlines decide what the records' metrics are.
	Summary Options
	// Metrics to compute (registry names); every metric a run's intervals can be given for when
	// empty (see RunIntervals).
	Metrics []string
	// Resamples of the block bootstrap (default 200) and the interval's confidence level
	// (default 0.95); Seed makes it reproducible.
	Resamples  int
	Confidence float64
	Seed       uint64
}

// RunIntervals computes each metric of one run (the records of srcs, one run) with its
// within-run interval: Value ± t(blocks−1) · SE, SE the standard deviation of the metric over
// block-bootstrap resamples of the run's time blocks (the block length is chosen as compare
// chooses it, from the decorrelation of the run's latencies).
//
// Per-run scalars (throughputs: a count over the run's fixed window) have no within-run
// interval and are left out, as are metrics the run has no samples for and runs of fewer
// than 20 requests (too few blocks for the interval to mean anything).
func RunIntervals(srcs []Source, o RunIntervalOptions) (map[string]RunInterval, error) {
	if o.Resamples <= 0 {
		o.Resamples = 200
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	names := o.Metrics
	if len(names) == 0 {
		for _, m := range Metrics() {
			if !perRunScalar(m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	specs, err := compileMetrics(names, nil)
	if err != nil {
		return nil, err
	}
	sopts := o.Summary
	sum, err := Summarize(MultiSource(srcs...), sopts)
	if err != nil {
		return nil, err
	}
	// The stall threshold and fluidity deadlines derived from the run itself are fixed for
	// the resamples, as compare fixes them from its base side.
	baseDeadlines(&sopts, sum)
	full := sopts.withDefaults()
	d, err := loadSide(srcs, &full)
	if err != nil {
		return nil, err
	}
	if len(d.units) < 2*minBlocks {
		return map[string]RunInterval{}, nil
	}
	p := planBlocks(d)
	if p.blocks < 2 {
		return map[string]RunInterval{}, nil
	}
	g, err := cellsOf(d, &p)
	if err != nil {
		return nil, err
	}
	values := g.eval(specs, nil, d.window)
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5851f42d4c957f2d))
	runs := make([]int32, max(1, d.runs))
	blocks := make([]int32, p.blocks)
	w := make([]int32, g.cells)
	draws := make([][]float64, len(specs))
	for b := 0; b < o.Resamples; b++ {
		drawCounts(blocks, rng.IntN)
		for i := range runs {
			runs[i] = 1
		}
		g.weigh(runs, blocks, w)
		for i, v := range g.eval(specs, w, resampledWindow(d, runs)) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				draws[i] = append(draws[i], v)
			}
		}
	}
	t := tQuantile(1-(1-o.Confidence)/2, float64(p.blocks-1))
	out := make(map[string]RunInterval, len(specs))
	for i, sp := range specs {
		v := values[i]
		if math.IsNaN(v) || math.IsInf(v, 0) || len(draws[i]) < o.Resamples/2 {
			continue
		}
		se := stdDev(draws[i])
		out[sp.info.Name] = RunInterval{Value: v, Lo: v - t*se, Hi: v + t*se, SE: se}
	}
	return out, nil
}

// String formats an interval for messages: "12.3 [11.9, 12.8]".
func (r RunInterval) String() string {
	return fmt.Sprintf("%.4g [%.4g, %.4g]", r.Value, r.Lo, r.Hi)
}

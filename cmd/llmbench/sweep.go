package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
)

func init() { register("sweep", newSweepCmd) }

type sweepOptions struct {
	*traceFlags
	points      string
	start       float64
	target      float64
	precision   float64
	maxPoints   int
	minDuration time.Duration
	concurrency bool
	simulate    bool
	tgt         *targetFlags
	load        *loadFlags
	metrics     *metricFlags
	output      *outputFlags
	engine      *engineFlags
	replicas    *replicaFlags
	fs          *pflag.FlagSet
	capacity    *capacityFlags // issue 39: saturation watch, server grid (flags_capacity.go)
}

func newSweepCmd(app *App) *cobra.Command {
	o := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep --trace FILE --slo ttft=…,tpot=… [flags]",
		Short: "Find capacity: the highest load whose goodput meets the target, and the latency–throughput curve",
		Long: `Replay the trace at increasing arrival rates (or concurrencies with --by-concurrency),
doubling from --start until the goodput fraction falls below --target or the server saturates,
then bisect between the last good and first bad load. Each point is a normal results directory;
sweep.json holds the curve and the capacity. With --simulate the points run on the reference
engine's virtual clock (seconds, no HTTP).`,
		Example: `  llmbench sweep --trace traces/examples/chat-small.jsonl --slo ttft=500ms,tpot=50ms --target 0.9 --simulate
  llmbench sweep --trace prod.jsonl --endpoint http://127.0.0.1:8000 --slo ttft=1s,tpot=60ms --points 2,4,8,16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd.Context(), app, o) },
	}
	fs := cmd.Flags()
	o.fs = fs
	o.traceFlags = addTraceFlags(fs)
	fs.StringVar(&o.points, "points", "", "measure exactly these loads (comma-separated req/s or concurrencies) instead of searching")
	fs.Float64Var(&o.start, "start", 0, "first load of the search (default: the trace's own rate, or concurrency 1)")
	fs.Float64Var(&o.target, "target", 0.9, "goodput fraction a load must reach (requests meeting every SLO / all requests)")
	fs.Float64Var(&o.precision, "precision", 0.05, "stop when the bracket around the capacity is this narrow (relative)")
	fs.IntVar(&o.maxPoints, "max-points", 12, "measure at most this many loads")
	fs.DurationVar(&o.minDuration, "min-duration", time.Minute, "each rate point sends for at least this long: a shorter trace is replayed back to back (0 = as is)")
	fs.BoolVar(&o.concurrency, "by-concurrency", false, "sweep closed-loop concurrency instead of open-loop arrival rate")
	fs.BoolVar(&o.simulate, "simulate", false, "run the points on the reference engine's virtual clock instead of over HTTP")
	o.tgt = addTargetFlags(fs)
	o.load = addLoadFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.engine = addEngineFlags(fs)
	o.replicas = addReplicaFlags(fs)
	o.capacity = addSaturationFlags(fs)
	o.capacity.addServerSweepFlags()
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func runSweep(ctx context.Context, app *App, o *sweepOptions) error {
	if o.tgt.scrapeMetric {
		return fmt.Errorf("--scrape-metrics applies to run; scrape one load point with run --rate-scale")
	}
	trace, err := o.traceFlags.open(app.Stderr) // read again for each point, not held
	if err != nil {
		return err
	}
	mopts, err := o.metrics.options()
	if err != nil {
		return err
	}
	if o.metrics.slo == "" && len(o.metrics.classSLO) == 0 {
		return fmt.Errorf("sweep needs --slo (capacity is the highest load that meets it)")
	}
	if o.simulate && o.concurrency {
		return fmt.Errorf("--simulate sweeps arrival rate only (the virtual clock has no closed-loop client)")
	}
	if o.simulate && o.tgt.endpoint != "" {
		return fmt.Errorf("--simulate runs the reference engine; it does not take --endpoint")
	}
	if err := o.refuseIdleFlags(); err != nil {
		return err
	}
	if err := o.replicas.check(); err != nil {
		return err
	}
	if o.replicas.changed() && !o.simulate {
		return fmt.Errorf("--replicas and --router simulate a cluster; they need --simulate")
	}
	if err := o.capacity.prepare(app, o.simulate, o.concurrency); err != nil {
		return err
	}
	points, err := parsePoints(o.points)
	if err != nil {
		return err
	}
	baseRate := runner.SourceRate(trace)
	start := o.startLoad(baseRate)
	out := o.output.out
	if out == "" {
		out = filepath.Join(runner.DefaultOutDir(time.Now()), "sweep")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := app.watchInterrupts(cancel, func() {}, o.load.grace)
	defer stop()

	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	// sweepOne sweeps one server (each of --serve-cmd's in turn) into out.
	sweepOne := func(ctx context.Context, out string) (*runner.SweepResult, error) {
		var sizer *loadgen.Sizer // measured for the first point, reused by the others (one server)
		produce := func(load float64) (runner.Producer, metrics.RunInfo, error) {
			info := metrics.RunInfo{Command: commandLine(app.Args), Trace: o.traceFlags.path, Seed: o.load.seed, Version: version}
			if o.simulate {
				return o.simulatedPoint(load, baseRate, info)
			}
			p, rinfo, closeTarget, err := o.httpPoint(ctx, app, load, baseRate, info, &sizer)
			if closeTarget != nil {
				closers = append(closers, closeTarget)
			}
			return p, rinfo, err
		}
		return runner.Sweep(ctx, runner.SweepOptions{
			Trace: trace, Concurrency: o.concurrency, Points: points, Start: start,
			Target: o.target, Precision: o.precision, MaxPoints: o.maxPoints, MinDuration: o.minDuration, BaseRate: baseRate, OutDir: out, Metrics: mopts, HTML: o.output.html(app),
			BlockTokens: o.load.blockTokens,
			OnPoint: func(load float64) {
				if !o.output.noProgress && app.showProgress() { // a sweep's progress is a line per point
					fmt.Fprintf(app.Stderr, "sweep: measuring %s\n", loadText(load, o.concurrency))
				}
			},
		}, produce)
	}
	if o.capacity.serveCmd != "" {
		return o.capacity.serverSweep(ctx, app, o, out, mopts, sweepOne)
	}
	res, err := sweepOne(ctx, out)
	if res != nil {
		printSweep(app, res)
		printSkipped(app, res)
		fmt.Fprintf(app.Stdout, "\nresults: %s (one directory per point, sweep.json)\n", out)
		if app.interrupted.Load() {
			return &exitError{exitInterrupted, errors.New("interrupted: the points measured so far are written")}
		}
		if why := sweepInputFailure(res.Points); why != "" && err == nil {
			return &exitError{exitRunFailed, errors.New(why)}
		}
	}
	return err
}

// startLoad is the search's first load: --start, else the trace's own rate (or concurrency 1).
func (o *sweepOptions) startLoad(baseRate float64) float64 {
	switch {
	case o.start != 0:
		return o.start
	case o.concurrency:
		return 1
	}
	return baseRate
}

// parsePoints reads --points ("" gives none).
func parsePoints(list string) ([]float64, error) {
	var points []float64
	if list == "" {
		return nil, nil
	}
	for _, p := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--points %q: want positive numbers separated by commas", list)
		}
		points = append(points, v)
	}
	return points, nil
}

// sweepInputFailure says why the sweep failed its input check ("" when no point did): a
// point whose prompts the server counted beyond --input-tolerance measured another workload
// (docs/inputs.md).
func sweepInputFailure(points []metrics.SweepPoint) string {
	for _, p := range points {
		if p.Dir == "" {
			continue
		}
		if s, err := runner.ReadSummary(p.Dir); err == nil {
			if why := metrics.InputFailure(s); why != "" {
				return fmt.Sprintf("the sweep failed at load %.4g: %s", p.Rate, why)
			}
		}
	}
	return ""
}

// simulatedPoint builds the producer of one load point on the reference engine's virtual
// clock (--simulate).
func (o *sweepOptions) simulatedPoint(load, baseRate float64, info metrics.RunInfo) (runner.Producer, metrics.RunInfo, error) {
	cfg, err := o.engine.config()
	if err != nil {
		return nil, info, err
	}
	a := &engineadapter.Simulator{Config: cfg, RateScale: load / baseRate, Warmup: o.load.warmup, Cooldown: o.load.cooldown,
		Replicas: o.replicas.replicas, Router: o.replicas.router}
	info.Mode, info.RateScale, info.Endpoint, info.Tokenizer = "simulated", load/baseRate, "simulated reference engine (virtual clock)", "reference"
	return a.Produce, info, nil
}

// httpPoint builds the producer of one load point over HTTP (the endpoint, or an embedded
// engine started for the point; closeTarget stops it). The prompt sizing is measured for the
// first point and kept in *sizer for the others: one server, one measurement.
func (o *sweepOptions) httpPoint(ctx context.Context, app *App, load, baseRate float64, info metrics.RunInfo, sizer **loadgen.Sizer) (runner.Producer, metrics.RunInfo, func(), error) {
	lf := *o.load
	if o.concurrency {
		lf.concurrency = int(load)
	} else {
		lf.rateScale = o.load.rateScale * load / baseRate
	}
	tgt, rinfo, closeTarget, err := openTarget(app, o.tgt, &lf, o.engine)
	if err != nil {
		return nil, info, nil, err
	}
	closeTarget = sync.OnceFunc(closeTarget)
	tok, err := o.tgt.loadTokenizer(o.tgt.endpoint == "")
	if err != nil {
		return nil, info, closeTarget, err
	}
	lo, err := lf.options(tgt, tok)
	if err == nil {
		lo.PromptSizing, err = o.tgt.sizing(o.tgt.endpoint == "")
	}
	if err == nil && *sizer == nil {
		*sizer, err = loadgen.MeasureSizing(ctx, lo)
	}
	if err != nil {
		return nil, info, closeTarget, err
	}
	lo.Sizer = *sizer
	rinfo.Command, rinfo.Trace, rinfo.Seed, rinfo.Version, rinfo.Tokenizer = info.Command, info.Trace, info.Seed, info.Version, tok.Name()
	return runner.ThenClose(o.capacity.producer(lo, lf.effectiveTimeScale(o.tgt.endpoint)), closeTarget), rinfo, closeTarget, nil
}

// loadText is a load as a progress line shows it: "20 req/s", "4.82 req/s", "concurrency 8".
func loadText(load float64, concurrency bool) string {
	if concurrency {
		return fmt.Sprintf("concurrency %.0f", load)
	}
	return strconv.FormatFloat(load, 'g', 3, 64) + " req/s"
}

func printSweep(app *App, r *runner.SweepResult) {
	unit := "req/s"
	if r.Mode == "concurrency" {
		unit = "conc."
	}
	graded := false // quality (issue 17): a pass-rate column when the trace has checks
	for _, p := range r.Points {
		graded = graded || p.Quality != nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	qualityHead := ""
	if graded {
		qualityHead = "quality %\t"
	}
	fmt.Fprintf(tw, "load (%s)\tachieved req/s\tout tok/s\tgoodput req/s\tgoodput %%\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tfailed %%\t%s\n", unit, qualityHead)
	for _, p := range r.Points {
		mark := ""
		if p.GoodputFraction >= r.Target && !p.Saturated {
			mark = " ok"
		}
		if p.Saturated {
			mark += " saturated"
		}
		if p.Limited != "" {
			mark = " limited"
		}
		quality := ""
		switch {
		case p.Quality != nil:
			quality = fmt.Sprintf("%.1f [%.1f, %.1f]\t", 100*p.Quality.PassRate, 100*p.Quality.CILow, 100*p.Quality.CIHigh)
		case graded:
			quality = "-\t"
		}
		fmt.Fprintf(tw, "%.4g\t%.2f\t%.0f\t%.2f\t%.1f%s\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%s\n", p.Rate, p.RequestsPerS, p.OutputTokensPerS, p.GoodputPerS,
			100*p.GoodputFraction, mark, p.TTFTP50, p.TTFTP99, p.TPOTP50, p.TPOTP99, 100*p.FailedFraction, quality)
	}
	tw.Flush()
	if r.Capacity.Rate > 0 {
		atLeast := ""
		if r.CapacityLowerBound {
			atLeast = "at least " // the load above was limited by the harness, not the server
		}
		fmt.Fprintf(app.Stdout, "\ncapacity: %s%.4g %s with goodput >= %.0f%% of requests within %s; latencies in ms\n", atLeast, r.Capacity.Rate, unit, 100*r.Target, r.SLO)
		if r.Capacity.Reason != "" {
			fmt.Fprintf(app.Stdout, "why: %s\n", r.Capacity.Reason)
		}
	} else {
		reason := r.Capacity.Reason
		if reason == "" {
			reason = "no measured load met the target"
		}
		fmt.Fprintf(app.Stdout, "\ncapacity: none found (%s); try a lower --start\n", reason)
	}
}

// sweepSetsLoad are the load flags a sweep sets itself for each point.
var sweepSetsLoad = map[string]string{
	"concurrency": "sweep sets each point's load: --by-concurrency sweeps concurrency",
	"rate-scale":  "sweep sets each point's rate: --start, --points or the search choose it",
}

// searchOnly are the flags of the capacity search, which --points replaces.
var searchOnly = []string{"start", "precision", "max-points"}

// httpOnlySweep are the flags that act on HTTP requests, the client or its display: a
// --simulate sweep runs on the virtual clock, where they do nothing.
var httpOnlySweep = []string{"api", "api-key-env", "backend", "batch-size", "ca-cert", "duration", "grace", "header",
	"insecure", "max-concurrency", "max-line-bytes", "max-requests", "no-stream", "repeat",
	"time-scale", "timeout-connect", "timeout-first-token", "timeout-idle", "timeout-total", "tokenizer",
	"wire", "reasoning", "session-header", "prompt-sizing", "input-tolerance"}

// refuseIdleFlags makes a flag that would do nothing in this sweep an error that says why.
func (o *sweepOptions) refuseIdleFlags() error {
	changed := func(n string) bool { f := o.fs.Lookup(n); return f != nil && f.Changed }
	for _, n := range []string{"concurrency", "rate-scale"} {
		if changed(n) {
			return fmt.Errorf("--%s: %s", n, sweepSetsLoad[n])
		}
	}
	if o.points != "" {
		for _, n := range searchOnly {
			if changed(n) {
				return fmt.Errorf("--%s steers the capacity search, which --points replaces (it measures exactly the loads given): drop one of them", n)
			}
		}
	}
	if o.simulate {
		for _, n := range httpOnlySweep {
			if changed(n) {
				return fmt.Errorf("--%s acts on HTTP requests or the client; --simulate runs the points on the virtual clock, where it does nothing", n)
			}
		}
		if o.engine.faults != "" {
			cfg, err := o.engine.config()
			if err != nil {
				return err
			}
			http := cfg.Faults
			http.EarlyEOS, http.Seed, http.From, http.Until = 0, 0, 0, 0
			if h := http.String(); h != "" {
				return fmt.Errorf("--faults %s act on HTTP streams and do not apply to --simulate (only early-eos does)", h)
			}
		}
	}
	return nil
}

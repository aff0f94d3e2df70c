package usecase

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/reaper"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
)

// SweepOptions are `llmbench sweep`'s options: the loads to measure (Points, or a search
// from Start), the goodput fraction a load must reach, and the shared option groups.
type SweepOptions struct {
	Trace       TraceOptions
	Points      string
	Start       float64
	Goodput     float64 // --target: the goodput fraction a load must reach
	Precision   float64
	MaxPoints   int
	MinDuration time.Duration
	// ByConcurrency sweeps closed-loop concurrency instead of arrival rate.
	ByConcurrency bool
	// Simulate runs the points on the reference engine's virtual clock.
	Simulate bool
	Target   TargetOptions
	Load     LoadOptions
	Metrics  MetricOptions
	Output   OutputOptions
	Engine   EngineOptions
	Replicas ReplicaOptions
	// Capacity (issue 39): the saturation watch of each point, and --serve-cmd's grid of
	// server configurations (capacity.go).
	Capacity CapacityOptions
	// PowerMetrics are DCGM exporters' metrics URLs of the server's GPUs (--power-metrics),
	// read for each point's energy (docs/energy.md).
	PowerMetrics []string
	// Changed says which flags were given (a flag that would do nothing is refused).
	Changed Changed
}

// Sweep measures the loads (or searches for the capacity), prints the curve and the capacity,
// and returns the command's exit status and the error to print.
func Sweep(ctx context.Context, env *Env, o *SweepOptions) (int, error) {
	_, ropts, err := o.prepare(env)
	if err != nil {
		return ExitBadInput, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := env.interrupts()
	if o.Capacity.ServeCmd != "" && env.Executable != "" && reaper.Supported {
		in.Exiting = "the points' records written so far are in their requests.msgpack; the server started by --serve-cmd is stopped by its keeper (SIGTERM, then SIGKILL after --serve-stop-timeout)"
	}
	defer in.Watch(cancel, func() {}, o.Load.Grace)()

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
			info := metrics.RunInfo{Command: CommandLine(env.Args), Trace: o.Trace.Path, Seed: o.Load.Seed, Version: env.Version}
			if o.Simulate {
				return o.simulatedPoint(load, ropts.BaseRate, info)
			}
			p, rinfo, closeTarget, err := o.httpPoint(ctx, env, load, ropts.BaseRate, info, &sizer)
			if closeTarget != nil {
				closers = append(closers, closeTarget)
			}
			return p, rinfo, err
		}
		one := ropts
		one.OutDir = out
		return runner.Sweep(ctx, one, produce)
	}
	if o.Capacity.ServeCmd != "" {
		return o.serverSweep(ctx, env, ropts.OutDir, ropts.Metrics, sweepOne)
	}
	res, err := sweepOne(ctx, ropts.OutDir)
	if res != nil {
		PrintSweep(env.Stdout, res)
		printSkipped(env.Stdout, res)
		fmt.Fprintf(env.Stdout, "\nresults: %s (one directory per point, sweep.json)\n", ropts.OutDir)
		if env.interrupted() {
			return ExitInterrupted, errors.New("interrupted: the points measured so far are written")
		}
		if why := sweepInputFailure(res.Points); why != "" && err == nil {
			return ExitRunFailed, errors.New(why)
		}
	}
	if err != nil {
		return ExitBadInput, err
	}
	return ExitOK, nil
}

// prepare checks the options, opens the trace and builds runner's sweep options.
func (o *SweepOptions) prepare(env *Env) (traces.Source, runner.SweepOptions, error) {
	if o.Target.ScrapeMetric {
		return nil, runner.SweepOptions{}, fmt.Errorf("--scrape-metrics applies to run; scrape one load point with run --rate-scale")
	}
	trace, err := o.Trace.Open(env.Stderr) // read again for each point, not held
	if err != nil {
		return nil, runner.SweepOptions{}, err
	}
	mopts, err := o.Metrics.Options()
	if err != nil {
		return nil, runner.SweepOptions{}, err
	}
	if err := o.check(); err != nil {
		return nil, runner.SweepOptions{}, err
	}
	if err := o.Capacity.prepare(env.Stderr, o.Simulate, o.ByConcurrency); err != nil {
		return nil, runner.SweepOptions{}, err
	}
	points, err := parsePoints(o.Points)
	if err != nil {
		return nil, runner.SweepOptions{}, err
	}
	baseRate := runner.SourceRate(trace)
	start := o.Start
	if start == 0 {
		if o.ByConcurrency {
			start = 1
		} else {
			start = baseRate
		}
	}
	out := o.Output.Out
	if out == "" {
		out = filepath.Join(runner.DefaultOutDir(time.Now()), "sweep")
	}
	return trace, runner.SweepOptions{
		Trace: trace, Concurrency: o.ByConcurrency, Points: points, Start: start,
		Target: o.Goodput, Precision: o.Precision, MaxPoints: o.MaxPoints, MinDuration: o.MinDuration, BaseRate: baseRate, OutDir: out, Metrics: mopts, HTML: o.Output.HTML(env.Getenv),
		BlockTokens: o.Load.BlockTokens, Power: o.PowerMetrics,
		OnPoint: func(load float64) {
			if !o.Output.NoProgress && env.ShowProgress { // a sweep's progress is a line per point
				fmt.Fprintf(env.Stderr, "sweep: measuring %s\n", loadText(load, o.ByConcurrency))
			}
		},
	}, nil
}

// check refuses a sweep without SLOs and options that do not go together.
func (o *SweepOptions) check() error {
	if o.Metrics.SLO == "" && len(o.Metrics.ClassSLO) == 0 {
		return fmt.Errorf("sweep needs --slo (capacity is the highest load that meets it)")
	}
	if o.Simulate && o.ByConcurrency {
		return fmt.Errorf("--simulate sweeps arrival rate only (the virtual clock has no closed-loop client)")
	}
	if o.Simulate && o.Target.Endpoint != "" {
		return fmt.Errorf("--simulate runs the reference engine; it does not take --endpoint")
	}
	if err := o.refuseIdleFlags(); err != nil {
		return err
	}
	if err := o.checkPower(); err != nil {
		return err
	}
	if err := o.Replicas.Check(); err != nil {
		return err
	}
	if o.Replicas.Given() && !o.Simulate {
		return fmt.Errorf("--replicas and --router simulate a cluster; they need --simulate")
	}
	return nil
}

// checkPower refuses --power-metrics where no server of the user's runs (--simulate, the
// embedded engine) or where the points run off real time, and exporter URLs that are not
// http(s) URLs.
func (o *SweepOptions) checkPower() error {
	if len(o.PowerMetrics) == 0 {
		return nil
	}
	if o.Simulate || (o.Target.Endpoint == "" && o.Capacity.ServeCmd == "") {
		return fmt.Errorf("--power-metrics reads the GPU power of an --endpoint or --serve-cmd server; the embedded and simulated engines have none to read")
	}
	if o.Load.TimeScale != 0 && o.Load.TimeScale != 1 {
		return fmt.Errorf("--power-metrics reads exporters in real time: drop --time-scale")
	}
	for _, u := range o.PowerMetrics {
		if err := runner.CheckExporterURL(u); err != nil {
			return fmt.Errorf("--power-metrics %q: %w", u, err)
		}
	}
	return nil
}

// parsePoints reads --points: positive loads separated by commas (nil for "").
func parsePoints(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	var points []float64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) { // NaN and Inf are no load
			return nil, fmt.Errorf("--points %q: want positive numbers separated by commas", s)
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
func (o *SweepOptions) simulatedPoint(load, baseRate float64, info metrics.RunInfo) (runner.Producer, metrics.RunInfo, error) {
	cfg, err := o.Engine.Config()
	if err != nil {
		return nil, info, err
	}
	a := &engineadapter.Simulator{Config: cfg, RateScale: load / baseRate, Warmup: o.Load.Warmup, Cooldown: o.Load.Cooldown,
		Replicas: o.Replicas.Replicas, Router: o.Replicas.Router}
	info.Mode, info.RateScale, info.Endpoint, info.Tokenizer = "simulated", load/baseRate, "simulated reference engine (virtual clock)", "reference"
	return a.Produce, info, nil
}

// httpPoint builds the producer of one load point over HTTP (the endpoint, or an embedded
// engine started for the point; closeTarget stops it). The prompt sizing is measured for the
// first point and kept in *sizer for the others: one server, one measurement.
func (o *SweepOptions) httpPoint(ctx context.Context, env *Env, load, baseRate float64, info metrics.RunInfo, sizer **loadgen.Sizer) (runner.Producer, metrics.RunInfo, func(), error) {
	lf := o.Load
	if o.ByConcurrency {
		lf.Concurrency = int(load)
	} else {
		lf.RateScale = o.Load.RateScale * load / baseRate
	}
	tgt, rinfo, closeTarget, err := OpenTarget(env, &o.Target, &lf, &o.Engine)
	if err != nil {
		return nil, info, nil, err
	}
	closeTarget = sync.OnceFunc(closeTarget)
	tok, err := o.Target.LoadTokenizer(o.Target.Endpoint == "")
	if err != nil {
		return nil, info, closeTarget, err
	}
	lo, err := lf.Options(tgt, tok)
	if err == nil {
		lo.PromptSizing, err = o.Target.Sizing(o.Target.Endpoint == "")
	}
	if err == nil && *sizer == nil {
		*sizer, err = loadgen.MeasureSizing(ctx, lo)
	}
	if err != nil {
		return nil, info, closeTarget, err
	}
	lo.Sizer = *sizer
	rinfo.Command, rinfo.Trace, rinfo.Seed, rinfo.Version, rinfo.Tokenizer = info.Command, info.Trace, info.Seed, info.Version, tok.Name()
	return runner.ThenClose(o.Capacity.producer(lo, lf.EffectiveTimeScale(o.Target.Endpoint)), closeTarget), rinfo, closeTarget, nil
}

// loadText is a load as a progress line shows it: "20 req/s", "4.82 req/s", "concurrency 8".
func loadText(load float64, concurrency bool) string {
	if concurrency {
		return fmt.Sprintf("concurrency %.0f", load)
	}
	return strconv.FormatFloat(load, 'g', 3, 64) + " req/s"
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
func (o *SweepOptions) refuseIdleFlags() error {
	for _, n := range []string{"concurrency", "rate-scale"} {
		if o.Changed.Has(n) {
			return fmt.Errorf("--%s: %s", n, sweepSetsLoad[n])
		}
	}
	if o.Points != "" {
		for _, n := range searchOnly {
			if o.Changed.Has(n) {
				return fmt.Errorf("--%s steers the capacity search, which --points replaces (it measures exactly the loads given): drop one of them", n)
			}
		}
	}
	if !o.Simulate {
		return nil
	}
	for _, n := range httpOnlySweep {
		if o.Changed.Has(n) {
			return fmt.Errorf("--%s acts on HTTP requests or the client; --simulate runs the points on the virtual clock, where it does nothing", n)
		}
	}
	if o.Engine.Faults != "" {
		cfg, err := o.Engine.Config()
		if err != nil {
			return err
		}
		http := cfg.Faults
		http.EarlyEOS, http.Seed, http.From, http.Until = 0, 0, 0, 0
		if h := http.String(); h != "" {
			return fmt.Errorf("--faults %s act on HTTP streams and do not apply to --simulate (only early-eos does)", h)
		}
	}
	return nil
}

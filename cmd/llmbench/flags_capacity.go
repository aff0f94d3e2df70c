package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// capacityFlags are the flags of capacity studies (issue 39, docs/capacity.md): the online
// saturation watch of run and sweep, and sweep's grid of server configurations.
type capacityFlags struct {
	fs               *pflag.FlagSet
	stopOnSaturation bool
	saturationMin    time.Duration
	saturationTTFT   time.Duration
	// sweep --serve-cmd
	serveCmd     string
	grid         []string
	gpus         string
	serveHealth  string
	serveStart   time.Duration
	serveStopFor time.Duration
	// sat is the watch of each HTTP point, set by prepare (nil: none).
	sat *runner.SaturationOptions
}

// addSaturationFlags adds the saturation watch's flags (run and sweep).
func addSaturationFlags(fs *pflag.FlagSet) *capacityFlags {
	c := &capacityFlags{fs: fs}
	fs.BoolVar(&c.stopOnSaturation, "stop-on-saturation", false, "stop an open-loop run (each sweep point) once it is judged over-saturated: requests in flight are cancelled, the rest not sent (docs/capacity.md)")
	fs.DurationVar(&c.saturationMin, "saturation-min-time", metrics.DefaultSaturationMinTime, "the saturation watch judges nothing before this much of the run (engine time under --time-scale)")
	fs.DurationVar(&c.saturationTTFT, "saturation-min-ttft", metrics.DefaultSaturationMinTTFT, "a run is over-saturated only when its median TTFT over the watched window exceeds this")
	return c
}

// addServerSweepFlags adds sweep's flags of a grid of server configurations.
func (c *capacityFlags) addServerSweepFlags() {
	fs := c.fs
	fs.StringVar(&c.serveCmd, "serve-cmd", "", "start this server command per --grid configuration ({port}: a free loopback port, {KEY}: the grid's value), sweep it, stop it; writes pareto.json and pareto.html")
	fs.StringArrayVar(&c.grid, "grid", nil, "a server parameter to vary with --serve-cmd, KEY=V1,V2,… (repeatable: every combination is run)")
	fs.StringVar(&c.gpus, "gpus-per-server", "1", "GPUs each --serve-cmd server uses, for throughput per GPU: a number or {KEY} of a --grid key")
	fs.StringVar(&c.serveHealth, "serve-health", "/health", "the path polled on each --serve-cmd server until it answers 2xx")
	fs.DurationVar(&c.serveStart, "serve-start-timeout", 10*time.Minute, "how long a --serve-cmd server may take to answer its health path (a failed start is recorded and the sweep goes on)")
	fs.DurationVar(&c.serveStopFor, "serve-stop-timeout", 30*time.Second, "how long a --serve-cmd server has to exit after SIGTERM before SIGKILL")
}

// saturation is the run's saturation watch (nil for a closed loop, which cannot
// over-saturate: it sends only as requests finish).
func (c *capacityFlags) saturation(app *App, closedLoop bool) (*runner.SaturationOptions, error) {
	if c.saturationMin <= 0 || c.saturationTTFT <= 0 {
		return nil, fmt.Errorf("--saturation-min-time and --saturation-min-ttft must be > 0")
	}
	if closedLoop {
		for _, n := range []string{"stop-on-saturation", "saturation-min-time", "saturation-min-ttft"} {
			if f := c.fs.Lookup(n); f != nil && f.Changed {
				return nil, fmt.Errorf("--%s watches an open loop; a closed loop (--concurrency, --by-concurrency) sends only as requests finish and cannot over-saturate", n)
			}
		}
		return nil, nil
	}
	stop := c.stopOnSaturation
	return &runner.SaturationOptions{Rule: metrics.SaturationRule{MinTime: c.saturationMin, MinTTFT: c.saturationTTFT}, Stop: stop,
		OnSaturated: func(v metrics.SaturationVerdict) {
			if app.quiet {
				return
			}
			then := "the run goes on (--stop-on-saturation stops it)"
			if stop {
				then = "stopping the run (--stop-on-saturation)"
			}
			fmt.Fprintf(app.Stderr, "llmbench: %s; %s\n", v.Reason, then)
		}}, nil
}

// prepare checks sweep's capacity flags and sets the points' saturation watch.
func (c *capacityFlags) prepare(app *App, simulate, closedLoop bool) error {
	if f := c.fs.Lookup("grid"); f != nil && f.Changed && c.serveCmd == "" {
		return fmt.Errorf("--grid varies the servers of --serve-cmd; give --serve-cmd with {port} and a {KEY} per grid key")
	}
	if simulate {
		return c.refuseSimulated()
	}
	var err error
	c.sat, err = c.saturation(app, closedLoop)
	return err
}

// producer is the producer of one HTTP point: with the saturation watch when there is one.
func (c *capacityFlags) producer(lo loadgen.Options, timeScale float64) runner.Producer {
	if c.sat == nil {
		return runner.HTTPProducer(lo, timeScale)
	}
	return runner.SaturationProducer(lo, timeScale, *c.sat)
}

// refuseSimulated refuses the saturation and server flags with sweep --simulate.
func (c *capacityFlags) refuseSimulated() error {
	for _, n := range []string{"stop-on-saturation", "saturation-min-time", "saturation-min-ttft", "serve-cmd", "grid", "gpus-per-server", "serve-health", "serve-start-timeout", "serve-stop-timeout"} {
		if f := c.fs.Lookup(n); f != nil && f.Changed {
			return fmt.Errorf("--%s acts on servers over HTTP; --simulate runs the engine on its virtual clock (its overload report says when a point is over-saturated)", n)
		}
	}
	return nil
}

// serverSweep runs sweepOne once per --grid configuration against a server started from
// --serve-cmd (runner.ServerSweep), pointing the sweep's target at each server in turn.
func (c *capacityFlags) serverSweep(ctx context.Context, app *App, o *sweepOptions, out string, mopts metrics.Options, sweepOne func(context.Context, string) (*runner.SweepResult, error)) error {
	for _, n := range []string{"endpoint", "simulate"} {
		if f := o.fs.Lookup(n); f != nil && f.Changed {
			return fmt.Errorf("--%s: --serve-cmd starts the servers to sweep itself", n)
		}
	}
	grid, err := runner.ParseGrid(c.grid)
	if err != nil {
		return err
	}
	var log = app.Stderr
	if app.quiet {
		log = nil
	}
	res, err := runner.ServerSweep(ctx, runner.ServerSweepOptions{
		Template: c.serveCmd, Grid: grid, GPUs: c.gpus, OutDir: out, HealthPath: c.serveHealth,
		StartTimeout: c.serveStart, StopTimeout: c.serveStopFor, Target: o.target, SLO: mopts.SLO.String(), Log: log, HTML: o.output.html(app),
		Sweep: func(ctx context.Context, url, dir string) (*runner.SweepResult, error) {
			o.tgt.endpoint = url // the sweep's points read the target when they start
			defer func() { o.tgt.endpoint = "" }()
			return sweepOne(ctx, dir)
		},
	})
	if res != nil {
		printPareto(app, res)
		fmt.Fprintf(app.Stdout, "\nresults: %s (one directory per configuration, pareto.json, pareto.html)\n", out)
	}
	if app.interrupted.Load() {
		return &exitError{exitInterrupted, fmt.Errorf("interrupted: the configurations swept so far are written")}
	}
	return err
}

// printPareto prints each configuration's outcome and the frontier.
func printPareto(app *App, res *runner.ServerSweepResult) {
	for _, c := range res.Configs {
		switch {
		case c.Error != "":
			fmt.Fprintf(app.Stdout, "%s: %s (log %s)\n", c.Name, c.Error, c.Log)
		case c.Capacity > 0:
			fmt.Fprintf(app.Stdout, "%s: capacity %.4g; %s\n", c.Name, c.Capacity, filepath.Base(c.Dir))
		default:
			fmt.Fprintf(app.Stdout, "%s: no load met the target; %s\n", c.Name, filepath.Base(c.Dir))
		}
	}
	fmt.Fprintf(app.Stdout, "\nfrontier (output tok/s per GPU against per user, load points within %s at goodput >= %.0f%%):\n", res.SLO, 100*res.Target)
	n := 0
	for _, p := range res.Points {
		if !p.Dominated {
			n++
			fmt.Fprintf(app.Stdout, "  %-28s load %-8.4g %8.1f tok/s/GPU %8.1f tok/s/user\n", p.Config, p.Load, p.PerGPU, p.PerUser)
		}
	}
	if n == 0 {
		fmt.Fprintln(app.Stdout, "  (no load point of any configuration met the SLO)")
	}
}

// printSkipped lists the sweep's points left out as hopeless (above a point stopped at
// saturation).
func printSkipped(app *App, res *runner.SweepResult) {
	for _, p := range res.Skipped {
		fmt.Fprintf(app.Stdout, "skipped %.4g: %s\n", p.Rate, p.Reason)
	}
}

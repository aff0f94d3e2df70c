package usecase

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// CapacityOptions are the options of capacity studies (issue 39, docs/capacity.md): the
// online saturation watch of run and sweep, and sweep's grid of server configurations.
type CapacityOptions struct {
	StopOnSaturation bool          // --stop-on-saturation
	SaturationMin    time.Duration // --saturation-min-time
	SaturationTTFT   time.Duration // --saturation-min-ttft
	// sweep --serve-cmd
	ServeCmd     string
	Grid         []string
	GPUs         string
	ServeHealth  string
	ServeStart   time.Duration
	ServeStopFor time.Duration
	// Changed says which flags were given.
	Changed Changed
	// sat is the watch of each HTTP point, set by prepare (nil: none).
	sat *runner.SaturationOptions
}

// DefaultSaturationMinTime and DefaultSaturationMinTTFT are the watch's flags' defaults.
const (
	DefaultSaturationMinTime = metrics.DefaultSaturationMinTime
	DefaultSaturationMinTTFT = metrics.DefaultSaturationMinTTFT
)

func (c *CapacityOptions) changed(name string) bool { return c.Changed != nil && c.Changed(name) }

// Saturation is the run's saturation watch (nil for a closed loop, which cannot
// over-saturate: it sends only as requests finish). Its verdict is announced on log.
func (c *CapacityOptions) Saturation(log io.Writer, closedLoop bool) (*runner.SaturationOptions, error) {
	if c.SaturationMin <= 0 || c.SaturationTTFT <= 0 {
		return nil, fmt.Errorf("--saturation-min-time and --saturation-min-ttft must be > 0")
	}
	if closedLoop {
		for _, n := range []string{"stop-on-saturation", "saturation-min-time", "saturation-min-ttft"} {
			if c.changed(n) {
				return nil, fmt.Errorf("--%s watches an open loop; a closed loop (--concurrency, --by-concurrency) sends only as requests finish and cannot over-saturate", n)
			}
		}
		return nil, nil
	}
	stop := c.StopOnSaturation
	return &runner.SaturationOptions{Rule: metrics.SaturationRule{MinTime: c.SaturationMin, MinTTFT: c.SaturationTTFT}, Stop: stop,
		OnSaturated: func(v metrics.SaturationVerdict) {
			then := "the run goes on (--stop-on-saturation stops it)"
			if stop {
				then = "stopping the run (--stop-on-saturation)"
			}
			fmt.Fprintf(log, "llmbench: %s; %s\n", v.Reason, then)
		}}, nil
}

// prepare checks sweep's capacity options and sets the points' saturation watch.
func (c *CapacityOptions) prepare(log io.Writer, simulate, closedLoop bool) error {
	if c.changed("grid") && c.ServeCmd == "" {
		return fmt.Errorf("--grid varies the servers of --serve-cmd; give --serve-cmd with {port} and a {KEY} per grid key")
	}
	if simulate {
		return c.refuseSimulated()
	}
	var err error
	c.sat, err = c.Saturation(log, closedLoop)
	return err
}

// producer is the producer of one HTTP point: with the saturation watch when there is one.
func (c *CapacityOptions) producer(lo loadgen.Options, timeScale float64) runner.Producer {
	if c.sat == nil {
		return runner.HTTPProducer(lo, timeScale)
	}
	return runner.SaturationProducer(lo, timeScale, *c.sat)
}

// refuseSimulated refuses the saturation and server options with sweep --simulate.
func (c *CapacityOptions) refuseSimulated() error {
	for _, n := range []string{"stop-on-saturation", "saturation-min-time", "saturation-min-ttft", "serve-cmd", "grid", "gpus-per-server", "serve-health", "serve-start-timeout", "serve-stop-timeout"} {
		if c.changed(n) {
			return fmt.Errorf("--%s acts on servers over HTTP; --simulate runs the engine on its virtual clock (its overload report says when a point is over-saturated)", n)
		}
	}
	return nil
}

// serverSweep runs sweepOne once per --grid configuration against a server started from
// --serve-cmd (runner.ServerSweep), pointing the sweep's target at each server in turn.
func (o *SweepOptions) serverSweep(ctx context.Context, env *Env, out string, mopts metrics.Options, sweepOne func(context.Context, string) (*runner.SweepResult, error)) (int, error) {
	c := &o.Capacity
	for _, n := range []string{"endpoint", "simulate"} {
		if o.Changed != nil && o.Changed(n) {
			return ExitBadInput, fmt.Errorf("--%s: --serve-cmd starts the servers to sweep itself", n)
		}
	}
	grid, err := runner.ParseGrid(c.Grid)
	if err != nil {
		return ExitBadInput, err
	}
	res, err := runner.ServerSweep(ctx, runner.ServerSweepOptions{
		Template: c.ServeCmd, Grid: grid, GPUs: c.GPUs, OutDir: out, HealthPath: c.ServeHealth,
		StartTimeout: c.ServeStart, StopTimeout: c.ServeStopFor, Target: o.Goodput, SLO: mopts.SLO.String(), Log: env.Stderr, HTML: o.Output.HTML(env.Getenv),
		Keeper: env.Executable,
		Sweep: func(ctx context.Context, url, dir string) (*runner.SweepResult, error) {
			o.Target.Endpoint = url // the sweep's points read the target when they start
			defer func() { o.Target.Endpoint = "" }()
			return sweepOne(ctx, dir)
		},
	})
	if res != nil {
		printPareto(env.Stdout, res)
		fmt.Fprintf(env.Stdout, "\nresults: %s (one directory per configuration, pareto.json, pareto.html)\n", out)
	}
	if env.interrupted() {
		return ExitInterrupted, fmt.Errorf("interrupted: the configurations swept so far are written")
	}
	if err != nil {
		return ExitBadInput, err
	}
	return ExitOK, nil
}

// printPareto prints each configuration's outcome and the frontier.
func printPareto(w io.Writer, res *runner.ServerSweepResult) {
	for _, c := range res.Configs {
		switch {
		case c.Error != "":
			fmt.Fprintf(w, "%s: %s (log %s)\n", c.Name, c.Error, c.Log)
		case c.Capacity > 0:
			fmt.Fprintf(w, "%s: capacity %.4g; %s\n", c.Name, c.Capacity, filepath.Base(c.Dir))
		default:
			fmt.Fprintf(w, "%s: no load met the target; %s\n", c.Name, filepath.Base(c.Dir))
		}
	}
	fmt.Fprintf(w, "\nfrontier (output tok/s per GPU against per user, load points within %s at goodput >= %.0f%%):\n", res.SLO, 100*res.Target)
	n := 0
	for _, p := range res.Points {
		if !p.Dominated {
			n++
			fmt.Fprintf(w, "  %-28s load %-8.4g %8.1f tok/s/GPU %8.1f tok/s/user\n", p.Config, p.Load, p.PerGPU, p.PerUser)
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  (no load point of any configuration met the SLO)")
	}
}

// printSkipped lists the sweep's points left out as hopeless (above a point stopped at
// saturation).
func printSkipped(w io.Writer, res *runner.SweepResult) {
	for _, p := range res.Skipped {
		fmt.Fprintf(w, "skipped %.4g: %s\n", p.Rate, p.Reason)
	}
}

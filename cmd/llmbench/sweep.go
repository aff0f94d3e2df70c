package main

import (
	"time"

	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	capacity    usecase.CapacityOptions // issue 39: saturation watch, server grid (flags_capacity.go)
	power       []string                // issue 39: DCGM exporters (flags_energy.go)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(usecase.Sweep(cmd.Context(), app.env(), o.options()))
		},
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
	addSaturationFlags(fs, &o.capacity)
	addServerSweepFlags(fs, &o.capacity)
	addSweepPowerFlag(fs, &o.power)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

// options copies sweep's flags into the use case's options.
func (o *sweepOptions) options() *usecase.SweepOptions {
	return &usecase.SweepOptions{
		Trace: o.traceFlags.opts(), Points: o.points, Start: o.start, Goodput: o.target, Precision: o.precision,
		MaxPoints: o.maxPoints, MinDuration: o.minDuration, ByConcurrency: o.concurrency, Simulate: o.simulate,
		Target: o.tgt.opts(), Load: o.load.opts(), Metrics: o.metrics.opts(), Output: o.output.opts(),
		Engine: o.engine.opts(), Replicas: o.replicas.opts(), Changed: o.fs.Changed, Capacity: o.capacity,
		PowerMetrics: o.power,
	}
}

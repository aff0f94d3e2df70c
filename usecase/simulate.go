package usecase

import (
	"context"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
)

// SimulateOptions are `llmbench simulate`'s options: a trace through the reference engine
// (or a cluster of replicas) on a virtual clock.
type SimulateOptions struct {
	Trace       TraceOptions
	RateScale   float64
	MaxRequests int
	Warmup      time.Duration
	Cooldown    time.Duration
	// KeepOutput keeps every record's output (quality, issue 17).
	KeepOutput bool
	Engine     EngineOptions
	Replicas   ReplicaOptions
	Metrics    MetricOptions
	Output     OutputOptions
	Fail       FailureOptions
}

// Simulate runs the trace on the virtual clock into one results directory, prints the summary
// and where the results are, and returns the command's exit status and the error to print.
func Simulate(ctx context.Context, env *Env, o *SimulateOptions) (int, error) {
	if err := o.Fail.Check(); err != nil {
		return ExitBadInput, err
	}
	trace, ropts, adapter, err := o.prepare(env)
	if err != nil {
		return ExitBadInput, err
	}
	produce := runner.Producer(adapter.Produce)
	if w := o.Output.Progress(env); w != nil {
		sp := runner.StartSimProgress(runner.SimProgressOptions{W: w, Terminal: env.IsTerminal, Width: env.TermWidth, Trace: trace, RateScale: o.RateScale})
		defer sp.Stop() // Wrap stops it when the simulation ends; this, when Execute fails first
		produce = sp.Wrap(produce)
	}
	res, err := runner.Execute(ctx, ropts, produce)
	if res == nil || res.Summary == nil {
		return exitOf(err)
	}
	if werr := reports.WriteTerminal(env.Stdout, res.Summary); werr != nil && err == nil {
		err = werr
	}
	fmt.Fprintf(env.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
	PrintCompareHint(env, res.Dir)
	if err != nil {
		return ExitBadInput, err
	}
	return MeasuredExit(env, o.Fail, res.Summary)
}

// prepare checks the options, opens the trace (read as it is simulated, checked first as run
// does: records are written as requests finish, so memory does not grow with the trace) and
// builds the engine's adapter and runner's options.
func (o *SimulateOptions) prepare(env *Env) (traces.Source, runner.Options, *engineadapter.Simulator, error) {
	if o.RateScale <= 0 {
		return nil, runner.Options{}, nil, fmt.Errorf("--rate-scale must be > 0")
	}
	trace, err := o.Trace.Open(env.Stderr)
	if err != nil {
		return nil, runner.Options{}, nil, err
	}
	if trace, err = traces.Head(trace, o.MaxRequests); err != nil {
		return nil, runner.Options{}, nil, err
	}
	cfg, err := o.Engine.Config()
	if err != nil {
		return nil, runner.Options{}, nil, err
	}
	if err := o.onlyVirtual(cfg); err != nil {
		return nil, runner.Options{}, nil, err
	}
	if err := o.Replicas.Check(); err != nil {
		return nil, runner.Options{}, nil, err
	}
	mopts, err := o.Metrics.Options()
	if err != nil {
		return nil, runner.Options{}, nil, err
	}
	if o.Metrics.Changed.Has("input-tolerance") {
		return nil, runner.Options{}, nil, fmt.Errorf("--input-tolerance checks a server's count of the synthesized prompts; a simulation's engine counts them with the reference tokenizer that sized them (use it with run, ab or sweep against an endpoint)")
	}
	adapter := &engineadapter.Simulator{Config: cfg, RateScale: o.RateScale, Warmup: o.Warmup, Cooldown: o.Cooldown, KeepOutput: o.KeepOutput,
		Replicas: o.Replicas.Replicas, Router: o.Replicas.Router}
	info := metrics.RunInfo{
		Command: CommandLine(env.Args), Trace: o.Trace.Path, Endpoint: "simulated reference engine (virtual clock)",
		Version: env.Version, Mode: "simulated", RateScale: o.RateScale, Tokenizer: "reference",
		EngineSeed: cfg.Seed,
		Config:     env.config(),
	}
	return trace, runner.Options{
		Trace: trace, OutDir: o.Output.Out, Metrics: mopts, Info: info, HTML: o.Output.HTML(env.Getenv),
		SummarizeLive: true, // the adapter never touches a Record it handed over
	}, adapter, nil
}

// onlyVirtual refuses the flags that mean something only over HTTP: on the virtual clock
// there is no stream to frame and no connection to fault.
func (o *SimulateOptions) onlyVirtual(cfg refengine.Config) error {
	for _, n := range []string{"wire", "reasoning"} {
		if o.Engine.Changed.Has(n) {
			return fmt.Errorf("--%s shapes the HTTP stream; simulate has none (use run, which serves the engine over HTTP)", n)
		}
	}
	http := cfg.Faults
	http.EarlyEOS, http.Seed, http.From, http.Until = 0, 0, 0, 0
	if http := http.String(); http != "" {
		return fmt.Errorf("--faults %s act on HTTP streams and do not apply to simulate (only early-eos does); use run", http)
	}
	return nil
}

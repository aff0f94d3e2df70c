package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/usecase"
)

func init() { register("simulate", newSimulateCmd) }

type simulateOptions struct {
	*traceFlags
	rateScale   float64
	maxRequests int
	warmup      time.Duration
	cooldown    time.Duration
	engine      *engineFlags
	replicas    *replicaFlags
	metrics     *metricFlags
	output      *outputFlags
	fail        *failureFlags
	keepOutput  bool // quality (issue 17): every record keeps its output
}

func newSimulateCmd(app *App) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate --trace FILE [engine flags]",
		Short: "Run a trace through the reference engine on a virtual clock (no HTTP, no sleeping)",
		Long: `Run a trace through the reference engine's scheduler and step-time model on a virtual
clock and write the same results directory and report as "run". A what-if tool: "what happens
to P99 TTFT on H200 with FP8 and speculative decoding?" in seconds, without a GPU. Times are the
engine's ground truth: there is no client or network in the numbers. Session turns are sent as
run sends them: once every turn they depend on has finished on the engine's clock, plus their
think time and tool delay, carrying the conversation so far.

--replicas N simulates N independent engines behind a router on one timeline ("what do four
H100s behind a prefix-aware router do with this trace at 4x its rate?"); the summary then
has a per-replica block (requests, tokens, prefix-cache hit rate, busy share). Routers:
round-robin; least-loaded (fewest outstanding requests); prefix-aware (the replica holding
the longest leading run of the prompt's KV blocks, scored as llm-d's inference scheduler
does with its queue and KV-cache scorers, and never a replica more than 32 outstanding
requests above the least-loaded one; least-loaded when no replica holds any of it).`,
		Example: `  llmbench simulate --trace traces/examples/chat-small.jsonl --gpu h200 --weight-dtype fp8
  llmbench simulate --trace prod.jsonl --model llama-3.1-70b --gpu h100-sxm --tp 4 --spec-k 4 --spec-alpha 0.7 --rate-scale 2
  llmbench simulate --trace traces/examples/mixed-small.jsonl --spec-k 5 --spec-method eagle --spec-tree 8 --spec-alpha 0.9,0.8,0.7
  llmbench simulate --trace traces/examples/mixed-small.jsonl --spec-k 4 --spec-method ngram --spec-repetition summarization=0.8,rag=0.6,0.3

  llmbench simulate --trace rag.jsonl --rate-scale 4 --replicas 4 --router prefix-aware`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd.Context(), app, o) },
	}
	fs := cmd.Flags()
	o.traceFlags = addTraceFlags(fs)
	fs.Float64Var(&o.rateScale, "rate-scale", 1, "multiply the trace's arrival rate by X")
	fs.IntVar(&o.maxRequests, "max-requests", 0, "simulate at most the first N requests (0 = all)")
	fs.DurationVar(&o.warmup, "warmup", 0, "requests arriving in the first D are warm-up (excluded, shown separately)")
	fs.DurationVar(&o.cooldown, "cooldown", 0, "requests arriving in the last D are cool-down (excluded, shown separately)")
	fs.BoolVar(&o.keepOutput, "keep-output", false, "keep every response's answer text and tool calls in requests.msgpack (requests with expect checks always keep theirs; the text is made only for those kept)")
	o.engine = addEngineFlags(fs)
	o.replicas = addReplicaFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.fail = addFailureFlags(fs)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func runSimulate(ctx context.Context, app *App, o *simulateOptions) error {
	if err := o.fail.check(); err != nil {
		return err
	}
	if o.rateScale <= 0 {
		return fmt.Errorf("--rate-scale must be > 0")
	}
	// The trace is read as it is simulated (checked first, as run does): records are written
	// as requests finish, so memory does not grow with the trace.
	trace, err := o.traceFlags.open(app.Stderr)
	if err != nil {
		return err
	}
	if trace, err = traces.Head(trace, o.maxRequests); err != nil {
		return err
	}
	cfg, err := o.engine.config()
	if err != nil {
		return err
	}
	if err := simulateOnlyFlags(o, cfg); err != nil {
		return err
	}
	if err := o.replicas.check(); err != nil {
		return err
	}
	mopts, err := o.metrics.options()
	if err != nil {
		return err
	}
	if o.metrics.changed("input-tolerance") {
		return fmt.Errorf("--input-tolerance checks a server's count of the synthesized prompts; a simulation's engine counts them with the reference tokenizer that sized them (use it with run, ab or sweep against an endpoint)")
	}
	adapter := &engineadapter.Simulator{Config: cfg, RateScale: o.rateScale, Warmup: o.warmup, Cooldown: o.cooldown, KeepOutput: o.keepOutput,
		Replicas: o.replicas.replicas, Router: o.replicas.router}
	info := metrics.RunInfo{
		Command: commandLine(app.Args), Trace: o.traceFlags.path, Endpoint: "simulated reference engine (virtual clock)",
		Version: version, Mode: "simulated", RateScale: o.rateScale, Tokenizer: "reference",
		EngineSeed: cfg.Seed,
		Config:     flagConfig(app.flags),
	}
	produce := runner.Producer(adapter.Produce)
	if w := o.output.progress(app); w != nil {
		sp := runner.StartSimProgress(runner.SimProgressOptions{W: w, Terminal: app.IsTerminal, Width: app.TermWidth, Trace: trace, RateScale: o.rateScale})
		defer sp.Stop() // Wrap stops it when the simulation ends; this, when Execute fails first
		produce = sp.Wrap(produce)
	}
	res, err := runner.Execute(ctx, runner.Options{
		Trace: trace, OutDir: o.output.out, Metrics: mopts, Info: info, HTML: o.output.html(app),
		SummarizeLive: true, // the adapter never touches a Record it handed over
	}, produce)
	if res != nil && res.Summary != nil {
		if werr := reports.WriteTerminal(app.Stdout, res.Summary); werr != nil && err == nil {
			err = werr
		}
	}
	if res != nil && res.Summary != nil {
		fmt.Fprintf(app.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
		usecase.PrintCompareHint(app.env(), res.Dir)
		return measuredExit(app, err, o.fail, res.Summary)
	}
	return err
}

// simulateOnlyFlags refuses the flags that mean something only over HTTP: on the virtual clock
// there is no stream to frame and no connection to fault.
func simulateOnlyFlags(o *simulateOptions, cfg refengine.Config) error {
	for _, n := range []string{"wire", "reasoning"} {
		if fl := o.engine.fs.Lookup(n); fl != nil && fl.Changed {
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

// simulateCommand reports whether args run simulate.
func simulateCommand(args []string) bool {
	for _, a := range args {
		if a == "help" {
			return false
		}
		if _, ok := commandFactories[a]; ok {
			return a == "simulate"
		}
	}
	return false
}

// simulateTuning sets GOGC=400 for simulate unless the environment sets GOGC. simulate's live
// heap is small and flat (the trace is read as it is simulated and records go to disk as they
// finish, ≈ 25 MB), while every request allocates its timeline and record, so a collector
// sized to the live heap runs often: 100,000 requests took 8.2–9.6 s of user CPU with GOGC=100
// and 7.4–7.7 s with 400, the peak RSS 57–62 MB and 103–115 MB (refengine/BENCHMARKS.md).
// When the engine falls behind the trace the live heap grows with the requests waiting, and
// the percentage then follows it down (governGC, gctune.go). The returned function stops that.
func simulateTuning(getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	debug.SetGCPercent(400)
	return governGC(gcHeadroom, nil)
}

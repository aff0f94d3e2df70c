package main

import (
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(usecase.Simulate(cmd.Context(), app.env(), o.options()))
		},
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

// options copies simulate's flags into the use case's options.
func (o *simulateOptions) options() *usecase.SimulateOptions {
	return &usecase.SimulateOptions{
		Trace: o.traceFlags.opts(), RateScale: o.rateScale, MaxRequests: o.maxRequests, Warmup: o.warmup,
		Cooldown: o.cooldown, KeepOutput: o.keepOutput, Engine: o.engine.opts(), Replicas: o.replicas.opts(),
		Metrics: o.metrics.opts(), Output: o.output.opts(), Fail: o.fail.opts(),
	}
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

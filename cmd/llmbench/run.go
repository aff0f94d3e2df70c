package main

import (
	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("run", newRunCmd) }

type runOptions struct {
	*traceFlags
	target  *targetFlags
	load    *loadFlags
	metrics *metricFlags
	output  *outputFlags
	engine  *engineFlags
	shard   *shardFlags
	fail    *failureFlags
	quality *qualityFlags
	// issues 34 and 39: flags_prefix.go, flags_energy.go, flags_capacity.go
	prefix   usecase.PrefixOptions
	energy   usecase.EnergyOptions
	capacity usecase.CapacityOptions
}

func newRunCmd(app *App) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --trace FILE [flags]",
		Short: "Replay a trace against an endpoint (default: the embedded reference engine) and write results",
		Long: `Replay a trace open-loop (each request at its trace time, latency measured from that
intended time) against an OpenAI-compatible endpoint, or against the bundled reference engine
when no --endpoint is given. Writes summary.json, requests.msgpack and report.html to the
results directory and prints a summary table (run.json, the run facts, is written at start).
Requests with expect checks (traces/FORMAT.md) are graded on their responses (summary.json's
"quality"; llmbench grade re-grades offline); --judge-endpoint adds an LLM judge after the run.

Exit status: 0; 2 on bad input; 3 when the run failed (no request succeeded, or more than
--max-failure-rate failed; results are written); 130 when interrupted after writing results.`,
		Example: `  llmbench run --trace traces/examples/chat-small.jsonl
  llmbench run --trace prod.jsonl --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --slo ttft=500ms,tpot=50ms
  llmbench run --trace prod.jsonl --gpu h200 --weight-dtype fp8 --spec-k 4 --spec-alpha 0.8
  llmbench run --trace prod.jsonl --endpoint http://10.0.0.5:8000 --shard 0/4 --start-at 2026-12-01T15:00:00Z -o shard-0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(usecase.Run(cmd.Context(), app.env(), o.options()))
		},
	}
	fs := cmd.Flags()
	o.traceFlags = addTraceFlags(fs)
	o.target = addTargetFlags(fs)
	o.load = addLoadFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.engine = addEngineFlags(fs)
	o.shard = addShardFlags(fs)
	o.fail = addFailureFlags(fs)
	o.quality = addQualityFlags(fs, false)
	addPrefixRunFlags(fs, &o.prefix)
	addEnergyFlags(fs, &o.energy)
	addSaturationFlags(fs, &o.capacity)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

// options copies run's flags into the use case's options.
func (o *runOptions) options() *usecase.RunOptions {
	return &usecase.RunOptions{
		Trace: o.traceFlags.opts(), Target: o.target.opts(), Load: o.load.opts(), Metrics: o.metrics.opts(),
		Output: o.output.opts(), Engine: o.engine.opts(), Shard: o.shard.opts(), Fail: o.fail.opts(),
		Quality: o.quality.opts(), Prefix: o.prefix, Energy: o.energy, Capacity: o.capacity,
	}
}

package main

import (
	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
)

func init() { register("calibrate", newCalibrateCmd) }

type calibrateOptions struct {
	out         string
	modelConfig string
	validate    []string
	maxEvals    int
	engine      *engineFlags
}

func newCalibrateCmd(app *App) *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate RESULTS... -o profile.json [--validate RESULTS...] [engine flags]",
		Short: "Fit the reference engine's efficiencies and step overhead to measured runs of a server",
		Long: `Fit the reference engine to runs of a real server: from llmbench results directories
(their requests.msgpack) or vLLM "vllm bench serve --save-result --save-detailed" result files
(per-request start_times, ttfts, itls, latencies, input_lens, output_lens), find the memory-bandwidth efficiency (weights and KV cache, as one
scale), the compute efficiency and the per-step overhead of the GPU named by --gpu that make
"simulate" reproduce them, and write them as a profile file for --profiles.

Describe the deployment with the engine flags (--model, --gpu, --tp, --weight-dtype,
--kv-dtype, --max-num-seqs, --max-num-batched-tokens, --enable-prefix-caching, --profiles)
and, for a model without a profile, --model-config with its Hugging Face config.json: they
are taken as given, not fitted, except the scheduling limits not given. Without --max-num-seqs
the cap on running sequences is learned: from server-metrics.json (runs made with
--scrape-metrics) when the server reported requests waiting while it ran its peak, else from
the TTFT queueing shape (a request sent with k or more ahead of it in flight waits until one
ends), else by replaying caps from the runs' peak of concurrent streams up to 8 more. Without
--max-num-batched-tokens the token budget per step (chunked prefill) is fitted with the compute
efficiency from TTFT against prompt length of requests that had the server to themselves.
Decode is fitted apart: the decode steps seen between streamed chunks while no request waited
for its first token (their time against the batch's KV cache separates bandwidth from
overhead). Learned limits go into the profile: --profiles applies them unless the flags are
given. It prints, for each run fitted and each run given with --validate (held out), the
measured P50/P90/P99 of TTFT, TPOT and E2E and the simulation's error, then the fit's
residuals on its own runs (TTFT and TPOT P50/P99, throughput), also written into the profile,
and a warning when they are beyond 10% (25% for P99): the engine's model cannot fit that
server, and predictions carry at least that error.

The time before the server saw a request (client, network, the server's parsing) is fitted as
one front-end delay and shown; it is in the replayed TTFT and E2E but not in the profile. A
client cannot see time a request queued in the server before admission (it counts as
prefill) or the server's prefix-cache hits; runs
with one chunk per token (no speculative decoding) at a few loads fit best.`,
		Example: `  llmbench calibrate results/low -o my-h100.json --validate results/high --gpu h100 --enable-prefix-caching=false
  llmbench calibrate vllm-4qps.json -o my-h100.json --validate vllm-8qps.json --gpu h100
  llmbench simulate --trace prod.jsonl --gpu h100 --profiles my-h100.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return usecase.Calibrate(app.env(), o.options(args)) },
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.out, "output", "o", "", "write the fitted GPU profile to FILE (JSON, for --profiles)")
	fs.StringSliceVar(&o.validate, "validate", nil, "held-out results directories: report the fit's error on them too")
	fs.IntVar(&o.maxEvals, "max-evals", 0, "most simulations the search may run (0: 600)")
	fs.StringVar(&o.modelConfig, "model-config", "", "the model's Hugging Face config.json: its architecture (parameter counts computed from the shapes) replaces the --model profile of that name")
	o.engine = addEngineFlags(fs)
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// options copies calibrate's flags and arguments into the use case's options.
func (o *calibrateOptions) options(fit []string) *usecase.CalibrateOptions {
	return &usecase.CalibrateOptions{Fit: fit, Validate: o.validate, Out: o.out, ModelConfig: o.modelConfig,
		MaxEvals: o.maxEvals, Engine: o.engine.opts()}
}

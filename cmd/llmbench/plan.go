package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("plan", newPlanCmd) }

type planOptions struct {
	*traceFlags
	engine    *engineFlags
	slo       string
	classSLO  []string
	target    float64
	gpus      []string
	dtypes    []string
	tps       []int
	replicas  string
	router    string
	prices    []string
	currency  string
	rateScale float64
	workers   int
	format    string
	html      string
	echartsJS string
	objective *string // issue 39: flags_energy.go
}

// planExcluded are the engine flags plan does not take: it searches GPU, TP and weight dtype
// itself, prices GPUs per replica (a disaggregated replica would need twice as many), and
// simulates (no HTTP stream to shape or fault).
var planExcluded = []string{"gpu", "tp", "weight-dtype", "disaggregated", "kv-transfer-gbps", "wire", "reasoning", "faults", "served-model-name"}

func newPlanCmd(app *App) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --trace FILE --slo SPEC --price-gpu-hour GPU=PRICE… [flags]",
		Short: "Find the cheapest deployment (GPU, dtype, TP, replicas) whose simulated goodput meets a target",
		Long: `Search deployments of the reference engine for the trace: every GPU type (--gpus), weight dtype
(--dtypes) and tensor-parallel degree (--tp), and for each the fewest replicas (--replicas)
behind --router whose goodput (the share of all requests that finish and meet every SLO) reaches
--target. Each candidate is simulated on the virtual clock, as "simulate --replicas" would. The
cheapest by price per hour (GPUs × --price-gpu-hour) is chosen; its cost per million tokens is
that price over the simulated makespan per million input + output tokens.

The search is pruned: shapes whose weights do not fit, or whose KV cache cannot hold the
longest request, are ruled out without simulating; replicas are stepped up one at a time from
the fewest allowed (to 8, then doubled and bisected) until a deployment meets the target,
assuming more replicas never lower goodput; a simulation stops as soon as
enough requests have missed the SLO that the target is out of reach (its goodput is then
shown as an upper bound, "≤"). The other engine flags (--model, --kv-dtype, --max-num-seqs,
--profiles, ...) describe every candidate alike. Exit 0 with a choice, 1 when no deployment
searched meets the target, 2 on bad input.`,
		Example: `  llmbench plan --trace prod.jsonl --slo ttft=500ms,tpot=50ms --target 0.9 \
      --gpus h100,h200,a100 --dtypes bf16,fp8 --tp 1,2,4 --replicas 1..8 \
      --price-gpu-hour h100=2.49,h200=3.49,a100=1.79 -o plan.html
  llmbench plan --trace prod.jsonl --model llama-3.1-70b --slo ttft=1s,tpot=60ms --gpus h100 --tp 2,4,8 \
      --price-gpu-hour h100=2.49 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return exitStatus(usecase.Plan(app.env(), o.options())) },
	}
	fs := cmd.Flags()
	o.traceFlags = addTraceFlags(fs)
	// The engine flags, less the ones the search sets or that do not apply.
	efs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	o.engine = addEngineFlags(efs)
	efs.VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(planExcluded, f.Name) {
			fs.AddFlag(f)
		}
	})
	fs.StringVar(&o.slo, "slo", "", "SLOs a request must meet, e.g. ttft=500ms,tpot=50ms,max_gap=1s,e2e=20s,itl_p99=100ms (bare numbers are ms)")
	fs.StringArrayVar(&o.classSLO, "class-slo", nil, "per-class SLOs CLASS:ttft=…,tpot=… (repeatable; overrides --slo for that class)")
	fs.Float64Var(&o.target, "target", 0.9, "goodput fraction a deployment must reach (requests meeting every SLO / all requests)")
	fs.StringSliceVar(&o.gpus, "gpus", []string{"h100"}, "GPU profiles to search ("+strings.Join(usecase.GPUNames(), ", ")+"; a100, h100 are aliases)")
	fs.StringSliceVar(&o.dtypes, "dtypes", []string{"bf16"}, "weight dtypes to search (bf16, fp8, int8, int4); the KV cache dtype is --kv-dtype for all")
	fs.IntSliceVar(&o.tps, "tp", []int{1}, "tensor-parallel degrees to search (GPUs per replica)")
	fs.StringVar(&o.replicas, "replicas", "auto", "replicas per deployment: MIN..MAX, N (exactly), or auto (1 to 64: one at a time to 8, then doubling)")
	fs.StringVar(&o.router, "router", usecase.RouterRoundRobin, "how replicas share requests: "+strings.Join(usecase.Routers, ", "))
	fs.StringArrayVar(&o.prices, "price-gpu-hour", nil, "price of one GPU-hour per GPU type, GPU=PRICE (comma-separated or repeated), e.g. h100=2.49,h200=3.49")
	fs.StringVar(&o.currency, "currency", "USD", "currency label of the prices")
	fs.Float64Var(&o.rateScale, "rate-scale", 1, "multiply the trace's arrival rate by X (plan for more traffic than was recorded)")
	fs.IntVar(&o.workers, "workers", 0, "simulations run at once (0: one per CPU)")
	fs.StringVar(&o.format, "format", "text", "output: text, json")
	fs.StringVarP(&o.html, "out", "o", "", "also write the HTML report to FILE (e.g. plan.html)")
	o.objective = addPlanObjectiveFlag(fs)
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into the HTML report (default $LLMBENCH_ECHARTS_JS; otherwise it loads it by URL)")
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("price-gpu-hour")
	return cmd
}

// options copies plan's flags into the use case's options.
func (o *planOptions) options() *usecase.PlanOptions {
	return &usecase.PlanOptions{
		Trace: o.traceFlags.opts(), Engine: o.engine.opts(), SLO: o.slo, ClassSLO: o.classSLO, Target: o.target,
		GPUs: o.gpus, Dtypes: o.dtypes, TPs: o.tps, Replicas: o.replicas, Router: o.router, Prices: o.prices,
		Currency: o.currency, RateScale: o.rateScale, Workers: o.workers, Format: o.format, HTML: o.html,
		EChartsJS: o.echartsJS, Objective: *o.objective,
	}
}

package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("gen", newGenCmd) }

func newGenCmd(app *App) *cobra.Command {
	o := &usecase.GenOptions{}
	cmd := &cobra.Command{
		Use:   "gen [--preset NAME | --spec FILE] [flags] -o OUT.jsonl",
		Short: "Generate a synthetic trace with the shape of production traffic",
		Long: `Generate a trace from a preset (` + strings.Join(usecase.PresetNames(), ", ") + `) or a spec
file, overriding any part with flags. The result is a pure function of the spec and --seed.
Presets, distributions and spec files are documented in traces/FORMAT.md and the workloads
package. Flags that shape classes (--input, --output, --correlation, --prefix-*, --session-*)
apply to every class of the spec.

Quality probes (` + strings.Join(usecase.ProbePresets, ", ") + `) generate graded chat
requests with expect checks, one per arrival of --rate/--arrival over --duration (docs/quality.md,
"Quality probes and the engine's error model"); --probe-lengths sets the long-context
document lengths and --temperatures/--samples make a temperature sweep.

Distributions: fixed:N, uniform:A-B, normal:mean=M,sd=S, lognormal:mean=M,sd=S,
zipf:s=S,min=A,max=B, empirical:TRACE (lengths resampled from a trace); each may add
min=,max= to clamp.`,
		Example: `  llmbench gen --preset mixed --rate 5 --duration 60s --seed 1 -o trace.jsonl
  llmbench gen --preset chat --arrival gamma --cv 3 --rate 10 --duration 5m -o bursty.jsonl
  llmbench gen --preset chat --input lognormal:mean=2000,sd=800,max=8000 --output empirical:prod.jsonl -o t.jsonl
  llmbench gen --preset rag --prefix-groups 4 --prefix-tokens 2048 --prefix-zipf 1.2 -o rag.jsonl
  llmbench gen --spec traces/examples/chat-small.spec.json -o traces/examples/chat-small.jsonl
  llmbench gen --preset agentic --print-spec > my.spec.json
  llmbench gen --preset multimodal --rate 2 --duration 60s -o images.jsonl

  llmbench gen --preset tool-calling --rate 5 --duration 60s -o tools.jsonl
  llmbench gen --preset long-context-probe --probe-lengths 1k,8k,32k --max-requests 300 -o lc.jsonl
  llmbench gen --preset json-output --temperatures 0,0.5,1,1.5 --samples 5 -o sweep.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Changed = cmd.Flags().Changed
			return usecase.Gen(app.env(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Preset, "preset", "chat", "preset: "+strings.Join(usecase.PresetNames(), ", ")+"; quality probes: "+strings.Join(usecase.ProbePresets, ", "))
	fs.StringVar(&o.SpecFile, "spec", "", "spec file (JSON, as --print-spec writes); replaces --preset")
	fs.StringVarP(&o.Out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	fs.BoolVar(&o.PrintSpec, "print-spec", false, "print the effective spec as JSON instead of generating")
	fs.Int64Var(&o.Spec.Seed, "seed", 1, "random seed")
	fs.Float64Var(&o.Spec.Rate, "rate", 1, "mean arrival rate, requests/s (sessions/s for session classes; ramp: start rate)")
	fs.DurationVar(&o.Spec.Duration, "duration", 60*time.Second, "trace length; arrivals fall in [0, duration)")
	fs.IntVar(&o.Spec.MaxRequests, "max-requests", 0, "keep at most this many requests (0 = all)")
	fs.IntVar(&o.Spec.BlockTokens, "block-tokens", usecase.DefaultBlockTokens, "prompt tokens per hash_ids block")
	fs.StringVar(&o.Spec.Arrival, "arrival", "poisson", "arrival process: "+strings.Join(usecase.ArrivalProcesses, ", "))
	fs.Float64Var(&o.Spec.CV, "cv", 0, "burstiness: coefficient of variation of inter-arrival gaps (gamma; also onoff/ramp/diurnal)")
	fs.Float64Var(&o.Spec.RateEnd, "rate-end", 0, "ramp: rate at the end of the duration")
	fs.DurationVar(&o.Spec.On, "on", 0, "onoff: length of each burst")
	fs.DurationVar(&o.Spec.Off, "off", 0, "onoff: length of each pause")
	fs.DurationVar(&o.Spec.Period, "period", 0, "diurnal: period of the day curve (default: the duration)")
	fs.Float64Var(&o.Spec.Amplitude, "amplitude", 0.5, "diurnal: relative swing of the rate, 0..1")
	fs.StringVar(&o.Spec.Input, "input", "", "input length distribution for every class (with a prefix: tokens after it)")
	fs.StringVar(&o.Spec.Output, "output", "", "output length distribution for every class")
	fs.Float64Var(&o.Spec.Correlation, "correlation", 0, "input/output length correlation, -1..1 (Gaussian copula)")
	fs.StringVar(&o.Spec.Weights, "weights", "", "class weights, e.g. chat=2,rag=1 (classes not listed are dropped)")
	fs.StringVar(&o.Spec.Class, "class", "", "rename the class (single-class specs only)")
	fs.IntVar(&o.Spec.PrefixGroups, "prefix-groups", 0, "give every class this many shared-prefix groups (0 removes prefixes)")
	fs.IntVar(&o.Spec.PrefixTokens, "prefix-tokens", 1024, "shared prefix length in tokens (rounded up to whole blocks)")
	fs.Float64Var(&o.Spec.PrefixZipf, "prefix-zipf", 1, "Zipf exponent of group popularity (0 = uniform)")
	fs.Float64Var(&o.Spec.PrefixFraction, "prefix-fraction", 1, "share of requests that use a shared prefix")
	fs.StringVar(&o.Spec.Turns, "session-turns", "", "make every class multi-turn: distribution of turns per session")
	fs.StringVar(&o.Spec.NewInput, "session-input", "lognormal:mean=300,sd=200,max=4000", "tokens each later turn adds")
	fs.StringVar(&o.Spec.Think, "think", "lognormal:mean=3000,sd=2000,max=30000", "think time between turns, milliseconds (distribution)")
	fs.Float64Var(&o.Spec.TPOTMS, "tpot-ms", 20, "assumed ms per output token when placing later turns")
	fs.IntVar(&o.Spec.MaxContext, "max-context", 0, "end a session before its prompt exceeds this many tokens (0 = no limit)")
	addProbeFlags(fs, &o.Probe) // genprobe.go
	addGenModelFlags(fs, o)     // per-request models (issue 38), flags_lora.go
	addPrefixGenFlags(fs, o)    // flags_prefix.go
	addGenCancelFlags(fs, o)    // flags_cancel.go
	return cmd
}

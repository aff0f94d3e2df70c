package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

func init() { register("gen", newGenCmd) }

// genOptions are the gen command's flags; a flag overrides the preset or spec file only when
// it is given. spec holds the overrides (workloads.BuildSpec applies them).
type genOptions struct {
	preset, specFile, out string
	printSpec             bool

	spec               workloads.SpecOptions
	changed            func(name string) bool
	loadEmpiricalTrace func(path string) ([]traces.Request, error)
	probe              probeFlags     // quality probe presets (genprobe.go)
	prefixHit          prefixGenFlags // --prefix-hit-rate (flags_prefix.go)
}

func newGenCmd(app *App) *cobra.Command {
	o := &genOptions{}
	cmd := &cobra.Command{
		Use:   "gen [--preset NAME | --spec FILE] [flags] -o OUT.jsonl",
		Short: "Generate a synthetic trace with the shape of production traffic",
		Long: `Generate a trace from a preset (` + strings.Join(workloads.PresetNames(), ", ") + `) or a spec
file, overriding any part with flags. The result is a pure function of the spec and --seed.
Presets, distributions and spec files are documented in traces/FORMAT.md and the workloads
package. Flags that shape classes (--input, --output, --correlation, --prefix-*, --session-*)
apply to every class of the spec.

Quality probes (` + strings.Join(workloads.ProbePresets, ", ") + `) generate graded chat
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
			o.changed = cmd.Flags().Changed
			o.loadEmpiricalTrace = func(p string) ([]traces.Request, error) { return traces.ReadFile(p, traces.ReadOptions{}) }
			return runGen(app, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.preset, "preset", "chat", "preset: "+strings.Join(workloads.PresetNames(), ", ")+"; quality probes: "+strings.Join(workloads.ProbePresets, ", "))
	fs.StringVar(&o.specFile, "spec", "", "spec file (JSON, as --print-spec writes); replaces --preset")
	fs.StringVarP(&o.out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	fs.BoolVar(&o.printSpec, "print-spec", false, "print the effective spec as JSON instead of generating")
	fs.Int64Var(&o.spec.Seed, "seed", 1, "random seed")
	fs.Float64Var(&o.spec.Rate, "rate", 1, "mean arrival rate, requests/s (sessions/s for session classes; ramp: start rate)")
	fs.DurationVar(&o.spec.Duration, "duration", 60*time.Second, "trace length; arrivals fall in [0, duration)")
	fs.IntVar(&o.spec.MaxRequests, "max-requests", 0, "keep at most this many requests (0 = all)")
	fs.IntVar(&o.spec.BlockTokens, "block-tokens", traces.DefaultBlockTokens, "prompt tokens per hash_ids block")
	fs.StringVar(&o.spec.Arrival, "arrival", "poisson", "arrival process: "+strings.Join(workloads.ArrivalProcesses, ", "))
	fs.Float64Var(&o.spec.CV, "cv", 0, "burstiness: coefficient of variation of inter-arrival gaps (gamma; also onoff/ramp/diurnal)")
	fs.Float64Var(&o.spec.RateEnd, "rate-end", 0, "ramp: rate at the end of the duration")
	fs.DurationVar(&o.spec.On, "on", 0, "onoff: length of each burst")
	fs.DurationVar(&o.spec.Off, "off", 0, "onoff: length of each pause")
	fs.DurationVar(&o.spec.Period, "period", 0, "diurnal: period of the day curve (default: the duration)")
	fs.Float64Var(&o.spec.Amplitude, "amplitude", 0.5, "diurnal: relative swing of the rate, 0..1")
	fs.StringVar(&o.spec.Input, "input", "", "input length distribution for every class (with a prefix: tokens after it)")
	fs.StringVar(&o.spec.Output, "output", "", "output length distribution for every class")
	fs.Float64Var(&o.spec.Correlation, "correlation", 0, "input/output length correlation, -1..1 (Gaussian copula)")
	fs.StringVar(&o.spec.Weights, "weights", "", "class weights, e.g. chat=2,rag=1 (classes not listed are dropped)")
	fs.StringVar(&o.spec.Class, "class", "", "rename the class (single-class specs only)")
	fs.IntVar(&o.spec.PrefixGroups, "prefix-groups", 0, "give every class this many shared-prefix groups (0 removes prefixes)")
	fs.IntVar(&o.spec.PrefixTokens, "prefix-tokens", 1024, "shared prefix length in tokens (rounded up to whole blocks)")
	fs.Float64Var(&o.spec.PrefixZipf, "prefix-zipf", 1, "Zipf exponent of group popularity (0 = uniform)")
	fs.Float64Var(&o.spec.PrefixFraction, "prefix-fraction", 1, "share of requests that use a shared prefix")
	fs.StringVar(&o.spec.Turns, "session-turns", "", "make every class multi-turn: distribution of turns per session")
	fs.StringVar(&o.spec.NewInput, "session-input", "lognormal:mean=300,sd=200,max=4000", "tokens each later turn adds")
	fs.StringVar(&o.spec.Think, "think", "lognormal:mean=3000,sd=2000,max=30000", "think time between turns, milliseconds (distribution)")
	fs.Float64Var(&o.spec.TPOTMS, "tpot-ms", 20, "assumed ms per output token when placing later turns")
	fs.IntVar(&o.spec.MaxContext, "max-context", 0, "end a session before its prompt exceeds this many tokens (0 = no limit)")
	addProbeFlags(fs, &o.probe)
	addGenModelFlags(fs, &o.spec) // per-request models (issue 38)
	addPrefixGenFlags(fs, &o.prefixHit)
	addGenCancelFlags(cmd, &o.spec, &o.preset) // flags_cancel.go
	return cmd
}

func runGen(app *App, o *genOptions) error {
	if err := o.prefixHit.check(o.changed, o.preset); err != nil {
		return err
	}
	if workloads.IsProbePreset(o.preset) {
		if o.changed("models") {
			return fmt.Errorf("--models mixes models into generated traffic; the quality probe preset %s sends each probe to the run's --model", o.preset)
		}
		return runProbeGen(app, o)
	}
	if err := o.probe.unused(o.changed); err != nil {
		return err
	}
	spec, err := genSpec(o)
	if err != nil {
		return err
	}
	if o.printSpec {
		if o.changed("out") {
			return fmt.Errorf("--print-spec prints the spec to stdout and writes no trace; --out does nothing with it")
		}
		return workloads.WriteSpec(app.Stdout, spec)
	}
	if err := spec.ResolveEmpirical(o.loadEmpiricalTrace); err != nil {
		return err
	}
	reqs, err := workloads.Generate(spec)
	if err != nil {
		return err
	}
	if err := writeTraceOut(app.Stdout, o.out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(app.Stderr, "gen: %s to %s\n%s", traceLine(reqs), outName(o.out), o.prefixHit.note())
	return nil
}

// genSpec builds the spec from the preset or spec file and the flags that were given
// (workloads.BuildSpec).
func genSpec(o *genOptions) (workloads.Spec, error) {
	so := o.spec
	so.Preset, so.SpecFile, so.Given, so.ReadSpec = o.preset, o.specFile, o.changed, readSpecFile
	spec, err := workloads.BuildSpec(so)
	if err != nil {
		return spec, err
	}
	return spec, o.prefixHit.apply(o.changed, &spec)
}

// readSpecFile reads a spec file (workloads.ParseSpec).
func readSpecFile(path string) (workloads.Spec, error) {
	f, err := openInput(path)
	if err != nil {
		return workloads.Spec{}, err
	}
	defer f.Close()
	return workloads.ParseSpec(f, path)
}

// writeTrace writes reqs to path (JSONL, or msgpack by extension), or to stdout for "-".
func writeTraceOut(stdout io.Writer, path string, reqs []traces.Request) error {
	if path == "" || path == "-" {
		return traces.WriteJSONL(stdout, reqs)
	}
	return traces.WriteFile(path, reqs)
}

func outName(path string) string {
	if path == "" || path == "-" {
		return "stdout"
	}
	return path
}

// traceLine describes a trace in one line.
func traceLine(reqs []traces.Request) string {
	st := traces.ComputeStats(reqs)
	return fmt.Sprintf("%d requests over %.1f s (%.2f req/s, burstiness %.2f, mean %.0f in / %.0f out tokens)",
		st.Count, st.DurationS, st.RatePerS, st.Burstiness, st.InputTokens.Mean, st.OutputTokens.Mean)
}

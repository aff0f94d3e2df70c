package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

func init() { register("gen", newGenCmd) }

// genOptions are the gen command's flags; a flag overrides the preset or spec file only when
// it is given.
type genOptions struct {
	preset, specFile, out string
	printSpec             bool

	seed        int64
	rate        float64
	duration    time.Duration
	maxRequests int
	blockTokens int

	arrival            string
	cv, rateEnd, ampl  float64
	on, off, period    time.Duration
	input, output      string
	correlation        float64
	weights, class     string
	prefixGroups       int
	prefixTokens       int
	prefixZipf         float64
	prefixFraction     float64
	turns, newInput    string
	think              string
	tpotMS             float64
	maxContext         int
	changed            func(name string) bool
	loadEmpiricalTrace func(path string) ([]traces.Request, error)
	probe              probeFlags // quality probe presets (genprobe.go)
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
	fs.Int64Var(&o.seed, "seed", 1, "random seed")
	fs.Float64Var(&o.rate, "rate", 1, "mean arrival rate, requests/s (sessions/s for session classes; ramp: start rate)")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "trace length; arrivals fall in [0, duration)")
	fs.IntVar(&o.maxRequests, "max-requests", 0, "keep at most this many requests (0 = all)")
	fs.IntVar(&o.blockTokens, "block-tokens", traces.DefaultBlockTokens, "prompt tokens per hash_ids block")
	fs.StringVar(&o.arrival, "arrival", "poisson", "arrival process: "+strings.Join(workloads.ArrivalProcesses, ", "))
	fs.Float64Var(&o.cv, "cv", 0, "burstiness: coefficient of variation of inter-arrival gaps (gamma; also onoff/ramp/diurnal)")
	fs.Float64Var(&o.rateEnd, "rate-end", 0, "ramp: rate at the end of the duration")
	fs.DurationVar(&o.on, "on", 0, "onoff: length of each burst")
	fs.DurationVar(&o.off, "off", 0, "onoff: length of each pause")
	fs.DurationVar(&o.period, "period", 0, "diurnal: period of the day curve (default: the duration)")
	fs.Float64Var(&o.ampl, "amplitude", 0.5, "diurnal: relative swing of the rate, 0..1")
	fs.StringVar(&o.input, "input", "", "input length distribution for every class (with a prefix: tokens after it)")
	fs.StringVar(&o.output, "output", "", "output length distribution for every class")
	fs.Float64Var(&o.correlation, "correlation", 0, "input/output length correlation, -1..1 (Gaussian copula)")
	fs.StringVar(&o.weights, "weights", "", "class weights, e.g. chat=2,rag=1 (classes not listed are dropped)")
	fs.StringVar(&o.class, "class", "", "rename the class (single-class specs only)")
	fs.IntVar(&o.prefixGroups, "prefix-groups", 0, "give every class this many shared-prefix groups (0 removes prefixes)")
	fs.IntVar(&o.prefixTokens, "prefix-tokens", 1024, "shared prefix length in tokens (rounded up to whole blocks)")
	fs.Float64Var(&o.prefixZipf, "prefix-zipf", 1, "Zipf exponent of group popularity (0 = uniform)")
	fs.Float64Var(&o.prefixFraction, "prefix-fraction", 1, "share of requests that use a shared prefix")
	fs.StringVar(&o.turns, "session-turns", "", "make every class multi-turn: distribution of turns per session")
	fs.StringVar(&o.newInput, "session-input", "lognormal:mean=300,sd=200,max=4000", "tokens each later turn adds")
	fs.StringVar(&o.think, "think", "lognormal:mean=3000,sd=2000,max=30000", "think time between turns, milliseconds (distribution)")
	fs.Float64Var(&o.tpotMS, "tpot-ms", 20, "assumed ms per output token when placing later turns")
	fs.IntVar(&o.maxContext, "max-context", 0, "end a session before its prompt exceeds this many tokens (0 = no limit)")
	addProbeFlags(fs, &o.probe)
	return cmd
}

func runGen(app *App, o *genOptions) error {
	if workloads.IsProbePreset(o.preset) {
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
	fmt.Fprintf(app.Stderr, "gen: %s to %s\n", traceLine(reqs), outName(o.out))
	return nil
}

// genSpec builds the spec from the preset or spec file and the flags that were given.
func genSpec(o *genOptions) (workloads.Spec, error) {
	var spec workloads.Spec
	var err error
	if o.specFile != "" {
		if o.changed("preset") {
			return spec, fmt.Errorf("give --preset or --spec, not both")
		}
		spec, err = readSpecFile(o.specFile)
	} else {
		spec, err = workloads.Preset(o.preset)
	}
	if err != nil {
		return spec, err
	}
	set := o.changed
	if set("seed") {
		spec.Seed = o.seed
	}
	if set("rate") {
		spec.Arrival.Rate = o.rate
	}
	if set("duration") {
		spec.SetDuration(o.duration)
	}
	if set("max-requests") {
		spec.MaxRequests = o.maxRequests
	}
	if set("block-tokens") {
		spec.BlockTokens = o.blockTokens
	}
	a := &spec.Arrival
	if set("arrival") {
		a.Process = o.arrival
	}
	if set("cv") {
		a.CV = o.cv
	}
	if set("rate-end") {
		a.RateEnd = o.rateEnd
	}
	if set("on") {
		a.OnS = o.on.Seconds()
	}
	if set("off") {
		a.OffS = o.off.Seconds()
	}
	if set("period") {
		a.PeriodS = o.period.Seconds()
	}
	if set("amplitude") {
		a.Amplitude = o.ampl
	}
	for _, f := range []struct {
		flag  string
		procs []string
	}{{"cv", []string{workloads.Gamma, workloads.OnOff, workloads.Ramp, workloads.Diurnal}},
		{"rate-end", []string{workloads.Ramp}}, {"on", []string{workloads.OnOff}}, {"off", []string{workloads.OnOff}},
		{"period", []string{workloads.Diurnal}}, {"amplitude", []string{workloads.Diurnal}}} {
		if set(f.flag) && !slices.Contains(f.procs, a.Process) {
			return spec, fmt.Errorf("--%s applies to --arrival %s, not %s", f.flag, strings.Join(f.procs, "|"), a.Process)
		}
	}
	if set("weights") {
		if spec.Classes, err = reweight(spec.Classes, o.weights); err != nil {
			return spec, err
		}
	}
	if set("class") {
		if len(spec.Classes) != 1 {
			return spec, fmt.Errorf("--class renames a single class; this spec has %d (use --weights to pick)", len(spec.Classes))
		}
		spec.Classes[0].Name = o.class
	}
	var in, out, turns, newIn, think workloads.Dist
	for _, p := range []struct {
		flag, val string
		dst       *workloads.Dist
	}{{"input", o.input, &in}, {"output", o.output, &out}, {"session-turns", o.turns, &turns},
		{"session-input", o.newInput, &newIn}, {"think", o.think, &think}} {
		if p.val == "" || (!set(p.flag) && p.flag != "session-input" && p.flag != "think") {
			continue
		}
		d, err := workloads.ParseDist(p.val)
		if err != nil {
			return spec, fmt.Errorf("--%s: %w", p.flag, err)
		}
		*p.dst = d
	}
	for i := range spec.Classes {
		c := &spec.Classes[i]
		if set("input") {
			c.Input = in
		}
		if set("output") {
			c.Output = out
		}
		if set("correlation") {
			c.Correlation = o.correlation
		}
		if set("prefix-groups") {
			if o.prefixGroups == 0 {
				c.Prefix = nil
			} else {
				c.Prefix = &workloads.PrefixSpec{Groups: o.prefixGroups, Tokens: o.prefixTokens, Zipf: o.prefixZipf, Fraction: o.prefixFraction}
			}
		} else if c.Prefix != nil {
			if set("prefix-tokens") {
				c.Prefix.Tokens = o.prefixTokens
			}
			if set("prefix-zipf") {
				c.Prefix.Zipf = o.prefixZipf
			}
			if set("prefix-fraction") {
				c.Prefix.Fraction = o.prefixFraction
			}
		}
		if set("session-turns") {
			c.Session = &workloads.SessionSpec{Turns: turns, NewInput: newIn, ThinkMS: think, TPOTMS: o.tpotMS, MaxInput: o.maxContext}
		} else if c.Session != nil {
			if set("session-input") {
				c.Session.NewInput = newIn
			}
			if set("think") {
				c.Session.ThinkMS = think
			}
			if set("tpot-ms") {
				c.Session.TPOTMS = o.tpotMS
			}
			if set("max-context") {
				c.Session.MaxInput = o.maxContext
			}
		}
	}
	var anyPrefix, anySession bool
	for _, c := range spec.Classes {
		anyPrefix = anyPrefix || c.Prefix != nil
		anySession = anySession || c.Session != nil
	}
	for _, f := range []string{"prefix-tokens", "prefix-zipf", "prefix-fraction"} {
		if set(f) && !anyPrefix {
			return spec, fmt.Errorf("--%s needs shared prefixes: add --prefix-groups N", f)
		}
	}
	for _, f := range []string{"session-input", "think", "tpot-ms", "max-context"} {
		if set(f) && !anySession {
			return spec, fmt.Errorf("--%s needs sessions: add --session-turns DIST", f)
		}
	}
	return spec, spec.Validate()
}

// reweight keeps the classes named in "a=2,b=1" with those weights.
func reweight(classes []workloads.ClassSpec, s string) ([]workloads.ClassSpec, error) {
	byName := map[string]workloads.ClassSpec{}
	var names []string
	for _, c := range classes {
		byName[c.Name] = c
		names = append(names, c.Name)
	}
	var out []workloads.ClassSpec
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		c, known := byName[name]
		if !ok || !known {
			return nil, fmt.Errorf("--weights: %q is not CLASS=WEIGHT for a class of this spec (%s)", part, strings.Join(names, ", "))
		}
		weight, err := strconv.ParseFloat(w, 64)
		if err != nil || weight < 0 {
			return nil, fmt.Errorf("--weights: weight %q of %s is not a number >= 0", w, name)
		}
		c.Weight = weight
		out = append(out, c)
	}
	return out, nil
}

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

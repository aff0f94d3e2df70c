package usecase

import (
	"fmt"
	"io"
	"os"

	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// GenOptions are `llmbench gen`'s options; a flag overrides the preset or spec file only when
// it is given (Changed). Spec holds the overrides (workloads.BuildSpec applies them).
type GenOptions struct {
	Preset, SpecFile, Out string
	PrintSpec             bool

	Spec workloads.SpecOptions
	// Probe are the quality probe presets' flags (genprobe.go).
	Probe ProbeOptions
	// PrefixHitRate is --prefix-hit-rate (issue 34): every class reshaped to this designed
	// prefix-cache hit rate when given.
	PrefixHitRate float64
	Changed       Changed
}

// The names gen's flags offer (workloads).
var (
	ProbePresets     = workloads.ProbePresets
	ArrivalProcesses = workloads.ArrivalProcesses
)

// DefaultBlockTokens is the prompt tokens per hash_ids block of gen and trace stats.
const DefaultBlockTokens = traces.DefaultBlockTokens

// PresetNames are gen's traffic presets.
func PresetNames() []string { return workloads.PresetNames() }

// Gen writes a generated trace (or, with PrintSpec, the effective spec) and a line about it
// on stderr.
func Gen(env *Env, o *GenOptions) error {
	if o.Changed.Has("cancel") && workloads.IsProbePreset(o.Preset) {
		return fmt.Errorf("--cancel does not apply to the quality probe preset %q (a cancelled probe has no answer to grade); generate the traffic with a traffic preset", o.Preset)
	}
	if o.Changed.Has("prefix-hit-rate") && workloads.IsProbePreset(o.Preset) {
		return fmt.Errorf("--prefix-hit-rate shapes a workload spec; the probe preset %s has none", o.Preset)
	}
	if workloads.IsProbePreset(o.Preset) {
		if o.Changed.Has("models") {
			return fmt.Errorf("--models mixes models into generated traffic; the quality probe preset %s sends each probe to the run's --model", o.Preset)
		}
		return genProbes(env, o)
	}
	if err := o.Probe.unused(o.Changed); err != nil {
		return err
	}
	spec, designed, err := o.spec()
	if err != nil {
		return err
	}
	if o.PrintSpec {
		if o.Changed.Has("out") {
			return fmt.Errorf("--print-spec prints the spec to stdout and writes no trace; --out does nothing with it")
		}
		return workloads.WriteSpec(env.Stdout, spec)
	}
	if err := spec.ResolveEmpirical(readEmpiricalTrace); err != nil {
		return err
	}
	reqs, err := workloads.Generate(spec)
	if err != nil {
		return err
	}
	if err := writeTraceOut(env.Stdout, o.Out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "gen: %s to %s\n%s", traceLine(reqs), outName(o.Out), prefixHitNote(designed))
	return nil
}

// readEmpiricalTrace reads the trace an empirical: distribution resamples.
func readEmpiricalTrace(p string) ([]traces.Request, error) {
	return traces.ReadFile(p, traces.ReadOptions{})
}

// spec builds the spec from the preset or spec file and the flags that were given
// (workloads.BuildSpec), reshaped to --prefix-hit-rate when given; designed is the designed
// hit rate it was reshaped to, or -1.
func (o *GenOptions) spec() (spec workloads.Spec, designed float64, err error) {
	so := o.Spec
	so.Preset, so.SpecFile, so.Given, so.ReadSpec = o.Preset, o.SpecFile, o.Changed.Has, readSpecFile
	spec, err = workloads.BuildSpec(so)
	if err != nil || !o.Changed.Has("prefix-hit-rate") {
		return spec, -1, err
	}
	d, err := workloads.SetPrefixHitRate(&spec, o.PrefixHitRate)
	if err != nil {
		return spec, -1, fmt.Errorf("--prefix-hit-rate: %w", err)
	}
	return spec, d, nil
}

// prefixHitNote is gen's line about the designed rate, or "" when designed < 0.
func prefixHitNote(designed float64) string {
	if designed < 0 {
		return ""
	}
	return fmt.Sprintf("gen: designed prefix-cache hit rate %.2f%% once primed (replay with run --prefix-hit-rate %g)\n", 100*designed, designed)
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

// writeTraceOut writes reqs to path (JSONL, or msgpack by extension), or to stdout for "-".
func writeTraceOut(stdout io.Writer, path string, reqs []traces.Request) error {
	if path == "" || path == "-" {
		return traces.WriteJSONL(stdout, reqs)
	}
	return traces.WriteFile(path, reqs)
}

// outName is how gen, import and trace name where they wrote.
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

// openInput opens a file the user named, with an error that says which flag or argument.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	return f, nil
}

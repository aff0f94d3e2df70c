package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
	"github.com/llmbench/llmbench/workloads"
)

// Controlled prefix-cache hit rate (issue 34; docs/prefix-cache.md, "Controlled hit rate"):
// run's priming flags and gen's --prefix-hit-rate.

// addPrefixRunFlags adds run's priming flags into o.
func addPrefixRunFlags(fs *pflag.FlagSet, o *usecase.PrefixOptions) {
	fs.BoolVar(&o.Prime, "prime-prefixes", false, "before the measured window, flush the server's prefix cache (SGLang /flush_cache, vLLM /reset_prefix_cache, llama.cpp slot erase; a warning where none is served) and send one request per prefix group of the trace (not measured)")
	fs.Float64Var(&o.HitRate, "prefix-hit-rate", -1, "the prefix-cache hit rate the trace is meant to run at (e.g. one from gen --preset prefix-hit --prefix-hit-rate R): implies --prime-prefixes and warns when the measured window misses it by more than --prefix-hit-tolerance")
	fs.Float64Var(&o.Tolerance, "prefix-hit-tolerance", usecase.DefaultPrefixHitTolerance, "with --prefix-hit-rate: the miss, as a fraction (0.02 = 2 pp), beyond which the run warns")
	fs.StringSliceVar(&o.Workers, "scrape-workers", nil, "base URLs of the workers behind --endpoint (a router), comma-separated: poll each one's Prometheus /metrics during the run; server_prefix_cache is then theirs, per worker and in all")
	o.Changed = fs.Changed
}

// prefixGenFlags is gen's --prefix-hit-rate.
type prefixGenFlags struct {
	hitRate  float64
	designed float64 // the designed rate the spec was reshaped to (-1: not reshaped)
}

func addPrefixGenFlags(fs *pflag.FlagSet, f *prefixGenFlags) {
	f.designed = -1
	fs.Float64Var(&f.hitRate, "prefix-hit-rate", -1, "reshape every class to a designed prefix-cache hit rate once primed (run --prefix-hit-rate): prompts of n blocks, the first k shared with their group, k/n nearest the rate (e.g. --preset prefix-hit --prefix-hit-rate 0.9)")
}

// check refuses --prefix-hit-rate with a quality probe preset, whose prompts are not shaped by
// a spec.
func (f *prefixGenFlags) check(changed func(string) bool, preset string) error {
	if changed("prefix-hit-rate") && workloads.IsProbePreset(preset) {
		return fmt.Errorf("--prefix-hit-rate shapes a workload spec; the probe preset %s has none", preset)
	}
	return nil
}

// apply reshapes spec when --prefix-hit-rate was given.
func (f *prefixGenFlags) apply(changed func(string) bool, spec *workloads.Spec) error {
	if !changed("prefix-hit-rate") {
		return nil
	}
	d, err := workloads.SetPrefixHitRate(spec, f.hitRate)
	if err != nil {
		return fmt.Errorf("--prefix-hit-rate: %w", err)
	}
	f.designed = d
	return nil
}

// note is gen's line about the designed rate, or "".
func (f *prefixGenFlags) note() string {
	if f.designed < 0 {
		return ""
	}
	return fmt.Sprintf("gen: designed prefix-cache hit rate %.2f%% once primed (replay with run --prefix-hit-rate %g)\n", 100*f.designed, f.designed)
}

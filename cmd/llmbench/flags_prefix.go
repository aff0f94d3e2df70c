package main

import (
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
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

// addPrefixGenFlags adds gen's --prefix-hit-rate (usecase.Gen reshapes the spec with it).
func addPrefixGenFlags(fs *pflag.FlagSet, o *usecase.GenOptions) {
	fs.Float64Var(&o.PrefixHitRate, "prefix-hit-rate", -1, "reshape every class to a designed prefix-cache hit rate once primed (run --prefix-hit-rate): prompts of n blocks, the first k shared with their group, k/n nearest the rate (e.g. --preset prefix-hit --prefix-hit-rate 0.9)")
}

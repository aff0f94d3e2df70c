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
	fs.BoolVar(&o.Cold, "cold", false, "start from a prefix cache that holds none of the run's prompts: flush the server's cache where it offers a way (as --prime-prefixes does) and salt the synthesized prompts with a fresh salt (recorded as run.prompt_salt; --prompt-salt S sends the same prompts again); for a rerun against a server that kept the prompts (docs/prefix-cache.md)")
	fs.Uint64Var(&o.PromptSalt, "prompt-salt", 0, "salt the synthesized prompts with S (same lengths and shared prefixes, other words: a rerun of a --cold run's run.prompt_salt sends its prompts again; 0 = none, or a fresh one with --cold)")
	fs.StringSliceVar(&o.Workers, "scrape-workers", nil, "base URLs of the workers behind --endpoint (a router), comma-separated: poll each one's Prometheus /metrics during the run; server_prefix_cache is then theirs, per worker and in all")
	o.Changed = fs.Changed
}

// addPrefixGenFlags adds gen's --prefix-hit-rate (usecase.Gen reshapes the spec with it).
func addPrefixGenFlags(fs *pflag.FlagSet, o *usecase.GenOptions) {
	fs.Float64Var(&o.PrefixHitRate, "prefix-hit-rate", -1, "reshape every class to a designed prefix-cache hit rate once primed (run --prefix-hit-rate): prompts of n blocks, the first k shared with their group, k/n nearest the rate (e.g. --preset prefix-hit --prefix-hit-rate 0.9)")
}

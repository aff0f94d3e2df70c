package main

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { register("ab", newABCmd) }

type abOptions struct {
	*traceFlags
	aEndpoint, bEndpnt string
	aEngine, bEngine   []string
	aPower, bPower     []string
	aName, bName       string
	repeats            string
	maxRepeats         int
	independence       string
	saltNonce          uint64
	selfCheck          int
	warmupRequests     int
	failOn             string
	format             string
	resamples          int
	keepTemperature    bool
	target             *targetFlags
	load               *loadFlags
	metrics            *metricFlags
	output             *outputFlags
	engine             *engineFlags
	fail               *failureFlags
	quality            *qualityFlags
	fs                 *pflag.FlagSet
}

func newABCmd(app *App) *cobra.Command {
	o := &abOptions{}
	cmd := &cobra.Command{
		Use:   "ab --trace FILE (--a-engine K=V… --b-engine K=V… | --a-endpoint URL --b-endpoint URL)",
		Short: "A fair A/B: identical trace and seeds, same client, interleaved repeats, paired statistics",
		Long: `Run the identical trace (same prompts, same seeds, temperature 0 unless the trace says
otherwise) against two arms from the same client, in interleaved repeats A B B A …, after an
unmeasured warm-up of each arm. Compares B against A per request (paired bootstrap), shows
per-token and per-chunk ITL, stalls, fluidity and tokens per chunk side by side, checks that
greedy outputs are identical, and lists every configuration difference it can see.

Arms are two endpoints, or two configurations of the embedded reference engine given as
overrides of the engine flags (--a-engine spec-k=0 --b-engine spec-k=4,spec-alpha=0.8).
Intervals follow the two-level variance model (docs/comparing.md, "Decisions under noise"): give
--runs 3 or more, or --runs auto with --fail-on, for decisions that hold up on a rerun.
(--runs was --repeats, still accepted with a warning; --repeat, which replays the trace N times
inside one run, does not apply to ab.)

Repeats are independent runs (docs/ab-repeats.md): by default each repeat's synthesized
prompts carry a seeded salt of their own (same lengths, same shared prefixes, identical on both
arms of a repeat), so a server's prefix cache cannot serve repeat 2 from repeat 1.
--independent-repeats flush drops each server's prefix cache before every run instead (SGLang
/flush_cache, vLLM /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1, llama.cpp slot erase with
--slot-save-path), salt+flush does both, off sends identical prompts every repeat.

With --format json or markdown, stdout carries only that format; messages go to stderr.

Requests with expect checks (traces/FORMAT.md) are graded on both arms and compared per
request (paired bootstrap of the pass/fail differences; --fail-on 'quality<-1pp' gates on it);
--judge-endpoint adds a pairwise LLM judge after the measured runs (docs/quality.md).

Each arm's energy (J per request, output tokens per joule, with an interval across its runs)
comes from the engine's modelled GPU power for reference-engine arms, and from DCGM exporters
given with --a-power-metrics/--b-power-metrics for endpoint arms (docs/energy.md).

Exit status: 0; 1 when --fail-on finds a regression of B against A (with --self-check: fewer
than 9 in 10 experiments clean); 2 on bad input; 3 when a run failed (no request succeeded,
or more than --max-failure-rate failed); 130 when interrupted after writing results.`,
		Example: `  llmbench ab --trace traces/examples/chat-small.jsonl --b-engine spec-k=4,spec-alpha=0.8 --time-scale 4
  llmbench ab --trace prod.jsonl --a-endpoint http://10.0.0.5:8000 --b-endpoint http://10.0.0.6:8000 --runs 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(usecase.AB(cmd.Context(), app.env(), o.options()))
		},
	}
	o.addFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

// addFlags defines ab's flags on fs.
func (o *abOptions) addFlags(fs *pflag.FlagSet) {
	o.fs = fs
	o.traceFlags = addTraceFlags(fs)
	fs.StringVar(&o.aEndpoint, "a-endpoint", "", "arm A endpoint (base)")
	fs.StringVar(&o.bEndpnt, "b-endpoint", "", "arm B endpoint (candidate)")
	fs.StringArrayVar(&o.aEngine, "a-engine", nil, "arm A reference-engine flag overrides, e.g. spec-k=0 (repeatable or comma-separated)")
	fs.StringArrayVar(&o.bEngine, "b-engine", nil, "arm B reference-engine flag overrides, e.g. spec-k=4,spec-alpha=0.8")
	fs.StringArrayVar(&o.aPower, "a-power-metrics", nil, "with --a-endpoint: a DCGM exporter's metrics URL of arm A's GPUs, polled every second during each run for its energy (repeatable; docs/energy.md)")
	fs.StringArrayVar(&o.bPower, "b-power-metrics", nil, "with --b-endpoint: a DCGM exporter's metrics URL of arm B's GPUs (repeatable)")
	fs.StringVar(&o.aName, "a-name", "A", "label of arm A")
	fs.StringVar(&o.bName, "b-name", "B", "label of arm B")
	fs.StringVar(&o.repeats, "runs", "2", "measured runs per arm, interleaved A B B A …, or auto: add runs until each --fail-on metric's interval is narrower than its limit (up to --max-runs)")
	fs.IntVar(&o.maxRepeats, "max-runs", 10, "with --runs auto: the most runs per arm")
	// The old spellings, kept as hidden aliases that warn (deprecatedAliases): --repeats was one letter
	// from --repeat, which replays the trace N times inside one run.
	fs.StringVar(&o.repeats, "repeats", "2", "deprecated: use --runs")
	fs.IntVar(&o.maxRepeats, "max-repeats", 10, "deprecated: use --max-runs")
	_ = fs.MarkHidden("repeats")
	_ = fs.MarkHidden("max-repeats")
	fs.StringVar(&o.independence, "independent-repeats", "salt", "how repeats stay independent of the servers' prefix caches: salt (each repeat's synthesized prompts salted), flush (each server's prefix cache flushed before every run), salt+flush, or off (identical prompts every repeat)")
	fs.Uint64Var(&o.saltNonce, "salt-nonce", 0, "the nonce every prompt salt of this invocation comes from (printed, and kept in ab.json as salt_nonce): give an earlier invocation's to send its prompts again; by default a fresh one, so an ab never meets its own earlier prompts in a server's prefix cache")
	fs.IntVar(&o.selfCheck, "self-check", 0, "run N A/A experiments of the embedded engine (arm A's configuration on both arms, --runs 3 unless given) and report how many showed no labels and passed the gate; exit 1 when fewer than 9 in 10 did")
	fs.IntVar(&o.warmupRequests, "warmup-requests", 8, "requests sent to each arm before measuring (discarded; 0 = none)")
	fs.StringVar(&o.failOn, "fail-on", "", "regression rules for B vs A, as in compare")
	fs.StringVar(&o.format, "format", "text", comparisonFormatHelp)
	fs.IntVar(&o.resamples, "resamples", 2000, "bootstrap resamples")
	fs.BoolVar(&o.keepTemperature, "keep-temperature", false, "send requests without a temperature as they are instead of at temperature 0")
	o.target = addTargetFlags(fs)
	o.load = addLoadFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.quality = addQualityFlags(fs, true)
	o.engine = addEngineFlags(fs)
	o.fail = addFailureFlags(fs)
}

// options copies ab's flags into the use case's options.
func (o *abOptions) options() *usecase.ABOptions {
	return &usecase.ABOptions{
		Trace: o.traceFlags.opts(), AEndpoint: o.aEndpoint, BEndpoint: o.bEndpnt,
		AEngine: o.aEngine, BEngine: o.bEngine, APower: o.aPower, BPower: o.bPower, AName: o.aName, BName: o.bName,
		Runs: o.repeats, MaxRuns: o.maxRepeats, Independence: o.independence, SaltNonce: o.saltNonce, SelfCheck: o.selfCheck,
		WarmupRequests: o.warmupRequests, FailOn: o.failOn, Format: o.format, Resamples: o.resamples,
		KeepTemperature: o.keepTemperature,
		Target:          o.target.opts(), Load: o.load.opts(), Metrics: o.metrics.opts(), Output: o.output.opts(),
		Engine: o.engine.opts(), Fail: o.fail.opts(), Quality: o.quality.opts(),
		ArmEngine: func(overrides []string) (usecase.EngineOptions, error) {
			ef, err := o.armEngineFlags(overrides)
			if err != nil {
				return usecase.EngineOptions{}, err
			}
			return ef.opts(), nil
		},
		Changed: o.fs.Changed,
	}
}

// armEngineFlags parses the command's engine flags again into a fresh set and applies the
// arm's overrides on top.
func (o *abOptions) armEngineFlags(overrides []string) (*engineFlags, error) {
	fs := pflag.NewFlagSet("arm", pflag.ContinueOnError)
	ef := addEngineFlags(fs)
	for _, n := range engineFlagNames {
		if fl := o.fs.Lookup(n); fl != nil && fl.Changed {
			if err := fs.Set(n, fl.Value.String()); err != nil {
				return nil, fmt.Errorf("--%s: %w", n, err)
			}
		}
	}
	for _, kv := range splitOverrides(overrides) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimPrefix(strings.TrimSpace(k), "--")
		if !ok || fs.Lookup(k) == nil {
			return nil, fmt.Errorf("engine override %q: want FLAG=VALUE with FLAG one of %s", kv, strings.Join(engineFlagNames, ", "))
		}
		if err := fs.Set(k, v); err != nil {
			return nil, fmt.Errorf("engine override %s: %w", kv, err)
		}
	}
	return ef, nil
}

// splitOverrides splits "spec-k=4,spec-alpha=0.8" into settings, keeping commas that belong
// to a value (as in faults=reset-mid=0.1,stall=0.1:500ms).
func splitOverrides(in []string) []string {
	known := map[string]bool{}
	for _, n := range engineFlagNames {
		known[n] = true
	}
	var out []string
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			k, _, _ := strings.Cut(part, "=")
			if len(out) > 0 && !known[strings.TrimPrefix(strings.TrimSpace(k), "--")] {
				out[len(out)-1] += "," + part
				continue
			}
			out = append(out, part)
		}
	}
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/quality/judge"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
)

func init() { register("ab", newABCmd) }

type abOptions struct {
	*traceFlags
	aEndpoint, bEndpnt string
	aEngine, bEngine   []string
	aName, bName       string
	repeats            string
	maxRepeats         int
	independence       string
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

Exit status: 0; 1 when --fail-on finds a regression of B against A (with --self-check: fewer
than 9 in 10 experiments clean); 2 on bad input; 3 when a run failed (no request succeeded,
or more than --max-failure-rate failed); 130 when interrupted after writing results.`,
		Example: `  llmbench ab --trace traces/examples/chat-small.jsonl --b-engine spec-k=4,spec-alpha=0.8 --time-scale 4
  llmbench ab --trace prod.jsonl --a-endpoint http://10.0.0.5:8000 --b-endpoint http://10.0.0.6:8000 --runs 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.fail.check(); err != nil {
				return err
			}
			code, err := runAB(cmd.Context(), app, o)
			if err != nil {
				return &exitError{code, err}
			}
			if code != 0 {
				return &exitError{code, nil}
			}
			return nil
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

func runAB(ctx context.Context, app *App, o *abOptions) (int, error) {
	repeats, auto, err := o.check(app)
	if err != nil {
		return 2, err
	}
	judgeOpts, err := o.quality.judgeOptions(app)
	if err != nil {
		return 2, err
	}
	trace, err := o.traceFlags.open(app.Stderr) // read again for each run, not held
	if err != nil {
		return 2, err
	}
	if !o.keepTemperature {
		if trace, err = runner.Greedy(trace); err != nil {
			return 2, err
		}
	}
	thresholds, err := metrics.ParseFailOn(o.failOn)
	if err != nil {
		return 2, err // ParseFailOn names the flag and the rule
	}
	mopts, err := o.metrics.options()
	if err != nil {
		return 2, err
	}
	ind, _ := runner.ParseIndependence(o.independence) // checked by o.check
	out := o.output.out
	if out == "" {
		out = filepath.Join(runner.DefaultOutDir(time.Now()), "ab")
	}
	var arms [2]runner.Arm
	for i, spec := range []struct {
		name, endpoint string
		overrides      []string
	}{{o.aName, o.aEndpoint, o.aEngine}, {o.bName, o.bEndpnt, o.bEngine}} {
		arm, closeArm, err := o.arm(ctx, app, spec.name, spec.endpoint, spec.overrides, ind)
		if err != nil {
			return 2, fmt.Errorf("arm %s: %w", spec.name, err)
		}
		defer closeArm()
		arms[i] = arm
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := app.watchInterrupts(cancel, func() {}, o.load.grace)
	defer stop()
	abOpts := runner.ABOptions{
		Trace: trace, Repeats: repeats, AutoRepeats: auto, MaxRepeats: o.maxRepeats,
		WarmupRequests: o.warmupRequests, NoWarmup: o.warmupRequests == 0,
		OutDir: out, Metrics: mopts, HTML: o.output.html(app), Independence: ind, BlockTokens: o.load.blockTokens,
		Compare: metrics.CompareOptions{Thresholds: thresholds, Resamples: o.resamples, Seed: 1, Confidence: 0.95},
		OnRun: func(arm string, rep, of int) {
			if o.output.noProgress || !app.showProgress() { // a line per run is ab's progress
				return
			}
			upTo := ""
			if auto {
				upTo = "up to "
			}
			fmt.Fprintf(app.Stderr, "ab: arm %s, run %d of %s%d\n", arm, rep, upTo, of)
		},
	}
	if o.selfCheck > 0 {
		return selfCheck(ctx, app, abOpts, arms, o.selfCheck)
	}
	res, err := runner.AB(ctx, abOpts, arms[0], arms[1])
	if err != nil {
		if app.interrupted.Load() {
			return exitInterrupted, err
		}
		return exitBadInput, err
	}
	return o.report(ctx, app, res, trace, out, judgeOpts)
}

// check reads and checks the flags that need no trace nor server: the number of runs per arm
// (or auto), the repeat independence, the arms' shape. It warns of deprecated spellings.
func (o *abOptions) check(app *App) (repeats int, auto bool, err error) {
	if o.target.scrapeMetric {
		return 0, false, fmt.Errorf("--scrape-metrics applies to run; ab lists the arms' configuration from their servers instead")
	}
	if (o.aEndpoint == "") != (o.bEndpnt == "") {
		return 0, false, fmt.Errorf("give both --a-endpoint and --b-endpoint, or neither (two reference-engine arms)")
	}
	if o.target.endpoint != "" {
		return 0, false, fmt.Errorf("ab takes --a-endpoint and --b-endpoint, not --endpoint")
	}
	if o.aEndpoint != "" && (len(o.aEngine) > 0 || len(o.bEngine) > 0) {
		return 0, false, fmt.Errorf("--a-engine/--b-engine configure reference-engine arms; they do not apply to --a-endpoint/--b-endpoint")
	}
	if o.aName == o.bName {
		return 0, false, fmt.Errorf("--a-name and --b-name must differ")
	}
	if err := checkComparisonFormat(o.format); err != nil {
		return 0, false, err
	}
	if f := o.fs.Lookup("repeat"); f != nil && f.Changed {
		return 0, false, fmt.Errorf("--repeat replays the trace N times inside one run; ab's unit is the run: use --runs N (formerly --repeats) for N interleaved runs per arm (what its intervals need)")
	}
	if err := o.deprecatedAliases(app); err != nil {
		return 0, false, err
	}
	if _, err := runner.ParseIndependence(o.independence); err != nil {
		return 0, false, fmt.Errorf("--independent-repeats %w", err)
	}
	if repeats, auto, err = parseRepeats(o.repeats, o.maxRepeats); err != nil {
		return 0, false, err
	}
	if auto && o.failOn == "" {
		return 0, false, fmt.Errorf("--runs auto needs --fail-on: it adds runs until each rule's metric is measured more precisely than the rule's limit")
	}
	if o.selfCheck < 0 {
		return 0, false, fmt.Errorf("--self-check %d: want a number of A/A experiments, e.g. 10", o.selfCheck)
	}
	if o.selfCheck > 0 {
		if o.aEndpoint != "" || len(o.bEngine) > 0 {
			return 0, false, fmt.Errorf("--self-check compares the embedded engine with itself: drop --a-endpoint/--b-endpoint and --b-engine")
		}
		if !textFormat(o.format) {
			return 0, false, fmt.Errorf("--self-check prints one line per experiment, not --format %s: drop --format", o.format)
		}
		o.bEngine = o.aEngine
		if !o.fs.Changed("runs") && !o.fs.Changed("repeats") {
			repeats = 3
		}
	}
	return repeats, auto, nil
}

// deprecatedAliases warns on stderr of --repeats and --max-repeats (now --runs and
// --max-runs) and refuses both spellings of one flag together.
func (o *abOptions) deprecatedAliases(app *App) error {
	for _, a := range [][2]string{{"repeats", "runs"}, {"max-repeats", "max-runs"}} {
		if !o.fs.Changed(a[0]) {
			continue
		}
		if o.fs.Changed(a[1]) {
			return fmt.Errorf("give --%s only (--%s is its old spelling)", a[1], a[0])
		}
		fmt.Fprintf(app.Stderr, "llmbench: --%s is deprecated: use --%s (runs per arm; --repeat replays a trace within one run)\n", a[0], a[1])
	}
	return nil
}

// textFormat is false for the formats meant for a program (json, markdown): with them,
// stdout carries only that format and every message goes to stderr.
func textFormat(format string) bool {
	switch format {
	case "", "text", "terminal":
		return true
	}
	return false
}

// report judges (with --judge-endpoint), writes the comparison in --format, and says where
// the results are; it returns the exit code.
func (o *abOptions) report(ctx context.Context, app *App, res *runner.ABResult, trace traces.Source, out string, judgeOpts *judge.Options) (int, error) {
	msgs := app.Stdout
	if !textFormat(o.format) {
		msgs = app.Stderr // stdout carries only the machine format
	}
	fmt.Fprintf(msgs, "Independent repeats: %s\n", res.Independence)
	if len(res.ConfigIgnored) > 0 {
		fmt.Fprintf(msgs, "Configuration values that change per server process, not compared: %s\n", strings.Join(res.ConfigIgnored, ", "))
	}
	if res.StopReason != "" {
		fmt.Fprintf(msgs, "Repeats: %d per arm, %s\n", res.Repeats, res.StopReason)
	}
	fmt.Fprintln(msgs)
	judgeErr, err := o.judge(ctx, app, res, trace, out, judgeOpts)
	if err != nil {
		return exitBadInput, err
	}
	pairs := runner.PairRecords(res.Dirs[o.aName][0], res.Dirs[o.bName][0])
	if err := writeComparison(app, res.Comparison, o.format, filepath.Join(out, "comparison.html"), o.output.echartsJS, pairs); err != nil {
		return 2, err
	}
	fmt.Fprintf(msgs, "\nresults: %s (per-run directories, ab.json, comparison.html)\n", out)
	var sums []*metrics.Summary
	for _, name := range []string{o.aName, o.bName} {
		sums = append(sums, res.Summaries[name]...)
	}
	if err := measuredExit(app, nil, o.fail, sums...); err != nil {
		var ee *exitError
		errors.As(err, &ee)
		return ee.code, ee.err
	}
	if res.Comparison.Regressed {
		return exitRegression, judgeErr
	}
	if judgeErr != nil {
		return exitBadInput, judgeErr
	}
	return exitOK, nil
}

// judge runs the pairwise LLM judge after the measured runs (with --judge-endpoint) and
// rewrites ab.json with its verdict. A failed judge leaves the measured comparison standing:
// judgeErr makes the command fail at the end; err (ab.json unwritable) at once.
func (o *abOptions) judge(ctx context.Context, app *App, res *runner.ABResult, trace traces.Source, out string, judgeOpts *judge.Options) (judgeErr, err error) {
	if judgeOpts == nil {
		return nil, nil
	}
	fmt.Fprintf(app.Stderr, "ab: judging A against B with %s, each pair twice with the order swapped (after the measured runs)\n", judgeOpts.Model)
	// The judge reads the prompts: only it holds the trace.
	reqs, err := trace.Requests()
	var js *metrics.JudgeSummary
	if err == nil {
		js, err = runner.JudgeAB(ctx, res.Dirs[o.aName][0], res.Dirs[o.bName][0], out, reqs, *judgeOpts)
	}
	if err != nil {
		judgeErr = fmt.Errorf("judge: %w (the measured results are in %s)", err, out)
		res.Comparison.Warnings = append(res.Comparison.Warnings, judgeErr.Error())
	} else {
		res.Comparison.Judge = js
	}
	return judgeErr, runner.WriteJSON(filepath.Join(out, "ab.json"), res)
}

// arm builds one arm: an endpoint, or an embedded reference engine with the command's engine
// flags plus overrides.
func (o *abOptions) arm(ctx context.Context, app *App, name, endpoint string, overrides []string, ind runner.Independence) (runner.Arm, func(), error) {
	tok, err := o.target.loadTokenizer(endpoint == "")
	if err != nil {
		return runner.Arm{}, nil, err
	}
	info := metrics.RunInfo{Command: commandLine(app.Args), Trace: o.traceFlags.path, Seed: o.load.seed, Version: version,
		Mode: o.load.mode(), Concurrency: o.load.concurrency, MaxConcurrency: o.load.maxConcurrency,
		RateScale: o.load.rateScale, Backend: o.target.backend, Tokenizer: tok.Name(), Config: flagConfig(app.flags),
		API: o.target.api, BatchSize: o.target.batchSize}
	timeScale := 1.0
	var url string
	closeArm := func() {}
	config := map[string]string{}
	if endpoint != "" {
		if o.load.timeScale != 1 {
			return runner.Arm{}, nil, fmt.Errorf("--time-scale applies to reference-engine arms only")
		}
		url = endpoint
		info.Endpoint = redactURL(endpoint)
	} else {
		ef, err := o.armEngineFlags(overrides)
		if err != nil {
			return runner.Arm{}, nil, err
		}
		cfg, err := ef.config()
		if err != nil {
			return runner.Arm{}, nil, err
		}
		cfg.TimeScale = o.load.timeScale
		timeScale = o.load.timeScale
		info.TimeScale = timeScale
		info.EngineSeed = cfg.Seed
		eng, err := engineadapter.StartEmbedded(cfg)
		if err != nil {
			return runner.Arm{}, nil, err
		}
		closeArm = eng.Close
		url = eng.URL
		info.Endpoint = "embedded reference engine"
		info.Engine = eng.Engine.Describe()
		for k, v := range info.Engine {
			config["engine."+k] = v
		}
		delete(config, "engine.time_scale")
	}
	t, err := o.target.target(app, url, o.engine.modelName())
	if err != nil {
		closeArm()
		return runner.Arm{}, nil, err
	}
	arm := runner.Arm{Name: name, Info: info}
	if endpoint != "" {
		if config, err = o.serverFacts(ctx, &arm, endpoint, t, ind); err != nil {
			return runner.Arm{}, nil, err
		}
	} else if ind.Flush {
		// The embedded reference engine flushes by SGLang's endpoint (refengine/flush.go).
		flush, err := runner.NewCacheFlush(ctx, url, "")
		if err != nil {
			closeArm()
			return runner.Arm{}, nil, fmt.Errorf("--independent-repeats %s: %w", o.independence, err)
		}
		arm.Flush, arm.FlushMethod = flush.Flush, flush.Method
	}
	lo, err := o.load.options(t, tok)
	if err == nil {
		lo.PromptSizing, err = o.target.sizing(endpoint == "")
	}
	if err != nil {
		closeArm()
		return runner.Arm{}, nil, err
	}
	lo.KeepOutput = o.quality.keepOutput || o.quality.judgeEndpoint != ""
	config["model"] = t.Model
	config["backend"] = t.Backend
	arm.Produce, arm.Salted = runner.HTTPProducers(lo, timeScale)
	arm.Config = config
	if endpoint == "" {
		arm.Scrape = &runner.ArmScrape{URL: url, TimeScale: timeScale} // the engine's speculative counters (issue 38)
	}
	return arm, closeArm, nil
}

// serverFacts reads an endpoint arm's server configuration into the arm's run facts (so the
// comparison lists the servers' differences) and returns it; with a flush asked for, it finds
// how the server flushes its prefix cache.
func (o *abOptions) serverFacts(ctx context.Context, arm *runner.Arm, endpoint string, t loadgen.Target, ind runner.Independence) (map[string]string, error) {
	config := runner.FetchServerConfig(ctx, endpoint, t.APIKey, t.Model, t.Headers)
	arm.Info.Engine = maps.Clone(config)
	if ind.Flush {
		flush, err := runner.NewCacheFlush(ctx, endpoint, t.APIKey)
		if err != nil {
			return nil, fmt.Errorf("--independent-repeats %s: %w", o.independence, err)
		}
		arm.Flush, arm.FlushMethod = flush.Flush, flush.Method
	}
	return config, nil
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

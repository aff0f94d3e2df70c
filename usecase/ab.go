package usecase

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/quality/judge"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// ABOptions are `llmbench ab`'s options: two arms (two endpoints, or two configurations of
// the embedded reference engine) replayed the same trace in interleaved runs.
type ABOptions struct {
	Trace                TraceOptions
	AEndpoint, BEndpoint string
	// AEngine and BEngine are the arms' reference-engine flag overrides (spec-k=4,…), which
	// ArmEngine applies to the command's engine flags.
	AEngine, BEngine []string
	// APower and BPower are DCGM exporters' metrics URLs of endpoint arms' GPUs (ab
	// --a-power-metrics/--b-power-metrics), read for each arm's energy; reference-engine arms
	// read the engine's own power (abarm.go).
	APower, BPower []string
	AName, BName   string
	// Runs is the number of measured runs per arm, or "auto"; MaxRuns bounds auto.
	Runs            string
	MaxRuns         int
	Independence    string
	SelfCheck       int
	WarmupRequests  int
	FailOn          string
	Format          string
	Resamples       int
	KeepTemperature bool
	Target          TargetOptions
	Load            LoadOptions
	Metrics         MetricOptions
	Output          OutputOptions
	Engine          EngineOptions
	Fail            FailureOptions
	Quality         QualityOptions
	// ArmEngine returns an arm's engine options: Engine with the overrides applied (the CLI
	// parses them as its engine flags). Nil: Engine for both arms, and no overrides accepted.
	ArmEngine func(overrides []string) (EngineOptions, error)
	// Changed says which flags were given (runs vs repeats, repeat).
	Changed Changed
	// SaltNonce is the nonce of the invocation's prompt salts (runner.ABOptions.SaltNonce)
	// when --salt-nonce was given; otherwise one is drawn (Draw, else crypto/rand).
	SaltNonce uint64
	Draw      func() uint64
}

// AB runs an A/B experiment (or, with SelfCheck, that many A/A experiments) and reports it:
// it returns the command's exit status and the error to print.
func AB(ctx context.Context, env *Env, o *ABOptions) (int, error) {
	if err := o.Fail.Check(); err != nil {
		return ExitBadInput, err
	}
	repeats, auto, err := o.check(env)
	if err != nil {
		return ExitBadInput, err
	}
	judgeOpts, err := o.Quality.JudgeOptions(env.Getenv)
	if err != nil {
		return ExitBadInput, err
	}
	trace, abOpts, err := o.prepare(env)
	if err != nil {
		return ExitBadInput, err
	}
	abOpts.Repeats, abOpts.AutoRepeats = repeats, auto
	abOpts.OnRun = o.onRun(env, auto)
	var arms [2]runner.Arm
	for i, spec := range []struct {
		name, endpoint   string
		overrides, power []string
	}{{o.AName, o.AEndpoint, o.AEngine, o.APower}, {o.BName, o.BEndpoint, o.BEngine, o.BPower}} {
		arm, closeArm, err := o.arm(ctx, env, spec.name, spec.endpoint, spec.overrides, abOpts.Independence)
		if err != nil {
			return ExitBadInput, fmt.Errorf("arm %s: %w", spec.name, err)
		}
		defer closeArm()
		arm.Power = spec.power
		arms[i] = arm
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := env.watchInterrupts(cancel, func() {}, o.Load.Grace)
	defer stop()
	if o.SelfCheck > 0 {
		return selfCheck(ctx, env, abOpts, arms, o.SelfCheck)
	}
	res, err := runner.AB(ctx, abOpts, arms[0], arms[1])
	if err != nil {
		if env.interrupted() {
			return ExitInterrupted, err
		}
		return ExitBadInput, err
	}
	return o.report(ctx, env, res, trace, abOpts.OutDir, judgeOpts)
}

// prepare opens the trace (at temperature 0 unless KeepTemperature) and builds runner's
// options but for the number of runs.
func (o *ABOptions) prepare(env *Env) (traces.Source, runner.ABOptions, error) {
	trace, err := o.Trace.Open(env.Stderr) // read again for each run, not held
	if err != nil {
		return nil, runner.ABOptions{}, err
	}
	if !o.KeepTemperature {
		if trace, err = runner.Greedy(trace); err != nil {
			return nil, runner.ABOptions{}, err
		}
	}
	thresholds, err := metrics.ParseFailOn(o.FailOn)
	if err != nil {
		return nil, runner.ABOptions{}, err // ParseFailOn names the flag and the rule
	}
	mopts, err := o.Metrics.Options()
	if err != nil {
		return nil, runner.ABOptions{}, err
	}
	ind, _ := runner.ParseIndependence(o.Independence) // checked by o.check
	nonce := o.SaltNonce
	if !o.Changed.Has("salt-nonce") {
		draw := o.Draw
		if draw == nil {
			draw = drawSalt
		}
		nonce = draw()
	}
	out := o.Output.Out
	if out == "" {
		out = filepath.Join(runner.DefaultOutDir(time.Now()), "ab")
	}
	return trace, runner.ABOptions{
		Trace: trace, MaxRepeats: o.MaxRuns,
		WarmupRequests: o.WarmupRequests, NoWarmup: o.WarmupRequests == 0,
		OutDir: out, Metrics: mopts, HTML: o.Output.HTML(env.Getenv), Independence: ind, BlockTokens: o.Load.BlockTokens, SaltNonce: nonce,
		Compare: metrics.CompareOptions{Thresholds: thresholds, Resamples: o.Resamples, Seed: 1, Confidence: 0.95},
	}, nil
}

// onRun prints a line per run on stderr: ab's progress.
func (o *ABOptions) onRun(env *Env, auto bool) func(arm string, rep, of int) {
	return func(arm string, rep, of int) {
		if o.Output.NoProgress || !env.ShowProgress {
			return
		}
		upTo := ""
		if auto {
			upTo = "up to "
		}
		fmt.Fprintf(env.Stderr, "ab: arm %s, run %d of %s%d\n", arm, rep, upTo, of)
	}
}

// check reads and checks the options that need no trace nor server: the number of runs per
// arm (or auto), the repeat independence, the arms' shape. It warns of deprecated spellings.
func (o *ABOptions) check(env *Env) (repeats int, auto bool, err error) {
	if err := o.checkArms(); err != nil {
		return 0, false, err
	}
	if o.Changed.Has("repeat") {
		return 0, false, fmt.Errorf("--repeat replays the trace N times inside one run; ab's unit is the run: use --runs N (formerly --repeats) for N interleaved runs per arm (what its intervals need)")
	}
	if err := o.deprecatedAliases(env); err != nil {
		return 0, false, err
	}
	if _, err := runner.ParseIndependence(o.Independence); err != nil {
		return 0, false, fmt.Errorf("--independent-repeats %w", err)
	}
	if repeats, auto, err = ParseRepeats(o.Runs, o.MaxRuns); err != nil {
		return 0, false, err
	}
	if auto && o.FailOn == "" {
		return 0, false, fmt.Errorf("--runs auto needs --fail-on: it adds runs until each rule's metric is measured more precisely than the rule's limit")
	}
	if o.SelfCheck < 0 {
		return 0, false, fmt.Errorf("--self-check %d: want a number of A/A experiments, e.g. 10", o.SelfCheck)
	}
	if o.SelfCheck > 0 {
		if o.AEndpoint != "" || len(o.BEngine) > 0 {
			return 0, false, fmt.Errorf("--self-check compares the embedded engine with itself: drop --a-endpoint/--b-endpoint and --b-engine")
		}
		if !TextFormat(o.Format) {
			return 0, false, fmt.Errorf("--self-check prints one line per experiment, not --format %s: drop --format", o.Format)
		}
		o.BEngine = o.AEngine
		if !o.Changed.Has("runs") && !o.Changed.Has("repeats") {
			repeats = 3
		}
	}
	return repeats, auto, nil
}

// checkArms refuses arms that are neither two endpoints nor two engines, and a --format ab
// cannot print.
func (o *ABOptions) checkArms() error {
	if o.Target.ScrapeMetric {
		return fmt.Errorf("--scrape-metrics applies to run; ab lists the arms' configuration from their servers instead")
	}
	if (o.AEndpoint == "") != (o.BEndpoint == "") {
		return fmt.Errorf("give both --a-endpoint and --b-endpoint, or neither (two reference-engine arms)")
	}
	if o.Target.Endpoint != "" {
		return fmt.Errorf("ab takes --a-endpoint and --b-endpoint, not --endpoint")
	}
	if o.AEndpoint != "" && (len(o.AEngine) > 0 || len(o.BEngine) > 0) {
		return fmt.Errorf("--a-engine/--b-engine configure reference-engine arms; they do not apply to --a-endpoint/--b-endpoint")
	}
	if o.AName == o.BName {
		return fmt.Errorf("--a-name and --b-name must differ")
	}
	if err := o.checkPower(); err != nil {
		return err
	}
	return CheckComparisonFormat(o.Format)
}

// checkPower refuses exporter URLs that are not http(s) URLs, and exporters for
// reference-engine arms (whose energy comes from the engine's own DCGM metrics).
func (o *ABOptions) checkPower() error {
	for _, p := range []struct {
		flag string
		urls []string
	}{{"--a-power-metrics", o.APower}, {"--b-power-metrics", o.BPower}} {
		if len(p.urls) > 0 && o.AEndpoint == "" {
			return fmt.Errorf("%s reads the GPU power of --a-endpoint/--b-endpoint arms; reference-engine arms report the engine's own (docs/energy.md)", p.flag)
		}
		for _, u := range p.urls {
			if err := runner.CheckExporterURL(u); err != nil {
				return fmt.Errorf("%s %q: %w", p.flag, u, err)
			}
		}
	}
	return nil
}

// deprecatedAliases warns on stderr of --repeats and --max-repeats (now --runs and
// --max-runs) and refuses both spellings of one flag together.
func (o *ABOptions) deprecatedAliases(env *Env) error {
	for _, a := range [][2]string{{"repeats", "runs"}, {"max-repeats", "max-runs"}} {
		if !o.Changed.Has(a[0]) {
			continue
		}
		if o.Changed.Has(a[1]) {
			return fmt.Errorf("give --%s only (--%s is its old spelling)", a[1], a[0])
		}
		fmt.Fprintf(env.Stderr, "llmbench: --%s is deprecated: use --%s (runs per arm; --repeat replays a trace within one run)\n", a[0], a[1])
	}
	return nil
}

// ParseRepeats reads --runs: a number of runs per arm, or auto (with --max-runs at least 2).
func ParseRepeats(s string, maxRepeats int) (n int, auto bool, err error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		if maxRepeats < 2 {
			return 0, false, fmt.Errorf("--max-runs %d: --runs auto needs at least 2", maxRepeats)
		}
		return 0, true, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("--runs %q: want a number of runs per arm (>= 1) or auto", s)
	}
	return n, false, nil
}

// selfCheck runs n A/A experiments with opts (both arms one configuration) and says how many
// were clean: no metric labelled and the gate passed. It exits 1 below 9 in 10.
func selfCheck(ctx context.Context, env *Env, opts runner.ABOptions, arms [2]runner.Arm, n int) (int, error) {
	base := opts.OutDir
	clean := 0
	for i := 1; i <= n; i++ {
		if ctx.Err() != nil {
			break
		}
		opts.OutDir = filepath.Join(base, fmt.Sprintf("self-check-%d", i))
		res, err := runner.AB(ctx, opts, arms[0], arms[1])
		if err != nil {
			return 2, fmt.Errorf("self-check %d: %w", i, err)
		}
		var labels []string
		for _, m := range res.Comparison.Metrics {
			switch m.Verdict {
			case metrics.VerdictBetter, metrics.VerdictWorse, metrics.VerdictChanged, metrics.VerdictRegressed:
				labels = append(labels, fmt.Sprintf("%s %s %+.1f%%", m.Name, m.Verdict, m.DeltaPct))
			}
		}
		state := "clean"
		if cc := res.Comparison.CacheConfound; cc != nil {
			labels = append(labels, fmt.Sprintf("prefix-cache confound (%d verdicts withheld)", len(cc.Withheld)))
		}
		if len(labels) > 0 || res.Comparison.Regressed {
			state = "labelled: " + strings.Join(labels, ", ")
		} else {
			clean++
		}
		fmt.Fprintf(env.Stdout, "self-check %d of %d: %d runs per arm, %s\n", i, n, res.Repeats, state)
	}
	fmt.Fprintf(env.Stdout, "self-check: %d of %d A/A experiments had no labels and passed the gate (the claim: at least 9 in 10); results in %s\n", clean, n, base)
	if clean*10 < n*9 {
		return 1, nil
	}
	return 0, nil
}

// report judges (with a judge endpoint), writes the comparison in Format, and says where the
// results are; it returns the exit code.
func (o *ABOptions) report(ctx context.Context, env *Env, res *runner.ABResult, trace traces.Source, out string, judgeOpts *judge.Options) (int, error) {
	msgs := env.Stdout
	if !TextFormat(o.Format) {
		msgs = env.Stderr // stdout carries only the machine format
	}
	fmt.Fprintf(msgs, "Independent repeats: %s\n", res.Independence)
	if len(res.ConfigIgnored) > 0 {
		fmt.Fprintf(msgs, "Configuration values that change per server process, not compared: %s\n", strings.Join(res.ConfigIgnored, ", "))
	}
	if res.StopReason != "" {
		fmt.Fprintf(msgs, "Repeats: %d per arm, %s\n", res.Repeats, res.StopReason)
	}
	fmt.Fprintln(msgs)
	judgeErr, err := o.judge(ctx, env, res, trace, out, judgeOpts)
	if err != nil {
		return ExitBadInput, err
	}
	pairs := runner.PairRecords(res.Dirs[o.AName][0], res.Dirs[o.BName][0])
	if err := WriteComparison(env, res.Comparison, o.Format, filepath.Join(out, "comparison.html"), o.Output.EChartsJS, pairs); err != nil {
		return ExitBadInput, err
	}
	fmt.Fprintf(msgs, "\nresults: %s (per-run directories, ab.json, comparison.html)\n", out)
	var sums []*metrics.Summary
	for _, name := range []string{o.AName, o.BName} {
		sums = append(sums, res.Summaries[name]...)
	}
	if code, err := MeasuredExit(env, o.Fail, sums...); code != ExitOK {
		return code, err
	}
	if res.Comparison.Regressed {
		return ExitRegression, judgeErr
	}
	if judgeErr != nil {
		return ExitBadInput, judgeErr
	}
	return ExitOK, nil
}

// judge runs the pairwise LLM judge after the measured runs (with a judge endpoint) and
// rewrites ab.json with its verdict. A failed judge leaves the measured comparison standing:
// judgeErr makes the command fail at the end; err (ab.json unwritable) at once.
func (o *ABOptions) judge(ctx context.Context, env *Env, res *runner.ABResult, trace traces.Source, out string, judgeOpts *judge.Options) (judgeErr, err error) {
	if judgeOpts == nil {
		return nil, nil
	}
	fmt.Fprintf(env.Stderr, "ab: judging A against B with %s, each pair twice with the order swapped (after the measured runs)\n", judgeOpts.Model)
	// The judge reads the prompts: only it holds the trace.
	reqs, err := trace.Requests()
	var js *metrics.JudgeSummary
	if err == nil {
		js, err = runner.JudgeAB(ctx, res.Dirs[o.AName][0], res.Dirs[o.BName][0], out, reqs, *judgeOpts)
	}
	if err != nil {
		judgeErr = fmt.Errorf("judge: %w (the measured results are in %s)", err, out)
		res.Comparison.Warnings = append(res.Comparison.Warnings, judgeErr.Error())
	} else {
		res.Comparison.Judge = js
	}
	return judgeErr, runner.WriteJSON(filepath.Join(out, "ab.json"), res)
}

package usecase

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmbench/llmbench/quality/judge"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// RunOptions are `llmbench run`'s options: one replay of a trace against an endpoint, or the
// embedded reference engine when Target.Endpoint is "".
type RunOptions struct {
	Trace   TraceOptions
	Target  TargetOptions
	Load    LoadOptions
	Metrics MetricOptions
	Output  OutputOptions
	Engine  EngineOptions
	Shard   ShardOptions
	Fail    FailureOptions
	Quality QualityOptions
	// Prefix (issue 34): priming the server's prefix cache, and the workers behind the
	// endpoint to scrape (prefix.go).
	Prefix PrefixOptions
	// Energy (issue 39): DCGM exporters and the price of a kWh (energy.go).
	Energy EnergyOptions
	// Capacity (issue 39): the saturation watch (capacity.go).
	Capacity CapacityOptions
}

// Run replays the trace into one results directory, prints the summary and where the
// results are, and returns the command's exit status and the error to print.
func Run(ctx context.Context, env *Env, o *RunOptions) (int, error) {
	if err := o.Fail.Check(); err != nil {
		return ExitBadInput, err
	}
	judgeOpts, err := o.Quality.JudgeOptions(env.Getenv)
	if err != nil {
		return ExitBadInput, err
	}
	trace, run, closeTarget, err := o.prepare(env, judgeOpts != nil)
	if err != nil {
		return ExitBadInput, err
	}
	defer closeTarget()
	res, err := runner.RunHTTP(ctx, run)
	var judgeErr error // a judge that cannot run fails the command after the results are shown
	if res != nil && res.Summary != nil && err == nil && judgeOpts != nil {
		judgeErr = o.judge(ctx, env, res, trace, judgeOpts)
	}
	if late := (*runner.LateStartError)(nil); errors.As(err, &late) {
		return ExitLateStart, err
	}
	if res == nil || res.Summary == nil {
		return exitOf(err)
	}
	if werr := reports.WriteTerminal(env.Stdout, res.Summary); werr != nil && err == nil {
		err = werr
	}
	fmt.Fprintf(env.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
	PrintCompareHint(env, res.Dir)
	if judgeErr != nil {
		return ExitBadInput, judgeErr
	}
	if err != nil {
		return ExitBadInput, err
	}
	return MeasuredExit(env, o.Fail, res.Summary)
}

// exitOf is exit 2 with err, or 0 without one.
func exitOf(err error) (int, error) {
	if err != nil {
		return ExitBadInput, err
	}
	return ExitOK, nil
}

// prepare opens the trace and the target (starting the embedded engine: the returned function
// stops it) and builds runner's run; keepOutput keeps every answer (for a judge).
func (o *RunOptions) prepare(env *Env, judged bool) (traces.Source, runner.HTTPRun, func(), error) {
	none := func() {}
	trace, err := o.Trace.Open(env.Stderr)
	if err != nil {
		return nil, runner.HTTPRun{}, none, err
	}
	mopts, err := o.Metrics.Options()
	if err != nil {
		return nil, runner.HTTPRun{}, none, err
	}
	shard, err := o.Shard.Options(env.Getenv, o.Trace.Path, o.Target.Endpoint)
	if err != nil {
		return nil, runner.HTTPRun{}, none, err
	}
	extra, err := o.extras(env, shard != nil)
	if err != nil {
		return nil, runner.HTTPRun{}, none, err
	}
	tgt, info, closeTarget, err := OpenTarget(env, &o.Target, &o.Load, &o.Engine)
	if err != nil {
		return nil, runner.HTTPRun{}, none, err
	}
	embedded := o.Target.Endpoint == ""
	tok, err := o.Target.LoadTokenizer(embedded)
	if err != nil {
		return nil, runner.HTTPRun{}, closeTarget, err
	}
	lo, err := o.Load.Options(tgt, tok)
	if err != nil {
		return nil, runner.HTTPRun{}, closeTarget, err
	}
	if lo.PromptSizing, err = o.Target.Sizing(embedded); err != nil {
		return nil, runner.HTTPRun{}, closeTarget, err
	}
	lo.KeepOutput = o.Quality.KeepOutput || judged
	if extra.Saturation, err = o.Capacity.Saturation(env.Stderr, lo.Concurrency > 0); err != nil {
		return nil, runner.HTTPRun{}, closeTarget, err
	}
	info.Command, info.Trace, info.Seed, info.Version, info.Tokenizer = CommandLine(env.Args), o.Trace.Path, o.Load.Seed, env.Version, tok.Name()
	if embedded {
		info.EngineSeed = o.Engine.ResolvedSeed
	}
	info.Config = env.config()
	info.TimeScale = o.Load.EffectiveTimeScale(o.Target.Endpoint)
	return trace, runner.HTTPRun{
		Trace: trace, Load: lo, TimeScale: info.TimeScale, Metrics: mopts,
		Info: info, OutDir: o.Output.Out, HTML: o.Output.HTML(env.Getenv), Scrape: o.Target.ScrapeMetric,
		Progress: o.Output.Progress(env), Terminal: env.IsTerminal, ProgressWidth: env.TermWidth, Interrupts: env.interrupts(), Shard: shard,
		Prime: extra.Prime, Cold: extra.Cold, ScrapeWorkers: extra.ScrapeWorkers, Power: extra.Power, Saturation: extra.Saturation,
	}, closeTarget, nil
}

// extras checks the options of priming (issue 34), energy and saturation (issue 39), a cold
// start (issue 45) and
// returns them in a runner.HTTPRun (the saturation watch is set once the load is known).
func (o *RunOptions) extras(env *Env, sharded bool) (runner.HTTPRun, error) {
	var r runner.HTTPRun
	var err error
	if r.Power, err = o.Energy.Options(o.Target.ScrapeMetric); err != nil {
		return r, err
	}
	if r.Prime, err = o.Prefix.Priming(sharded); err != nil {
		return r, err
	}
	if r.Cold, err = o.Prefix.ColdStart(sharded); err != nil {
		return r, err
	}
	r.ScrapeWorkers, err = o.Prefix.ScrapeWorkers(o.Target.Endpoint)
	return r, err
}

// judge judges a finished run in rubric mode and reads its summary again (with the judge's
// verdicts); the error says where the measured results are.
func (o *RunOptions) judge(ctx context.Context, env *Env, res *runner.Result, trace traces.Source, jo *judge.Options) error {
	reqs, err := trace.Requests()
	if err == nil {
		err = RunJudge(ctx, env, jo, res.Dir, reqs, o.Output.HTML(env.Getenv))
	}
	if err != nil {
		return fmt.Errorf("judge: %w (the measured results are in %s)", err, res.Dir)
	}
	if s, err := runner.ReadSummary(res.Dir); err == nil {
		res.Summary = s
	}
	return nil
}

// RunJudge judges a finished run in rubric mode.
func RunJudge(ctx context.Context, env *Env, jo *judge.Options, dir string, reqs []traces.Request, html reports.HTMLOptions) error {
	fmt.Fprintf(env.Stderr, "judging the kept answers with %s (after the measured run)\n", jo.Model)
	_, err := runner.JudgeRun(ctx, dir, reqs, *jo, html)
	return err
}

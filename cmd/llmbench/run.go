package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/usecase"
)

func init() { register("run", newRunCmd) }

type runOptions struct {
	*traceFlags
	target  *targetFlags
	load    *loadFlags
	metrics *metricFlags
	output  *outputFlags
	engine  *engineFlags
	shard   *shardFlags
	fail    *failureFlags
	quality *qualityFlags
	args    []string
}

func newRunCmd(app *App) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --trace FILE [flags]",
		Short: "Replay a trace against an endpoint (default: the embedded reference engine) and write results",
		Long: `Replay a trace open-loop (each request at its trace time, latency measured from that
intended time) against an OpenAI-compatible endpoint, or against the bundled reference engine
when no --endpoint is given. Writes summary.json, requests.msgpack and report.html to the
results directory and prints a summary table (run.json, the run facts, is written at start).
Requests with expect checks (traces/FORMAT.md) are graded on their responses (summary.json's
"quality"; llmbench grade re-grades offline); --judge-endpoint adds an LLM judge after the run.

Exit status: 0; 2 on bad input; 3 when the run failed (no request succeeded, or more than
--max-failure-rate failed; results are written); 130 when interrupted after writing results.`,
		Example: `  llmbench run --trace traces/examples/chat-small.jsonl
  llmbench run --trace prod.jsonl --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --slo ttft=500ms,tpot=50ms
  llmbench run --trace prod.jsonl --gpu h200 --weight-dtype fp8 --spec-k 4 --spec-alpha 0.8
  llmbench run --trace prod.jsonl --endpoint http://10.0.0.5:8000 --shard 0/4 --start-at 2026-12-01T15:00:00Z -o shard-0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.args = app.Args
			return runRun(cmd.Context(), app, o)
		},
	}
	fs := cmd.Flags()
	o.traceFlags = addTraceFlags(fs)
	o.target = addTargetFlags(fs)
	o.load = addLoadFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.engine = addEngineFlags(fs)
	o.shard = addShardFlags(fs)
	o.fail = addFailureFlags(fs)
	o.quality = addQualityFlags(fs, false)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func runRun(ctx context.Context, app *App, o *runOptions) error {
	if err := o.fail.check(); err != nil {
		return err
	}
	judgeOpts, err := o.quality.judgeOptions(app)
	if err != nil {
		return err
	}
	trace, err := o.traceFlags.open(app.Stderr)
	if err != nil {
		return err
	}
	mopts, err := o.metrics.options()
	if err != nil {
		return err
	}
	shard, err := o.shard.options(app, o.traceFlags.path, o.target.endpoint)
	if err != nil {
		return err
	}
	tgt, info, closeTarget, err := openTarget(app, o.target, o.load, o.engine)
	if err != nil {
		return err
	}
	defer closeTarget()
	tok, err := o.target.loadTokenizer(o.target.endpoint == "")
	if err != nil {
		return err
	}
	lo, err := o.load.options(tgt, tok)
	if err != nil {
		return err
	}
	if lo.PromptSizing, err = o.target.sizing(o.target.endpoint == ""); err != nil {
		return err
	}
	lo.KeepOutput = o.quality.keepOutput || judgeOpts != nil
	info.Command = commandLine(o.args)
	info.Trace = o.traceFlags.path
	info.Seed = o.load.seed
	info.Version = version
	info.Tokenizer = tok.Name()
	if o.target.endpoint == "" {
		info.EngineSeed = o.engine.resolvedSeed
	}
	info.Config = flagConfig(app.flags)
	info.TimeScale = o.load.effectiveTimeScale(o.target.endpoint)
	res, err := runner.RunHTTP(ctx, runner.HTTPRun{
		Trace: trace, Load: lo, TimeScale: o.load.effectiveTimeScale(o.target.endpoint), Metrics: mopts,
		Info: info, OutDir: o.output.out, HTML: o.output.html(app), Scrape: o.target.scrapeMetric,
		Progress: o.output.progress(app), Terminal: app.IsTerminal, ProgressWidth: app.TermWidth, Interrupts: app.interrupts(), Shard: shard,
	})
	var judgeErr error // a judge that cannot run fails the command after the results are shown
	if res != nil && res.Summary != nil && err == nil && judgeOpts != nil {
		reqs, rerr := trace.Requests()
		if rerr == nil {
			rerr = runJudge(ctx, app, judgeOpts, res.Dir, reqs, o.output.html(app))
		}
		if rerr != nil {
			judgeErr = fmt.Errorf("judge: %w (the measured results are in %s)", rerr, res.Dir)
		} else if s, rerr := runner.ReadSummary(res.Dir); rerr == nil {
			res.Summary = s
		}
	}
	if res != nil && res.Summary != nil {
		if werr := reports.WriteTerminal(app.Stdout, res.Summary); werr != nil && err == nil {
			err = werr
		}
	}
	if res != nil && res.Summary != nil {
		fmt.Fprintf(app.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
		printCompareHint(app, res.Dir)
		if judgeErr != nil {
			return judgeErr
		}
		return measuredExit(app, err, o.fail, res.Summary)
	}
	return err
}

// openTarget starts the embedded engine when no endpoint is given and returns the loadgen
// target and the run facts known before the run (see usecase.OpenTarget).
func openTarget(app *App, tf *targetFlags, lf *loadFlags, ef *engineFlags) (loadgen.Target, metrics.RunInfo, func(), error) {
	to, lo, eo := tf.opts(), lf.opts(), ef.opts()
	t, info, closeTarget, err := usecase.OpenTarget(app.env(), &to, &lo, &eo)
	ef.resolvedSeed = eo.ResolvedSeed
	return t, info, closeTarget, err
}

// progress is where the progress display goes: stderr, or nowhere with --no-progress or
// --quiet.
func (f *outputFlags) progress(app *App) io.Writer {
	o := f.opts()
	return o.Progress(app.env())
}

func (f *loadFlags) effectiveTimeScale(endpoint string) float64 {
	o := f.opts()
	return o.EffectiveTimeScale(endpoint)
}

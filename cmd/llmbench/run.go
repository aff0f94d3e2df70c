package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

func init() { register("run", newRunCmd) }

type runOptions struct {
	*traceFlags
	target  *targetFlags
	load    *loadFlags
	metrics *metricFlags
	output  *outputFlags
	engine  *engineFlags
	fail    *failureFlags
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

Exit status: 0; 2 on bad input; 3 when the run failed (no request succeeded, or more than
--max-failure-rate failed; results are written); 130 when interrupted after writing results.`,
		Example: `  llmbench run --trace traces/examples/chat-small.jsonl
  llmbench run --trace prod.jsonl --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --slo ttft=500ms,tpot=50ms
  llmbench run --trace prod.jsonl --gpu h200 --weight-dtype fp8 --spec-k 4 --spec-alpha 0.8`,
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
	o.fail = addFailureFlags(fs)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func runRun(ctx context.Context, app *App, o *runOptions) error {
	if err := o.fail.check(); err != nil {
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
	info.Command = commandLine(o.args)
	info.Trace = o.traceFlags.path
	info.Seed = o.load.seed
	info.Version = version
	info.Tokenizer = tok.Name()
	info.Config = flagConfig(app.flags)
	info.TimeScale = o.load.effectiveTimeScale(o.target.endpoint)
	res, err := executeHTTP(ctx, app, runSpec{
		trace: trace, load: lo, timeScale: o.load.effectiveTimeScale(o.target.endpoint), metrics: mopts,
		info: info, out: o.output, scrape: o.target.scrapeMetric,
	})
	if res != nil && res.Summary != nil {
		if werr := reports.WriteTerminal(app.Stdout, res.Summary); werr != nil && err == nil {
			err = werr
		}
	}
	if res != nil && res.Summary != nil {
		fmt.Fprintf(app.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
		return measuredExit(app, err, o.fail, res.Summary)
	}
	return err
}

// openTarget starts the embedded engine when no endpoint is given and returns the loadgen
// target and the run facts known before the run.
func openTarget(app *App, tf *targetFlags, lf *loadFlags, ef *engineFlags) (loadgen.Target, metrics.RunInfo, func(), error) {
	info := metrics.RunInfo{Mode: lf.mode(), Concurrency: lf.concurrency, MaxConcurrency: lf.maxConcurrency, RateScale: lf.rateScale, Repeat: lf.repeat, Backend: tf.backend, API: tf.api}
	if tf.endpoint != "" {
		if lf.timeScale != 1 {
			return loadgen.Target{}, info, nil, fmt.Errorf("--time-scale applies to the embedded reference engine only; with --endpoint use --rate-scale")
		}
		if ef.changed() {
			return loadgen.Target{}, info, nil, fmt.Errorf("reference-engine flags (%s) apply only without --endpoint", ef.changedNames())
		}
		t, err := tf.target(app, tf.endpoint, ef.modelName())
		info.Endpoint = redactURL(tf.endpoint)
		info.Model = t.Model
		return t, info, func() {}, err
	}
	cfg, err := ef.config()
	if err != nil {
		return loadgen.Target{}, info, nil, err
	}
	cfg.TimeScale = lf.timeScale
	eng, err := startEmbeddedEngine(cfg)
	if err != nil {
		return loadgen.Target{}, info, nil, err
	}
	t, err := tf.target(app, eng.URL, eng.Engine.ServedModelName())
	if err != nil {
		eng.Close()
		return t, info, nil, err
	}
	info.Endpoint = "embedded reference engine (" + eng.URL + ")"
	info.Engine = eng.Engine.Describe()
	return t, info, eng.Close, nil
}

func (f *loadFlags) effectiveTimeScale(endpoint string) float64 {
	if endpoint != "" {
		return 1
	}
	return f.timeScale
}

// runSpec is one HTTP run as the commands describe it.
type runSpec struct {
	trace     traces.Source
	load      loadgen.Options
	timeScale float64
	metrics   metrics.Options
	info      metrics.RunInfo
	out       *outputFlags
	scrape    bool
}

// executeHTTP runs one measured replay with progress display and interrupt handling.
func executeHTTP(ctx context.Context, app *App, s runSpec) (*runner.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prog := &loadgen.Progress{}
	s.load.Progress = prog
	var rw atomic.Pointer[metrics.RecordWriter]
	stopSignals := app.watchInterrupts(cancel, func() {
		if w := rw.Load(); w != nil {
			_ = w.Flush()
		}
	}, s.load.Grace)
	defer stopSignals()

	dir := s.out.out
	var scr *runner.Scraper
	if s.scrape {
		scr = runner.StartScraper(ctx, s.load.Target.URL, s.load.Target.APIKey, 0)
	}
	var pd *runner.Progress
	if !s.out.noProgress {
		total := s.trace.Len() * max(1, s.load.Repeat)
		if s.load.MaxRequests > 0 && s.load.MaxRequests < total {
			total = s.load.MaxRequests
		}
		pd = runner.StartProgress(app.Stderr, app.IsTerminal, total, func() runner.Snapshot {
			return runner.Snapshot{Sent: prog.Sent.Load(), InFlight: prog.InFlight.Load(), Done: prog.Done.Load(), Failed: prog.Failed.Load(), OutputTokens: prog.OutputTokens.Load()}
		}, nil)
	}
	produce := runner.HTTPProducer(s.load, s.timeScale)
	if scr != nil {
		inner := produce
		produce = func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*runner.Produced, error) {
			p, err := inner(ctx, trace, sink)
			scr.Stop()
			return p, err
		}
	}
	res, err := runner.Execute(ctx, runner.Options{
		Trace:     s.trace,
		OutDir:    dir,
		Metrics:   s.metrics,
		Info:      s.info,
		HTML:      s.out.html(app),
		OnRecords: func(w *metrics.RecordWriter) { rw.Store(w) },
		Scraper:   scr,
	}, produce)
	if pd != nil {
		pd.Stop()
	}
	return res, err
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

func init() { register("simulate", newSimulateCmd) }

type simulateOptions struct {
	*traceFlags
	rateScale   float64
	maxRequests int
	warmup      time.Duration
	cooldown    time.Duration
	engine      *engineFlags
	metrics     *metricFlags
	output      *outputFlags
	fail        *failureFlags
}

func newSimulateCmd(app *App) *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate --trace FILE [engine flags]",
		Short: "Run a trace through the reference engine on a virtual clock (no HTTP, no sleeping)",
		Long: `Run a trace through the reference engine's scheduler and step-time model on a virtual
clock and write the same results directory and report as "run". A what-if tool: "what happens
to P99 TTFT on H200 with FP8 and speculative decoding?" in seconds, without a GPU. Times are the
engine's ground truth: there is no client or network in the numbers.`,
		Example: `  llmbench simulate --trace traces/examples/chat-small.jsonl --gpu h200 --weight-dtype fp8
  llmbench simulate --trace prod.jsonl --model llama-3.1-70b --gpu h100 --tp 4 --spec-k 4 --spec-alpha 0.7 --rate-scale 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd.Context(), app, o) },
	}
	fs := cmd.Flags()
	o.traceFlags = addTraceFlags(fs)
	fs.Float64Var(&o.rateScale, "rate-scale", 1, "multiply the trace's arrival rate by X")
	fs.IntVar(&o.maxRequests, "max-requests", 0, "simulate at most the first N requests (0 = all)")
	fs.DurationVar(&o.warmup, "warmup", 0, "requests arriving in the first D are warm-up (excluded, shown separately)")
	fs.DurationVar(&o.cooldown, "cooldown", 0, "requests arriving in the last D are cool-down (excluded, shown separately)")
	o.engine = addEngineFlags(fs)
	o.metrics = addMetricFlags(fs)
	o.output = addOutputFlags(fs)
	o.fail = addFailureFlags(fs)
	_ = cmd.MarkFlagRequired("trace")
	return cmd
}

func runSimulate(ctx context.Context, app *App, o *simulateOptions) error {
	if err := o.fail.check(); err != nil {
		return err
	}
	reqs, err := o.traceFlags.read()
	if err != nil {
		return err
	}
	if o.rateScale <= 0 {
		return fmt.Errorf("--rate-scale must be > 0")
	}
	if o.maxRequests > 0 && o.maxRequests < len(reqs) {
		reqs = reqs[:o.maxRequests]
	}
	cfg, err := o.engine.config()
	if err != nil {
		return err
	}
	mopts, err := o.metrics.options()
	if err != nil {
		return err
	}
	adapter := &simAdapter{cfg: cfg, rateScale: o.rateScale, warmup: o.warmup, cooldown: o.cooldown}
	info := metrics.RunInfo{
		Command: commandLine(app.Args), Trace: o.traceFlags.path, Endpoint: "simulated reference engine (virtual clock)",
		Version: version, Mode: "simulated", RateScale: o.rateScale, Tokenizer: "reference",
		Config: flagConfig(app.flags),
	}
	res, err := runner.Execute(ctx, runner.Options{
		Requests: reqs, OutDir: o.output.out, Metrics: mopts, Info: info, HTML: o.output.html(app),
	}, adapter.produce)
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

// simAdapter turns the reference engine's ground-truth timelines into metrics.Records: the
// thin adapter DESIGN.md places beside the CLI (refengine must not know about metrics).
type simAdapter struct {
	cfg              refengine.Config
	rateScale        float64
	warmup, cooldown time.Duration
	info             map[string]string
	stats            refengine.SimStats
	clock            func() time.Time // wall clock for the run's start (time.Now when nil)
}

func (a *simAdapter) now() time.Time {
	if a.clock != nil {
		return a.clock()
	}
	return time.Now()
}

// simRequests maps trace requests to the engine's simulated requests.
func simRequests(reqs []traces.Request, rateScale float64) []refengine.SimRequest {
	out := make([]refengine.SimRequest, len(reqs))
	for i, r := range reqs {
		sr := refengine.SimRequest{
			ID:           r.ID,
			Arrival:      time.Duration(float64(r.Arrival) / rateScale),
			PromptTokens: r.InputTokens,
			Prompt:       r.Prompt,
			HashIDs:      r.HashIDs,
			MaxTokens:    r.OutputTokens,
			MinTokens:    r.OutputTokens,
			IgnoreEOS:    true,
			Seed:         r.Seed,
		}
		if len(r.Messages) > 0 && r.Prompt == "" {
			for _, m := range r.Messages {
				sr.Prompt += m.Content
			}
		}
		if r.Temperature != nil {
			sr.Temperature = *r.Temperature
		}
		out[i] = sr
	}
	return out
}

func (a *simAdapter) produce(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*runner.Produced, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reqs, err := trace.Requests()
	if err != nil {
		return nil, err
	}
	res, err := refengine.Simulate(simRequests(reqs, a.rateScale), a.cfg)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	a.stats = res.Stats
	a.info = describeInfo(res.Info)
	var last time.Duration
	for _, t := range res.Timelines {
		last = max(last, t.Arrival)
	}
	for i := range res.Timelines {
		rec := timelineRecord(&res.Timelines[i], &reqs[i])
		switch d := time.Duration(rec.Intended); {
		case d < a.warmup:
			rec.Phase = metrics.PhaseWarmup
		case a.cooldown > 0 && d >= last-a.cooldown:
			rec.Phase = metrics.PhaseCooldown
		}
		sink(rec)
	}
	return &runner.Produced{Start: a.now(), Model: res.Info.ServedModelName, Engine: a.info, Duration: res.Stats.Makespan}, nil
}

// timelineRecord converts one ground-truth timeline. Intended, dispatched and sent are the
// arrival (a simulated client has no lag or queue); every chunk is one emission.
func timelineRecord(t *refengine.Timeline, req *traces.Request) *metrics.Record {
	rec := &metrics.Record{
		ID: req.ID, Class: req.Class, Session: req.Session, Turn: req.Turn,
		Intended: int64(t.Arrival), Dispatched: int64(t.Arrival), Sent: int64(t.Arrival), Headers: int64(t.Arrival),
		InputTokens: t.PromptTokens, OutputTokens: t.OutputTokens, TokenSource: metrics.TokensFromUsage,
		RequestedTokens: req.OutputTokens, ServerInputTokens: t.PromptTokens, ServerOutputTokens: t.OutputTokens,
		Status: 200,
	}
	rec.Chunks = make([]metrics.Chunk, 0, len(t.Emissions))
	for _, e := range t.Emissions {
		rec.Chunks = append(rec.Chunks, metrics.Chunk{T: int64(e.At), Tokens: int32(e.Tokens)})
	}
	if len(rec.Chunks) > 0 {
		rec.FirstToken = rec.Chunks[0].T
	}
	rec.End = int64(t.Finish)
	switch {
	case !t.Done || t.Finish < 0:
		rec.Failure, rec.Error = metrics.FailCanceled, "simulation ended before the request finished"
		rec.End = 0
	case t.OutputTokens == 0:
		rec.Failure = metrics.FailEmpty
	case t.OutputTokens < req.OutputTokens:
		rec.Failure = metrics.FailShortOutput
		rec.Error = fmt.Sprintf("engine finished (%s) after %d of %d tokens", t.FinishReason, t.OutputTokens, req.OutputTokens)
	}
	return rec
}

// describeInfo flattens the engine's configuration into strings for run facts.
func describeInfo(info refengine.Info) map[string]string {
	b, err := json.Marshal(info)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

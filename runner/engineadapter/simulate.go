package engineadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// Simulator turns the reference engine's ground-truth timelines into metrics.Records
// (refengine must not know about metrics). Its Produce method is a runner.Producer.
type Simulator struct {
	// Config is the engine to simulate.
	Config refengine.Config
	// RateScale multiplies the trace's arrival rate (offsets are divided by it); must be > 0.
	RateScale float64
	// Warmup and Cooldown mark the records intended in the first Warmup or the last Cooldown
	// of the run as excluded phases (metrics.PhaseOf, with the run's end one mean arrival gap
	// after the last arrival, as in loadgen); 0 marks none.
	Warmup, Cooldown time.Duration
	// Clock is the wall clock for the run's start (time.Now when nil); the run's times are on
	// the engine's virtual clock.
	Clock func() time.Time
}

func (a *Simulator) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

// SimRequests maps trace requests to the engine's simulated requests, arrivals divided by
// rateScale.
func SimRequests(reqs []traces.Request, rateScale float64) []refengine.SimRequest {
	out := make([]refengine.SimRequest, len(reqs))
	for i := range reqs {
		out[i] = SimRequest(&reqs[i], rateScale)
	}
	return out
}

// SimRequest maps one trace request to the engine's simulated request, its arrival divided by
// rateScale.
func SimRequest(r *traces.Request, rateScale float64) refengine.SimRequest {
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
	return sr
}

// Produce simulates the trace as it is read and hands every request's Record to sink in
// arrival order (trace order among equal arrivals), each as soon as it and every request
// before it have finished: memory holds the requests in flight (and finished ones waiting for
// an earlier one), not the trace. Reading the trace, simulating and making and writing the
// records run as three stages of a pipeline (see simulate_stream.go).
func (a *Simulator) Produce(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*runner.Produced, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The run's nominal end is the one loadgen uses for the same trace at the same rate.
	first, last := trace.Span()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / a.RateScale) }
	end := metrics.ReplayLength(scale(first), scale(last), trace.Len())
	toRecord := func(f *finished) *metrics.Record {
		rec := TimelineRecord(f.tl, &f.req)
		rec.Phase = metrics.PhaseOf(time.Duration(rec.Intended), a.Warmup, a.Cooldown, end)
		return rec
	}
	p := &pipeline{rateScale: a.RateScale}
	st, info, n, err := p.run(ctx, trace, a.Config, toRecord, sink)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if n != trace.Len() {
		return nil, fmt.Errorf("simulate: %d of the trace's %d requests have a record", n, trace.Len())
	}
	return &runner.Produced{Start: a.now(), Model: info.ServedModelName, Engine: describeInfo(info), Duration: st.Makespan}, nil
}

// TimelineRecord converts one ground-truth timeline. Intended, dispatched and sent are the
// arrival (a simulated client has no lag or queue); every chunk is one emission.
func TimelineRecord(t *refengine.Timeline, req *traces.Request) *metrics.Record {
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
